"""Offset and time index files: entry formats, lookups, truncation and reopening."""
from __future__ import annotations

import os
import struct

import pytest

from kafkalike.storage.errors import CorruptIndexError
from kafkalike.storage.index import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset


def test_offset_index_entries_are_relative_offset_and_position_big_endian(shm_path):
    path = str(shm_path / "00000000000000001000.index")
    index = OffsetIndex(path, 1000, 80)
    assert os.path.getsize(path) == 80  # preallocated while active
    index.append(1003, 0x120)
    index.append(1010, 0x4000)
    index.close()
    raw = open(path, "rb").read()
    assert raw == struct.pack(">iiii", 3, 0x120, 10, 0x4000)  # trimmed to the entries on close


def test_offset_index_lookup_finds_the_greatest_entry_at_or_below(shm_path):
    index = OffsetIndex(str(shm_path / "x.index"), 100, 1024)
    for offset, position in [(105, 500), (110, 1000), (120, 2000)]:
        index.append(offset, position)
    assert index.lookup(99) == OffsetPosition(100, 0)
    assert index.lookup(104) == OffsetPosition(100, 0)
    assert index.lookup(105) == OffsetPosition(105, 500)
    assert index.lookup(119) == OffsetPosition(110, 1000)
    assert index.lookup(10_000) == OffsetPosition(120, 2000)
    assert index.lookup_position(1999) == OffsetPosition(110, 1000)
    with pytest.raises(CorruptIndexError):
        index.append(120, 3000)


def test_reopening_a_preallocated_index_counts_entries_up_to_the_zeros(shm_path):
    path = str(shm_path / "x.index")
    index = OffsetIndex(path, 0, 8 * 1000)
    for i in range(1, 38):
        index.append(i * 2, i * 100)
    index.close(trim=False)  # as a crash leaves it
    assert os.path.getsize(path) == 8000
    again = OffsetIndex(path, 0, 8 * 1000)
    assert again.entries == 37
    assert again.last_entry == OffsetPosition(74, 3700)
    again.sanity_check(log_size=3701)
    with pytest.raises(CorruptIndexError):
        again.sanity_check(log_size=3700)


def test_truncation_removes_entries_and_zeroes_them(shm_path):
    path = str(shm_path / "x.index")
    index = OffsetIndex(path, 0, 800)
    for i in range(1, 11):
        index.append(i * 10, i * 100)
    index.truncate_to(55)
    assert index.entries == 5 and index.last_entry == OffsetPosition(50, 500)
    index.truncate_to(50)
    assert index.entries == 4
    index.close(trim=False)
    assert OffsetIndex(path, 0, 800).entries == 4  # the removed entries cannot come back


def test_sanity_check_rejects_misaligned_and_unordered_files(shm_path):
    path = str(shm_path / "x.index")
    open(path, "wb").write(struct.pack(">iiii", 5, 100, 3, 200))
    with pytest.raises(CorruptIndexError, match="offsets out of order"):
        OffsetIndex(path, 0, 800).sanity_check(10_000)
    open(path, "wb").write(struct.pack(">ii", 5, 100) + b"\x01")
    with pytest.raises(CorruptIndexError, match="multiple of 8"):
        OffsetIndex(path, 0, 800).sanity_check(10_000)


def test_time_index_entries_and_lookups(shm_path):
    path = str(shm_path / "00000000000000000050.timeindex")
    index = TimeIndex(path, 50, 12 * 10)
    assert index.last_entry == TimestampOffset(-1, 50)
    index.maybe_append(1000, 52)
    index.maybe_append(1000, 53)  # not larger: ignored
    index.maybe_append(2000, 60)
    assert index.entries == 2
    assert index.lookup(999) == TimestampOffset(-1, 50)
    assert index.lookup(1500) == TimestampOffset(1000, 52)
    assert index.lookup(5000) == TimestampOffset(2000, 60)
    with pytest.raises(CorruptIndexError):
        index.maybe_append(3000, 55)  # offsets may not go back
    index.close()
    assert open(path, "rb").read() == struct.pack(">qiqi", 1000, 2, 2000, 10)


def test_time_index_keeps_a_slot_for_the_final_entry(shm_path):
    index = TimeIndex(str(shm_path / "x.timeindex"), 0, 36)  # room for three entries
    index.maybe_append(10, 1)
    index.maybe_append(20, 2)
    assert index.is_full()
    with pytest.raises(CorruptIndexError):
        index.maybe_append(30, 3)
    index.maybe_append(30, 3, skip_full_check=True)  # what rolling a segment does
    assert index.entries == 3


def test_time_index_truncation_and_sanity(shm_path):
    index = TimeIndex(str(shm_path / "x.timeindex"), 0, 120)
    for i in range(1, 6):
        index.maybe_append(i * 100, i * 10)
    index.truncate_to(30)
    assert index.last_entry == TimestampOffset(200, 20)
    index.sanity_check(upper_offset=21)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(upper_offset=20)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_an_index_keeps_only_its_mappings_descriptor_through_resize_reset_and_flush(shm_path):
    """Two descriptors per index (ours and the mapping's) made a segment cost five; a
    broker with 10,000 partitions ran out under a 20,000 open-files limit."""
    before = open_descriptors()
    indexes = [OffsetIndex(str(shm_path / f"{i}.index"), 0, 8 * 100) for i in range(10)]
    assert open_descriptors() - before == 10
    first = indexes[0]
    first.append(5, 100)
    first.flush()
    first.trim_to_valid_size()
    assert os.path.getsize(first.path) == 8 and first.lookup(9) == OffsetPosition(5, 100)
    first.resize(8 * 50)
    first.append(7, 200)
    fd = first.dup_fd()
    os.close(fd)
    assert open_descriptors() - before == 10
    first.reset()
    assert first.entries == 0 and os.path.getsize(first.path) == 8 * 100
    for index in indexes:
        index.close()
    assert open_descriptors() == before
