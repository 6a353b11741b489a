"""Primitive reads over (buffer, position) pairs for the dedicated decoders.

The generic Reader keeps its position in an object and checks it per call; these
functions take and return positions instead, so a decoder keeps them in locals. Every
bound the Reader checks is checked here too, with the same outcome for hostile input:
ProtocolDecodeError.
"""
from __future__ import annotations

import struct

from kafkalike.protocol.errors import ProtocolDecodeError

H = struct.Struct(">h")
I32 = struct.Struct(">i")


def uvarint(buf, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes, as Reader.uvarint; (value, next position)."""
    if pos < end:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise ProtocolDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ProtocolDecodeError("varint longer than 5 bytes")


def length(n: int, nullable: bool, pos: int, end: int, what: str) -> int:
    """A length prefix checked as Reader._length does: -1 only where nullable, never
    more than the bytes left."""
    if n < 0:
        if n == -1 and nullable:
            return -1
        raise ProtocolDecodeError(f"invalid {what} length {n}")
    if n > end - pos:
        raise ProtocolDecodeError(f"{what} length {n} exceeds the {end - pos} bytes remaining")
    return n


def text(buf, pos: int, n: int) -> str:
    try:
        return str(buf[pos:pos + n], "utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolDecodeError(f"string is not valid UTF-8: {exc.reason}") from None


def string(buf, pos: int, end: int, compact: bool, nullable: bool) -> tuple[str | None, int]:
    if compact:
        n, pos = uvarint(buf, pos, end)
        n -= 1
    else:
        if pos + 2 > end:
            raise ProtocolDecodeError(f"need 2 bytes at position {pos}, only {end - pos} remain")
        n = H.unpack_from(buf, pos)[0]
        pos += 2
    n = length(n, nullable, pos, end, "compact string" if compact else "string")
    if n < 0:
        return None, pos
    return text(buf, pos, n), pos + n


def array_length(buf, pos: int, end: int, compact: bool) -> tuple[int, int]:
    """A non-nullable array's element count."""
    if compact:
        n, pos = uvarint(buf, pos, end)
        n -= 1
    else:
        if pos + 4 > end:
            raise ProtocolDecodeError(f"need 4 bytes at position {pos}, only {end - pos} remain")
        n = I32.unpack_from(buf, pos)[0]
        pos += 4
    return length(n, False, pos, end, "array"), pos


def skip_tagged(buf, pos: int, end: int, on_field=None) -> int:
    """A tagged-field section: checked (ascending tags, sizes within the frame) and
    skipped, as the generic reader does; `on_field(tag, start, field_end)`, if given,
    reads the fields the caller knows."""
    if pos < end and buf[pos] == 0:
        return pos + 1
    count, pos = uvarint(buf, pos, end)
    last = -1
    for _ in range(count):
        tag, pos = uvarint(buf, pos, end)
        if tag <= last:
            raise ProtocolDecodeError(f"tagged fields out of order: {tag} after {last}")
        last = tag
        size, pos = uvarint(buf, pos, end)
        if size > end - pos:
            raise ProtocolDecodeError(f"tagged field {tag} of {size} bytes runs past the end")
        if on_field is not None:
            on_field(tag, pos, pos + size)
        pos += size
    return pos


def put_uvarint(out: bytearray, v: int) -> None:
    v &= 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def put_length(out: bytearray, n: int, compact: bool) -> None:
    """An array's or record set's length: a varint of n+1 when compact, else an int32."""
    if compact:
        put_uvarint(out, n + 1)
    else:
        out += I32.pack(n)


def put_array_length(out: bytearray, items, compact: bool, name: str, version: int) -> None:
    if items is None:
        raise ValueError(f"field {name} is not nullable in version {version}")
    put_length(out, len(items), compact)


def put_string(out: bytearray, v: str, compact: bool) -> None:
    data = v.encode("utf-8")
    if compact:
        put_uvarint(out, len(data) + 1)
    else:
        out += H.pack(len(data))
    out += data


def put_nullable_string(out: bytearray, v: str | None, compact: bool) -> None:
    if v is None:
        out += b"\x00" if compact else b"\xff\xff"
        return
    put_string(out, v, compact)
