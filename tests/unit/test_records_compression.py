"""Codecs: the Java client's framings, tolerant reading, and bounded decompression."""
import gzip
import os
import struct
import zlib

import lz4.frame
import pytest
import snappy
import zstandard

from kafkalike.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, InvalidRecordError, codec_by_name
from kafkalike.records.compression import XERIAL_MAGIC, compress, decompress

DATA = os.urandom(3000) + b"abc" * 40_000  # 123 KB, several 32 KiB snappy blocks


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_round_trip(codec):
    assert decompress(codec, compress(codec, DATA)) == DATA


def test_gzip_is_a_standard_gzip_stream():
    assert gzip.decompress(compress(GZIP, DATA)) == DATA
    assert decompress(GZIP, gzip.compress(DATA)) == DATA


def test_gzip_concatenated_members_are_read():
    assert decompress(GZIP, gzip.compress(b"one") + gzip.compress(b"two")) == b"onetwo"


def test_snappy_uses_xerial_framing_with_32k_blocks():
    framed = compress(SNAPPY, DATA)
    assert framed[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(framed):
        (size,) = struct.unpack_from(">i", framed, pos)
        blocks.append(snappy.uncompress(framed[pos + 4:pos + 4 + size]))
        pos += 4 + size
    assert pos == len(framed)
    assert [len(b) for b in blocks[:-1]] == [32 * 1024] * (len(blocks) - 1)
    assert b"".join(blocks) == DATA


def test_snappy_reads_raw_blocks_and_little_endian_xerial_headers():
    assert decompress(SNAPPY, snappy.compress(DATA)) == DATA
    framed = compress(SNAPPY, DATA)
    redpanda = XERIAL_MAGIC + struct.pack("<ii", 1, 1) + framed[16:]
    assert decompress(SNAPPY, redpanda) == DATA


def test_lz4_is_a_standard_frame():
    framed = compress(LZ4, DATA)
    assert framed[:4] == b"\x04\x22\x4d\x18"
    assert lz4.frame.decompress(framed) == DATA


def test_zstd_is_a_standard_frame_and_reads_frames_without_content_size():
    assert zstandard.ZstdDecompressor().decompress(compress(ZSTD, DATA)) == DATA
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(DATA)
    assert zstandard.frame_content_size(no_size) == -1
    assert decompress(ZSTD, no_size) == DATA


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_bombs_are_refused_within_the_bound(codec):
    bomb = compress(codec, b"\0" * (8 * 1024 * 1024))
    with pytest.raises(InvalidRecordError):
        decompress(codec, bomb, max_output_size=1024 * 1024)
    assert len(decompress(codec, bomb, max_output_size=8 * 1024 * 1024)) == 8 * 1024 * 1024


def test_zstd_frame_declaring_huge_content_size_is_refused_before_allocating():
    # Frame header: magic, descriptor 0xE0 (single segment, 8-byte content size),
    # content size 1 TiB, then one last RLE block of 128 KiB.
    claim = 1 << 40
    block_header = (1 | (1 << 1) | ((128 * 1024) << 3)).to_bytes(3, "little")
    frame = b"\x28\xb5\x2f\xfd\xe0" + claim.to_bytes(8, "little") + block_header + b"\x00"
    assert zstandard.frame_content_size(frame) == claim
    with pytest.raises(InvalidRecordError):
        decompress(ZSTD, frame)


def test_snappy_block_declaring_huge_length_is_refused():
    lie = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # preamble claims 4 GiB
    with pytest.raises(InvalidRecordError):
        decompress(SNAPPY, lie)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_and_truncation_are_invalid(codec):
    good = compress(codec, DATA)
    for bad in (b"", b"garbage" * 9, good[:len(good) // 2], good[:-1], good[:5]):
        with pytest.raises(InvalidRecordError):
            decompress(codec, bad)


def test_xerial_block_length_past_end_is_invalid():
    framed = compress(SNAPPY, b"hello")
    broken = framed[:16] + struct.pack(">i", 1 << 30) + framed[20:]
    with pytest.raises(InvalidRecordError):
        decompress(SNAPPY, broken)


def test_unknown_codec_is_invalid():
    with pytest.raises(InvalidRecordError):
        decompress(6, b"abc")


def test_codec_names():
    assert [codec_by_name(n) for n in ("none", "gzip", "snappy", "lz4", "zstd")] == [0, 1, 2, 3, 4]
    assert codec_by_name("GZIP") == GZIP
    with pytest.raises(ValueError):
        codec_by_name("brotli")


def test_kafka_v0_lz4_header_checksum_is_repaired():
    from kafkalike.records.lz4_legacy import descriptor_end, xxh32
    good = lz4.frame.compress(b"old kafka" * 10)
    end = descriptor_end(good)
    broken = good[:end] + bytes(((xxh32(good[:end]) >> 8) & 0xFF,)) + good[end + 1:]
    assert broken != good
    with pytest.raises(InvalidRecordError):
        decompress(LZ4, broken)
    assert decompress(LZ4, broken, kafka_v0_lz4=True) == b"old kafka" * 10


def test_zlib_stream_is_accepted_for_gzip_codec():
    # Some old writers produced zlib-wrapped deflate under the gzip codec.
    assert decompress(GZIP, zlib.compress(b"zlib data")) == b"zlib data"
