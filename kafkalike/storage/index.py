"""The sparse offset and time indexes of a segment, memory-mapped like Kafka's.

Both files are preallocated to segment.index.bytes while their segment is active, so
appending an entry is a store into the mapping, not a system call. When the segment
rolls or closes they are trimmed to their entries. After a crash the active index is
still full length with zeros after the last entry; the entry count is recovered by
finding the first all-zero entry (no valid entry is all zeros: see `_count_entries`).

The files carry no checksum: `sanity_check` catches structural damage and the log
rebuilds the index from the segment when it fails.
"""
from __future__ import annotations

import mmap
import operator
import os
import struct
import sys
from array import array
from typing import NamedTuple

from kafkalike.storage.errors import CorruptIndexError

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_INT = struct.Struct(">i")
_INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


def _strictly_increasing(values) -> bool:
    return all(map(operator.lt, values, values[1:]))


def _non_decreasing(values) -> bool:
    return all(map(operator.le, values, values[1:]))


class _Index:
    """File, mapping and entry count shared by both index kinds.

    No descriptor is kept open: the mapping holds its own, and the few operations that
    need one (resize, fsync) open the file for the moment. Keeping ours as well cost two
    descriptors per index, five per segment with the log, where Kafka keeps one; 10,000
    partitions then hit a 20,000 open-files limit.
    """

    entry_size = 0

    def __init__(self, path: str, base_offset: int, max_index_size: int):
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        newly_created = not os.path.exists(path)
        self.closed = False
        self._mm: mmap.mmap | None = None
        self._length = 0
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            length = os.fstat(fd).st_size
            self._misaligned = length % self.entry_size != 0
            if newly_created:
                length = self._round(max_index_size)
                os.ftruncate(fd, length)
            self._map(fd, length)
        finally:
            os.close(fd)
        # A file just made is all zeros: counting would touch pages of a sparse file for nothing.
        self.entries = 0 if newly_created else self._count_entries()
        self._entries_changed()

    # ------------------------------------------------------------- mapping
    def _round(self, size: int) -> int:
        return size - size % self.entry_size

    def _map(self, fd: int, length: int) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        self._length = length
        self.max_entries = length // self.entry_size
        if length > 0:
            self._mm = mmap.mmap(fd, length)

    def _set_length(self, *lengths: int) -> None:
        """Unmap, ftruncate to each length in turn, map the last."""
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        fd = os.open(self.path, os.O_RDWR)
        try:
            for length in lengths:
                os.ftruncate(fd, length)
            self._map(fd, lengths[-1])
        finally:
            os.close(fd)

    def _entries_changed(self) -> None:
        """Refresh what subclasses cache about the last entry (kept off the mapping for speed)."""

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    @property
    def file_length(self) -> int:
        return self._length

    def _count_entries(self) -> int:
        """Entries before the first all-zero one; valid entries are never all zeros.

        An offset index entry maps a batch's last offset to its position; the first batch of
        a segment (relative offset 0, position 0) never gets one. A time index entry with
        timestamp 0 at relative offset 0 would be legal but loses nothing if dropped.
        Entries are written in order, so binary search finds the boundary.
        """
        n = self._length // self.entry_size
        mm = self._mm
        if mm is None or n == 0:
            return 0
        es = self.entry_size
        zero = bytes(es)
        if mm[(n - 1) * es:n * es] != zero:
            return n
        lo, hi = 0, n - 1  # the answer is in [lo, hi]; entry hi is zero
        while lo < hi:
            mid = (lo + hi) // 2
            if mm[mid * es:(mid + 1) * es] == zero:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def resize(self, new_size: int) -> None:
        """Set the file length (rounded to whole entries), keeping the entries that fit."""
        length = self._round(new_size)
        if length == self._length:
            return
        self._set_length(length)
        self.entries = min(self.entries, self.max_entries)
        self._entries_changed()

    def trim_to_valid_size(self) -> None:
        self.resize(self.entries * self.entry_size)

    def truncate_to_entries(self, count: int) -> None:
        """Keep `count` entries; the rest are zeroed so a crash cannot resurrect them."""
        count = max(0, min(count, self.entries))
        if count < self.entries and self._mm is not None:
            start, end = count * self.entry_size, self.entries * self.entry_size
            self._mm[start:end] = bytes(end - start)
        self.entries = count
        self._entries_changed()

    def reset(self) -> None:
        """Drop every entry and preallocate a fresh, all-zero file (recovery rebuilds it)."""
        self._set_length(0, self._round(self.max_index_size))
        self.entries = 0
        self._misaligned = False
        self._entries_changed()

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def flush(self) -> None:
        fd = self.dup_fd()
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def dup_fd(self) -> int:
        """A descriptor of the file for an fsync (on Linux it writes back the pages dirtied
        through the mapping too); the caller closes it."""
        return os.open(self.path, os.O_RDWR)

    def close(self, trim: bool = True) -> None:
        if self.closed:
            return
        if trim:
            self.trim_to_valid_size()
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        self.closed = True

    def rename(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def delete(self) -> None:
        self.close(trim=False)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def _raw_entries(self) -> array:
        """All entries as big-endian int32 words converted to native order."""
        words = array("i")
        if self._mm is not None and self.entries:
            words.frombytes(self._mm[:self.entries * self.entry_size])
            if sys.byteorder == "little":
                words.byteswap()
        return words


class OffsetIndex(_Index):
    """Relative offset (int32) -> file position (int32), 8 bytes an entry."""

    entry_size = 8

    def entry(self, n: int) -> OffsetPosition:
        rel, pos = _OFFSET_ENTRY.unpack_from(self._mm, n * 8)
        return OffsetPosition(self.base_offset + rel, pos)

    last_offset = 0
    _last_position = 0

    def _entries_changed(self) -> None:
        last = self.entry(self.entries - 1) if self.entries else OffsetPosition(self.base_offset, 0)
        self.last_offset, self._last_position = last

    @property
    def last_entry(self) -> OffsetPosition:
        return OffsetPosition(self.last_offset, self._last_position)

    def append(self, offset: int, position: int) -> None:
        entries = self.entries
        if entries >= self.max_entries:
            raise CorruptIndexError(f"attempt to append to a full index {self.path}")
        if entries and offset <= self.last_offset:
            raise CorruptIndexError(
                f"attempt to append offset {offset} to {self.path}, not larger than the last "
                f"offset {self.last_offset}")
        _OFFSET_ENTRY.pack_into(self._mm, entries * 8, offset - self.base_offset, position)
        self.entries = entries + 1
        self.last_offset = offset
        self._last_position = position

    def _slot_for_offset(self, target: int) -> int:
        """Index of the greatest entry with offset <= target, or -1."""
        rel = target - self.base_offset
        mm, unpack = self._mm, _OFFSET_ENTRY.unpack_from
        lo, hi = 0, self.entries - 1
        if hi < 0 or unpack(mm, 0)[0] > rel:
            return -1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if unpack(mm, mid * 8)[0] <= rel:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def lookup(self, target: int) -> OffsetPosition:
        """Greatest (offset, position) with offset <= target; (base, 0) if none."""
        slot = self._slot_for_offset(target)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def lookup_position(self, position: int) -> OffsetPosition:
        """Greatest entry whose position <= `position`; (base, 0) if none."""
        mm, unpack = self._mm, _INT.unpack_from
        lo, hi = 0, self.entries - 1
        if hi < 0 or unpack(mm, 4)[0] > position:
            return OffsetPosition(self.base_offset, 0)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if unpack(mm, mid * 8 + 4)[0] <= position:
                lo = mid
            else:
                hi = mid - 1
        return self.entry(lo)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry for an offset >= `offset`."""
        slot = self._slot_for_offset(offset)
        if slot < 0:
            self.truncate_to_entries(0)
        elif self.entry(slot).offset == offset:
            self.truncate_to_entries(slot)
        else:
            self.truncate_to_entries(slot + 1)

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndexError unless entries increase and point inside the log."""
        if self._misaligned:
            raise CorruptIndexError(f"index file {self.path} has a size that is not a multiple of 8")
        words = self._raw_entries()
        offsets, positions = words[0::2], words[1::2]
        if offsets and offsets[0] < 0:
            raise CorruptIndexError(f"index file {self.path} has a negative relative offset")
        if not _strictly_increasing(offsets):
            raise CorruptIndexError(f"index file {self.path} has offsets out of order")
        if not _strictly_increasing(positions):
            raise CorruptIndexError(f"index file {self.path} has positions out of order")
        if positions and (positions[0] < 0 or positions[-1] >= log_size):
            raise CorruptIndexError(
                f"index file {self.path} points at position {positions[-1]} past the log end {log_size}")


class TimeIndex(_Index):
    """Timestamp (int64) -> relative offset (int32), 12 bytes an entry.

    An entry (t, o) says: the largest timestamp in the segment up to offset o is t.
    One slot is held back so rolling or closing can always add the final entry.
    """

    entry_size = 12

    def entry(self, n: int) -> TimestampOffset:
        ts, rel = _TIME_ENTRY.unpack_from(self._mm, n * 12)
        return TimestampOffset(ts, self.base_offset + rel)

    last_entry = TimestampOffset(NO_TIMESTAMP, 0)

    def _entries_changed(self) -> None:
        self.last_entry = (self.entry(self.entries - 1) if self.entries
                           else TimestampOffset(NO_TIMESTAMP, self.base_offset))

    def is_full(self) -> bool:
        return self.entries >= self.max_entries - 1

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's."""
        if not skip_full_check and self.entries >= self.max_entries - 1:
            raise CorruptIndexError(f"attempt to append to a full time index {self.path}")
        last = self.last_entry
        if self.entries and offset < last.offset:
            raise CorruptIndexError(
                f"attempt to append offset {offset} to {self.path}, smaller than {last.offset}")
        if self.entries and timestamp < last.timestamp:
            raise CorruptIndexError(
                f"attempt to append timestamp {timestamp} to {self.path}, smaller than "
                f"{last.timestamp}")
        if timestamp > last.timestamp:
            if self.entries >= self.max_entries:
                self.resize((self.entries + 1) * 12)  # only ever on the final entry at roll/close
            _TIME_ENTRY.pack_into(self._mm, self.entries * 12, timestamp, offset - self.base_offset)
            self.entries += 1
            self.last_entry = TimestampOffset(timestamp, offset)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Greatest entry with timestamp <= target; (-1, base) if none."""
        mm, unpack = self._mm, _TIME_ENTRY.unpack_from
        lo, hi = 0, self.entries - 1
        if hi < 0 or unpack(mm, 0)[0] > target_timestamp:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if unpack(mm, mid * 12)[0] <= target_timestamp:
                lo = mid
            else:
                hi = mid - 1
        return self.entry(lo)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= `offset`."""
        rel = offset - self.base_offset
        mm, unpack = self._mm, _TIME_ENTRY.unpack_from
        lo, hi = 0, self.entries  # first entry whose offset >= target
        while lo < hi:
            mid = (lo + hi) // 2
            if unpack(mm, mid * 12)[1] < rel:
                lo = mid + 1
            else:
                hi = mid
        self.truncate_to_entries(lo)

    def sanity_check(self, upper_offset: int) -> None:
        """Raise CorruptIndexError unless timestamps rise and offsets stay below `upper_offset`."""
        if self._misaligned:
            raise CorruptIndexError(f"time index file {self.path} has a size not a multiple of 12")
        if not self.entries:
            return
        entries = list(_TIME_ENTRY.iter_unpack(self._mm[:self.entries * 12]))
        timestamps = [e[0] for e in entries]
        offsets = [e[1] for e in entries]
        if offsets[0] < 0 or not _non_decreasing(offsets):
            raise CorruptIndexError(f"time index file {self.path} has offsets out of order")
        if not _strictly_increasing(timestamps):
            raise CorruptIndexError(f"time index file {self.path} has timestamps out of order")
        if self.base_offset + offsets[-1] >= upper_offset:
            raise CorruptIndexError(
                f"time index file {self.path} points at offset {self.base_offset + offsets[-1]} "
                f"at or past the segment end {upper_offset}")
