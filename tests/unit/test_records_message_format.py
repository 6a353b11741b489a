"""Magic 0/1 message sets written, and converted to and from record batch v2 as Kafka 2.8 does.

The writer is judged by the reader (kafkalike.records.legacy) and byte for byte by the
format written out field by field; the conversions by what a client of each format
would read back, and by the Kafka error each bad input must get.
"""
from __future__ import annotations

import struct
import zlib

import lz4.frame
import pytest

from kafkalike.records import (
    GZIP, LZ4, NONE, SNAPPY, ZSTD, LegacyBatch, Record, RecordBatch, compress, decode_batches,
    encode_batch, encode_end_txn_marker_batch, iter_records,
)
from kafkalike.records.compression import compress_legacy, decompress
from kafkalike.records.header import set_max_timestamp_log_append
from kafkalike.records.legacy import encode_legacy_message, encode_legacy_records, legacy_messages
from kafkalike.records.message_format import (
    ProduceRules, down_convert, from_producer, needs_conversion,
)

TS = 1_600_000_000_000
LEGACY_CODECS = [NONE, GZIP, SNAPPY, LZ4]


def message(offset, key, value, *, magic=1, attributes=0, timestamp=TS, crc=None) -> bytes:
    """One legacy entry, written out field by field from the format description."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for blob in (key, value):
        body += struct.pack(">i", -1) if blob is None else struct.pack(">i", len(blob)) + blob
    crc = zlib.crc32(body) if crc is None else crc
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def wrapper(inner: bytes, codec: int, *, offset: int, magic: int = 1, timestamp: int = TS, attributes: int = 0):
    """A compressed wrapper as an old producer writes it (magic-0 LZ4 with its broken header)."""
    return message(offset, None, compress_legacy(codec, inner, magic), magic=magic,
                   attributes=codec | attributes, timestamp=timestamp)


def sample(n=7, base=100):
    return [Record(base + i, TS + 3 * i, b"key-%d" % i if i % 3 else None,
                   b"value-%d" % i * (i + 1) if i != 4 else None) for i in range(n)]


def seen(buf):
    return [(r.offset, r.timestamp, r.key, r.value) for r in iter_records(buf)]


def rules(**kw) -> ProduceRules:
    return ProduceRules(**kw)


def error_of(buf, **kw) -> str:
    with pytest.raises(Exception) as info:
        from_producer(buf, rules(**kw), TS)
    return info.value.error


# ----------------------------------------------------------------------------- writing


@pytest.mark.parametrize("magic", [0, 1])
def test_a_message_is_byte_for_byte_the_format(magic):
    assert encode_legacy_message(5, b"k", b"v", magic=magic, timestamp=TS) == message(5, b"k", b"v", magic=magic)
    assert encode_legacy_message(6, None, None, magic=magic, timestamp=-1) == \
        message(6, None, None, magic=magic, timestamp=-1)
    # Kafka's CRC-32 (zlib's), not the CRC-32C of record batch v2.
    crc = struct.unpack_from(">I", encode_legacy_message(0, b"k", b"v", magic=magic), 12)[0]
    assert crc == zlib.crc32(encode_legacy_message(0, b"k", b"v", magic=magic)[16:])


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_written_sets_read_back(magic, codec):
    records = sample()
    buf = encode_legacy_records(records, magic=magic, compression=codec)
    batches = list(decode_batches(buf))
    assert all(isinstance(b, LegacyBatch) and b.magic == magic and b.compression == codec for b in batches)
    assert len(batches) == (len(records) if codec == NONE else 1)
    assert seen(buf) == [(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in records]
    if codec:
        (batch,) = batches
        assert batch.last_offset == 106 and (batch.max_timestamp if magic else -1) == (TS + 18 if magic else -1)


def test_magic1_wrapper_holds_relative_inner_offsets_magic0_absolute():
    records = sample(3, base=500)
    for magic, expected in [(1, [0, 1, 2]), (0, [500, 501, 502])]:
        (entry,) = legacy_messages(records, magic=magic, compression=GZIP)
        value_at = 12 + 4 + 2 + (8 if magic else 0) + 4   # past crc, magic, attrs, ts, null key
        inner = decompress(GZIP, entry[value_at + 4:])
        offsets = []
        pos = 0
        while pos < len(inner):
            offset, size = struct.unpack_from(">qi", inner, pos)
            offsets.append(offset)
            pos += 12 + size
        assert offsets == expected
        assert struct.unpack_from(">q", entry, 0)[0] == 502


def test_log_append_time_sets_every_timestamp_and_the_type_bit():
    records = sample(3)
    for codec in (NONE, GZIP):
        buf = encode_legacy_records(records, magic=1, compression=codec, log_append_time=TS + 999)
        assert {b.timestamp_type for b in decode_batches(buf)} == {1}
        assert {ts for _, ts, _, _ in seen(buf)} == {TS + 999}


def test_zstd_has_no_legacy_form():
    with pytest.raises(ValueError, match="ZStandard"):
        encode_legacy_records(sample(2), magic=1, compression=ZSTD)


def test_magic0_lz4_keeps_old_kafkas_wrong_header_checksum():
    data = b"payload " * 200
    old = compress_legacy(LZ4, data, 0)
    new = compress_legacy(LZ4, data, 1)
    assert old[:6] == new[:6] and old[6] != new[6]      # only the header checksum differs
    assert lz4.frame.decompress(new) == data
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(old)
    assert decompress(LZ4, old, kafka_v0_lz4=True) == data


# ----------------------------------------------------------------------------- in


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_old_producer_sets_become_one_v2_batch(magic, codec):
    records = sample()
    # As a producer sends it: offsets from 0 (magic 1 wrapper: relative inner, last outer).
    buf = encode_legacy_records([Record(i, r.timestamp, r.key, r.value) for i, r in enumerate(records)],
                                magic=magic, compression=codec)
    assert needs_conversion(buf, 2)
    out = from_producer(buf, rules(), TS)
    (batch,) = decode_batches(out, allow_partial_tail=False)
    assert isinstance(batch, RecordBatch) and batch.compression == codec and batch.base_offset == 0
    assert (batch.producer_id, batch.timestamp_type, batch.count) == (-1, 0, len(records))
    assert seen(out) == [(i, r.timestamp if magic else -1, r.key, r.value) for i, r in enumerate(records)]


def test_topic_codec_and_format_shape_the_stored_batch():
    buf = encode_legacy_records(sample(3, base=0), magic=1, compression=SNAPPY)
    (batch,) = decode_batches(from_producer(buf, rules(codec=GZIP), TS))
    assert batch.compression == GZIP
    (batch,) = decode_batches(from_producer(buf, rules(codec=NONE), TS))
    assert batch.compression == NONE
    # A magic 0 topic (message.format.version < 0.10) keeps no timestamps.
    assert {ts for _, ts, _, _ in seen(from_producer(buf, rules(log_magic=0), TS))} == {-1}


def test_wrong_inner_offsets_are_renumbered_as_kafka_28_does():
    inner = message(7, None, b"a") + message(3, None, b"b") + message(9, None, b"c")
    out = from_producer(wrapper(inner, GZIP, offset=0), rules(), TS)
    assert [o for o, *_ in seen(out)] == [0, 1, 2]


def test_librdkafka_style_wrapper_offset_zero_is_accepted():
    inner = message(0, None, b"a") + message(1, None, b"b")
    assert len(seen(from_producer(wrapper(inner, SNAPPY, offset=0), rules(), TS))) == 2


def test_v2_batches_for_a_topic_of_an_older_format():
    plain = encode_batch([(b"k", b"v", None, TS)])
    assert needs_conversion(plain, 1) and not needs_conversion(plain, 2)
    assert seen(from_producer(plain, rules(log_magic=1), TS)) == [(0, TS, b"k", b"v")]
    assert seen(from_producer(plain, rules(log_magic=0), TS)) == [(0, -1, b"k", b"v")]
    headers = encode_batch([(b"k", b"v", [("h", b"x")], TS)])
    assert error_of(headers, log_magic=1) == "UNKNOWN_SERVER_ERROR"   # Kafka's builder refuses them
    idempotent = encode_batch([(b"k", b"v", None, TS)], producer_id=5, producer_epoch=0, base_sequence=0)
    assert error_of(idempotent, log_magic=1) == "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    txn = encode_batch([(b"k", b"v", None, TS)], producer_id=5, producer_epoch=0, base_sequence=0,
                       is_transactional=True)
    assert error_of(txn, log_magic=0) == "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    assert error_of(encode_batch([(b"k", b"v", None, TS)], compression=ZSTD), log_magic=1) == "UNKNOWN_SERVER_ERROR"
    assert error_of(plain + plain, log_magic=1) == "INVALID_RECORD"


def test_bad_crc_is_corrupt_message():
    assert error_of(message(0, b"k", b"v", crc=1)) == "CORRUPT_MESSAGE"
    assert error_of(message(0, b"k", b"v") + message(1, b"k", b"v", magic=0, crc=7)) == "CORRUPT_MESSAGE"
    inner = message(0, None, b"a") + message(1, None, b"b", crc=99)
    assert error_of(wrapper(inner, GZIP, offset=1)) == "CORRUPT_MESSAGE"
    broken = bytearray(encode_batch([(b"k", b"v", None, TS)]))
    broken[-1] ^= 1
    assert error_of(bytes(broken), log_magic=1) == "CORRUPT_MESSAGE"


def test_truncated_messages():
    whole = message(0, b"k", b"v") + message(1, b"k2", b"v2")
    # A torn last message is dropped, as Kafka's iterator drops it; nothing whole: nothing appended.
    assert seen(from_producer(whole[:-3], rules(), TS)) == [(0, TS, b"k", b"v")]
    assert from_producer(whole[:20], rules(), TS) == b""
    # A size that cannot hold a message, or lengths inside that run past it, are corrupt.
    small = bytearray(message(0, b"k", b"v"))
    struct.pack_into(">i", small, 8, 10)
    assert error_of(bytes(small)) == "CORRUPT_MESSAGE"
    body = struct.pack(">bbqi", 1, 0, TS, 50) + b"k" + struct.pack(">i", 1) + b"v"
    lying = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body   # CRC fine, key length not
    assert error_of(lying) == "CORRUPT_MESSAGE"
    inner = message(0, None, b"a") + message(1, None, b"bbbb")
    torn_inner = message(1, None, compress(GZIP, inner[:-2]), attributes=GZIP)
    assert error_of(torn_inner) == "CORRUPT_MESSAGE"
    garbage = message(0, None, b"\x1f\x8bnot gzip at all", attributes=GZIP)
    assert error_of(garbage) == "CORRUPT_MESSAGE"


def test_wrong_magics():
    assert error_of(message(0, b"k", b"v", magic=0) + message(1, b"k", b"v", magic=1)) == "INVALID_RECORD"
    bad = bytearray(message(0, b"k", b"v"))
    bad[16] = 3
    assert error_of(bytes(bad)) == "CORRUPT_MESSAGE"
    inner = message(0, None, b"a", magic=0) + message(1, None, b"b", magic=0)
    assert error_of(wrapper(inner, GZIP, offset=1)) == "INVALID_RECORD"          # inner magic 0 in magic 1
    assert error_of(message(0, b"k", b"v") + encode_batch([(b"k", b"v", None, TS)])) == "INVALID_RECORD"


def test_wrapper_rules():
    one = wrapper(message(0, None, b"a"), GZIP, offset=0)
    assert error_of(one + one) == "INVALID_RECORD"                          # one wrapper per request
    assert error_of(message(0, None, b"x") + one) == "INVALID_RECORD"
    nested = wrapper(one, GZIP, offset=0)
    assert error_of(nested) == "INVALID_RECORD"
    assert error_of(message(0, None, None, attributes=GZIP)) == "INVALID_RECORD"
    assert error_of(message(0, None, compress(GZIP, b""), attributes=GZIP)) == "INVALID_RECORD"
    inner = b"".join(message(i, None, b"x") for i in range(5))
    assert error_of(wrapper(inner, GZIP, offset=2)) == "INVALID_RECORD"     # not 0, below the last inner
    assert error_of(message(0, None, b"zz", attributes=ZSTD)) == "INVALID_RECORD"


def test_timestamps():
    assert error_of(message(0, b"k", b"v", attributes=0x08)) == "INVALID_TIMESTAMP"     # producer's LogAppendTime
    assert error_of(wrapper(message(0, None, b"a"), GZIP, offset=0, attributes=0x08)) == "INVALID_TIMESTAMP"
    far = message(0, b"k", b"v", timestamp=TS - 10_000)
    assert error_of(far, timestamp_limit_ms=1000) == "INVALID_TIMESTAMP"
    assert error_of(wrapper(far, LZ4, offset=0), timestamp_limit_ms=1000) == "INVALID_TIMESTAMP"
    assert from_producer(far, rules(timestamp_limit_ms=1000, log_append_time=True), TS)   # only CreateTime is checked
    assert from_producer(message(0, b"k", b"v", magic=0), rules(timestamp_limit_ms=1000), TS)  # magic 0 has none
    assert from_producer(message(0, b"k", b"v", timestamp=-1), rules(timestamp_limit_ms=1000), TS)


def test_too_large():
    big = message(0, b"k", b"v" * 2000)
    assert error_of(big, max_message_bytes=1000) == "MESSAGE_TOO_LARGE"
    assert from_producer(big, rules(max_message_bytes=len(big)), TS)


# ----------------------------------------------------------------------------- out


def stored(codec=NONE, base=100, n=6, **kw):
    return encode_batch([(r.key, r.value, [("h", b"dropped")], r.timestamp) for r in sample(n, base)],
                        base_offset=base, compression=codec, **kw)


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_stored_batches_down_convert(magic, codec):
    buf = stored(codec) + stored(codec, base=106, n=3)
    out = down_convert(buf, magic, 100)
    assert {(b.magic, b.compression) for b in decode_batches(out)} == {(magic, codec)}
    expected = [(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in sample(6) + sample(3, 106)]
    # The first batch always comes whole; what follows as far as the size rule allows.
    assert seen(out) == expected[:len(seen(out))] and len(seen(out)) >= 6
    assert seen(down_convert(buf[len(stored(codec)):], magic, 106)) == expected[6:]
    assert all(r.headers == [] for r in iter_records(out))
    # Fetched from the middle: an uncompressed batch drops the records before the offset,
    # a compressed one comes whole (its reader skips them).
    middle = [o for o, *_ in seen(down_convert(stored(codec), magic, 103))]
    assert middle == (list(range(103, 106)) if codec == NONE else list(range(100, 106)))


def test_log_append_time_and_control_batches():
    lat = stored(GZIP, timestamp_type=1)
    lat = bytearray(lat)
    set_max_timestamp_log_append(lat, 0, len(lat), TS + 5000)
    marker = encode_end_txn_marker_batch(producer_id=9, producer_epoch=0, commit=True, coordinator_epoch=1,
                                         base_offset=99, timestamp=TS)
    out = down_convert(marker + bytes(lat), 1, 99)
    (batch,) = decode_batches(out)
    assert batch.timestamp_type == 1 and {ts for _, ts, _, _ in seen(out)} == {TS + 5000}
    assert down_convert(marker, 1, 99) == b""


def test_zstd_cannot_go_to_old_clients():
    with pytest.raises(Exception) as info:
        down_convert(stored(ZSTD), 1, 100)
    assert info.value.error == "UNSUPPORTED_COMPRESSION_TYPE"
    # After convertible data, the answer ends before it; the client fetches from there next.
    out = down_convert(stored(GZIP) + stored(ZSTD, base=106), 1, 100)
    assert [o for o, *_ in seen(out)] == list(range(100, 106))


def test_size_of_a_converted_answer():
    # Magic 0/1 messages are bigger than v2 records: the answer may be as big as the
    # stored bytes or the first converted batch, whichever is bigger; whole messages only.
    # Four stored batches of ten records, 341 bytes each; as magic 1, 550 (55 per message).
    buf = b"".join(encode_batch([(b"k", b"v" * 20, None, TS)] * 10, base_offset=i * 10) for i in range(4))
    assert len(buf) == 4 * 341
    out = down_convert(buf, 1, 0)
    assert len(out) == 24 * 55 and [o for o, *_ in seen(out)] == list(range(24))
    many = encode_batch([(b"k", b"v" * 20, None, TS)] * 40)       # one batch: converted whole
    assert [o for o, *_ in seen(down_convert(many, 1, 0))] == list(range(40))


def test_hard_limit_of_fetch_v0_to_v2():
    many = encode_batch([(b"k", b"v" * 20, None, TS)] * 40)
    # The first stored batch is over the partition's max bytes: the messages that fit...
    out = down_convert(many, 0, 0, hard_limit=500)
    assert len(out) == 10 * 47 and [o for o, *_ in seen(out)] == list(range(10))   # 47 per magic 0 message
    # ...and none fits: the start of the first, which tells the client its fetch size is too small.
    big = encode_batch([(b"k", b"v" * 2000, None, TS)])
    out = down_convert(big, 0, 0, hard_limit=100)
    assert len(out) == 100 and seen(out) == []
    # Within the limit, Kafka's own rule.
    assert seen(down_convert(big, 0, 0, hard_limit=1 << 20)) == [(0, -1, b"k", b"v" * 2000)]
