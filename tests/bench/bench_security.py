"""Produce and fetch throughput over SSL and SASL_SSL as ratios to PLAINTEXT, and the SCRAM
connection set-up rate, on one broker in one run (issue 16).

    python tests/bench/bench_security.py [--records 200000] [--reps 3] [--connections 200] [--dir /dev/shm]

One broker (kafkalike.lab) with four listeners: PLAINTEXT, SSL, SASL_SSL (PLAIN) and
SASL_PLAINTEXT (SCRAM-SHA-512, the user made with AlterUserScramCredentials over the
PLAINTEXT listener). Each repetition runs, in a rotating order so machine noise falls on
every listener alike, for each of PLAINTEXT, SSL and SASL_SSL: confluent-kafka produce of
--records 100-byte values (acks=1, 16 KiB batches, linger 5 ms) to a one-partition topic
of its own, timed from the first produce() until flush() returns, then a confluent-kafka
consumer reading them all back from offset 0. Medians are printed with each listener's
ratio to PLAINTEXT, and the broker's CPU seconds per MB.

The SCRAM rate: --connections sequential connections of kafkalike's client
(BrokerConnection: TCP connect, ApiVersions, SaslHandshake, the two SCRAM-SHA-512
SaslAuthenticate round trips), each closed after its login; connections per second, and
the same for PLAIN on the same listener's PLAIN twin and for bare PLAINTEXT connections.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import (MB, Column, Lab, Table, arg_parser, bench_test, create_topic, median,  # noqa: E402
                                 printable_value, process_cpu, rotated)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_bench="bench-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
              'password="admin-secret";')
CASES = ("PLAINTEXT", "SSL", "SASL_SSL")


def broker_overrides(pki, ports: list[int]) -> dict[str, str]:
    plain, tls, sasl_ssl, sasl_plain = ports
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls},SASL_SSL://127.0.0.1:{sasl_ssl},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sasl_plain}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
        "ssl.keystore.password": _password(),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem"),
    }


def _password() -> str:
    from tests.security_certs import PASSWORD
    return PASSWORD


def client_config(case: str, ports: list[int], pki) -> dict:
    port = {"PLAINTEXT": ports[0], "SSL": ports[1], "SASL_SSL": ports[2]}[case]
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": case.lower()}
    if case in ("SSL", "SASL_SSL"):
        conf["ssl.ca.location"] = pki.path("ca.pem")
    if case == "SASL_SSL":
        conf.update({"sasl.mechanism": "PLAIN", "sasl.username": "bench", "sasl.password": "bench-secret"})
    return conf


def produce(conf: dict, topic: str, records: int, value: bytes) -> float:
    from confluent_kafka import Producer
    errors: list = []
    producer = Producer({**conf, "acks": 1, "enable.idempotence": False, "batch.size": 16384, "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                         "delivery.report.only.error": True, "on_delivery": lambda err, msg: errors.append(err)})
    producer.produce(topic, b"warm-up", partition=0)
    producer.flush(30)
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.0005)
    left = producer.flush(300)
    seconds = time.perf_counter() - start
    if left or errors:
        raise RuntimeError(f"produce over {conf['security.protocol']}: {left} left, {errors[:3]}")
    return seconds


def fetch(conf: dict, topic: str, records: int) -> float:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({**conf, "group.id": f"bench-{topic}", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    start = time.perf_counter()
    while seen < records + 1:
        for msg in consumer.consume(min(10000, records + 1 - seen), 5):
            if msg.error() is None:
                seen += 1
    seconds = time.perf_counter() - start
    consumer.close()
    return seconds


def connection_rate(port: int, config: dict, count: int) -> float:
    """Sequential logins per second with kafkalike's client connection."""
    from kafkalike.client.connection import BrokerConnection
    from kafkalike.client.security import ClientSecurity
    security = ClientSecurity.from_config(config)
    start = time.perf_counter()
    for _ in range(count):
        connection = BrokerConnection("127.0.0.1", port, client_id="bench-login", timeout=10, security=security)
        connection.connect()
        connection.close()
    return count / (time.perf_counter() - start)


def run(records: int, reps: int, connections: int, directory: str | None) -> dict:
    from kafkalike.client.admin import AdminClient
    from kafkalike.lab.zookeeper import free_ports
    from tests.security_certs import make_pki
    value = printable_value(100)
    with Lab("security", directory) as lab:
        pki = make_pki(lab.scratch / "pki")
        ports = free_ports(4)
        from kafkalike.lab.cluster import BrokerProcess
        broker = BrokerProcess(0, f"{lab.zookeeper.connect_string}/security", lab.base / "security", ports[0],
                               broker_overrides(pki, ports))
        lab.clusters.append(broker)          # killed with the lab
        broker.start()
        broker.wait_ready(90)
        bootstrap = f"127.0.0.1:{ports[0]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.alter_user_scram_credentials([("bench", "SCRAM-SHA-512", 4096, "bench-secret")])
        admin.close()
        produced: dict[str, list[float]] = {c: [] for c in CASES}
        fetched: dict[str, list[float]] = {c: [] for c in CASES}
        cpu: dict[str, list[float]] = {c: [] for c in CASES}
        size = records * (len(value) + 8) / MB        # values plus record framing, roughly
        for rep in range(reps):
            for case in rotated(CASES, rep):
                topic = f"{case.lower()}-{rep}"
                create_topic(bootstrap, topic)
                conf = client_config(case, ports, pki)
                before = process_cpu(broker.pid)
                produced[case].append(size / produce(conf, topic, records, value))
                fetched[case].append(size / fetch(conf, topic, records))
                cpu[case].append((process_cpu(broker.pid) - before) / (2 * size))
        time.sleep(1)        # the SCRAM user's notification has long been processed
        sasl_port = ports[3]
        rates = {
            "PLAINTEXT": connection_rate(ports[0], {}, connections),
            "SASL PLAIN": connection_rate(sasl_port, {"security.protocol": "SASL_PLAINTEXT",
                                                      "sasl.mechanism": "PLAIN", "sasl.username": "bench",
                                                      "sasl.password": "bench-secret"}, connections),
            "SASL SCRAM-SHA-512": connection_rate(sasl_port, {"security.protocol": "SASL_PLAINTEXT",
                                                              "sasl.mechanism": "SCRAM-SHA-512",
                                                              "sasl.username": "bench",
                                                              "sasl.password": "bench-secret"}, connections),
        }
    base_p, base_f = median(produced["PLAINTEXT"]), median(fetched["PLAINTEXT"])
    table = Table(Column("listener", 10, align="<"), Column("produce MB/s", 13, ".1f"), Column("ratio", 7, ".2f"),
                  Column("fetch MB/s", 12, ".1f"), Column("ratio", 7, ".2f"), Column("broker CPU s/MB", 16, ".3f"))
    print(f"{records} records of 100 bytes per run, {reps} repetitions, medians")
    print(table.header())
    for case in CASES:
        print(table.row(case, median(produced[case]), median(produced[case]) / base_p,
                        median(fetched[case]), median(fetched[case]) / base_f, median(cpu[case])))
    logins = Table(Column("connection", 20, align="<"), Column("set-ups/s", 11, ".0f"),
                   Column("ratio", 7, ".2f"))
    print(f"\n{connections} sequential connections each (connect, ApiVersions, login)")
    print(logins.header())
    for name, rate in rates.items():
        print(logins.row(name, rate, rate / rates["PLAINTEXT"]))
    return {"produce": produced, "fetch": fetched, "logins": rates}


def main(argv=None) -> None:
    parser = arg_parser(__doc__, reps=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--connections", type=int, default=200)
    args = parser.parse_args(argv)
    run(args.records, args.reps, args.connections, args.dir)


@bench_test
def test_security_bench_short():
    result = run(5000, 1, 10, None)
    assert all(result["produce"][c] for c in CASES) and result["logins"]["SASL SCRAM-SHA-512"] > 0


if __name__ == "__main__":
    main()
