"""Third-party clients over every security protocol the broker speaks (issue 16).

One broker listens on PLAINTEXT (the lab's readiness check), SSL (PKCS12 keystore, PEM
truststore), SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and an
SSL listener that requires client certificates (PEM keystore per KIP-651, set with
listener-prefixed keys), one that only requests them (ssl.client.auth=requested), one
that speaks only TLS 1.3 (ssl.enabled.protocols), one with one cipher suite
(ssl.cipher.suites) and one whose keys and trusted CA are PEM text in the config itself.
Certificates are made by the test. confluent-kafka (librdkafka), kcat, kafka-python and
aiokafka produce and consume on each, and are refused with Kafka's errors when a password
or certificate is wrong. SCRAM users are created the way operators
do, with an AlterUserScramCredentials call from confluent-kafka's admin client.
"""
from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from kafkalike.lab.cluster import BrokerProcess, Cluster
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import REPO_ROOT, scratch_dir
from tests.security_certs import CLIENT_DN, JAAS_PLAIN, PASSWORD, Pki, make_pki

TLS_LISTENERS = {name: "SSL" for name in ("MTLS", "OPTIONAL", "TLS13", "AES256")}    # the SSL listeners' own names
SCRAM_USERS = {"scram256": ("SCRAM-SHA-256", "s256-secret"), "scram512": ("SCRAM-SHA-512", "s512-secret")}


class SecureBroker:
    def __init__(self, broker, pki: Pki, ports: dict[str, int]) -> None:
        self.broker, self.pki, self.ports = broker, pki, ports

    def addr(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


def _property_value(pem: str) -> str:
    """PEM text as one line of a properties file."""
    return pem.strip().replace("\n", "\\n")


def broker_overrides(pki: Pki, ports: dict[str, int]) -> dict[str, str]:
    names = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT",
             "SASL_SSL": "SASL_SSL", "MTLS": "SSL", "OPTIONAL": "SSL", "TLS13": "SSL", "AES256": "SSL"}
    return {
        "listeners": ",".join(f"{n}://127.0.0.1:{ports[n]}" for n in names),
        "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in names.items()),
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
        "ssl.keystore.password": PASSWORD,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem"),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.keystore.type": "PEM",
        "listener.name.mtls.ssl.keystore.location": pki.path("broker.pem"),
        "listener.name.mtls.ssl.key.password": PASSWORD,
        "listener.name.optional.ssl.client.auth": "requested",
        "listener.name.tls13.ssl.enabled.protocols": "TLSv1.3",
        "listener.name.aes256.ssl.enabled.protocols": "TLSv1.2",
        "listener.name.aes256.ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS_PLAIN,
        "connection.failed.authentication.delay.ms": "50",
    }


@pytest.fixture(scope="module")
def secure(module_zk_chroot: str) -> Iterator[SecureBroker]:
    base = scratch_dir("security")
    pki = make_pki(base / "pki")
    listeners = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "MTLS", "OPTIONAL", "TLS13", "AES256"]
    ports = dict(zip(listeners, free_ports(len(listeners))))
    cluster = Cluster(module_zk_chroot, base, 1, broker_overrides(pki, ports))
    cluster.brokers[0].port = ports["PLAINTEXT"]
    try:
        cluster.start()
        _create_scram_users(f"127.0.0.1:{ports['PLAINTEXT']}")
        yield SecureBroker(cluster.brokers[0], pki, ports)
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


def _create_scram_users(bootstrap: str) -> None:
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    upserts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(getattr(ScramMechanism, mech.replace("-", "_")),
                                                                      4096), pw.encode())
               for user, (mech, pw) in SCRAM_USERS.items()]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(30)


def librdkafka_config(secure: SecureBroker, listener: str, mechanism: str | None = None,
                      password_ok: bool = True) -> dict:
    protocol = TLS_LISTENERS.get(listener, listener)
    conf = {"bootstrap.servers": secure.addr(listener), "security.protocol": protocol.lower()}
    if "SSL" in protocol:
        conf["ssl.ca.location"] = secure.pki.path("ca.pem")
    if listener == "MTLS":
        conf["ssl.certificate.location"] = secure.pki.path("client-cert.pem")
        conf["ssl.key.location"] = secure.pki.path("client-key.pem")
    if mechanism:
        user, pw = _user_for(mechanism)
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user,
                     "sasl.password": pw if password_ok else "wrong-" + pw})
    return conf


def _user_for(mechanism: str) -> tuple[str, str]:
    if mechanism == "PLAIN":
        return "alice", "alice-secret"
    user = next(u for u, (m, _) in SCRAM_USERS.items() if m == mechanism)
    return user, SCRAM_USERS[user][1]


CASES = [("SSL", None), ("MTLS", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
         ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")]


def _roundtrip_confluent(conf: dict, topic: str, n: int = 5) -> list[bytes]:
    from confluent_kafka import Consumer, Producer
    producer = Producer(conf)
    for i in range(n):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": "g-" + uuid.uuid4().hex[:6], "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    return got


@pytest.mark.parametrize("listener,mechanism", CASES)
def test_confluent_kafka_produces_and_consumes(secure, listener, mechanism):
    topic = f"cf-{listener.lower()}-{(mechanism or 'tls').lower()}"
    got = _roundtrip_confluent(librdkafka_config(secure, listener, mechanism), topic)
    assert got == [f"m{i}".encode() for i in range(5)]


def _kcat(conf: dict) -> list[str]:
    """kcat's command line for a librdkafka configuration."""
    args = ["kcat", "-b", conf["bootstrap.servers"]]
    for key, value in conf.items():
        if key != "bootstrap.servers":
            args += ["-X", f"{'sasl.mechanisms' if key == 'sasl.mechanism' else key}={value}"]
    return args


def _kcat_args(secure: SecureBroker, listener: str, mechanism: str | None, password_ok: bool = True) -> list[str]:
    return _kcat(librdkafka_config(secure, listener, mechanism, password_ok))


@pytest.mark.parametrize("listener,mechanism", [("SSL", None), ("SASL_SSL", "SCRAM-SHA-256"),
                                                ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-512")])
def test_kcat_produces_and_consumes(secure, listener, mechanism):
    base = _kcat_args(secure, listener, mechanism)
    topic = f"kcat-{listener.lower()}-{(mechanism or 'tls').lower()}"
    subprocess.run(base + ["-P", "-t", topic], input=b"one\ntwo\nthree\n", check=True, timeout=60)
    out = subprocess.run(base + ["-C", "-t", topic, "-o", "beginning", "-e", "-q"], capture_output=True,
                         check=True, timeout=60)
    assert out.stdout.split() == [b"one", b"two", b"three"]


def test_kcat_with_a_wrong_password_is_refused_with_kafkas_message(secure):
    out = subprocess.run(_kcat_args(secure, "SASL_PLAINTEXT", "SCRAM-SHA-512", password_ok=False)
                         + ["-L", "-m", "2"], capture_output=True, timeout=60)
    assert out.returncode != 0
    assert (b"Authentication failed during authentication due to invalid credentials with SASL mechanism "
            b"SCRAM-SHA-512") in out.stderr


def _librdkafka_errors(conf: dict, wait: float = 5) -> list:
    from confluent_kafka import Producer
    errors: list = []
    producer = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + wait
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    return errors


@pytest.mark.parametrize("mechanism,message", [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials with SASL "
                      "mechanism SCRAM-SHA-256")])
def test_confluent_kafka_with_a_wrong_password_gets_an_authentication_error(secure, mechanism, message):
    from confluent_kafka import KafkaError
    errors = _librdkafka_errors(librdkafka_config(secure, "SASL_SSL", mechanism, password_ok=False))
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert message in errors[0].str()
    log = secure.broker.server_log.read_text()
    assert "Failed authentication with /127.0.0.1" in log


TLS_REFUSED = "INFO [SocketServer listenerType=ZK_BROKER, nodeId=0] Failed authentication with /127.0.0.1 " \
              "(SSL handshake failed) (org.apache.kafka.common.network.Selector)"


def _wait_for_more(secure, line: str, seen: int, wait: float = 5) -> int:
    """How often `line` is in the server log once it shows more than `seen` times (or `wait` ends)."""
    deadline = time.monotonic() + wait
    count = secure.broker.server_log.read_text().count(line)
    while count <= seen and time.monotonic() < deadline:
        time.sleep(0.1)
        count = secure.broker.server_log.read_text().count(line)
    return count


def test_a_client_without_a_certificate_is_refused_where_client_auth_is_required(secure):
    conf = librdkafka_config(secure, "MTLS")
    del conf["ssl.certificate.location"], conf["ssl.key.location"]
    before = secure.broker.server_log.read_text().count(TLS_REFUSED)
    errors = _librdkafka_errors(conf)
    assert errors and "certificate required" in errors[0].str(), errors
    assert _wait_for_more(secure, TLS_REFUSED, before) > before     # logged as Kafka's Selector logs it


def test_requested_client_auth_takes_clients_with_and_without_a_certificate(secure):
    """ssl.client.auth=requested: a client without a certificate is served as User:ANONYMOUS,
    one with a trusted certificate as the certificate's subject (the request log names the
    principal), one with an untrusted certificate as User:ANONYMOUS too."""
    from kafkalike.client.admin import AdminClient, AlterConfigOp, AlterConfigOpType, ConfigResource, ResourceType
    logger = ConfigResource(ResourceType.BROKER_LOGGER, "0")
    with AdminClient({"bootstrap.servers": secure.addr("PLAINTEXT")}) as admin:
        admin.incremental_alter_configs({logger: [AlterConfigOp("kafka.request.logger", "DEBUG")]})
    try:
        with_cert = librdkafka_config(secure, "OPTIONAL")
        with_cert.update({"ssl.certificate.location": secure.pki.path("client-cert.pem"),
                          "ssl.key.location": secure.pki.path("client-key.pem"), "client.id": "with-cert"})
        without = {**librdkafka_config(secure, "OPTIONAL"), "client.id": "without-cert"}
        # The broker's certificate request lists the CAs it trusts, so a client holding only
        # an untrusted certificate sends none (OpenSSL says so) and is served anonymously.
        rogue = {**with_cert, "ssl.certificate.location": secure.pki.path("rogue-cert.pem"),
                 "ssl.key.location": secure.pki.path("rogue-key.pem"), "client.id": "rogue-cert"}
        for conf, topic in ((with_cert, "optional-with-cert"), (without, "optional-without-cert"),
                            (rogue, "optional-rogue-cert")):
            assert _roundtrip_confluent(conf, topic) == [f"m{i}".encode() for i in range(5)]
    finally:
        with AdminClient({"bootstrap.servers": secure.addr("PLAINTEXT")}) as admin:
            admin.incremental_alter_configs({logger: [AlterConfigOp("kafka.request.logger", None,
                                                                    AlterConfigOpType.DELETE)]})
    principals: dict[str, set[str]] = {}
    for line in (secure.broker.app_log_dir / "kafka-request.log").read_text().splitlines():
        if "Completed request:" in line:
            entry = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
            if entry.get("listener") == "OPTIONAL":
                principals.setdefault(entry["requestHeader"]["clientId"], set()).add(entry["principal"])
    assert principals["without-cert"] == principals["rogue-cert"] == {"User:ANONYMOUS"}
    assert principals["with-cert"] == {"User:" + CLIENT_DN}


def test_a_certificate_from_an_untrusted_ca_is_refused(secure):
    conf = librdkafka_config(secure, "MTLS")
    conf["ssl.certificate.location"] = secure.pki.path("rogue-cert.pem")
    conf["ssl.key.location"] = secure.pki.path("rogue-key.pem")
    before = secure.broker.server_log.read_text().count(TLS_REFUSED)
    errors = _librdkafka_errors(conf)
    assert errors and ("unknown ca" in errors[0].str().lower() or "alert" in errors[0].str().lower()), errors
    assert _wait_for_more(secure, TLS_REFUSED, before) > before


def test_a_client_that_does_not_trust_the_broker_ca_refuses_it(secure):
    conf = librdkafka_config(secure, "SSL")
    conf["ssl.ca.location"] = secure.pki.path("rogue-cert.pem")
    errors = _librdkafka_errors(conf)
    assert errors and "certificate verify failed" in errors[0].str(), errors


def test_kcat_with_an_untrusted_certificate_is_refused(secure):
    args = _kcat({**librdkafka_config(secure, "MTLS"), "ssl.certificate.location": secure.pki.path("rogue-cert.pem"),
                  "ssl.key.location": secure.pki.path("rogue-key.pem")})
    before = secure.broker.server_log.read_text().count(TLS_REFUSED)
    out = subprocess.run(args + ["-L", "-m", "3"], capture_output=True, timeout=60)
    assert out.returncode != 0 and b"alert unknown ca" in out.stderr, out.stderr[-2000:]
    assert _wait_for_more(secure, TLS_REFUSED, before) > before


def test_kafka_python_with_an_untrusted_certificate_is_refused(secure):
    import kafka
    import kafka.errors
    conf = _kafka_python_config(secure, "MTLS", None)
    conf.update(ssl_certfile=secure.pki.path("rogue-cert.pem"), ssl_keyfile=secure.pki.path("rogue-key.pem"))
    before = secure.broker.server_log.read_text().count(TLS_REFUSED)
    with pytest.raises(kafka.errors.KafkaTimeoutError, match="Unable to bootstrap"):     # kafka-python 3's words
        kafka.KafkaProducer(request_timeout_ms=5000, max_block_ms=5000, bootstrap_timeout_ms=3000, **conf)
    assert _wait_for_more(secure, TLS_REFUSED, before) > before


def test_aiokafka_with_an_untrusted_certificate_is_refused(secure):
    import aiokafka
    import aiokafka.errors
    from aiokafka.helpers import create_ssl_context
    conf = _aiokafka_config(secure, "MTLS", None)
    conf["ssl_context"] = create_ssl_context(cafile=secure.pki.path("ca.pem"), certfile=secure.pki.path("rogue-cert.pem"),
                                             keyfile=secure.pki.path("rogue-key.pem"))
    before = secure.broker.server_log.read_text().count(TLS_REFUSED)
    with pytest.raises(aiokafka.errors.KafkaConnectionError):
        _aiokafka_start(conf)
    assert _wait_for_more(secure, TLS_REFUSED, before) > before


def test_a_listener_takes_only_its_enabled_protocols(secure):
    """listener.name.tls13.ssl.enabled.protocols=TLSv1.3: kafka-python limited to TLS 1.2
    is refused, and served with TLS 1.3."""
    import ssl

    import kafka
    import kafka.errors

    def context(highest: ssl.TLSVersion) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=secure.pki.path("ca.pem"))
        ctx.maximum_version = highest
        return ctx
    conf = {"bootstrap_servers": secure.addr("TLS13"), "security_protocol": "SSL"}
    before = secure.broker.server_log.read_text().count(TLS_REFUSED)
    with pytest.raises(kafka.errors.KafkaTimeoutError, match="Unable to bootstrap"):
        kafka.KafkaProducer(ssl_context=context(ssl.TLSVersion.TLSv1_2), max_block_ms=5000, bootstrap_timeout_ms=3000,
                            **conf)
    assert _wait_for_more(secure, TLS_REFUSED, before) > before
    producer = kafka.KafkaProducer(ssl_context=context(ssl.TLSVersion.TLSv1_3), **conf)
    producer.send("tls13-only", b"x").get(timeout=30)
    producer.close()


def test_a_listener_takes_only_its_cipher_suites(secure):
    """listener.name.aes256.ssl.cipher.suites in Java's names: a librdkafka client offering
    only AES-128 is refused; one offering the suite is served."""
    aes128 = {**librdkafka_config(secure, "AES256"), "ssl.cipher.suites": "ECDHE-ECDSA-AES128-GCM-SHA256"}
    errors = _librdkafka_errors(aes128)
    assert errors and "handshake failure" in errors[0].str().lower(), errors
    aes256 = {**librdkafka_config(secure, "AES256"), "ssl.cipher.suites": "ECDHE-ECDSA-AES256-GCM-SHA384"}
    assert _roundtrip_confluent(aes256, "aes256-only") == [f"m{i}".encode() for i in range(5)]


def test_a_broker_with_its_keys_and_trusted_certificates_inline_in_its_config(secure, zk_chroot):
    """ssl.keystore.key / ssl.keystore.certificate.chain / ssl.truststore.certificates
    (KIP-651), no key or trust files: the broker proves itself with the inline chain and
    checks clients against the inline CA, serving a client certificate of that CA and
    refusing one of another. (Its own broker: Kafka refuses a listener that would have a
    keystore file and inline keys both, and the module's broker has a keystore file.)"""
    pki = secure.pki
    broker_pem = Path(pki.path("broker.pem")).read_text()
    key_end = broker_pem.index("-----END ENCRYPTED PRIVATE KEY-----") + len("-----END ENCRYPTED PRIVATE KEY-----")
    plain, tls = free_ports(2)
    base = scratch_dir("inline-pem")
    broker = BrokerProcess(0, zk_chroot, base, plain, {    # a cluster of its own
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls}", "ssl.client.auth": "required",
        "ssl.keystore.type": "PEM", "ssl.key.password": PASSWORD,
        "ssl.keystore.key": _property_value(broker_pem[:key_end]),
        "ssl.keystore.certificate.chain": _property_value(broker_pem[key_end:]),
        "ssl.truststore.type": "PEM", "ssl.truststore.certificates": _property_value(Path(pki.path("ca.pem")).read_text())})
    try:
        broker.start()
        broker.wait_ready(60)
        conf = {"bootstrap.servers": f"127.0.0.1:{tls}", "security.protocol": "ssl",
                "ssl.ca.location": pki.path("ca.pem"), "ssl.certificate.location": pki.path("client-cert.pem"),
                "ssl.key.location": pki.path("client-key.pem")}
        assert _roundtrip_confluent(conf, "inline-pem") == [f"m{i}".encode() for i in range(5)]
        errors = _librdkafka_errors({**conf, "ssl.certificate.location": pki.path("rogue-cert.pem"),
                                     "ssl.key.location": pki.path("rogue-key.pem")})
        assert errors and ("unknown ca" in errors[0].str().lower() or "alert" in errors[0].str().lower()), errors
        assert "BEGIN ENCRYPTED PRIVATE KEY" not in broker.server_log.read_text()    # logged as [hidden]
    finally:
        broker.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_a_sasl_listener_closes_on_a_request_before_authentication(secure):
    """Metadata before SaslHandshake: Kafka's authenticator closes the connection."""
    from kafkalike.client.connection import BrokerConnection
    from kafkalike.protocol.messages.metadata import MetadataRequest
    conn = BrokerConnection("127.0.0.1", secure.ports["SASL_PLAINTEXT"], timeout=5)
    conn.connect()
    try:
        with pytest.raises(Exception):
            conn.send(MetadataRequest(topics=[]), version=1)
    finally:
        conn.close()
    assert "Unexpected Kafka request of type Metadata during SASL handshake" in secure.broker.server_log.read_text()


def _kafka_python_config(secure: SecureBroker, listener: str, mechanism: str | None, password_ok=True) -> dict:
    protocol = TLS_LISTENERS.get(listener, listener)
    conf = {"bootstrap_servers": secure.addr(listener), "security_protocol": protocol}
    if "SSL" in protocol:
        conf["ssl_cafile"] = secure.pki.path("ca.pem")
    if listener == "MTLS":
        conf["ssl_certfile"] = secure.pki.path("client-cert.pem")
        conf["ssl_keyfile"] = secure.pki.path("client-key.pem")
    if mechanism:
        user, pw = _user_for(mechanism)
        conf.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                    sasl_plain_password=pw if password_ok else "wrong")
    return conf


@pytest.mark.parametrize("listener,mechanism", [("MTLS", None), ("SASL_SSL", "SCRAM-SHA-512"),
                                                ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "PLAIN")])
def test_kafka_python_produces_and_consumes(secure, listener, mechanism):
    import kafka
    conf = _kafka_python_config(secure, listener, mechanism)
    topic = f"kp-{listener.lower()}-{(mechanism or 'tls').lower()}"
    producer = kafka.KafkaProducer(**conf)
    for i in range(3):
        producer.send(topic, f"kp{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=15000,
                                   group_id="kp-" + uuid.uuid4().hex[:6], **conf)
    got = []
    for msg in consumer:
        got.append(msg.value)
        if len(got) == 3:
            break
    consumer.close()
    assert got == [b"kp0", b"kp1", b"kp2"]


def test_kafka_python_with_a_wrong_password_logs_the_brokers_refusal(secure, caplog):
    import kafka
    import kafka.errors
    with pytest.raises(kafka.errors.KafkaError):
        kafka.KafkaProducer(request_timeout_ms=5000, max_block_ms=5000, bootstrap_timeout_ms=3000,
                            **_kafka_python_config(secure, "SASL_PLAINTEXT", "SCRAM-SHA-512", password_ok=False))
    assert any("SaslAuthenticationFailed" in r.getMessage() or "Authentication failed" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records][-5:]


def _aiokafka_config(secure: SecureBroker, listener: str, mechanism: str | None, password_ok=True) -> dict:
    from aiokafka.helpers import create_ssl_context
    protocol = TLS_LISTENERS.get(listener, listener)
    conf = {"bootstrap_servers": secure.addr(listener), "security_protocol": protocol}
    if "SSL" in protocol:
        cert = dict(certfile=secure.pki.path("client-cert.pem"), keyfile=secure.pki.path("client-key.pem")) \
            if listener == "MTLS" else {}
        conf["ssl_context"] = create_ssl_context(cafile=secure.pki.path("ca.pem"), **cert)
    if mechanism:
        user, pw = _user_for(mechanism)
        conf.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                    sasl_plain_password=pw if password_ok else "wrong")
    return conf


def _aiokafka_start(conf: dict) -> None:
    """Start (and stop) an aiokafka producer: it connects and logs in, or raises."""
    import aiokafka

    async def run():
        producer = aiokafka.AIOKafkaProducer(request_timeout_ms=5000, **conf)
        try:
            await producer.start()
        finally:
            await producer.stop()
    asyncio.run(run())


@pytest.mark.parametrize("listener,mechanism", [("SSL", None), ("SASL_SSL", "PLAIN"),
                                                ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "SCRAM-SHA-256")])
def test_aiokafka_produces_and_consumes(secure, listener, mechanism):
    import aiokafka
    topic = f"aio-{listener.lower()}-{(mechanism or 'tls').lower()}"

    async def run():
        producer = aiokafka.AIOKafkaProducer(**_aiokafka_config(secure, listener, mechanism))
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, auto_offset_reset="earliest", group_id="aio-" + uuid.uuid4().hex[:6],
                                             **_aiokafka_config(secure, listener, mechanism))
        await consumer.start()
        got = []
        try:
            async with asyncio.timeout(30):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == 3:
                        break
        finally:
            await consumer.stop()
        return got
    assert asyncio.run(run()) == [b"a0", b"a1", b"a2"]


def test_aiokafka_with_a_wrong_password_is_refused(secure, caplog):
    import aiokafka
    import aiokafka.errors

    with pytest.raises(aiokafka.errors.KafkaConnectionError):
        _aiokafka_start(_aiokafka_config(secure, "SASL_PLAINTEXT", "PLAIN", password_ok=False))
    assert any("Authentication failed: Invalid username or password" in r.getMessage() for r in caplog.records)


# -- kafkalike's own client and tools ----------------------------------------------------

def _own_config(secure: SecureBroker, listener: str, mechanism: str | None = None, password_ok=True) -> dict:
    protocol = TLS_LISTENERS.get(listener, listener)
    conf = {"bootstrap.servers": secure.addr(listener), "security.protocol": protocol}
    if "SSL" in protocol:   # Java's keys: a PKCS12 truststore
        conf.update({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": secure.pki.path("truststore.p12"),
                     "ssl.truststore.password": PASSWORD})
    if listener == "MTLS":  # a PKCS12 keystore with the client certificate
        conf.update({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": secure.pki.path("client.p12"),
                     "ssl.keystore.password": PASSWORD})
    if mechanism:
        user, pw = _user_for(mechanism)
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        conf.update({"sasl.mechanism": mechanism, "sasl.jaas.config":
                     f'{module} required username="{user}" password="{pw if password_ok else "nope"}";'})
    return conf


@pytest.mark.parametrize("listener,mechanism", [("MTLS", None), ("SASL_SSL", "SCRAM-SHA-512"),
                                                ("SASL_PLAINTEXT", "PLAIN")])
def test_kafkalike_client_produces_and_consumes(secure, listener, mechanism):
    from kafkalike.client.consumer import KafkaConsumer
    from kafkalike.client.producer import KafkaProducer
    conf = _own_config(secure, listener, mechanism)
    topic = f"own-{listener.lower()}-{(mechanism or 'tls').lower()}"
    producer = KafkaProducer(conf)
    for i in range(3):
        producer.send(topic, f"o{i}".encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer({**conf, "group.id": "own-" + uuid.uuid4().hex[:6], "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 3 and time.monotonic() < deadline:
        for record in consumer.poll(0.5):
            got.append(record.value)
    consumer.close()
    assert got == [b"o0", b"o1", b"o2"]


def test_kafkalike_client_with_a_wrong_password_logs_kafkas_message(secure, caplog):
    from kafkalike.client.producer import KafkaProducer
    from kafkalike.client.errors import KafkaError
    producer = KafkaProducer({**_own_config(secure, "SASL_SSL", "SCRAM-SHA-256", password_ok=False),
                              "max.block.ms": 3000})
    try:
        with pytest.raises(KafkaError):
            producer.send("never", b"x").get(timeout=10)
    finally:
        producer.close()
    assert any("failed authentication due to: Authentication failed during authentication due to invalid "
               "credentials with SASL mechanism SCRAM-SHA-256" in r.getMessage() for r in caplog.records)


def test_tools_take_security_from_their_config_files(secure, tmp_path):
    """kafka-topics --command-config, the console tools' --producer.config/--consumer.config, and
    kafka-consumer-groups, kafka-configs and kafka-reassign-partitions with --command-config."""
    props = tmp_path / "client.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in _own_config(secure, "SASL_SSL", "SCRAM-SHA-256").items()
                             if k != "bootstrap.servers"))
    bootstrap = secure.addr("SASL_SSL")
    run = lambda *args, **kw: subprocess.run([str(REPO_ROOT / "bin" / args[0]), *args[1:]],  # noqa: E731
                                             capture_output=True, timeout=90, **kw)
    created = run("kafka-topics.sh", "--bootstrap-server", bootstrap, "--command-config", str(props),
                  "--create", "--topic", "tooled", "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    assert b"Created topic tooled." in created.stdout
    produced = run("kafka-console-producer.sh", "--bootstrap-server", bootstrap, "--producer.config", str(props),
                   "--topic", "tooled", input=b"alpha\nbeta\n")
    assert produced.returncode == 0, produced.stderr
    consumed = run("kafka-console-consumer.sh", "--bootstrap-server", bootstrap, "--consumer.config", str(props),
                   "--topic", "tooled", "--from-beginning", "--max-messages", "2", "--timeout-ms", "30000",
                   "--group", "tooled-g")
    assert consumed.stdout.split() == [b"alpha", b"beta"], consumed.stderr
    # The operator's other tools read the same file with --command-config.
    described = run("kafka-consumer-groups.sh", "--bootstrap-server", bootstrap, "--command-config", str(props),
                    "--describe", "--group", "tooled-g")
    assert described.returncode == 0, described.stderr
    row = next(line.split() for line in described.stdout.decode().splitlines() if line.startswith("tooled-g "))
    assert row[1:4] == ["tooled", "0", "2"], described.stdout           # GROUP TOPIC PARTITION CURRENT-OFFSET
    altered = run("kafka-configs.sh", "--bootstrap-server", bootstrap, "--command-config", str(props), "--alter",
                  "--entity-type", "topics", "--entity-name", "tooled", "--add-config", "retention.ms=3600000")
    assert altered.returncode == 0 and b"Completed updating config for topic tooled." in altered.stdout, altered
    shown = run("kafka-configs.sh", "--bootstrap-server", bootstrap, "--command-config", str(props), "--describe",
                "--entity-type", "topics", "--entity-name", "tooled")
    assert b"retention.ms=3600000" in shown.stdout, shown
    listed = run("kafka-reassign-partitions.sh", "--bootstrap-server", bootstrap, "--command-config", str(props),
                 "--list")
    assert listed.returncode == 0 and b"No partition reassignments found." in listed.stdout, listed


def test_broker_api_versions_and_log_dirs_tools_on_a_secured_listener(secure, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in _own_config(secure, "SASL_SSL", "PLAIN").items()
                             if k != "bootstrap.servers"))
    bootstrap = secure.addr("SASL_SSL")
    versions = subprocess.run([str(REPO_ROOT / "bin" / "kafka-broker-api-versions.sh"), "--bootstrap-server",
                               bootstrap, "--command-config", str(props)], capture_output=True, timeout=90)
    assert versions.returncode == 0 and b"SaslAuthenticate(36): 0 to 2 [usable: 2]" in versions.stdout, versions
    dirs = subprocess.run([str(REPO_ROOT / "bin" / "kafka-log-dirs.sh"), "--bootstrap-server", bootstrap,
                           "--command-config", str(props), "--describe", "--broker-list", "0"],
                          capture_output=True, timeout=90)
    assert dirs.returncode == 0 and b'"brokers":[{"broker":0' in dirs.stdout, dirs


def test_large_records_cross_tls_both_ways(secure):
    """Fetch responses carry record bytes read from the log as separate buffers; through
    TLS they must arrive whole."""
    from confluent_kafka import Consumer, Producer
    conf = librdkafka_config(secure, "SASL_SSL", "SCRAM-SHA-512")
    payloads = [bytes([i]) * (300_000 + i) for i in range(12)]
    producer = Producer({**conf, "message.max.bytes": 1_000_000, "linger.ms": 5})
    for p in payloads:
        producer.produce("tls-large", p)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": "large-" + uuid.uuid4().hex[:6], "auto.offset.reset": "earliest"})
    consumer.subscribe(["tls-large"])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < len(payloads) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert got == payloads
