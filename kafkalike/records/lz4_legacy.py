"""The LZ4 frame header checksum that magic-0 Kafka wrote wrongly (KAFKA-3160).

Kafka before 0.10 computed the frame descriptor's header checksum over the frame
magic as well, so standard decoders reject those frames. Readers of magic-0
message sets replace the byte with the correct checksum before decoding; writers of
magic-0 message sets (answers to Fetch v0-1) put the wrong one back, because that is
what Kafka still writes for magic 0 and what clients of that age check.
"""
from __future__ import annotations

from .header import InvalidRecordError

_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M = 0xFFFFFFFF

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32; only used on frame descriptors of a few bytes, so plain Python is fine."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos:pos + 4], "little")
                v[i] = (_rotl((v[i] + lane * _P2) & _M, 13) * _P1) & _M
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while pos + 4 <= n:
        h = (h + int.from_bytes(data[pos:pos + 4], "little") * _P3) & _M
        h = (_rotl(h, 17) * _P4) & _M
        pos += 4
    while pos < n:
        h = (h + data[pos] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    h ^= h >> 16
    return h


def descriptor_end(frame: bytes) -> int:
    """Position of the header checksum byte of an LZ4 frame."""
    if len(frame) < 7 or frame[:4] != LZ4_FRAME_MAGIC:
        raise InvalidRecordError("not an LZ4 frame")
    flg = frame[4]
    end = 6
    if flg & 0x08:
        end += 8  # content size
    if flg & 0x01:
        end += 4  # dictionary id
    if len(frame) <= end:
        raise InvalidRecordError("LZ4 frame header is truncated")
    return end


def fix_kafka_v0_lz4_header(frame: bytes) -> bytes:
    """Return the frame with a correct header checksum (a no-op on a correct frame)."""
    end = descriptor_end(frame)
    checksum = (xxh32(frame[4:end]) >> 8) & 0xFF
    return frame[:end] + bytes((checksum,)) + frame[end + 1:]


def break_kafka_v0_lz4_header(frame: bytes) -> bytes:
    """Return the frame with the checksum magic-0 Kafka writes: over magic and descriptor."""
    end = descriptor_end(frame)
    checksum = (xxh32(frame[:end]) >> 8) & 0xFF
    return frame[:end] + bytes((checksum,)) + frame[end + 1:]
