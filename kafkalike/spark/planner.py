"""The driver's half of a Kafka read: which partitions, which offsets, how many tasks.

Planning asks the cluster for metadata and ListOffsets and nothing else (no group, no
records), and yields plain OffsetRange values. Each range is one Spark task reading
[start, end) of one topic-partition, so a failed task re-runs the same range and two
tasks never read the same record.
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from kafkalike.client.admin import AdminClient, OffsetSpec
from kafkalike.spark.options import (EARLIEST, LATEST, KafkaOptionError, OffsetLimit, SourceOptions, Subscription,
                                     TopicPartition)

log = logging.getLogger("kafkalike.spark")

# The keys of Kafka 2.8's AdminClientConfig, besides the ssl.* and sasl.* ones (SslConfigs,
# SaslConfigs, and kafkalike's sasl.username / sasl.password), which all go too. Spark's
# driver hands every kafka.* option to Admin.create, whose ConfigDef keeps these and
# ignores the rest; so the driver's admin client gets these and not the consumer-only
# settings (fetch sizes, isolation.level, group.id, ...). isolation.level is applied to
# each ListOffsets call instead (list_offsets below).
ADMIN_KEYS = frozenset({
    "bootstrap.servers", "client.dns.lookup", "client.id", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
    "retry.backoff.ms", "retries", "request.timeout.ms", "default.api.timeout.ms", "metadata.max.age.ms",
    "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms", "connections.max.idle.ms",
    "send.buffer.bytes", "receive.buffer.bytes", "metric.reporters", "metrics.num.samples",
    "metrics.sample.window.ms", "metrics.recording.level", "security.protocol", "security.providers"})
ADMIN_PREFIXES = ("ssl.", "sasl.")


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, end) of one topic-partition: the unit of work of one task."""
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)


def admin_config(client_config: Mapping[str, str]) -> dict[str, str]:
    """The settings among the source's kafka.* options that an admin client knows:
    connection, timeouts and every security setting."""
    return {k: v for k, v in client_config.items()
            if k.lower() in ADMIN_KEYS or k.lower().startswith(ADMIN_PREFIXES)}


def admin_client(client_config: Mapping[str, str]) -> AdminClient:
    """The driver's admin client, from the source's kafka.* options (admin_config)."""
    return AdminClient(admin_config(client_config))


def resolve_partitions(admin: AdminClient, subscription: Subscription) -> list[TopicPartition]:
    """The topic-partitions a subscription names now, sorted.

    Subscribed topics that do not exist read as empty (Spark's consumer finds no
    partitions for them); assigned partitions must exist, since the user named them.
    """
    if subscription.strategy == "assign":
        topics = sorted({t for t, _ in subscription.partitions})
        known = _partitions_of(admin, topics)
        missing = [tp for tp in subscription.partitions if tp not in known]
        if missing:
            raise KafkaOptionError(f"Option 'assign' names partitions that do not exist: "
                                   f"{', '.join(f'{t}-{p}' for t, p in missing)}")
        return sorted(set(subscription.partitions))
    if subscription.strategy == "subscribe":
        topics = list(subscription.topics)
    else:
        pattern = re.compile(subscription.pattern)
        topics = [t.name for t in admin.list_topics() if pattern.fullmatch(t.name)]
    return sorted(_partitions_of(admin, topics))


def _partitions_of(admin: AdminClient, topics: Sequence[str]) -> set[TopicPartition]:
    if not topics:
        return set()
    existing = {t.name for t in admin.list_topics(include_internal=True)}
    wanted = [t for t in topics if t in existing]
    if not wanted:
        return set()
    described = admin.describe_topics(wanted)
    return {(name, p.partition) for name, d in described.items() for p in d.partitions}


def list_offsets(admin: AdminClient, specs: Mapping[TopicPartition, OffsetSpec],
                 isolation_level: str = "read_uncommitted") -> dict[TopicPartition, int]:
    """Offsets for `specs`; "latest" is the last stable offset with read_committed, as the
    tasks' consumers see the end of a partition, and the high watermark otherwise."""
    if not specs:
        return {}
    return {tp: listed.offset for tp, listed in admin.list_offsets(specs, isolation_level=isolation_level).items()}


def resolve_limit(admin: AdminClient, partitions: Sequence[TopicPartition], limit: OffsetLimit, *,
                  is_start: bool, option: str, by_timestamp_strategy: str = "error",
                  isolation_level: str = "read_uncommitted") -> dict[TopicPartition, int]:
    """Concrete offsets for `partitions` from a starting or ending limit."""
    def listed(specs: Mapping[TopicPartition, OffsetSpec]) -> dict[TopicPartition, int]:
        return list_offsets(admin, specs, isolation_level)

    if limit.kind in ("earliest", "latest"):
        spec = OffsetSpec.earliest() if limit.kind == "earliest" else OffsetSpec.latest()
        return listed({tp: spec for tp in partitions})
    if limit.kind == "offsets":
        given = dict(limit.partition_offsets)
        if set(given) != set(partitions):
            raise KafkaOptionError(
                f"If {option} contains specific offsets, you must specify all TopicPartitions.\n"
                f"Use -1 for latest, -2 for earliest.\n"
                f"Specified: {_names(given)} Assigned: {_names(partitions)}")
        special = {tp: OffsetSpec.earliest() if off == EARLIEST else OffsetSpec.latest()
                   for tp, off in given.items() if off in (EARLIEST, LATEST)}
        resolved = listed(special)
        return {tp: resolved.get(tp, off) for tp, off in given.items()}
    if limit.kind == "timestamp":
        stamps = {tp: limit.timestamp for tp in partitions}
    else:
        stamps = dict(limit.partition_timestamps)
        if set(stamps) != set(partitions):
            raise KafkaOptionError(
                f"If {option} contains specific timestamps, you must specify all TopicPartitions.\n"
                f"Specified: {_names(stamps)} Assigned: {_names(partitions)}")
    found = listed({tp: OffsetSpec.for_timestamp(ts) for tp, ts in stamps.items()})
    unmatched = [tp for tp, off in found.items() if off < 0]
    if unmatched and is_start and by_timestamp_strategy == "error":
        tp = unmatched[0]
        raise KafkaOptionError(f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and timestamp "
                               f"{stamps[tp]} ({option}). Set startingOffsetsByTimestampStrategy to 'latest' to "
                               "start such partitions at their latest offset.")
    # No record at or after the timestamp: the range runs (or starts) at the end of the log.
    latest = listed({tp: OffsetSpec.latest() for tp in unmatched})
    return {tp: latest.get(tp, off) for tp, off in found.items()}


def _names(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "]"


def batch_ranges(options: SourceOptions) -> list[OffsetRange]:
    """Plan a batch read: resolve partitions and both ends, then split into task ranges."""
    with admin_client(options.client_config) as admin:
        partitions = resolve_partitions(admin, options.subscription)
        starts = resolve_limit(admin, partitions, options.starting, is_start=True, option="startingOffsets",
                               by_timestamp_strategy=options.by_timestamp_strategy,
                               isolation_level=options.isolation_level)
        ends = resolve_limit(admin, partitions, options.ending, is_start=False, option="endingOffsets",
                             isolation_level=options.isolation_level)
    ranges = []
    for tp in partitions:
        start, end = starts[tp], ends[tp]
        if start > end:
            raise KafkaOptionError(f"The start offset {start} for topic partition {tp[0]}-{tp[1]} is greater than "
                                   f"the end offset {end} (startingOffsets, endingOffsets)")
        ranges.append(OffsetRange(tp[0], tp[1], start, end))
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)


def split_ranges(ranges: Sequence[OffsetRange], min_partitions: int | None,
                 max_records: int | None) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator.getRanges: empty ranges dropped; with
    maxRecordsPerPartition each range cut into ceil(size / max) pieces; then, while there
    are fewer ranges than minPartitions, each range cut into round(size / total *
    minPartitions) pieces (at least one), where the ranges that would get one piece keep
    it and the others share what is left of minPartitions in proportion to their size."""
    parts = [r for r in ranges if r.size > 0]
    if max_records:
        parts = [piece for r in parts for piece in _divide(r, -(-r.size // max_records))]
    if min_partitions and len(parts) < min_partitions:
        total = sum(r.size for r in parts)
        single = [r for r in parts if _part_count(r.size, total, min_partitions) == 1]
        # Spark keeps a topic-partition whole if any of its ranges would get one piece.
        single_tps = {r.tp for r in single}
        split_total = total - sum(r.size for r in single)
        split_min = max(min_partitions - len(single), 1)
        parts = [piece for r in parts
                 for piece in _divide(r, 1 if r.tp in single_tps else _part_count(r.size, split_total, split_min))]
    return parts


def _part_count(size: int, total: int, min_partitions: int) -> int:
    # Scala's math.round: half up.
    return max(math.floor(size / total * min_partitions + 0.5), 1)


def _divide(r: OffsetRange, pieces: int) -> list[OffsetRange]:
    """Spark's getDividedPartition: each piece takes remaining // pieces left, so the
    round-off goes to the last pieces; empty pieces are dropped."""
    out, start, remaining = [], r.start, r.size
    for i in range(pieces):
        size = remaining // (pieces - i)
        remaining -= size
        end = min(start + size, r.end)
        if end > start:
            out.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return out
