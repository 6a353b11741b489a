"""Produce v0-2 and Fetch v0-3 over the wire: the old message formats in and out, as Kafka 2.8 serves them.

Each request is written the way an old client writes it (magic 0/1 message sets) and
the answers are read the way it reads them: the fields of that version only, and
message sets of the magic the version allows. Bad input must get Kafka's error and
leave the log as it was.
"""
from __future__ import annotations

import pytest

from kafkalike.client.connection import BrokerConnection
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.create_topics import CreateTopicsRequest
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
from kafkalike.records import (
    GZIP, LZ4, NONE, SNAPPY, Record, RecordBatch, decode_batches, encode_batch, iter_records,
)
from kafkalike.records.legacy import LegacyBatch, encode_legacy_message, encode_legacy_records

pytestmark = pytest.mark.integration

TS = 1_650_000_000_000


@pytest.fixture
def conn(broker):
    c = BrokerConnection("127.0.0.1", broker.port)
    c.connect()
    yield c
    c.close()


@pytest.fixture
def topic(request, conn) -> str:
    name = "old-" + request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:120]
    create(conn, name)
    return name


def create(conn, name, configs=None):
    resp = conn.send(CreateTopicsRequest(timeout_ms=10000, topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1,
        configs=[CreateTopicsRequest.CreateableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])]))
    assert resp.topics[0].error_code == 0, resp


def produce(conn, topic, records, *, version, acks=1):
    resp = conn.send(ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])]),
        version=version)
    return resp.responses[0].partition_responses[0]


def fetch(conn, topic, offset, *, version, partition_max=1 << 20):
    resp = conn.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=offset,
                                                             partition_max_bytes=partition_max)])]),
        version=version)
    return resp.responses[0].partition_responses[0]


def log_end(conn, topic) -> int:
    resp = conn.send(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
    return resp.topics[0].partitions[0].offset


def legacy(n, *, magic, codec=NONE, start=0):
    """What an old producer sends: offsets from 0, timestamps on magic 1."""
    return encode_legacy_records([Record(i, TS + start + i, b"k%d" % (start + i), b"v%d" % (start + i))
                                  for i in range(n)], magic=magic, compression=codec)


def records_of(part):
    return [(r.offset, r.timestamp, r.key, r.value) for r in iter_records(bytes(part.record_set or b""))]


def read_all(conn, topic, *, version, start=0):
    """Fetch as an old consumer does, from where the last answer ended, up to the high watermark.

    A converted answer may hold fewer messages than were stored (magic 0/1 messages are
    bigger than v2 records, and the answer keeps to Kafka's size rule)."""
    out, batches, offset = [], [], start
    for _ in range(100):
        part = fetch(conn, topic, offset, version=version)
        assert part.error_code == 0
        got = [r for r in records_of(part) if r[0] >= offset]
        batches += list(decode_batches(bytes(part.record_set)))
        out += got
        if got:
            offset = got[-1][0] + 1
        if offset >= part.high_watermark:
            return out, batches
    raise AssertionError(f"no progress past offset {offset}")


def test_api_versions_advertises_produce_and_fetch_from_zero(conn):
    resp = conn.send(ApiVersionsRequest(client_software_name="t", client_software_version="1"), version=3)
    served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert served[0] == (0, 9) and served[1] == (0, 12)


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4])
@pytest.mark.parametrize("version,magic", [(0, 0), (1, 0), (2, 1)])
def test_old_produce_is_stored_as_v2_and_read_by_every_fetch(conn, topic, version, magic, codec):
    first = produce(conn, topic, legacy(5, magic=magic, codec=codec), version=version)
    second = produce(conn, topic, legacy(3, magic=magic, codec=codec, start=5), version=version)
    assert (first.error_code, first.base_offset, second.base_offset) == (0, 0, 5)
    assert first.log_append_time_ms == -1            # v2's field; the codec leaves it out of v0-1
    ts = (lambda i: TS + i) if magic else (lambda i: -1)
    expected = [(i, ts(i), b"k%d" % i, b"v%d" % i) for i in range(8)]
    new = fetch(conn, topic, 0, version=12)
    assert records_of(new) == expected
    assert {type(b) for b in decode_batches(bytes(new.record_set))} == {RecordBatch}
    for fetch_version, fetch_magic in [(0, 0), (1, 0), (2, 1), (3, 1)]:
        got, batches = read_all(conn, topic, version=fetch_version)
        assert all(isinstance(b, LegacyBatch) and b.magic == fetch_magic and b.compression == codec
                   for b in batches)
        assert got == [(o, t if fetch_magic else -1, k, v) for o, t, k, v in expected]


def test_produce_answers_carry_the_fields_of_their_version(conn):
    create(conn, "old-log-append-time", {"message.timestamp.type": "LogAppendTime"})
    for version in (0, 1, 2):
        resp = conn.send(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="old-log-append-time", partition_data=[ProduceRequest.PartitionProduceData(
                index=0, records=legacy(2, magic=1))])]), version=version)
        assert isinstance(resp, ProduceResponse)
        part = resp.responses[0].partition_responses[0]
        assert part.error_code == 0 and part.base_offset == 2 * version
        # Only v2 says when the broker appended; v0 has no throttle time either.
        assert (part.log_append_time_ms > TS) == (version == 2)
    got = fetch(conn, "old-log-append-time", 0, version=3)
    assert {b.timestamp_type for b in decode_batches(bytes(got.record_set))} == {1}


def test_bad_input_gets_kafkas_error_and_leaves_the_log_alone(conn, topic):
    assert produce(conn, topic, legacy(2, magic=1), version=2).base_offset == 0
    bad_crc = bytearray(legacy(1, magic=1))
    bad_crc[-1] ^= 0xFF
    mixed = legacy(1, magic=0) + legacy(1, magic=1)
    log_append_time = encode_legacy_message(0, b"k", b"v", magic=1, timestamp=TS, attributes=0x08)
    cases = [
        (2, bytes(bad_crc), ErrorCode.CORRUPT_MESSAGE),
        (1, mixed, ErrorCode.INVALID_RECORD),
        (2, log_append_time, ErrorCode.INVALID_TIMESTAMP),
        (2, legacy(2, magic=1, codec=GZIP) + legacy(2, magic=1, codec=GZIP), ErrorCode.INVALID_RECORD),
        (3, legacy(2, magic=1), ErrorCode.INVALID_RECORD),          # v3+ carries v2 batches only
        (0, b"\x00" * 11 + b"\x05" + b"\x00" * 10, ErrorCode.CORRUPT_MESSAGE),   # size below any message
    ]
    for version, records, error in cases:
        assert produce(conn, topic, records, version=version).error_code == error, (version, error)
    assert log_end(conn, topic) == 2
    # A torn last message is dropped, as Kafka drops it; the whole ones before it are kept.
    # With none whole (or none at all) nothing is appended and the answer is NONE, offset -1.
    for nothing in (b"", legacy(1, magic=1)[:-1]):
        part = produce(conn, topic, nothing, version=2)
        assert (part.error_code, part.base_offset) == (0, -1)
    torn = legacy(3, magic=1, start=2)[:-4]
    assert produce(conn, topic, torn, version=2).base_offset == 2
    assert [o for o, *_ in read_all(conn, topic, version=2)[0]] == [0, 1, 2, 3]


def test_new_batches_reach_old_fetchers_without_headers(conn, topic):
    batch = encode_batch([(b"k%d" % i, b"v%d" % i, [("h", b"x")], TS + i) for i in range(10)], compression=LZ4)
    assert produce(conn, topic, batch, version=8).error_code == 0
    plain = encode_batch([(b"k%d" % i, b"v%d" % i, [("h", b"x")], TS + i) for i in range(10, 20)])
    assert produce(conn, topic, plain, version=8).base_offset == 10
    for version, magic in [(0, 0), (3, 1)]:
        # From the middle of a batch: an uncompressed one starts at the offset asked for.
        got = fetch(conn, topic, 15, version=version)
        assert [(o, t) for o, t, *_ in records_of(got)] == [(i, TS + i if magic else -1) for i in range(15, 20)]
        got = fetch(conn, topic, 3, version=version)
        assert [o for o, *_ in records_of(got)][:10] == list(range(10))   # the compressed batch comes whole
        assert all(not r.headers for r in iter_records(bytes(got.record_set)))
        assert [o for o, *_ in read_all(conn, topic, version=version, start=3)[0]] == list(range(3, 20))


def test_fetch_v0_to_v2_never_exceed_the_partition_max(conn, topic):
    produce(conn, topic, encode_batch([(None, b"x" * 3000, None, TS)]), version=8)
    big = fetch(conn, topic, 0, version=1, partition_max=1000)
    # The partial message tells an old client that its fetch size is too small.
    assert big.error_code == 0 and len(big.record_set) == 1000 and records_of(big) == []
    assert len(records_of(fetch(conn, topic, 0, version=3, partition_max=1000))) == 1   # v3: at least one


def test_fetch_v0_to_v2_cut_every_partition_at_its_max(conn):
    """A partition read after another that returned data is cut at its max too: its too-big
    message comes as a partial one (the client's cue to raise its fetch size), not nothing."""
    resp = conn.send(CreateTopicsRequest(timeout_ms=10000, topics=[CreateTopicsRequest.CreatableTopic(
        name="old-two-parts", num_partitions=2, replication_factor=1, configs=[])]))
    assert resp.topics[0].error_code == 0, resp
    for partition, value in ((0, b"small"), (1, b"y" * 3000)):
        answer = conn.send(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="old-two-parts", partition_data=[ProduceRequest.PartitionProduceData(
                index=partition, records=encode_batch([(None, value, None, TS)]))])]), version=8)
        assert answer.responses[0].partition_responses[0].error_code == 0
    resp = conn.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, topics=[FetchRequest.FetchTopic(
        topic="old-two-parts", partitions=[FetchRequest.FetchPartition(partition=p, fetch_offset=0,
                                                                       partition_max_bytes=1000)
                                           for p in (0, 1)])]), version=2)
    first, second = sorted(resp.responses[0].partition_responses, key=lambda p: p.partition)
    assert [r[3] for r in records_of(first)] == [b"small"]
    assert len(second.record_set) == 1000 and records_of(second) == []


def test_topic_settings_old_fetchers_meet(conn):
    create(conn, "old-no-down-conversion", {"message.downconversion.enable": "false"})
    create(conn, "old-zstd", {"compression.type": "zstd"})
    for name in ("old-no-down-conversion", "old-zstd"):
        assert produce(conn, name, encode_batch([(b"k", b"v", None, TS)]), version=8).error_code == 0
    assert fetch(conn, "old-no-down-conversion", 0, version=3).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert records_of(fetch(conn, "old-no-down-conversion", 0, version=4)) == [(0, TS, b"k", b"v")]
    for version in (0, 3, 9):
        got = fetch(conn, "old-zstd", 0, version=version)
        assert (got.error_code, got.high_watermark) == (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, -1)
    assert records_of(fetch(conn, "old-zstd", 0, version=10)) == [(0, TS, b"k", b"v")]


def test_an_old_message_format_version_on_a_topic(conn):
    create(conn, "old-format-0-10", {"message.format.version": "0.10.2"})
    create(conn, "old-format-0-9", {"message.format.version": "0.9.0"})
    idempotent = encode_batch([(b"k", b"v", None, TS)], producer_id=1, producer_epoch=0, base_sequence=0)
    resp = produce(conn, "old-format-0-10", idempotent, version=8)
    assert resp.error_code == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
    with_headers = encode_batch([(b"k", b"v", [("h", b"x")], TS)])
    assert produce(conn, "old-format-0-10", with_headers, version=8).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert produce(conn, "old-format-0-10", encode_batch([(b"k", b"v", None, TS)]), version=8).error_code == 0
    assert records_of(fetch(conn, "old-format-0-10", 0, version=12)) == [(0, TS, b"k", b"v")]
    # Magic 0 has no timestamps: the topic keeps none, whoever produces.
    assert produce(conn, "old-format-0-9", encode_batch([(b"k", b"v", None, TS)]), version=8).error_code == 0
    assert produce(conn, "old-format-0-9", legacy(1, magic=1), version=2).base_offset == 1
    assert records_of(fetch(conn, "old-format-0-9", 0, version=12)) == [(0, -1, b"k", b"v"), (1, -1, b"k0", b"v0")]
    assert log_end(conn, "old-format-0-9") == 2


def test_an_old_format_topic_is_fetched_as_stored(conn):
    """The log of a 0.10 topic holds magic 1 messages: Fetch v2-3 and v4+ get them as they are,
    Fetch v0-1 converted to magic 0, and v0-2 never more than the partition's max bytes."""
    create(conn, "old-stored-0-10", {"message.format.version": "0.10.2"})
    assert produce(conn, "old-stored-0-10", legacy(3, magic=1, codec=GZIP), version=2).base_offset == 0
    assert produce(conn, "old-stored-0-10", encode_batch([(b"k3", b"x" * 3000, None, TS + 3)]),
                   version=8).base_offset == 3
    stored = fetch(conn, "old-stored-0-10", 0, version=12)
    for version in (2, 3, 12):
        got = fetch(conn, "old-stored-0-10", 0, version=version)
        assert bytes(got.record_set) == bytes(stored.record_set)
    assert [(b.magic, b.compression, b.last_offset) for b in decode_batches(bytes(stored.record_set))] == \
        [(1, GZIP, 2), (1, NONE, 3)]
    assert [(o, t) for o, t, *_ in records_of(stored)] == [(i, TS + i) for i in range(4)]
    old = fetch(conn, "old-stored-0-10", 0, version=1)
    assert {b.magic for b in decode_batches(bytes(old.record_set))} == {0}
    assert [(o, t) for o, t, *_ in records_of(old)] == [(i, -1) for i in range(4)]
    big = fetch(conn, "old-stored-0-10", 3, version=2, partition_max=1000)
    assert len(big.record_set) == 1000 and records_of(big) == []
