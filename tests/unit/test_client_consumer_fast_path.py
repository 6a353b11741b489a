"""The consumer's fast path: records built straight from the batch bytes, and large
answers received in place.

decode_consumer_records must give what decode_records plus the fetcher's old
per-record conversion gave (same fields, same errors on bad bytes), for every codec,
timestamp type and starting offset; the fetcher with the bytes deserializer (which takes
that path and hands the decoded records over as they are) must return what it returns
with any other deserializer. The network client must put a large frame together from
pieces however they arrive, with small frames before and after it.
"""
from __future__ import annotations

import selectors
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkalike.client import deserializers
from kafkalike.client.fetcher import ConsumerRecord, Fetcher, SubscriptionState
from kafkalike.client.metadata import Metadata, Node, TopicPartition
from kafkalike.client.network import READY, InFlight, NetworkClient, _Connection
from kafkalike.protocol.api import encode_response
from kafkalike.protocol.messages.fetch import FetchResponse
from kafkalike.protocol.messages.metadata import MetadataResponse
from kafkalike.records import InvalidRecordError, decode_batches, encode_batch
from kafkalike.records.legacy import encode_legacy_records
from kafkalike.records.record import Record, decode_consumer_records, decode_records
from tests.unit.test_client_consumer_fetcher import FakeNet, answer

BYTES = st.one_of(st.none(), st.binary(max_size=300))
HEADERS = st.lists(st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20))), max_size=3)
RECORDS = st.lists(st.tuples(BYTES, BYTES, HEADERS, st.integers(0, 1 << 45)), min_size=1, max_size=30)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TP = TopicPartition("t", 0)


def expected(batch, min_offset: int, epoch) -> list[tuple]:
    """What the fetcher built from decode_records before the fast path."""
    return [("t", 0, r.offset, r.timestamp, batch.timestamp_type, r.key, r.value, r.headers,
             -1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value), epoch)
            for r in batch.records() if r.offset >= min_offset]


@FAST
@given(RECORDS, st.sampled_from([0, 1, 2, 3, 4]), st.sampled_from([0, 1]), st.integers(0, 40), st.data())
def test_consumer_records_match_decode_records(items, codec, timestamp_type, base_offset, data):
    buf = encode_batch(items, base_offset=base_offset, compression=codec, timestamp_type=timestamp_type)
    [batch] = decode_batches(buf)
    min_offset = data.draw(st.integers(0, base_offset + len(items) + 1))
    built = batch.consumer_records(lambda *fields: fields, ("t", 0, batch.timestamp_type, 7), min_offset)
    assert built == expected(batch, min_offset, 7)


@FAST
@given(RECORDS, st.data())
def test_consumer_records_fail_exactly_where_decode_records_does(items, data):
    section = bytearray(encode_batch(items)[61:])
    for _ in range(data.draw(st.integers(1, 4))):
        section[data.draw(st.integers(0, len(section) - 1))] = data.draw(st.integers(0, 255))
    count = data.draw(st.sampled_from([len(items), len(items) + 1, max(len(items) - 1, 0)]))

    def outcome(decode):
        try:
            return decode()
        except InvalidRecordError as error:
            return str(error)
    plain = outcome(lambda: [(r.offset, r.timestamp, r.key, r.value, r.headers)
                             for r in decode_records(bytes(section), count, 0, 0)])
    fast = outcome(lambda: [(f[2], f[3], f[5], f[6], f[7]) for f in decode_consumer_records(
        bytes(section), count, 0, 0, None, lambda *f: f, ("t", 0, 0, None), -(1 << 63))])
    assert fast == plain


def fetch(records: bytes, value_deserializer, position: int = 0):
    net = FakeNet()
    subs = SubscriptionState("earliest")
    subs.assign([TP])
    subs.seek(TP, position)
    fetcher = Fetcher(net, subs, key_deserializer=deserializers._bytes, value_deserializer=value_deserializer)
    fetcher.send_fetches()
    net.sent[0][2].complete(answer(records))
    return fetcher.fetched_records(), subs.assignment[TP].position


def fields(record: ConsumerRecord) -> tuple:
    return (record.topic, record.partition, record.offset, record.timestamp, record.timestamp_type, record.key,
            record.value, record.headers, record.serialized_key_size, record.serialized_value_size,
            record.leader_epoch)


@pytest.mark.parametrize("position", [0, 3, 7])
def test_the_bytes_deserializer_returns_what_any_other_deserializer_returns(position):
    records = (encode_batch([Record(0, 10 + i, None if i == 1 else b"k%d" % i, None if i == 2 else b"v" * i,
                                    [("h", b"x")] if i % 2 else []) for i in range(5)],
                            base_offset=0, partition_leader_epoch=4)
               + encode_batch([(b"k", b"log-append", [], 99)], base_offset=5, timestamp_type=1)
               + encode_legacy_records([Record(6, 50, b"old", b"magic1")], magic=1)
               + encode_legacy_records([Record(7, -1, None, b"magic0")], magic=0))
    raw, raw_position = fetch(records, deserializers._bytes, position)
    other, other_position = fetch(records, lambda topic, data: data, position)
    assert [fields(r) for r in raw] == [fields(r) for r in other]
    assert raw_position == other_position == 8
    assert [r.offset for r in raw] == list(range(position, 8))
    first = {r.offset: r for r in raw}
    if position == 0:
        assert fields(first[0])[5:] == (b"k0", b"", [], 2, 0, 4)
        assert (first[1].key, first[1].serialized_key_size) == (None, -1)
        assert (first[2].value, first[2].serialized_value_size) == (None, -1)
    if position <= 5:
        assert (first[5].timestamp_type, first[5].timestamp, first[5].leader_epoch) == (1, 99, None)
    assert (first[7].value, first[7].timestamp_type) == (b"magic0", -1)


# -- the network client: large frames received in place ------------------------------------------

def fetch_frame(correlation_id: int, record_set: bytes) -> bytes:
    body = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[
        FetchResponse.FetchablePartitionResponse(partition=0, high_watermark=1, last_stable_offset=1,
                                                 log_start_offset=0, record_set=record_set)])])
    frame = b"".join(bytes(c) for c in encode_response(1, 11, correlation_id, body))
    return struct.pack(">i", len(frame)) + frame


def metadata_frame(correlation_id: int) -> bytes:
    frame = b"".join(bytes(c) for c in encode_response(3, 9, correlation_id, MetadataResponse(
        brokers=[], cluster_id="c", controller_id=0, topics=[])))
    return struct.pack(">i", len(frame)) + frame


@pytest.fixture
def wired():
    """A NetworkClient with one ready connection over a socket pair; the test writes the broker's side."""
    client = NetworkClient(Metadata([("127.0.0.1", 9092)]), client_id="t")
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    conn = _Connection(Node(1, "127.0.0.1", 9092), ours, time.monotonic(), 10.0)
    conn.state = READY
    client._conns[1] = conn
    client._register(conn, selectors.EVENT_READ)
    answers: list = []

    def expect(correlation_id: int, api_key: int, version: int) -> None:
        conn.in_flight.append(InFlight(correlation_id, api_key, version,
                                       lambda response, error: answers.append((response, error)),
                                       time.monotonic() + 30, True))
    yield client, conn, theirs, expect, answers
    client.close()
    theirs.close()


def drain(client, rounds: int = 20) -> None:
    for _ in range(rounds):
        client.poll(0.01)


def feed(client, theirs, data: bytes) -> None:
    """Write the broker's side without blocking on a full socket: the client reads in between."""
    theirs.setblocking(False)
    view = memoryview(data)
    while view:
        try:
            view = view[theirs.send(view):]
        except BlockingIOError:
            client.poll(0.01)
    drain(client)


@pytest.mark.parametrize("cuts", [[1], [3, 70_000], [5, 8, 200_000, 200_100], [262_144, 300_000]])
def test_a_large_frame_arriving_in_pieces_is_put_together(wired, cuts):
    client, conn, theirs, expect, answers = wired
    records = encode_batch([(None, bytes([i % 251]) * 1000) for i in range(400)])
    stream = metadata_frame(1) + fetch_frame(2, records) + metadata_frame(3)
    for correlation_id, api_key, version in ((1, 3, 9), (2, 1, 11), (3, 3, 9)):
        expect(correlation_id, api_key, version)
    start = 0
    for cut in cuts + [len(stream)]:
        feed(client, theirs, stream[start:cut])
        start = cut
    assert [error for _, error in answers] == [None, None, None]
    record_set = answers[1][0].responses[0].partition_responses[0].record_set
    assert bytes(record_set) == records
    assert [len(r.value) for b in decode_batches(record_set) for r in b.records()] == [1000] * 400
    assert conn.frame is None and not conn.in_buf and not conn.in_flight


def test_a_broker_closing_inside_a_large_frame_drops_the_connection(wired):
    client, conn, theirs, expect, answers = wired
    expect(2, 1, 11)
    feed(client, theirs, fetch_frame(2, encode_batch([(None, b"x" * 100_000)]))[:80_000])
    assert conn.frame is not None and not answers
    theirs.close()
    drain(client, 3)
    assert 1 not in client._conns
    assert len(answers) == 1 and answers[0][0] is None and answers[0][1] is not None
