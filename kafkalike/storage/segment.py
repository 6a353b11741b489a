"""One log segment: a `.log` file of whole entries plus its offset and time indexes.

An entry is a record batch v2 or, in the log of a topic whose message.format.version
predates 0.11, a magic 0/1 message (a compressed one wraps its records); both start with
offset(8) and size(4) and have their magic at byte 16. The segment never decodes records.
It appends bytes it is handed, finds batches by reading their 43-byte header prefix
(base offset, length, epoch, magic, CRC, attributes, last offset delta, first and max
timestamp; a legacy entry's offset, size, CRC, magic, attributes and timestamp), and on
recovery checks each entry's CRC through kafkalike.records (CRC-32C for v2, CRC-32 for
magic 0/1). A legacy entry's offset is its last offset; where a compressed one's first
offset is needed (a timestamp lookup) the entry is read whole.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, NamedTuple

from kafkalike.records import header as batch_header
from kafkalike.records.header import CODEC_MASK, LOG_OVERHEAD, MAGIC, TIMESTAMP_TYPE_MASK, InvalidRecordError
from kafkalike.records.legacy import RECORD_OVERHEAD_V0, LegacyBatch, check_legacy_entry
from kafkalike.storage import layout
from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import CorruptIndexError, KafkaStorageError
from kafkalike.storage.index import NO_TIMESTAMP, OffsetIndex, TimeIndex
from kafkalike.storage.transaction_index import TransactionIndex

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# firstTimestamp, maxTimestamp: everything a scan needs, 43 bytes.
_SCAN = struct.Struct(">qiibIhiqq")
_SCAN_SIZE = _SCAN.size
_MIN_BATCH_LENGTH = batch_header.HEADER_SIZE - LOG_OVERHEAD
_MIN_ENTRY_LENGTH = RECORD_OVERHEAD_V0   # the smallest entry: a magic 0 message
_UP_TO_MAGIC = MAGIC + 1
_LEGACY_HEAD = struct.Struct(">qi")
_LEGACY_TIMESTAMP = struct.Struct(">q")
_INT32_MAX = 2**31 - 1
_RECOVERY_CHUNK = 4 * 1024 * 1024
_IOV_MAX = 1024

# Given a whole batch, yield (offset, timestamp) of each record: lets the broker plug the
# records codec into timestamp lookups without storage depending on it.
RecordTimestamps = Callable[[bytes], Iterable[tuple[int, int]]]


def txn_index_path(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, layout.offset_file_name(base_offset) + layout.TXN_INDEX_SUFFIX + suffix)


class BatchInfo(NamedTuple):
    position: int
    base_offset: int   # a compressed legacy entry's is its last offset (the first is inside it)
    size: int
    partition_leader_epoch: int
    attributes: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    magic: int = 2


def _legacy_info(raw: bytes, position: int, end: int) -> BatchInfo | None:
    """A magic 0/1 entry's BatchInfo from the bytes at its start; None if none starts there whole."""
    if len(raw) < _UP_TO_MAGIC:
        return None
    magic = raw[MAGIC]
    offset, length = _LEGACY_HEAD.unpack_from(raw)
    if magic > 1 or length < _MIN_ENTRY_LENGTH or position + length + LOG_OVERHEAD > end:
        return None
    timestamp = -1
    if magic == 1:
        if len(raw) < LOG_OVERHEAD + 14:
            return None
        timestamp = _LEGACY_TIMESTAMP.unpack_from(raw, LOG_OVERHEAD + 6)[0]
    return BatchInfo(position, offset, length + LOG_OVERHEAD, -1, raw[MAGIC + 1], offset, timestamp, timestamp,
                     magic)


def _check_entry(buf) -> tuple[int | None, int, int, int]:
    """(base offset, last offset, partition leader epoch, max timestamp) of the whole entry in `buf`.

    Raises InvalidRecordError for a torn or corrupt one. A compressed legacy entry's base
    offset is None: it lies inside the compressed data, which recovery does not read.
    """
    if len(buf) > MAGIC and buf[MAGIC] < 2:
        entry = check_legacy_entry(buf, 0)
        return (None if entry.attributes & CODEC_MASK else entry.offset), entry.offset, -1, entry.timestamp
    header = batch_header.validate_batch(buf, 0)
    return header.base_offset, header.last_offset, header.partition_leader_epoch, header.max_timestamp


class OffsetPositionSize(NamedTuple):
    last_offset: int
    position: int
    size: int


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    position: int
    size: int
    first_entry_incomplete: bool = False


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None


@dataclass(slots=True)
class RecoveryResult:
    truncated_bytes: int
    valid_batches: int
    reason: str | None  # why the scan stopped early, when it did


class LogSegment:
    """A segment of the log, named by its base offset (a lower bound of its offsets)."""

    def __init__(self, directory: str, base_offset: int, config: LogConfig, *, now_ms: int,
                 roll_jitter_ms: int = 0, file_suffix: str = "") -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = config.index_interval_bytes
        self.max_index_size = config.segment_index_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = now_ms
        self.log_path = layout.log_file_path(directory, base_offset, file_suffix)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size
        self.offset_index = OffsetIndex(layout.offset_index_path(directory, base_offset, file_suffix),
                                        base_offset, self.max_index_size)
        self.time_index = TimeIndex(layout.time_index_path(directory, base_offset, file_suffix),
                                    base_offset, self.max_index_size)
        self.txn_index = TransactionIndex(txn_index_path(directory, base_offset, file_suffix), base_offset)
        self._bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        last = self.time_index.last_entry
        self._max_timestamp, self._offset_of_max_timestamp = last.timestamp, last.offset
        self.closed = False

    # ---------------------------------------------------------------- basics
    @property
    def size(self) -> int:
        return self._size

    @property
    def fd(self) -> int:
        """The `.log` file descriptor, for pread or sendfile of a slice."""
        return self._fd

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self._size})"

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    @property
    def max_timestamp_so_far(self) -> int:
        """Largest batch timestamp seen; on open, the time index's last entry holds it."""
        return self._max_timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._offset_of_max_timestamp

    @property
    def largest_timestamp(self) -> int:
        """What retention compares: the max batch timestamp, else the file's mtime."""
        ts = self.max_timestamp_so_far
        if ts >= 0:
            return ts
        return int(os.stat(self.log_path).st_mtime * 1000)

    # ---------------------------------------------------------------- append
    def append(self, largest_offset: int, largest_timestamp: int, offset_of_max_timestamp: int,
               pieces: list, total: int) -> int:
        """Write whole batches (given as buffers written back to back, `total` bytes) at the end.

        Like Kafka 2.8's LogSegment.append, one index entry covers the whole write: it
        maps the largest offset written to the position where the write began, and it is
        added only once more than index.interval.bytes were written since the previous
        entry. Returns the position the data was written at.
        """
        position = self._size
        if position == 0:
            self._rolling_based_timestamp = largest_timestamp
        if not 0 <= largest_offset - self.base_offset <= _INT32_MAX:
            raise KafkaStorageError(
                f"offset {largest_offset} does not fit segment {self.base_offset} (overflow)")
        try:
            if len(pieces) <= _IOV_MAX:
                written = os.writev(self._fd, pieces)
            else:
                written = os.writev(self._fd, pieces[:_IOV_MAX])
                if written == sum(len(p) for p in pieces[:_IOV_MAX]):
                    rest = b"".join(pieces[_IOV_MAX:])
                    written += os.write(self._fd, rest)
            if written < total:  # a short write: finish it from one joined buffer
                remaining = memoryview(b"".join(pieces))[written:]
                while remaining:
                    remaining = remaining[os.write(self._fd, remaining):]
        except OSError as exc:
            try:
                os.ftruncate(self._fd, position)
            except OSError:
                pass
            raise KafkaStorageError(f"error appending to {self.log_path}: {exc}") from exc
        self._size = position + total
        if largest_timestamp > self._max_timestamp:
            self._max_timestamp = largest_timestamp
            self._offset_of_max_timestamp = offset_of_max_timestamp
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            time_index = self.time_index
            if self._max_timestamp > time_index.last_entry[0]:
                time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_last_index_entry = total
        else:
            self._bytes_since_last_index_entry += total
        return position

    # ---------------------------------------------------------------- rolling
    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None and self._size > 0:
            for batch in self.batches_from(0):
                self._rolling_based_timestamp = batch.max_timestamp
                break

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        self._load_first_batch_timestamp()
        first = self._rolling_based_timestamp
        if first is not None and first >= 0:
            return message_timestamp - first
        return now_ms - self.created_ms

    def should_roll(self, config: LogConfig, messages_size: int, max_timestamp_in_messages: int,
                    max_offset_in_messages: int, now_ms: int) -> bool:
        size = self._size
        if size > config.segment_bytes - messages_size:
            return True
        if size > 0:
            first = self._rolling_based_timestamp
            if first is None:
                waited = self.time_waited_for_roll(now_ms, max_timestamp_in_messages)
            elif first >= 0:
                waited = max_timestamp_in_messages - first
            else:
                waited = now_ms - self.created_ms
            if waited > config.segment_ms - self.roll_jitter_ms:
                return True
        oi, ti = self.offset_index, self.time_index
        return (oi.entries >= oi.max_entries or ti.entries >= ti.max_entries - 1
                or not 0 <= max_offset_in_messages - self.base_offset <= _INT32_MAX)

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def on_become_inactive(self) -> None:
        """At roll: record the final max timestamp and trim both indexes to their entries."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp,
                                         skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    # ---------------------------------------------------------------- scanning
    def batches_from(self, position: int, end: int | None = None) -> Iterator[BatchInfo]:
        """Headers of the whole batches in [position, end), read with pread."""
        end = self._size if end is None else end
        fd, unpack = self._fd, _SCAN.unpack_from
        while position + _UP_TO_MAGIC <= end:
            raw = os.pread(fd, _SCAN_SIZE, position)
            if len(raw) < _SCAN_SIZE or raw[MAGIC] < 2:
                legacy = _legacy_info(raw, position, end)
                if legacy is None:
                    return
                yield legacy
                position += legacy.size
                continue
            base, length, epoch, _magic, _crc, attrs, delta, first_ts, max_ts = unpack(raw)
            size = length + LOG_OVERHEAD
            if length < _MIN_BATCH_LENGTH or position + size > end:
                return
            yield BatchInfo(position, base, size, epoch, attrs, base + delta, first_ts, max_ts)
            position += size

    def translate_offset(self, offset: int, starting_position: int = 0) -> OffsetPositionSize | None:
        """The first batch whose last offset is >= `offset`, found from the index then a short scan."""
        mapping = self.offset_index.lookup(offset)
        for batch in self.batches_from(max(mapping.position, starting_position)):
            if batch.last_offset >= offset:
                return OffsetPositionSize(batch.last_offset, batch.position, batch.size)
        return None

    def read_next_offset(self) -> int:
        """One past the last offset in this segment (its base offset when empty)."""
        next_offset = self.base_offset
        for batch in self.batches_from(self.offset_index.last_entry.position):
            next_offset = batch.last_offset + 1
        return next_offset

    def _whole_batches_end(self, start: int, limit: int) -> int:
        """The last batch boundary <= limit, scanning from the nearest indexed position."""
        entry = self.offset_index.lookup_position(limit)
        position = max(start, entry.position)
        for batch in self.batches_from(position):
            if batch.position + batch.size > limit:
                return batch.position
            position = batch.position + batch.size
        return position

    def read(self, start_offset: int, max_size: int, max_position: int | None = None,
             min_one_message: bool = False) -> SegmentSlice | None:
        """Whole batches starting with the one holding `start_offset`, as Kafka's LogSegment.read.

        `max_position` (a batch boundary, e.g. the high watermark's position) bounds the
        read; with `min_one_message` the first batch is returned whole even when larger
        than `max_size`. Unlike Kafka, which may end a fetch in the middle of a batch,
        the slice always ends on a batch boundary. None if no batch holds an offset >= start.
        """
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for a read from {self.log_path}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start = found.position
        bound = self._size if max_position is None else min(max_position, self._size)
        adjusted = max(max_size, found.size) if min_one_message else max_size
        if adjusted == 0 or bound <= start:
            return SegmentSlice(start, 0, adjusted < found.size)
        if start + adjusted >= bound:
            end = bound
        else:
            end = self._whole_batches_end(start, start + adjusted)
        return SegmentSlice(start, end - start, adjusted < found.size)

    def read_bytes(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int,
                                 record_timestamps: RecordTimestamps | None = None
                                 ) -> TimestampAndOffset | None:
        """The earliest offset >= starting_offset whose timestamp is >= `timestamp`.

        Without `record_timestamps` the answer is at batch precision: the first batch
        whose maxTimestamp reaches the target gives its first offset (never later than
        the exact record, so a consumer seeking there misses nothing). The answer is
        exact when the batch's first timestamp already reaches the target, or the batch
        uses LogAppendTime (every record then carries maxTimestamp).
        """
        from_index = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(from_index.offset, starting_offset)).position
        for batch in self.batches_from(position):
            if batch.max_timestamp < timestamp or batch.last_offset < starting_offset:
                continue
            epoch = batch.partition_leader_epoch if batch.partition_leader_epoch >= 0 else None
            if batch.magic < 2:  # one message, or a wrapper whose records say which one it is
                raw = self.read_bytes(batch.position, batch.size)
                for record in LegacyBatch(raw, 0).records():
                    if record.timestamp >= timestamp and record.offset >= starting_offset:
                        return TimestampAndOffset(record.timestamp, record.offset, None)
                continue
            if record_timestamps is not None:
                raw = self.read_bytes(batch.position, batch.size)
                for offset, record_ts in record_timestamps(raw):
                    if record_ts >= timestamp and offset >= starting_offset:
                        return TimestampAndOffset(record_ts, offset, epoch)
                continue
            offset = max(batch.base_offset, starting_offset)
            if batch.attributes & TIMESTAMP_TYPE_MASK:
                return TimestampAndOffset(batch.max_timestamp, offset, epoch)
            if batch.first_timestamp >= timestamp and offset == batch.base_offset:
                return TimestampAndOffset(batch.first_timestamp, offset, epoch)
            return TimestampAndOffset(batch.max_timestamp, offset, epoch)
        return None

    # ---------------------------------------------------------------- recovery
    def sanity_check(self, upper_offset: int | None) -> int:
        """Check both indexes against the log; returns the segment's next offset.

        `upper_offset` is the next segment's base offset, None for the last segment.
        Raises CorruptIndexError for anything a rebuild should fix.
        """
        self.offset_index.sanity_check(self._size)
        last = self.offset_index.last_entry
        if self.offset_index.entries:
            raw = os.pread(self._fd, _SCAN_SIZE, last.position)
            if len(raw) < _SCAN_SIZE:
                raw += bytes(_SCAN_SIZE - len(raw))  # a legacy entry can be shorter: its fields come first
            if len(raw) < _SCAN_SIZE or last.position + _UP_TO_MAGIC > self._size:
                raise CorruptIndexError(f"{self.offset_index.path} points past the log")
            base, length, _e, magic, *_ = _SCAN.unpack_from(raw)
            if (magic > 2 or base > last.offset
                    or length < (_MIN_BATCH_LENGTH if magic == 2 else _MIN_ENTRY_LENGTH)):
                raise CorruptIndexError(
                    f"{self.offset_index.path} entry for offset {last.offset} does not point at "
                    "a batch holding it")
        next_offset = self.read_next_offset()
        if upper_offset is not None and next_offset > upper_offset:
            raise CorruptIndexError(
                f"segment {self.base_offset} ends at {next_offset}, past the next segment {upper_offset}")
        if self.offset_index.entries and last.offset >= next_offset:
            raise CorruptIndexError(f"{self.offset_index.path} has an entry past the segment end")
        self.time_index.sanity_check(next_offset)
        return next_offset

    def recover(self, assign_epoch: Callable[[int, int], None] | None = None, *,
                require_contiguous: bool = False, first_offset: int | None = None,
                check_epoch: Callable[[int, int, int], str | None] | None = None,
                stop_at: int | None = None) -> RecoveryResult:
        """Rebuild both indexes from the log, truncating at the first invalid batch.

        Each batch must parse, pass its CRC, have offsets that fit this segment and rise
        strictly. With `require_contiguous` (logs that are never compacted) a batch must
        start exactly where the previous one ended, the first at `first_offset` (default
        the segment's base offset): baseOffset lies outside the CRC, so this is the only
        check that catches a damaged one. `check_epoch(epoch, base_offset, position)`
        returns why a batch's leader epoch cannot be right, or None (partitionLeaderEpoch
        is outside the CRC too). `assign_epoch(epoch, start_offset)` is called for every
        batch with a leader epoch, as Kafka rebuilds its leader-epoch cache. `stop_at`
        cuts the segment at that batch position regardless.
        """
        self.offset_index.reset()
        self.time_index.reset()
        valid = 0
        last_index_entry = 0
        batches = 0
        max_ts, offset_of_max_ts = NO_TIMESTAMP, self.base_offset
        expected = self.base_offset if first_offset is None else first_offset
        reason: str | None = None
        file_end = os.fstat(self._fd).st_size
        end = file_end if stop_at is None else min(stop_at, file_end)
        if end < file_end:
            reason = f"cut at position {end} by a later check"
        buf = b""
        buf_start = 0
        while valid < end:
            # Make sure buf holds at least the length prefix, then the whole batch.
            rel = valid - buf_start
            if len(buf) - rel < LOG_OVERHEAD:
                buf = buf[rel:] + os.pread(self._fd, _RECOVERY_CHUNK, buf_start + len(buf))
                buf_start = valid
                rel = 0
                if len(buf) < LOG_OVERHEAD:
                    reason = "torn batch length at the end"
                    break
            length = int.from_bytes(buf[rel + 8:rel + 12], "big", signed=True)
            size = length + LOG_OVERHEAD
            if length < _MIN_ENTRY_LENGTH or valid + size > end:
                reason = f"batch at position {valid} has length {length}, past the end or too small"
                break
            if len(buf) - rel < size:
                buf = buf[rel:] + os.pread(self._fd, max(_RECOVERY_CHUNK, size - (len(buf) - rel)),
                                           buf_start + len(buf))
                buf_start = valid
                rel = 0
            try:
                base, last, leader_epoch, batch_max_ts = _check_entry(memoryview(buf)[rel:rel + size])
            except InvalidRecordError as exc:
                reason = str(exc)
                break
            if base is None:  # a compressed legacy entry: only its last offset is at hand
                base = expected if last >= expected else last
            if require_contiguous and base != expected:
                reason = f"batch at position {valid} starts at offset {base}, expected {expected}"
                break
            if base < expected or not (self.can_convert_to_relative_offset(base)
                                       and self.can_convert_to_relative_offset(last)):
                reason = f"batch at position {valid} has offsets {base}-{last} out of range"
                break
            if check_epoch is not None:
                problem = check_epoch(leader_epoch, base, valid)
                if problem is not None:
                    reason = problem
                    break
            if batch_max_ts > max_ts:
                max_ts, offset_of_max_ts = batch_max_ts, last
            if valid - last_index_entry > self.index_interval_bytes:
                self.offset_index.append(last, valid)
                self.time_index.maybe_append(max_ts, offset_of_max_ts)
                last_index_entry = valid
            if assign_epoch is not None and leader_epoch >= 0:
                assign_epoch(leader_epoch, base)
            valid += size
            batches += 1
            expected = last + 1
        truncated = file_end - valid
        if truncated > 0:
            os.ftruncate(self._fd, valid)
        self._size = valid
        self._max_timestamp, self._offset_of_max_timestamp = max_ts, offset_of_max_ts
        self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        self.offset_index.trim_to_valid_size()
        if max_ts >= 0:
            self.time_index.maybe_append(max_ts, offset_of_max_ts, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        return RecoveryResult(truncated, batches, reason if truncated > 0 else None)

    def check_tail(self) -> RecoveryResult:
        """Validate the batches after the last offset-index entry; cut the first bad one and the rest.

        Run on every load of the active segment, clean shutdown or not: bytes a clean
        shutdown did not vouch for (a torn write under it, a damaged disk) would otherwise
        be served, and new batches appended after them. Only the bytes past the last index
        entry are read, at most index.interval.bytes plus a batch.
        """
        entry = self.offset_index.last_entry
        file_end = os.fstat(self._fd).st_size
        position = valid = entry.position
        previous_last = self.base_offset - 1 if entry.position == 0 else None
        checked_last: int | None = None
        reason = None
        while valid < file_end:
            head = os.pread(self._fd, LOG_OVERHEAD, valid)
            length = int.from_bytes(head[8:12], "big", signed=True) if len(head) == LOG_OVERHEAD else -1
            if length < _MIN_ENTRY_LENGTH or valid + length + LOG_OVERHEAD > file_end:
                reason = f"torn batch at position {valid}"
                break
            raw = os.pread(self._fd, length + LOG_OVERHEAD, valid)
            try:
                base, last, _epoch, _ts = _check_entry(raw)
            except InvalidRecordError as exc:
                reason = str(exc)
                break
            if base is None:
                base = last
            floor = checked_last if checked_last is not None else previous_last
            if (floor is not None and base <= floor) or not (self.can_convert_to_relative_offset(base)
                                                             and self.can_convert_to_relative_offset(last)):
                reason = f"batch at position {valid} has offsets {base}-{last} out of order or range"
                break
            checked_last = last
            valid += len(raw)
        truncated = file_end - valid
        if truncated:
            # Index entries past the cut go too: the one at `position` if its batch was bad.
            cut = checked_last + 1 if checked_last is not None else (entry.offset if valid == position > 0
                                                                      else self.base_offset)
            self.offset_index.truncate_to(cut)
            self.time_index.truncate_to(cut)
            self.txn_index.truncate_to(cut)
            os.ftruncate(self._fd, valid)
            self._size = valid
            if self._max_timestamp >= 0:
                self._load_largest_timestamp()
        return RecoveryResult(truncated, 0, reason)

    # ---------------------------------------------------------------- truncation
    def _load_largest_timestamp(self) -> None:
        last = self.time_index.last_entry
        self._max_timestamp, self._offset_of_max_timestamp = last.timestamp, last.offset
        position = self.offset_index.lookup(last.offset).position
        for batch in self.batches_from(position):
            if batch.max_timestamp > self._max_timestamp:
                self._max_timestamp, self._offset_of_max_timestamp = batch.max_timestamp, batch.last_offset

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Drop the batch holding `offset` and everything after it; returns bytes removed.

        The cut is at the start of that batch, so the segment always ends on a batch
        boundary; the caller reads the new end offset with read_next_offset.
        """
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.resize_indexes(self.max_index_size)
        removed = 0
        if mapping is not None:
            removed = self._size - mapping.position
            os.ftruncate(self._fd, mapping.position)
            self._size = mapping.position
        if self._size == 0:
            self.created_ms = now_ms
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        if self._max_timestamp >= 0:
            self._load_largest_timestamp()
        return removed

    # ---------------------------------------------------------------- lifecycle
    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def dup_fds(self) -> list[int]:
        """Duplicates of the descriptors (log, indexes, the txn index if any), for fsyncs on another thread."""
        fds = [os.dup(self._fd), self.offset_index.dup_fd(), self.time_index.dup_fd()]
        txn = self.txn_index.dup_fd()
        if txn is not None:
            fds.append(txn)
        return fds

    def close(self) -> None:
        if self.closed:
            return
        if self._max_timestamp >= 0:
            try:
                self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp,
                                             skip_full_check=True)
            except CorruptIndexError:
                pass
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        os.close(self._fd)
        self.closed = True

    def close_without_trim(self) -> None:
        if self.closed:
            return
        self.offset_index.close(trim=False)
        self.time_index.close(trim=False)
        self.txn_index.close()
        os.close(self._fd)
        self.closed = True

    def paths(self) -> list[str]:
        """The segment's files; the `.txnindex` is among them only once an abort created it."""
        paths = [self.log_path, self.offset_index.path, self.time_index.path]
        if os.path.exists(self.txn_index.path):
            paths.append(self.txn_index.path)
        return paths

    def rename_with_suffix(self, suffix: str) -> None:
        """Rename all three files (e.g. to `.deleted`); the open descriptors stay usable."""
        new_log = self.log_path + suffix
        os.rename(self.log_path, new_log)
        self.log_path = new_log
        self.offset_index.rename(self.offset_index.path + suffix)
        self.time_index.rename(self.time_index.path + suffix)
        self.txn_index.rename(self.txn_index.path + suffix)

    def delete_files(self) -> None:
        """Close and unlink; missing files are fine (an earlier delete got them)."""
        self.close_without_trim()
        for path in self.paths() + [self.txn_index.path]:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
