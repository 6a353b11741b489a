"""The Fetcher's handling of Fetch and ListOffsets answers, over a fake network.

A fake `net` records what the fetcher sends and lets each test answer by hand, so every
branch (records, stale answers, out-of-range, leader moves, max.poll.records, control
batches) is checked without sockets or time.
"""
from __future__ import annotations

import pytest

from kafkalike.client.errors import (IllegalStateError, KafkaError, NoOffsetForPartitionError,
                                     OffsetOutOfRangeError, RecordDeserializationError)
from kafkalike.client.fetcher import Fetcher, SubscriptionState
from kafkalike.client.metadata import Cluster, Node, PartitionInfo, TopicPartition, TopicView
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchResponse
from kafkalike.protocol.messages.list_offsets import ListOffsetsResponse
from kafkalike.records import encode_batch, encode_end_txn_marker_batch
from kafkalike.records.record import Record

TP = TopicPartition("t", 0)


class FakeFuture:
    def __init__(self):
        self.callbacks = []
        self.done, self.value, self.exception = False, None, None

    def add_callback(self, fn):
        if self.done:
            fn(self.value, self.exception)
        else:
            self.callbacks.append(fn)
        return self

    def complete(self, value, error=None):
        self.done, self.value, self.exception = True, value, error
        for fn in self.callbacks:
            fn(value, error)


class FakeMetadata:
    def __init__(self):
        self.updates = 0

    def request_update(self):
        self.updates += 1

    def add_topic(self, topic, now):
        pass


class FakeNet:
    def __init__(self, leader=1):
        self.cluster = Cluster(nodes={1: Node(1, "h", 1), 2: Node(2, "h", 2)},
                               topics={"t": TopicView.of([PartitionInfo("t", 0, leader), PartitionInfo("t", 1, leader)])})
        self.metadata = FakeMetadata()
        self.sent = []

    def send(self, node, request):
        future = FakeFuture()
        self.sent.append((node, request, future))
        return future


def batch(base_offset, count, ts=1000):
    return encode_batch([Record(i, ts + i, b"k%d" % (base_offset + i), b"v%d" % (base_offset + i), [("h", b"x")])
                         for i in range(count)], base_offset=base_offset)


def answer(records=b"", error=ErrorCode.NONE, hw=100, partition=0, aborted=None):
    part = FetchResponse.FetchablePartitionResponse(
        partition=partition, error_code=error, high_watermark=hw, last_stable_offset=hw, log_start_offset=0,
        record_set=records, aborted_transactions=None if aborted is None else [
            FetchResponse.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in aborted])
    return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[part])])


def make(reset="earliest", max_poll_records=500, partitions=(TP,), value_deserializer=lambda t, d: d, **config):
    net = FakeNet()
    subs = SubscriptionState(reset)
    subs.assign(partitions)
    fetcher = Fetcher(net, subs, key_deserializer=lambda t, d: d, value_deserializer=value_deserializer,
                      max_poll_records=max_poll_records, **config)
    return net, subs, fetcher


def test_records_come_back_with_offsets_headers_and_the_position_advances():
    net, subs, fetcher = make()
    subs.seek(TP, 0)
    assert fetcher.send_fetches() == 1
    node, request, future = net.sent[0]
    assert node == 1 and request.topics[0].partitions[0].fetch_offset == 0
    assert fetcher.send_fetches() == 0  # one fetch per node at a time
    future.complete(answer(batch(0, 3) + batch(3, 2)))
    records = fetcher.fetched_records()
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (i, b"k%d" % i, b"v%d" % i, [("h", b"x")]) for i in range(5)]
    assert [r.timestamp for r in records] == [1000, 1001, 1002, 1000, 1001]
    assert subs.assignment[TP].position == 5
    assert subs.assignment[TP].high_watermark == 100


def test_max_poll_records_splits_an_answer_across_polls_without_refetching():
    net, subs, fetcher = make(max_poll_records=2)
    subs.seek(TP, 0)
    fetcher.send_fetches()
    net.sent[0][2].complete(answer(batch(0, 5)))
    assert [r.offset for r in fetcher.fetched_records()] == [0, 1]
    assert fetcher.send_fetches() == 0  # the partition still has buffered records
    assert [r.offset for r in fetcher.fetched_records()] == [2, 3]
    assert [r.offset for r in fetcher.fetched_records()] == [4]
    assert subs.assignment[TP].position == 5
    assert fetcher.send_fetches() == 1
    assert net.sent[1][1].topics[0].partitions[0].fetch_offset == 5


def test_records_below_the_position_and_control_batches_are_skipped():
    net, subs, fetcher = make()
    subs.seek(TP, 2)
    fetcher.send_fetches()
    marker = encode_end_txn_marker_batch(base_offset=4, producer_id=1, producer_epoch=0, commit=True,
                                         coordinator_epoch=0, timestamp=5)
    net.sent[0][2].complete(answer(batch(0, 4) + marker + batch(5, 1)))
    assert [r.offset for r in fetcher.fetched_records()] == [2, 3, 5]
    assert subs.assignment[TP].position == 6


def test_an_answer_made_stale_by_a_seek_is_dropped():
    net, subs, fetcher = make()
    subs.seek(TP, 0)
    fetcher.send_fetches()
    subs.seek(TP, 10)
    net.sent[0][2].complete(answer(batch(0, 3)))
    assert fetcher.fetched_records() == []
    assert subs.assignment[TP].position == 10


def test_out_of_range_resets_by_policy_or_raises_without_one():
    net, subs, fetcher = make("earliest")
    subs.seek(TP, 50)
    fetcher.send_fetches()
    net.sent[0][2].complete(answer(error=ErrorCode.OFFSET_OUT_OF_RANGE))
    assert subs.assignment[TP].position is None and subs.assignment[TP].reset_strategy == "earliest"
    fetcher.reset_positions()
    node, request, future = net.sent[-1]
    assert request.topics[0].partitions[0].timestamp == -2
    part = ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=0, error_code=0, timestamp=-1, offset=7)
    future.complete(ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name="t",
                                                                                           partitions=[part])]))
    assert subs.assignment[TP].position == 7

    net, subs, fetcher = make("none")
    subs.seek(TP, 50)
    fetcher.send_fetches()
    net.sent[0][2].complete(answer(error=ErrorCode.OFFSET_OUT_OF_RANGE))
    with pytest.raises(OffsetOutOfRangeError) as caught:
        fetcher.fetched_records()
    assert caught.value.offsets == {TP: 50}


def test_no_position_without_a_reset_policy_raises():
    net, subs, fetcher = make("none")
    with pytest.raises(NoOffsetForPartitionError) as caught:
        fetcher.reset_positions()
    assert caught.value.partitions == {TP}


def test_a_moved_leader_asks_for_metadata_and_keeps_the_position():
    net, subs, fetcher = make()
    subs.seek(TP, 3)
    fetcher.send_fetches()
    net.sent[0][2].complete(answer(error=ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert net.metadata.updates == 1
    assert fetcher.fetched_records() == []
    net.cluster = Cluster(nodes=net.cluster.nodes, topics={"t": TopicView.of([PartitionInfo("t", 0, 2)])})
    fetcher.send_fetches()
    assert net.sent[-1][0] == 2 and net.sent[-1][1].topics[0].partitions[0].fetch_offset == 3


def test_paused_partitions_are_not_fetched():
    tp1 = TopicPartition("t", 1)
    net, subs, fetcher = make(partitions=(TP, tp1))
    subs.seek(TP, 0)
    subs.seek(tp1, 0)
    subs.assignment[TP].paused = True
    fetcher.send_fetches()
    [(_, request, _)] = net.sent
    assert [p.partition for p in request.topics[0].partitions] == [1]


def txn_batch(base_offset, count, producer_id):
    return encode_batch([Record(i, 1000 + i, None, b"p%d-%d" % (producer_id, base_offset + i), [])
                         for i in range(count)], base_offset=base_offset, producer_id=producer_id,
                        producer_epoch=0, base_sequence=base_offset, is_transactional=True)


def marker(offset, producer_id, commit):
    return encode_end_txn_marker_batch(base_offset=offset, producer_id=producer_id, producer_epoch=0,
                                       commit=commit, coordinator_epoch=0, timestamp=5)


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_read_committed_skips_aborted_transactions(isolation):
    # producer 7 commits offsets 0-1, aborts 3-4, then commits 6; producer 8's 8-9 are aborted
    log = (txn_batch(0, 2, 7) + marker(2, 7, True) + txn_batch(3, 2, 7) + marker(5, 7, False)
           + txn_batch(6, 1, 7) + marker(7, 7, True) + txn_batch(8, 2, 8) + marker(10, 8, False) + batch(11, 1))
    net, subs, fetcher = make(isolation_level=isolation)
    subs.seek(TP, 0)
    fetcher.send_fetches()
    assert net.sent[0][1].isolation_level == (1 if isolation == "read_committed" else 0)
    net.sent[0][2].complete(answer(log, aborted=[(7, 3), (8, 8)] if isolation == "read_committed" else None))
    offsets = [r.offset for r in fetcher.fetched_records()]
    assert offsets == ([0, 1, 6, 11] if isolation == "read_committed" else [0, 1, 3, 4, 6, 8, 9, 11])
    assert subs.assignment[TP].position == 12


def test_a_record_that_cannot_be_deserialized_stops_the_partition_at_it():
    def value(topic, data):
        if data == b"v2":
            raise ValueError("not what I expected")
        return data.decode()
    net, subs, fetcher = make(value_deserializer=value)
    subs.seek(TP, 0)
    fetcher.send_fetches()
    net.sent[0][2].complete(answer(batch(0, 5)))
    assert [r.value for r in fetcher.fetched_records()] == ["v0", "v1"]  # nothing before the bad one is lost
    for _ in range(2):  # raised until the user moves on
        with pytest.raises(RecordDeserializationError, match="partition t-0 at offset 2") as raised:
            fetcher.fetched_records()
        assert (raised.value.partition, raised.value.offset) == (TP, 2)
        assert subs.assignment[TP].position == 2
    subs.seek(TP, 3)
    assert fetcher.fetched_records() == []  # the answer holding the bad record is stale now
    assert fetcher.send_fetches() == 1
    net.sent[-1][2].complete(answer(batch(3, 2)))
    assert [r.value for r in fetcher.fetched_records()] == ["v3", "v4"]


def test_an_error_code_no_fetch_should_get_is_raised():
    net, subs, fetcher = make()
    subs.seek(TP, 0)
    fetcher.send_fetches()
    net.sent[0][2].complete(answer(error=ErrorCode.INVALID_REQUEST))
    with pytest.raises(IllegalStateError, match="Unexpected error code 42 while fetching at offset 0"):
        fetcher.fetched_records()


def test_a_corrupt_batch_comes_after_the_good_records_and_names_the_partition():
    """Java returns the records before a corrupt batch, then raises "Received exception when
    fetching the next record from T-P" at that position until the user seeks past it."""
    message = ("Received exception when fetching the next record from t-0. If needed, please seek past the "
               "record to continue consumption.")
    net, subs, fetcher = make()
    subs.seek(TP, 0)
    fetcher.send_fetches()
    bad = bytearray(batch(3, 2))
    bad[-1] ^= 0xFF                       # a flipped bit in the records: the CRC no longer holds
    net.sent[0][2].complete(answer(batch(0, 3) + bytes(bad) + batch(5, 1)))
    assert [r.offset for r in fetcher.fetched_records()] == [0, 1, 2]
    assert subs.assignment[TP].position == 3
    with pytest.raises(KafkaError, match=message):
        fetcher.fetched_records()
    assert subs.assignment[TP].position == 3
    with pytest.raises(KafkaError, match=message):      # again on the next poll: nothing is skipped
        fetcher.fetched_records()
    assert subs.assignment[TP].position == 3
    subs.seek(TP, 5)
    assert fetcher.fetched_records() == []              # the answer holding the bad batch is stale now
    assert fetcher.send_fetches() == 1
    net.sent[-1][2].complete(answer(batch(5, 1)))
    assert [r.offset for r in fetcher.fetched_records()] == [5]


def test_fetches_use_an_incremental_session_and_start_over_after_a_session_error():
    """KIP-227, as Java's consumer: a full fetch first, then only moved partitions; an
    answer lists only partitions with news; a session error sends a full fetch next."""
    tp1 = TopicPartition("t", 1)
    net, subs, fetcher = make(partitions=(TP, tp1))
    subs.seek(TP, 0)
    subs.seek(tp1, 0)
    fetcher.send_fetches()
    request = net.sent[0][1]
    assert (request.session_id, request.session_epoch) == (0, 0)
    assert [p.partition for p in request.topics[0].partitions] == [0, 1]
    full = answer(batch(0, 2))
    full.responses[0].partition_responses.append(answer(partition=1).responses[0].partition_responses[0])
    full.session_id = 42
    net.sent[0][2].complete(full)
    assert [r.offset for r in fetcher.fetched_records()] == [0, 1]
    fetcher.send_fetches()
    request = net.sent[1][1]
    assert (request.session_id, request.session_epoch) == (42, 1)
    assert [(t.topic, [p.partition for p in t.partitions]) for t in request.topics] == [("t", [0])]
    assert request.topics[0].partitions[0].fetch_offset == 2 and request.forgotten_topics_data == []
    news = answer(batch(0, 1), partition=1)           # only partition 1 has news
    news.session_id = 42
    net.sent[1][2].complete(news)
    assert [(r.partition, r.offset) for r in fetcher.fetched_records()] == [(1, 0)]
    fetcher.send_fetches()
    request = net.sent[2][1]
    assert (request.session_id, request.session_epoch) == (42, 2)
    assert [p.partition for p in request.topics[0].partitions] == [1]
    net.sent[2][2].complete(FetchResponse(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=0,
                                          responses=[]))
    fetcher.send_fetches()
    request = net.sent[3][1]
    assert (request.session_id, request.session_epoch) == (42, 0)     # full: closes 42, opens another
    assert [p.partition for p in request.topics[0].partitions] == [0, 1]
