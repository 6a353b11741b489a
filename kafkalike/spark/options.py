"""The options of Spark's Kafka source and sink, read and checked as Spark reads them.

Spark code written for `format("kafka")` must run here with only the format name
changed, so the names, defaults, precedence and error messages are Spark's: option names
are case-insensitive, `kafka.`-prefixed options go to the client, exactly one of
assign/subscribe/subscribePattern, and a timestamp option wins over an offsets option.
Everything here runs on the driver, before any task: a wrong option fails the query
with a message that names it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Mapping

from kafkalike.client.config import CONSUMER_CONFIG
from kafkalike.common.config_def import ConfigError

EARLIEST = -2
LATEST = -1
STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")
OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
PARTITIONS_EXAMPLE = '{"topicA":[0,1],"topicB":[0,1]}'
DATA_LOSS_HINT = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you don't want your query to fail on such cases, set the source "
    'option "failOnDataLoss" to "false".')
# Spark's INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE, logged after a loss that was let pass.
DATA_LOSS_WARNING = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you want your streaming query to fail on such cases, set the source "
    'option "failOnDataLoss" to "true".')

TopicPartition = tuple[str, int]


class KafkaOptionError(ValueError):
    """A source or sink option Spark's Kafka connector would refuse (IllegalArgumentException)."""


@dataclass(frozen=True)
class OffsetLimit:
    """Where a range starts or ends: earliest, latest, per-partition offsets, or by timestamp.

    kind is "earliest", "latest", "offsets" (partition_offsets), "timestamps"
    (partition_timestamps) or "timestamp" (one timestamp for every partition).
    """
    kind: str
    partition_offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    partition_timestamps: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = -1


@dataclass(frozen=True)
class Subscription:
    """Which topic-partitions to read: one of Spark's three strategies."""
    strategy: str                       # "assign", "subscribe" or "subscribepattern"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def describe(self) -> str:
        if self.strategy == "assign":
            return f"Assign[{', '.join(f'{t}-{p}' for t, p in self.partitions)}]"
        if self.strategy == "subscribe":
            return f"Subscribe[{', '.join(self.topics)}]"
        return f"SubscribePattern[{self.pattern}]"


@dataclass(frozen=True)
class SourceOptions:
    subscription: Subscription
    client_config: Mapping[str, str]
    starting: OffsetLimit
    ending: OffsetLimit
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    by_timestamp_strategy: str = "error"     # startingOffsetsByTimestampStrategy: error | latest
    max_offsets_per_trigger: int | None = None
    poll_timeout_ms: int = 120_000
    isolation_level: str = "read_uncommitted"   # kafka.isolation.level: the driver plans ends with it too

    @property
    def bootstrap_servers(self) -> str:
        return self.client_config["bootstrap.servers"]


@dataclass(frozen=True)
class SinkOptions:
    topic: str | None
    client_config: Mapping[str, str]


def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    """Spark's CaseInsensitiveMap: the last spelling of a key wins."""
    return {str(k).lower(): str(v) for k, v in options.items()}


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """`kafka.`-prefixed options without the prefix. Names are lower-cased: PySpark hands
    a data source its options that way, and every Kafka setting is spelled lower case."""
    out = {}
    for key, value in options.items():
        if str(key).lower().startswith("kafka."):
            out[str(key)[len("kafka."):].lower()] = str(value)
    return out


def _check_client_options(kafka: Mapping[str, str], for_sink: bool) -> None:
    lowered = {k.lower() for k in kafka}
    if "bootstrap.servers" not in lowered:
        role = "producer" if for_sink else "consumer"
        raise KafkaOptionError(f"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka {role}")
    if for_sink:
        if "key.serializer" in lowered:
            raise KafkaOptionError("Kafka option 'key.serializer' is not supported as keys are serialized with "
                                   "ByteArraySerializer.")
        if "value.serializer" in lowered:
            raise KafkaOptionError("Kafka option 'value.serializer' is not supported as value are serialized with "
                                   "ByteArraySerializer.")
        return
    if "auto.offset.reset" in lowered:
        raise KafkaOptionError("Kafka option 'auto.offset.reset' is not supported.\nInstead set the source option "
                               "'startingoffsets' to 'earliest' or 'latest' to specify where to start. Structured "
                               "Streaming manages which offsets are consumed internally, rather than relying on the "
                               "kafkaConsumer. This will ensure that no data is missed when new topics/partitions are "
                               "dynamically subscribed. Note that 'startingoffsets' only applies when a new Streaming "
                               "query is started, and that resuming will always pick up from where the query left "
                               "off. See the docs for more details.")
    if "key.deserializer" in lowered:
        raise KafkaOptionError("Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
                               "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly "
                               "deserialize the keys.")
    if "value.deserializer" in lowered:
        raise KafkaOptionError("Kafka option 'value.deserializer' is not supported as values are deserialized as "
                               "byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly "
                               "deserialize the values.")
    for key in ("enable.auto.commit", "interceptor.classes"):
        if key in lowered:
            raise KafkaOptionError(f"Kafka option '{key}' is not supported")


def isolation_level(kafka: Mapping[str, str]) -> str:
    """kafka.isolation.level, checked by the consumer's own rule (Java's ConfigException
    text): the driver lists end offsets with it, as Spark's driver does through
    ListOffsetsOptions(isolationLevel), so a read_committed read plans to the last stable
    offset."""
    if "isolation.level" not in kafka:
        return "read_uncommitted"
    try:
        value = CONSUMER_CONFIG["isolation.level"].parse(kafka["isolation.level"])
    except ConfigError as exc:
        raise KafkaOptionError(f"{exc} (option 'kafka.isolation.level')") from None
    return str(value).strip().lower()


def _subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in STRATEGY_KEYS if k in opts]
    if not given:
        raise KafkaOptionError("One of the following options must be specified for Kafka source: "
                               "subscribe, subscribepattern, assign. See the docs for more details.")
    if len(given) > 1:
        raise KafkaOptionError("Only one of the following options can be specified for Kafka source: "
                               "subscribe, subscribepattern, assign. See the docs for more details.")
    key = given[0]
    value = opts[key].strip()
    if key == "assign":
        if not value.startswith("{"):
            raise KafkaOptionError("No topicpartitions to assign as specified value for option 'assign' is "
                                   f"'{opts[key]}'")
        partitions = parse_partitions(value)
        if not partitions:
            raise KafkaOptionError("No topicpartitions to assign as specified value for option 'assign' is "
                                   f"'{opts[key]}'")
        return Subscription("assign", partitions=tuple(partitions))
    if key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise KafkaOptionError("No topics to subscribe to as specified value for option 'subscribe' is "
                                   f"'{opts[key]}'")
        return Subscription("subscribe", topics=topics)
    if not value:
        raise KafkaOptionError("Pattern to subscribe is empty as specified value for option 'subscribePattern' "
                               f"is '{opts[key]}'")
    try:
        re.compile(value)
    except re.error as exc:
        raise KafkaOptionError(f"Invalid pattern for option 'subscribePattern': '{value}' ({exc})") from None
    return Subscription("subscribepattern", pattern=value)


def parse_partitions(text: str) -> list[TopicPartition]:
    """Spark's JsonUtils.partitions: {"topicA":[0,1],"topicB":[0,1]}."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError
        out = []
        for topic, parts in data.items():
            if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool)
                                                      for p in parts):
                raise ValueError
            out.extend((topic, p) for p in parts)
        return out
    except ValueError:
        raise KafkaOptionError(f"Expected e.g. {PARTITIONS_EXAMPLE}, got {text}") from None


def parse_partition_numbers(text: str, option: str, example: str = OFFSETS_EXAMPLE) -> dict[TopicPartition, int]:
    """Spark's JsonUtils.partitionOffsets / partitionTimestamps: {"topicA":{"0":23}}."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError
        out = {}
        for topic, parts in data.items():
            if not isinstance(parts, dict):
                raise ValueError
            for p, value in parts.items():
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError
                out[(topic, int(p))] = value
        return out
    except ValueError:
        raise KafkaOptionError(f"Expected e.g. {example}, got {text} (option '{option}')") from None


def offset_limit(opts: Mapping[str, str], timestamp_key: str, by_timestamp_key: str, offsets_key: str,
                 default: str) -> OffsetLimit:
    """Spark's getKafkaOffsetRangeLimit: a global timestamp beats per-partition timestamps,
    which beat offsets; without any, the default."""
    if timestamp_key in opts:
        return OffsetLimit("timestamp", timestamp=_long(opts, timestamp_key))
    if by_timestamp_key in opts:
        return OffsetLimit("timestamps", partition_timestamps=parse_partition_numbers(
            opts[by_timestamp_key], by_timestamp_key, '{"topicA":{"0":1000,"1":1000}}'))
    if offsets_key in opts:
        value = opts[offsets_key].strip()
        if value.lower() == "earliest":
            return OffsetLimit("earliest")
        if value.lower() == "latest":
            return OffsetLimit("latest")
        return OffsetLimit("offsets", partition_offsets=parse_partition_numbers(value, offsets_key))
    return OffsetLimit(default)


def _long(opts: Mapping[str, str], key: str) -> int:
    try:
        return int(opts[key].strip())
    except ValueError:
        raise KafkaOptionError(f"Option '{key}' must be a long, got '{opts[key]}'") from None


def _positive(opts: Mapping[str, str], key: str, name: str) -> int | None:
    if key not in opts:
        return None
    try:
        value = int(opts[key].strip())
    except ValueError:
        raise KafkaOptionError(f"Invalid value '{opts[key]}' for option '{name}', must be a positive integer") \
            from None
    if value <= 0:
        raise KafkaOptionError(f"Invalid value '{opts[key]}' for option '{name}', must be a positive integer")
    return value


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in opts:
        return default
    value = opts[key].strip().lower()
    if value not in ("true", "false"):
        raise KafkaOptionError(f"Option '{key}' must be true or false, got '{opts[key]}'")
    return value == "true"


def _check_range(starting: OffsetLimit, ending: OffsetLimit) -> None:
    """Spark's checkOffsetLimitValidity: per-partition starts and ends, given as offsets or as
    timestamps, must name the same partitions and no start may pass its end."""
    if starting.kind == ending.kind == "offsets":
        _check_bounds(starting.partition_offsets, ending.partition_offsets, "offset",
                      "startingOffsets", "endingOffsets")
    elif starting.kind == ending.kind == "timestamps":
        _check_bounds(starting.partition_timestamps, ending.partition_timestamps, "timestamp",
                      "startingOffsetsByTimestamp", "endingOffsetsByTimestamp")


def _check_bounds(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int], what: str,
                  start_option: str, end_option: str) -> None:
    if set(starts) != set(ends):
        raise KafkaOptionError(
            f"The specified topic partitions in {start_option} and {end_option} don't match. "
            f"{start_option}: {sorted(starts)}, {end_option}: {sorted(ends)}")
    for tp, start in starts.items():
        end = ends[tp]
        if start >= 0 and end >= 0 and start > end:
            raise KafkaOptionError(f"The start {what} {start} for topic partition {tp[0]}-{tp[1]} is greater "
                                   f"than the end {what} {end} ({start_option}, {end_option})")


def source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Read and check a Kafka source's options as Spark's KafkaSourceProvider does."""
    opts = lower_keys(options)
    kafka = client_config(options)
    subscription = _subscription(opts)
    if streaming:
        if "endingoffsets" in opts:
            raise KafkaOptionError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts or "endingtimestamp" in opts:
            raise KafkaOptionError("ending timestamp not valid in streaming queries")
        starting = offset_limit(opts, "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets",
                                "latest")
        ending = OffsetLimit("latest")
    else:
        starting = offset_limit(opts, "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets",
                                "earliest")
        ending = offset_limit(opts, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", "latest")
        if starting.kind == "latest":
            raise KafkaOptionError("starting offset can't be latest for batch queries on Kafka")
        for tp, off in starting.partition_offsets.items():
            if off == LATEST:
                raise KafkaOptionError(f"startingOffsets for {tp[0]}-{tp[1]} can't be latest for batch queries "
                                       "on Kafka")
        if ending.kind == "earliest":
            raise KafkaOptionError("ending offset can't be earliest for batch queries on Kafka")
        for tp, off in ending.partition_offsets.items():
            if off == EARLIEST:
                raise KafkaOptionError(f"ending offset for {tp[0]}-{tp[1]} can't be earliest for batch queries "
                                       "on Kafka")
        _check_range(starting, ending)
    _check_client_options(kafka, for_sink=False)
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise KafkaOptionError(f"Invalid value '{opts['startingoffsetsbytimestampstrategy']}' for option "
                               "'startingOffsetsByTimestampStrategy': expected 'error' or 'latest'")
    max_per_trigger = _positive(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_partitions = _positive(opts, "minpartitions", "minPartitions")
    max_records = _positive(opts, "maxrecordsperpartition", "maxRecordsPerPartition")
    poll_timeout = _positive(opts, "kafkaconsumer.polltimeoutms", "kafkaConsumer.pollTimeoutMs") or 120_000
    return SourceOptions(subscription=subscription, client_config=kafka, starting=starting, ending=ending,
                         fail_on_data_loss=_bool(opts, "failondataloss", True),
                         min_partitions=min_partitions, max_records_per_partition=max_records,
                         include_headers=_bool(opts, "includeheaders", False),
                         by_timestamp_strategy=strategy, max_offsets_per_trigger=max_per_trigger,
                         poll_timeout_ms=poll_timeout, isolation_level=isolation_level(kafka))


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = lower_keys(options)
    kafka = client_config(options)
    _check_client_options(kafka, for_sink=True)
    topic = opts.get("topic")
    return SinkOptions(topic=topic.strip() if topic is not None else None, client_config=kafka)
