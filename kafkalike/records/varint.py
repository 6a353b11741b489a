"""Zigzag varints as the v2 record format uses them (protobuf style, LEB128 + zigzag).

The record codec inlines the one- and two-byte cases of decoding in its own loop
for speed; these functions are the general, bounds-checked path it falls back to,
and the encoder everyone uses. Every decoding error is an InvalidRecordError so
hostile input can never surface as IndexError or loop forever.
"""
from __future__ import annotations

from .header import InvalidRecordError

VARINT_MAX_BYTES = 5    # int32
VARLONG_MAX_BYTES = 10  # int64

_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _encode_uncached(value: int) -> bytes:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} does not fit a varlong")
    z = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# Lengths, offset deltas and timestamp deltas are nearly always small and
# non-negative; looking their encoding up beats computing it in Python.
_CACHE_MIN = -1
_CACHE_MAX = 1 << 14
_CACHE = tuple(_encode_uncached(v) for v in range(_CACHE_MIN, _CACHE_MAX))


def encode_varint(value: int) -> bytes:
    """Zigzag-encode an int32 or int64 (the byte form is the same for both)."""
    if _CACHE_MIN <= value < _CACHE_MAX:
        return _CACHE[value + 1]
    return _encode_uncached(value)


def varint_size(value: int) -> int:
    """Bytes the zigzag encoding of `value` takes."""
    z = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while z > 0x7F:
        z >>= 7
        size += 1
    return size


def decode_varint(buf, pos: int, max_bytes: int = VARINT_MAX_BYTES) -> tuple[int, int]:
    """Decode a zigzag varint at `pos`; returns (value, position after it).

    `max_bytes` is 5 for int32 fields and 10 for int64 ones; a longer run of
    continuation bits, a value outside the field's range, or running off the
    end of `buf` is an InvalidRecordError.
    """
    end = len(buf)
    raw = 0
    shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise InvalidRecordError("varint runs past the end of the buffer")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            value = (raw >> 1) ^ -(raw & 1)
            if max_bytes == VARINT_MAX_BYTES:
                if not _INT32_MIN <= value <= _INT32_MAX:
                    raise InvalidRecordError(f"varint {value} overflows int32")
            elif not _INT64_MIN <= value <= _INT64_MAX:
                raise InvalidRecordError(f"varlong {value} overflows int64")
            return value, pos
        shift += 7
    raise InvalidRecordError(f"varint longer than {max_bytes} bytes")


def decode_varlong(buf, pos: int) -> tuple[int, int]:
    return decode_varint(buf, pos, VARLONG_MAX_BYTES)
