"""Log append, read, roll, truncation and flush, checked against Kafka 2.8's behaviour."""
from __future__ import annotations

import os
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafkalike.records.header import iter_batch_headers
from kafkalike.storage import layout
from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import (
    CorruptRecordError, InvalidRecordError, InvalidTimestampError, OffsetOutOfRangeError,
    OffsetsOutOfOrderError, RecordBatchTooLargeError, RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalike.storage.log import Log
from kafkalike.storage.validation import AppendOrigin
from tests.unit.test_storage_batches import BASE_TIMESTAMP, make_batch, sized_batch

NOW = BASE_TIMESTAMP + 1000


class FakeClock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def open_log(root, config: LogConfig | None = None, name: str = "topic-0", **kwargs) -> Log:
    kwargs.setdefault("clock", FakeClock())
    return Log(os.path.join(root, name), config or LogConfig(), **kwargs)


def headers(data: bytes):
    return [h for _, h in iter_batch_headers(data)]


# ---------------------------------------------------------------------------- append

def test_leader_append_assigns_offsets_and_stamps_the_epoch_without_touching_the_input(shm_path):
    log = open_log(shm_path)
    batches = [make_batch([b"a"]), make_batch([b"b", b"c", b"d"]), make_batch([b"e", b"f"])]
    originals = [bytes(b) for b in batches]
    infos = [log.append(b, leader_epoch=5, now_ms=NOW) for b in batches]

    assert [(i.first_offset, i.last_offset) for i in infos] == [(0, 0), (1, 3), (4, 5)]
    assert log.log_end_offset == 6
    assert batches == originals
    stored = log.read(0, 1 << 20)
    parsed = headers(stored)  # CRCs still valid after patching
    assert [h.base_offset for h in parsed] == [0, 1, 4]
    assert {h.partition_leader_epoch for h in parsed} == {5}
    # Everything but baseOffset and the epoch is byte-for-byte what the producer sent.
    position = 0
    for original, header in zip(originals, parsed):
        batch = stored[position:position + header.size]
        assert batch[8:12] == original[8:12] and batch[16:] == original[16:]
        position += header.size
    records = list(DefaultRecordBatch(bytearray(stored[parsed[0].size:parsed[0].size + parsed[1].size])))
    assert [r.offset for r in records] == [1, 2, 3]
    assert [r.value for r in records] == [b"b", b"c", b"d"]


def test_append_info_reports_max_timestamp_and_its_batch(shm_path):
    log = open_log(shm_path)
    log.append(make_batch([b"a", b"b"], timestamps=[100, 300]), now_ms=NOW)
    info = log.append(make_batch([b"c"], timestamps=[200]), now_ms=NOW)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (200, 2)
    info = log.append(make_batch([b"d", b"e"]) + make_batch([b"f"], timestamps=[BASE_TIMESTAMP + 50]),
                      now_ms=NOW)
    assert (info.first_offset, info.last_offset, info.batch_count, info.records_count) == (3, 5, 2, 3)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (BASE_TIMESTAMP + 50, 5)
    assert info.log_append_time == -1


def test_log_append_time_topic_stamps_the_broker_time(shm_path):
    log = open_log(shm_path, LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append(make_batch([b"a", b"b"], timestamps=[5, 6]), now_ms=NOW)
    assert (info.log_append_time, info.max_timestamp, info.offset_of_max_timestamp) == (NOW, NOW, 1)
    batch = DefaultRecordBatch(bytearray(log.read(0, 1 << 20)))
    assert batch.validate_crc()
    assert batch.timestamp_type == 1
    assert [r.timestamp for r in batch] == [NOW, NOW]


def test_create_time_topic_clears_a_client_log_append_time_flag(shm_path):
    log = open_log(shm_path)
    log.append(make_batch([b"a"], attributes=0x08), now_ms=NOW)
    batch = DefaultRecordBatch(bytearray(log.read(0, 1 << 20)))
    assert batch.validate_crc() and batch.timestamp_type == 0


@pytest.mark.parametrize("damage", ["crc", "magic", "length"])
def test_corrupt_batches_are_rejected_and_nothing_is_written(shm_path, damage):
    log = open_log(shm_path)
    good = make_batch([b"ok"])
    bad = bytearray(make_batch([b"payload"]))
    if damage == "crc":
        bad[-1] ^= 0xFF
    elif damage == "magic":
        bad[16] = 1
    else:
        struct.pack_into(">i", bad, 8, 20)
    with pytest.raises(CorruptRecordError):
        log.append(good + bytes(bad), now_ms=NOW)
    assert log.log_end_offset == 0 and log.size == 0


def test_batch_over_max_message_bytes_is_rejected_for_clients_but_not_for_followers(shm_path):
    log = open_log(shm_path, LogConfig(max_message_bytes=1000))
    with pytest.raises(RecordTooLargeError) as caught:
        log.append(sized_batch(1001), now_ms=NOW)
    assert caught.value.error_code == 10
    assert log.append(sized_batch(1000), now_ms=NOW).last_offset == 0
    log.append_as_follower(sized_batch(5000, base_offset=1))
    assert log.log_end_offset == 2


def test_append_larger_than_a_segment_is_rejected(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=3000))
    with pytest.raises(RecordBatchTooLargeError) as caught:
        log.append(sized_batch(2000) + sized_batch(2000), now_ms=NOW)
    assert caught.value.error_code == 18
    assert log.log_end_offset == 0


@pytest.mark.parametrize("batch, message", [
    (make_batch([b"a"], base_offset=7), "baseOffset"),
    (make_batch([b"a"], attributes=0x20), "control"),
    (make_batch([b"a"], producer_id=9, producer_epoch=0, base_sequence=-1), "sequence"),
])
def test_client_batches_must_follow_the_producer_rules(shm_path, batch, message):
    log = open_log(shm_path)
    with pytest.raises(InvalidRecordError, match=message):
        log.append(batch, now_ms=NOW)
    # The group coordinator writes control-free batches too, but its offsets are not checked.
    if message == "baseOffset":
        assert log.append(batch, now_ms=NOW, origin=AppendOrigin.COORDINATOR).first_offset == 0


def test_count_must_match_the_offset_range(shm_path):
    batch = bytearray(make_batch([b"a", b"b"]))
    struct.pack_into(">i", batch, 23, 5)  # lastOffsetDelta, under the CRC: fix the CRC
    from kafkalike.records.header import compute_crc
    struct.pack_into(">I", batch, 17, compute_crc(batch, 0, len(batch)))
    with pytest.raises(InvalidRecordError, match="Inconsistent"):
        open_log(shm_path).append(bytes(batch), now_ms=NOW)


def test_timestamps_far_from_the_broker_clock_are_rejected_when_limited(shm_path):
    log = open_log(shm_path, LogConfig(message_timestamp_difference_max_ms=1000))
    with pytest.raises(InvalidTimestampError):
        log.append(make_batch([b"a"], timestamps=[NOW - 5000]), now_ms=NOW)
    assert log.append(make_batch([b"a"], timestamps=[NOW - 500]), now_ms=NOW).last_offset == 0
    # No timestamp at all (-1, as a converted magic 0 message) is exempt, as in Kafka.
    assert log.append(make_batch([b"a"], timestamps=[-1]), now_ms=NOW).last_offset == 1


def test_a_torn_trailing_batch_is_dropped_like_kafka_does(shm_path):
    log = open_log(shm_path)
    whole = make_batch([b"a"])
    info = log.append(whole + make_batch([b"b"])[:40], now_ms=NOW)
    assert (info.batch_count, info.valid_bytes) == (1, len(whole))
    assert log.size == len(whole)


def test_follower_keeps_the_leaders_offsets_and_checks_their_order(shm_path):
    log = open_log(shm_path)
    info = log.append_as_follower(make_batch([b"a", b"b"], base_offset=0, epoch=3)
                                  + make_batch([b"c"], base_offset=5, epoch=4))
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (0, 5, 6)
    assert [h.partition_leader_epoch for h in headers(log.read(0, 1 << 20))] == [3, 4]
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(make_batch([b"x"], base_offset=9) + make_batch([b"y"], base_offset=9))
    with pytest.raises(UnexpectedAppendOffsetError) as caught:
        log.append_as_follower(make_batch([b"x", b"y"], base_offset=4))
    assert (caught.value.first_offset, caught.value.last_offset) == (4, 5)
    assert log.log_end_offset == 6


# ---------------------------------------------------------------------------- read

def fill(log: Log, count: int, size: int = 500, records: int = 2) -> None:
    for _ in range(count):
        log.append(sized_batch(size, count=records), leader_epoch=1, now_ms=NOW)


def test_read_starts_at_the_batch_holding_the_offset_and_returns_whole_batches(shm_path):
    log = open_log(shm_path, LogConfig(index_interval_bytes=600))
    fill(log, 20)  # offsets 0..39, 500 bytes a batch
    data = log.read(7, 1300)  # offset 7 is in the batch 6-7
    assert [h.base_offset for h in headers(data)] == [6, 8]
    assert len(log.read(7, 499)) == 500  # min_one_batch: the first batch even if too big
    assert log.read(7, 499, min_one_batch=False) == b""
    assert [h.base_offset for h in headers(log.read(3, 1 << 20, max_offset=10))] == [2, 4, 6, 8]
    assert log.read(10, 1 << 20, max_offset=10) == b""  # at the high watermark
    assert log.read(40, 1 << 20) == b""  # at the log end
    with pytest.raises(OffsetOutOfRangeError):
        log.read(41, 100)


def test_read_below_the_log_start_offset_is_out_of_range(shm_path):
    log = open_log(shm_path)
    fill(log, 5)
    log.update_high_watermark(10)
    log.maybe_increment_log_start_offset(4)
    with pytest.raises(OffsetOutOfRangeError) as caught:
        log.read(3, 100)
    assert caught.value.error_code == 1
    assert headers(log.read(4, 100))[0].base_offset == 4


def test_read_moves_to_the_next_segment_and_stops_at_segment_end(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=2000))
    fill(log, 10)  # four 500-byte batches a segment
    assert [s.base_offset for s in log.segments] == [0, 8, 16]
    assert [h.base_offset for h in headers(log.read(2, 1 << 20))] == [2, 4, 6]
    assert [h.base_offset for h in headers(log.read(8, 1 << 20))] == [8, 10, 12, 14]


def test_read_slice_locates_the_bytes_for_sendfile(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=2000))
    fill(log, 10)
    piece = log.read_slice(9, 1000)
    assert (piece.segment_base_offset, piece.position, piece.size) == (8, 0, 1000)
    assert piece.path == layout.log_file_path(log.dir, 8)
    with open(piece.path, "rb") as handle:
        handle.seek(piece.position)
        assert handle.read(piece.size) == piece.read() == log.read(9, 1000)


def test_size_between_counts_whole_batches_across_segments(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=2000))
    fill(log, 10)
    assert log.size_between(0, 20) == 5000
    assert log.size_between(3, 10) == 2000  # batches 2, 4, 6, 8
    assert log.size_between(10, 10) == 0


# ---------------------------------------------------------------------------- timestamps

def test_offset_lookup_by_timestamp_uses_the_time_index(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=3000, index_interval_bytes=100))
    for i in range(12):  # batches of two records, timestamps rising by 10 per batch
        ts = BASE_TIMESTAMP + 10 * i
        log.append(make_batch([b"x" * 300, b"y"], timestamps=[ts, ts + 5]), leader_epoch=2, now_ms=NOW)
    assert len(log.segments) > 1
    exact = log.fetch_offset_by_timestamp(BASE_TIMESTAMP + 40)
    assert (exact.timestamp, exact.offset, exact.leader_epoch) == (BASE_TIMESTAMP + 40, 8, 2)
    # Between the first and the max timestamp of a batch: the batch's first offset.
    inside = log.fetch_offset_by_timestamp(BASE_TIMESTAMP + 43)
    assert inside.offset == 8
    assert log.fetch_offset_by_timestamp(BASE_TIMESTAMP + 500) is None
    assert log.fetch_offset_by_timestamp(-2).offset == 0
    latest = log.fetch_offset_by_timestamp(-1)
    assert (latest.offset, latest.leader_epoch) == (24, 2)


def test_record_level_timestamp_lookup_through_a_decoder(shm_path):
    def record_timestamps(raw: bytes):
        return [(r.offset, r.timestamp) for r in DefaultRecordBatch(bytearray(raw))]

    log = open_log(shm_path)
    log.append(make_batch([b"a", b"b", b"c"], timestamps=[100, 200, 300]), now_ms=NOW)
    found = log.fetch_offset_by_timestamp(150, record_timestamps)
    assert (found.timestamp, found.offset) == (200, 1)


# ---------------------------------------------------------------------------- rolling

def test_roll_on_segment_bytes_names_segments_by_base_offset(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=1200))
    fill(log, 5)
    assert [s.base_offset for s in log.segments] == [0, 4, 8]
    names = sorted(n for n in os.listdir(log.dir) if n.endswith(".log"))
    assert names == ["00000000000000000000.log", "00000000000000000004.log", "00000000000000000008.log"]


def test_roll_on_segment_ms_measured_from_the_first_batch_timestamp(shm_path):
    log = open_log(shm_path, LogConfig(segment_ms=1000))
    log.append(make_batch([b"a"], timestamps=[10_000]), now_ms=NOW)
    log.append(make_batch([b"b"], timestamps=[10_900]), now_ms=NOW)
    assert len(log.segments) == 1
    log.append(make_batch([b"c"], timestamps=[11_001]), now_ms=NOW)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_on_segment_ms_without_timestamps_uses_creation_time(shm_path):
    clock = FakeClock(1_000_000)
    log = open_log(shm_path, LogConfig(segment_ms=1000), clock=clock)
    log.append(make_batch([b"a"], timestamps=[-1]), now_ms=1_000_500)
    log.append(make_batch([b"b"], timestamps=[-1]), now_ms=1_001_001)
    assert [s.base_offset for s in log.segments] == [0, 1]


def test_roll_jitter_shortens_segment_ms_per_segment(shm_path):
    import random
    config = LogConfig(segment_ms=10_000, segment_jitter_ms=4000)
    draws = {config.random_segment_jitter(random.Random(seed)) for seed in range(50)}
    assert all(0 <= d < 4000 for d in draws) and len(draws) > 10
    log = open_log(shm_path, config, rng=random.Random(1))
    jitter = log.active_segment.roll_jitter_ms
    assert jitter > 0
    log.append(make_batch([b"a"], timestamps=[0]), now_ms=NOW)
    log.append(make_batch([b"b"], timestamps=[10_000 - jitter]), now_ms=NOW)
    assert len(log.segments) == 1
    log.append(make_batch([b"c"], timestamps=[10_000 - jitter + 1]), now_ms=NOW)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_when_the_offset_index_is_full_and_old_indexes_are_trimmed(shm_path):
    log = open_log(shm_path, LogConfig(segment_index_bytes=32, index_interval_bytes=0))
    fill(log, 12, size=200)
    first = log.segments[0]
    assert len(log.segments) > 2
    # A rolled segment's index holds exactly its entries; the active one is preallocated.
    assert os.path.getsize(first.offset_index.path) == 8 * first.offset_index.entries
    assert os.path.getsize(log.active_segment.offset_index.path) == 32


def test_offset_index_entries_follow_kafka_2_8(shm_path):
    """An entry once more than index.interval.bytes were written since the last one,
    mapping the largest offset of that append to the position where it started."""
    log = open_log(shm_path, LogConfig(index_interval_bytes=1000))
    fill(log, 7, size=400)  # positions 0, 400, ..., 2400; offsets 2 per batch
    log.close()
    with open(layout.offset_index_path(log.dir, 0), "rb") as handle:
        raw = handle.read()
    entries = [struct.unpack_from(">ii", raw, i) for i in range(0, len(raw), 8)]
    # bytes since last entry before each append: 0,400,800,1200 -> entry at the 4th batch.
    assert entries == [(7, 1200), (13, 2400)]


# ---------------------------------------------------------------------------- truncation

def test_truncate_to_cuts_at_a_batch_boundary_and_deletes_later_segments(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=2000))
    fill(log, 10)
    log.leader_epoch_cache.assign(2, 12)
    assert log.truncate_to(11) is True
    assert log.log_end_offset == 10  # offset 11 sat in batch 10-11, which goes whole
    assert [s.base_offset for s in log.segments] == [0, 8]
    assert [h.base_offset for h in headers(log.read(8, 1 << 20))] == [8]
    assert [e.epoch for e in log.leader_epoch_cache.entries()] == [1]
    assert sorted(n for n in os.listdir(log.dir) if n.endswith(".log")) == [
        "00000000000000000000.log", "00000000000000000008.log"]
    assert log.append(make_batch([b"z"]), now_ms=NOW).first_offset == 10
    assert log.truncate_to(100) is False


def test_truncate_below_the_first_segment_restarts_the_log(shm_path):
    log = open_log(shm_path)
    fill(log, 3)
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (50, 50, 50)
    assert [s.base_offset for s in log.segments] == [50]
    assert log.leader_epoch_cache.entries() == []
    assert log.append(make_batch([b"a"]), now_ms=NOW).first_offset == 50


def test_log_start_offset_moves_only_up_to_the_high_watermark(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=2000))
    fill(log, 10)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(5)
    log.update_high_watermark(20)
    assert log.maybe_increment_log_start_offset(9)
    assert not log.maybe_increment_log_start_offset(3)
    assert log.log_start_offset == 9
    assert log.delete_old_segments(NOW) == 1  # segment 0-7 lies wholly below 9
    assert [s.base_offset for s in log.segments] == [8, 16]
    assert log.log_start_offset == 9


# ---------------------------------------------------------------------------- flush

def test_flush_messages_policy_flushes_and_moves_the_recovery_point(shm_path):
    log = open_log(shm_path, LogConfig(flush_messages=4))
    fill(log, 1)
    assert log.recovery_point == 0
    fill(log, 1)
    assert log.recovery_point == 4


def test_flushes_go_to_the_executor_one_at_a_time(shm_path):
    queued = []
    log = open_log(shm_path, LogConfig(flush_messages=2, segment_bytes=1500), flush_executor=queued.append)
    fill(log, 5)  # every append is due a flush, and two rolls happened
    assert len(queued) == 1 and log.recovery_point == 0
    queued.pop()()
    assert log.recovery_point == 10
    fill(log, 1)
    assert len(queued) == 1


def test_roll_asks_for_a_flush_of_the_finished_segment(shm_path):
    queued = []
    log = open_log(shm_path, LogConfig(segment_bytes=1000), flush_executor=queued.append)
    fill(log, 3)
    assert [s.base_offset for s in log.segments] == [0, 4]
    queued.pop()()
    assert log.recovery_point == 4


def test_flush_ms_is_reported_due_to_the_owner(shm_path):
    clock = FakeClock()
    log = open_log(shm_path, LogConfig(flush_ms=1000), clock=clock)
    fill(log, 1)
    assert not log.flush_due(NOW + 999)
    assert log.flush_due(NOW + 1000)
    log.flush()
    assert log.recovery_point == 2


# ---------------------------------------------------------------------------- epochs

def test_new_epochs_are_recorded_in_the_leader_epoch_checkpoint(shm_path):
    log = open_log(shm_path)
    log.append(make_batch([b"a"]), leader_epoch=0, now_ms=NOW)
    log.append(make_batch([b"b", b"c"]), leader_epoch=0, now_ms=NOW)
    log.append(make_batch([b"d"]), leader_epoch=3, now_ms=NOW)
    with open(os.path.join(log.dir, "leader-epoch-checkpoint")) as handle:
        assert handle.read() == "0\n2\n0 0\n3 3\n"
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(3) == (3, 4)


def test_flushes_from_another_thread_during_appends_rolls_and_truncation(shm_path):
    """The broker flushes in a thread while its reactor appends: no errors, and the
    recovery point never passes the log end or data that was not fsynced."""
    import threading

    log = open_log(shm_path, LogConfig(segment_bytes=1500, index_interval_bytes=0))
    stop = threading.Event()
    errors: list[BaseException] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                log.flush()
                with log.lock:  # both read at one moment: a truncation lowers both
                    assert log.recovery_point <= log.log_end_offset
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for round_ in range(20):
            fill(log, 10)
            log.truncate_to(log.log_end_offset - 6)
    finally:
        stop.set()
        thread.join()
    assert errors == []
    log.flush()
    assert log.recovery_point == log.log_end_offset == 20 * 14
    assert [h.base_offset for h in headers(log.read(0, 1 << 20))][:2] == [0, 2]


def test_a_compacted_log_refuses_a_clients_keyless_records_and_names_each(shm_path):
    from kafkalike.records.batch import encode_batch
    from kafkalike.storage.errors import RecordValidationError
    log = open_log(shm_path, LogConfig(cleanup_policy=("compact",)), name="table-3")
    batch = encode_batch([(b"k", b"1", [], NOW), (None, b"2", [], NOW), (b"k", b"3", [], NOW), (None, b"4", [], NOW)],
                         compression=1)
    with pytest.raises(RecordValidationError) as refused:
        log.append(batch, leader_epoch=0, now_ms=NOW)
    message = "Compacted topic cannot accept message without key in topic partition table-3."
    assert refused.value.record_errors == [(1, message), (3, message)]
    assert log.log_end_offset == 0
    # A follower copies what its leader took (for example before the topic was compacted).
    log.append(encode_batch([(None, b"x", [], NOW)], base_offset=0, partition_leader_epoch=0),
               assign_offsets=False)
    assert log.log_end_offset == 1
