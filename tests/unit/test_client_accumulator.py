"""RecordAccumulator and ProducerBatch, driven with an explicit clock.

What the batches contain is checked by decoding them with kafka-python's record reader
(an implementation nobody here wrote) as well as our own, because the broker stores
these bytes as they are and every consumer reads them.
"""
from __future__ import annotations

import threading

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkalike.client.accumulator import BufferPool, ProducerBatch, RecordAccumulator
from kafkalike.client.errors import KafkaTimeoutError
from kafkalike.client.metadata import Cluster, Node, PartitionInfo, TopicPartition, TopicView
from kafkalike.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, decode_batches

T0 = 1000.0  # an arbitrary monotonic "now"
FAR = T0 + 3600


def cluster(topic: str = "t", partitions: int = 2, leaders: dict[int, int | None] | None = None) -> Cluster:
    leaders = leaders or {p: p % 2 for p in range(partitions)}
    infos = [PartitionInfo(topic, p, leaders.get(p)) for p in range(partitions)]
    return Cluster(nodes={0: Node(0, "a", 1), 1: Node(1, "b", 2)}, topics={topic: TopicView.of(infos)})


def accumulator(**kw) -> RecordAccumulator:
    kw.setdefault("linger_ms", 0)
    return RecordAccumulator(**kw)


def append(acc: RecordAccumulator, tp, value=b"v" * 10, key=None, headers=None, ts=1_600_000_000_000, now=T0,
           callback=None):
    return acc.append(tp, ts, key, value, headers, callback, FAR, False, now)


def kafka_python_records(data: bytes) -> list:
    records = MemoryRecords(data)
    out = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        out.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch)
    return out


def test_a_built_batch_holds_keys_values_headers_and_timestamps_exactly():
    batch = ProducerBatch(TopicPartition("t", 0), T0, NONE, 16384, 16384)
    rows = [(1_600_000_000_000, b"k1", b"v1", [("h", b"x")]),
            (1_600_000_000_005, None, b"v2", None),
            (1_599_999_999_990, b"k3", None, [("a", None), ("b", b"")]),
            (1_600_000_100_000, b"", b"", None)]
    for ts, key, value, headers in rows:
        assert batch.try_append(ts, key, value, headers, None) is not None
    data = batch.build()
    theirs = kafka_python_records(data)
    assert [(r[1], r[2], r[3]) for r in theirs] == [(ts, k, v) for ts, k, v, _ in rows]
    assert [r[0] for r in theirs] == [0, 1, 2, 3]
    assert theirs[0][4] == [("h", b"x")] and theirs[2][4] == [("a", None), ("b", b"")]
    ours = next(decode_batches(data))
    assert ours.max_timestamp == 1_600_000_100_000 and ours.base_timestamp == 1_600_000_000_000
    assert ours.producer_id == -1 and ours.base_sequence == -1 and ours.count == 4


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_batches_decode_with_another_clients_reader(codec):
    batch = ProducerBatch(TopicPartition("t", 0), T0, codec, 16384, 16384)
    values = [(b"record-%d " % i) * 20 for i in range(30)]
    for i, value in enumerate(values):
        assert batch.try_append(1_600_000_000_000 + i, b"k%d" % i, value, None, None) is not None
    data = batch.build()
    assert next(decode_batches(data)).compression == codec
    assert [r[3] for r in kafka_python_records(data)] == values
    assert len(data) < sum(map(len, values))


def test_records_fill_a_batch_up_to_batch_size_then_open_a_new_one():
    acc = accumulator(batch_size=1024)
    tp = TopicPartition("t", 0)
    results = [append(acc, tp, value=b"x" * 100) for _ in range(30)]
    new_batches = [r for r in results if r[2]]
    assert len(new_batches) > 2
    drained = []
    while True:
        batches = acc.drain(cluster(), [0], 10**6, T0)
        if not batches:
            break
        drained += batches[0]
    assert sum(b.count for b in drained) == 30
    assert all(len(b.build()) <= 1024 for b in drained)
    assert all(len(b.build()) + 100 + 36 > 1024 for b in drained[:-1])  # none closed with room to spare


def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own():
    acc = accumulator(batch_size=100)
    tp = TopicPartition("t", 0)
    future, full, new = append(acc, tp, value=b"y" * 500)
    assert new and full
    batch = acc.drain(cluster(), [0], 10**6, T0)[0][0]
    assert batch.count == 1 and len(batch.build()) > 500


def test_linger_holds_a_batch_until_it_is_full_or_linger_passes():
    acc = accumulator(batch_size=16384, linger_ms=50)
    c = cluster()
    append(acc, TopicPartition("t", 0))
    check = acc.ready(c, T0 + 0.01)
    assert check.nodes == set() and check.next_delay == pytest.approx(0.04)
    assert acc.ready(c, T0 + 0.051).nodes == {0}


def test_flush_makes_lingering_batches_sendable_at_once():
    acc = accumulator(linger_ms=10_000)
    append(acc, TopicPartition("t", 1))
    assert acc.ready(cluster(), T0).nodes == set()
    acc.begin_flush()
    assert acc.ready(cluster(), T0).nodes == {1}
    acc.end_flush()


def test_partitions_without_a_leader_are_reported_for_a_metadata_refresh():
    acc = accumulator()
    append(acc, TopicPartition("t", 0))
    append(acc, TopicPartition("u", 0))
    check = acc.ready(cluster(leaders={0: None, 1: 1}), T0)
    assert check.nodes == set() and check.unknown_leader_topics == {"t", "u"}


def test_drain_takes_one_batch_per_partition_and_respects_max_size():
    acc = accumulator(batch_size=200)
    c = cluster(partitions=4, leaders={0: 0, 1: 0, 2: 0, 3: 0})
    for p in range(4):
        for _ in range(5):
            append(acc, TopicPartition("t", p), value=b"z" * 60)
    first = acc.drain(c, [0], 10**6, T0)[0]
    assert sorted(b.tp.partition for b in first) == [0, 1, 2, 3]
    small = acc.drain(c, [0], 250, T0)[0]
    assert len(small) == 1  # a second batch would pass max.request.size


def test_drain_rotates_its_starting_partition_so_none_starves():
    acc = accumulator(batch_size=100)
    c = cluster(partitions=3, leaders={0: 0, 1: 0, 2: 0})
    for p in range(3):
        for _ in range(6):
            append(acc, TopicPartition("t", p), value=b"q" * 50)
    starts = [acc.drain(c, [0], 1, T0)[0][0].tp.partition for _ in range(6)]
    assert sorted(starts) == [0, 0, 1, 1, 2, 2]


def test_batches_past_the_delivery_timeout_expire_out_of_their_queue():
    acc = accumulator(delivery_timeout_ms=1000)
    append(acc, TopicPartition("t", 0), now=T0)
    append(acc, TopicPartition("t", 1), now=T0 + 0.5)
    assert acc.expired_batches(T0 + 0.9) == []
    expired = acc.expired_batches(T0 + 1.0)
    assert [b.tp for b in expired] == [TopicPartition("t", 0)]
    assert acc.next_expiry() == pytest.approx(T0 + 1.5)


def test_a_retried_batch_goes_back_to_the_head_and_waits_out_the_backoff():
    acc = accumulator(batch_size=100, retry_backoff_ms=100)
    tp = TopicPartition("t", 0)
    append(acc, tp, value=b"a" * 60)
    append(acc, tp, value=b"b" * 60)
    first = acc.drain(cluster(), [0], 10**6, T0)[0][0]
    acc.reenqueue(first, T0 + 1)
    assert acc.ready(cluster(), T0 + 1.05).nodes == set()
    assert acc.drain(cluster(), [0], 10**6, T0 + 1.05) == {}
    again = acc.drain(cluster(), [0], 10**6, T0 + 1.1)[0][0]
    assert again is first and again.attempts == 1


def test_futures_complete_with_offsets_and_callbacks_see_exactly_one_outcome():
    acc = accumulator()
    tp = TopicPartition("t", 1)
    calls = []
    futures = [append(acc, tp, value=b"v%d" % i, key=b"k", ts=1000 + i,
                      callback=lambda md, err: calls.append((md, err)))[0] for i in range(3)]
    batch = acc.drain(cluster(), [1], 10**6, T0)[1][0]
    assert not futures[0].done()
    batch.done(42, -1, None)
    assert [f.get(0).offset for f in futures] == [42, 43, 44]
    assert futures[2].get().timestamp == 1002
    assert futures[0].get().serialized_key_size == 1 and futures[0].get().serialized_value_size == 2
    assert [(md.offset, err) for md, err in calls] == [(42, None), (43, None), (44, None)]
    assert batch.done(0, -1, None) is False  # a batch completes once


def test_log_append_time_replaces_the_record_timestamp_and_errors_reach_get():
    acc = accumulator()
    tp = TopicPartition("t", 0)
    future = append(acc, tp, ts=5)[0]
    acc.drain(cluster(), [0], 10**6, T0)[0][0].done(7, 999, None)
    assert future.get().timestamp == 999
    failing = append(acc, tp)[0]
    error = KafkaTimeoutError("boom")
    acc.drain(cluster(), [0], 10**6, T0)[0][0].done(-1, -1, error)
    with pytest.raises(KafkaTimeoutError, match="boom"):
        failing.get()
    assert failing.exception() is error and failing.failed()


def test_get_with_a_timeout_raises_while_the_record_is_pending():
    acc = accumulator()
    future = append(acc, TopicPartition("t", 0))[0]
    with pytest.raises(KafkaTimeoutError):
        future.get(timeout=0.01)
    assert not future.done()


def test_a_split_batch_hands_records_and_callbacks_to_smaller_batches():
    acc = accumulator(batch_size=16384)
    tp = TopicPartition("t", 0)
    calls = []
    futures = [append(acc, tp, value=bytes([i]) * 300, ts=2000 + i,
                      callback=lambda md, err, i=i: calls.append((i, md.offset)))[0] for i in range(20)]
    batch = acc.drain(cluster(), [0], 10**6, T0)[0][0]
    whole = len(batch.build())
    assert len(acc.split_and_reenqueue(batch, T0)) > 1
    acc.deallocate(batch)
    offset = 100
    while (drained := acc.drain(cluster(), [0], 10**6, T0 + 1)):
        piece = drained[0][0]
        assert len(piece.build()) <= whole // 2  # smaller every time, so splitting ends
        values = [r[3] for r in kafka_python_records(piece.build())]
        piece.done(offset, -1, None)
        offset += len(values)
    assert [f.get(1).offset for f in futures] == list(range(100, 120))
    assert [f.get().timestamp for f in futures] == [2000 + i for i in range(20)]
    assert sorted(calls) == [(i, 100 + i) for i in range(20)]


def test_the_buffer_pool_blocks_then_times_out_and_frees_on_deallocate():
    pool = BufferPool(1000)
    pool.allocate(800, 0)
    with pytest.raises(KafkaTimeoutError, match="Failed to allocate memory within the configured max blocking "
                                                  "time 20 ms."):
        pool.allocate(300, 0.02)
    got = []
    waiter = threading.Thread(target=lambda: (pool.allocate(300, 30), got.append(True)))
    waiter.start()
    pool.deallocate(800)
    waiter.join(30)
    assert got == [True] and pool.available == 700


def test_appends_block_on_buffer_memory_and_report_exhaustion_to_ready():
    acc = RecordAccumulator(batch_size=1000, buffer_memory=1500, linger_ms=10_000)
    append(acc, TopicPartition("t", 0))
    with pytest.raises(KafkaTimeoutError):
        acc.append(TopicPartition("t", 1), 0, None, b"v", None, None, 0.0, False, T0)
    assert acc.pool.available == 500  # the failed append gave its reservation back


def test_abort_incomplete_fails_everything_queued():
    acc = accumulator()
    futures = [append(acc, TopicPartition("t", p))[0] for p in range(2)]
    acc.abort_incomplete(KafkaTimeoutError("closed"))
    assert all(f.failed() for f in futures)
    assert not acc.has_undrained() and not acc.has_incomplete()


def test_the_fast_append_writes_the_same_bytes_as_the_general_one():
    """send()'s fast path (append_to_open) and ProducerBatch.try_append make byte-equal
    batches: keys or none, timestamps before and after the first, big values and offsets
    whose varints need more than the table's range, and it stops where try_append stops."""
    rows = [(1_600_000_000_000, None, b"v" * 100)] + [
        (1_600_000_000_000 + d, key, value)
        for d, key, value in [(3, b"k", b"x"), (-7, None, b""), (20_000, b"k" * 20_000, b"y" * 300),
                              (5, None, b"z" * 17_000), (1, b"", b"w")]] + [
        (1_600_000_000_010, None, b"s")] * 20_000
    general = ProducerBatch(TopicPartition("t", 0), T0, NONE, 1 << 20, 1 << 20)
    fast = accumulator(batch_size=1 << 20)
    acked = []
    fast_futures = []
    for i, (ts, key, value) in enumerate(rows):
        expected = general.try_append(ts, key, value, None, None)
        if i == 0:
            fast_futures.append(append(fast, ("t", 0), value=value, key=key, ts=ts)[0])
            continue
        callback = (lambda md, err, i=i: acked.append(i)) if i < 3 else None
        future, filled = fast.append_to_open(("t", 0), ts, key, value, callback)
        if expected is None:
            assert future is None and not filled
            break
        assert future is not None
        fast_futures.append(future)
    batch = fast._batches[TopicPartition("t", 0)][0]
    assert batch.count == general.count > 20_000
    assert batch.build() == general.build()
    batch.done(40, -1, None)
    assert acked == [1, 2]
    assert [f.get(0).offset for f in fast_futures[:3]] == [40, 41, 42]
    assert fast_futures[3].get(0).serialized_key_size == 20_000
    assert fast_futures[2].get(0).serialized_key_size == -1


def test_the_fast_append_reports_a_full_batch_once_and_leaves_new_batches_to_append():
    acc = accumulator(batch_size=1024)
    assert acc.append_to_open(("t", 0), 1, None, b"v", None) == (None, False)  # no open batch yet
    append(acc, ("t", 0), value=b"v" * 100)
    flags = []
    while True:
        future, filled = acc.append_to_open(("t", 0), 1_600_000_000_000, None, b"v" * 100, None)
        if future is None:
            break
        flags.append(filled)
    assert flags.count(True) <= 1 and not any(flags[:-1])
    [batch] = acc._batches[TopicPartition("t", 0)]
    batch.close()   # drained by the sender: no more appends
    assert acc.append_to_open(("t", 0), 1_600_000_000_000, None, b"v", None) == (None, False)
