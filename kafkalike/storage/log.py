"""A partition's log: an ordered run of segments with Kafka 2.8's append, read, roll,
retention, truncation and flush behaviour.

Threading: the broker calls everything from its reactor thread except `flush`, which
fsyncs and so must run elsewhere. The log never fsyncs on the append path unless told
to: when the flush policy (flush.messages, or a roll, which Kafka follows with a flush
of the finished segments) asks for a flush, the log hands `flush` to the
`flush_executor` it was given (e.g. `reactor.callInThread`); with none, it flushes
inline, which suits tools and tests. At most one requested flush is queued at a time.
flush.ms is checked by the owner (LogManager.flush_dirty_logs) through `flush_due`.
A lock guards the segment list, so a flush running in a thread sees a consistent
snapshot; the fsyncs themselves run outside the lock on duplicated descriptors.

Deleted segments are renamed `*.deleted` at once and removed file.delete.delay.ms
later through the `scheduler` (`scheduler(delay_ms, fn)`); with none they are removed
at once. Until then their open descriptors keep serving reads already handed out.

Producer ids idle for `max_producer_id_expiration_ms` (transactional.id.expiration.ms)
without an open transaction are forgotten by `remove_expired_producers`, which the
LogManager calls every PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, and are left out when
a snapshot is loaded (Kafka 2.8's ProducerStateManager).
"""
from __future__ import annotations

import bisect
import logging
import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from kafkalike.metrics.stats import LOG_FLUSH_STATS
from kafkalike.storage import layout
from kafkalike.storage.checkpoints import LeaderEpochCheckpointFile
from kafkalike.storage.config import LONG_MAX, LogConfig
from kafkalike.records.message_format import to_log_format
from kafkalike.storage.errors import (
    CorruptCheckpointError, OffsetOutOfRangeError, RecordBatchTooLargeError, RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.leader_epoch import LeaderEpochFileCache
from kafkalike.storage import producer_snapshot
from kafkalike.storage.producer_state import (BatchMetadata, CompletedTxn, ProducerStateManager,
                                                scan_segment)
from kafkalike.storage.recovery import RecoveryStats, SegmentLoader
from kafkalike.storage.retention import (
    REASON_LOG_START_OFFSET, REASON_RETENTION_MS, REASON_RETENTION_SIZE, Predicate,
    deletable_segments, log_start_offset_breached, retention_ms_breached, retention_size_breached,
)
from kafkalike.storage.segment import LogSegment, RecordTimestamps, TimestampAndOffset, txn_index_path
from kafkalike.storage.transaction_index import AbortedTxn
from kafkalike.storage.validation import (AppendOrigin, AppendRules, LogAppendInfo, validate_append,
                                          validate_client_batch)

_CLIENT = AppendOrigin.CLIENT

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2  # ListOffsets sentinels
# transactional.id.expiration.ms's default: how long an idle producer id is remembered.
DEFAULT_MAX_PRODUCER_ID_EXPIRATION_MS = 7 * 24 * 60 * 60 * 1000
LATEST_TIMESTAMP = -1

Executor = Callable[[Callable[[], None]], object]
Scheduler = Callable[[int, Callable[[], None]], object]


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class LogSlice:
    """Whole batches in one segment file: read them, or sendfile(fd, position, size).

    A fetch answer carries it as its record set: it has the length of the bytes it
    stands for, and bytes(slice) reads them, so the codec and the byte counts (quotas,
    meters, the request log) treat it as the records; the plaintext listener sends it
    with sendfile instead (kafkalike.broker.network)."""

    start_offset: int
    segment_base_offset: int
    position: int
    size: int
    fd: int = -1
    path: str = ""
    first_entry_incomplete: bool = False

    def read(self) -> bytes:
        if self.size == 0:
            return b""
        return os.pread(self.fd, self.size, self.position)

    def __bytes__(self) -> bytes:
        """The bytes, exactly len(self) of them: an answer's size prefix was counted from
        the length, so a short read (the file truncated since) must not pass silently."""
        data = self.read()
        if len(data) != self.size:
            raise OSError(f"read {len(data)} of {self.size} bytes at {self.position} of {self.path}")
        return data

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0


def _change_suffix(segment: LogSegment, old: str, new: str) -> None:
    """Rename a segment's three files from suffix `old` to `new`, the log file first."""
    def renamed(path: str) -> str:
        if not path.endswith(old):
            raise ValueError(f"{path} does not end with {old}")
        return path[:len(path) - len(old)] + new
    target = renamed(segment.log_path)
    os.rename(segment.log_path, target)
    segment.log_path = target
    segment.offset_index.rename(renamed(segment.offset_index.path))
    segment.time_index.rename(renamed(segment.time_index.path))
    segment.txn_index.rename(renamed(segment.txn_index.path))


def _duplicate_append(info: LogAppendInfo, duplicate: BatchMetadata) -> LogAppendInfo:
    """What a retried batch that already landed is answered with: its original offsets, nothing written.

    Kafka 2.8 answers such a duplicate with NONE and the original base offset (and the
    batch's timestamp as log append time), so the producer's retry simply succeeds.
    """
    return LogAppendInfo(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp,
                         duplicate.last_offset, duplicate.timestamp, info.log_start_offset,
                         0, info.batch_count, info.records_count)


class Log:
    """One partition directory; see the module docstring for threading and deletion."""

    def __init__(self, directory: str, config: LogConfig, *, log_start_offset: int = 0,
                 recovery_point: int = 0, had_clean_shutdown: bool = False,
                 clock: Callable[[], int] | None = None, flush_executor: Executor | None = None,
                 scheduler: Scheduler | None = None, rng: random.Random | None = None,
                 max_producer_id_expiration_ms: int = DEFAULT_MAX_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.dir = os.path.abspath(directory)
        self.max_producer_id_expiration_ms = max_producer_id_expiration_ms
        self.topic_partition: TopicPartition = layout.parse_partition_dir(self.dir)
        self.config = config
        self._rules = AppendRules.from_config(config)
        self._clock = clock or wall_clock_ms
        self._flush_executor = flush_executor
        self._scheduler = scheduler
        self._rng = rng or random.Random()
        self._lock = threading.RLock()
        self._flush_requested: int | None = None
        self._truncations = 0
        self._hw_position: tuple[int, int, int, int] | None = None  # (offset, truncations, base, pos)
        self.closed = False
        os.makedirs(self.dir, exist_ok=True)
        self.leader_epoch_cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(self.dir),
                                                       name=str(self.topic_partition))
        cache = self.leader_epoch_cache
        assigned: list[int] = []

        def assign_epoch(epoch: int, start_offset: int) -> None:
            # Recovery adds epochs the checkpoint missed; written once, after loading.
            latest = cache.latest_epoch
            if latest is None or epoch > latest:
                cache.assign(epoch, start_offset, flush=False)
                assigned.append(epoch)

        # Kafka 2.8 keeps no leader-epoch cache for a log whose format predates v2 (its
        # entries carry no epoch): the checkpoint is deleted and nothing is assigned.
        self._epochs = config.record_version >= 2
        if not self._epochs:
            cache.disable()
        loader = SegmentLoader(self.dir, config, now_ms=self._clock(), rng=self._rng,
                               assign_epoch=assign_epoch if self._epochs else None,
                               epoch_entries=cache.entries(), name=str(self.topic_partition))
        loaded = loader.load(log_start_offset=log_start_offset, recovery_point=recovery_point,
                             had_clean_shutdown=had_clean_shutdown)
        self.recovery_stats: RecoveryStats = loaded.stats
        self._segments: list[LogSegment] = loaded.segments
        self._bases: list[int] = [s.base_offset for s in self._segments]
        self._leo = loaded.log_end_offset
        self.recovery_point = loaded.recovery_point
        self.log_start_offset = loaded.log_start_offset
        self.high_watermark = self.log_start_offset
        self.last_flush_time_ms = self._clock()
        if assigned:
            cache.flush()
        cache.truncate_from_end(self._leo)
        cache.truncate_from_start(self.log_start_offset)
        self.producer_state = ProducerStateManager()
        self._load_producer_state()

    def _load_producer_state(self) -> None:
        """Producers' state: the latest usable snapshot, then the batches after it.

        Without a snapshot every segment's headers are replayed. Snapshots beyond the
        log end (recovery cut the log short) and unreadable ones are deleted; producers of
        the snapshot that have expired are left out, as Kafka's loadFromSnapshot does. The replay
        also rewrites the `.txnindex` entries of every marker it passes, so an index that
        a crash left short (or a log that recovery cut) is rebuilt from the log itself.
        """
        state = self.producer_state
        producer_snapshot.delete_snapshots(self.dir, above=self._leo)
        start = None
        for offset, path in reversed(producer_snapshot.list_snapshots(self.dir)):
            try:
                with open(path, "rb") as f:
                    entries = producer_snapshot.decode(f.read())
                now, max_age = self._clock(), self.max_producer_id_expiration_ms
                state.load({pid: e for pid, e in entries.items() if not state.is_expired(e, now, max_age)},
                           offset)
                start = offset
                break
            except (CorruptCheckpointError, OSError) as error:
                log.warning("[%s] Deleting unusable producer snapshot %s: %s", self.topic_partition, path, error)
                os.unlink(path)
        if start is None:
            state.clear()
        self._replay_producers(start if start is not None else -1)
        state.on_high_watermark_updated(self.high_watermark)

    def _replay_producers(self, start: int) -> None:
        """Feed the producer batches at or after `start` to the producer state, rewriting txn indexes."""
        state = self.producer_state
        segments = self._segments
        for i, segment in enumerate(segments):
            if i + 1 < len(segments) and segments[i + 1].base_offset <= start:
                continue
            segment.txn_index.truncate_to(start)
            position = 0
            if start > segment.base_offset:
                found = segment.translate_offset(start)
                position = found.position if found is not None else segment.size
            for batch in scan_segment(segment.fd, segment.size, position):
                if batch.last_offset < start:
                    continue
                pending = state.prepare([batch], validate=False)
                state.apply(pending)
                for txn in pending.completed:
                    self._complete_txn(segment, txn)

    def _complete_txn(self, segment: LogSegment, txn: CompletedTxn) -> None:
        """A marker closed `txn`: an abort is indexed in the marker's segment, with the LSO it leaves."""
        state = self.producer_state
        if txn.is_aborted:
            segment.txn_index.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset,
                                                state.last_stable_offset_after(txn)))
        state.complete(txn)

    def _snapshot_producers(self, offset: int, fsync: bool = False) -> None:
        """Kafka snapshots on every roll and at close; we skip partitions without producers."""
        if not len(self.producer_state):
            return
        try:
            producer_snapshot.write_snapshot(self.dir, offset, self.producer_state, fsync=fsync)
        except OSError as error:  # a deleted or failed dir: the log replays from segments instead
            log.warning("[%s] Could not write producer snapshot at %d: %s", self.topic_partition, offset, error)

    # ---------------------------------------------------------------- state
    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    def __repr__(self) -> str:
        return (f"Log({self.topic_partition}, start={self.log_start_offset}, end={self._leo}, "
                f"segments={len(self._segments)})")

    def update_config(self, config: LogConfig) -> None:
        """New topic settings; they apply to the next roll, retention check and append.

        A change of message format between v2 and an older one starts or drops the
        leader-epoch cache, as Kafka's Log.updateConfig does (a new cache starts empty).
        """
        with self._lock:
            self.config = config
            self._rules = AppendRules.from_config(config)
            epochs = config.record_version >= 2
            if epochs != self._epochs:
                self._epochs = epochs
                if epochs:
                    self.leader_epoch_cache.enable()
                else:
                    self.leader_epoch_cache.disable()

    def _floor_index(self, offset: int) -> int:
        return bisect.bisect_right(self._bases, offset) - 1

    def _add_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    # ---------------------------------------------------------------- append
    def append(self, records: bytes | bytearray | memoryview, *, assign_offsets: bool = True, leader_epoch: int | None = None,
               now_ms: int | None = None, origin: AppendOrigin | None = None) -> LogAppendInfo:
        """Validate and append whole v2 batches; returns offsets and timestamps assigned.

        As leader (`assign_offsets`), batches get offsets from the log end offset by
        patching their baseOffset, and `leader_epoch` (when given) is stamped into each;
        the patched fields are written from small separate buffers, so the caller's
        bytes are neither modified nor copied. As follower, the leader's offsets are kept
        and must rise and start at or after the log end offset. Nothing is written if any
        batch is bad.
        """
        now = self._clock() if now_ms is None else now_ms
        if origin is None:
            origin = AppendOrigin.CLIENT if assign_offsets else AppendOrigin.REPLICATION
        with self._lock:
            cache = self.leader_epoch_cache
            rules = self._rules
            checked = (validate_client_batch(records, rules, self._leo, leader_epoch, now,
                                             cache.latest_epoch)
                       if assign_offsets and origin is _CLIENT and rules.log_magic == 2 else None)
            if checked is None:
                checked = validate_append(records, rules, self._leo, assign_offsets,
                                          leader_epoch, origin, now, cache.latest_epoch,
                                          f"{self.topic_partition[0]}-{self.topic_partition[1]}")
                if assign_offsets and rules.log_magic < 2:
                    checked = self._to_log_format(checked, rules)
            info, pieces = checked
            info.log_start_offset = self.log_start_offset
            if info.batch_count == 0:
                return info
            if not assign_offsets and info.first_offset < self._leo:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.topic_partition}. First offset "
                    f"{info.first_offset} is less than the next offset {self._leo}. Last offset in "
                    f"append: {info.last_offset}. Log start offset = {self.log_start_offset}",
                    info.first_offset, info.last_offset)
            pending = None
            if info.producer_batches:
                producers = self.producer_state
                if origin is AppendOrigin.CLIENT:
                    duplicate = producers.find_duplicate(info.producer_batches)
                    if duplicate is not None:
                        return _duplicate_append(info, duplicate)
                pending = producers.prepare(info.producer_batches, validate=origin is AppendOrigin.CLIENT,
                                            check_epochs=origin is not AppendOrigin.REPLICATION)
            valid = info.valid_bytes
            config = self.config
            if valid > config.segment_bytes:
                raise RecordBatchTooLargeError(
                    f"Message batch size is {valid} bytes in append to partition "
                    f"{self.topic_partition} which exceeds the maximum configured segment size of "
                    f"{config.segment_bytes}.")
            segment = self._segments[-1]
            flush_to = None
            if segment.should_roll(config, valid, info.max_timestamp, info.last_offset, now):
                segment = self._roll(info.first_offset, now)
                flush_to = segment.base_offset
            segment.append(info.last_offset, info.max_timestamp, info.offset_of_max_timestamp,
                           pieces, valid)
            self._leo = info.last_offset + 1
            if pending:
                self.producer_state.apply(pending)
                for txn in pending.completed:
                    self._complete_txn(segment, txn)
            if info.epoch_starts and self._epochs:
                for epoch, start in info.epoch_starts:
                    if epoch != cache.latest_epoch:
                        cache.assign(epoch, start)
            if self._leo - self.recovery_point >= config.flush_messages:
                flush_to = self._leo
        if flush_to is not None:
            self._request_flush(flush_to)
        return info

    def _to_log_format(self, checked: tuple[LogAppendInfo, list], rules: AppendRules
                       ) -> tuple[LogAppendInfo, list]:
        """A leader's validated v2 append rewritten as the magic 0/1 entries an old-format log holds.

        Kafka's LogValidator converts with the offsets it assigns; here the v2 batch got
        them first. The entries carry no leader epoch and no producer. max.message.bytes
        applies again to the converted entries, as Kafka checks them after conversion.
        """
        info, pieces = checked
        if info.batch_count == 0:
            return checked
        append_time = info.log_append_time if info.log_append_time >= 0 else None
        converted = to_log_format(b"".join(pieces), rules.log_magic, append_time)
        if converted.largest_entry > rules.max_message_bytes:
            raise RecordTooLargeError(
                f"Message batch size is {converted.largest_entry} bytes in append to partition "
                f"{self.topic_partition} which exceeds the maximum configured size of {rules.max_message_bytes}.")
        if rules.log_magic == 1:
            info.max_timestamp = converted.max_timestamp
            info.offset_of_max_timestamp = converted.offset_of_max_timestamp
        info.valid_bytes = len(converted.data)
        info.epoch_starts = []
        info.last_leader_epoch = None
        info.producer_batches = []
        return info, [converted.data]

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        return self.append(records, assign_offsets=False, origin=AppendOrigin.REPLICATION)

    # ---------------------------------------------------------------- roll
    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (Kafka's Log.roll)."""
        now = self._clock() if now_ms is None else now_ms
        with self._lock:
            segment = self._roll(None, now)
        self._request_flush(segment.base_offset)
        return segment

    def _roll(self, expected_next_offset: int | None, now_ms: int) -> LogSegment:
        new_offset = max(expected_next_offset or 0, self._leo)
        active = self.active_segment
        if active.base_offset == new_offset:
            if active.size != 0:
                raise RuntimeError(f"trying to roll a new segment for {self.topic_partition} at "
                                   f"offset {new_offset} which already exists")
            log.warning("[%s] Rolling over an empty active segment at %d", self.topic_partition,
                        new_offset)
            self._segments.pop()
            self._bases.pop()
            self._delete_segments([active])
        for path in (layout.log_file_path(self.dir, new_offset),
                     layout.offset_index_path(self.dir, new_offset),
                     layout.time_index_path(self.dir, new_offset),
                     txn_index_path(self.dir, new_offset)):
            if os.path.exists(path):
                log.warning("Newly rolled segment file %s already exists; deleting it first", path)
                os.unlink(path)
        if self._segments:
            self._segments[-1].on_become_inactive()
        segment = LogSegment(self.dir, new_offset, self.config, now_ms=now_ms,
                             roll_jitter_ms=self.config.random_segment_jitter(self._rng))
        self._add_segment(segment)
        self._snapshot_producers(new_offset)
        log.info("[%s] Rolled new log segment at offset %d", self.topic_partition, new_offset)
        return segment

    # ---------------------------------------------------------------- read
    def _position_of(self, offset: int) -> tuple[int, int]:
        """(segment base, position of the first batch ending at or after `offset`)."""
        cached = self._hw_position
        if cached is not None and cached[0] == offset and cached[1] == self._truncations:
            return cached[2], cached[3]
        base, position = self._locate(offset)
        self._hw_position = (offset, self._truncations, base, position)
        return base, position

    def read_slice(self, start_offset: int, max_bytes: int, max_offset: int | None = None,
                   min_one_batch: bool = True) -> LogSlice:
        """Where the batches for a fetch lie; see `read`."""
        with self._lock:
            leo = self._leo
            if start_offset > leo or start_offset < self.log_start_offset:
                raise OffsetOutOfRangeError(
                    f"Received request for offset {start_offset} for partition {self.topic_partition}, "
                    f"but we only have log segments in the range {self.log_start_offset} to {leo}.")
            limit = leo if max_offset is None else min(max_offset, leo)
            empty = LogSlice(start_offset, self.active_segment.base_offset, self.active_segment.size, 0)
            if start_offset >= limit:
                return empty
            bound_base, bound_position = self._position_of(limit) if limit < leo else (-1, -1)
            index = max(0, self._floor_index(start_offset))
            while index < len(self._segments):
                segment = self._segments[index]
                if segment.base_offset >= limit:
                    break
                bound = bound_position if segment.base_offset == bound_base else None
                found = segment.read(start_offset, max_bytes, bound, min_one_batch)
                if found is not None:
                    return LogSlice(start_offset, segment.base_offset, found.position, found.size,
                                    segment.fd, segment.log_path, found.first_entry_incomplete)
                index += 1
            return empty

    def size_between(self, start_offset: int, end_offset: int) -> int:
        """Bytes of the batches from the one holding `start_offset` up to `end_offset` (exclusive).

        What a delayed fetch counts against fetch.min.bytes; batch-granular like a read.
        """
        with self._lock:
            end_offset = min(end_offset, self._leo)
            if start_offset >= end_offset:
                return 0
            start_base, start_pos = self._locate(max(start_offset, self.log_start_offset))
            end_base, end_pos = self._locate(end_offset)
            total = 0
            for segment in self._segments:
                if segment.base_offset < start_base or segment.base_offset > end_base:
                    continue
                lo = start_pos if segment.base_offset == start_base else 0
                hi = end_pos if segment.base_offset == end_base else segment.size
                total += max(0, hi - lo)
            return total

    def _locate(self, offset: int) -> tuple[int, int]:
        """(segment base, position of the first batch ending at or after `offset`)."""
        segment = self._segments[max(0, self._floor_index(offset))]
        found = segment.translate_offset(offset)
        return segment.base_offset, (found.position if found is not None else segment.size)

    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes:
        """Raw bytes of whole batches, starting with the batch that holds `start_offset`.

        `max_offset` is an exclusive bound (the high watermark for consumers). At most
        `max_bytes`, except that with `min_one_batch` the first batch comes whole however
        large. Empty at or past `max_offset`; OffsetOutOfRangeError below the log start
        offset or past the log end offset.
        """
        return self.read_slice(start_offset, max_bytes, max_offset, min_one_batch).read()

    def fetch_offset_by_timestamp(self, timestamp: int,
                                  record_timestamps: RecordTimestamps | None = None
                                  ) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest, -1 latest, else the first offset with timestamp >= it.

        Segments whose largest timestamp is below the target are skipped; in the first
        other one the time index and a short scan find the batch (see
        LogSegment.find_offset_by_timestamp for precision). None when nothing qualifies.
        """
        with self._lock:
            cache = self.leader_epoch_cache
            if timestamp == EARLIEST_TIMESTAMP:
                first = cache.earliest_entry
                epoch = first.epoch if first is not None and first.start_offset <= self.log_start_offset else None
                return TimestampAndOffset(-1, self.log_start_offset, epoch)
            if timestamp == LATEST_TIMESTAMP:
                return TimestampAndOffset(-1, self._leo, cache.latest_epoch)
            segments = list(self._segments)
            start = self.log_start_offset
        for segment in segments:
            if segment.largest_timestamp >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, start, record_timestamps)
                if found is not None:  # None only when all of it lies below the log start
                    return found
        return None

    def remove_expired_producers(self, now_ms: int | None = None) -> list[int]:
        """Forget producers idle for max_producer_id_expiration_ms with no open transaction
        (Kafka's PeriodicProducerExpirationCheck); returns their ids. Holds the lock for one
        pass over the producers, so it may run on a thread beside the appends."""
        now = self._clock() if now_ms is None else now_ms
        with self._lock:
            if self.closed:
                return []
            expired = self.producer_state.remove_expired(now, self.max_producer_id_expiration_ms)
        if expired:
            log.debug("[%s] Expired producer ids %s", self.topic_partition, expired)
        return expired

    def last_records_of_active_producers(self) -> dict[int, tuple[int, int]]:
        """Producer id -> (offset of its last data batch, -1 when it has none; its epoch): the
        batches the cleaner keeps, emptied, for each producer's state (Kafka's
        lastRecordsOfActiveProducers). An expired producer is not in it."""
        with self._lock:
            return {pid: (e.last_offset, e.epoch) for pid, e in self.producer_state.producers.items()}

    def active_producers(self) -> list:
        """Copies of the producer state entries (DescribeProducers reads them off the lock)."""
        with self._lock:
            return [entry.copy() for entry in self.producer_state.producers.values()]

    # ---------------------------------------------------------------- offsets
    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to [log start offset, log end offset]."""
        with self._lock:
            self.high_watermark = min(max(offset, self.log_start_offset), self._leo)
            self.producer_state.on_high_watermark_updated(self.high_watermark)
            return self.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the first offset of the oldest transaction that is
        open (or closed by a marker not yet replicated), if below the high watermark; else the
        high watermark (Kafka's Log.lastStableOffset)."""
        hw = self.high_watermark
        first = self.producer_state.first_unstable_offset()
        if first is None:
            return hw
        first = max(first, self.log_start_offset)
        return first if first < hw else hw

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), from the txn indexes
        of the segment holding `fetch_offset` on (only as far as needed, as Kafka searches)."""
        found: list[AbortedTxn] = []
        with self._lock:
            for segment in self._segments[max(0, self._floor_index(fetch_offset)):]:
                result = segment.txn_index.collect(fetch_offset, upper_bound)
                found.extend(result.aborted)
                if result.complete:
                    break
        return found

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        with self._lock:
            if offset > self.high_watermark:
                self.update_high_watermark(offset)
                return True
            return False

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start offset forward (DeleteRecords, or following the leader).

        Segments wholly below it are deleted by the next retention pass, as in Kafka.
        """
        with self._lock:
            if offset > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {offset} of partition "
                    f"{self.topic_partition} since it is larger than the high watermark "
                    f"{self.high_watermark}")
            if offset <= self.log_start_offset:
                return False
            self.log_start_offset = offset
            self.recovery_point = max(self.recovery_point, offset)
            self.leader_epoch_cache.truncate_from_start(offset)
            self.producer_state.on_log_start_offset_incremented(offset)
            log.info("[%s] Incremented log start offset to %d", self.topic_partition, offset)
            return True

    def assign_leader_epoch(self, epoch: int, start_offset: int) -> None:
        """A new leader records where its epoch begins (Kafka's maybeAssignEpochStartOffset);
        a log of a format older than v2 keeps no epochs."""
        if self._epochs:
            self.leader_epoch_cache.assign(epoch, start_offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch; (-1, -1) when unknown."""
        return self.leader_epoch_cache.end_offset_for(epoch, self._leo)

    # ---------------------------------------------------------------- truncation
    def truncate_to(self, target_offset: int) -> bool:
        """Follower truncation: drop everything from the batch holding `target_offset` on.

        Returns False (but still trims the epoch cache to the log end) when there is
        nothing at or after the target. Kafka cuts at the start of the batch holding
        the target too; followers always truncate at batch boundaries.
        """
        if target_offset < 0:
            raise ValueError(f"cannot truncate partition {self.topic_partition} to a negative offset")
        with self._lock:
            if target_offset >= self._leo:
                self.leader_epoch_cache.truncate_from_end(self._leo)
                return False
            log.info("[%s] Truncating to offset %d", self.topic_partition, target_offset)
            if self._segments[0].base_offset > target_offset:
                self._truncate_fully(target_offset)
                return True
            self._truncations += 1
            cut = self._floor_index(target_offset) + 1
            doomed = self._segments[cut:]
            del self._segments[cut:]
            del self._bases[cut:]
            self._delete_segments(doomed)
            active = self.active_segment
            active.truncate_to(target_offset, self._clock())
            self._leo = active.read_next_offset()
            self.recovery_point = min(self.recovery_point, self._leo)
            self.log_start_offset = min(self.log_start_offset, target_offset)
            self.high_watermark = min(self.high_watermark, self._leo)
            self.leader_epoch_cache.truncate_from_end(self._leo)
            # Producer batches (data or markers) past the cut change the state: reload and replay.
            if self.producer_state.last_batch_offset >= self._leo:
                self._load_producer_state()
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and restart the log, empty, at `new_offset`."""
        with self._lock:
            self._truncate_fully(new_offset)

    def _truncate_fully(self, new_offset: int) -> None:
        self._truncations += 1
        doomed = list(self._segments)
        self._segments.clear()
        self._bases.clear()
        self._delete_segments(doomed)
        for path in (layout.log_file_path(self.dir, new_offset),
                     layout.offset_index_path(self.dir, new_offset),
                     layout.time_index_path(self.dir, new_offset),
                     txn_index_path(self.dir, new_offset)):
            if os.path.exists(path):
                os.unlink(path)
        self._add_segment(LogSegment(self.dir, new_offset, self.config, now_ms=self._clock(),
                                     roll_jitter_ms=self.config.random_segment_jitter(self._rng)))
        self._leo = new_offset
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.clear()
        producer_snapshot.delete_snapshots(self.dir, above=-1)
        self.log_start_offset = new_offset
        self.recovery_point = new_offset
        self.high_watermark = new_offset

    # ---------------------------------------------------------------- retention
    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Apply retention (log start offset always; time and size with cleanup.policy=delete)."""
        now = self._clock() if now_ms is None else now_ms
        with self._lock:
            deleted = self._delete_where(log_start_offset_breached(self.log_start_offset),
                                         REASON_LOG_START_OFFSET, now)
            if self.config.delete:
                by_size = retention_size_breached(self.config, self.size)
                if by_size is not None:
                    deleted += self._delete_where(by_size, REASON_RETENTION_SIZE, now)
                by_time = retention_ms_breached(self.config, now)
                if by_time is not None:
                    deleted += self._delete_where(by_time, REASON_RETENTION_MS, now)
            return deleted

    def _delete_where(self, predicate: Predicate, reason: str, now_ms: int) -> int:
        doomed = deletable_segments(self._segments, predicate, high_watermark=self.high_watermark,
                                    log_end_offset=self._leo)
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            self._roll(None, now_ms)
        del self._segments[:len(doomed)]
        del self._bases[:len(doomed)]
        log.info("[%s] Deleting segments due to %s breach: %s", self.topic_partition, reason,
                 ",".join(str(s.base_offset) for s in doomed))
        self._delete_segments(doomed)
        first = self._segments[0].base_offset
        producer_snapshot.delete_snapshots(self.dir, below=first)
        if first > self.log_start_offset:
            self.log_start_offset = first
            self.recovery_point = max(self.recovery_point, first)
            self.leader_epoch_cache.truncate_from_start(first)
            self.producer_state.on_log_start_offset_incremented(first)
        return len(doomed)

    def _delete_segments(self, segments: Iterable[LogSegment]) -> None:
        """Rename to `.deleted` now; close and unlink after file.delete.delay.ms."""
        doomed = list(segments)
        if not doomed:
            return
        for segment in doomed:
            segment.rename_with_suffix(layout.DELETED_SUFFIX)

        def remove() -> None:
            for segment in doomed:
                segment.delete_files()

        if self._scheduler is None:
            remove()
        else:
            self._scheduler(self.config.file_delete_delay_ms, remove)

    # ---------------------------------------------------------------- flush
    def _request_flush(self, offset: int) -> None:
        if self._flush_executor is None:
            self.flush(offset)
            return
        with self._lock:
            if self._flush_requested is not None:
                self._flush_requested = max(self._flush_requested, offset)
                return
            self._flush_requested = offset
        self._flush_executor(self._run_requested_flush)

    def _run_requested_flush(self) -> None:
        with self._lock:
            offset, self._flush_requested = self._flush_requested, None
        if offset is not None and not self.closed:
            self.flush(offset)

    def flush_due(self, now_ms: int | None = None) -> bool:
        """Whether flush.ms has passed since the last flush (LogManager's periodic check)."""
        if self.config.flush_ms == LONG_MAX:
            return False
        now = self._clock() if now_ms is None else now_ms
        return now - self.last_flush_time_ms >= self.config.flush_ms

    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, offset); advance the recovery point.

        Blocking: run it off the reactor thread. Safe against concurrent appends and rolls;
        if the log is truncated while the fsyncs run, the recovery point stays put.
        """
        with self._lock:
            if self.closed:
                return
            target = self._leo if offset is None else min(offset, self._leo)
            if target <= self.recovery_point:
                return
            first = max(0, self._floor_index(self.recovery_point))
            chosen = [s for s in self._segments[first:] if s.base_offset < target]
            per_segment = [s.dup_fds() for s in chosen]
            new_segment = bool(chosen) and chosen[-1].base_offset >= self.recovery_point
            truncations = self._truncations
        try:
            for fds in per_segment:
                # Kafka's LogFlushRateAndTimeMs times each segment's flush (log and indexes).
                started = time.monotonic()
                for fd in fds:
                    os.fsync(fd)
                LOG_FLUSH_STATS.flushed(time.monotonic() - started)
            if new_segment:
                layout.fsync_dir(self.dir)
        finally:
            for fds in per_segment:
                for fd in fds:
                    os.close(fd)
        with self._lock:
            if truncations == self._truncations and target > self.recovery_point:
                self.recovery_point = target
                self.last_flush_time_ms = self._clock()

    # ---------------------------------------------------------------- cleaner hooks
    @property
    def lock(self) -> threading.RLock:
        """The lock over the segment list, for taking a consistent snapshot (held briefly)."""
        return self._lock

    @property
    def truncation_count(self) -> int:
        """Rises with every truncation: work planned on older segments must be redone."""
        return self._truncations

    def replace_segments(self, new_segment: LogSegment, old_segments: list[LogSegment], *,
                         expected_truncations: int,
                         on_step: Callable[[str], None] | None = None) -> bool:
        """Install a log cleaner's result in place of a run of old segments (Kafka's replaceSegments).

        `new_segment` is complete and fsynced under `.cleaned` names, based at the first old
        segment's base offset. Renaming it to `.swap` is the commit point: from then on a
        crash recovers to the new segment (recovery installs a `.log.swap` over every
        segment in its offset range); before it, to the old ones (`.cleaned` files are
        deleted). Then the old segments go `.deleted` (served to readers until
        file.delete.delay.ms, like any deleted segment) and the new one drops its suffix.
        Returns False, changing nothing, when the old segments are no longer exactly a run
        of inactive segments of this log (deleted, truncated or closed meanwhile); the
        caller then discards its work. `on_step(name)` is called after each durable step
        ("swap", "deleted", "installed"), for crash tests.
        """
        with self._lock:
            if self.closed or self._truncations != expected_truncations or not old_segments:
                return False
            first = next((i for i, s in enumerate(self._segments) if s is old_segments[0]), None)
            end = None if first is None else first + len(old_segments)
            if (end is None or end >= len(self._segments)
                    or any(a is not b for a, b in zip(self._segments[first:end], old_segments))
                    or new_segment.base_offset != old_segments[0].base_offset):
                return False
            _change_suffix(new_segment, layout.CLEANED_SUFFIX, layout.SWAP_SUFFIX)
            layout.fsync_dir(self.dir)
            if on_step is not None:
                on_step("swap")
            self._segments[first:end] = [new_segment]
            self._bases[first:end] = [new_segment.base_offset]
            self._hw_position = None
            self._delete_segments(old_segments)
            if on_step is not None:
                on_step("deleted")
            _change_suffix(new_segment, layout.SWAP_SUFFIX, "")
            layout.fsync_dir(self.dir)
            if on_step is not None:
                on_step("installed")
            return True

    # ---------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Close all segments, trimming indexes and recording final timestamps (no fsync)."""
        with self._lock:
            if self.closed:
                return
            self._snapshot_producers(self._leo, fsync=True)
            for segment in self._segments:
                segment.close()
            self.closed = True
