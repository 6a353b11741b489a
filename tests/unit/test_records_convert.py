"""Recompression for topics with a fixed compression.type keeps every record intact."""
from __future__ import annotations

import pytest

from kafkalike.records.batch import decode_batches, encode_batch
from kafkalike.records.compression import GZIP, NONE, SNAPPY, ZSTD
from kafkalike.records.convert import needs_recompression, recompress, target_codec
from kafkalike.records.header import InvalidRecordError


def test_target_codec_names():
    assert target_codec("producer") is None
    assert target_codec("uncompressed") == NONE
    assert target_codec("zstd") == ZSTD and target_codec("gzip") == GZIP


def test_recompress_keeps_records_headers_timestamps_and_producer_fields():
    records = [(b"k%d" % i, b"v" * i, [("h", b"x")], 1_000 + i) for i in range(20)]
    original = encode_batch(records, compression=SNAPPY, producer_id=7, producer_epoch=1, base_sequence=40)
    assert needs_recompression(original, ZSTD) and not needs_recompression(original, SNAPPY)
    converted = recompress(original + encode_batch(records[:2], compression=ZSTD), ZSTD)
    first, second = list(decode_batches(converted))
    assert first.compression == ZSTD and second.compression == ZSTD
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (7, 1, 40)
    before = [(r.key, r.value, r.headers, r.timestamp) for r in next(decode_batches(original)).records()]
    assert [(r.key, r.value, r.headers, r.timestamp) for r in first.records()] == before


def test_corrupt_input_is_refused():
    batch = bytearray(encode_batch([(b"k", b"v")], compression=GZIP))
    batch[-2] ^= 0xFF
    with pytest.raises(InvalidRecordError):
        recompress(bytes(batch), ZSTD)
