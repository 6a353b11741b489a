"""The record batch v2 header, read and patched without touching the records.

This is the broker's hot path: the log validates and stamps batches through these
functions only, so they work on the raw bytes at fixed offsets and never decode the
records that follow the 61-byte header.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

# Field offsets inside a v2 batch (all big-endian).
BASE_OFFSET = 0
BATCH_LENGTH = 8
PARTITION_LEADER_EPOCH = 12
MAGIC = 16
CRC = 17
ATTRIBUTES = 21
LAST_OFFSET_DELTA = 23
BASE_TIMESTAMP = 27
MAX_TIMESTAMP = 35
PRODUCER_ID = 43
PRODUCER_EPOCH = 51
BASE_SEQUENCE = 53
RECORDS_COUNT = 57
HEADER_SIZE = 61  # RECORD_BATCH_OVERHEAD

# Bytes before batchLength counts: baseOffset + batchLength itself.
LOG_OVERHEAD = 12
# Legacy (magic 0/1) messages also start with offset(8) + size(4); magic sits at 16 too.

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
# The same layout for hot loops that unpack the 13 fields as a plain tuple (BatchHeader
# field order) instead of paying for a BatchHeader per batch (the log's append path).
HEADER_STRUCT = _HEADER
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_CRC = struct.Struct(">I")


class InvalidRecordError(ValueError):
    """A batch that is torn, too short, of an unknown magic, or fails its CRC."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies in a log (header fields included)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the v2 header at `pos`; raises InvalidRecordError if it is not one."""
    if len(buf) - pos < HEADER_SIZE:
        raise InvalidRecordError(f"batch header truncated at position {pos}")
    fields = _HEADER.unpack_from(buf, pos)
    if fields[3] != 2:
        raise InvalidRecordError(f"unsupported magic {fields[3]} at position {pos}")
    if fields[1] < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidRecordError(f"batch length {fields[1]} too small at position {pos}")
    return BatchHeader(*fields)


def compute_crc(buf, pos: int, size: int) -> int:
    """CRC-32C from the attributes field to the end of the batch."""
    return crc32c(memoryview(buf)[pos + ATTRIBUTES:pos + size])


def validate_batch(buf, pos: int = 0) -> BatchHeader:
    """Check that a whole, uncorrupted v2 batch starts at `pos`."""
    header = read_header(buf, pos)
    if len(buf) - pos < header.size:
        raise InvalidRecordError(
            f"batch at position {pos} is truncated: {len(buf) - pos} of {header.size} bytes")
    if compute_crc(buf, pos, header.size) != header.crc:
        raise InvalidRecordError(f"batch at position {pos} fails its CRC check")
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise InvalidRecordError(f"batch at position {pos} has negative counts")
    return header


def iter_batch_headers(buf, pos: int = 0, end: int | None = None, check_crc: bool = True):
    """Yield (position, header) for each whole batch in buf[pos:end].

    Stops with InvalidRecordError at the first torn or corrupt batch, so callers
    (recovery, produce validation) learn exactly where the valid prefix ends.
    """
    end = len(buf) if end is None else end
    view = memoryview(buf)[:end]
    while pos < end:
        header = validate_batch(view, pos) if check_crc else read_header(view, pos)
        if pos + header.size > end:
            raise InvalidRecordError(f"batch at position {pos} runs past the end")
        yield pos, header
        pos += header.size


def set_base_offset(buf: bytearray, pos: int, base_offset: int) -> None:
    """Assign offsets in place; the CRC does not cover baseOffset, so it stays valid."""
    _Q.pack_into(buf, pos + BASE_OFFSET, base_offset)


def set_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    """Stamp the leader epoch in place; also outside the CRC by design."""
    _I.pack_into(buf, pos + PARTITION_LEADER_EPOCH, epoch)


def set_max_timestamp_log_append(buf: bytearray, pos: int, size: int, now_ms: int) -> None:
    """For message.timestamp.type=LogAppendTime: set the type bit and maxTimestamp.

    These fields are inside the CRC, so the CRC is recomputed (records untouched).
    """
    attrs = struct.unpack_from(">h", buf, pos + ATTRIBUTES)[0] | TIMESTAMP_TYPE_MASK
    struct.pack_into(">h", buf, pos + ATTRIBUTES, attrs)
    _Q.pack_into(buf, pos + MAX_TIMESTAMP, now_ms)
    _CRC.pack_into(buf, pos + CRC, compute_crc(buf, pos, size))
