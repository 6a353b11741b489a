"""Zigzag varints: known encodings, round trips, and refusal of hostile input."""
import pytest
from hypothesis import given, strategies as st

from kafkalike.records import InvalidRecordError
from kafkalike.records.varint import decode_varint, decode_varlong, encode_varint, varint_size

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


@pytest.mark.parametrize("value,encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (63, b"\x7e"),
    (64, b"\x80\x01"), (300, b"\xd8\x04"), ((1 << 31) - 1, b"\xfe\xff\xff\xff\x0f"),
    (-(1 << 31), b"\xff\xff\xff\xff\x0f"),
])
def test_known_encodings(value, encoded):
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))
    assert varint_size(value) == len(encoded)


@given(INT32)
def test_varint_round_trip(value):
    encoded = encode_varint(value)
    assert decode_varint(b"xx" + encoded + b"yy", 2) == (value, 2 + len(encoded))


@given(INT64)
def test_varlong_round_trip(value):
    encoded = encode_varint(value)
    assert len(encoded) <= 10
    assert decode_varlong(encoded, 0) == (value, len(encoded))


def test_truncated_varint_is_invalid():
    with pytest.raises(InvalidRecordError):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(InvalidRecordError):
        decode_varint(b"", 0)


def test_over_long_varint_is_invalid():
    with pytest.raises(InvalidRecordError):
        decode_varint(b"\x80" * 5 + b"\x01", 0)
    with pytest.raises(InvalidRecordError):
        decode_varlong(b"\xff" * 11, 0)


def test_varint_outside_int32_is_invalid():
    with pytest.raises(InvalidRecordError):
        decode_varint(encode_varint(1 << 31), 0)
    assert decode_varlong(encode_varint(1 << 31), 0)[0] == 1 << 31


def test_values_outside_int64_cannot_be_encoded():
    with pytest.raises(ValueError):
        encode_varint(1 << 63)
