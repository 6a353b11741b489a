"""Round trips of every declared message at every version, and hostile input."""
from __future__ import annotations

import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalike.protocol import api
from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.messages.consumer_protocol import ConsumerProtocolSubscription
from kafkalike.protocol.messages.fetch import FetchResponse
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.messages.produce import ProduceRequest
from kafkalike.protocol.schema import UnsupportedVersionError
from kafkalike.protocol.types import Reader, Writer

INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


def _elem(f, cls, version):
    t = f.element_type
    if t in INT_RANGES:
        b = INT_RANGES[t]
        return st.integers(-(1 << (b - 1)), (1 << (b - 1)) - 1)
    if t == "uint16":
        return st.integers(0, 0xFFFF)
    if t == "uint32":
        return st.integers(0, 0xFFFFFFFF)
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "bool":
        return st.booleans()
    if t == "string":
        return TEXT
    if t in ("bytes", "records"):
        return st.binary(max_size=12)
    if t == "uuid":
        return st.uuids()
    return struct_strategy(cls.TOP.STRUCTS[t], version)


def field_strategy(f, cls, version):
    s = _elem(f, cls, version)
    if f.is_array:
        s = st.lists(s, max_size=3)
    if f.nullable_in(version):
        s = st.none() | s
    return s


def struct_strategy(cls, version):
    kwargs = {f.name: field_strategy(f, cls, version) for f in cls.FIELDS if f.present_in(version)}
    return st.builds(cls, **kwargs)


CASES = [(msg_cls, v)
         for spec in api.APIS.values()
         for msg_cls in (spec.request, spec.response)
         for v in range(spec.versions[0], spec.versions[1] + 1)]


@pytest.mark.parametrize("cls,version", CASES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_round_trip_every_version(cls, version):
    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
    @given(struct_strategy(cls, version))
    def check(msg):
        data = msg.encode(version)
        back = cls.decode(data, version)
        assert back == msg
        assert back.encode(version) == data
        # Any proper prefix is a truncated frame and must be refused.
        for cut in sorted({0, len(data) // 2, len(data) - 1}):
            if 0 <= cut < len(data):
                with pytest.raises(ProtocolDecodeError):
                    cls.decode(data[:cut], version)
    check()


@pytest.mark.parametrize("cls,version", CASES[::3], ids=lambda x: getattr(x, "__name__", str(x)))
def test_garbage_raises_only_protocol_errors(cls, version):
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.binary(max_size=64))
    def check(data):
        try:
            cls.decode(data, version)
        except ProtocolDecodeError:
            pass
    check()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_bit_flips_in_a_valid_frame(data):
    msg = ProduceRequest(transactional_id="tx", acks=-1, timeout_ms=3000, topic_data=[
        ProduceRequest.TopicProduceData(name="orders", partition_data=[
            ProduceRequest.PartitionProduceData(index=i, records=b"x" * 10) for i in range(3)])])
    version = data.draw(st.sampled_from([3, 8, 9]))
    frame = bytearray(msg.encode(version))
    pos = data.draw(st.integers(0, len(frame) - 1))
    frame[pos] ^= 1 << data.draw(st.integers(0, 7))
    try:
        ProduceRequest.decode(bytes(frame), version)
    except ProtocolDecodeError:
        pass


def _fast(fn):
    start = time.perf_counter()
    with pytest.raises(ProtocolDecodeError):
        fn()
    # Not a timing assertion on speed, only a guard against hangs/huge allocation:
    # a hostile length must be refused without reading or allocating it.
    assert time.perf_counter() - start < 5


def test_hostile_lengths_are_refused():
    # Metadata v1: topics array (int32 count) of nullable-less strings.
    _fast(lambda: MetadataRequest.decode(struct.pack(">i", 2**31 - 1), 1))
    _fast(lambda: MetadataRequest.decode(struct.pack(">i", -2), 1))
    _fast(lambda: MetadataRequest.decode(struct.pack(">ih", 1, 2**15 - 1) + b"ab", 1))
    _fast(lambda: MetadataRequest.decode(struct.pack(">ih", 1, -1), 1))  # null where not nullable
    # Flexible (v9): compact array length as an unsigned varint that never ends.
    _fast(lambda: MetadataRequest.decode(b"\xff" * 64, 9))
    _fast(lambda: MetadataRequest.decode(b"\xff\xff\xff\xff\x07", 9))
    # Produce v3: records length of 2^31-1 with 4 bytes behind it.
    head = ProduceRequest(acks=1, timeout_ms=1, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=b"")])]).encode(3)
    _fast(lambda: ProduceRequest.decode(head[:-4] + struct.pack(">i", 2**31 - 1) + b"abcd", 3))
    _fast(lambda: Reader(b"\xff\xfe").string())


def test_nullable_and_not():
    assert MetadataRequest(topics=None).encode(1) == struct.pack(">i", -1)
    assert MetadataRequest.decode(struct.pack(">i", -1), 1).topics is None
    with pytest.raises(ValueError):
        MetadataRequest(topics=None).encode(0)   # v0 has no null topics


def test_unsupported_version():
    with pytest.raises(UnsupportedVersionError):
        ProduceRequest().encode(10)


def test_tagged_fields_written_only_when_set_and_skipped_when_unknown():
    part = FetchResponse.FetchablePartitionResponse(partition=0, record_set=b"")
    resp = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[part])])
    plain = resp.encode(12)
    part.diverging_epoch = FetchResponse.EpochEndOffset(epoch=3, end_offset=100)
    tagged = resp.encode(12)
    assert len(tagged) > len(plain)
    assert FetchResponse.decode(tagged, 12).responses[0].partition_responses[0].diverging_epoch.end_offset == 100
    assert FetchResponse.decode(plain, 12).responses[0].partition_responses[0].diverging_epoch.epoch == -1


def test_varints_match_the_protobuf_encoding():
    cases = {0: b"\x00", -1: b"\x01", 1: b"\x02", 63: b"\x7e", -64: b"\x7f", 64: b"\x80\x01",
             2**31 - 1: b"\xfe\xff\xff\xff\x0f", -(2**31): b"\xff\xff\xff\xff\x0f"}
    for value, encoded in cases.items():
        w = Writer()
        w.varint(value)
        assert w.getvalue() == encoded
        assert Reader(encoded).varint() == value
    w = Writer()
    w.varlong(-(2**63))
    assert Reader(w.getvalue()).varlong() == -(2**63)


def test_header_versions():
    assert api.APIS[18].response_header_version(3) == 0          # ApiVersions: always v0
    assert api.APIS[3].response_header_version(9) == 1
    assert api.APIS[3].request_header_version(8) == 1
    assert api.APIS[3].request_header_version(9) == 2
    assert api.APIS[7].request_header_version(0) == 0            # ControlledShutdown v0


def test_request_frame_round_trip():
    body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a")],
                           allow_auto_topic_creation=True)
    for version in (0, 4, 9, 11):
        frame = api.encode_request(3, version, 42, "my-client", body)
        header, decoded = api.decode_request(frame)
        assert (header.request_api_key, header.request_api_version, header.correlation_id) == (3, version, 42)
        assert header.client_id == "my-client"
        assert [t.name for t in decoded.topics] == ["a"]


def test_consumer_protocol_blob_is_never_flexible():
    sub = ConsumerProtocolSubscription(topics=["a", "b"], user_data=None)
    data = sub.encode(1)
    assert data[:4] == struct.pack(">i", 2)          # classic int32 array count
