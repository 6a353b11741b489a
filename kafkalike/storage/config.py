"""Topic-level log configuration: Kafka 2.8's keys, types, defaults and validators.

Topic configs arrive as strings (from ZooKeeper's /config/topics JSON, from
kafka-configs.sh, from CreateTopics), so parsing and validation live with the
definitions. Error messages follow Kafka's ConfigException wording and always name the
offending key, since that is what an operator has to fix.

The broker builds its defaults from server.properties with `log_config_from_broker`,
which applies Kafka's precedence rules (log.retention.ms over .minutes over .hours, ...).
"""
from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kafkalike.common.versions import API_VERSIONS, LATEST_API_VERSION, SHORT_API_VERSIONS
from kafkalike.storage.errors import ConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
# LegacyRecord.RECORD_OVERHEAD_V0: the smallest segment.bytes Kafka accepts.
MIN_SEGMENT_BYTES = 14

COMPACT = "compact"
DELETE = "delete"
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

LATEST_MESSAGE_FORMAT_VERSION = LATEST_API_VERSION

_THROTTLED_REPLICA = re.compile(r"^\s*\d+\s*:\s*\d+\s*$")


def _invalid(key: str, value: Any, message: str | None = None) -> ConfigError:
    text = f"Invalid value {value} for configuration {key}"
    return ConfigError(text + (f": {message}" if message else ""))


# ---------------------------------------------------------------- type parsers

def _parse_int(key: str, value: Any, bits: int, type_name: str) -> int:
    if isinstance(value, bool):
        raise _invalid(key, value, f"Expected value to be a {bits}-bit integer, but it was a Boolean")
    if isinstance(value, int):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = int(value.strip())
        except ValueError:
            raise _invalid(key, value, f"Not a number of type {type_name}") from None
    else:
        raise _invalid(key, value, f"Expected value to be a {bits}-bit integer, but it was a "
                       f"{type(value).__name__}")
    limit = 2 ** (bits - 1)
    if not -limit <= parsed < limit:
        raise _invalid(key, value, f"Not a number of type {type_name}")
    return parsed


def _parse_double(key: str, value: Any) -> float:
    if isinstance(value, bool):
        raise _invalid(key, value, "Expected value to be a double, but it was a Boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise _invalid(key, value, "Not a number of type DOUBLE") from None
    raise _invalid(key, value, f"Expected value to be a double, but it was a {type(value).__name__}")


def _parse_boolean(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise _invalid(key, value, "Expected value to be either true or false")
    raise _invalid(key, value, "Expected value to be either true or false")


def _parse_string(key: str, value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    raise _invalid(key, value, f"Expected value to be a string, but it was a {type(value).__name__}")


def _parse_list(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        text = value.strip()
        return tuple(part.strip() for part in text.split(",")) if text else ()
    if isinstance(value, (list, tuple)):
        return tuple(_parse_string(key, item) for item in value)
    raise _invalid(key, value, "Expected a comma separated list.")


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "int": lambda k, v: _parse_int(k, v, 32, "INT"),
    "long": lambda k, v: _parse_int(k, v, 64, "LONG"),
    "double": _parse_double,
    "boolean": _parse_boolean,
    "string": _parse_string,
    "list": _parse_list,
}


# ---------------------------------------------------------------- validators
# Each returns None when fine, or the message for ConfigException.

def _at_least(minimum: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= minimum else f"Value must be at least {minimum}"


def _between(low: float, high: float) -> Callable[[Any], str | None]:
    def check(v: float) -> str | None:
        if v < low:
            return f"Value must be at least {low}"
        if v > high:
            return f"Value must be no more than {high}"
        return None
    return check


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in choices else f"String must be one of: {', '.join(choices)}"


def _list_of(*choices: str) -> Callable[[Any], str | None]:
    def check(values: tuple[str, ...]) -> str | None:
        for item in values:
            if item not in choices:
                return f"String must be one of: {', '.join(choices)}"
        return None
    return check


def _message_format_version(value: str) -> str | None:
    if value in API_VERSIONS or value in SHORT_API_VERSIONS:
        return None
    parts = value.split(".")
    keep = 3 if parts[0] == "0" else 2
    if ".".join(parts[:keep]) in SHORT_API_VERSIONS and all(p.isdigit() for p in parts):
        return None  # "2.8.1" means format 2.8, as Kafka's ApiVersion.apply reads it
    return f"Version `{value}` is not a valid version"


def _throttled_replicas(values: tuple[str, ...]) -> str | None:
    if values == ("*",) or all(_THROTTLED_REPLICA.match(v) for v in values):
        return None
    return ("must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    attr: str
    type: str
    default: Any
    validator: Callable[[Any], str | None] | None
    server_key: str

    def parse(self, value: Any, reported_name: str | None = None) -> Any:
        """Parse and validate one value; errors name `reported_name` (e.g. the broker key)."""
        name = reported_name or self.name
        parsed = _PARSERS[self.type](name, value)
        if self.validator is not None:
            problem = self.validator(parsed)
            if problem:
                raise _invalid(name, value, problem)
        return parsed


CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("segment.bytes", "segment_bytes", "int", 1024 * 1024 * 1024,
              _at_least(MIN_SEGMENT_BYTES), "log.segment.bytes"),
    ConfigKey("segment.ms", "segment_ms", "long", 7 * 24 * 3600 * 1000, _at_least(1), "log.roll.ms"),
    ConfigKey("segment.jitter.ms", "segment_jitter_ms", "long", 0, _at_least(0), "log.roll.jitter.ms"),
    ConfigKey("segment.index.bytes", "segment_index_bytes", "int", 10 * 1024 * 1024, _at_least(0),
              "log.index.size.max.bytes"),
    ConfigKey("flush.messages", "flush_messages", "long", LONG_MAX, _at_least(0),
              "log.flush.interval.messages"),
    ConfigKey("flush.ms", "flush_ms", "long", LONG_MAX, _at_least(0), "log.flush.interval.ms"),
    ConfigKey("retention.bytes", "retention_bytes", "long", -1, None, "log.retention.bytes"),
    ConfigKey("retention.ms", "retention_ms", "long", 7 * 24 * 3600 * 1000, _at_least(-1),
              "log.retention.ms"),
    ConfigKey("max.message.bytes", "max_message_bytes", "int", 1024 * 1024 + 12, _at_least(0),
              "message.max.bytes"),
    ConfigKey("index.interval.bytes", "index_interval_bytes", "int", 4096, _at_least(0),
              "log.index.interval.bytes"),
    ConfigKey("delete.retention.ms", "delete_retention_ms", "long", 24 * 3600 * 1000, _at_least(0),
              "log.cleaner.delete.retention.ms"),
    ConfigKey("min.compaction.lag.ms", "min_compaction_lag_ms", "long", 0, _at_least(0),
              "log.cleaner.min.compaction.lag.ms"),
    ConfigKey("max.compaction.lag.ms", "max_compaction_lag_ms", "long", LONG_MAX, _at_least(1),
              "log.cleaner.max.compaction.lag.ms"),
    ConfigKey("file.delete.delay.ms", "file_delete_delay_ms", "long", 60000, _at_least(0),
              "log.segment.delete.delay.ms"),
    ConfigKey("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", "double", 0.5,
              _between(0, 1), "log.cleaner.min.cleanable.ratio"),
    ConfigKey("cleanup.policy", "cleanup_policy", "list", (DELETE,), _list_of(COMPACT, DELETE),
              "log.cleanup.policy"),
    ConfigKey("unclean.leader.election.enable", "unclean_leader_election_enable", "boolean", False,
              None, "unclean.leader.election.enable"),
    ConfigKey("min.insync.replicas", "min_insync_replicas", "int", 1, _at_least(1),
              "min.insync.replicas"),
    ConfigKey("compression.type", "compression_type", "string", "producer",
              _one_of(*COMPRESSION_TYPES), "compression.type"),
    ConfigKey("preallocate", "preallocate", "boolean", False, None, "log.preallocate"),
    ConfigKey("message.format.version", "message_format_version", "string",
              LATEST_MESSAGE_FORMAT_VERSION, _message_format_version, "log.message.format.version"),
    ConfigKey("message.timestamp.type", "message_timestamp_type", "string", CREATE_TIME,
              _one_of(CREATE_TIME, LOG_APPEND_TIME), "log.message.timestamp.type"),
    ConfigKey("message.timestamp.difference.max.ms", "message_timestamp_difference_max_ms", "long",
              LONG_MAX, _at_least(0), "log.message.timestamp.difference.max.ms"),
    ConfigKey("leader.replication.throttled.replicas", "leader_replication_throttled_replicas",
              "list", (), _throttled_replicas, "leader.replication.throttled.replicas"),
    ConfigKey("follower.replication.throttled.replicas", "follower_replication_throttled_replicas",
              "list", (), _throttled_replicas, "follower.replication.throttled.replicas"),
    ConfigKey("message.downconversion.enable", "message_downconversion_enable", "boolean", True,
              None, "log.message.downconversion.enable"),
)
KEYS_BY_NAME: dict[str, ConfigKey] = {k.name: k for k in CONFIG_KEYS}


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
            if key.type == "boolean":
                out[key.name] = "true" if value else "false"
            elif key.type == "list":
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
            hours = _parse_int(hours_key, props[hours_key], 32, "INT")
            take(topic_key, hours * 3600 * 1000, hours_key)

    found = _first_present(props, "log.retention.ms")
    if found:
        retention = _parse_int("log.retention.ms", found[1], 64, "LONG")
        reported = "log.retention.ms"
    elif _first_present(props, "log.retention.minutes"):
        retention = _parse_int("log.retention.minutes", props["log.retention.minutes"], 32, "INT") * 60000
        reported = "log.retention.minutes"
    elif _first_present(props, "log.retention.hours"):
        retention = _parse_int("log.retention.hours", props["log.retention.hours"], 32, "INT") * 3600000
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
        found = _first_present(props, key.server_key)
        if found:
            take(key.name, found[1], key.server_key)
    config = LogConfig(**values)
    config.validate_values()
    return config


# Topic key -> the broker key that supplies its default (Kafka's TopicConfigSynonyms).
BROKER_SYNONYMS: dict[str, str] = {k.name: k.server_key for k in CONFIG_KEYS}
