"""Log compaction (kafkalike.storage.cleaner): what a consumer reads after cleaning, the
selection rules, batch-level details Kafka preserves, crash safety and concurrency."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kafkalike.records import GZIP, LZ4, NONE, BatchBuilder, decode_batches, encode_batch
from kafkalike.records.control import encode_end_txn_marker_batch
from kafkalike.storage import layout
from kafkalike.storage.cleaner import (
    LogCleaner, _SegmentView, empty_batch, group_segments_by_size,
)
from kafkalike.storage.cleaner_manager import CLEANER_OFFSET_CHECKPOINT_FILE, plan_cleaning
from kafkalike.storage.config import LogConfig
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.log import Log
from kafkalike.storage.manager import LogManager
from kafkalike.storage.validation import AppendOrigin

from tests.conftest import scratch_dir

NOW = 1_700_000_000_000
TP = TopicPartition("compacted", 0)
CONFIG = LogConfig.from_props({
    "cleanup.policy": "compact", "segment.bytes": "1024", "index.interval.bytes": "64",
    "min.cleanable.dirty.ratio": "0", "file.delete.delay.ms": "0"})


@dataclass(frozen=True)
class Rec:
    offset: int
    key: bytes | None
    value: bytes | None


def open_log(root: Path, config: LogConfig = CONFIG, **kwargs) -> Log:
    kwargs.setdefault("clock", lambda: NOW)
    return Log(str(root / str(TP)), config, **kwargs)


def append(log: Log, records, *, compression: int = NONE, ts: int = NOW, **batch_fields) -> list[Rec]:
    """Append one batch of (key, value) pairs; returns them with their offsets."""
    data = encode_batch([(k, v, None, ts) for k, v in records], compression=compression,
                        **batch_fields)
    # A client's keyless record is refused by a compacted log (INVALID_RECORD); such records
    # still reach the cleaner when written before the topic became compacted, so the
    # tests that need them append as a non-client.
    keyless = any(k is None for k, _ in records)
    origin = AppendOrigin.COORDINATOR if batch_fields.get("is_control") or keyless else None
    info = log.append(data, leader_epoch=0, origin=origin)
    return [Rec(info.first_offset + i, k, v) for i, (k, v) in enumerate(records)]


def read_all(log: Log) -> list[Rec]:
    """Every record a consumer fetching from the log start to the end would see."""
    out: list[Rec] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30)
        if not data:  # cleaning removed everything from here to the (empty) active segment
            assert all(h.last_offset < offset for h in headers(log)), f"unreadable data at {offset}"
            break
        for batch in decode_batches(data, allow_partial_tail=False):
            if not batch.is_control:
                out.extend(Rec(r.offset, r.key, r.value) for r in batch.records())
            offset = batch.next_offset
    return out


def headers(log: Log):
    out = []
    for segment in log.segments:
        out.extend(b.header for b in decode_batches(segment.read_bytes(0, segment.size)))
    return out


def settle(log: Log) -> None:
    """Make every appended record cleanable: roll, and let consumers read to the end."""
    log.roll()
    log.update_high_watermark(log.log_end_offset)


def set_mtimes(log: Log, base_s: int = 1_600_000_000, step_s: int = 1) -> dict[int, int]:
    """Give the inactive segments increasing last-modified times; returns base -> mtime (ms)."""
    out = {}
    for i, segment in enumerate(log.segments[:-1]):
        seconds = base_s + i * step_s
        for path in segment.paths():
            os.utime(path, (seconds, seconds))
        out[segment.base_offset] = seconds * 1000
    return out


def temp_files(directory: str) -> list[str]:
    return sorted(n for n in os.listdir(directory)
                  if n.endswith((layout.CLEANED_SUFFIX, layout.SWAP_SUFFIX, layout.DELETED_SUFFIX)))


def expected_after_clean(history: list[Rec], end: int, tombstone_kept: Callable[[int], bool]) -> list[Rec]:
    """What a clean up to `end` must leave: below it only each key's latest record (a
    tombstone only while its segment keeps deletes), from it on everything."""
    latest: dict[bytes, int] = {}
    for rec in history:
        if rec.offset < end:
            latest[rec.key] = rec.offset
    return [rec for rec in history
            if rec.offset >= end
            or (latest[rec.key] == rec.offset and (rec.value is not None or tombstone_kept(rec.offset)))]


def segment_holding(bases: list[int], offset: int) -> int:
    return max(b for b in bases if b <= offset)


# ---------------------------------------------------------------------- the property
KEYS = [b"k%d" % i for i in range(8)]
record_st = st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.binary(min_size=1, max_size=40)))
batch_st = st.tuples(st.lists(record_st, min_size=1, max_size=4), st.sampled_from([NONE, GZIP, LZ4]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(batch_st, min_size=1, max_size=40), second=st.lists(batch_st, max_size=25),
       map_bytes=st.sampled_from([24 * 1024, 24 * 3]), retention_s=st.sampled_from([0, 2, 10**6]),
       settle_first=st.booleans())
def test_a_full_read_after_cleaning_yields_the_latest_value_of_every_key(first, second, map_bytes,
                                                                        retention_s, settle_first):
    root = scratch_dir("cleaner")
    try:
        config = replace(CONFIG, delete_retention_ms=retention_s * 1000)
        log = open_log(root, config)
        history: list[Rec] = []
        for records, codec in first:
            history += append(log, records, compression=codec)
        if settle_first:
            settle(log)
        else:  # the active segment stays dirty; consumers have read everything
            log.update_high_watermark(log.log_end_offset)
        end_before = log.log_end_offset
        set_mtimes(log)
        # A small map (3 keys) makes the first pass stop part way, as a full dedupe buffer does.
        result = LogCleaner([log], clock=lambda: NOW, dedupe_buffer_size=map_bytes,
                            io_buffer_load_factor=1.0).clean_once()
        if len(log.segments) > 1:
            assert result is not None and result.completed
            end1 = result.end_offset
            event("first pass stopped early: map full" if end1 < log.segments[-1].base_offset
                  else "first pass cleaned every inactive segment")
        else:
            assert result is None
            end1 = 0
        # The first pass has no cleaned segment to measure from: it keeps every tombstone.
        assert read_all(log) == expected_after_clean(history, end1, lambda _o: True)
        assert log.log_end_offset == end_before
        offsets = [r.offset for r in read_all(log)]
        assert offsets == sorted(set(offsets))

        for records, codec in second:
            history += append(log, records, compression=codec)
        settle(log)
        mtimes = set_mtimes(log)
        bases = sorted(mtimes)
        cleaned_before = [b for b in bases if b < end1]
        horizon = mtimes[cleaned_before[-1]] - config.delete_retention_ms if cleaned_before else 0
        before = read_all(log)
        cleaner = LogCleaner([log], clock=lambda: NOW)
        cleaner.checkpoints.update(str(root), TP, end1)
        result = cleaner.clean_once()
        if result is None:  # nothing new and nothing dirty left
            assert read_all(log) == before
        else:
            assert result.completed and result.end_offset == log.active_segment.base_offset
            kept = lambda offset: mtimes[segment_holding(bases, offset)] > horizon  # noqa: E731
            assert read_all(log) == expected_after_clean(history, result.end_offset, kept)
            gone = [r for r in before if r.value is None and r not in read_all(log)]
            event("second pass removed a tombstone" if gone else "second pass kept the tombstones")
        end = log.log_end_offset
        assert end == len(history)
        after = read_all(log)
        assert temp_files(log.dir) == []

        [appended] = append(log, [(b"k0", b"after")])
        assert appended.offset == end
        log.close()
        reopened = open_log(root, config, recovery_point=0, had_clean_shutdown=False)
        assert read_all(reopened) == after + [appended]
        assert reopened.recovery_stats.truncated_bytes == 0
        reopened.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------------- record-level rules
def test_records_without_a_key_are_dropped_and_counted(shm_path):
    log = open_log(shm_path)
    append(log, [(None, b"orphan"), (b"a", b"1")])
    append(log, [(b"a", b"2"), (None, b"orphan2")])
    settle(log)
    result = LogCleaner([log], clock=lambda: NOW).clean_once()
    assert result.stats.invalid_messages == 2
    assert read_all(log) == [Rec(2, b"a", b"2")]


def test_records_past_the_end_of_a_full_map_wait_for_the_next_pass(shm_path):
    log = open_log(shm_path)
    append(log, [(b"a", b"1")])
    append(log, [(b"b", b"1")])
    append(log, [(None, b"unkeyed")])
    append(log, [(b"a", b"2")])
    settle(log)
    cleaner = LogCleaner([log], clock=lambda: NOW, dedupe_buffer_size=24, io_buffer_load_factor=1.0)
    result = cleaner.clean_once()  # room for one key: the pass ends after offset 0
    assert result.end_offset == 1 and cleaner.checkpointed_offset(TP) == 1
    assert read_all(log) == [Rec(0, b"a", b"1"), Rec(1, b"b", b"1"), Rec(2, None, b"unkeyed"),
                             Rec(3, b"a", b"2")]


def test_the_active_segment_is_never_cleaned(shm_path):
    log = open_log(shm_path)
    append(log, [(b"a", b"1"), (b"a", b"2")])
    log.roll()
    append(log, [(b"a", b"3"), (b"a", b"4")])  # active
    log.update_high_watermark(log.log_end_offset)
    result = LogCleaner([log], clock=lambda: NOW).clean_once()
    assert result.end_offset == 2
    assert read_all(log) == [Rec(1, b"a", b"2"), Rec(2, b"a", b"3"), Rec(3, b"a", b"4")]


def test_nothing_at_or_above_the_high_watermark_is_cleaned(shm_path):
    log = open_log(shm_path)
    for value in (b"1", b"2", b"3"):
        append(log, [(b"a", value)])
        log.roll()
    log.update_high_watermark(1)  # inside the second segment
    plan = plan_cleaning(log, None, NOW)
    assert plan.first_uncleanable_offset == 1
    LogCleaner([log], clock=lambda: NOW).clean_once()
    assert read_all(log) == [Rec(0, b"a", b"1"), Rec(1, b"a", b"2"), Rec(2, b"a", b"3")]
    log.update_high_watermark(3)
    LogCleaner([log], clock=lambda: NOW).clean_once()
    assert read_all(log) == [Rec(2, b"a", b"3")]


def test_tombstones_go_once_their_segment_is_past_the_delete_horizon(shm_path):
    """The horizon is delete.retention.ms before the newest cleaned segment's last-modified
    time, so a tombstone goes once a cleaned segment that much younger than its own exists."""
    config = replace(CONFIG, delete_retention_ms=10_000)
    log = open_log(shm_path, config)
    big = b"f" * 900  # too big to share a segment: the tombstone's segment stays apart
    append(log, [(b"gone", b"v")])
    append(log, [(b"gone", None)])
    log.roll()
    append(log, [(b"filler", big)])
    settle(log)
    cleaner = LogCleaner([log], clock=lambda: NOW)
    cleaner.clean_once()  # the first pass keeps every tombstone
    assert read_all(log) == [Rec(1, b"gone", None), Rec(2, b"filler", big)]
    append(log, [(b"other", b"x")])
    settle(log)
    set_mtimes(log, step_s=5)  # newest cleaned segment 5 s younger: within delete.retention.ms
    cleaner.clean_once()
    assert read_all(log) == [Rec(1, b"gone", None), Rec(2, b"filler", big), Rec(3, b"other", b"x")]
    append(log, [(b"other", b"y")])
    settle(log)
    set_mtimes(log, step_s=20)  # now 40 s younger: the tombstone goes, with every trace of its key
    cleaner.clean_once()
    assert read_all(log) == [Rec(2, b"filler", big), Rec(4, b"other", b"y")]


def test_a_partly_kept_batch_keeps_its_offsets_codec_and_producer_fields(shm_path):
    log = open_log(shm_path)
    append(log, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")], compression=GZIP, producer_id=9,
           producer_epoch=2, base_sequence=0)
    append(log, [(b"a", b"2")], producer_id=9, producer_epoch=2, base_sequence=3)
    append(log, [(b"c", b"2")])
    settle(log)
    LogCleaner([log], clock=lambda: NOW).clean_once()
    first = headers(log)[0]
    assert (first.base_offset, first.last_offset, first.records_count) == (0, 2, 1)
    assert (first.compression, first.producer_id, first.producer_epoch,
            first.base_sequence) == (GZIP, 9, 2, 0)
    assert read_all(log) == [Rec(1, b"b", b"1"), Rec(3, b"a", b"2"), Rec(4, b"c", b"2")]


def test_a_producers_last_batch_survives_empty_and_its_older_ones_go(shm_path):
    log = open_log(shm_path)
    append(log, [(b"a", b"1")], producer_id=5, producer_epoch=1, base_sequence=0)
    append(log, [(b"a", b"2"), (b"b", b"2")], producer_id=5, producer_epoch=1, base_sequence=1)
    append(log, [(b"a", b"3"), (b"b", b"3")])
    append(log, [(b"z", b"last")])
    settle(log)
    LogCleaner([log], clock=lambda: NOW).clean_once()
    found = [(h.base_offset, h.last_offset, h.records_count, h.producer_id, h.base_sequence)
             for h in headers(log) if h.producer_id == 5]
    assert found == [(1, 2, 0, 5, 1)]
    assert read_all(log) == [Rec(3, b"a", b"3"), Rec(4, b"b", b"3"), Rec(5, b"z", b"last")]


def test_control_batches_are_kept(shm_path):
    log = open_log(shm_path)
    append(log, [(b"a", b"1")])
    marker = encode_end_txn_marker_batch(commit=True, producer_id=3, producer_epoch=0,
                                         coordinator_epoch=1, timestamp=NOW)
    log.append(marker, leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    append(log, [(b"a", b"2")])
    settle(log)
    LogCleaner([log], clock=lambda: NOW).clean_once()
    assert [(h.base_offset, h.is_control) for h in headers(log)] == [(1, True), (2, False)]


def test_empty_batch_is_a_valid_header_with_the_original_range():
    original = decode_batches(encode_batch([(b"k", b"v", None, 5), (b"k", b"w", None, 9)],
                                           base_offset=100, producer_id=4, producer_epoch=3,
                                           base_sequence=7, partition_leader_epoch=2))
    header = next(original).header
    [batch] = list(decode_batches(empty_batch(header)))  # the CRC is checked here
    h = batch.header
    assert (h.base_offset, h.last_offset, h.records_count, h.max_timestamp,
            h.base_timestamp) == (100, 101, 0, 9, -1)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.partition_leader_epoch) == (4, 3, 7, 2)
    assert batch.records() == []


def test_batch_builder_can_end_past_its_last_record():
    builder = BatchBuilder(base_offset=10)
    builder.append(b"k", b"v", timestamp=1, offset_delta=2)
    [batch] = list(decode_batches(builder.build(last_offset_delta=5)))
    assert (batch.base_offset, batch.last_offset, batch.count) == (10, 15, 1)
    assert [r.offset for r in batch.records()] == [12]
    with pytest.raises(ValueError):
        builder.build(last_offset_delta=1)
    [plain] = list(decode_batches(builder.build()))
    assert plain.last_offset == 12


# ---------------------------------------------------------------------- grouping
def view(base: int, size: int, index: int = 0) -> _SegmentView:
    return _SegmentView(None, -1, base, size, index, index, 0)  # type: ignore[arg-type]


def test_segments_are_grouped_while_they_fit_one_segment():
    views = [view(0, 400), view(10, 400), view(20, 300), view(30, 500), view(40, 10)]
    groups = group_segments_by_size(views, 1100, 10_000, 50)
    assert [[v.base_offset for v in g] for g in groups] == [[0, 10, 20], [30, 40]]
    by_index = group_segments_by_size(views, 10_000, 16, 50)
    assert [[v.base_offset for v in g] for g in by_index] == [[0, 10, 20, 30, 40]]
    indexed = [view(0, 1, 8), view(10, 1, 8), view(20, 1, 8)]
    assert len(group_segments_by_size(indexed, 10_000, 16, 50)) == 2
    far = [view(0, 1), view(2**31 - 5, 1), view(2**31 + 10, 1)]
    assert [[v.base_offset for v in g] for g in group_segments_by_size(far, 10_000, 10_000, 2**31 + 20)] \
        == [[0], [2**31 - 5, 2**31 + 10]]


def test_small_cleaned_segments_are_merged_up_to_segment_bytes(shm_path):
    log = open_log(shm_path)
    history = []
    for i in range(60):
        history += append(log, [(b"k%d" % (i % 3), b"x" * 100)])
    settle(log)
    rolled = len(log.segments)
    assert rolled > 8
    cleaner = LogCleaner([log], clock=lambda: NOW)
    cleaner.clean_once()
    # Groups are judged by the old sizes (Kafka's rule), so this pass keeps the segments
    # apart; each now holds little more than one batch.
    assert len(log.segments) == rolled
    append(log, [(b"k0", b"new")])
    settle(log)
    cleaner.clean_once()
    # The eleven near-empty segments became one; what is left is at most that, the
    # segment holding the keys' latest values, and the active one.
    assert len(log.segments) <= 3
    assert all(s.size <= CONFIG.segment_bytes for s in log.segments)
    assert [r.offset for r in read_all(log)] == [58, 59, 60]


# ---------------------------------------------------------------------- selection
def cleaned_log(root: Path, config: LogConfig = CONFIG, keys: int = 10) -> tuple[Log, LogCleaner]:
    log = open_log(root, config)
    for i in range(keys):
        append(log, [(b"k%d" % i, b"v" * 50)])
    settle(log)
    cleaner = LogCleaner([log], clock=lambda: NOW)
    assert cleaner.clean_once().completed
    return log, cleaner


def test_a_log_is_cleaned_only_when_its_dirty_ratio_exceeds_the_minimum(shm_path):
    log, cleaner = cleaned_log(shm_path)
    append(log, [(b"k0", b"new")])
    settle(log)
    plan = plan_cleaning(log, cleaner.checkpointed_offset(TP), NOW)
    assert 0 < plan.cleanable_ratio < 1
    log.update_config(replace(CONFIG, min_cleanable_dirty_ratio=plan.cleanable_ratio))
    assert cleaner.clean_once() is None  # equal is not enough: Kafka compares with >
    log.update_config(replace(CONFIG, min_cleanable_dirty_ratio=plan.cleanable_ratio - 0.01))
    assert cleaner.clean_once().completed


def test_the_dirtiest_log_is_cleaned_first(shm_path):
    (shm_path / "a").mkdir()
    (shm_path / "b").mkdir()
    quiet, _ = cleaned_log(shm_path / "a")
    busy = Log(str(shm_path / "b" / "busy-0"), CONFIG, clock=lambda: NOW)
    for i in range(5):
        append(busy, [(b"same", b"%d" % i)])
    settle(busy)
    append(quiet, [(b"k0", b"new")])
    settle(quiet)
    cleaner = LogCleaner([quiet, busy], clock=lambda: NOW)
    cleaner.checkpoints.update(str(shm_path / "a"), TP, quiet.segments[-2].base_offset)
    assert cleaner.clean_once().topic_partition == TopicPartition("busy", 0)
    assert cleaner.clean_once().topic_partition == TP
    assert cleaner.clean_once() is None


def test_records_younger_than_min_compaction_lag_wait(shm_path):
    config = replace(CONFIG, min_compaction_lag_ms=60_000)
    log = open_log(shm_path, config)
    append(log, [(b"a", b"old")], ts=NOW - 120_000)
    log.roll()
    append(log, [(b"a", b"young")], ts=NOW - 1_000)
    settle(log)
    cleaner = LogCleaner([log], clock=lambda: NOW)
    result = cleaner.clean_once()
    assert result.end_offset == 1  # stopped before the young segment
    assert read_all(log) == [Rec(0, b"a", b"old"), Rec(1, b"a", b"young")]
    later = LogCleaner([log], clock=lambda: NOW + 120_000)
    later.checkpoints.update(str(shm_path), TP, 1)
    later.clean_once()
    assert read_all(log) == [Rec(1, b"a", b"young")]


def test_max_compaction_lag_forces_a_clean_below_the_dirty_ratio(shm_path):
    log, cleaner = cleaned_log(shm_path, replace(CONFIG, min_cleanable_dirty_ratio=0.9), keys=20)
    append(log, [(b"k0", b"new")], ts=NOW - 10_000)
    settle(log)
    assert cleaner.clean_once() is None
    log.update_config(replace(log.config, max_compaction_lag_ms=5_000))
    result = cleaner.clean_once()
    assert result.completed and result.end_offset == log.log_end_offset
    assert [r.key for r in read_all(log)].count(b"k0") == 1


# ---------------------------------------------------------------------- checkpoints
def test_the_cleaner_offset_checkpoint_is_kafkas_root_file(shm_path):
    manager = LogManager([str(shm_path)], CONFIG, clock=lambda: NOW)
    path = shm_path / CLEANER_OFFSET_CHECKPOINT_FILE
    assert path.exists() and path.read_text() == ""
    log = manager.get_or_create_log(TP)
    append(log, [(b"a", b"1")])
    append(log, [(b"a", b"2")])
    settle(log)
    assert manager.cleaner.clean_once().end_offset == 2
    assert path.read_text() == "0\n1\ncompacted 0 2\n"
    manager.shutdown()
    again = LogManager([str(shm_path)], CONFIG, clock=lambda: NOW)
    assert again.cleaner.checkpointed_offset(TP) == 2
    again.delete_log(TP)
    assert path.read_text() == "0\n0\n"
    again.shutdown()


def test_a_truncated_log_is_cleaned_again_from_its_start(shm_path):
    log = open_log(shm_path)
    append(log, [(b"a", b"1")])
    append(log, [(b"b", b"1")])
    settle(log)
    cleaner = LogCleaner([log], clock=lambda: NOW)
    assert cleaner.clean_once().end_offset == 2
    log.truncate_to(1)
    append(log, [(b"a", None)])
    append(log, [(b"c", b"1")])
    settle(log)
    result = cleaner.clean_once()
    assert result.first_dirty_offset == 0
    assert read_all(log) == [Rec(1, b"a", None), Rec(2, b"c", b"1")]


# ---------------------------------------------------------------------- crash safety
class Crash(BaseException):
    """Stops the cleaner where it stands, leaving the files as a crash would."""


def build_dirty_log(root: Path, scheduler=None) -> tuple[Log, list[Rec]]:
    log = open_log(root, scheduler=scheduler)
    history = []
    for i in range(40):
        history += append(log, [(b"k%d" % (i % 5), b"value-%d" % i), (b"u%d" % i, b"x" * 30)])
        if i % 4 == 3:
            history += append(log, [(b"u%d" % (i - 1), None)])
    settle(log)
    return log, history


def reopen_copy(snapshot: Path) -> Log:
    return Log(str(snapshot / str(TP)), CONFIG, clock=lambda: NOW, recovery_point=0,
               had_clean_shutdown=False)


def test_a_crash_at_any_step_recovers_the_old_or_the_new_segments(shm_path):
    pending: list = []
    log, _history = build_dirty_log(shm_path / "live", scheduler=lambda _d, fn: pending.append(fn))
    before = read_all(log)
    bases = [s.base_offset for s in log.segments]
    end = log.log_end_offset
    snapshots: list[tuple[str, int, int, Path]] = []

    def hook(step, item, old):
        first, last = old[0].base_offset, old[-1].base_offset
        committed_to = first if step == "cleaned" else bases[bases.index(last) + 1]
        target = shm_path / f"snap-{len(snapshots)}"
        shutil.copytree(item.dir, target / str(TP))
        snapshots.append((step, first, committed_to, target))

    LogCleaner([log], clock=lambda: NOW, hook=hook).clean_once()
    after = read_all(log)
    assert after != before
    assert {s[0] for s in snapshots} == {"cleaned", "swap", "deleted", "installed"}

    # States between the recorded steps, made from the recorded ones.
    extra = []
    for step, first, committed_to, target in list(snapshots):
        if step == "swap":  # renamed .cleaned -> .swap: the log first, indexes still .cleaned
            copy = shm_path / f"snap-{len(snapshots) + len(extra)}"
            shutil.copytree(target, copy)
            for name in os.listdir(copy / str(TP)):
                if name.endswith((".index.swap", ".timeindex.swap")):
                    os.rename(copy / str(TP) / name, copy / str(TP) / (name[:-5] + ".cleaned"))
            extra.append((step + "/indexes-not-renamed", first, committed_to, copy))
        if step == "deleted":  # .swap -> no suffix: the log renamed, the indexes not yet
            copy = shm_path / f"snap-{len(snapshots) + len(extra)}"
            shutil.copytree(target, copy)
            name = layout.log_file_path(str(copy / str(TP)), first, layout.SWAP_SUFFIX)
            os.rename(name, name[:-5])
            extra.append((step + "/log-renamed", first, committed_to, copy))
        if step == "cleaned":  # torn .cleaned file: never committed
            copy = shm_path / f"snap-{len(snapshots) + len(extra)}"
            shutil.copytree(target, copy)
            cleaned = layout.log_file_path(str(copy / str(TP)), first, layout.CLEANED_SUFFIX)
            os.truncate(cleaned, os.path.getsize(cleaned) // 2)
            extra.append((step + "/torn", first, committed_to, copy))
    for step, first, committed_to, target in snapshots + extra:
        recovered = reopen_copy(target)
        expected = ([r for r in after if r.offset < committed_to]
                    + [r for r in before if r.offset >= committed_to])
        assert read_all(recovered) == expected, step
        assert recovered.log_end_offset == end, step
        assert temp_files(recovered.dir) == [], step
        [appended] = append(recovered, [(b"k0", b"after-crash")])
        assert appended.offset == end
        recovered.close()
    for fn in pending:
        fn()


def test_a_committed_swap_covers_a_last_segment_that_cleaned_away(shm_path):
    """If every batch of a group's last segment is superseded, the group's result still
    ends where that segment did, so a recovered swap replaces it too."""
    log = open_log(shm_path)
    append(log, [(b"a", b"1")])
    log.roll()
    append(log, [(b"a", b"2")])
    log.roll()
    append(log, [(b"filler", b"f" * 900)])  # too big to join the first group
    log.roll()
    append(log, [(b"a", b"3")])
    settle(log)
    snapshots = []

    def hook(step, item, old):
        if step == "swap" and old[0].base_offset == 0:
            shutil.copytree(item.dir, shm_path / "snap" / str(TP))
            snapshots.append(step)

    LogCleaner([log], clock=lambda: NOW, hook=hook).clean_once()
    assert snapshots == ["swap"]
    expected = [Rec(2, b"filler", b"f" * 900), Rec(3, b"a", b"3")]
    assert read_all(log) == expected
    recovered = reopen_copy(shm_path / "snap")
    assert read_all(recovered) == expected
    recovered.close()


def test_a_cleaner_stopped_mid_swap_leaves_a_log_that_reopens_and_cleans(shm_path):
    log, _history = build_dirty_log(shm_path, scheduler=lambda _d, _fn: None)
    before = read_all(log)

    def crash(step, item, old):
        if step == "deleted":
            raise Crash()

    with pytest.raises(Crash):
        LogCleaner([log], clock=lambda: NOW, hook=crash).clean_once()
    for segment in log.segments:
        segment.close_without_trim()
    reopened = open_log(shm_path, recovery_point=0, had_clean_shutdown=False)
    assert reopened.recovery_stats.completed_swaps == 1  # committed: recovery finishes the swap
    reopened.update_high_watermark(reopened.log_end_offset)
    LogCleaner([reopened], clock=lambda: NOW).clean_once()
    final = read_all(reopened)
    latest = {r.key: r for r in before}
    assert final == sorted((r for r in latest.values()), key=lambda r: r.offset)
    assert temp_files(reopened.dir) == []


# ---------------------------------------------------------------------- concurrency
def clean_with(log: Log, action: Callable[[Log], None]):
    """One pass that runs `action` on the log once its first group is written, before the swap."""
    done = []

    def hook(step, item, old):
        if step == "cleaned" and not done:
            done.append(step)
            action(item)

    cleaner = LogCleaner([log], clock=lambda: NOW, hook=hook)
    return cleaner, cleaner.clean_once()


def test_appends_and_rolls_during_cleaning_are_kept(shm_path):
    log = open_log(shm_path)
    for i in range(6):
        append(log, [(b"a", b"%d" % i)])
    settle(log)

    def more(item):
        append(item, [(b"a", b"during")])
        item.roll()
        append(item, [(b"b", b"during")])

    cleaner, result = clean_with(log, more)
    assert result.completed and cleaner.checkpointed_offset(TP) == 6
    assert read_all(log) == [Rec(5, b"a", b"5"), Rec(6, b"a", b"during"), Rec(7, b"b", b"during")]
    assert log.log_end_offset == 8


@pytest.mark.parametrize("change", ["truncate", "retention", "close"])
def test_a_log_changed_under_the_cleaner_is_left_alone(shm_path, change):
    log = open_log(shm_path)
    for i in range(6):
        append(log, [(b"a", b"%d" % i)])
        log.roll()
    log.update_high_watermark(log.log_end_offset)
    before = read_all(log)

    def act(item):
        if change == "truncate":
            item.truncate_to(5)
        elif change == "retention":
            item.maybe_increment_log_start_offset(2)
            item.delete_old_segments()
        else:
            item.close()

    cleaner, result = clean_with(log, act)
    assert not result.completed
    assert cleaner.checkpointed_offset(TP) is None
    assert (shm_path / CLEANER_OFFSET_CHECKPOINT_FILE).read_text() == ""
    assert temp_files(log.dir) == []
    if change != "close":
        assert read_all(log) == [r for r in before if r.offset >= log.log_start_offset
                                 and r.offset < log.log_end_offset]


def test_the_background_thread_cleans_and_checkpoints(shm_path):
    manager = LogManager([str(shm_path)], CONFIG, clock=lambda: NOW,
                         cleaner_options={"backoff_ms": 20})
    log = manager.get_or_create_log(TP)
    for i in range(10):
        append(log, [(b"a", b"%d" % i)])
    settle(log)
    manager.cleaner.start()
    try:
        deadline = time.monotonic() + 30
        while manager.cleaner.checkpointed_offset(TP) != 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert manager.cleaner.checkpointed_offset(TP) == 10
        assert read_all(log) == [Rec(9, b"a", b"9")]
    finally:
        manager.shutdown()
    assert not manager.cleaner.running
