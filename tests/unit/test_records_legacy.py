"""Reading magic 0/1 message sets: plain and compressed wrappers, offsets, timestamps, CRC."""
import struct
import zlib

import pytest

from kafkalike.records import (
    GZIP, InvalidRecordError, LegacyBatch, RecordBatch, compress, decode_batches, encode_batch,
    iter_records,
)

TS = 1_600_000_000_000


def message(offset, key, value, *, magic=1, attributes=0, timestamp=TS, crc=None) -> bytes:
    """One legacy entry, written out field by field from the format description."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for blob in (key, value):
        body += struct.pack(">i", -1) if blob is None else struct.pack(">i", len(blob)) + blob
    crc = zlib.crc32(body) if crc is None else crc
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def test_plain_magic1_messages():
    buf = message(0, b"k", b"v", timestamp=TS) + message(1, None, b"w", timestamp=TS + 1)
    batches = list(decode_batches(buf))
    assert all(isinstance(b, LegacyBatch) for b in batches)
    assert [(b.magic, b.last_offset, b.base_offset, b.max_timestamp, b.timestamp_type) for b in batches] == \
        [(1, 0, 0, TS, 0), (1, 1, 1, TS + 1, 0)]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_records(buf)] == \
        [(0, TS, b"k", b"v", []), (1, TS + 1, None, b"w", [])]


def test_magic0_has_no_timestamp():
    buf = message(5, b"k", b"v", magic=0)
    batch = next(decode_batches(buf))
    assert (batch.timestamp_type, batch.max_timestamp) == (-1, -1)
    assert [(r.offset, r.timestamp) for r in batch.records()] == [(5, -1)]


def test_compressed_magic1_wrapper_uses_relative_inner_offsets():
    inner = b"".join(message(i, b"k%d" % i, b"v%d" % i, timestamp=TS + i) for i in range(3))
    wrapper = message(102, None, compress(GZIP, inner), attributes=GZIP, timestamp=TS + 2)
    batch = next(decode_batches(wrapper))
    assert batch.compression == GZIP
    assert batch.last_offset == 102
    assert batch.base_offset == 100
    assert [(r.offset, r.timestamp, r.key) for r in batch.records()] == \
        [(100, TS, b"k0"), (101, TS + 1, b"k1"), (102, TS + 2, b"k2")]
    assert all(r.valid for r in batch.records())


def test_compressed_magic1_log_append_time_overrides_inner_timestamps():
    inner = message(0, None, b"a", timestamp=1) + message(1, None, b"b", timestamp=2)
    wrapper = message(9, None, compress(GZIP, inner), attributes=GZIP | 0x08, timestamp=TS)
    batch = next(decode_batches(wrapper))
    assert batch.timestamp_type == 1
    assert [(r.offset, r.timestamp) for r in batch.records()] == [(8, TS), (9, TS)]


def test_compressed_magic0_wrapper_uses_absolute_inner_offsets():
    inner = message(40, None, b"a", magic=0) + message(41, None, b"b", magic=0)
    wrapper = message(41, None, compress(GZIP, inner), magic=0, attributes=GZIP)
    assert [r.offset for r in iter_records(wrapper)] == [40, 41]


def test_crc32_mismatch_is_detected():
    buf = message(0, b"k", b"v", crc=12345)
    with pytest.raises(InvalidRecordError, match="CRC"):
        list(decode_batches(buf))
    batch = next(decode_batches(buf, verify_crc=False))
    assert not batch.is_valid()
    assert batch.crc == 12345


def test_nested_compression_and_bad_lengths_are_invalid():
    inner = message(0, None, compress(GZIP, message(0, None, b"x")), attributes=GZIP)
    nested = message(0, None, compress(GZIP, inner), attributes=GZIP)
    with pytest.raises(InvalidRecordError):
        list(iter_records(nested))
    bad = bytearray(message(0, b"k", b"v"))
    struct.pack_into(">i", bad, 12 + 4 + 2 + 8, 1000)  # key length past the end
    with pytest.raises(InvalidRecordError):
        list(decode_batches(bytes(bad), verify_crc=False))


def test_mixed_legacy_and_v2_log():
    buf = message(0, None, b"old") + encode_batch([(None, b"new", None, TS)], base_offset=1)
    batches = list(decode_batches(buf))
    assert [type(b) for b in batches] == [LegacyBatch, RecordBatch]
    assert [r.value for r in iter_records(buf)] == [b"old", b"new"]


def test_producer_side_magic1_wrapper_keeps_inner_offsets():
    # Before a broker assigns offsets the wrapper says 0; Kafka then leaves inner offsets alone.
    inner = message(0, None, b"a") + message(1, None, b"b")
    wrapper = message(0, None, compress(GZIP, inner), attributes=GZIP)
    assert [r.offset for r in iter_records(wrapper)] == [0, 1]
