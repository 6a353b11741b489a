"""kafka-request.log with a real broker and a real client (confluent-kafka): an operator who
sets `log4j.logger.kafka.request.logger=DEBUG, requestAppender` finds one
`Completed request:{json}` line per request the client made, naming the client's software
and without the records' bytes; a SASL/PLAIN login leaves no line and no password, and the
requests after it name the user; with the stock file the log stays empty until
`kafka-configs.sh --entity-type broker-loggers` turns the logger to DEBUG on the live
broker, and is quiet again once that is deleted."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from kafkalike.lab.cluster import BrokerProcess
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import scratch_dir
from tests.security_certs import JAAS_PLAIN

pytestmark = pytest.mark.interop

REPO = Path(__file__).resolve().parents[2]
PREFIX, SUFFIX = " DEBUG Completed request:", " (kafka.request.logger)"


def produce_and_fetch(bootstrap: str, topic: str, value: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                assert message.value() == value
                return
        raise AssertionError("the record never came back")
    finally:
        consumer.close()


def request_lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        assert PREFIX in line and line.endswith(SUFFIX), line
        out.append(json.loads(line[line.index(PREFIX) + len(PREFIX):-len(SUFFIX)]))
    return out


@pytest.fixture
def two_brokers(zk_chroot: str, module_zk_chroot: str, monkeypatch):
    """One broker with the request logger at DEBUG, one with Kafka's stock log4j.properties,
    started side by side (each in its own chroot, both broker 0)."""
    base = scratch_dir("request-log")
    own = base / "log4j.properties"
    stock = (REPO / "config" / "log4j.properties").read_text()
    assert "log4j.logger.kafka.request.logger=WARN, requestAppender" in stock
    own.write_text(stock.replace("log4j.logger.kafka.request.logger=WARN, requestAppender",
                                 "log4j.logger.kafka.request.logger=DEBUG, requestAppender"))
    port, sasl_port = free_ports(2)
    debug = BrokerProcess(0, zk_chroot, base / "debug", port, overrides={
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN})
    debug.sasl_port = sasl_port
    default = BrokerProcess(0, module_zk_chroot, base / "default")
    try:
        monkeypatch.setenv("KAFKA_LOG4J_OPTS", f"-Dlog4j.configuration=file:{own}")
        debug.start()
        monkeypatch.delenv("KAFKA_LOG4J_OPTS")
        default.start()
        debug.wait_ready()
        default.wait_ready()
        yield debug, default
    finally:
        for broker in (debug, default):
            broker.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_request_log_at_debug_names_every_request_and_is_empty_by_default(two_brokers):
    debug, default = two_brokers
    topic = f"request-log-{uuid.uuid4().hex[:8]}"
    marker = b"do-not-log-me-" + uuid.uuid4().hex.encode()
    produce_and_fetch(debug.bootstrap, topic, marker)
    produce_and_fetch(default.bootstrap, topic, marker)
    sasl = Producer({"bootstrap.servers": f"127.0.0.1:{debug.sasl_port}", "security.protocol": "sasl_plaintext",
                     "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})
    sasl.produce(topic, value=marker, partition=0)
    assert sasl.flush(30) == 0

    log = debug.app_log_dir / "kafka-request.log"
    deadline = time.monotonic() + 30          # the last answers are logged once written

    def sasl_produce_logged() -> bool:
        try:
            lines = request_lines(log)
        except (AssertionError, ValueError):      # a line being written
            return False
        return any(line["listener"] == "SASL_PLAINTEXT" and line["requestHeader"]["requestApiKeyName"] == "PRODUCE"
                   for line in lines)
    while time.monotonic() < deadline and not ('"requestApiKeyName":"FETCH"' in log.read_text()
                                               and sasl_produce_logged()):
        time.sleep(0.2)
    lines = request_lines(log)
    by_api: dict[str, list[dict]] = {}
    for line in lines:
        by_api.setdefault(line["requestHeader"]["requestApiKeyName"], []).append(line)
    assert {"API_VERSIONS", "METADATA", "PRODUCE", "FETCH"} <= set(by_api), sorted(by_api)

    produce = next(p for p in by_api["PRODUCE"] if p["request"]["topicData"][0]["name"] == topic)
    assert produce["request"]["acks"] == -1
    [partition] = produce["request"]["topicData"][0]["partitionData"]
    assert partition["index"] == 0 and partition["recordsSizeInBytes"] > len(marker)
    assert produce["response"]["responses"][0]["partitionResponses"][0]["errorCode"] == 0
    assert produce["clientInformation"]["softwareName"] == "confluent-kafka-python"
    assert produce["clientInformation"]["softwareVersion"] != "unknown"
    assert produce["requestHeader"]["clientId"] == "rdkafka"
    assert (produce["securityProtocol"], produce["listener"], produce["principal"]) == \
        ("PLAINTEXT", "PLAINTEXT", "User:ANONYMOUS")
    assert produce["totalTimeMs"] >= produce["localTimeMs"] >= 0
    assert produce["connection"].startswith(f"127.0.0.1:{debug.port}-127.0.0.1:")

    fetched = [f for f in by_api["FETCH"] for t in f["response"].get("responses", ())
               for p in t["partitionResponses"] if p.get("recordSetSizeInBytes")]
    assert fetched, "no Fetch answer carried records"
    assert fetched[0]["clientInformation"]["softwareName"] == "confluent-kafka-python"
    assert any(a["request"].get("clientSoftwareName") == "confluent-kafka-python" and
               a["clientInformation"]["softwareName"] == "confluent-kafka-python" for a in by_api["API_VERSIONS"])
    assert marker.decode() not in log.read_text()

    # The SASL login is the authenticator's, as in Kafka: not logged, and no password anywhere.
    assert "alice-secret" not in log.read_text()
    assert not {"SASL_HANDSHAKE", "SASL_AUTHENTICATE"} & set(by_api)
    over_sasl = [line for line in request_lines(log) if line["listener"] == "SASL_PLAINTEXT"]
    assert {line["requestHeader"]["requestApiKeyName"] for line in over_sasl} >= {"METADATA", "PRODUCE"}
    assert all(line["principal"] == "User:alice" and line["securityProtocol"] == "SASL_PLAINTEXT"
               for line in over_sasl)

    # Kafka's stock log4j.properties: the file is there, and empty.
    stock_log = default.app_log_dir / "kafka-request.log"
    assert stock_log.exists() and stock_log.read_text() == ""

    # Turned on and off on the live broker, as Kafka's operators do.
    configs = [str(REPO / "bin" / "kafka-configs.sh"), "--bootstrap-server", default.bootstrap,
               "--entity-type", "broker-loggers", "--entity-name", "0"]
    run = subprocess.run([*configs, "--alter", "--add-config", "kafka.request.logger=DEBUG"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "Completed updating config for broker-logger 0." in run.stdout
    run = subprocess.run([*configs, "--describe"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "kafka.request.logger=DEBUG sensitive=false synonyms={}" in run.stdout, run
    produce_and_fetch(default.bootstrap, topic, marker)
    live = request_lines(stock_log)
    assert {"PRODUCE", "FETCH"} <= {line["requestHeader"]["requestApiKeyName"] for line in live}
    assert marker.decode() not in stock_log.read_text()
    run = subprocess.run([*configs, "--alter", "--delete-config", "kafka.request.logger"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    count = len(request_lines(stock_log))
    produce_and_fetch(default.bootstrap, topic, marker)
    assert len(request_lines(stock_log)) == count        # back to its ancestors' INFO
