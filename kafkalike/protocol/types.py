"""Primitive types of the Kafka protocol: a bounds-checked Reader and a chunking Writer.

Every read checks the remaining length first, so hostile input (a string length of
2^31, a negative array size, a truncated frame, a varint that never ends) raises
ProtocolDecodeError at once instead of allocating, hanging or leaking struct.error.
"""
from __future__ import annotations

import struct
import uuid as _uuid

from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.fast.wire import uvarint as _uvarint

_B = struct.Struct(">b")
_H = struct.Struct(">h")
_UH = struct.Struct(">H")
_I = struct.Struct(">i")
_UI = struct.Struct(">I")
_Q = struct.Struct(">q")
_D = struct.Struct(">d")

ZERO_UUID = _uuid.UUID(int=0)

# Large byte payloads (record sets) are kept as separate chunks instead of being
# copied into the header buffer, so a Fetch response is written with writev-style
# sequences and the records are copied at most once, by the transport.
_CHUNK_THRESHOLD = 4096
# Anything else written as bytes (a LogSlice: a range of a segment file) is read through
# its __bytes__ by the generic writer; only the dedicated Fetch encoder keeps it as is.
_BUFFERS = (bytes, bytearray, memoryview)


class Reader:
    """Reads protocol primitives from a buffer, never past `end`."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf, pos: int = 0, end: int | None = None):
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int) -> int:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise ProtocolDecodeError(
                f"need {n} bytes at position {pos}, only {self.end - pos} remain")
        self.pos = pos + n
        return pos

    def int8(self) -> int:
        return _B.unpack_from(self.buf, self._take(1))[0]

    def bool(self) -> bool:
        return self.buf[self._take(1)] != 0

    def int16(self) -> int:
        return _H.unpack_from(self.buf, self._take(2))[0]

    def uint16(self) -> int:
        return _UH.unpack_from(self.buf, self._take(2))[0]

    def int32(self) -> int:
        return _I.unpack_from(self.buf, self._take(4))[0]

    def uint32(self) -> int:
        return _UI.unpack_from(self.buf, self._take(4))[0]

    def int64(self) -> int:
        return _Q.unpack_from(self.buf, self._take(8))[0]

    def float64(self) -> float:
        return _D.unpack_from(self.buf, self._take(8))[0]

    def uuid(self) -> _uuid.UUID:
        pos = self._take(16)
        return _uuid.UUID(bytes=bytes(self.buf[pos:pos + 16]))

    def uvarint(self) -> int:
        """Unsigned varint of at most 5 bytes (an int32's worth)."""
        value, self.pos = _uvarint(self.buf, self.pos, self.end)
        return value

    def uvarlong(self) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        value = 0
        shift = 0
        while True:
            if pos >= end:
                raise ProtocolDecodeError("truncated varlong")
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise ProtocolDecodeError("varlong longer than 10 bytes")
        self.pos = pos
        return value

    def varint(self) -> int:
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def varlong(self) -> int:
        v = self.uvarlong()
        return (v >> 1) ^ -(v & 1)

    # -- lengths -----------------------------------------------------------------

    def _length(self, n: int, nullable: bool, what: str) -> int:
        if n < 0:
            if n == -1 and nullable:
                return -1
            raise ProtocolDecodeError(f"invalid {what} length {n}")
        if n > self.end - self.pos:
            raise ProtocolDecodeError(
                f"{what} length {n} exceeds the {self.end - self.pos} bytes remaining")
        return n

    def _text(self, n: int) -> str:
        pos = self._take(n)
        try:
            return str(self.buf[pos:pos + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolDecodeError(f"string is not valid UTF-8: {exc.reason}") from None

    def string(self, nullable: bool = False) -> str | None:
        n = self._length(self.int16(), nullable, "string")
        return None if n < 0 else self._text(n)

    def compact_string(self, nullable: bool = False) -> str | None:
        n = self._length(self.uvarint() - 1, nullable, "compact string")
        return None if n < 0 else self._text(n)

    def bytes(self, nullable: bool = False) -> bytes | None:
        n = self._length(self.int32(), nullable, "bytes")
        if n < 0:
            return None
        pos = self._take(n)
        return bytes(self.buf[pos:pos + n])

    def compact_bytes(self, nullable: bool = False) -> bytes | None:
        n = self._length(self.uvarint() - 1, nullable, "compact bytes")
        if n < 0:
            return None
        pos = self._take(n)
        return bytes(self.buf[pos:pos + n])

    def records(self, compact: bool) -> memoryview | None:
        """Record sets stay a zero-copy view into the request buffer."""
        n = self.uvarint() - 1 if compact else self.int32()
        n = self._length(n, True, "records")
        if n < 0:
            return None
        pos = self._take(n)
        return self.buf[pos:pos + n]

    def array_length(self, compact: bool, nullable: bool) -> int:
        n = self.uvarint() - 1 if compact else self.int32()
        # Every element takes at least one byte, so a count larger than what is left
        # is a lie; rejecting it bounds allocation by the frame size.
        return self._length(n, nullable, "array")

    def skip(self, n: int) -> None:
        self._take(n)


class Writer:
    """Accumulates encoded bytes; big payloads are kept as separate chunks."""

    __slots__ = ("_parts", "_cur", "_size")

    def __init__(self):
        self._parts: list = []
        self._cur = bytearray()
        self._size = 0

    def int8(self, v: int) -> None:
        self._cur += _B.pack(v)

    def bool(self, v: bool) -> None:
        self._cur.append(1 if v else 0)

    def int16(self, v: int) -> None:
        self._cur += _H.pack(v)

    def uint16(self, v: int) -> None:
        self._cur += _UH.pack(v)

    def int32(self, v: int) -> None:
        self._cur += _I.pack(v)

    def uint32(self, v: int) -> None:
        self._cur += _UI.pack(v)

    def int64(self, v: int) -> None:
        self._cur += _Q.pack(v)

    def float64(self, v: float) -> None:
        self._cur += _D.pack(v)

    def uuid(self, v: _uuid.UUID | None) -> None:
        self._cur += (v or ZERO_UUID).bytes

    def uvarint(self, v: int) -> None:
        cur = self._cur
        v &= 0xFFFFFFFFFFFFFFFF
        while v >= 0x80:
            cur.append((v & 0x7F) | 0x80)
            v >>= 7
        cur.append(v)

    def varint(self, v: int) -> None:
        self.uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def varlong(self, v: int) -> None:
        self.uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def raw(self, data) -> None:
        if len(data) >= _CHUNK_THRESHOLD:
            if self._cur:
                self._parts.append(bytes(self._cur))
                self._size += len(self._cur)
                self._cur = bytearray()
            self._parts.append(data)
            self._size += len(data)
        else:
            self._cur += data

    def string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
            return
        data = v.encode("utf-8")
        self.int16(len(data))
        self._cur += data

    def compact_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        data = v.encode("utf-8")
        self.uvarint(len(data) + 1)
        self._cur += data

    def bytes(self, v) -> None:
        if v is None:
            self.int32(-1)
            return
        self.int32(len(v))
        self.raw(v if type(v) in _BUFFERS else bytes(v))

    def compact_bytes(self, v) -> None:
        if v is None:
            self.uvarint(0)
            return
        self.uvarint(len(v) + 1)
        self.raw(v if type(v) in _BUFFERS else bytes(v))

    def array_length(self, n: int | None, compact: bool) -> None:
        if compact:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.int32(-1 if n is None else n)

    def __len__(self) -> int:
        return self._size + len(self._cur)

    def chunks(self) -> list:
        """The encoded bytes as a list of buffers, for transport.writeSequence."""
        if self._cur:
            return self._parts + [bytes(self._cur)]
        return list(self._parts)

    def getvalue(self) -> bytes:
        return b"".join(self.chunks())
