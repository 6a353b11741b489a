"""One real broker process in a real ZooKeeper: registration, znodes, restart."""
from __future__ import annotations

import json
import time

import pytest
from kazoo.client import KazooClient

from kafkalike.client.connection import BrokerConnection
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.metadata import MetadataRequest

pytestmark = pytest.mark.integration


def test_registers_in_zookeeper_as_kafka_does(broker, module_zk_chroot):
    zk = KazooClient(hosts=module_zk_chroot)
    zk.start(timeout=15)
    try:
        data, stat = zk.get("/brokers/ids/0")
        reg = json.loads(data)
        assert reg["version"] == 5
        assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"]
        assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        assert (reg["host"], reg["port"]) == ("127.0.0.1", broker.port)
        assert stat.ephemeralOwner != 0
        assert json.loads(zk.get("/controller")[0])["brokerid"] == 0
        assert int(zk.get("/controller_epoch")[0]) >= 1
        cluster = json.loads(zk.get("/cluster/id")[0])
        assert cluster["version"] == "1" and len(cluster["id"]) == 22
        meta = (broker.log_dir / "meta.properties").read_text()
        assert "broker.id=0" in meta and f"cluster.id={cluster['id']}" in meta
    finally:
        zk.stop()


def test_api_versions_advertises_from_zero(broker):
    conn = BrokerConnection("127.0.0.1", broker.port)
    conn.connect()
    try:
        resp = conn.send(ApiVersionsRequest(client_software_name="test", client_software_version="1"), version=3)
        served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert served[0] == (0, 9) and served[1] == (0, 12) and served[3] == (0, 11)
        md = conn.send(MetadataRequest(topics=None), version=9)
        assert [b.node_id for b in md.brokers] == [0] and md.controller_id == 0
    finally:
        conn.close()


def test_wrong_cluster_id_refuses_to_start(fresh_broker):
    fresh_broker.stop()
    meta = fresh_broker.log_dir / "meta.properties"
    meta.write_text(meta.read_text().replace("cluster.id=", "cluster.id=X"))
    fresh_broker.start()
    deadline = time.time() + 30
    while fresh_broker.is_running() and time.time() < deadline:
        time.sleep(0.1)
    assert not fresh_broker.is_running() and fresh_broker.proc.returncode == 1
    assert "doesn't match stored clusterId" in fresh_broker.log_tail(200)


def _exits_with(broker, text: str) -> None:
    deadline = time.time() + 30
    while broker.is_running() and time.time() < deadline:
        time.sleep(0.1)
    assert not broker.is_running() and broker.proc.returncode == 1
    assert text in broker.log_tail(200)


def test_bad_config_value_stops_startup_naming_the_key(fresh_broker):
    fresh_broker.stop()
    fresh_broker.overrides["num.partitions"] = "abc"
    fresh_broker.start()
    _exits_with(fresh_broker, "Invalid value abc for configuration num.partitions")


def test_broker_id_that_disagrees_with_meta_properties_refuses_to_start(fresh_broker):
    fresh_broker.stop()
    fresh_broker.overrides["broker.id"] = "7"
    fresh_broker.start()
    _exits_with(fresh_broker, "Configured broker.id 7 doesn't match stored broker.id Some(0)")


def test_unknown_config_key_is_logged_not_fatal(fresh_broker):
    fresh_broker.stop()
    fresh_broker.overrides["no.such.key"] = "1"
    fresh_broker.start()
    fresh_broker.wait_ready()
    assert "The configuration 'no.such.key' was supplied but isn't a known config." in \
        (fresh_broker.app_log_dir / "server.log").read_text()


def test_server_log_opens_as_kafkas_does(broker):
    """The config banner first, the log loading time, and AppInfoParser's version lines."""
    text = (broker.app_log_dir / "server.log").read_text()
    first = text.splitlines()[0]
    assert "INFO KafkaConfig values: " in first
    assert f"\tbroker.id = {broker.broker_id}\n" in text
    assert "\tlog.dirs = " in text and "\tzookeeper.connect = " in text
    assert "Logs loading complete in " in text and " ms. (kafka.log.LogManager)" in text
    assert "INFO Kafka version: 2.8.0 (org.apache.kafka.common.utils.AppInfoParser)" in text
    assert "INFO Kafka commitId: kafkalike (org.apache.kafka.common.utils.AppInfoParser)" in text
    banner = text.index("KafkaConfig values")
    assert banner < text.index("Connecting to zookeeper") < text.index("Kafka version: 2.8.0") \
        < text.index(f"[KafkaServer id={broker.broker_id}] started")
