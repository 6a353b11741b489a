"""Property tests: random records round-trip through every codec, and hostile bytes
(garbage, truncation, bit flips, CRC-correct but malformed records) only ever raise
InvalidRecordError."""
import struct

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkalike.records import (
    InvalidRecordError, decode_batches, decode_records, encode_batch, iter_records,
)
from kafkalike.records.varint import encode_varint

CODECS = st.sampled_from([0, 1, 2, 3, 4])
BYTES = st.one_of(st.none(), st.binary(max_size=300))
HEADERS = st.lists(st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20))),
                   max_size=3)
TIMESTAMPS = st.integers(0, 1 << 45)
RECORDS = st.lists(st.tuples(BYTES, BYTES, HEADERS, TIMESTAMPS), min_size=1, max_size=30)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rebuild(records_section: bytes, count: int, attributes: int = 0, base_timestamp: int = 0) -> bytes:
    """A batch around arbitrary record bytes with a correct CRC, as an attacker could make."""
    after_crc = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), base_timestamp,
                            base_timestamp, -1, -1, -1, count) + records_section
    return struct.pack(">qiibI", 0, 49 + len(records_section), 0, 2, crc32c(after_crc)) + after_crc


def decode_all(buf):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_records(buf)]


@FAST
@given(RECORDS, CODECS, st.integers(0, 1 << 40))
def test_round_trip(items, codec, base_offset):
    buf = encode_batch(items, base_offset=base_offset, compression=codec)
    assert decode_all(buf) == [(base_offset + i, t, k, v, h) for i, (k, v, h, t) in enumerate(items)]


@FAST
@given(RECORDS, CODECS, st.data())
def test_truncation_is_detected(items, codec, data):
    buf = encode_batch(items, compression=codec)
    cut = data.draw(st.integers(1, len(buf) - 1))
    with pytest.raises(InvalidRecordError):
        list(decode_batches(buf[:cut], allow_partial_tail=False))
    # A reader that tolerates a partial tail sees no batch at all.
    assert list(decode_batches(buf[:cut])) == []


@FAST
@given(RECORDS, CODECS, st.data())
def test_bit_flips_fail_the_crc(items, codec, data):
    buf = bytearray(encode_batch(items, compression=codec))
    pos = data.draw(st.integers(17, len(buf) - 1))  # magic onward is covered or checked
    buf[pos] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(InvalidRecordError):
        decode_all(bytes(buf))


@FAST
@given(RECORDS, st.data())
def test_crc_correct_but_mutated_records_never_escape_as_other_errors(items, data):
    good = encode_batch(items)
    section = bytearray(good[61:])
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(section) - 1))
        section[pos] = data.draw(st.integers(0, 255))
    count = data.draw(st.sampled_from([len(items), len(items) + 1, max(len(items) - 1, 0), 1 << 30]))
    try:
        decode_all(rebuild(bytes(section), count))
    except InvalidRecordError:
        pass


@FAST
@given(st.binary(max_size=400), st.integers(-5, 1 << 31))
def test_garbage_records_section_is_invalid_or_decodes(garbage, count):
    try:
        records = decode_records(garbage, count, 0, 0)
    except InvalidRecordError:
        return
    assert len(records) == count


@FAST
@given(st.binary(min_size=17, max_size=300))
def test_garbage_buffers_never_escape_as_other_errors(garbage):
    try:
        decode_all(garbage)
    except InvalidRecordError:
        pass


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


@pytest.mark.parametrize("section,count,why", [
    (_record(b"\x00\x00\x00" + encode_varint(-5) + b"\x01\x00"), 1, "negative key length"),
    (_record(b"\x00\x00\x00\x01" + encode_varint(-2) + b"\x00"), 1, "negative value length"),
    (_record(b"\x00\x00\x00" + encode_varint(1000) + b"ab\x01\x00"), 1, "key beyond the record"),
    (_record(b"\x00\x00\x00\x01" + encode_varint(1 << 30) + b"\x00"), 1, "value beyond the buffer"),
    (encode_varint(1 << 29) + b"\x00" * 10, 1, "record length beyond the buffer"),
    (b"\xff\xff\xff\xff\xff\xff\x01" + b"\x00" * 10, 1, "over-long length varint"),
    (_record(b"\x00" + b"\xff" * 11 + b"\x00\x01\x01\x00"), 1, "over-long timestamp varlong"),
    (_record(b"\x00\x00\x00\x01\x01" + encode_varint(1 << 28)), 1, "huge header count"),
    (_record(b"\x00\x00\x00\x01\x01\x02" + encode_varint(-1) + b"\x01"), 1, "null header key"),
    (_record(b"\x00\x00\x00\x01\x01\x02\x04\xff\xfe\x01"), 1, "header key not UTF-8"),
    (_record(b"\x00\x00\x00\x01\x01\x00") * 2, (1 << 31) - 1, "count far beyond the bytes"),
    (_record(b"\x00\x00\x00\x01\x01\x00") * 2, 1, "bytes left over"),
    (_record(b"\x00\x00\x00\x01\x01\x00"), -1, "negative count"),
    (_record(b"\x00\x00\x00\x01\x01\x00\x00"), 1, "record longer than its fields"),
    (b"\x04\x00\x00\x00\x01\x01\x00", 1, "record shorter than its fields"),
])
def test_hostile_records_with_valid_crc(section, count, why):
    with pytest.raises(InvalidRecordError):
        decode_all(rebuild(section, count))


def test_minimal_record_decodes():
    buf = rebuild(_record(b"\x00\x00\x00\x01\x01\x00"), 1)
    assert decode_all(buf) == [(0, 0, None, None, [])]


def test_hostile_compressed_section_with_valid_crc():
    # gzip codec bit with a non-gzip payload
    with pytest.raises(InvalidRecordError):
        decode_all(rebuild(b"definitely not gzip", 1, attributes=1))
    # codec id 7 does not exist
    with pytest.raises(InvalidRecordError):
        decode_all(rebuild(b"\x00" * 8, 1, attributes=7))


def test_batch_length_smaller_than_header_is_invalid():
    buf = bytearray(encode_batch([(b"k", b"v", None, 0)]))
    struct.pack_into(">i", buf, 8, 30)
    with pytest.raises(InvalidRecordError):
        list(decode_batches(bytes(buf)))


def test_size_below_minimum_and_unknown_magic_are_invalid():
    buf = bytearray(encode_batch([(b"k", b"v", None, 0)]))
    small = bytearray(buf)
    struct.pack_into(">i", small, 8, 5)
    with pytest.raises(InvalidRecordError, match="minimum"):
        list(decode_batches(bytes(small)))
    buf[16] = 3
    with pytest.raises(InvalidRecordError, match="magic"):
        list(decode_batches(bytes(buf)))
