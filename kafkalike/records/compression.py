"""Batch compression codecs, written the way the Java client writes them.

Codec ids are Kafka's (attributes bits 0-2). Decompression is always bounded by
`max_output_size`: a decompression bomb or garbage input is an InvalidRecordError,
never a MemoryError or a codec library's own exception.
"""
from __future__ import annotations

import struct
import zlib

import lz4.frame
import snappy
import zstandard

from .header import InvalidRecordError
from .lz4_legacy import break_kafka_v0_lz4_header, fix_kafka_v0_lz4_header

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

# DumpLogSegments prints Java's enum constant names; configs use the lower-case names.
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
_BY_NAME = {name: codec for codec, name in CODEC_NAMES.items()}

# Large enough for any batch a broker accepts with sane settings; callers that
# allow bigger messages pass their own bound.
DEFAULT_MAX_OUTPUT_SIZE = 128 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_I = struct.Struct(">i")


def codec_by_name(name: str) -> int:
    """`compression.type` name (none, gzip, snappy, lz4, zstd) to codec id."""
    try:
        return _BY_NAME[name.lower()]
    except KeyError:
        raise ValueError(f"unknown compression type {name!r}") from None


def codec_name(codec: int) -> str:
    try:
        return CODEC_NAMES[codec]
    except KeyError:
        raise InvalidRecordError(f"unknown compression codec {codec}") from None


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section with `codec` in the Java client's framing."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        comp = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
        return comp.compress(data) + comp.flush()
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        # Standard frame, 64 KB blocks, no block checksum (KafkaLZ4BlockOutputStream).
        return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                  content_checksum=False, block_linked=False)
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(data)
    raise ValueError(f"unknown compression codec {codec}")


def compress_legacy(codec: int, data: bytes, magic: int) -> bytes:
    """Compress the inner messages of a magic 0/1 wrapper as Kafka's builder does for that magic.

    Gzip and snappy frame as for v2. LZ4 is Kafka's own block stream: 64 KB independent
    blocks and no content size, with, for magic 0, the frame header checksum that old
    Kafka computed wrongly (clients of that age skip or expect it). Zstandard has no
    magic 0/1 form.
    """
    if codec == LZ4:
        frame = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, content_checksum=False,
                                   block_linked=False, store_size=False)
        return break_kafka_v0_lz4_header(frame) if magic == 0 else frame
    if codec == ZSTD:
        raise ValueError(f"ZStandard compression is not supported for magic {magic}")
    return compress(codec, data)


def decompress(codec: int, data, max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE,
               *, kafka_v0_lz4: bool = False) -> bytes:
    """Inverse of compress; also reads raw snappy and little-endian xerial headers.

    `kafka_v0_lz4` repairs the frame header checksum that magic-0 Kafka wrote wrongly.
    """
    data = bytes(data)
    if codec != NONE and not data:
        raise InvalidRecordError(f"empty {CODEC_NAMES.get(codec, codec)} data")
    try:
        if codec == NONE:
            out = data
        elif codec == GZIP:
            out = _gzip_decompress(data, max_output_size)
        elif codec == SNAPPY:
            out = _snappy_decompress(data, max_output_size)
        elif codec == LZ4:
            if kafka_v0_lz4:
                data = fix_kafka_v0_lz4_header(data)
            out = _lz4_decompress(data, max_output_size)
        elif codec == ZSTD:
            out = _zstd_decompress(data, max_output_size)
        else:
            raise InvalidRecordError(f"unknown compression codec {codec}")
    except InvalidRecordError:
        raise
    except (zlib.error, snappy.UncompressError, RuntimeError, zstandard.ZstdError,
            ValueError, EOFError, OSError) as exc:
        raise InvalidRecordError(f"{CODEC_NAMES.get(codec, codec)} data is corrupt: {exc}") from None
    if len(out) > max_output_size:
        raise InvalidRecordError(f"decompressed data exceeds {max_output_size} bytes")
    return out


def _too_big(limit: int) -> InvalidRecordError:
    return InvalidRecordError(f"decompressed data exceeds {limit} bytes")


def _gzip_decompress(data: bytes, limit: int) -> bytes:
    # Java's GZIPInputStream reads concatenated members; so do we.
    out = []
    total = 0
    while True:
        dec = zlib.decompressobj(47)  # gzip or zlib header, detected
        chunk = dec.decompress(data, limit + 1 - total)
        total += len(chunk)
        out.append(chunk)
        if total > limit or dec.unconsumed_tail:
            raise _too_big(limit)
        if not dec.eof:
            raise InvalidRecordError("gzip stream is truncated")
        data = dec.unused_data
        if not data.startswith(b"\x1f\x8b"):
            break
    return b"".join(out)


def _xerial_compress(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER]
    raw = snappy.compress
    data = bytes(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = raw(data[start:start + _XERIAL_BLOCK])
        parts.append(_I.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _raw_snappy_length(block) -> int:
    """The uncompressed length a raw snappy block declares (its varint preamble)."""
    value = 0
    for i in range(5):
        if i >= len(block):
            break
        b = block[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return value
    raise InvalidRecordError("snappy block has a corrupt length preamble")


def _raw_snappy(block, budget: int) -> bytes:
    if _raw_snappy_length(block) > budget:
        raise InvalidRecordError("snappy block declares more than the allowed output")
    return snappy.uncompress(bytes(block))


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _raw_snappy(data, limit)
    # Header: magic(8) + version(4) + compatible(4). Redpanda writes the two ints
    # little-endian, so their values are not checked.
    if len(data) < 16:
        raise InvalidRecordError("xerial snappy header is truncated")
    pos = 16
    end = len(data)
    out = []
    total = 0
    while pos < end:
        if end - pos < 4:
            raise InvalidRecordError("xerial snappy block length is truncated")
        (size,) = _I.unpack_from(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise InvalidRecordError(f"xerial snappy block of {size} bytes runs past the end")
        block = _raw_snappy(memoryview(data)[pos:pos + size], limit - total)
        total += len(block)
        out.append(block)
        pos += size
    return b"".join(out)


def _lz4_decompress(data: bytes, limit: int) -> bytes:
    out = []
    total = 0
    while data:
        dec = lz4.frame.LZ4FrameDecompressor()
        chunk = dec.decompress(data, max_length=limit + 1 - total)
        total += len(chunk)
        out.append(chunk)
        if total > limit or dec.needs_input is False and not dec.eof:
            raise _too_big(limit)
        if not dec.eof:
            raise InvalidRecordError("lz4 frame is truncated")
        data = dec.unused_data
    return b"".join(out)


def _zstd_decompress(data: bytes, limit: int) -> bytes:
    # One frame, as zstd-jni and librdkafka write it. A declared content size is
    # checked against the bound before anything is allocated; without one, the
    # library stops at the bound itself.
    declared = zstandard.frame_content_size(data)
    if declared > limit:
        raise _too_big(limit)
    return zstandard.ZstdDecompressor().decompress(
        data, max_output_size=limit + 1, allow_extra_data=False)
