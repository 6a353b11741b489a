"""Topic-level log configuration: Kafka 2.8's keys, types, defaults and validators.

Topic configs arrive as strings (from ZooKeeper's /config/topics JSON, from
kafka-configs.sh, from CreateTopics), so parsing and validation live with the
definitions, on the ConfigDef engine all config tables share
(kafkalike.common.config_def). Error messages follow Kafka's ConfigException wording and
always name the offending key, since that is what an operator has to fix.

The broker builds its defaults from server.properties with `log_config_from_broker`,
which applies Kafka's precedence rules (log.retention.ms over .minutes over .hours, ...).
"""
from __future__ import annotations

import dataclasses
import functools
import random
import re
from dataclasses import dataclass
from typing import Any, Mapping

from kafkalike.common.config_def import (
    INT_MAX,
    LONG_MAX,
    ConfigKey,
    ConfigType,
    Validator,
    api_version,
    at_least,
    between,
    each_one_of,
    errors_as,
    invalid,
    one_of,
    parse_value,
)
from kafkalike.common.versions import LATEST_API_VERSION, record_version as _record_version
from kafkalike.storage.errors import ConfigError

__all__ = [
    "BROKER_SYNONYMS", "COMPACT", "COMPRESSION_TYPES", "CONFIG_KEYS", "CREATE_TIME", "DELETE", "INT_MAX",
    "KEYS_BY_NAME", "LATEST_MESSAGE_FORMAT_VERSION", "LOG_APPEND_TIME", "LONG_MAX", "MIN_SEGMENT_BYTES",
    "ConfigKey", "LogConfig", "log_config_from_broker",
]

# LegacyRecord.RECORD_OVERHEAD_V0: the smallest segment.bytes Kafka accepts.
MIN_SEGMENT_BYTES = 14

COMPACT = "compact"
DELETE = "delete"
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

LATEST_MESSAGE_FORMAT_VERSION = LATEST_API_VERSION

_THROTTLED_REPLICA = re.compile(r"^\s*\d+\s*:\s*\d+\s*$")


def _throttled_replicas(name: str, values: tuple[str, ...]) -> None:
    """ThrottledReplicaListValidator: '*' or partition:broker pairs."""
    if values == ("*",) or all(_THROTTLED_REPLICA.match(v) for v in values):
        return
    raise invalid(name, values, "must be the literal '*' or a list of replicas in the following format: "
                  "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _key(name: str, ctype: ConfigType, default: Any, validator: Validator | None, server_key: str) -> ConfigKey:
    return ConfigKey(name, ctype, default, validator=validator, synonym=server_key)


I, L, D, B, S, LS = (ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE, ConfigType.BOOLEAN,
                     ConfigType.STRING, ConfigType.LIST)

CONFIG_KEYS: tuple[ConfigKey, ...] = (
    _key("segment.bytes", I, 1024 * 1024 * 1024, at_least(MIN_SEGMENT_BYTES), "log.segment.bytes"),
    _key("segment.ms", L, 7 * 24 * 3600 * 1000, at_least(1), "log.roll.ms"),
    _key("segment.jitter.ms", L, 0, at_least(0), "log.roll.jitter.ms"),
    _key("segment.index.bytes", I, 10 * 1024 * 1024, at_least(0), "log.index.size.max.bytes"),
    _key("flush.messages", L, LONG_MAX, at_least(0), "log.flush.interval.messages"),
    _key("flush.ms", L, LONG_MAX, at_least(0), "log.flush.interval.ms"),
    _key("retention.bytes", L, -1, None, "log.retention.bytes"),
    _key("retention.ms", L, 7 * 24 * 3600 * 1000, at_least(-1), "log.retention.ms"),
    _key("max.message.bytes", I, 1024 * 1024 + 12, at_least(0), "message.max.bytes"),
    _key("index.interval.bytes", I, 4096, at_least(0), "log.index.interval.bytes"),
    _key("delete.retention.ms", L, 24 * 3600 * 1000, at_least(0), "log.cleaner.delete.retention.ms"),
    _key("min.compaction.lag.ms", L, 0, at_least(0), "log.cleaner.min.compaction.lag.ms"),
    _key("max.compaction.lag.ms", L, LONG_MAX, at_least(1), "log.cleaner.max.compaction.lag.ms"),
    _key("file.delete.delay.ms", L, 60000, at_least(0), "log.segment.delete.delay.ms"),
    _key("min.cleanable.dirty.ratio", D, 0.5, between(0, 1), "log.cleaner.min.cleanable.ratio"),
    _key("cleanup.policy", LS, (DELETE,), each_one_of(COMPACT, DELETE), "log.cleanup.policy"),
    _key("unclean.leader.election.enable", B, False, None, "unclean.leader.election.enable"),
    _key("min.insync.replicas", I, 1, at_least(1), "min.insync.replicas"),
    _key("compression.type", S, "producer", one_of(*COMPRESSION_TYPES), "compression.type"),
    _key("preallocate", B, False, None, "log.preallocate"),
    _key("message.format.version", S, LATEST_MESSAGE_FORMAT_VERSION, api_version, "log.message.format.version"),
    _key("message.timestamp.type", S, CREATE_TIME, one_of(CREATE_TIME, LOG_APPEND_TIME),
         "log.message.timestamp.type"),
    _key("message.timestamp.difference.max.ms", L, LONG_MAX, at_least(0),
         "log.message.timestamp.difference.max.ms"),
    _key("leader.replication.throttled.replicas", LS, (), _throttled_replicas,
         "leader.replication.throttled.replicas"),
    _key("follower.replication.throttled.replicas", LS, (), _throttled_replicas,
         "follower.replication.throttled.replicas"),
    _key("message.downconversion.enable", B, True, None, "log.message.downconversion.enable"),
)
KEYS_BY_NAME: dict[str, ConfigKey] = {k.name: k for k in CONFIG_KEYS}


_record_magic = functools.lru_cache(maxsize=64)(_record_version)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """One topic's effective log settings; attributes mirror the dotted Kafka keys."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * 3600 * 1000
    max_message_bytes: int = 1024 * 1024 + 12
    index_interval_bytes: int = 4096
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    min_cleanable_dirty_ratio: float = 0.5
    cleanup_policy: tuple[str, ...] = (DELETE,)
    unclean_leader_election_enable: bool = False
    min_insync_replicas: int = 1
    compression_type: str = "producer"
    preallocate: bool = False
    message_format_version: str = LATEST_MESSAGE_FORMAT_VERSION
    message_timestamp_type: str = CREATE_TIME
    message_timestamp_difference_max_ms: int = LONG_MAX
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    message_downconversion_enable: bool = True
    # Keys set explicitly for the topic (DescribeConfigs reports them as TOPIC_CONFIG).
    overridden: frozenset[str] = frozenset()

    @classmethod
    def from_props(cls, props: Mapping[str, Any], defaults: "LogConfig | None" = None, *,
                   strict: bool = True) -> "LogConfig":
        """Topic overrides on top of `defaults` (the broker's), as Kafka's LogConfig.fromProps.

        With strict, an unknown key is an error ("Unknown topic config name"), which is
        what CreateTopics and AlterConfigs need; loading from ZooKeeper can pass False.
        """
        base = defaults or cls()
        changes: dict[str, Any] = {}
        for name, value in props.items():
            key = KEYS_BY_NAME.get(name)
            if key is None:
                if strict:
                    raise ConfigError(f"Unknown topic config name: {name}")
                continue
            with errors_as(ConfigError):
                changes[key.attr] = key.parse(value)
        merged = dataclasses.replace(base, **changes,
                                     overridden=base.overridden | frozenset(
                                         n for n in props if n in KEYS_BY_NAME))
        merged.validate_values()
        return merged

    def validate_values(self) -> None:
        """Cross-key checks Kafka makes after parsing (LogConfig.validateValues)."""
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ConfigError(
                f"conflict topic config setting min.compaction.lag.ms ({self.min_compaction_lag_ms})"
                f" > max.compaction.lag.ms ({self.max_compaction_lag_ms})")

    def to_props(self) -> dict[str, str]:
        """Every key with its value as Kafka prints it (DescribeConfigs, kafka-configs.sh)."""
        out: dict[str, str] = {}
        for key in CONFIG_KEYS:
            value = getattr(self, key.attr)
            if key.type is ConfigType.BOOLEAN:
                out[key.name] = "true" if value else "false"
            elif key.type is ConfigType.LIST:
                out[key.name] = ",".join(value)
            else:
                out[key.name] = str(value)
        return out

    @property
    def compact(self) -> bool:
        return COMPACT in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return DELETE in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def record_version(self) -> int:
        """The magic message.format.version writes: 2 from 0.11 on, 1 for 0.10, 0 before."""
        return _record_magic(self.message_format_version)

    def random_segment_jitter(self, rng: random.Random | None = None) -> int:
        """Per-segment roll jitter in [0, min(segment.jitter.ms, segment.ms)), as Kafka draws it."""
        if self.segment_jitter_ms == 0:
            return 0
        return (rng or random).randrange(0, 2**31) % min(self.segment_jitter_ms, self.segment_ms)


def _first_present(props: Mapping[str, Any], *names: str) -> tuple[str, Any] | None:
    for name in names:
        if name in props and props[name] is not None and str(props[name]).strip() != "":
            return name, props[name]
    return None


def log_config_from_broker(props: Mapping[str, Any]) -> LogConfig:
    """The default LogConfig a broker derives from its server.properties.

    Follows KafkaConfig: log.roll.ms beats log.roll.hours, log.retention.ms beats
    .minutes beats .hours (a negative result means -1, keep forever), and
    log.flush.interval.ms falls back to log.flush.scheduler.interval.ms.
    """
    with errors_as(ConfigError):
        config = LogConfig(**_broker_values(props))
    config.validate_values()
    return config


def _broker_values(props: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}

    def take(topic_key: str, value: Any, broker_key: str) -> None:
        key = KEYS_BY_NAME[topic_key]
        values[key.attr] = key.parse(value, reported_name=broker_key)

    for topic_key, ms_key, hours_key in (("segment.ms", "log.roll.ms", "log.roll.hours"),
                                         ("segment.jitter.ms", "log.roll.jitter.ms",
                                          "log.roll.jitter.hours")):
        found = _first_present(props, ms_key)
        if found:
            take(topic_key, found[1], ms_key)
        elif _first_present(props, hours_key):
            hours = parse_value(hours_key, ConfigType.INT, props[hours_key])
            take(topic_key, hours * 3600 * 1000, hours_key)

    found = _first_present(props, "log.retention.ms")
    if found:
        retention = parse_value("log.retention.ms", ConfigType.LONG, found[1])
        reported = "log.retention.ms"
    elif _first_present(props, "log.retention.minutes"):
        retention = parse_value("log.retention.minutes", ConfigType.INT, props["log.retention.minutes"]) * 60000
        reported = "log.retention.minutes"
    elif _first_present(props, "log.retention.hours"):
        retention = parse_value("log.retention.hours", ConfigType.INT, props["log.retention.hours"]) * 3600000
        reported = "log.retention.hours"
    else:
        retention = None
        reported = ""
    if retention is not None:
        take("retention.ms", -1 if retention < 0 else retention, reported)

    found = _first_present(props, "log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    if found:
        take("flush.ms", found[1], found[0])

    special = {"segment.ms", "segment.jitter.ms", "retention.ms", "flush.ms"}
    for key in CONFIG_KEYS:
        if key.name in special:
            continue
        found = _first_present(props, key.synonym)
        if found:
            take(key.name, found[1], key.synonym)
    return values


# Topic key -> the broker key that supplies its default (Kafka's TopicConfigSynonyms).
BROKER_SYNONYMS: dict[str, str] = {k.name: k.synonym for k in CONFIG_KEYS}
