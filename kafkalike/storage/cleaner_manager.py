"""Which compacted log to clean next, and how far it was cleaned: Kafka 2.8's LogCleanerManager.

The cleaner remembers, per partition, the first offset it has not cleaned yet (the
"first dirty offset") in `cleaner-offset-checkpoint` at the root of each log dir, in
the same `0` / count / `topic partition offset` format as the other root checkpoints.
Everything before it was cleaned against a map of its keys; everything from it on is
the dirty section.

A log is worth cleaning when its dirty section is a large enough share of what can
be cleaned: dirty bytes / (clean bytes + dirty bytes) > min.cleanable.dirty.ratio
(strictly greater, as in Kafka), or when max.compaction.lag.ms says a dirty segment has
waited too long. Of the logs that qualify, the dirtiest goes first. The cleanable
section ends at a segment boundary before the first of: the active segment, the high
watermark (what consumers may read; the last stable offset in Kafka, which equals it
without transactions), and the first segment with a record newer than
min.compaction.lag.ms.

Planning reads segment metadata under the log's lock so a concurrent retention pass or
truncation cannot close a segment in the middle; it is a few header reads per segment.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence, TypeVar

from kafkalike.storage.checkpoints import OffsetCheckpointFile
from kafkalike.storage.errors import CorruptCheckpointError
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.log import Log
from kafkalike.storage.segment import LogSegment

log = logging.getLogger("kafka.log.LogCleanerManager")

CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"


class _Based(Protocol):
    @property
    def base_offset(self) -> int: ...


S = TypeVar("S", bound=_Based)


def log_dir_of(item: Log) -> str:
    """The log dir (an entry of log.dirs) a partition lives in: its directory's parent."""
    return os.path.dirname(item.dir)


class CleanerCheckpoints:
    """The `cleaner-offset-checkpoint` file of each log dir, read once and written through.

    Only the cleaner writes these files, so the in-memory copy stays authoritative.
    Writes fsync (see checkpoints.write_atomically): call them off the reactor.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, OffsetCheckpointFile] = {}
        self._offsets: dict[str, dict[TopicPartition, int]] = {}

    def _load(self, log_dir: str) -> dict[TopicPartition, int]:
        offsets = self._offsets.get(log_dir)
        if offsets is None:
            checkpoint = OffsetCheckpointFile(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT_FILE))
            try:
                offsets = checkpoint.read()
            except (CorruptCheckpointError, OSError) as exc:
                log.warning("Error reading %s, every compacted log there will be cleaned from its "
                            "start: %s", checkpoint.path, exc)
                offsets = {}
            self._files[log_dir] = checkpoint
            self._offsets[log_dir] = offsets
        return offsets

    def open(self, log_dir: str) -> None:
        """Read a dir's file, creating it empty if missing (as Kafka does at startup)."""
        with self._lock:
            self._load(log_dir)

    def get(self, log_dir: str, tp: TopicPartition) -> int | None:
        with self._lock:
            return self._load(log_dir).get(tp)

    def all(self) -> dict[TopicPartition, int]:
        with self._lock:
            out: dict[TopicPartition, int] = {}
            for offsets in self._offsets.values():
                out.update(offsets)
            return out

    def update(self, log_dir: str, tp: TopicPartition, offset: int | None,
               live: Mapping[TopicPartition, object] | None = None) -> None:
        """Set (or with None remove) one entry and rewrite the dir's file.

        With `live`, entries of partitions no longer in it are dropped on the way, as
        Kafka filters its checkpoint to the logs it still has.
        """
        with self._lock:
            offsets = self._load(log_dir)
            if live is not None:
                for gone in [k for k in offsets if k not in live]:
                    del offsets[gone]
            if offset is None:
                if tp not in offsets:
                    return
                del offsets[tp]
            else:
                offsets[tp] = offset
            self._files[log_dir].write(offsets)


@dataclass(frozen=True, slots=True)
class LogToClean:
    """One log's cleanable section, as planned; Kafka's LogToClean."""

    log: Log
    log_dir: str
    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment base offset: cleaning stops before it
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool  # max.compaction.lag.ms passed for a dirty segment
    force_update_checkpoint: bool  # the checkpoint was out of range and was reset
    truncations: int  # the log's truncation count when planned

    @property
    def topic_partition(self) -> TopicPartition:
        return self.log.topic_partition

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def worth_cleaning(self) -> bool:
        if self.need_compaction_now and self.cleanable_bytes > 0:
            return True
        return self.cleanable_ratio > self.log.config.min_cleanable_dirty_ratio


def segments_between(segments: Sequence[S], start: int, end: int) -> list[S]:
    """Kafka's logSegments(from, to): the segment holding `start` through the last based below `end`."""
    if start >= end:
        return []
    first = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= start:
            first = i
        else:
            break
    return [s for s in segments[first:] if s.base_offset < end]


def _non_active_from(segments: tuple[LogSegment, ...], offset: int) -> list[LogSegment]:
    active_base = segments[-1].base_offset
    if offset > active_base:
        return []
    return segments_between(segments, offset, active_base)


def _first_batch_timestamp(segment: LogSegment) -> int:
    """The first batch's max timestamp, which Kafka's max.compaction.lag.ms check reads."""
    for batch in segment.batches_from(0):
        return batch.max_timestamp
    return -1


def plan_cleaning(item: Log, checkpoint: int | None, now_ms: int) -> LogToClean:
    """Where `item`'s dirty section begins and ends, and how dirty it is.

    Kafka's cleanableOffsets, maxCompactionDelay and LogToClean in one pass, under the
    log's lock. A checkpoint below the log start offset (retention or DeleteRecords
    moved it) or past the log end (the log lost its tail) restarts from the log start.
    """
    config = item.config
    with item.lock:
        segments = item.segments
        start, end = item.log_start_offset, item.log_end_offset
        first_dirty, force = (start, checkpoint is not None)
        if checkpoint is not None and start <= checkpoint <= end:
            first_dirty, force = checkpoint, False
        elif checkpoint is not None:
            log.warning("[%s] Resetting first dirty offset to log start offset %d since the "
                        "checkpointed offset %d is out of range [%d, %d]", item.topic_partition,
                        start, checkpoint, start, end)
        active = segments[-1]
        limits = [item.last_stable_offset, active.base_offset]
        lag = max(config.min_compaction_lag_ms, 0)
        dirty = _non_active_from(segments, first_dirty)
        if lag > 0:
            too_new = next((s for s in dirty if s.largest_timestamp > now_ms - lag), None)
            if too_new is not None:
                limits.append(too_new.base_offset)
        uncleanable = max(first_dirty, min(limits))
        firsts = [ts for ts in (_first_batch_timestamp(s) for s in dirty) if ts > 0]
        need_now = bool(firsts) and min(firsts) < now_ms - max(config.max_compaction_lag_ms, 0)
        boundary = _non_active_from(segments, uncleanable)
        first_uncleanable = boundary[0].base_offset if boundary else active.base_offset
        cleanable = sum(s.size for s in segments_between(
            segments, min(first_dirty, first_uncleanable), first_uncleanable))
        clean = sum(s.size for s in segments if s.base_offset < first_dirty)
        truncations = item.truncation_count
    return LogToClean(item, log_dir_of(item), first_dirty, first_uncleanable, clean, cleanable,
                      need_now, force, truncations)


def filthiest(candidates: list[LogToClean]) -> LogToClean | None:
    """The log to clean next: the highest dirty ratio among those worth cleaning."""
    chosen: LogToClean | None = None
    for plan in candidates:
        if plan.total_bytes <= 0 or not plan.worth_cleaning:
            continue
        if chosen is None or plan.cleanable_ratio > chosen.cleanable_ratio:
            chosen = plan
    return chosen
