"""Conversion between the old message formats (magic 0 and 1) and record batch v2, as Kafka 2.8 does it.

The log holds what the topic's message.format.version writes: record batch v2 (0.11 on),
magic 1 (0.10) or magic 0 (0.8, 0.9). Its v2 hot path never decodes records. Kafka 2.8
still serves clients that predate v2 (Produce v0-2, Fetch v0-3) and topics of the old
formats, converting on the way in and out; these are the only places the broker decodes
and re-encodes a client's records besides a topic's fixed compression.type, and they run
only for such requests and topics.

- `from_producer`: a Produce's records (magic 0/1 message sets, or v2 batches for a topic
  whose message.format.version is older than 0.11) validated by Kafka's LogValidator
  rules and rewritten as one v2 batch for Log.append, which then checks and stamps it as
  any client batch (offsets, max.message.bytes, LogAppendTime, keys of compacted topics).
- `to_log_format`: that batch, its offsets assigned, rewritten by Log.append as the
  magic 0 or 1 entries an old-format log holds (Kafka's LogValidator building them with
  the offsets it assigns).
- `down_convert`: stored batches rewritten as the magic 0 or 1 message set an old fetcher
  reads, within Kafka's size rules for converted fetch data.

Errors are ConversionError subclasses, each naming the Kafka error a broker answers
with; this package knows no protocol, so the broker maps them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from . import compression as codecs
from .batch import CREATE_TIME, LOG_APPEND_TIME, decode_batches, encode_batch
from .header import (
    CODEC_MASK, CONTROL_MASK, InvalidRecordError, LOG_OVERHEAD, MAGIC, TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK, read_header, validate_batch,
)
from .legacy import RECORD_OVERHEAD_V0, _read_message, legacy_messages

_SIZE = struct.Struct(">i")
_MAX_LEGACY_CODEC = codecs.LZ4


class ConversionError(InvalidRecordError):
    """A Produce's records that Kafka refuses while converting them; `error` is Kafka's error name."""

    error = "CORRUPT_MESSAGE"


class CorruptMessageError(ConversionError):
    """A CRC that does not match, or bytes that do not parse as messages."""

    error = "CORRUPT_MESSAGE"


class InvalidMessageError(ConversionError):
    """Messages that parse but break a rule (mixed magics, nested compression, ...)."""

    error = "INVALID_RECORD"


class InvalidMessageTimestampError(ConversionError):
    """A CreateTime timestamp out of message.timestamp.difference.max.ms, or a producer's LogAppendTime."""

    error = "INVALID_TIMESTAMP"


class MessageTooLargeError(ConversionError):
    """A message larger than the topic's max.message.bytes."""

    error = "MESSAGE_TOO_LARGE"


class UnsupportedForMessageFormatError(ConversionError):
    """Idempotent or transactional batches for a topic whose format predates them."""

    error = "UNSUPPORTED_FOR_MESSAGE_FORMAT"


class UnsupportedCompressionError(ConversionError):
    """Zstandard data that an old fetcher cannot be given."""

    error = "UNSUPPORTED_COMPRESSION_TYPE"


class UnsupportedConversionError(ConversionError):
    """What Kafka's record builder refuses outright for an old format (headers, zstd); Kafka's
    IllegalArgumentException reaches the client as UNKNOWN_SERVER_ERROR."""

    error = "UNKNOWN_SERVER_ERROR"


@dataclass(frozen=True, slots=True)
class ProduceRules:
    """The topic configuration that shapes a conversion on the way in."""

    log_magic: int = 2                      # the record version of message.format.version
    codec: int | None = None                # compression.type's codec; None: keep the producer's
    max_message_bytes: int = 1024 * 1024 + 12
    timestamp_limit_ms: int | None = None   # message.timestamp.difference.max.ms (None: unbounded)
    log_append_time: bool = False           # message.timestamp.type=LogAppendTime


# ------------------------------------------------------------------------------- in


def _entries(buf) -> list[tuple[int, int, int]]:
    """(position, size with LOG_OVERHEAD, magic) of each whole top-level entry, by Kafka's rules.

    As Kafka's ByteBufferLogInputStream: a size below the smallest message is corrupt, so
    is a magic above 2; an entry cut short at the end of the buffer ends the walk (a
    torn tail is dropped, not refused).
    """
    out = []
    pos = 0
    end = len(buf)
    while end - pos >= LOG_OVERHEAD:
        (size,) = _SIZE.unpack_from(buf, pos + 8)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptMessageError(f"Record size {size} is less than the minimum record overhead "
                                      f"({RECORD_OVERHEAD_V0})")
        if end - pos < LOG_OVERHEAD + 5:
            break
        magic = buf[pos + MAGIC]
        if magic > 2:
            raise CorruptMessageError(f"Invalid magic found in record: {magic}")
        if end - pos < LOG_OVERHEAD + size:
            break
        out.append((pos, LOG_OVERHEAD + size, magic))
        pos += LOG_OVERHEAD + size
    return out


class _RecordChecks:
    """Kafka's per-record rules (LogValidator.validateTimestamp), gathered per batch as Kafka
    does: any timestamp error makes the batch INVALID_TIMESTAMP, else INVALID_RECORD."""

    def __init__(self, rules: ProduceRules, now_ms: int):
        self.limit = None if rules.log_append_time else rules.timestamp_limit_ms
        self.now = now_ms
        self.timestamp_errors: list[str] = []
        self.record_errors: list[str] = []

    def timestamp(self, offset: int, ts: int, producer_log_append_time: bool) -> None:
        if self.limit is not None and ts != -1 and abs(ts - self.now) > self.limit:
            self.timestamp_errors.append(
                f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp should be "
                f"within [{self.now - self.limit}, {self.now + self.limit}]")
        elif producer_log_append_time:
            self.timestamp_errors.append("Invalid timestamp type in message. Producer should not set "
                                         "timestamp type to LogAppendTime.")

    def raise_any(self) -> None:
        if self.timestamp_errors:
            raise InvalidMessageTimestampError(self.timestamp_errors[0])
        if self.record_errors:
            raise InvalidMessageError(self.record_errors[0])


def _parse(view, pos: int, size: int):
    try:
        message, _ = _read_message(view[:pos + size], pos)
    except InvalidRecordError as exc:
        raise CorruptMessageError(f"Record is corrupt: {exc}") from None
    return message


def _legacy_records(entries, messages, rules: ProduceRules, now_ms: int):
    """(key, value, timestamp) of every message, checked as Kafka's LogValidator checks them."""
    out = []
    first_magic = entries[0][2]
    for (_, _, magic), message in zip(entries, messages):
        if magic != first_magic:
            raise InvalidMessageError(f"Batch magic {magic} is not the same as the first batch'es magic "
                                      f"byte {first_magic}")
        codec = message.attributes & CODEC_MASK
        log_append = magic == 1 and bool(message.attributes & TIMESTAMP_TYPE_MASK)
        checks = _RecordChecks(rules, now_ms)
        if codec == codecs.NONE:
            checks.timestamp(message.offset, message.timestamp, log_append)
            checks.raise_any()
            out.append((message.key, message.value, message.timestamp))
            continue
        for inner in _inner_messages(message, magic, codec):
            if inner.attributes & CODEC_MASK:
                checks.record_errors.append("Compressed outer record should not have an inner record with a "
                                            "compression attribute set")
                continue
            if inner.magic != magic:
                checks.record_errors.append(f"Record's magic {inner.magic} does not match outer magic {magic}")
                continue
            if not inner.valid:
                raise CorruptMessageError(f"Record is corrupt (stored crc = {inner.crc})")
            ts = message.timestamp if log_append else inner.timestamp
            checks.timestamp(inner.offset, ts, log_append)
            out.append((inner.key, inner.value, inner.timestamp))
        checks.raise_any()
    return out


def _inner_messages(wrapper, magic: int, codec: int) -> list:
    """The messages inside a compressed wrapper, with Kafka's checks on the wrapper itself."""
    if codec > _MAX_LEGACY_CODEC:
        raise InvalidMessageError(f"Invalid wrapper compressionType found in legacy deep record iterator {magic}")
    if wrapper.value is None:
        raise InvalidMessageError(f"Found invalid compressed record set with null value (magic = {magic})")
    try:
        data = codecs.decompress(codec, wrapper.value, kafka_v0_lz4=magic == 0)
    except InvalidRecordError as exc:
        raise CorruptMessageError(f"Compressed message set cannot be read: {exc}") from None
    inner = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < LOG_OVERHEAD:
            raise CorruptMessageError("Compressed message set ends inside a message")
        message, pos = _parse_inner(data, pos)
        inner.append(message)
    if not inner:
        raise InvalidMessageError("Found invalid compressed record set with no inner records")
    if magic == 1 and wrapper.offset != 0 and wrapper.offset < inner[-1].offset:
        raise InvalidMessageError(
            f"Found invalid wrapper offset in compressed v1 message set, wrapper offset '{wrapper.offset}' is less "
            f"than the last inner message offset '{inner[-1].offset}' and it is not zero.")
    return inner


def _parse_inner(data: bytes, pos: int):
    try:
        return _read_message(data, pos)
    except InvalidRecordError as exc:
        raise CorruptMessageError(f"Record is corrupt: {exc}") from None


def _v2_records(view, entries, rules: ProduceRules, now_ms: int):
    """(key, value, timestamp) of a v2 batch headed for a topic of an older format."""
    if len(entries) > 1:
        raise InvalidMessageError("Compressed outer record has more than one batch")
    pos, size, _ = entries[0]
    try:
        header = read_header(view, pos)
        (batch,) = decode_batches(view[pos:pos + size], allow_partial_tail=False)
        records = batch.records()
    except (InvalidRecordError, ValueError) as exc:
        raise CorruptMessageError(f"Record is corrupt: {exc}") from None
    if header.base_offset != 0:
        raise InvalidMessageError(f"The baseOffset of the record batch in the append should be 0, but it is "
                                  f"{header.base_offset}")
    if header.records_count <= 0 or header.records_count != header.last_offset_delta + 1:
        raise InvalidMessageError(f"Inconsistent batch offset range [0, {header.last_offset_delta}] and count of "
                                  f"records {header.records_count}")
    if header.attributes & CONTROL_MASK:
        raise InvalidMessageError("Clients are not allowed to write control records")
    if header.attributes & TRANSACTIONAL_MASK:
        raise UnsupportedForMessageFormatError(
            f"Transactional records cannot be used with magic version {rules.log_magic}")
    if header.producer_id >= 0:
        raise UnsupportedForMessageFormatError(
            f"Idempotent records cannot be used with magic version {rules.log_magic}")
    checks = _RecordChecks(rules, now_ms)
    log_append = bool(header.attributes & TIMESTAMP_TYPE_MASK)
    out = []
    for record in records:
        checks.timestamp(record.offset, record.timestamp, log_append)
        if record.headers:
            raise UnsupportedConversionError(f"Magic v{rules.log_magic} does not support record headers")
        out.append((record.key, record.value, record.timestamp))
    checks.raise_any()
    return out, header.compression


def from_producer(buf, rules: ProduceRules, now_ms: int) -> bytes:
    """A Produce's records as the one v2 batch the log appends, checked as Kafka checks them.

    For magic 0/1 message sets (Produce v0-2) and for any records bound for a topic whose
    message.format.version predates v2. Kafka's order: sizes against max.message.bytes and
    CRCs first (CRC-32 for magic 0/1), then the batch rules (one magic; one wrapper when
    compressed; magic 1 wrapper offsets), then each record's (inner CRC, compression,
    magic, timestamps). Inner offsets of a magic 1 wrapper are renumbered, not refused,
    as Kafka 2.8 does for old clients that got them wrong. Timestamps are kept where the
    format has them; magic 0 messages, and every record of a magic 0 topic, get none
    (-1). The codec is the topic's compression.type, or the producer's when that is
    "producer". A topic of format < 0.11 refuses idempotent and transactional batches
    (UNSUPPORTED_FOR_MESSAGE_FORMAT) and headers, as Kafka's builder does. Returns b""
    when the buffer holds no whole message (Kafka appends nothing and answers NONE).
    """
    view = memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    entries = _entries(view)
    if not entries:
        return b""
    if rules.log_magic == 2 and all(magic == 2 for _, _, magic in entries):
        return bytes(view)  # nothing to convert: the log's own checks apply
    messages = []
    for pos, size, magic in entries:
        if size > rules.max_message_bytes:
            raise MessageTooLargeError(f"The record batch size in the append is {size} bytes which exceeds the "
                                       f"maximum configured value of {rules.max_message_bytes}.")
        if magic == 2:
            try:
                validate_batch(view[:pos + size], pos)
            except InvalidRecordError as exc:
                raise CorruptMessageError(f"Record is corrupt: {exc}") from None
            messages.append(None)
            continue
        message = _parse(view, pos, size)
        if not message.valid:
            raise CorruptMessageError(f"Record is corrupt (stored crc = {message.crc})")
        messages.append(message)
    if entries[0][2] == 2:
        items, source_codec = _v2_records(view, entries, rules, now_ms)
    else:
        source_codec = codecs.NONE
        for message in messages:
            if message is not None and message.attributes & CODEC_MASK:
                source_codec = message.attributes & CODEC_MASK
        if source_codec and len(entries) > 1:
            raise InvalidMessageError("Compressed outer record has more than one batch")
        items = _legacy_records(entries, messages, rules, now_ms)
    codec = source_codec if rules.codec is None else rules.codec
    if codec == codecs.ZSTD and rules.log_magic < 2:
        raise UnsupportedConversionError(f"ZStandard compression is not supported for magic {rules.log_magic}")
    if rules.log_magic == 0:
        items = [(key, value, -1) for key, value, _ in items]
    return encode_batch([(key, value, None, ts) for key, value, ts in items], compression=codec,
                        timestamp_type=CREATE_TIME, base_timestamp=items[0][2])


@dataclass(frozen=True, slots=True)
class LegacyAppend:
    """What `to_log_format` made: the entries, and what the log's indexes and checks need of them."""

    data: bytes
    max_timestamp: int
    offset_of_max_timestamp: int
    largest_entry: int   # bytes of the largest top-level entry (Kafka checks max.message.bytes again)


def to_log_format(buf, magic: int, log_append_time: int | None = None) -> LegacyAppend:
    """Whole v2 batches whose offsets are assigned, as the magic 0 or 1 entries a log of that format holds.

    What Kafka 2.8's LogValidator builds for a topic whose message.format.version predates
    0.11 (MemoryRecordsBuilder at the topic's magic): uncompressed, one message per record
    at its offset; compressed, one wrapper in the batch's codec whose offset is the last
    record's, with inner offsets relative to the first record on magic 1 and absolute on
    magic 0. Magic 1 keeps each record's CreateTime and gives a wrapper the largest of
    them; with `log_append_time` (a LogAppendTime topic) every message and wrapper carries
    that time and the timestamp-type bit. Magic 0 has no timestamps. The max timestamp
    and its offset follow Kafka's builder (an uncompressed LogAppendTime append names its
    first offset, a compressed one its last). Headers, control batches and zstd have no
    place in these formats: UnsupportedConversionError (from_producer refuses them first).
    """
    entries: list[bytes] = []
    max_ts = -1
    offset_of_max = -1
    lat = log_append_time if magic == 1 else None
    for batch in decode_batches(buf, verify_crc=False, allow_partial_tail=False):
        if batch.is_control:
            raise UnsupportedConversionError(f"Control records cannot be written with magic {magic}")
        records = batch.records()
        if not records:
            continue
        if any(r.headers for r in records):
            raise UnsupportedConversionError(f"Magic v{magic} does not support record headers")
        if batch.compression == codecs.ZSTD:
            raise UnsupportedConversionError(f"ZStandard compression is not supported for magic {magic}")
        entries.extend(legacy_messages(records, magic=magic, compression=batch.compression,
                                       log_append_time=lat))
        if magic == 0:
            continue
        if lat is not None:
            max_ts = lat
            offset_of_max = records[-1].offset if batch.compression else (
                records[0].offset if offset_of_max < 0 else offset_of_max)
            continue
        for r in records:
            if r.timestamp > max_ts:
                max_ts = r.timestamp
                offset_of_max = records[-1].offset if batch.compression else r.offset
    if max_ts < 0 and entries:
        offset_of_max = _SIZE_OFFSET.unpack_from(entries[-1])[0]
    return LegacyAppend(b"".join(entries), max_ts, offset_of_max, max((len(e) for e in entries), default=0))


_SIZE_OFFSET = struct.Struct(">q")


def needs_conversion(buf, log_magic: int) -> bool:
    """Whether a Produce's records take the converting path: magic 0/1 data, or an old-format topic."""
    return log_magic < 2 or (len(buf) > MAGIC and buf[MAGIC] < 2)


# ------------------------------------------------------------------------------- out


def _stored_batches(view):
    """The batches of a log read, then None if the rest does not parse (a reader stops there)."""
    try:
        yield from decode_batches(view, verify_crc=False)
    except InvalidRecordError:
        yield None


def down_convert(buf, magic: int, fetch_offset: int, *, hard_limit: int | None = None) -> bytes:
    """Stored batches as the magic 0 or 1 message set a Fetch v0-3 client reads.

    As Kafka's RecordsUtil.downConvert: control batches (transaction markers) are
    dropped; an uncompressed v2 batch becomes one message per record and drops the
    records below `fetch_offset` (librdkafka relies on that); a compressed batch becomes
    one wrapper in the same codec holding all its records; offsets, keys, values and,
    on magic 1, timestamps are kept, headers dropped. Batches already at or below
    `magic` pass unchanged.

    Size, as Kafka's LazyDownConversionRecords: the answer may be as large as the
    stored data read for it or the first converted batch, whichever is larger, so a
    client always gets at least one whole batch; it is cut there, between messages
    (Kafka cuts mid-message and pads; clients drop a partial last message either way).
    `hard_limit` is Fetch v0-2's partition max bytes, which Kafka never exceeds for those
    versions: when the first stored batch alone is larger, the answer keeps the whole
    messages that fit and, if none does, the first part of the first message, so the
    client learns that a message is larger than its fetch size as it would from Kafka.

    Zstandard data cannot be converted: UnsupportedCompressionError when it comes
    first, otherwise the answer ends before it (the client then fetches from there and
    gets the error).
    """
    out: list[bytes] = []
    total = 0
    limit = None
    first_size = None
    view = memoryview(buf)
    for batch in _stored_batches(view):
        if batch is None:  # unreadable from here on
            if limit is None:
                raise CorruptMessageError("Stored records cannot be read for down-conversion")
            break
        if first_size is None:
            first_size = batch.size
        if batch.is_control:
            continue
        if batch.magic <= magic:
            messages = [bytes(view[batch.position:batch.position + batch.size])]
        else:
            if batch.compression == codecs.ZSTD:
                if limit is None:
                    raise UnsupportedCompressionError("Down-conversion of zstandard-compressed batches is not "
                                                      "supported")
                break
            try:
                records = batch.records()
            except InvalidRecordError as exc:
                if limit is None:
                    raise CorruptMessageError(f"Stored records cannot be read for down-conversion: {exc}") from None
                break
            if not batch.compression:
                records = [r for r in records if r.offset >= fetch_offset]
            if not records:
                continue
            lat = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
            messages = legacy_messages(records, magic=magic, compression=batch.compression, log_append_time=lat)
        if limit is None:
            chunk = sum(len(m) for m in messages)
            if hard_limit is not None and first_size > hard_limit:
                limit = hard_limit
                if len(messages[0]) > hard_limit:
                    return messages[0][:hard_limit]
            else:
                limit = max(len(buf), chunk)
        for message in messages:
            if total + len(message) > limit:
                return b"".join(out)
            out.append(message)
            total += len(message)
    return b"".join(out)
