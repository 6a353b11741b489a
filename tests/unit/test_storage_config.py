"""Topic log configs: Kafka 2.8's keys, defaults, validation, and broker-level synonyms."""
from __future__ import annotations

import pytest

from kafkalike.storage.config import BROKER_SYNONYMS, LONG_MAX, LogConfig, log_config_from_broker
from kafkalike.storage.errors import ConfigError


def test_defaults_match_kafka_2_8():
    props = LogConfig().to_props()
    assert props["segment.bytes"] == "1073741824"
    assert props["segment.ms"] == "604800000"
    assert props["segment.jitter.ms"] == "0"
    assert props["segment.index.bytes"] == "10485760"
    assert props["index.interval.bytes"] == "4096"
    assert props["retention.ms"] == "604800000"
    assert props["retention.bytes"] == "-1"
    assert props["flush.messages"] == props["flush.ms"] == str(LONG_MAX)
    assert props["max.message.bytes"] == "1048588"
    assert props["message.timestamp.type"] == "CreateTime"
    assert props["message.timestamp.difference.max.ms"] == str(LONG_MAX)
    assert props["cleanup.policy"] == "delete"
    assert props["min.insync.replicas"] == "1"
    assert props["file.delete.delay.ms"] == "60000"
    assert props["delete.retention.ms"] == "86400000"
    assert props["min.cleanable.dirty.ratio"] == "0.5"
    assert props["compression.type"] == "producer"
    assert props["unclean.leader.election.enable"] == "false"
    assert props["preallocate"] == "false"
    assert props["message.format.version"] == "2.8-IV1"
    assert len(props) == 26


def test_topic_overrides_parse_strings_and_are_remembered():
    config = LogConfig.from_props({"retention.ms": "1000", "cleanup.policy": "compact, delete",
                                   "unclean.leader.election.enable": "TRUE"})
    assert config.retention_ms == 1000
    assert config.cleanup_policy == ("compact", "delete") and config.compact and config.delete
    assert config.unclean_leader_election_enable is True
    assert config.overridden == {"retention.ms", "cleanup.policy", "unclean.leader.election.enable"}


@pytest.mark.parametrize("key, value, message", [
    ("segment.bytes", "big", "Invalid value big for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "13", "configuration segment.bytes: Value must be at least 14"),
    ("segment.bytes", str(1 << 31), "segment.bytes: Not a number of type INT"),
    ("retention.ms", "-2", "retention.ms: Value must be at least -1"),
    ("min.cleanable.dirty.ratio", "1.5", "min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("cleanup.policy", "forever", "cleanup.policy: String must be one of: compact, delete"),
    ("compression.type", "brotli", "compression.type: String must be one of"),
    ("preallocate", "yes", "preallocate: Expected value to be either true or false"),
    ("message.format.version", "3.9", "message.format.version"),
    ("leader.replication.throttled.replicas", "0:1,x", "leader.replication.throttled.replicas"),
])
def test_bad_values_name_the_key(key, value, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")) as caught:
        LogConfig.from_props({key: value})
    assert caught.value.error_code == 40


def test_unknown_keys_are_refused_unless_lenient():
    with pytest.raises(ConfigError, match="Unknown topic config name: retention.hours"):
        LogConfig.from_props({"retention.hours": "1"})
    assert LogConfig.from_props({"retention.hours": "1"}, strict=False) == LogConfig()


def test_cross_key_rule_on_compaction_lags():
    with pytest.raises(ConfigError, match="min.compaction.lag.ms"):
        LogConfig.from_props({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_message_format_versions_accept_kafka_spellings():
    for version in ("2.8", "2.8-IV1", "2.8.1", "0.10.2", "0.10.2-IV0", "1.1"):
        assert LogConfig.from_props({"message.format.version": version}).message_format_version == version


def test_broker_defaults_follow_precedence_rules():
    assert log_config_from_broker({}) == LogConfig()
    props = {"log.retention.hours": "2", "log.retention.minutes": "30", "log.roll.hours": "1",
             "log.segment.bytes": "1048576", "log.flush.interval.messages": "10000",
             "log.flush.scheduler.interval.ms": "3000", "message.max.bytes": "2000000",
             "log.cleanup.policy": "compact", "num.partitions": "3"}
    config = log_config_from_broker(props)
    assert config.retention_ms == 30 * 60_000          # minutes beat hours
    assert config.segment_ms == 3_600_000
    assert config.segment_bytes == 1_048_576
    assert config.flush_messages == 10_000
    assert config.flush_ms == 3000                     # falls back to the scheduler interval
    assert config.max_message_bytes == 2_000_000
    assert config.cleanup_policy == ("compact",)
    assert log_config_from_broker({**props, "log.retention.ms": "-5"}).retention_ms == -1
    assert log_config_from_broker({**props, "log.roll.ms": "999"}).segment_ms == 999


def test_broker_errors_name_the_broker_key():
    with pytest.raises(ConfigError, match="configuration log.segment.bytes"):
        log_config_from_broker({"log.segment.bytes": "tiny"})
    with pytest.raises(ConfigError, match="configuration log.retention.hours"):
        log_config_from_broker({"log.retention.hours": "many"})


def test_topic_overrides_on_top_of_broker_defaults():
    broker = log_config_from_broker({"log.retention.hours": "1"})
    topic = LogConfig.from_props({"segment.bytes": "2048"}, broker)
    assert (topic.retention_ms, topic.segment_bytes) == (3_600_000, 2048)
    assert BROKER_SYNONYMS["retention.ms"] == "log.retention.ms"
    assert BROKER_SYNONYMS["max.message.bytes"] == "message.max.bytes"
