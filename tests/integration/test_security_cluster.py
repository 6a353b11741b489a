"""A cluster whose brokers talk to each other over SASL_SSL, and start-up refusals of bad
security settings (issue 16).

Three brokers replicate an RF=3 topic through their SASL_SSL inter-broker listener
(inter.broker.listener.name): replica fetchers, AlterIsr and the controller's channel all
log in over TLS with PLAIN, or with SCRAM-SHA-512 as a user made with kafka-configs
--zookeeper before the brokers start; the host name checked against the broker certificate
(ssl.endpoint.identification.algorithm=https). A client sees the full ISR through the
same secured listener, and the brokers' request logs show every replica Fetch and every
controller request arriving on SASL_SSL as User:admin, none on PLAINTEXT. Brokers on an SSL
inter-broker listener with AclAuthorizer pass it by their certificate's subject in
super.users. A keystore that does not exist, a wrong keystore password and an
unsupported mechanism or store type each stop start-up with one line naming the key.
"""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from kafkalike.lab.cluster import BrokerProcess
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import scratch_dir
from tests.integration.test_broker_startup_failures import failed_start
from tests.conftest import REPO_ROOT
from tests.security_certs import JAAS_PLAIN, JAAS_SCRAM, PASSWORD, make_pki


def _secured(pki, plain_port: int, secure_port: int, mechanism: str = "PLAIN") -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_SSL://127.0.0.1:{secure_port}",
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": mechanism,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS_PLAIN,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": JAAS_SCRAM,
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
        "ssl.keystore.password": PASSWORD,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem"),
        "offsets.topic.replication.factor": "3",
    }


def replicate_at_rf3(conf: dict, topic: str) -> None:
    """As a librdkafka client with `conf`: make an RF=3 topic of 2 partitions, write 20
    acks=all records, and wait until every partition's ISR is the three brokers."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 2, 3)])[topic].result(30)
    producer = Producer({**conf, "acks": "all"})
    for i in range(20):
        producer.produce(topic, f"r{i}".encode())
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 30
    while True:
        parts = admin.list_topics(topic, timeout=10).topics[topic].partitions
        if all(sorted(p.isrs) == [0, 1, 2] for p in parts.values()):
            return
        assert time.monotonic() < deadline, {p.id: p.isrs for p in parts.values()}
        time.sleep(0.5)


def set_request_log(broker: BrokerProcess, level: str) -> None:
    """Turn the broker's kafka.request.logger to `level` (a BROKER_LOGGER config, over PLAINTEXT)."""
    from kafkalike.client.admin import AdminClient, AlterConfigOp, ConfigResource, ResourceType
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.incremental_alter_configs({ConfigResource(ResourceType.BROKER_LOGGER, str(broker.broker_id)):
                                         [AlterConfigOp("kafka.request.logger", level)]})


INTER_BROKER_APIS = {"LeaderAndIsr", "UpdateMetadata", "StopReplica", "ControlledShutdown", "AlterIsr"}


def inter_broker_requests(broker: BrokerProcess) -> set[tuple[str, str, str]]:
    """(API, listener, principal) of the requests other brokers (and their controller) sent
    this one, from its request log: the controller's APIs, and Fetch from a replica."""
    import json
    from kafkalike.protocol.api import APIS
    out = set()
    for line in (broker.app_log_dir / "kafka-request.log").read_text().splitlines():
        if "Completed request:" not in line:
            continue
        entry = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
        api = APIS[entry["requestHeader"]["requestApiKey"]].name
        if api in INTER_BROKER_APIS or (api == "Fetch" and entry["request"].get("replicaId", -1) >= 0):
            out.add((api, entry["listener"], entry["principal"]))
    return out


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_an_rf3_topic_reaches_full_isr_over_a_sasl_ssl_inter_broker_listener(zk_chroot, mechanism):
    base = scratch_dir("seccluster")
    pki = make_pki(base / "pki")
    ports = free_ports(6)
    brokers = [BrokerProcess(i, zk_chroot, base, ports[2 * i],
                             _secured(pki, ports[2 * i], ports[2 * i + 1], mechanism)) for i in range(3)]
    if mechanism.startswith("SCRAM"):
        # The brokers' own SCRAM user exists before any broker does, as Kafka's docs create it.
        created = subprocess.run([str(REPO_ROOT / "bin" / "kafka-configs.sh"), "--zookeeper", zk_chroot, "--alter",
                                  "--add-config", f"{mechanism}=[password=admin-secret]", "--entity-type", "users",
                                  "--entity-name", "admin"], capture_output=True, timeout=60)
        assert created.returncode == 0, created.stderr
    try:
        for b in brokers:
            b.start()
        for b in brokers:
            b.wait_ready(60)
        for b in brokers:
            set_request_log(b, "DEBUG")
        conf = {"bootstrap.servers": f"127.0.0.1:{ports[1]}", "security.protocol": "sasl_ssl",
                "ssl.ca.location": pki.path("ca.pem"), "sasl.mechanism": "PLAIN",
                "sasl.username": "alice", "sasl.password": "alice-secret"}
        replicate_at_rf3(conf, "replicated")
        # The brokers registered the secured listener, and none of their logins failed.
        for b in brokers:
            log = b.server_log.read_text()
            assert "Authentication to" not in log and "Failed authentication" not in log
        # Replication and the controller's requests came over SASL_SSL, logged in as admin:
        # the request logs show every one of them there, and none on PLAINTEXT.
        seen = {entry for b in brokers for entry in inter_broker_requests(b)}
        assert {api for api, _, _ in seen} >= {"Fetch", "LeaderAndIsr", "UpdateMetadata"}, seen
        assert {(listener, principal) for _, listener, principal in seen} == {("SASL_SSL", "User:admin")}, seen
    finally:
        for b in brokers:
            b.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("change,key", [
    ({"ssl.keystore.location": "/nonexistent/broker.p12"}, "ssl.keystore.location"),
    ({"ssl.keystore.password": "not-the-password"}, "ssl.keystore.location"),
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms"),
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.location"),     # a PKCS12 file is no JKS store
    ({"ssl.keystore.type": "JCEKS"}, "ssl.keystore.type"),
])
def test_bad_security_settings_stop_start_up_naming_the_key(zk_chroot, shm_path, change, key):
    pki = make_pki(shm_path / "pki")
    plain, secure = free_ports(2)
    broker = BrokerProcess(0, zk_chroot, shm_path, plain, {**_secured(pki, plain, secure), **change})
    cause = failed_start(broker)
    assert f"for configuration {key}" in cause, cause


REAUTH_MS = 2000
EXPIRED = "its SASL session expired"


def test_sessions_with_a_lifetime_are_renewed_not_cut(zk_chroot):
    """connections.max.reauth.ms=2000 on the SASL_SSL inter-broker listener (KIP-368): for four
    lifetimes the replica fetchers, AlterIsr and the controller's channel, and kafkalike's own
    producer, consumer and admin client, log in again on their connections before each session
    ends. An RF=3 topic keeps its full ISR while acks=all records flow, every record is read,
    and no broker closes a connection for an expired session (each would, at the first request
    after the end of a session nobody renewed)."""
    from kafkalike.client.admin import AdminClient, NewTopic
    from kafkalike.client.consumer import KafkaConsumer, TopicPartition
    from kafkalike.client.producer import KafkaProducer
    base = scratch_dir("reauth")
    pki = make_pki(base / "pki")
    ports = free_ports(6)
    brokers = [BrokerProcess(i, zk_chroot, base, ports[2 * i], {
        **_secured(pki, ports[2 * i], ports[2 * i + 1]),
        "listener.name.sasl_ssl.connections.max.reauth.ms": str(REAUTH_MS),
        "replica.lag.time.max.ms": "30000"}) for i in range(3)]
    conf = {"bootstrap.servers": f"127.0.0.1:{ports[1]}", "security.protocol": "SASL_SSL",
            "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem"),
            "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    try:
        for b in brokers:
            b.start()
        for b in brokers:
            b.wait_ready(60)
        with AdminClient(conf) as admin:
            admin.create_topics([NewTopic("renewed", 2, 3)])
            producer = KafkaProducer({**conf, "acks": "all", "linger.ms": 0})
            consumer = KafkaConsumer({**conf, "auto.offset.reset": "earliest"})
            consumer.assign([TopicPartition("renewed", 0), TopicPartition("renewed", 1)])
            sent, seen = 0, []
            try:
                end = time.monotonic() + 4 * REAUTH_MS / 1000
                while time.monotonic() < end:
                    producer.send("renewed", value=f"r{sent}".encode()).get(timeout=10)
                    sent += 1
                    seen.extend(r.value for r in consumer.poll(timeout=0.05))
                    admin.describe_cluster()               # the admin client's connection too
                deadline = time.monotonic() + 15
                while len(seen) < sent and time.monotonic() < deadline:
                    seen.extend(r.value for r in consumer.poll(timeout=0.2))
            finally:
                producer.close()
                consumer.close()
            assert sorted(seen) == sorted(f"r{i}".encode() for i in range(sent)) and sent > 20
            described = admin.describe_topics(["renewed"])["renewed"]
            assert all(sorted(p.isr) == [0, 1, 2] for p in described.partitions), described
        for b in brokers:
            log = b.server_log.read_text()
            assert EXPIRED not in log, [line for line in log.splitlines() if EXPIRED in line][:3]
            assert "Failed re-authentication" not in log and "Failed authentication" not in log
    finally:
        for b in brokers:
            b.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_brokers_on_an_ssl_inter_broker_listener_pass_the_authorizer_by_their_certificate(zk_chroot):
    """security.inter.broker.protocol=SSL with ssl.client.auth=required and AclAuthorizer: the
    brokers know each other by their certificate's subject, named in super.users, so the
    controller's requests and replication pass the authorizer (an RF=3 topic takes acks=all
    records and keeps its full ISR); a client whose certificate comes from the same CA but
    who has no ACL is refused the topic, as Kafka does."""
    from confluent_kafka import KafkaError, Producer
    from tests.security_certs import CLIENT_DN
    broker_dn = "CN=localhost,O=kafkalike-tests"
    base = scratch_dir("ssl-interbroker")
    pki = make_pki(base / "pki")
    ports = free_ports(6)
    brokers = [BrokerProcess(i, zk_chroot, base, ports[2 * i], {
        "listeners": f"PLAINTEXT://127.0.0.1:{ports[2 * i]},SSL://127.0.0.1:{ports[2 * i + 1]}",
        "security.inter.broker.protocol": "SSL", "ssl.client.auth": "required",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
        "ssl.keystore.password": PASSWORD,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem"),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": f"User:{broker_dn}",
        "offsets.topic.replication.factor": "3"}) for i in range(3)]

    def tls(cert: str) -> dict:
        return {"bootstrap.servers": ",".join(f"127.0.0.1:{ports[2 * i + 1]}" for i in range(3)),
                "security.protocol": "ssl", "ssl.ca.location": pki.path("ca.pem"),
                "ssl.certificate.location": pki.path(f"{cert}-cert.pem"), "ssl.key.location": pki.path(f"{cert}-key.pem")}
    try:
        for b in brokers:
            b.start()
        for b in brokers:
            b.wait_ready(60)
        replicate_at_rf3(tls("broker"), "by-certificate")   # as an operator holding a super user's certificate
        outcome = []
        alice = Producer({**tls("client"), "message.timeout.ms": 8000})
        alice.produce("by-certificate", b"from-alice", on_delivery=lambda err, _m: outcome.append(err and err.code()))
        alice.flush(15)
        assert outcome == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
        audit = "".join((b.server_log.parent / "kafka-authorizer.log").read_text() for b in brokers)
        assert f"Principal = User:{CLIENT_DN} is Denied Operation = Describe" in audit    # the topic is hidden from her
        assert f"Principal = User:{broker_dn} is Denied" not in audit
    finally:
        for b in brokers:
            b.kill()
        shutil.rmtree(base, ignore_errors=True)
