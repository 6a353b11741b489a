"""Reading legacy message sets (magic 0 and 1), as old segments and old clients hold them.

Each top-level message is one "batch": either a plain message or a wrapper whose
value is a compressed inner message set. Layout after offset(8) and size(4):
crc uint32 (CRC-32 of magic..end), magic int8, attributes int8 (codec bits 0-2,
timestamp type bit 3 on magic 1), timestamp int64 (magic 1 only), key and value
as int32-length bytes (-1 = null).

Writing exists for the places Kafka 2.8 still makes these: the log of a topic whose
message.format.version predates 0.11 (magic 1 for 0.10, magic 0 for 0.8/0.9), answers to
Fetch v0-v3, whose clients read only magic 0 (v0-1) or magic 1 (v2-3), and tests that
play an old producer. `check_legacy_entry` is what the log's recovery and a follower's
append check on such an entry without decompressing it.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from typing import Iterable, NamedTuple

from . import compression as codecs
from .header import InvalidRecordError, LOG_OVERHEAD
from .record import Record

_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_HEAD = struct.Struct(">qiI")  # offset, size, crc
_MAGIC_ATTRS = struct.Struct(">bb")
_CRC_START = LOG_OVERHEAD + 4  # the CRC covers magic..end
_LEGACY_TIMESTAMP_TYPE_MASK = 0x08
_NULL = _I.pack(-1)

# Bytes of one message besides its key and value: crc, magic, attributes, two lengths,
# and the timestamp on magic 1 (Kafka's LegacyRecord.RECORD_OVERHEAD_V0 / _V1).
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22


class LegacyEntry(NamedTuple):
    """The top-level fields of one magic 0/1 entry, read without decompressing it."""

    offset: int       # the entry's offset: its last offset (a wrapper carries its last inner one)
    size: int         # bytes it takes in a log, LOG_OVERHEAD included
    magic: int
    attributes: int   # codec in bits 0-2, LogAppendTime in bit 3 (magic 1)
    timestamp: int    # -1 on magic 0
    crc: int


def check_legacy_entry(buf, pos: int = 0) -> LegacyEntry:
    """The whole magic 0/1 entry at `pos`, checked as Kafka's LegacyRecord.ensureValid checks it.

    The size must cover the message's fixed fields and lie within `buf`, the magic be 0
    or 1, and the CRC-32 over magic..end match. A wrapper's inner messages are not read
    (Kafka's recovery does not decompress either). Raises InvalidRecordError.
    """
    if len(buf) - pos < LOG_OVERHEAD + 6:
        raise InvalidRecordError(f"legacy entry at position {pos} is truncated")
    offset, size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos)
    if magic not in (0, 1):
        raise InvalidRecordError(f"invalid magic {magic} in legacy entry at position {pos}")
    if size < (RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1):
        raise InvalidRecordError(f"Record size {size} at position {pos} is less than the minimum record "
                                 f"overhead ({RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1})")
    end = pos + LOG_OVERHEAD + size
    if end > len(buf):
        raise InvalidRecordError(f"legacy entry at position {pos} is truncated: {len(buf) - pos} of "
                                 f"{LOG_OVERHEAD + size} bytes")
    if zlib.crc32(memoryview(buf)[pos + _CRC_START:end]) != crc:
        raise InvalidRecordError(f"Record is corrupt (stored crc = {crc}) at position {pos}")
    timestamp = _Q.unpack_from(buf, pos + LOG_OVERHEAD + 6)[0] if magic == 1 else -1
    return LegacyEntry(offset, LOG_OVERHEAD + size, magic, attributes, timestamp, crc)


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


# ---------------------------------------------------------------------------- writing


def record_overhead(magic: int) -> int:
    """Bytes a message of `magic` takes besides key and value (LOG_OVERHEAD not included)."""
    return RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1


def encode_legacy_message(offset: int, key: bytes | None, value: bytes | None, *, magic: int,
                          timestamp: int = -1, attributes: int = 0) -> bytes:
    """One magic 0/1 entry: offset, size, then the message under Kafka's CRC-32 (not CRC-32C).

    `attributes` carries the codec (a wrapper) and, on magic 1, the LogAppendTime bit;
    magic 0 has no timestamp field, so `timestamp` is ignored there.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy messages have magic 0 or 1, not {magic}")
    parts = [_MAGIC_ATTRS.pack(magic, attributes)]
    if magic == 1:
        parts.append(_Q.pack(timestamp))
    for blob in (key, value):
        if blob is None:
            parts.append(_NULL)
        else:
            parts.append(_I.pack(len(blob)))
            parts.append(bytes(blob))
    body = b"".join(parts)
    return _HEAD.pack(offset, len(body) + 4, zlib.crc32(body)) + body


def _attributes(magic: int, codec: int, log_append_time: bool) -> int:
    if magic == 1 and log_append_time:
        return codec | _LEGACY_TIMESTAMP_TYPE_MASK
    return codec


def legacy_messages(records: Iterable[Record], *, magic: int, compression: int = codecs.NONE,
                    log_append_time: int | None = None) -> list[bytes]:
    """The top-level messages of a magic 0/1 message set holding `records` at their own offsets.

    This is what Kafka's builder writes. Uncompressed, every record is its own top-level
    message (the old formats batch only through compression). Compressed, the records
    become the inner messages of one wrapper whose offset is the last record's; magic 1
    inner offsets are relative to the first record (a consumer computes absolute ones
    from the wrapper), magic 0 inner offsets are absolute. With `log_append_time` (the
    batch's LogAppendTime) every timestamp is that time and magic 1 sets the timestamp
    type bit; otherwise a magic 1 wrapper carries its records' maximum timestamp.
    Headers have no place in these formats and are dropped, as Kafka's down-conversion
    drops them. Zstandard did not exist for them, so it is refused (ValueError), as
    Kafka refuses it. A list, so a caller filling a byte budget can stop between messages.
    """
    items = records if isinstance(records, list) else list(records)
    if not items:
        return []
    if compression == codecs.ZSTD:
        raise ValueError(f"ZStandard compression is not supported for magic {magic}")
    lat = log_append_time is not None
    attrs = _attributes(magic, codecs.NONE, lat)
    if compression == codecs.NONE:
        return [encode_legacy_message(r.offset, r.key, r.value, magic=magic,
                                      timestamp=log_append_time if lat else r.timestamp, attributes=attrs)
                for r in items]
    first = items[0].offset
    max_ts = -1
    inner = []
    for r in items:
        ts = log_append_time if lat else r.timestamp
        if ts > max_ts:
            max_ts = ts
        inner.append(encode_legacy_message(r.offset - first if magic == 1 else r.offset, r.key, r.value,
                                           magic=magic, timestamp=ts, attributes=attrs))
    payload = codecs.compress_legacy(compression, b"".join(inner), magic)
    return [encode_legacy_message(items[-1].offset, None, payload, magic=magic,
                                  timestamp=log_append_time if lat else max_ts,
                                  attributes=_attributes(magic, compression, lat))]


def encode_legacy_records(records: Iterable[Record], *, magic: int, compression: int = codecs.NONE,
                          log_append_time: int | None = None) -> bytes:
    """legacy_messages joined: the message set as bytes."""
    return b"".join(legacy_messages(records, magic=magic, compression=compression,
                                    log_append_time=log_append_time))
