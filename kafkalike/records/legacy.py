"""Reading legacy message sets (magic 0 and 1), as old segments and old clients hold them.

Each top-level message is one "batch": either a plain message or a wrapper whose
value is a compressed inner message set. Layout after offset(8) and size(4):
crc uint32 (CRC-32 of magic..end), magic int8, attributes int8 (codec bits 0-2,
timestamp type bit 3 on magic 1), timestamp int64 (magic 1 only), key and value
as int32-length bytes (-1 = null). Reading only: nothing writes these any more.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from . import compression as codecs
from .header import InvalidRecordError, LOG_OVERHEAD
from .record import Record

_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_CRC_START = LOG_OVERHEAD + 4  # the CRC covers magic..end
_LEGACY_TIMESTAMP_TYPE_MASK = 0x08


@dataclass(slots=True)
class LegacyRecord(Record):
    """A magic 0/1 message: a Record plus its own CRC, which v2 records no longer carry."""
    crc: int = 0
    valid: bool = True


@dataclass(slots=True)
class _Message:
    offset: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    valid: bool


def _read_bytes(buf, pos: int, end: int) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise InvalidRecordError("legacy message is truncated")
    (length,) = _I.unpack_from(buf, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or length > end - pos:
        raise InvalidRecordError(f"invalid legacy key/value length {length}")
    return bytes(buf[pos:pos + length]), pos + length


def _read_message(buf, pos: int) -> tuple[_Message, int]:
    """Parse the entry at `pos` (offset + size + message); returns it and its end."""
    if len(buf) - pos < LOG_OVERHEAD + 6:
        raise InvalidRecordError(f"legacy entry at position {pos} is truncated")
    offset, size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos)
    end = pos + LOG_OVERHEAD + size
    if size < 14 or end > len(buf):
        raise InvalidRecordError(f"legacy entry at position {pos} has invalid size {size}")
    if magic not in (0, 1):
        raise InvalidRecordError(f"invalid magic {magic} in legacy entry at position {pos}")
    body = pos + LOG_OVERHEAD + 6
    timestamp = -1
    if magic == 1:
        if end - body < 8 + 8:
            raise InvalidRecordError(f"legacy entry at position {pos} is truncated")
        (timestamp,) = _Q.unpack_from(buf, body)
        body += 8
    key, body = _read_bytes(buf, body, end)
    value, body = _read_bytes(buf, body, end)
    if body != end:
        raise InvalidRecordError(f"legacy entry at position {pos} has {end - body} stray bytes")
    valid = zlib.crc32(buf[pos + _CRC_START:end]) == crc
    return _Message(offset, crc, magic, attributes, timestamp, key, value, valid), end


class LegacyBatch:
    """One top-level magic 0/1 message, shaped like RecordBatch for readers and tools."""

    __slots__ = ("position", "size", "_msg", "_records")
    is_control = False
    is_transactional = False
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1
    partition_leader_epoch = -1
    count = None

    def __init__(self, buf, position: int):
        self.position = position
        self._msg, end = _read_message(buf, position)
        self.size = end - position
        self._records = None

    magic = property(lambda self: self._msg.magic)
    crc = property(lambda self: self._msg.crc)
    attributes = property(lambda self: self._msg.attributes)
    compression = property(lambda self: self._msg.attributes & 0x07)
    last_offset = property(lambda self: self._msg.offset)
    next_offset = property(lambda self: self._msg.offset + 1)
    max_timestamp = property(lambda self: self._msg.timestamp)

    @property
    def timestamp_type(self) -> int:
        """-1 (none) for magic 0; else 0 CreateTime / 1 LogAppendTime."""
        if self._msg.magic == 0:
            return -1
        return 1 if self._msg.attributes & _LEGACY_TIMESTAMP_TYPE_MASK else 0

    @property
    def base_offset(self) -> int:
        if not self.compression:
            return self._msg.offset
        records = self.records()
        return records[0].offset if records else self._msg.offset

    def is_valid(self) -> bool:
        return self._msg.valid

    def ensure_valid(self) -> None:
        if not self._msg.valid:
            raise InvalidRecordError(f"legacy message at offset {self._msg.offset} fails its CRC check")

    def records(self, max_decompressed_size: int = codecs.DEFAULT_MAX_OUTPUT_SIZE) -> list[LegacyRecord]:
        if self._records is None:
            self._records = self._decode(max_decompressed_size)
        return self._records

    def __iter__(self):
        return iter(self.records())

    def _decode(self, limit: int) -> list[LegacyRecord]:
        msg = self._msg
        codec = msg.attributes & 0x07
        if not codec:
            return [LegacyRecord(msg.offset, msg.timestamp, msg.key, msg.value, [], msg.crc, msg.valid)]
        if msg.value is None:
            raise InvalidRecordError(f"compressed legacy message at offset {msg.offset} has no value")
        inner_buf = codecs.decompress(codec, msg.value, limit, kafka_v0_lz4=msg.magic == 0)
        inner = []
        pos = 0
        while pos < len(inner_buf):
            message, pos = _read_message(inner_buf, pos)
            if message.attributes & 0x07:
                raise InvalidRecordError("a compressed legacy message holds another compressed one")
            if msg.magic > 0 and message.magic != msg.magic:
                raise InvalidRecordError(
                    f"inner message magic {message.magic} differs from its wrapper's {msg.magic}")
            inner.append(message)
        if not inner:
            raise InvalidRecordError(f"compressed legacy message at offset {msg.offset} is empty")
        log_append = msg.magic == 1 and msg.attributes & _LEGACY_TIMESTAMP_TYPE_MASK
        # Magic 1 wrappers hold relative inner offsets and carry the last absolute one.
        # Like Kafka, keep the inner offsets as they are when that would go negative
        # (a producer's set before the broker assigned offsets).
        shift = msg.offset - inner[-1].offset if msg.magic == 1 else 0
        if shift < 0:
            shift = 0
        return [LegacyRecord(m.offset + shift, msg.timestamp if log_append else m.timestamp,
                             m.key, m.value, [], m.crc, m.valid) for m in inner]

    def __repr__(self) -> str:
        return (f"LegacyBatch(offset={self._msg.offset}, magic={self._msg.magic}, "
                f"codec={self.compression}, size={self.size})")
