"""Record batch v2 encode/decode: header fields, attributes, builder, views, iteration."""
import struct

import pytest
from crc32c import crc32c

from kafkalike.records import (
    GZIP, LZ4, NONE, SNAPPY, ZSTD, BatchBuilder, InvalidRecordError, Record, RecordBatch,
    decode_batches, encode_batch, iter_records,
)
from kafkalike.records.header import HEADER_SIZE, read_header, validate_batch

TS = 1_600_000_000_000


def _one(buf) -> RecordBatch:
    batches = list(decode_batches(buf))
    assert len(batches) == 1
    return batches[0]


def test_header_fields_and_attributes_round_trip():
    buf = encode_batch([(b"k", b"v", None, TS), (None, None, None, TS + 5)], base_offset=42,
                       compression=GZIP, timestamp_type=0, producer_id=1234, producer_epoch=7,
                       base_sequence=99, partition_leader_epoch=3, is_transactional=True)
    header = validate_batch(buf)
    assert header.base_offset == 42
    assert header.last_offset == 43
    assert header.records_count == 2
    assert header.partition_leader_epoch == 3
    assert header.producer_id == 1234
    assert header.producer_epoch == 7
    assert header.base_sequence == 99
    assert header.last_sequence == 100
    assert header.base_timestamp == TS
    assert header.max_timestamp == TS + 5
    assert header.compression == GZIP
    assert header.is_transactional and not header.is_control
    assert header.timestamp_type == 0
    assert header.size == len(buf)


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_records_round_trip_every_codec(codec):
    items = [(b"key-%d" % i, b"value-%d" % i * 20, [("trace", b"t%d" % i), ("empty", None)], TS + i)
             for i in range(200)]
    batch = _one(encode_batch(items, base_offset=1000, compression=codec))
    assert batch.compression == codec
    records = batch.records()
    assert [r.offset for r in records] == list(range(1000, 1200))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == \
        [(k, v, h, t) for k, v, h, t in items]


def test_null_and_empty_keys_values_are_distinct():
    batch = _one(encode_batch([(None, b""), (b"", None), (None, None)], base_timestamp=TS))
    assert [(r.key, r.value) for r in batch.records()] == [(None, b""), (b"", None), (None, None)]


def test_record_objects_encode_like_tuples():
    records = [Record(5, TS, b"a", b"b", [("h", b"v")]), Record(6, TS + 1, None, b"c", [])]
    from_records = encode_batch(records)
    from_tuples = encode_batch([(b"a", b"b", [("h", b"v")], TS), (None, b"c", [], TS + 1)])
    assert from_records == from_tuples
    assert [r.offset for r in _one(from_records).records()] == [0, 1]


def test_items_without_timestamp_get_base_timestamp():
    batch = _one(encode_batch([(b"a", b"b"), (b"c", b"d")], base_timestamp=TS))
    assert [r.timestamp for r in batch.records()] == [TS, TS]
    assert batch.max_timestamp == TS


def test_base_timestamp_before_first_record_gives_positive_deltas():
    batch = _one(encode_batch([(None, b"x", None, TS + 10), (None, b"y", None, TS - 3)],
                              base_timestamp=TS))
    assert batch.base_timestamp == TS
    assert [r.timestamp for r in batch.records()] == [TS + 10, TS - 3]
    assert batch.max_timestamp == TS + 10


def test_log_append_time_batch_stamps_max_timestamp_on_every_record():
    batch = _one(encode_batch([(None, b"x", None, TS), (None, b"y", None, TS + 9)], timestamp_type=1))
    assert batch.timestamp_type == 1
    assert [r.timestamp for r in batch.records()] == [TS + 9, TS + 9]


def test_control_and_transactional_bits_are_independent():
    for transactional in (False, True):
        for control in (False, True):
            h = read_header(encode_batch([(b"k", b"v")], is_transactional=transactional,
                                         is_control=control))
            assert h.is_transactional == transactional
            assert h.is_control == control
            assert h.attributes == (0x10 if transactional else 0) | (0x20 if control else 0)


def test_crc_is_crc32c_from_attributes_to_end():
    buf = encode_batch([(b"k", b"v")], base_timestamp=TS)
    (stored,) = struct.unpack_from(">I", buf, 17)
    assert stored == crc32c(buf[21:])


def test_empty_batch_is_rejected():
    with pytest.raises(ValueError):
        encode_batch([])
    with pytest.raises(ValueError):
        BatchBuilder().build()


def test_unknown_codec_is_rejected():
    with pytest.raises(ValueError):
        encode_batch([(b"k", b"v")], compression=5)


def test_builder_matches_encode_batch_and_tracks_size():
    builder = BatchBuilder(base_offset=7, compression=NONE)
    assert builder.size_in_bytes == HEADER_SIZE
    items = [(b"k%d" % i, b"v" * i, [("h", b"1")], TS + i) for i in range(10)]
    for key, value, headers, ts in items:
        before = builder.size_in_bytes
        assert builder.append(key, value, headers, timestamp=ts) == builder.record_count - 1
        assert builder.size_in_bytes - before <= BatchBuilder.estimate_record_size(key, value, headers)
    built = builder.build()
    assert built == encode_batch(items, base_offset=7)
    assert len(built) == builder.size_in_bytes


def test_builder_producer_state_set_at_drain_time():
    builder = BatchBuilder(compression=LZ4)
    builder.append(b"k", b"v", timestamp=TS)
    builder.set_producer_state(producer_id=55, producer_epoch=2, base_sequence=10, is_transactional=True)
    batch = _one(builder.build())
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (55, 2, 10)
    assert batch.is_transactional


def test_builder_explicit_offset_deltas_leave_gaps():
    builder = BatchBuilder(base_offset=100)
    builder.append(b"a", b"1", timestamp=TS, offset_delta=0)
    builder.append(b"b", b"2", timestamp=TS, offset_delta=5)
    with pytest.raises(ValueError):
        builder.append(b"c", b"3", timestamp=TS, offset_delta=5)
    batch = _one(builder.build())
    assert batch.last_offset == 105
    assert batch.count == 2
    assert [r.offset for r in batch.records()] == [100, 105]


def test_decode_batches_walks_a_concatenation():
    bufs = [encode_batch([(None, b"%d" % i, None, TS)], base_offset=i * 10, compression=codec)
            for i, codec in enumerate([NONE, GZIP, SNAPPY, LZ4, ZSTD])]
    batches = list(decode_batches(b"".join(bufs)))
    assert [b.base_offset for b in batches] == [0, 10, 20, 30, 40]
    assert [b.position for b in batches] == [sum(map(len, bufs[:i])) for i in range(5)]
    assert [b.to_bytes() for b in batches] == bufs


def test_partial_tail_is_ignored_unless_strict():
    full = encode_batch([(None, b"a", None, TS)]) + encode_batch([(None, b"b", None, TS)], base_offset=1)
    cut = full[:-3]
    assert [r.value for r in iter_records(cut)] == [b"a"]
    with pytest.raises(InvalidRecordError):
        list(decode_batches(cut, allow_partial_tail=False))


def test_crc_failure_is_detected():
    buf = bytearray(encode_batch([(b"key", b"value", None, TS)]))
    buf[-1] ^= 0x01
    with pytest.raises(InvalidRecordError, match="CRC"):
        list(decode_batches(bytes(buf)))
    batch = next(decode_batches(bytes(buf), verify_crc=False))
    assert not batch.is_valid()


def test_offset_and_leader_epoch_are_outside_the_crc():
    from kafkalike.records.header import set_base_offset, set_partition_leader_epoch
    buf = bytearray(encode_batch([(b"k", b"v", None, TS)]))
    set_base_offset(buf, 0, 500)
    set_partition_leader_epoch(buf, 0, 9)
    batch = _one(bytes(buf))
    assert batch.is_valid()
    assert batch.partition_leader_epoch == 9
    assert [r.offset for r in batch.records()] == [500]


def test_iter_records_skips_control_batches_unless_asked():
    from kafkalike.records import encode_end_txn_marker_batch
    buf = (encode_batch([(None, b"data", None, TS)], producer_id=1, producer_epoch=0,
                        base_sequence=0, is_transactional=True)
           + encode_end_txn_marker_batch(commit=True, producer_id=1, producer_epoch=0,
                                         coordinator_epoch=0, timestamp=TS, base_offset=1))
    assert [r.value for r in iter_records(buf)] == [b"data"]
    assert [r.offset for r in iter_records(buf, include_control=True)] == [0, 1]


def test_records_are_decoded_once_and_cached():
    batch = _one(encode_batch([(None, b"v", None, TS)]))
    assert batch.records() is batch.records()
    assert len(batch) == 1
    assert [r.value for r in batch] == [b"v"]


def test_decompression_bound_applies_to_batches():
    batch = _one(encode_batch([(None, b"\0" * 100_000, None, TS)], compression=ZSTD))
    with pytest.raises(InvalidRecordError):
        batch.records(max_decompressed_size=10_000)


def test_timestamp_delta_beyond_int32_uses_varlong():
    batch = _one(encode_batch([(None, b"a", None, 0), (None, b"b", None, TS)]))
    assert [r.timestamp for r in batch.records()] == [0, TS]
