"""One v2 record: the value type, and the per-record encode and decode loops.

These loops are the pure-Python client hot path (a producer encodes and a
consumer decodes every record through them), so they bind globals to locals,
look small varints up in tables instead of computing them, and inline the
one- and two-byte varint cases. Everything else falls back to varint.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .header import InvalidRecordError
from .varint import VARLONG_MAX_BYTES, decode_varint, encode_varint

Header = tuple[str, "bytes | None"]


@dataclass(slots=True)
class Record:
    """A record with its absolute offset; headers are (str key, bytes-or-None value)."""
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)


# The smallest record body: attributes, timestamp delta, offset delta, key
# length, value length and header count, one byte each.
MIN_RECORD_BODY = 6
# Worst case for everything but key, value and headers: length(5) + attributes(1)
# + timestamp delta(10) + offset delta(5) + key length(5) + value length(5) + header count(5).
MAX_RECORD_OVERHEAD = 36

_NULL = encode_varint(-1)
_ZERO = encode_varint(0)
_ATTRIBUTES = b"\x00"

# Zigzag-decoded values of every one- and two-byte raw varint, indexed by the raw value.
_UNZIGZAG = tuple((raw >> 1) ^ -(raw & 1) for raw in range(1 << 14))


def encode_headers(headers) -> bytes:
    """Header count plus each header; keys are str (UTF-8) or bytes."""
    enc = encode_varint
    parts = [enc(len(headers))]
    for hkey, hvalue in headers:
        if isinstance(hkey, str):
            hkey = hkey.encode("utf-8")
        parts.append(enc(len(hkey)))
        parts.append(hkey)
        if hvalue is None:
            parts.append(_NULL)
        else:
            parts.append(enc(len(hvalue)))
            parts.append(hvalue)
    return b"".join(parts)


def encode_record(offset_delta: int, timestamp_delta: int, key, value, headers=()) -> bytes:
    """The full encoded record, length prefix included."""
    enc = encode_varint
    tsd = enc(timestamp_delta)
    od = enc(offset_delta)
    if key is None:
        kl = _NULL
        klen = 0
        key = b""
    else:
        klen = len(key)
        kl = enc(klen)
    if value is None:
        vl = _NULL
        vlen = 0
        value = b""
    else:
        vlen = len(value)
        vl = enc(vlen)
    hdr = encode_headers(headers) if headers else _ZERO
    body_size = 1 + len(tsd) + len(od) + len(kl) + klen + len(vl) + vlen + len(hdr)
    return b"".join((enc(body_size), _ATTRIBUTES, tsd, od, kl, key, vl, value, hdr))


def _bad(message: str) -> InvalidRecordError:
    return InvalidRecordError(message)


def decode_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                   log_append_time: int | None = None, record_class=Record) -> list:
    """Decode `count` records that exactly fill `data` (an uncompressed records section).

    With `log_append_time` set (LogAppendTime batches) every record takes that
    timestamp, as Kafka's readers do. Raises InvalidRecordError on anything that
    does not parse exactly: truncation, over-long varints, negative lengths other
    than -1, a record whose declared length disagrees with its fields, a count
    that disagrees with the bytes, or bytes left over.
    """
    return _decode(data, count, base_offset, base_timestamp, log_append_time, record_class, None, 0)


def decode_consumer_records(data: bytes, count: int, base_offset: int, base_timestamp: int,
                            log_append_time: int | None, make, context: tuple, min_offset: int) -> list:
    """decode_records for a consumer: builds its record type straight from the bytes.

    `make` is called as make(topic, partition, offset, timestamp, timestamp_type, key,
    value, headers, key_size, value_size, leader_epoch) (Java's ConsumerRecord fields in
    order; sizes are -1 for null) with `context` = (topic, partition, timestamp_type,
    leader_epoch), so the consumer pays for one object per record instead of a Record
    and then its own. Records below `min_offset` are checked like the others but not
    built. The same errors as decode_records.
    """
    return _decode(data, count, base_offset, base_timestamp, log_append_time, make, context, min_offset)


def _decode(data, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None, make,
            context: tuple | None, min_offset: int) -> list:
    """The one record loop behind decode_records (context None) and decode_consumer_records."""
    if type(data) is not bytes:
        data = bytes(data)
    end = len(data)
    if count < 0 or count * (MIN_RECORD_BODY + 1) > end:
        raise _bad(f"{count} records cannot fit in {end} bytes")
    zz = _UNZIGZAG
    slow = decode_varint
    if context is not None:
        topic, partition, timestamp_type, leader_epoch = context
    out = []
    append = out.append
    pos = 0
    try:
        for _ in range(count):
            # Record length.
            b = data[pos]
            if b < 128:
                length = zz[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 128:
                    length = zz[(b & 127) | (b2 << 7)]
                    pos += 2
                else:
                    length, pos = slow(data, pos)
            rec_end = pos + length
            if length < MIN_RECORD_BODY or rec_end > end:
                raise _bad(f"record length {length} does not fit the batch")
            pos += 1  # attributes: unused in v2
            # Timestamp delta (varlong).
            b = data[pos]
            if b < 128:
                tsd = zz[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 128:
                    tsd = zz[(b & 127) | (b2 << 7)]
                    pos += 2
                else:
                    tsd, pos = slow(data, pos, VARLONG_MAX_BYTES)
            # Offset delta.
            b = data[pos]
            if b < 128:
                od = zz[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 128:
                    od = zz[(b & 127) | (b2 << 7)]
                    pos += 2
                else:
                    od, pos = slow(data, pos)
            # Key.
            b = data[pos]
            if b < 128:
                klen = zz[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 128:
                    klen = zz[(b & 127) | (b2 << 7)]
                    pos += 2
                else:
                    klen, pos = slow(data, pos)
            if klen >= 0:
                key = data[pos:pos + klen]
                pos += klen
            elif klen == -1:
                key = None
            else:
                raise _bad(f"invalid key length {klen}")
            # Value.
            b = data[pos]
            if b < 128:
                vlen = zz[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 128:
                    vlen = zz[(b & 127) | (b2 << 7)]
                    pos += 2
                else:
                    vlen, pos = slow(data, pos)
            if vlen >= 0:
                value = data[pos:pos + vlen]
                pos += vlen
            elif vlen == -1:
                value = None
            else:
                raise _bad(f"invalid value length {vlen}")
            # Headers.
            b = data[pos]
            if b == 0:
                headers = []
                pos += 1
            else:
                hcount, pos = slow(data, pos)
                headers, pos = _decode_headers(data, pos, rec_end, hcount)
            if pos != rec_end:
                raise _bad(f"record fields take {pos - rec_end + length} bytes, "
                           f"its length says {length}")
            if context is None:
                append(make(base_offset + od,
                            base_timestamp + tsd if log_append_time is None else log_append_time,
                            key, value, headers))
            elif base_offset + od >= min_offset:
                append(make(topic, partition, base_offset + od,
                            base_timestamp + tsd if log_append_time is None else log_append_time,
                            timestamp_type, key, value, headers, klen, vlen, leader_epoch))
    except IndexError:
        raise _bad("record runs past the end of the batch") from None
    if pos != end:
        raise _bad(f"{end - pos} bytes left over after {count} records")
    return out


def _decode_headers(data: bytes, pos: int, rec_end: int, hcount: int) -> tuple[list, int]:
    """Headers of one record (the rare path); returns them and the position after."""
    if hcount < 0 or hcount * 2 > rec_end - pos:
        raise _bad(f"invalid header count {hcount}")
    slow = decode_varint
    headers = []
    for _ in range(hcount):
        hklen, pos = slow(data, pos)
        if hklen < 0 or pos + hklen > rec_end:
            raise _bad(f"invalid header key length {hklen}")
        try:
            hkey = data[pos:pos + hklen].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _bad(f"header key is not UTF-8: {exc}") from None
        pos += hklen
        hvlen, pos = slow(data, pos)
        if hvlen >= 0:
            if pos + hvlen > rec_end:
                raise _bad(f"header value length {hvlen} runs past the record")
            hvalue = data[pos:pos + hvlen]
            pos += hvlen
        elif hvlen == -1:
            hvalue = None
        else:
            raise _bad(f"invalid header value length {hvlen}")
        headers.append((hkey, hvalue))
    return headers, pos
