"""Client quotas enforced on a real broker (KIP-13, KIP-55, KIP-219): quotas set with
kafka-configs.sh hold confluent-kafka producers and consumers to about their byte rates, the
broker's answers carry throttle_time_ms (librdkafka's throttle_cb reports it), other clients
go free, deleting a quota lifts it, and a user quota applies by SASL principal.

The broker keeps two one-second quota windows (quota.window.num=2): Kafka's default of
eleven would let a client send ten seconds' worth before the first throttle, longer than
these measurements."""
from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
import urllib.request
import uuid
from typing import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from kafkalike.protocol.api import decode_response, encode_request
from kafkalike.protocol.messages.metadata import MetadataRequest
from tests.conftest import REPO_ROOT, scratch_dir
from tests.security_certs import JAAS_PLAIN

pytestmark = pytest.mark.integration

QUOTA = 100_000            # bytes per second
VALUE = b"q" * 1000
MAX_BYTES = 10_000_000     # a free client stops there (it would fill the disk at hundreds of MB/s)
TOPIC = "quota-orders"
SASL_ALICE = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.username": "alice", "sasl.password": "alice-secret"}
SASL_ADMIN = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.username": "admin", "sasl.password": "admin-secret"}


class Broker:
    def __init__(self, cluster: Cluster, plain: str, sasl: str):
        self.cluster, self.plain, self.sasl = cluster, plain, sasl


@pytest.fixture(scope="module")
def broker(module_zk_chroot: str) -> Iterator[Broker]:
    base = scratch_dir("quotas")
    plain_port, sasl_port, metrics_port = free_ports(3)
    cluster = Cluster(module_zk_chroot, base, 1, {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
        "quota.window.num": "2", "quota.window.size.seconds": "1",
        "kafkalike.metrics.host": "127.0.0.1", "kafkalike.metrics.port": str(metrics_port)})
    cluster.brokers[0].port = plain_port
    try:
        cluster.start()
        b = Broker(cluster, f"127.0.0.1:{plain_port}", f"127.0.0.1:{sasl_port}")
        b.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        admin = AdminClient({"bootstrap.servers": b.plain})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        yield b
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


def quota_metric(broker: Broker, name: str, **labels: str) -> float:
    """One sample of the broker's Prometheus endpoint (Kafka's quota metrics, as the JMX
    exporter names them)."""
    text = urllib.request.urlopen(broker.metrics_url, timeout=10).read().decode()
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(name + "{"):
            series, value = line.rsplit(" ", 1)
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                return float(value)
    raise AssertionError(f"no {name}{{{wanted}}} in the broker's metrics")


def kafka_configs(broker: Broker, *argv: str, applied: str) -> None:
    """Run kafka-configs.sh, then wait for the broker's log to say it applied the change
    (on the change notification): `applied` is the ClientQuotaManager's line."""
    log = broker.cluster.brokers[0].server_log
    seen = log.read_text().count(applied)
    done = subprocess.run([str(REPO_ROOT / "bin" / "kafka-configs.sh"), "--bootstrap-server", broker.plain, *argv],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while log.read_text().count(applied) == seen:
        assert time.monotonic() < deadline, f"the broker never logged {applied!r}"
        time.sleep(0.05)


def produce_for(bootstrap: str, client_id: str, seconds: float, **extra) -> tuple[float, list[float]]:
    """Produce as fast as the client may for `seconds`: (bytes acknowledged per second, the
    throttle times librdkafka was told)."""
    throttles: list[float] = []
    acked = [0]

    def delivered(err, msg):
        if err is None:
            acked[0] += len(msg.value())
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                         "batch.size": 32768, "queue.buffering.max.messages": 2000,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time), **extra})
    for _ in range(50):       # connected and the topic's leader known before the clock starts
        producer.poll(0.1)
        if producer.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions:
            break
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds and sent < MAX_BYTES:
        try:
            producer.produce(TOPIC, VALUE, on_delivery=delivered)
            sent += len(VALUE)
        except BufferError:
            producer.poll(0.01)
    if sent >= MAX_BYTES:      # a free client: its rate is what it took to have it all acknowledged
        producer.flush(max(0.0, seconds - (time.monotonic() - start)))
    producer.poll(0)
    rate = acked[0] / (time.monotonic() - start)
    producer.purge()
    producer.flush(5)
    return rate, throttles


def consume_for(bootstrap: str, client_id: str, seconds: float) -> tuple[float, list[float]]:
    throttles: list[float] = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    read = 0
    try:
        consumer.subscribe([TOPIC])
        while not consumer.assignment():
            consumer.poll(0.1)
        start = time.monotonic()
        while time.monotonic() - start < seconds and read < MAX_BYTES:
            for msg in consumer.consume(500, 0.1):
                if msg.error() is None:
                    read += len(msg.value())
        return read / (time.monotonic() - start), throttles
    finally:
        consumer.close()


def test_producer_byte_rate_of_a_client_id_throttles_it_alone_until_deleted(broker):
    kafka_configs(broker, "--alter", "--add-config", f"producer_byte_rate={QUOTA}",
                  "--entity-type", "clients", "--entity-name", "capped-producer",
                  applied=f"Changing PRODUCE quota for client-id capped-producer to {float(QUOTA)}")
    capped, throttles = produce_for(broker.plain, "capped-producer", 4)
    free, free_throttles = produce_for(broker.plain, "free-producer", 2)
    print(f"capped producer {capped:,.0f} B/s (quota {QUOTA:,}), free producer {free:,.0f} B/s; "
          f"throttles {throttles[:5]}")
    # At the quota, plus at most the first window's burst over the 4 s measured.
    assert 0.3 * QUOTA < capped < 2 * QUOTA
    assert throttles and max(throttles) > 0
    assert free > 5 * QUOTA and not any(free_throttles)
    assert quota_metric(broker, "kafka_server_quota_throttle_time", resource="Produce", clientId="capped-producer") > 0
    assert quota_metric(broker, "kafka_server_quota_byte_rate", resource="Produce", clientId="capped-producer") > 0

    kafka_configs(broker, "--alter", "--delete-config", "producer_byte_rate",
                  "--entity-type", "clients", "--entity-name", "capped-producer",
                  applied="Removing PRODUCE quota for client-id capped-producer")
    lifted, lifted_throttles = produce_for(broker.plain, "capped-producer", 2)
    assert lifted > 5 * QUOTA and not any(lifted_throttles), lifted


def test_consumer_byte_rate_of_a_client_id_throttles_its_fetches(broker):
    fill, _ = produce_for(broker.plain, "filler", 2)
    assert fill > 0
    kafka_configs(broker, "--alter", "--add-config", f"consumer_byte_rate={QUOTA}",
                  "--entity-type", "clients", "--entity-name", "slow-reader",
                  applied=f"Changing FETCH quota for client-id slow-reader to {float(QUOTA)}")
    slow, throttles = consume_for(broker.plain, "slow-reader", 4)
    fast, fast_throttles = consume_for(broker.plain, "fast-reader", 2)
    print(f"capped consumer {slow:,.0f} B/s (quota {QUOTA:,}), free consumer {fast:,.0f} B/s")
    assert 0.3 * QUOTA < slow < 2 * QUOTA
    assert throttles and max(throttles) > 0
    assert fast > 5 * QUOTA and not any(fast_throttles)


def test_a_user_quota_applies_by_sasl_principal(broker):
    kafka_configs(broker, "--alter", "--add-config", f"producer_byte_rate={QUOTA}",
                  "--entity-type", "users", "--entity-name", "alice",
                  applied=f"Changing PRODUCE quota for user alice to {float(QUOTA)}")
    alice, throttles = produce_for(broker.sasl, "shared-app", 3, **SASL_ALICE)
    admin, admin_throttles = produce_for(broker.sasl, "shared-app", 2, **SASL_ADMIN)
    anonymous, _ = produce_for(broker.plain, "shared-app", 2)
    print(f"alice {alice:,.0f} B/s, admin {admin:,.0f} B/s, ANONYMOUS {anonymous:,.0f} B/s (quota {QUOTA:,})")
    assert 0.3 * QUOTA < alice < 2 * QUOTA and throttles and max(throttles) > 0
    assert admin > 5 * QUOTA and not any(admin_throttles)
    assert anonymous > 5 * QUOTA


def metadata_twice(bootstrap: str, client_id: str) -> list[tuple[float, int]]:
    """Two Metadata requests written back to back on one connection: (seconds until each
    answer arrived, its throttle_time_ms)."""
    host, port = bootstrap.rsplit(":", 1)
    answers = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        frames = b""
        for correlation in (1, 2):
            body = encode_request(3, 9, correlation, client_id, MetadataRequest(topics=None))
            frames += struct.pack(">i", len(body)) + body
        start = time.monotonic()
        sock.sendall(frames)
        buffered = b""
        while len(answers) < 2:
            while len(buffered) < 4 or len(buffered) < 4 + struct.unpack(">i", buffered[:4])[0]:
                chunk = sock.recv(65536)
                assert chunk, "the broker closed the connection"
                buffered += chunk
            size = struct.unpack(">i", buffered[:4])[0]
            frame, buffered = buffered[4:4 + size], buffered[4 + size:]
            _, response = decode_response(3, 9, frame)
            answers.append((time.monotonic() - start, response.throttle_time_ms))
    return answers


def test_request_percentage_answers_at_once_then_mutes_the_connection(broker):
    kafka_configs(broker, "--alter", "--add-config", "request_percentage=0.001",
                  "--entity-type", "clients", "--entity-name", "chatty",
                  applied="Changing REQUEST quota for client-id chatty to 0.001")
    (first_at, first_throttle), (second_at, _) = metadata_twice(broker.plain, "chatty")
    # Any handling time is far over 0.001 % of a thread; the request quota's throttle is
    # capped at one quota window (1 s). KIP-219: the answer is not held back, the next
    # request of the connection is.
    assert first_throttle == 1000
    assert first_at < 0.9                  # not held back itself (the throttle is 1 s)
    assert second_at - first_at > 0.9
    assert [t for _, t in metadata_twice(broker.plain, "quiet")] == [0, 0]


def test_controller_mutation_rate_refuses_new_topics_until_the_throttle_has_passed(broker):
    """KIP-599: controller_mutation_rate=2 is a bucket of 20 partitions refilled at 2 a second.
    A topic may take it below zero; the next is refused with THROTTLING_QUOTA_EXCEEDED, and an
    admin client that retries (Java's default) gets it created once the answer's throttle time
    has passed. Another client id is not held back."""
    from kafkalike.client.admin import AdminClient as KafkalikeAdmin
    from kafkalike.client.admin import KafkaAdminError
    from kafkalike.client.admin_types import NewTopic as New
    from kafkalike.protocol.errors import ErrorCode

    kafka_configs(broker, "--alter", "--entity-type", "clients", "--entity-name", "mutator",
                  "--add-config", "controller_mutation_rate=2", applied="quota for client-id mutator to 2.0")
    prefix = f"mutations-{uuid.uuid4().hex[:6]}"
    with KafkalikeAdmin({"bootstrap.servers": broker.plain, "client.id": "mutator"}) as admin:
        admin.create_topics([New(f"{prefix}-a", 20, 1)])      # the whole burst
        admin.create_topics([New(f"{prefix}-b", 6, 1)])       # from about zero to about -6: passes
        with pytest.raises(KafkaAdminError) as refused:
            admin.create_topics([New(f"{prefix}-c", 1, 1)], retry_on_quota_violation=False)
        assert refused.value.code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        started = time.monotonic()
        admin.create_topics([New(f"{prefix}-c", 1, 1)])       # waits about 3 s, then passes
        assert time.monotonic() - started >= 2.0
    assert quota_metric(broker, "kafka_server_quota_tokens", resource="ControllerMutation",
                        clientId="mutator") < 20
    with KafkalikeAdmin({"bootstrap.servers": broker.plain, "client.id": "someone-else"}) as admin:
        # The mutator's bucket is below zero again; another client id has no quota at all.
        admin.create_topics([New(f"{prefix}-d", 1, 1)], retry_on_quota_violation=False)
        admin.delete_topics([f"{prefix}-{x}" for x in "abcd"], retry_on_quota_violation=False)
