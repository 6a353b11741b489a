"""Dynamic broker configs seen by third-party admin clients: confluent-kafka (librdkafka)
and kafka-python, on BROKER resources ("" = the cluster default, "0" = broker 0).

They judge the wire side: IncrementalAlterConfigs / AlterConfigs accepted or refused
with Kafka 2.8's error, DescribeConfigs sources and synonyms as those clients decode them,
and a topic without an override reporting the new cluster default.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic,
                                   ResourceType)

from kafkalike.client.admin import AdminClient as KafkalikeAdmin
from kafkalike.client.admin import AlterConfigOp
from kafkalike.client.admin import ConfigResource as KafkalikeResource
from kafkalike.client.admin import ResourceType as KafkalikeType

pytestmark = pytest.mark.interop


def wait_for(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


@pytest.fixture
def admin(fresh_broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": fresh_broker.bootstrap})


def describe(admin: AdminClient, resource: ConfigResource) -> dict:
    return admin.describe_configs([resource])[resource].result(20)


def test_confluent_kafka_incremental_alter_and_describe_broker_configs(admin, fresh_broker):
    admin.create_topics([NewTopic("cfk-plain", 1, 1)])["cfk-plain"].result(20)
    # librdkafka refuses a BROKER resource with an empty name ("Invalid ConfigResource"):
    # the cluster default is set with kafkalike's client, the rest is confluent-kafka's.
    with KafkalikeAdmin({"bootstrap.servers": fresh_broker.bootstrap}) as ours:
        ours.incremental_alter_configs({KafkalikeResource(KafkalikeType.BROKER, ""): [
            AlterConfigOp("log.retention.ms", "86400000")]})
    broker0 = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.bytes", "1073741824", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([broker0])[broker0].result(20)

    described = describe(admin, ConfigResource(ResourceType.BROKER, "0"))
    retention = described["log.retention.ms"]
    assert (retention.value, retention.source) == ("86400000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert [(s.name, s.source) for s in retention.synonyms.values()][0] == (
        "log.retention.ms", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    size = described["log.retention.bytes"]
    assert (size.value, size.source, size.is_read_only) == ("1073741824", ConfigSource.DYNAMIC_BROKER_CONFIG.value,
                                                            False)
    assert described["log.dirs"].is_read_only

    topic = describe(admin, ConfigResource(ResourceType.TOPIC, "cfk-plain"))
    assert (topic["retention.ms"].value, topic["retention.ms"].source) == (
        "86400000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert (topic["retention.bytes"].value, topic["retention.bytes"].source) == (
        "1073741824", ConfigSource.DYNAMIC_BROKER_CONFIG.value)

    # Deleting the per-broker key brings the static/default value back.
    undo = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([undo])[undo].result(20)
    assert describe(admin, ConfigResource(ResourceType.BROKER, "0"))["log.retention.bytes"].source == \
        ConfigSource.DEFAULT_CONFIG.value


def test_confluent_kafka_refused_broker_configs(admin):
    def refused(resource) -> KafkaError:
        with pytest.raises(KafkaException) as error:
            admin.incremental_alter_configs([resource])[resource].result(20)
        return error.value.args[0]

    read_only = refused(ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("broker.id", "5", incremental_operation=AlterConfigOpType.SET)]))
    assert read_only.code() == KafkaError.INVALID_REQUEST
    assert read_only.str().endswith("Cannot update these configs dynamically: Set(broker.id)")
    bad = refused(ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("min.insync.replicas", "0", incremental_operation=AlterConfigOpType.SET)]))
    assert bad.code() == KafkaError.INVALID_REQUEST
    assert "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1" in bad.str()
    described = describe(admin, ConfigResource(ResourceType.BROKER, "0"))
    assert described["min.insync.replicas"].source == ConfigSource.DEFAULT_CONFIG.value
    assert described["broker.id"].value == "0"


def test_kafka_python_alter_and_describe_broker_configs(fresh_broker):
    # kafka-python (like librdkafka) takes only numeric broker names: per-broker configs.
    from kafka.admin import ConfigResource as KPResource, ConfigResourceType, KafkaAdminClient
    client = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap)
    try:
        assert client.alter_configs([KPResource(ConfigResourceType.BROKER, "0", {"log.cleaner.backoff.ms": "20000"})]
                                    ) == {"broker": {"0": "OK"}}
        described = client.describe_configs([KPResource(ConfigResourceType.BROKER, "0")])["broker"]["0"]
        entry = described["log.cleaner.backoff.ms"]
        assert (entry["value"], entry["config_source"], entry["read_only"]) == ("20000", "DYNAMIC_BROKER_CONFIG", False)
        # kafka-python checks names against what the broker reports dynamic; past that check
        # the broker refuses with Kafka 2.8's error.
        with pytest.raises(ValueError, match="zookeeper.connect"):
            client.alter_configs([KPResource(ConfigResourceType.BROKER, "0", {"zookeeper.connect": "x"})])
        answer = client.alter_configs([KPResource(ConfigResourceType.BROKER, "0", {"zookeeper.connect": "x"})],
                                      raise_on_unknown=False)
        assert answer == {"broker": {"0": "[Error 42] InvalidRequestError: Invalid config value for resource "
                                          "ConfigResource(type=BROKER, name='0'): Cannot update these configs "
                                          "dynamically: Set(zookeeper.connect)"}}
    finally:
        client.close()
