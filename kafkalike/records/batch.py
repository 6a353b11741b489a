"""Record batch v2: a lazy view over batch bytes, the encoder, and a builder.

A RecordBatch reads its 61-byte header eagerly (via header.py) and decodes its
records only when asked, once. decode_batches walks a concatenation of batches
(a fetch response's records, a segment file) and also yields legacy magic 0/1
entries, so a reader handles whatever a log holds.
"""
from __future__ import annotations

import struct
import time
from typing import Iterable, Iterator

from crc32c import crc32c

from . import compression as codecs
from .header import (
    ATTRIBUTES, BatchHeader, CODEC_MASK, CONTROL_MASK, HEADER_SIZE, InvalidRecordError,
    LOG_OVERHEAD, MAGIC, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
    NO_SEQUENCE, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, read_header,
)
from .record import (
    MAX_RECORD_OVERHEAD, Record, decode_consumer_records, decode_records, encode_headers, encode_record,
)
from .varint import encode_varint

CREATE_TIME = 0
LOG_APPEND_TIME = 1
TIMESTAMP_TYPE_NAMES = {-1: "NoTimestampType", CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime"}

# Smallest legacy entry body (magic 0: crc + magic + attributes + two lengths);
# anything smaller in a size field cannot be a batch of any magic.
MIN_ENTRY_SIZE = 14

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc | attributes ... count
_PREFIX = struct.Struct(">qiibI")
_AFTER_CRC = struct.Struct(">hiqqqhii")
_SIZE = struct.Struct(">i")


def _now_ms() -> int:
    return int(time.time() * 1000)


class RecordBatch:
    """One v2 batch inside a buffer; records are decoded on first use and kept."""

    __slots__ = ("header", "position", "_buf", "_records")
    magic = 2

    def __init__(self, buf, position: int, header: BatchHeader):
        self._buf = buf
        self.position = position
        self.header = header
        self._records = None

    # Header fields, under the names Kafka's tools print.
    base_offset = property(lambda self: self.header.base_offset)
    last_offset = property(lambda self: self.header.last_offset)
    next_offset = property(lambda self: self.header.next_offset)
    count = property(lambda self: self.header.records_count)
    crc = property(lambda self: self.header.crc)
    size = property(lambda self: self.header.size)
    attributes = property(lambda self: self.header.attributes)
    compression = property(lambda self: self.header.compression)
    timestamp_type = property(lambda self: self.header.timestamp_type)
    is_transactional = property(lambda self: self.header.is_transactional)
    is_control = property(lambda self: self.header.is_control)
    producer_id = property(lambda self: self.header.producer_id)
    producer_epoch = property(lambda self: self.header.producer_epoch)
    base_sequence = property(lambda self: self.header.base_sequence)
    last_sequence = property(lambda self: self.header.last_sequence)
    partition_leader_epoch = property(lambda self: self.header.partition_leader_epoch)
    base_timestamp = property(lambda self: self.header.base_timestamp)
    max_timestamp = property(lambda self: self.header.max_timestamp)

    def to_bytes(self) -> bytes:
        """The whole batch as it sits in the buffer."""
        return bytes(self._buf[self.position:self.position + self.header.size])

    def compute_crc(self) -> int:
        """CRC-32C of attributes..end, for comparison with the stored `crc`."""
        return crc32c(self._buf[self.position + ATTRIBUTES:self.position + self.header.size])

    def is_valid(self) -> bool:
        return self.compute_crc() == self.header.crc

    def ensure_valid(self) -> None:
        if not self.is_valid():
            raise InvalidRecordError(
                f"batch at offset {self.header.base_offset} fails its CRC check "
                f"(stored {self.header.crc}, computed {self.compute_crc()})")

    def records(self, max_decompressed_size: int = codecs.DEFAULT_MAX_OUTPUT_SIZE) -> list[Record]:
        """All records with absolute offsets; LogAppendTime batches stamp maxTimestamp on each."""
        if self._records is None:
            h = self.header
            data, log_append = self._payload(max_decompressed_size)
            self._records = decode_records(data, h.records_count, h.base_offset,
                                           h.base_timestamp, log_append)
        return self._records

    def consumer_records(self, make, context: tuple, min_offset: int,
                         max_decompressed_size: int = codecs.DEFAULT_MAX_OUTPUT_SIZE) -> list:
        """The records from `min_offset` on, built by `make` (see decode_consumer_records);
        not kept, unlike records()."""
        h = self.header
        data, log_append = self._payload(max_decompressed_size)
        return decode_consumer_records(data, h.records_count, h.base_offset, h.base_timestamp, log_append,
                                       make, context, min_offset)

    def _payload(self, max_decompressed_size: int):
        """The uncompressed records section, and the LogAppendTime stamp (or None)."""
        h = self.header
        data = self._buf[self.position + HEADER_SIZE:self.position + h.batch_length + LOG_OVERHEAD]
        codec = h.attributes & CODEC_MASK
        if codec and (data or h.records_count):
            # Compaction can leave a batch with no records and no payload at all.
            data = codecs.decompress(codec, data, max_decompressed_size)
        return data, h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else None

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __len__(self) -> int:
        return self.header.records_count

    def __repr__(self) -> str:
        h = self.header
        return (f"RecordBatch(base_offset={h.base_offset}, last_offset={h.last_offset}, "
                f"count={h.records_count}, codec={h.compression}, size={h.size})")


def decode_batches(buf, *, verify_crc: bool = True, allow_partial_tail: bool = True) -> Iterator:
    """Yield each batch in a concatenation: RecordBatch for magic 2, LegacyBatch for 0/1.

    A trailing partial batch (a fetch response cut at max bytes, a torn segment
    tail) ends the iteration quietly unless `allow_partial_tail` is False. A
    corrupt size, an unknown magic or (with `verify_crc`) a failed CRC raises
    InvalidRecordError.
    """
    from .legacy import LegacyBatch  # legacy imports this module's helpers

    view = memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    end = len(view)
    pos = 0
    while pos < end:
        if end - pos < LOG_OVERHEAD + 5:  # up to and including magic
            break
        (size,) = _SIZE.unpack_from(view, pos + 8)
        if size < MIN_ENTRY_SIZE:
            raise InvalidRecordError(f"record size {size} at position {pos} is smaller than "
                                     f"the minimum record overhead ({MIN_ENTRY_SIZE})")
        if size > end - pos - LOG_OVERHEAD:
            break
        magic = view[pos + MAGIC]
        if magic == 2:
            batch = RecordBatch(view, pos, read_header(view, pos))
        elif magic in (0, 1):
            batch = LegacyBatch(view, pos)
        else:
            raise InvalidRecordError(f"invalid magic {magic} at position {pos}")
        if verify_crc:
            batch.ensure_valid()
        yield batch
        pos += size + LOG_OVERHEAD
    if pos < end and not allow_partial_tail:
        raise InvalidRecordError(f"{end - pos} trailing bytes at position {pos} are a partial batch")


def iter_records(buf, *, include_control: bool = False, verify_crc: bool = True,
                 max_decompressed_size: int = codecs.DEFAULT_MAX_OUTPUT_SIZE) -> Iterator[Record]:
    """Every record in a concatenation of batches, in order, with absolute offsets.

    Control records (transaction markers) are skipped unless asked for, as a
    consumer skips them.
    """
    for batch in decode_batches(buf, verify_crc=verify_crc):
        if batch.is_control and not include_control:
            continue
        yield from batch.records(max_decompressed_size)


def _attributes(compression: int, timestamp_type: int, is_transactional: bool, is_control: bool) -> int:
    if compression not in codecs.CODEC_NAMES:
        raise ValueError(f"unknown compression codec {compression}")
    attrs = compression
    if timestamp_type:
        attrs |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attrs |= TRANSACTIONAL_MASK
    if is_control:
        attrs |= CONTROL_MASK
    return attrs


def _assemble(records: bytes, *, count: int, last_offset_delta: int, base_offset: int,
              base_timestamp: int, max_timestamp: int, compression: int, timestamp_type: int,
              producer_id: int, producer_epoch: int, base_sequence: int,
              partition_leader_epoch: int, is_transactional: bool, is_control: bool) -> bytes:
    """Compress the records section if asked, then put the header with its CRC in front."""
    attrs = _attributes(compression, timestamp_type, is_transactional, is_control)
    if compression:
        records = codecs.compress(compression, records)
    after_crc = _AFTER_CRC.pack(attrs, last_offset_delta, base_timestamp, max_timestamp,
                                producer_id, producer_epoch, base_sequence, count)
    crc = crc32c(records, crc32c(after_crc))
    prefix = _PREFIX.pack(base_offset, HEADER_SIZE - LOG_OVERHEAD + len(records),
                          partition_leader_epoch, 2, crc)
    return b"".join((prefix, after_crc, records))


def encode_batch(records: Iterable, *, base_offset: int = 0, compression: int = 0,
                 timestamp_type: int = CREATE_TIME, producer_id: int = NO_PRODUCER_ID,
                 producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                 partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                 is_transactional: bool = False, is_control: bool = False,
                 base_timestamp: int | None = None) -> bytes:
    """Encode one v2 batch.

    Each item is a Record (its offset is ignored: offset deltas are 0..n-1) or a
    tuple (key, value[, headers[, timestamp]]). Items without a timestamp get
    `base_timestamp`, or the current time. The batch's base timestamp is
    `base_timestamp` if given, else the first record's.
    """
    items = records if isinstance(records, list) else list(records)
    # The loop below is encode_record inlined: one call less per record is
    # a measurable share of the producer's per-record cost.
    if not items:
        raise ValueError("a batch needs at least one record")
    default_ts = _now_ms() if base_timestamp is None else base_timestamp
    enc = encode_varint
    null = b"\x01"
    zero = b"\x00"
    parts = []
    add = parts.extend
    base_ts = base_timestamp
    max_ts = -1
    delta = 0
    for item in items:
        if type(item) is tuple:
            n = len(item)
            key = item[0]
            value = item[1]
            headers = item[2] if n > 2 else None
            ts = item[3] if n > 3 and item[3] is not None else default_ts
        else:
            key = item.key
            value = item.value
            headers = item.headers
            ts = item.timestamp
        if base_ts is None:
            base_ts = ts
        if ts > max_ts:
            max_ts = ts
        tsd = enc(ts - base_ts)
        od = enc(delta)
        if key is None:
            kl = null
            key = b""
        else:
            kl = enc(len(key))
        if value is None:
            vl = null
            value = b""
        else:
            vl = enc(len(value))
        hdr = encode_headers(headers) if headers else zero
        size = 1 + len(tsd) + len(od) + len(kl) + len(key) + len(vl) + len(value) + len(hdr)
        add((enc(size), zero, tsd, od, kl, key, vl, value, hdr))
        delta += 1
    return _assemble(b"".join(parts), count=delta, last_offset_delta=delta - 1,
                     base_offset=base_offset, base_timestamp=base_ts, max_timestamp=max_ts,
                     compression=compression, timestamp_type=timestamp_type,
                     producer_id=producer_id, producer_epoch=producer_epoch,
                     base_sequence=base_sequence, partition_leader_epoch=partition_leader_epoch,
                     is_transactional=is_transactional, is_control=is_control)


class BatchBuilder:
    """Append records one at a time (a producer's open batch), then build() to bytes.

    `size_in_bytes` is the running uncompressed size (header included), which is
    what a producer compares with batch.size. Producer id, epoch and base
    sequence may be set at drain time with set_producer_state, as sequence
    numbers are assigned only when a batch is sent.
    """

    def __init__(self, *, base_offset: int = 0, compression: int = 0,
                 timestamp_type: int = CREATE_TIME, producer_id: int = NO_PRODUCER_ID,
                 producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                 partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                 is_transactional: bool = False, is_control: bool = False,
                 base_timestamp: int | None = None):
        _attributes(compression, timestamp_type, is_transactional, is_control)
        self.base_offset = base_offset
        self.compression = compression
        self.timestamp_type = timestamp_type
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.partition_leader_epoch = partition_leader_epoch
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.base_timestamp = base_timestamp
        self.max_timestamp = -1
        self._parts: list[bytes] = []
        self._records_size = 0
        self._count = 0
        self._last_offset_delta = -1

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def size_in_bytes(self) -> int:
        return HEADER_SIZE + self._records_size

    @property
    def next_offset_delta(self) -> int:
        return self._last_offset_delta + 1

    @staticmethod
    def estimate_record_size(key, value, headers=()) -> int:
        """An upper bound on the bytes one more record adds (for has-room checks)."""
        size = MAX_RECORD_OVERHEAD
        if key is not None:
            size += len(key)
        if value is not None:
            size += len(value)
        if headers:
            size += len(encode_headers(headers))
        return size

    def append(self, key, value, headers=(), timestamp: int | None = None,
               offset_delta: int | None = None) -> int:
        """Add a record; returns its offset delta. Deltas must increase."""
        if timestamp is None:
            timestamp = _now_ms()
        if self.base_timestamp is None:
            self.base_timestamp = timestamp
        if offset_delta is None:
            offset_delta = self._last_offset_delta + 1
        elif offset_delta <= self._last_offset_delta:
            raise ValueError(f"offset delta {offset_delta} does not increase")
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        encoded = encode_record(offset_delta, timestamp - self.base_timestamp, key, value, headers)
        self._parts.append(encoded)
        self._records_size += len(encoded)
        self._count += 1
        self._last_offset_delta = offset_delta
        return offset_delta

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int,
                           is_transactional: bool) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional

    def build(self, *, last_offset_delta: int | None = None) -> bytes:
        """The batch's bytes.

        `last_offset_delta` lets the batch claim offsets past its last record: the log
        cleaner rewrites a batch with only its surviving records (appended with their
        original offset deltas) but keeps the original lastOffsetDelta, so the batch
        still ends where it did and the producer's last sequence number survives, as
        Kafka's MemoryRecordsBuilder.overrideLastOffset does. It may not be smaller than
        the last record's delta.
        """
        if not self._count:
            raise ValueError("a batch needs at least one record")
        if last_offset_delta is None:
            last_offset_delta = self._last_offset_delta
        elif last_offset_delta < self._last_offset_delta:
            raise ValueError(f"last offset delta {last_offset_delta} is below the last record's "
                             f"delta {self._last_offset_delta}")
        return _assemble(b"".join(self._parts), count=self._count,
                         last_offset_delta=last_offset_delta, base_offset=self.base_offset,
                         base_timestamp=self.base_timestamp, max_timestamp=self.max_timestamp,
                         compression=self.compression, timestamp_type=self.timestamp_type,
                         producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                         base_sequence=self.base_sequence,
                         partition_leader_epoch=self.partition_leader_epoch,
                         is_transactional=self.is_transactional, is_control=self.is_control)
