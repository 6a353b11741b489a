"""A tiny v2 batch builder for the storage tests, checked here against kafka-python's decoder.

Storage never decodes records, so its tests only need valid batches; building them
here keeps the storage tests independent of kafkalike.records. The checks below make
sure the builder produces what a real Kafka client reads.
"""
from __future__ import annotations

import struct
from typing import Sequence

from crc32c import crc32c

_AFTER_CRC = struct.Struct(">hiqqqhii")
BASE_TIMESTAMP = 1_600_000_000_000


def _varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)  # zigzag
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes) -> bytes:
    body = (b"\x00" + _varint(timestamp_delta) + _varint(offset_delta)
            + (_varint(-1) if key is None else _varint(len(key)) + key)
            + _varint(len(value)) + value + _varint(0))
    return _varint(len(body)) + body


def make_batch(values: Sequence[bytes] = (b"v",), *, base_offset: int = 0,
               timestamps: Sequence[int] | None = None, epoch: int = -1, attributes: int = 0,
               producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
               key: bytes | None = None) -> bytes:
    """One uncompressed v2 batch holding `values`, CRC-32C over bytes 21..end."""
    if timestamps is None:
        timestamps = [BASE_TIMESTAMP + i for i in range(len(values))]
    first = timestamps[0]
    records = b"".join(_record(i, ts - first, key, v) for i, (v, ts) in enumerate(zip(values, timestamps)))
    after_crc = _AFTER_CRC.pack(attributes, len(values) - 1, first, max(timestamps), producer_id,
                                producer_epoch, base_sequence, len(values)) + records
    crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # epoch + magic + crc + rest
    return struct.pack(">qiibI", base_offset, length, epoch, 2, crc) + after_crc


def sized_batch(size: int, *, base_offset: int = 0, count: int = 1, timestamp: int = BASE_TIMESTAMP,
                epoch: int = -1, fill: int = 0x61) -> bytes:
    """A batch of exactly `size` bytes with `count` records (value padded to fit)."""
    values = [b"x"] * (count - 1)
    overhead = len(make_batch(values + [b""], base_offset=base_offset, timestamps=[timestamp] * count,
                              epoch=epoch))
    estimate = size - overhead
    # Length varints grow with the value, so the exact pad is at most a few bytes smaller.
    for pad in range(estimate, max(-1, estimate - 8), -1):
        batch = make_batch(values + [bytes([fill]) * pad], base_offset=base_offset,
                           timestamps=[timestamp] * count, epoch=epoch)
        if len(batch) == size:
            return batch
    raise ValueError(f"cannot build a batch of {size} bytes")


def test_kafka_python_reads_the_builders_batches():
    from kafka.record.default_records import DefaultRecordBatch

    raw = make_batch([b"a", b"bb", b"ccc"], base_offset=40, timestamps=[1000, 1003, 1001], epoch=7,
                     key=b"k")
    batch = DefaultRecordBatch(bytearray(raw))
    assert batch.validate_crc()
    assert batch.base_offset == 40 and batch.leader_epoch == 7
    assert batch.max_timestamp == 1003
    records = list(batch)
    assert [r.value for r in records] == [b"a", b"bb", b"ccc"]
    assert [r.offset for r in records] == [40, 41, 42]
    assert [r.timestamp for r in records] == [1000, 1003, 1001]
    assert all(r.key == b"k" for r in records)


def test_sized_batch_has_the_exact_size_and_a_valid_crc():
    from kafka.record.default_records import DefaultRecordBatch

    for size in (100, 200, 4096, 16384):
        raw = sized_batch(size, count=3)
        assert len(raw) == size
        assert DefaultRecordBatch(bytearray(raw)).validate_crc()
