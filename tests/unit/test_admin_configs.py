"""The admin manager's config calls (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
of one resource): what each answers and writes, with ZooKeeper faked. The wire side, and
authorization, are the handler's (handlers/configs.py)."""
from __future__ import annotations

import pytest
from twisted.internet import defer

from kafkalike.broker.admin_configs import APPEND, DELETE, SET, ConfigResult
from kafkalike.broker.admin_manager import AdminManager
from kafkalike.broker.config import KafkaConfig
from kafkalike.broker.metadata_cache import MetadataCache, PartitionInfo
from kafkalike.broker.topic_configs import TopicConfigs, default_log_config
from kafkalike.common.resources import ConfigSource, ResourceType
from kafkalike.protocol.errors import ErrorCode

TOPIC, BROKER, LOGGER, GROUP = ResourceType.TOPIC, ResourceType.BROKER, ResourceType.BROKER_LOGGER, ResourceType.GROUP


class FakeZk:
    def __init__(self):
        self.brokers: dict = {}
        self.topics: dict = {}
        self.writes: list = []

    def get_broker_configs(self, broker_id):
        return defer.succeed(dict(self.brokers.get(broker_id, {})))

    def change_broker_config(self, broker_id, configs):
        self.brokers[broker_id] = dict(configs)
        self.writes.append(("brokers", broker_id, dict(configs)))
        return defer.succeed(None)

    def get_entity_configs(self, entity_type, name):
        return defer.succeed(dict(self.topics.get(name, {})))

    def change_topic_config(self, topic, configs):
        self.topics[topic] = dict(configs)
        self.writes.append(("topics", topic, dict(configs)))
        return defer.succeed(None)


def run(coro):
    result = []
    defer.ensureDeferred(coro).addBoth(result.append)
    assert result, "fakes answer at once"
    if hasattr(result[0], "raiseException"):
        result[0].raiseException()
    return result[0]


@pytest.fixture
def admin() -> AdminManager:
    cfg = KafkaConfig({"zookeeper.connect": "localhost:2181", "broker.id": "0"}, hostname="broker1")
    cache = MetadataCache(0)
    cache.partitions["t"] = {0: PartitionInfo("t", 0, 0, 0, [0], [0])}
    return AdminManager(FakeZk(), cache, cfg, TopicConfigs(default_log_config(cfg)), None)


def test_incremental_alterations_of_a_topic_start_from_its_overrides(admin):
    admin.zk.topics["t"] = {"retention.ms": "5", "segment.ms": "7"}
    result = run(admin.incremental_alter_configs(
        TOPIC, "t", [("cleanup.policy", APPEND, "compact"), ("segment.ms", DELETE, None)], False))
    assert result == ConfigResult()
    assert admin.zk.writes == [("topics", "t", {"retention.ms": "5", "cleanup.policy": "delete,compact"})]


@pytest.mark.parametrize("ops, message", [
    ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], "Error due to duplicate config keys : retention.ms"),
    ([("retention.ms", SET, None), ("segment.ms", APPEND, None)],
     "Null value not supported for : SET:retention.ms,APPEND:segment.ms"),
    ([("retention.ms", APPEND, "1")], "Config value append is not allowed for config key: retention.ms"),
])
def test_refused_incremental_alterations_write_nothing(admin, ops, message):
    assert run(admin.incremental_alter_configs(TOPIC, "t", ops, False)) == ConfigResult(
        ErrorCode.INVALID_REQUEST, message)
    assert admin.zk.writes == []


def test_alter_configs_replaces_a_broker_levels_whole_set(admin):
    admin.zk.brokers[0] = {"log.retention.ms": "1000"}
    assert run(admin.alter_configs(BROKER, "0", [("log.segment.bytes", "2000000")], False)) == ConfigResult()
    assert admin.zk.brokers[0] == {"log.segment.bytes": "2000000"}
    assert run(admin.alter_configs(BROKER, "0", [("log.segment.bytes", None), ("a", None)], False)) == ConfigResult(
        ErrorCode.INVALID_REQUEST, "Null value not supported for : log.segment.bytes,a")
    assert run(admin.alter_configs(GROUP, "g", [], False)) == ConfigResult(
        ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, but resource type is GROUP")
    assert run(admin.alter_configs(LOGGER, "0", [], False)).message.endswith("resource type is BROKER_LOGGER")
    assert run(admin.alter_configs(99, "x", [], False)).message.endswith("resource type is UNKNOWN")


def test_validate_only_writes_nothing(admin):
    assert run(admin.incremental_alter_configs(BROKER, "", [("log.retention.ms", SET, "1")], True)) == ConfigResult()
    assert run(admin.alter_configs(TOPIC, "t", [("retention.ms", "1")], True)) == ConfigResult()
    assert admin.zk.writes == []


def test_describe_answers_the_keys_asked_for(admin):
    admin.zk.topics["t"] = {"retention.ms": "5"}
    described = run(admin.describe_configs(TOPIC, "t", ["retention.ms", "unknown.key"]))
    assert described.error == ErrorCode.NONE
    [entry] = described.entries
    assert (entry.name, entry.value, entry.source, entry.is_default, entry.read_only) == (
        "retention.ms", "5", ConfigSource.TOPIC_CONFIG, False, False)
    everything = run(admin.describe_configs(TOPIC, "t", []))     # an empty list asks for every key
    assert len(everything.entries) > 20


def test_describe_of_a_broker_level_and_what_is_refused(admin):
    admin.dynamic.update_default({"log.retention.ms": "5000"})
    default = run(admin.describe_configs(BROKER, "", None))
    assert [(e.name, e.value, e.source) for e in default.entries] == [
        ("log.retention.ms", "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    assert run(admin.describe_configs(BROKER, "0", ["broker.id"])).entries[0].value == "0"
    refusals = [run(admin.describe_configs(t, name, None)) for t, name in (
        (BROKER, "1"), (BROKER, "b"), (LOGGER, ""), (GROUP, "g"), (TOPIC, "missing"))]
    assert [(d.error, d.message, d.entries) for d in refusals] == [
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0 or empty string, but received 1", []),
        (ErrorCode.INVALID_REQUEST, "Broker id must be an integer, but it is: b", []),
        (ErrorCode.INVALID_REQUEST, "Broker id must not be empty", []),
        (ErrorCode.INVALID_REQUEST, "Unsupported resource type: 3", []),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Topic missing does not exist.", []),
    ]
