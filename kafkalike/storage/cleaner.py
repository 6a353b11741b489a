"""Log compaction for topics whose cleanup.policy contains `compact`: Kafka 2.8's LogCleaner.

One pass over a log (`Cleaner.clean`):

1. Map the dirty section, [first dirty offset, first uncleanable offset), to the latest
   offset of each key (`OffsetMap`). The map has a fixed capacity
   (log.cleaner.dedupe.buffer.size / 24 bytes an entry x 0.9, Kafka's sizing); when it
   fills, the pass ends where the map ends and the rest waits for the next pass.
2. Rewrite every segment from the start of the log to the end of the map, grouped into
   runs that fit one segment (segment.bytes and the index sizes: Kafka's
   groupSegmentsBySize). A record survives if it lies past the map's end, or it is the
   latest for its key (a key not in the map counts as latest: it was cleaned before and
   not written since) and it has a value or its segment still keeps tombstones.
   Records without a key are dropped, as Kafka's cleaner drops them (compacted topics
   refuse them on produce). Offsets never change: a batch that loses records is
   re-encoded with its original base offset, lastOffsetDelta, producer id, epoch, base
   sequence, leader epoch and codec, its records keeping their offset deltas. Batches
   that lose nothing are copied byte for byte. Control batches (transaction markers)
   follow the transaction rules below.
3. Tombstones: a segment keeps its tombstones while its last-modified time is after the
   delete horizon, the last-modified time of the newest fully cleaned segment minus
   delete.retention.ms. The first pass over a log therefore removes none.
4. Each group is written to `.cleaned` files, fsynced, given the last-modified time of
   the group's last segment, and swapped in under the log's lock
   (`Log.replace_segments`): `.cleaned` -> `.swap` (the commit point), old segments ->
   `.deleted`, `.swap` -> no suffix. A crash before the commit recovers the old
   segments, after it the new one (see recovery.py).

A batch left with no records is dropped, except the batch a producer's state rests on,
which stays as an empty batch (a 61-byte header, Kafka's RETAIN_EMPTY) so the
producer's sequence and epoch survive: for each producer id in the log's producer state,
the batch whose last offset is its last data batch's, or, when it has no data batch in
its current epoch, its markers of that epoch (Kafka 2.8's isBatchLastRecordOfProducer,
read from `Log.last_records_of_active_producers` once a pass). A producer that expired
(transactional.id.expiration.ms, see producer_state.py) has no such batch, so all of
its batches may go. And when nothing survives of a group's last
segment, that segment's last batch is kept as an empty batch, so the new segment's
offsets reach into every old one: a recovered `.swap` replaces the segments whose base
offsets lie in its offset range, and a shorter range would leave a stale old segment
behind.

Threading: `LogCleaner` runs passes in log.cleaner.threads background threads (or call
`clean_once` from any thread that may block); each thread claims the log it cleans, so
two threads never clean the same log at once, as Kafka's LogCleanerManager marks a log
in progress. Appends go on meanwhile: only inactive segments are
read, through duplicated descriptors taken under the log's lock, and the swap takes
the lock briefly. A pass is abandoned (and its `.cleaned` files removed) if the log is
closed, truncated, or loses a segment to retention while it runs.

Transactions (storage/cleaner_txn.py, Kafka 2.8's rules): cleaning stops at the last
stable offset, so every transaction in range is decided. Aborted batches (found through
the txn indexes) are dropped and never enter the offset map, so they cannot shadow a
committed value. An ABORT marker stays, with its entry in the cleaned segment's
`.txnindex`, while batches of its transaction were still seen; a COMMIT marker while
its transaction's batches remain; otherwise a marker goes once its segment is past the
delete horizon, like a tombstone. The batch a producer's state rests on is kept empty
rather than dropped, an aborted one too; its ABORT marker, which saw it, then stays
indexed until the producer writes again or expires, as in Kafka ("we may retain a
record from an aborted transaction if it is the last entry written by a given
producerId").
"""
from __future__ import annotations

import logging
import os
import struct
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Sequence

from crc32c import crc32c

from kafkalike.common.config_def import DOUBLE_MAX
from kafkalike.records.batch import BatchBuilder, RecordBatch, decode_batches
from kafkalike.records.legacy import LegacyBatch, legacy_messages
from kafkalike.records.header import CODEC_MASK, HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from kafkalike.storage import layout
from kafkalike.storage.cleaner_manager import (
    CleanerCheckpoints, LogToClean, filthiest, log_dir_of, plan_cleaning, segments_between,
)
from kafkalike.storage.cleaner_txn import CleanedTransactions
from kafkalike.storage.errors import CorruptRecordError
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.log import Log, wall_clock_ms
from kafkalike.storage.segment import LogSegment, txn_index_path

if TYPE_CHECKING:
    from kafkalike.storage.manager import LogManager

# Kafka's name: config/log4j.properties sends it to log-cleaner.log, not server.log.
log = logging.getLogger("kafka.log.LogCleaner")

DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
DEFAULT_IO_BUFFER_LOAD_FACTOR = 0.9             # log.cleaner.io.buffer.load.factor
DEFAULT_BACKOFF_MS = 15 * 1000                  # log.cleaner.backoff.ms
DEFAULT_READ_CHUNK_BYTES = 1024 * 1024
BYTES_PER_MAP_ENTRY = 24  # Kafka's sizing: a 16-byte MD5 of the key and an 8-byte offset
_INT32_MAX = 2**31 - 1

# Crash-test hook: (step, log, old segments); steps "cleaned", "swap", "deleted", "installed".
# A hook that raises a BaseException (not an Exception) stops the cleaner right there and
# leaves the files exactly as a crash at that point would.
StepHook = Callable[[str, Log, Sequence[LogSegment]], None]

_PREFIX = struct.Struct(">qiibI")         # baseOffset, batchLength, leader epoch, magic, crc
_AFTER_CRC = struct.Struct(">hiqqqhii")   # attributes .. records count


class CleaningAborted(Exception):
    """The log changed under the cleaner (closed, truncated, segments deleted) or it was stopped."""


class OffsetMap:
    """Latest offset of each key in the dirty section, with Kafka's bounded capacity.

    Keys are kept whole (Kafka keeps their MD5), so there are no hash collisions; the
    capacity still counts entries the way log.cleaner.dedupe.buffer.size does.
    """

    __slots__ = ("capacity", "offsets", "latest_offset")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("the offset map needs room for at least one key")
        self.capacity = capacity
        self.offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def clear(self) -> None:
        self.offsets = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> bool:
        """Record `offset` as the key's latest; False (nothing recorded) when full."""
        offsets = self.offsets
        if key not in offsets and len(offsets) >= self.capacity:
            return False
        offsets[key] = offset
        self.latest_offset = offset
        return True

    def get(self, key: bytes) -> int:
        return self.offsets.get(key, -1)

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(slots=True)
class CleanerStats:
    map_bytes_read: int = 0
    map_messages_read: int = 0
    bytes_read: int = 0
    messages_read: int = 0
    bytes_written: int = 0
    messages_written: int = 0
    invalid_messages: int = 0  # records without a key, dropped
    segments_replaced: int = 0
    segments_written: int = 0
    map_entries: int = 0
    started_ms: int = 0
    finished_ms: int = 0


@dataclass(frozen=True, slots=True)
class CleanResult:
    topic_partition: TopicPartition
    first_dirty_offset: int
    end_offset: int  # the new checkpoint: the next pass starts here
    completed: bool
    stats: CleanerStats = field(default_factory=CleanerStats)


@dataclass(frozen=True, slots=True)
class _SegmentView:
    """An inactive segment as the cleaner reads it: a private descriptor and fixed facts."""

    segment: LogSegment
    fd: int
    base_offset: int
    size: int
    index_bytes: int
    time_index_bytes: int
    last_modified_ms: int


class _LegacyEntry:
    """A magic 0/1 entry (a topic of an old message format) shaped as the cleaner reads a v2
    batch: `header` answers the fields it asks for, with no producer and no transaction."""

    __slots__ = ("batch", "_view")
    is_control = False
    is_transactional = False
    producer_id = -1
    legacy = True

    def __init__(self, batch: LegacyBatch, view: memoryview):
        self.batch = batch
        self._view = view

    header = property(lambda self: self)
    size = property(lambda self: self.batch.size)
    last_offset = property(lambda self: self.batch.last_offset)
    max_timestamp = property(lambda self: self.batch.max_timestamp)
    records_count = property(lambda self: len(self.batch.records()))

    def records(self) -> list:
        return self.batch.records()

    def to_bytes(self) -> bytes:
        return bytes(self._view[self.batch.position:self.batch.position + self.batch.size])

    def rebuilt(self, kept: list) -> tuple[bytes, int]:
        """The entry holding only `kept`, as Kafka's cleaner rebuilds a legacy batch: same magic
        and codec; a wrapper takes the last kept record's offset and, with LogAppendTime, its
        old timestamp."""
        batch = self.batch
        lat = batch.max_timestamp if batch.timestamp_type == 1 else None
        data = b"".join(legacy_messages(kept, magic=batch.magic, compression=batch.compression,
                                        log_append_time=lat))
        max_ts = lat if lat is not None else max((r.timestamp for r in kept), default=-1)
        return data, max_ts if batch.magic else -1


def empty_batch(header: BatchHeader) -> bytes:
    """A batch's header with no records: same offsets, producer fields and max timestamp.

    What Kafka writes for a batch kept only for its producer state (writeEmptyHeader):
    no codec, firstTimestamp -1, count 0.
    """
    attrs = header.attributes & ~CODEC_MASK
    after = _AFTER_CRC.pack(attrs, header.last_offset_delta, -1, header.max_timestamp,
                            header.producer_id, header.producer_epoch, header.base_sequence, 0)
    prefix = _PREFIX.pack(header.base_offset, HEADER_SIZE - LOG_OVERHEAD,
                          header.partition_leader_epoch, 2, crc32c(after))
    return prefix + after


def group_segments_by_size(views: Sequence[_SegmentView], max_size: int, max_index_size: int,
                           first_uncleanable_offset: int) -> list[list[_SegmentView]]:
    """Runs of consecutive segments that can become one (Kafka's groupSegmentsBySize).

    A run's original log and index sizes must each fit the limits (cleaning only
    shrinks them), and its offsets must stay within int32 of its base offset, judged by
    the next segment's base (or the first uncleanable offset for the last one).
    """
    groups: list[list[_SegmentView]] = []
    i = 0
    while i < len(views):
        head = views[i]
        group = [head]
        size, index, time_index = head.size, head.index_bytes, head.time_index_bytes
        i += 1
        while i < len(views):
            nxt = views[i]
            last = views[i + 1].base_offset - 1 if i + 1 < len(views) else first_uncleanable_offset - 1
            if not (size + nxt.size <= max_size and index + nxt.index_bytes <= max_index_size
                    and time_index + nxt.time_index_bytes <= max_index_size
                    and (nxt.size == 0 or last - head.base_offset <= _INT32_MAX)):
                break
            group.append(nxt)
            size += nxt.size
            index += nxt.index_bytes
            time_index += nxt.time_index_bytes
            i += 1
        groups.append(group)
    return groups


class Cleaner:
    """Compacts one log at a time; holds the offset map between passes to reuse it."""

    def __init__(self, *, map_capacity: int, clock: Callable[[], int],
                 throttle: Callable[[int], None] = lambda size: None,
                 read_chunk_bytes: int = DEFAULT_READ_CHUNK_BYTES,
                 should_stop: Callable[[], bool] = lambda: False,
                 hook: StepHook | None = None) -> None:
        self.offset_map = OffsetMap(map_capacity)
        self._clock = clock
        self._chunk = read_chunk_bytes
        self._should_stop = should_stop
        self._hook = hook
        self._throttle = throttle      # log.cleaner.io.max.bytes.per.second: bytes read and written

    # ---------------------------------------------------------------- entry
    def clean(self, plan: LogToClean) -> CleanResult:
        """Compact `plan.log` up to the end of its offset map; raises CleaningAborted."""
        stats = CleanerStats(started_ms=self._clock())
        views = self._snapshot(plan)
        try:
            end = self._clean(plan, views, stats)
        finally:
            for view in views:
                os.close(view.fd)
        stats.finished_ms = self._clock()
        return CleanResult(plan.topic_partition, plan.first_dirty_offset, end, True, stats)

    def _check(self, plan: LogToClean) -> None:
        item = plan.log
        if self._should_stop():
            raise CleaningAborted("the cleaner is stopping")
        if item.closed or item.truncation_count != plan.truncations:
            raise CleaningAborted(f"{item.topic_partition} was closed or truncated")

    def _snapshot(self, plan: LogToClean) -> list[_SegmentView]:
        """The inactive segments with duplicated descriptors, taken under the log's lock."""
        item = plan.log
        views: list[_SegmentView] = []
        with item.lock:
            self._check(plan)
            try:
                for segment in item.segments[:-1]:
                    fd = os.dup(segment.fd)
                    try:
                        mtime = os.fstat(fd).st_mtime_ns // 1_000_000
                    except OSError:
                        os.close(fd)
                        raise
                    views.append(_SegmentView(segment, fd, segment.base_offset, segment.size,
                                              segment.offset_index.size_in_bytes,
                                              segment.time_index.size_in_bytes, mtime))
            except BaseException:
                for view in views:
                    os.close(view.fd)
                raise
        return views

    def _clean(self, plan: LogToClean, views: list[_SegmentView], stats: CleanerStats) -> int:
        item, config = plan.log, plan.log.config
        first_dirty, upper = plan.first_dirty_offset, plan.first_uncleanable_offset
        cleaned_before = [v for v in views if v.base_offset < first_dirty]
        horizon = (cleaned_before[-1].last_modified_ms - config.delete_retention_ms
                   if cleaned_before else 0)
        self.offset_map.clear()
        self._build_offset_map(plan, segments_between(views, first_dirty, upper), stats)
        stats.map_entries = len(self.offset_map)
        if self.offset_map.latest_offset < first_dirty:
            return max(first_dirty, upper)  # nothing in the dirty section: just move past it
        end = self.offset_map.latest_offset + 1
        log.info("[%s] Cleaning offsets [%d, %d) of %s, discarding tombstones in segments last "
                 "modified at or before %d", item.topic_partition, first_dirty, end, item.dir, horizon)
        to_clean = [v for v in views if v.base_offset < end]
        groups = group_segments_by_size(to_clean, config.segment_bytes, config.segment_index_bytes,
                                        upper)
        producers = item.last_records_of_active_producers()
        # Where each segment's range ends, for collecting the aborted transactions it overlaps.
        bounds = {v.base_offset: (to_clean[i + 1].base_offset if i + 1 < len(to_clean) else end)
                  for i, v in enumerate(to_clean)}
        txns = CleanedTransactions()
        for group in groups:
            self._check(plan)
            self._clean_group(plan, group, horizon, producers, stats, txns, bounds)
        return end

    # ---------------------------------------------------------------- reading
    def _batches(self, view: _SegmentView, verify_crc: bool = True) -> Iterator[RecordBatch]:
        """Whole batches of a segment, read a chunk at a time through the view's descriptor
        (magic 0/1 entries of an old-format topic as _LegacyEntry)."""
        fd, end, position = view.fd, view.size, 0
        while position < end:
            head = os.pread(fd, LOG_OVERHEAD, position)
            if len(head) < LOG_OVERHEAD:
                raise CorruptRecordError(f"segment {view.base_offset} ends early at {position}")
            size = int.from_bytes(head[8:12], "big", signed=True) + LOG_OVERHEAD
            buf = os.pread(fd, min(end - position, max(self._chunk, size)), position)
            self._throttle(len(buf))
            consumed = 0
            for batch in decode_batches(buf, verify_crc=verify_crc):
                if not isinstance(batch, RecordBatch):
                    batch = _LegacyEntry(batch, memoryview(buf))
                    yield batch
                    consumed = batch.batch.position + batch.size
                    continue
                yield batch
                consumed = batch.position + batch.header.size
            if consumed == 0:
                raise CorruptRecordError(
                    f"no whole batch at position {position} of segment {view.base_offset}")
            position += consumed

    def _build_offset_map(self, plan: LogToClean, dirty: list[_SegmentView],
                          stats: CleanerStats) -> None:
        """Fill the map from the dirty segments; stops early (partly mapped) when it is full."""
        start = plan.first_dirty_offset
        offset_map = self.offset_map
        put = offset_map.put
        txns = CleanedTransactions()
        txns.add_aborted(plan.log.collect_aborted_transactions(start, plan.first_uncleanable_offset))
        for view in dirty:
            self._check(plan)
            for batch in self._batches(view):
                header = batch.header
                stats.map_bytes_read += header.size
                if header.last_offset < start:
                    continue
                if header.is_control:
                    txns.on_control_batch(batch)
                elif txns.on_batch(batch):       # aborted: its keys must not shadow older values
                    stats.map_messages_read += header.records_count
                else:
                    for record in batch.records():
                        stats.map_messages_read += 1
                        if record.key is not None and record.offset >= start:
                            if not put(record.key, record.offset):
                                log.debug("[%s] Offset map full at offset %d", plan.topic_partition,
                                          record.offset)
                                return
                offset_map.latest_offset = header.last_offset

    # ---------------------------------------------------------------- writing
    def _retained(self, batch: RecordBatch, retain_deletes: bool, keep_empty: bool,
                  stats: CleanerStats, txns: CleanedTransactions | None = None) -> tuple[bytes, int, int] | None:
        """(bytes to write, max timestamp, records kept) for one batch, or None to drop it.

        Markers follow the tombstone rule (`retain_deletes`) and are kept while their
        transaction still has batches; aborted batches go (Kafka's shouldDiscardBatch).
        A producer's last batch is kept empty instead of dropped (`keep_empty`).
        """
        header = batch.header
        stats.messages_read += header.records_count
        stats.bytes_read += header.size
        if header.is_control:
            discard = txns is not None and txns.on_control_batch(batch) and not retain_deletes
            if not discard:
                return batch.to_bytes(), header.max_timestamp, header.records_count
            if keep_empty:
                data = batch.to_bytes() if header.records_count == 0 else empty_batch(header)
                return data, header.max_timestamp, 0
            return None
        if txns is not None and txns.on_batch(batch):
            if keep_empty:
                return empty_batch(header), header.max_timestamp, 0
            return None
        records = batch.records()
        latest = self.offset_map.latest_offset
        offsets = self.offset_map.offsets
        kept = []
        for record in records:
            offset = record.offset
            if offset > latest:
                kept.append(record)
                continue
            key = record.key
            if key is None:
                stats.invalid_messages += 1
                continue
            if offset >= offsets.get(key, -1) and (record.value is not None or retain_deletes):
                kept.append(record)
        if kept and len(kept) == len(records):
            return batch.to_bytes(), header.max_timestamp, len(kept)
        if isinstance(batch, _LegacyEntry):
            if not kept:  # a legacy entry cannot be emptied: kept whole when it must stay
                return (batch.to_bytes(), header.max_timestamp, len(records)) if keep_empty else None
            data, max_timestamp = batch.rebuilt(kept)
            return data, max_timestamp, len(kept)
        if kept:
            builder = BatchBuilder(base_offset=header.base_offset, compression=header.compression,
                                   timestamp_type=header.timestamp_type,
                                   producer_id=header.producer_id,
                                   producer_epoch=header.producer_epoch,
                                   base_sequence=header.base_sequence,
                                   partition_leader_epoch=header.partition_leader_epoch,
                                   is_transactional=header.is_transactional)
            base = header.base_offset
            for record in kept:
                builder.append(record.key, record.value, record.headers, record.timestamp,
                               offset_delta=record.offset - base)
            data = builder.build(last_offset_delta=header.last_offset_delta)
            return data, builder.max_timestamp, len(kept)
        if keep_empty:
            data = batch.to_bytes() if header.records_count == 0 else empty_batch(header)
            return data, header.max_timestamp, 0
        return None

    def _clean_group(self, plan: LogToClean, group: list[_SegmentView], horizon: int,
                     producers: Mapping[int, tuple[int, int]], stats: CleanerStats,
                     txns: CleanedTransactions | None = None, bounds: Mapping[int, int] | None = None) -> None:
        item = plan.log
        base = group[0].base_offset
        for path in (layout.log_file_path(item.dir, base, layout.CLEANED_SUFFIX),
                     layout.offset_index_path(item.dir, base, layout.CLEANED_SUFFIX),
                     layout.time_index_path(item.dir, base, layout.CLEANED_SUFFIX),
                     txn_index_path(item.dir, base, layout.CLEANED_SUFFIX)):
            if os.path.exists(path):
                os.unlink(path)  # left by an earlier, interrupted attempt
        dest = LogSegment(item.dir, base, item.config, now_ms=self._clock(),
                          file_suffix=layout.CLEANED_SUFFIX)
        old = [view.segment for view in group]
        if txns is None:
            txns = CleanedTransactions()
        txns.cleaned_index = dest.txn_index
        try:
            last_with_data = max((i for i, v in enumerate(group) if v.size > 0), default=-1)
            for i, view in enumerate(group):
                if bounds is not None:
                    txns.add_aborted(item.collect_aborted_transactions(view.base_offset, bounds[view.base_offset]))
                retain_deletes = view.last_modified_ms > horizon
                wrote = False
                last_header: BatchHeader | None = None
                for batch in self._batches(view):
                    header = last_header = batch.header
                    keep_empty = header.producer_id >= 0 and _is_last_of_producer(header, producers)
                    out = self._retained(batch, retain_deletes, keep_empty, stats, txns)
                    if out is not None:
                        data, max_timestamp, count = out
                        dest.append(header.last_offset, max_timestamp, header.last_offset, [data],
                                    len(data))
                        stats.bytes_written += len(data)
                        self._throttle(len(data))
                        stats.messages_written += count
                        wrote = True
                if i == last_with_data and not wrote and last_header is not None:
                    # keep the group's end offset (see module doc); a legacy entry stays whole
                    data = last_header.to_bytes() if isinstance(last_header, _LegacyEntry) else empty_batch(
                        last_header)
                    dest.append(last_header.last_offset, last_header.max_timestamp,
                                last_header.last_offset, [data], len(data))
                    stats.bytes_written += len(data)
                self._check(plan)
            dest.on_become_inactive()
            dest.flush()
            modified_ns = group[-1].last_modified_ms * 1_000_000
            for path in dest.paths():
                os.utime(path, ns=(modified_ns, modified_ns))
            self._step("cleaned", item, old)
            if not item.replace_segments(dest, old, expected_truncations=plan.truncations,
                                         on_step=lambda step: self._step(step, item, old)):
                raise CleaningAborted(f"{item.topic_partition} changed while it was being cleaned")
        except Exception:
            if dest.log_path.endswith(layout.CLEANED_SUFFIX):
                dest.delete_files()
            raise
        stats.segments_replaced += len(group)
        stats.segments_written += 1
        log.info("[%s] Swapped in cleaned segment %d (%d bytes) for segment(s) %s", item.topic_partition,
                 base, dest.size, ",".join(str(v.base_offset) for v in group))

    def _step(self, step: str, item: Log, old: Sequence[LogSegment]) -> None:
        if self._hook is not None:
            self._hook(step, item, old)


def _is_last_of_producer(header, producers: Mapping[int, tuple[int, int]]) -> bool:
    """Whether a batch holds what its producer's state rests on (Kafka 2.8's
    isBatchLastRecordOfProducer): the producer's last data batch (its last sequence), or,
    for a producer with no data batch in its current epoch, a marker of that epoch."""
    last = producers.get(header.producer_id)
    if last is None:                     # expired, or never known: nothing to keep for it
        return False
    last_data_offset, epoch = last
    if last_data_offset >= 0:
        return header.last_offset == last_data_offset
    return header.is_control and header.producer_epoch == epoch


class Throttler:
    """Kafka's Throttler (throttleDown, checked every 300 ms), shared by every cleaner
    thread: once a check period has passed, if the bytes observed in it came faster than
    `rate` per second, the caller sleeps until they would not have (holding the lock, so
    the other threads wait too: the rate is for them all). `rate` may change at any time;
    `sleep(seconds)` is the cleaner's stop event's wait, so a stop never waits for it."""

    def __init__(self, rate: float = DOUBLE_MAX, *, check_interval_s: float = 0.3,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], object] = time.sleep) -> None:
        self.rate = rate
        self.check_interval_s = check_interval_s
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._period_start = clock()
        self._observed = 0.0

    def maybe_throttle(self, observed: float) -> None:
        rate = self.rate
        if rate >= DOUBLE_MAX:
            return                             # Kafka's default: no limit
        with self._lock:
            self._observed += observed
            now = self._clock()
            elapsed = now - self._period_start
            if elapsed > self.check_interval_s and self._observed > 0:
                if self._observed / elapsed > rate:
                    nap = self._observed / rate - elapsed
                    if nap > 0:
                        log.debug("Natural rate is %f per second but desired rate is %f, sleeping for %d ms "
                                  "to compensate.", self._observed / elapsed, rate, nap * 1000)
                        self._sleep(nap)
                self._period_start = self._clock()
                self._observed = 0.0


class LogCleaner:
    """The background cleaner of a broker's compacted logs (Kafka's LogCleaner).

    `logs` is a LogManager (its `logs` are read on each pass, so new partitions join), a
    mapping of TopicPartition to Log, or an iterable of logs. Each pass cleans the
    dirtiest eligible log that no other pass is cleaning and records how far it got in
    its log dir's `cleaner-offset-checkpoint`. `start()` runs `threads` passes at a time,
    one per thread (`kafka-log-cleaner-thread-<n>`), each with its own offset map of
    dedupe_buffer_size / threads bytes, all sharing one I/O throttle of
    `io_max_bytes_per_second`; a thread rests log.cleaner.backoff.ms when there is
    nothing for it to do. `reconfigure()` takes new values live, as Kafka 2.8's
    LogCleaner.reconfigure: new thread count or map sizes restart the threads.
    `clean_once()` runs one pass in the caller's thread (blocking: never on the reactor).
    """

    def __init__(self, logs: "LogManager | Mapping[TopicPartition, Log] | Iterable[Log]", *,
                 clock: Callable[[], int] | None = None,
                 threads: int = 1,
                 backoff_ms: int = DEFAULT_BACKOFF_MS,
                 dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE,
                 io_buffer_load_factor: float = DEFAULT_IO_BUFFER_LOAD_FACTOR,
                 io_max_bytes_per_second: float = DOUBLE_MAX,
                 read_chunk_bytes: int = DEFAULT_READ_CHUNK_BYTES,
                 hook: StepHook | None = None) -> None:
        self._source = logs
        self._clock = clock or wall_clock_ms
        self.num_threads = threads
        self.backoff_ms = backoff_ms
        self.dedupe_buffer_size = dedupe_buffer_size
        self.io_buffer_load_factor = io_buffer_load_factor
        self._read_chunk_bytes = read_chunk_bytes
        self._hook = hook
        self._stop = threading.Event()
        self.throttler = Throttler(io_max_bytes_per_second, sleep=self._stop.wait)
        self._threads: list[threading.Thread] = []
        self._lifecycle = threading.Lock()         # start, stop and reconfigure, one at a time
        self._plan_lock = threading.Lock()         # choosing and claiming a log, one thread at a time
        self._in_progress: set[TopicPartition] = set()
        self.checkpoints = CleanerCheckpoints()
        self._truncations_seen: weakref.WeakKeyDictionary[Log, int] = weakref.WeakKeyDictionary()
        self._uncleanable: weakref.WeakSet[Log] = weakref.WeakSet()
        self.cleaner = self._new_cleaner()          # clean_once's
        for directory in self._log_dirs():
            self.checkpoints.open(directory)

    def _new_cleaner(self) -> Cleaner:
        """A thread's Cleaner: its share of log.cleaner.dedupe.buffer.size (at most 2 GB,
        as Kafka's), log.cleaner.io.buffer.load.factor of it filled at most."""
        memory = min(self.dedupe_buffer_size // max(self.num_threads, 1), _INT32_MAX)
        capacity = max(1, int(memory // BYTES_PER_MAP_ENTRY * self.io_buffer_load_factor))
        return Cleaner(map_capacity=capacity, clock=self._clock, throttle=self.throttler.maybe_throttle,
                       read_chunk_bytes=self._read_chunk_bytes, should_stop=self._stop.is_set,
                       hook=self._hook)

    # ---------------------------------------------------------------- logs
    def _logs(self) -> dict[TopicPartition, Log]:
        source = self._source
        managed = getattr(source, "logs", None)
        if isinstance(managed, dict):
            return managed.copy()  # one C-level copy: safe against the reactor adding logs
        if isinstance(source, Mapping):
            return dict(source)
        return {item.topic_partition: item for item in source}  # type: ignore[union-attr]

    def _log_dirs(self) -> list[str]:
        dirs = getattr(self._source, "log_dirs", None)
        if isinstance(dirs, list):
            return list(dirs)
        return sorted({log_dir_of(item) for item in self._logs().values()})

    def checkpointed_offset(self, tp: TopicPartition) -> int | None:
        """The first dirty offset recorded for a partition, if any."""
        return self.checkpoints.all().get(TopicPartition(*tp))

    def forget(self, tp: TopicPartition, log_dir: str) -> None:
        """Drop a deleted partition's checkpoint entry (LogManager.delete_log calls this)."""
        self.checkpoints.update(log_dir, TopicPartition(*tp), None)

    def is_uncleanable(self, item: Log) -> bool:
        """Whether a pass over this log failed; it is skipped until the log is reloaded."""
        return item in self._uncleanable

    def in_progress(self) -> set[TopicPartition]:
        """The logs being cleaned right now (Kafka's LogCleaningInProgress)."""
        with self._plan_lock:
            return set(self._in_progress)

    # ---------------------------------------------------------------- passes
    def grab_filthiest(self) -> LogToClean | None:
        """Plan every compacted log and pick the dirtiest worth cleaning (no I/O but headers).

        Logs another pass is cleaning are left out. The caller holds the plan lock and
        claims what it gets (grab_and_claim), or runs alone."""
        now = self._clock()
        candidates = []
        for tp, item in self._logs().items():
            if (not item.config.compact or item.closed or item in self._uncleanable
                    or tp in self._in_progress):
                continue
            directory = log_dir_of(item)
            if item.truncation_count != self._truncations_seen.get(item, 0):
                # Records below the checkpoint may have been replaced: clean it all again.
                log.info("[%s] Log was truncated; cleaning it again from its start", tp)
                self.checkpoints.update(directory, tp, None)
            try:
                plan = plan_cleaning(item, self.checkpoints.get(directory, tp), now)
            except (OSError, ValueError) as exc:  # closed or deleted while planning
                log.debug("[%s] Skipping log cleaning this round: %s", tp, exc)
                continue
            self._truncations_seen[item] = plan.truncations
            if plan.force_update_checkpoint:
                self.checkpoints.update(directory, tp, plan.first_dirty_offset)
            candidates.append(plan)
        return filthiest(candidates)

    def grab_and_claim(self) -> LogToClean | None:
        """The dirtiest log no pass is cleaning, marked in progress until `release`."""
        with self._plan_lock:
            plan = self.grab_filthiest()
            if plan is not None:
                self._in_progress.add(plan.topic_partition)
            return plan

    def release(self, plan: LogToClean) -> None:
        with self._plan_lock:
            self._in_progress.discard(plan.topic_partition)

    def clean_once(self, cleaner: Cleaner | None = None) -> CleanResult | None:
        """One pass: clean the dirtiest eligible log. None when none is eligible."""
        plan = self.grab_and_claim()
        if plan is None:
            return None
        try:
            return self.clean_log(plan, cleaner)
        finally:
            self.release(plan)

    def clean_log(self, plan: LogToClean, cleaner: Cleaner | None = None, ident: str = "") -> CleanResult:
        """Run a planned pass and checkpoint its end; an aborted pass changes no checkpoint."""
        item, tp = plan.log, plan.topic_partition
        try:
            result = (cleaner or self.cleaner).clean(plan)
        except CleaningAborted as exc:
            log.info("%s[%s] Log cleaning aborted: %s", ident, tp, exc)
            return CleanResult(tp, plan.first_dirty_offset, plan.first_dirty_offset, False)
        except Exception:
            log.exception("%s[%s] Unexpected error cleaning log %s; marking it uncleanable", ident, tp, item.dir)
            self._uncleanable.add(item)
            return CleanResult(tp, plan.first_dirty_offset, plan.first_dirty_offset, False)
        live = self._logs()
        if live.get(tp) is item:
            self.checkpoints.update(plan.log_dir, tp, result.end_offset, live)
        stats = result.stats
        seconds = max(stats.finished_ms - stats.started_ms, 1) / 1000
        log.info("%s[%s] Cleaned offsets [%d, %d): %d of %d bytes kept (%d of %d records), %d "
                 "segment(s) into %d, %d keys mapped, in %.1f s", ident, tp, result.first_dirty_offset,
                 result.end_offset, stats.bytes_written, stats.bytes_read, stats.messages_written,
                 stats.messages_read, stats.segments_replaced, stats.segments_written,
                 stats.map_entries, seconds)
        return result

    # ---------------------------------------------------------------- threads
    def start(self) -> None:
        """Run passes in `num_threads` daemon threads until stop() (Kafka's startup)."""
        with self._lifecycle:
            if self._threads:
                return
            self._start_threads()

    def _start_threads(self) -> None:
        log.info("Starting the log cleaner")
        self._stop.clear()
        for i in range(self.num_threads):
            name = f"kafka-log-cleaner-thread-{i}"
            thread = threading.Thread(target=self._run, args=(name, self._new_cleaner()), name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the threads; a pass in progress is abandoned at its next check.

        Passes keep aborting until start() is called again, so nothing cleans a log
        that LogManager.shutdown is about to close.
        """
        with self._lifecycle:
            self._stop_threads(timeout)

    def _stop_threads(self, timeout: float | None = None) -> None:
        if self._threads:
            log.info("Shutting down the log cleaner.")
        self._stop.set()
        stopping, self._threads = self._threads, []
        for thread in stopping:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def reconfigure(self, *, threads: int | None = None, dedupe_buffer_size: int | None = None,
                    io_buffer_load_factor: float | None = None, io_max_bytes_per_second: float | None = None,
                    backoff_ms: int | None = None) -> None:
        """New cleaner settings (Kafka's LogCleaner.reconfigure). The I/O rate and the
        backoff apply at once; a new thread count or map size stops the running threads
        (abandoning their passes) and starts new ones. A stopped cleaner stays stopped.
        Joins threads: call it off the reactor."""
        with self._lifecycle:
            if io_max_bytes_per_second is not None:
                self.throttler.rate = io_max_bytes_per_second
            if backoff_ms is not None:
                self.backoff_ms = backoff_ms
            sizes = (self.num_threads, self.dedupe_buffer_size, self.io_buffer_load_factor)
            if threads is not None:
                self.num_threads = threads
            if dedupe_buffer_size is not None:
                self.dedupe_buffer_size = dedupe_buffer_size
            if io_buffer_load_factor is not None:
                self.io_buffer_load_factor = io_buffer_load_factor
            if (self.num_threads, self.dedupe_buffer_size, self.io_buffer_load_factor) != sizes:
                self.cleaner = self._new_cleaner()
                if self._threads:
                    self._stop_threads()
                    self._start_threads()

    @property
    def running(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    @property
    def thread_names(self) -> list[str]:
        return [thread.name for thread in self._threads if thread.is_alive()]

    def _run(self, name: str, cleaner: Cleaner) -> None:
        ident = f"[{name}]: "
        log.info("%sStarting", ident)
        stop = self._stop
        while not stop.is_set():
            result = None
            try:
                plan = self.grab_and_claim()
                if plan is not None:
                    try:
                        result = self.clean_log(plan, cleaner, ident)
                    finally:
                        self.release(plan)
            except Exception:
                log.exception("%sLog cleaner pass failed", ident)
            if result is None or not result.completed:
                stop.wait(self.backoff_ms / 1000)
        log.info("%sStopped", ident)
