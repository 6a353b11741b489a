"""The dedicated Produce/Fetch codecs and header parse (kafkalike.protocol.fast) against
the generic schema codec: byte-identical output and equal decodes at every version, and
the same verdict (decoded or ProtocolDecodeError) on damaged frames."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalike.protocol import api
from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.fast.fetch import encode_fetch_response
from kafkalike.protocol.fast.fetch_request import decode_fetch_request
from kafkalike.protocol.fast.produce import decode_produce_request, encode_produce_response
from kafkalike.protocol.messages.fetch import FetchRequest, FetchResponse
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
from kafkalike.protocol.types import Reader
from kafkalike.storage.log import LogSlice
from tests.unit.test_protocol_codec import struct_strategy

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _verdict(fn):
    try:
        return "ok", fn()
    except ProtocolDecodeError:
        return "error", None


def _generic_body(frame, version, cls=ProduceRequest):
    header, reader = api.decode_request_header(frame)
    return cls.read_from(reader, version)


def _fast_body(frame, version):
    key, v, _corr, _client, pos = api.parse_request_header(frame)
    return api.decode_request_body(key, v, frame, pos)


def _records_as_bytes(req):
    """The decoded request with its record views as bytes, to compare two decodes."""
    return [(t.name, [(p.index, None if p.records is None else bytes(p.records)) for p in t.partition_data])
            for t in req.topic_data], req.transactional_id, req.acks, req.timeout_ms


@pytest.mark.parametrize("version", range(0, 10))
def test_produce_request_decodes_as_the_generic_codec(version):
    @SETTINGS
    @given(struct_strategy(ProduceRequest, version), st.integers(-2**31, 2**31 - 1), st.none() | st.text(max_size=8))
    def check(request, correlation_id, client_id):
        frame = api.encode_request(0, version, correlation_id, client_id, request)
        fast = _fast_body(frame, version)
        assert fast == _generic_body(frame, version)
        for p in (p for t in fast.topic_data for p in t.partition_data if p.records is not None):
            assert isinstance(p.records, memoryview)    # a view of the frame, not a copy
    check()


@pytest.mark.parametrize("version", [0, 2, 3, 8, 9])
def test_damaged_produce_frames_get_the_same_verdict(version):
    request = ProduceRequest(transactional_id="tx" if version >= 3 else None, acks=1, timeout_ms=30000,
                             topic_data=[ProduceRequest.TopicProduceData(name="orders", partition_data=[
                                 ProduceRequest.PartitionProduceData(index=i, records=b"r" * (5 + i))
                                 for i in range(2)])])
    frame = api.encode_request(0, version, 7, "client", request)
    body_at = api.parse_request_header(frame)[4]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        damaged = bytearray(frame)
        for _ in range(data.draw(st.integers(1, 3))):
            pos = data.draw(st.integers(body_at, len(damaged) - 1))     # the body: the header has its own test
            damaged[pos] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(body_at, len(damaged)))
        damaged = bytes(damaged[:cut])
        generic = _verdict(lambda: _generic_body(damaged, version))
        fast = _verdict(lambda: _fast_body(damaged, version))
        assert fast[0] == generic[0]
        if fast[0] == "ok":
            assert _records_as_bytes(fast[1]) == _records_as_bytes(generic[1])
    check()


@pytest.mark.parametrize("version", range(0, 13))
def test_fetch_request_decodes_as_the_generic_codec(version):
    @SETTINGS
    @given(struct_strategy(FetchRequest, version), st.integers(-2**31, 2**31 - 1), st.none() | st.text(max_size=8))
    def check(request, correlation_id, client_id):
        frame = api.encode_request(1, version, correlation_id, client_id, request)
        fast = _fast_body(frame, version)
        assert type(fast) is FetchRequest
        assert fast == _generic_body(frame, version, FetchRequest)
        # Fields the version carries come back as sent; the rest are the declared defaults.
        assert fast == FetchRequest.decode(request.encode(version), version)
    check()


def _consumer_fetch(version, n_partitions=2):
    return FetchRequest(
        cluster_id="c1" if version >= 12 else None, replica_id=-1, max_wait_ms=500, min_bytes=1,
        max_bytes=52428800, isolation_level=1 if version >= 4 else 0,
        session_id=7 if version >= 7 else 0, session_epoch=3 if version >= 7 else -1,
        topics=[FetchRequest.FetchTopic(topic="orders", partitions=[
            FetchRequest.FetchPartition(partition=i, current_leader_epoch=5 if version >= 9 else -1,
                                        fetch_offset=1000 + i, last_fetched_epoch=4 if version >= 12 else -1,
                                        log_start_offset=0 if version >= 5 else -1, partition_max_bytes=1048576)
            for i in range(n_partitions)])],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(topic="old", partitions=[0, 2])] if version >= 7 else [],
        rack_id="rack-a" if version >= 11 else "")


@pytest.mark.parametrize("version", [0, 3, 4, 5, 7, 9, 11, 12])
def test_damaged_fetch_frames_get_the_same_verdict(version):
    frame = api.encode_request(1, version, 7, "client", _consumer_fetch(version))
    body_at = api.parse_request_header(frame)[4]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        damaged = bytearray(frame)
        for _ in range(data.draw(st.integers(1, 3))):
            pos = data.draw(st.integers(body_at, len(damaged) - 1))
            damaged[pos] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(body_at, len(damaged)))
        damaged = bytes(damaged[:cut])
        generic = _verdict(lambda: _generic_body(damaged, version, FetchRequest))
        fast = _verdict(lambda: _fast_body(damaged, version))
        assert fast == generic
    check()


def test_fetch_request_v12_tagged_fields_as_the_generic_reader():
    """cluster_id (tag 0) read, unknown tags skipped, tags out of order, a tag 0 whose
    string does not fill its declared size, and sizes past the end refused."""
    request = _consumer_fetch(12, 1)
    body = bytearray(request.encode(12))
    assert body.endswith(b"\x01\x00\x03\x03c1")       # one tag: 0, 3 bytes, compact "c1"
    prefix = bytes(body[:-6])
    cases = [b"\x00", b"\x01\x00\x01\x00", b"\x02\x00\x03\x03c1\x05\x02zz", b"\x01\x07\x01z",
             b"\x01\x00\x04\x03c1z", b"\x01\x00\x02\x03c", b"\x02\x05\x00\x00\x00",
             b"\x01\x00\x03\x03\xff\xfe", b"\x01\x00\x09\x03c1"]
    for tags in cases:
        frame = b"pad" + prefix + tags
        generic = _verdict(lambda: FetchRequest.decode(frame, 12, 3))
        assert _verdict(lambda: decode_fetch_request(frame, 3, 12)) == generic, tags
    assert decode_fetch_request(b"pad" + prefix + b"\x00", 3, 12).cluster_id is None
    assert decode_fetch_request(b"pad" + bytes(body), 3, 12) == request


HEADER_CASES = [(0, 3), (0, 9), (1, 12), (7, 0), (7, 3), (18, 3), (3, 9), (999, 1)]


@pytest.mark.parametrize("api_key,version", HEADER_CASES)
def test_request_header_parse_equals_the_generic_one(api_key, version):
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.integers(-2**31, 2**31 - 1), st.none() | st.text(max_size=10), st.binary(max_size=8),
           st.lists(st.tuples(st.integers(0, 300), st.binary(max_size=3)), max_size=2))
    def check(correlation_id, client_id, body, tags):
        spec = api.APIS.get(api_key)
        header_version = spec.request_header_version(version) if spec else 1
        frame = bytearray(api_key.to_bytes(2, "big", signed=True) + version.to_bytes(2, "big", signed=True)
                          + correlation_id.to_bytes(4, "big", signed=True))
        if header_version >= 1:
            data = None if client_id is None else client_id.encode()
            frame += (-1).to_bytes(2, "big", signed=True) if data is None else len(data).to_bytes(2, "big") + data
        if header_version >= 2:
            frame.append(len(tags))
            for tag, value in tags:
                frame += _uvarint(tag) + _uvarint(len(value)) + value
        frame = bytes(frame + body)
        header, reader = api.decode_request_header(frame)
        parsed = api.parse_request_header(frame)
        assert parsed == (header.request_api_key, header.request_api_version, header.correlation_id,
                          header.client_id, reader.pos)
        for cut in range(len(frame)):
            assert _verdict(lambda: api.parse_request_header(frame[:cut]))[0] == \
                _verdict(lambda: api.decode_request_header(frame[:cut]))[0]
    check()


def test_request_header_refuses_bad_client_ids_as_the_generic_one():
    for frame in (b"\x00\x00\x00\x03\x00\x00\x00\x01\xff\xfe",            # length -2
                  b"\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\xff\xfe"):   # not UTF-8
        with pytest.raises(ProtocolDecodeError):
            api.decode_request_header(frame)
        with pytest.raises(ProtocolDecodeError):
            api.parse_request_header(frame)


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


@pytest.mark.parametrize("version", range(0, 10))
def test_produce_response_encodes_as_the_generic_codec(version):
    @SETTINGS
    @given(struct_strategy(ProduceResponse, version), st.integers(-2**31, 2**31 - 1))
    def check(response, correlation_id):
        fast = encode_produce_response(version, correlation_id, response)
        assert b"".join(fast) == b"".join(api.encode_response_generic(0, version, correlation_id, response))
        assert b"".join(api.encode_response(0, version, correlation_id, response)) == b"".join(fast)
    check()


def _fetch_response(version):
    """Random FetchResponses, with record sets up to 10 KiB (past the chunking threshold)."""
    records = st.none() | st.binary(max_size=12) | st.integers(4000, 10240).map(lambda n: os.urandom(n))
    part = struct_strategy(FetchResponse.FetchablePartitionResponse, version)

    def with_records(p, r):
        p.record_set = r
        return p
    parts = st.builds(with_records, part, records)
    topic = st.builds(FetchResponse.FetchableTopicResponse, topic=st.text(max_size=8),
                      partition_responses=st.lists(parts, max_size=3))
    base = struct_strategy(FetchResponse, version)

    def with_topics(r, topics):
        r.responses = topics
        return r
    return st.builds(with_topics, base, st.lists(topic, max_size=3))


@pytest.mark.parametrize("version", range(0, 13))
def test_fetch_response_encodes_as_the_generic_codec(version):
    @SETTINGS
    @given(_fetch_response(version), st.integers(-2**31, 2**31 - 1))
    def check(response, correlation_id):
        fast = encode_fetch_response(version, correlation_id, response)
        assert all(type(c) is bytes for c in fast)     # what a Twisted transport takes
        assert b"".join(fast) == b"".join(api.encode_response_generic(1, version, correlation_id, response))
    check()


def test_fetch_response_v12_tagged_fields_when_set():
    p = FetchResponse.FetchablePartitionResponse(partition=3, record_set=b"abc")
    p.diverging_epoch = FetchResponse.EpochEndOffset(epoch=4, end_offset=100)
    p.current_leader = FetchResponse.LeaderIdAndEpoch(leader_id=2, leader_epoch=-1)
    p.snapshot_id = FetchResponse.SnapshotId(end_offset=-1, epoch=9)
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[p])])
    fast = b"".join(encode_fetch_response(12, 1, response))
    assert fast == b"".join(api.encode_response_generic(1, 12, 1, response))
    back = FetchResponse.read_from(Reader(fast, 5), 12)        # after the v1 response header
    assert back.responses[0].partition_responses[0] == p


@pytest.fixture
def segment_file(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    data = os.urandom(300_000)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, str(path), data
    os.close(fd)


def test_fetch_response_keeps_large_file_ranges_for_sendfile(segment_file):
    fd, path, data = segment_file
    big = LogSlice(0, 0, 1000, 200_000, fd, path)
    small = LogSlice(0, 0, 5, 100, fd, path)
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[
        FetchResponse.FetchablePartitionResponse(partition=0, record_set=big),
        FetchResponse.FetchablePartitionResponse(partition=1, record_set=small)])])
    for version in (4, 12):
        kept = api.encode_response(1, version, 9, response, keep_files_from=65536)
        assert big in kept and small not in kept
        as_bytes = b"".join(bytes(c) for c in kept)
        assert as_bytes == b"".join(api.encode_response_generic(1, version, 9, response))
        assert data[1000:201000] in as_bytes and data[5:105] in as_bytes
        # Without the listener's permission every record set is read into bytes.
        plain = api.encode_response(1, version, 9, response)
        assert all(type(c) is bytes for c in plain) and b"".join(plain) == as_bytes


def test_a_truncated_file_range_is_not_sent_short(segment_file):
    fd, path, _data = segment_file
    past_end = LogSlice(0, 0, 299_000, 5_000, fd, path)
    with pytest.raises(OSError):
        bytes(past_end)


def test_decode_produce_request_needs_no_header_object():
    request = ProduceRequest(acks=-1, timeout_ms=5, topic_data=[ProduceRequest.TopicProduceData(
        name="a", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"xyz")])])
    body = request.encode(9)
    assert decode_produce_request(b"pad" + body, 3, 9) == ProduceRequest.decode(body, 9)
