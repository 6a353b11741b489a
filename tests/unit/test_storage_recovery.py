"""Loading and crash recovery: what survives a torn or damaged log is always an exact prefix.

A "crash" here is what kill -9 leaves: segment files as written, active indexes still
preallocated, no clean-shutdown marker, and a recovery point from the last flush.
"""
from __future__ import annotations

import logging
import os
import random
import shutil
import struct
from dataclasses import dataclass

import pytest

from kafkalike.records.header import iter_batch_headers
from kafkalike.storage import layout
from kafkalike.storage.config import LogConfig
from kafkalike.storage.log import Log
from tests.unit.test_storage_batches import BASE_TIMESTAMP, make_batch

CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=700)
NOW = BASE_TIMESTAMP + 10_000


@dataclass(frozen=True)
class Written:
    segment: int      # base offset of the segment file holding it
    position: int
    raw: bytes
    base_offset: int
    next_offset: int
    epoch: int


def read_everything(log: Log) -> list[bytes]:
    """Every batch in the log, in order, via Log.read (one segment at a time)."""
    out: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30)
        assert data, f"no data at {offset} below the log end {log.log_end_offset}"
        for position, header in iter_batch_headers(data):
            out.append(bytes(data[position:position + header.size]))
            offset = header.next_offset
    return out


def crash(log: Log) -> None:
    """Leave the files as a kill -9 would: nothing trimmed, nothing flushed, no marker."""
    for segment in log.segments:
        segment.close_without_trim()
    log.closed = True


def written_batches(log: Log) -> list[Written]:
    out = []
    for segment in log.segments:
        data = segment.read_bytes(0, segment.size)
        for position, h in iter_batch_headers(data):
            out.append(Written(segment.base_offset, position, bytes(data[position:position + h.size]),
                               h.base_offset, h.next_offset, h.partition_leader_epoch))
    return out


@pytest.fixture
def pristine(shm_path):
    """A crashed log of ~90 batches in several segments over four leader epochs."""
    rng = random.Random(7)
    source = os.path.join(shm_path, "pristine", "orders-3")
    log = Log(source, CONFIG, clock=lambda: NOW)
    for i in range(90):
        values = [bytes([97 + i % 26]) * rng.randrange(20, 400) for _ in range(rng.randrange(1, 4))]
        ts = BASE_TIMESTAMP + 10 * i
        log.append(make_batch(values, timestamps=[ts + j for j in range(len(values))]),
                   leader_epoch=i // 25, now_ms=NOW)
    batches = written_batches(log)
    assert len(log.segments) >= 5
    crash(log)
    return source, batches


def reopen(source: str, work: str, *, clean: bool = False, recovery_point: int = 0,
           log_start_offset: int = 0) -> Log:
    target = os.path.join(work, os.path.basename(source))
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, target)
    return Log(target, CONFIG, clock=lambda: NOW, had_clean_shutdown=clean,
               recovery_point=recovery_point, log_start_offset=log_start_offset)


def assert_exact_prefix(log: Log, batches: list[Written], count: int) -> None:
    assert read_everything(log) == [b.raw for b in batches[:count]]
    expected_end = batches[count - 1].next_offset if count else 0
    assert log.log_end_offset == expected_end
    epochs = sorted({b.epoch for b in batches[:count]})
    assert [e.epoch for e in log.leader_epoch_cache.entries()] == epochs
    # The log keeps working where the prefix ends, and a clean reopen needs no recovery.
    info = log.append(make_batch([b"after"]), leader_epoch=9, now_ms=NOW)
    assert info.first_offset == expected_end
    log.close()
    again = Log(log.dir, CONFIG, clock=lambda: NOW, had_clean_shutdown=True)
    assert again.recovery_stats.recovered_segments == 0
    assert again.recovery_stats.rebuilt_index_segments == 0
    assert read_everything(again)[-1].endswith(b"after\x00")  # value, then 0 headers
    assert again.log_end_offset == expected_end + 1
    again.close()


def survivors_before(batches: list[Written], segment: int, position: int) -> int:
    """How many batches lie wholly before `position` of segment `segment` (and earlier segments)."""
    return sum(1 for b in batches if b.segment < segment
               or (b.segment == segment and b.position + len(b.raw) <= position))


def test_unclean_reopen_of_an_intact_log_keeps_everything(pristine, shm_path):
    source, batches = pristine
    log = reopen(source, os.path.join(shm_path, "t"))
    assert log.recovery_stats.recovered_segments == len({b.segment for b in batches})
    assert log.recovery_stats.truncated_bytes == 0
    assert_exact_prefix(log, batches, len(batches))


def test_torn_last_segment_at_100_random_positions_leaves_an_exact_prefix(pristine, shm_path):
    source, batches = pristine
    last = max(b.segment for b in batches)
    path = layout.log_file_path(source, last)
    size = os.path.getsize(path)
    rng = random.Random(2026)
    positions = sorted({0, size - 1} | {rng.randrange(size) for _ in range(100)})
    pristine_bytes = open(path, "rb").read()
    for position in positions:
        with open(path, "wb") as handle:
            handle.write(pristine_bytes[:position])
        log = reopen(source, os.path.join(shm_path, "t"))
        assert_exact_prefix(log, batches, survivors_before(batches, last, position))
    with open(path, "wb") as handle:
        handle.write(pristine_bytes)


def test_torn_middle_segment_drops_every_later_segment(pristine, shm_path):
    source, batches = pristine
    middle = sorted({b.segment for b in batches})[2]
    path = layout.log_file_path(source, middle)
    os.truncate(path, os.path.getsize(path) - 7)
    log = reopen(source, os.path.join(shm_path, "t"))
    assert [s.base_offset for s in log.segments][-1] == middle
    assert log.recovery_stats.deleted_segments > 0
    assert_exact_prefix(log, batches, survivors_before(batches, middle, os.path.getsize(path)))


def test_flipped_bytes_at_100_random_positions_never_survive(pristine, shm_path):
    """A damaged batch and everything after it go. partitionLeaderEpoch is outside the
    CRC: a damaged epoch is caught against leader-epoch-checkpoint, except in the very
    last batch when it becomes an epoch newer than any checkpointed one, which is what a
    crash between the append and the checkpoint write legitimately leaves."""
    source, batches = pristine
    last = max(b.segment for b in batches)
    in_last = [b for b in batches if b.segment == last]
    latest_epoch = max(b.epoch for b in batches)
    path = layout.log_file_path(source, last)
    pristine_bytes = open(path, "rb").read()
    rng = random.Random(99)
    outcomes = {"cut": 0, "kept": 0}
    for _ in range(100):
        position = rng.randrange(len(pristine_bytes))
        damaged = bytearray(pristine_bytes)
        damaged[position] ^= rng.randrange(1, 256)
        with open(path, "wb") as handle:
            handle.write(damaged)
        log = reopen(source, os.path.join(shm_path, "t"))
        hit = next(b for b in in_last if b.position <= position < b.position + len(b.raw))
        index = batches.index(hit)
        within = position - hit.position
        new_epoch = struct.unpack_from(">i", damaged, hit.position + 12)[0]
        if 12 <= within < 16 and hit is batches[-1] and new_epoch > latest_epoch:
            outcomes["kept"] += 1
            stored = read_everything(log)
            assert stored[:-1] == [b.raw for b in batches[:-1]]
            assert stored[-1] == bytes(damaged[hit.position:hit.position + len(hit.raw)])
            log.close()
        else:
            outcomes["cut"] += 1
            assert log.recovery_stats.truncated_bytes == len(pristine_bytes) - hit.position
            assert_exact_prefix(log, batches, index)
    assert outcomes["cut"] > 90
    with open(path, "wb") as handle:
        handle.write(pristine_bytes)


@pytest.mark.parametrize("field, offset_in_batch", [("baseOffset", 7), ("epoch", 15), ("crc", 18),
                                                     ("length", 11), ("magic", 16), ("records", 70)])
def test_each_header_field_of_a_middle_batch_is_checked(pristine, shm_path, field, offset_in_batch):
    source, batches = pristine
    last = max(b.segment for b in batches)
    victim = [b for b in batches if b.segment == last][1]
    path = layout.log_file_path(source, last)
    pristine_bytes = open(path, "rb").read()
    damaged = bytearray(pristine_bytes)
    damaged[victim.position + offset_in_batch] ^= 0x01
    with open(path, "wb") as handle:
        handle.write(damaged)
    log = reopen(source, os.path.join(shm_path, "t"))
    assert_exact_prefix(log, batches, batches.index(victim))
    with open(path, "wb") as handle:
        handle.write(pristine_bytes)


def test_an_epoch_newer_than_the_checkpoint_followed_by_older_data_is_cut_where_it_starts(
        pristine, shm_path):
    source, batches = pristine
    last = max(b.segment for b in batches)
    victim = [b for b in batches if b.segment == last][0]
    path = layout.log_file_path(source, last)
    pristine_bytes = open(path, "rb").read()
    damaged = bytearray(pristine_bytes)
    struct.pack_into(">i", damaged, victim.position + 12, 77)
    with open(path, "wb") as handle:
        handle.write(damaged)
    log = reopen(source, os.path.join(shm_path, "t"))
    assert_exact_prefix(log, batches, batches.index(victim))
    with open(path, "wb") as handle:
        handle.write(pristine_bytes)


def test_recovery_starts_at_the_recovery_point_segment(pristine, shm_path, caplog):
    source, batches = pristine
    segments = sorted({b.segment for b in batches})
    point = segments[3] + 1
    with caplog.at_level(logging.INFO, logger="kafkalike.storage.recovery"):
        log = reopen(source, os.path.join(shm_path, "t"), recovery_point=point)
    assert log.recovery_stats.recovered_segments == len(segments) - 3
    recovered = [r.getMessage() for r in caplog.records if "Recovering unflushed segment" in r.getMessage()]
    assert len(recovered) == len(segments) - 3
    assert log.recovery_point == point
    assert_exact_prefix(log, batches, len(batches))


def test_clean_shutdown_reopen_does_not_rescan(pristine, shm_path, caplog):
    source, batches = pristine
    log = reopen(source, os.path.join(shm_path, "t"))
    log.close()
    with caplog.at_level(logging.INFO, logger="kafkalike.storage.recovery"):
        again = Log(log.dir, CONFIG, clock=lambda: NOW, had_clean_shutdown=True)
    assert again.recovery_stats.recovered_segments == 0
    assert not any("Recovering" in r.getMessage() for r in caplog.records)
    assert again.recovery_point == again.log_end_offset == batches[-1].next_offset
    assert read_everything(again) == [b.raw for b in batches]


@pytest.fixture
def cleanly_closed(pristine, shm_path):
    source, batches = pristine
    log = reopen(source, os.path.join(shm_path, "clean"))
    log.close()
    return log.dir, batches


def _index_files(directory: str) -> dict[str, bytes]:
    return {n: open(os.path.join(directory, n), "rb").read() for n in sorted(os.listdir(directory))
            if n.endswith(".index") or n.endswith(".timeindex")}


def _corrupt_offset_index(path: str, how: str) -> None:
    raw = bytearray(open(path, "rb").read())
    assert len(raw) >= 16, "the test needs a segment with two index entries"
    if how == "missing":
        os.unlink(path)
        return
    if how == "size":
        raw += b"\x01\x02\x03"
    elif how == "order":
        raw[0:8], raw[8:16] = raw[8:16], raw[0:8]
    elif how == "past-end":
        struct.pack_into(">i", raw, len(raw) - 4, 1 << 30)
    with open(path, "wb") as handle:
        handle.write(raw)


@pytest.mark.parametrize("how", ["missing", "size", "order", "past-end"])
def test_a_bad_offset_index_is_rebuilt_even_after_a_clean_shutdown(cleanly_closed, how):
    directory, batches = cleanly_closed
    original = _index_files(directory)
    victim = sorted({b.segment for b in batches})[1]
    _corrupt_offset_index(layout.offset_index_path(directory, victim), how)
    log = Log(directory, CONFIG, clock=lambda: NOW, had_clean_shutdown=True)
    assert log.recovery_stats.rebuilt_index_segments == 1
    assert log.recovery_stats.recovered_segments == 0
    for b in batches[::7]:  # lookups through the rebuilt index land on the right batch
        data = log.read(b.base_offset, 1)
        assert data == b.raw
    log.close()
    assert _index_files(directory) == original


def test_a_bad_time_index_is_rebuilt(cleanly_closed):
    directory, batches = cleanly_closed
    original = _index_files(directory)
    victim = sorted({b.segment for b in batches})[2]
    path = layout.time_index_path(directory, victim)
    raw = bytearray(open(path, "rb").read())
    struct.pack_into(">q", raw, 0, 1 << 60)  # first timestamp now larger than the next
    open(path, "wb").write(raw)
    log = Log(directory, CONFIG, clock=lambda: NOW, had_clean_shutdown=True)
    assert log.recovery_stats.rebuilt_index_segments == 1
    target = batches[40]
    first_ts = BASE_TIMESTAMP + 10 * 40
    assert log.fetch_offset_by_timestamp(first_ts).offset == target.base_offset
    log.close()
    assert _index_files(directory) == original


def test_leftover_deleted_cleaned_swap_index_and_orphan_files_are_removed(cleanly_closed):
    directory, batches = cleanly_closed
    strays = ["00000000000000000003.log.deleted", "00000000000000000003.index.deleted",
              "00000000000000000005.log.cleaned", "00000000000000000000.index.swap",
              "00000000000000099999.index", "00000000000000099999.timeindex"]
    for name in strays:
        open(os.path.join(directory, name), "wb").write(b"junk")
    log = Log(directory, CONFIG, clock=lambda: NOW, had_clean_shutdown=True)
    assert not any(os.path.exists(os.path.join(directory, n)) for n in strays)
    assert read_everything(log) == [b.raw for b in batches]
    log.close()


def test_a_swap_segment_replaces_the_segments_it_covers(cleanly_closed):
    """A cleaner result committed as `.log.swap` but not yet installed is installed on load."""
    directory, batches = cleanly_closed
    segments = sorted({b.segment for b in batches})
    first, second, third = segments[0], segments[1], segments[2]
    # "Compacted" result covering the first two segments: every other batch survives.
    kept = [b for b in batches if b.segment in (first, second)][::2]
    with open(layout.log_file_path(directory, first, ".swap"), "wb") as handle:
        handle.write(b"".join(b.raw for b in kept))
    compact = LogConfig(segment_bytes=4000, index_interval_bytes=700, cleanup_policy=("compact",))
    log = Log(directory, compact, clock=lambda: NOW, had_clean_shutdown=True)
    assert log.recovery_stats.completed_swaps == 1
    assert [s.base_offset for s in log.segments][:2] == [first, third]
    assert not os.path.exists(layout.log_file_path(directory, second))
    rest = [b.raw for b in batches if b.segment >= third]
    assert read_everything(log) == [b.raw for b in kept] + rest
    log.close()


def test_log_end_before_log_start_empties_the_log(cleanly_closed):
    directory, batches = cleanly_closed
    start = batches[-1].next_offset + 100
    log = Log(directory, CONFIG, clock=lambda: NOW, had_clean_shutdown=True, log_start_offset=start)
    assert [s.base_offset for s in log.segments] == [start]
    assert (log.log_start_offset, log.log_end_offset) == (start, start)
    assert log.recovery_stats.deleted_segments == len({b.segment for b in batches})
    log.close()


def test_an_empty_directory_starts_at_the_log_start_offset(shm_path):
    log = Log(os.path.join(shm_path, "fresh-0"), CONFIG, log_start_offset=42, clock=lambda: NOW)
    assert (log.log_start_offset, log.log_end_offset) == (42, 42)
    assert os.path.exists(layout.log_file_path(log.dir, 42))
    log.close()


def test_a_damaged_epoch_in_the_very_last_batch_reads_as_a_newer_epoch(pristine, shm_path):
    """The one damage recovery cannot tell from a legitimate crash: the last batch
    carries an epoch the checkpoint has not seen yet. It is kept, as Kafka keeps it."""
    source, batches = pristine
    last = batches[-1]
    path = layout.log_file_path(source, last.segment)
    pristine_bytes = open(path, "rb").read()
    damaged = bytearray(pristine_bytes)
    damaged[last.position + 13] ^= 0x01  # epoch 3 -> 65539
    open(path, "wb").write(damaged)
    log = reopen(source, os.path.join(shm_path, "t"))
    assert log.log_end_offset == last.next_offset
    assert log.leader_epoch_cache.latest_epoch == 3 + (1 << 16)
    log.close()
    open(path, "wb").write(pristine_bytes)


def test_rebuilt_indexes_equal_the_ones_appends_wrote(shm_path):
    """Appends index each write, recovery each batch; for one batch a write they agree."""
    directory = os.path.join(shm_path, "same-0")
    log = Log(directory, CONFIG, clock=lambda: NOW)
    rng = random.Random(5)
    for i in range(60):
        log.append(make_batch([b"v" * rng.randrange(50, 600)], timestamps=[BASE_TIMESTAMP + i]),
                   leader_epoch=1, now_ms=NOW)
    log.close()
    written = _index_files(directory)
    for name in written:
        os.unlink(os.path.join(directory, name))
    rebuilt = Log(directory, CONFIG, clock=lambda: NOW, had_clean_shutdown=True)
    assert rebuilt.recovery_stats.rebuilt_index_segments == len(written) // 2
    rebuilt.close()
    assert _index_files(directory) == written


def test_a_torn_active_segment_is_cut_even_after_a_clean_shutdown(cleanly_closed, shm_path, caplog):
    """The bytes a clean shutdown did not vouch for are checked on every start."""
    directory, batches = cleanly_closed
    last = max(b.segment for b in batches)
    path = layout.log_file_path(directory, last)
    whole = open(path, "rb").read()
    tail = [b for b in batches if b.segment == last][-1]
    rng = random.Random(11)
    # Cut inside the last batch, or leave a partial copy of it after the end, or flip a byte of it.
    damaged = [whole[:tail.position + rng.randrange(1, len(tail.raw))] for _ in range(20)]
    damaged += [whole + tail.raw[:rng.randrange(1, len(tail.raw))] for _ in range(10)]
    for _ in range(20):
        flip = bytearray(whole)
        flip[tail.position + rng.randrange(len(tail.raw))] ^= 1 << rng.randrange(8)
        damaged.append(bytes(flip))
    for i, data in enumerate(damaged):
        work = os.path.join(shm_path, f"torn-{i}")
        shutil.copytree(directory, work)
        with open(layout.log_file_path(work, last), "wb") as handle:
            handle.write(data)
        with caplog.at_level(logging.WARNING, logger="kafkalike.storage.recovery"):
            log = Log(work, CONFIG, clock=lambda: NOW, had_clean_shutdown=True)
        assert log.recovery_stats.recovered_segments == 0
        survivors = len(batches) if data.startswith(whole) else len(batches) - 1
        # A flipped bit in the batch's first 12 bytes (offset, length) may leave a batch
        # whose CRC still holds: only its offsets or its length give it away.
        assert_exact_prefix(log, batches, survivors)
        shutil.rmtree(work)
    assert any("corrupt tail" in r.getMessage() and "despite a clean shutdown" in r.getMessage()
               for r in caplog.records)
