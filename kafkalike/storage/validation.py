"""Checking and stamping the batches of one append, header by header (Kafka's LogValidator, minus records).

This is the broker's produce hot path, so it reads only batch headers: it unpacks each
with kafkalike.records.header's layout (as a plain tuple: building a BatchHeader costs
more than the CRC of a 16 KiB batch), checks length, size limit, magic and CRC-32C,
and produces the patched baseOffset and partitionLeaderEpoch (both outside the CRC) as
small separate buffers, so the batch bytes go to the file without being copied. Records are never decoded; the few rules Kafka checks per record are
checked on the batch's first and max timestamps instead.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from kafkalike.records import header as batch_header
from crc32c import crc32c

from kafkalike.records.header import (
    ATTRIBUTES, CONTROL_MASK, CRC, HEADER_SIZE, HEADER_STRUCT, LOG_OVERHEAD, MAGIC,
    NO_TIMESTAMP, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK,
)
from kafkalike.records.legacy import RECORD_OVERHEAD_V0, check_legacy_entry
from kafkalike.storage.config import LONG_MAX, LogConfig
from kafkalike.storage.producer_state import ProducerBatch, last_sequence, producer_batch
from kafkalike.storage.errors import (
    CorruptRecordError, InvalidRecordError, InvalidTimestampError, OffsetsOutOfOrderError,
    RecordTooLargeError, RecordValidationError,
)

_LENGTH = struct.Struct(">i")
# baseOffset, batchLength, partitionLeaderEpoch, magic: the 17 bytes before the CRC; a
# leader rewrites the first and third, neither of which the CRC covers.
_PATCH = struct.Struct(">qiib")
# The same with the CRC after them: the fast path writes the 21 bytes before the part the
# CRC covers, so one view of the batch serves both the CRC check and the write.
_PATCHED_HEAD = struct.Struct(">qiibI")
_ATTRS = struct.Struct(">h")
_CRC = struct.Struct(">I")
_MIN_BATCH_LENGTH = batch_header.HEADER_SIZE - LOG_OVERHEAD
# Batches validate_client_batch leaves to the general loop: control batches (refused from
# clients) and client-set LogAppendTime (the CRC must be recomputed).
_UNUSUAL_ATTRIBUTES = CONTROL_MASK | TIMESTAMP_TYPE_MASK


class AppendOrigin(enum.Enum):
    """Who is appending: clients get the strictest checks, replication none of the leader's."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


_CLIENT = AppendOrigin.CLIENT
_REPLICATION = AppendOrigin.REPLICATION


@dataclass(slots=True)
class LogAppendInfo:
    """What an append did; the broker builds the Produce response from it."""

    first_offset: int = -1
    last_offset: int = -1
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1
    log_append_time: int = -1
    log_start_offset: int = 0
    valid_bytes: int = 0
    batch_count: int = 0
    records_count: int = 0
    last_leader_epoch: int | None = None
    # (epoch, base offset) for each batch that starts a different epoch than the one before.
    epoch_starts: list[tuple[int, int]] = field(default_factory=list)
    # ProducerBatch for each batch from an idempotent producer (producer id >= 0).
    producer_batches: list = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AppendRules:
    """The parts of a LogConfig an append checks, looked up once per config, not per batch."""

    max_message_bytes: int
    log_append_time: bool
    timestamp_limit_ms: int | None  # None: message.timestamp.difference.max.ms is unbounded
    compacted: bool = False         # cleanup.policy has compact: every record needs a key
    log_magic: int = 2              # what message.format.version writes: 0/1 are converted on append

    @classmethod
    def from_config(cls, config: LogConfig) -> "AppendRules":
        limit = config.message_timestamp_difference_max_ms
        return cls(config.max_message_bytes, config.log_append_time,
                   None if limit == LONG_MAX else limit, config.compact, config.record_version)


def _set_create_time(buf: bytearray, pos: int, size: int) -> None:
    """Clear a client-set LogAppendTime bit on a CreateTime topic; the CRC must follow."""
    attrs = _ATTRS.unpack_from(buf, pos + ATTRIBUTES)[0] & ~TIMESTAMP_TYPE_MASK
    _ATTRS.pack_into(buf, pos + ATTRIBUTES, attrs)
    _CRC.pack_into(buf, pos + CRC, batch_header.compute_crc(buf, pos, size))


def _check_client_batch(base: int, delta: int, count: int, attributes: int, producer_id: int,
                        base_sequence: int) -> None:
    """Kafka's LogValidator.validateBatch rules for batches straight from a producer."""
    if base != 0:
        raise InvalidRecordError(
            f"The baseOffset of the record batch in the append should be 0, but it is {base}")
    if count <= 0 or count != delta + 1:
        raise InvalidRecordError(
            f"Inconsistent batch offset range [0, {delta}] and count of records {count}")
    if attributes & CONTROL_MASK:
        raise InvalidRecordError("Clients are not allowed to write control records")
    if producer_id >= 0 and base_sequence < 0:
        raise InvalidRecordError(
            f"Invalid sequence number {base_sequence} in record batch with producerId {producer_id}")


def _check_timestamps(first_ts: int, max_ts: int, now_ms: int, limit: int) -> None:
    # NO_TIMESTAMP (-1: a magic 0 message, converted) is exempt, as in Kafka's LogValidator.
    for ts in (first_ts, max_ts):
        if ts != NO_TIMESTAMP and abs(ts - now_ms) > limit:
            raise InvalidTimestampError(
                f"Timestamp {ts} of a record batch is out of range. The timestamp should be within "
                f"[{now_ms - limit}, {now_ms + limit}]")


def keyless_records(batch: memoryview) -> list[int]:
    """Indexes within one batch of the records without a key.

    The one rule Kafka checks record by record that the batch header cannot answer: a
    compacted topic must not take a record the cleaner could only drop. So only
    compacted topics pay for decoding (and decompressing) their clients' batches.
    """
    from kafkalike.records.batch import decode_batches
    return [i for b in decode_batches(batch, verify_crc=False) for i, r in enumerate(b.records())
            if r.key is None]


def validate_client_batch(buf: bytes | bytearray | memoryview, rules: AppendRules, next_offset: int,
                          leader_epoch: int | None, now_ms: int,
                          latest_epoch: int | None = None) -> tuple[LogAppendInfo, list] | None:
    """`validate_append` for the usual produce: one whole batch from a client, to a leader.

    A partition's produce data is nearly always a single CreateTime batch, and at 16 KiB
    the generic loop's bookkeeping costs as much as the CRC, so this does the same checks
    (length, size limit, magic, CRC-32C, the client rules, timestamps) with one header
    unpack and returns the same (info, pieces). It never raises: for anything it does not
    handle (several or torn batches, LogAppendTime, a client-set LogAppendTime bit,
    control batches, compacted topics) or any check that fails it returns None, and the
    caller runs `validate_append`, which then refuses the batch with its own error.
    """
    n = len(buf)
    if n < HEADER_SIZE or rules.log_append_time or rules.compacted:
        return None
    (base, length, epoch, magic, crc, attributes, delta, first_ts, max_ts, producer_id,
     producer_epoch, base_sequence, count) = HEADER_STRUCT.unpack_from(buf)
    if (length + LOG_OVERHEAD != n or n > rules.max_message_bytes or magic != 2 or base
            or count <= 0 or count != delta + 1 or attributes & _UNUSUAL_ATTRIBUTES
            or (producer_id >= 0 and base_sequence < 0)):
        return None
    limit = rules.timestamp_limit_ms
    if limit is not None and ((first_ts != NO_TIMESTAMP and abs(first_ts - now_ms) > limit)
                              or (max_ts != NO_TIMESTAMP and abs(max_ts - now_ms) > limit)):
        return None
    covered = memoryview(buf)[ATTRIBUTES:]  # what the CRC covers, and what goes to the file as is
    if crc32c(covered) != crc:
        return None
    if leader_epoch is not None:
        epoch = leader_epoch
    last = next_offset + delta
    producer_batches = [] if producer_id < 0 else [ProducerBatch(
        producer_id, producer_epoch, base_sequence, last_sequence(base_sequence, delta), next_offset,
        last, max_ts, False, bool(attributes & TRANSACTIONAL_MASK))]
    if epoch < 0:
        epoch_starts, last_epoch = [], None
    else:
        epoch_starts = [] if epoch == latest_epoch else [(epoch, next_offset)]
        last_epoch = epoch
    if max_ts < 0:  # as the loop's running maximum, which starts at -1
        max_ts = offset_of_max = -1
    else:
        offset_of_max = last
    return (LogAppendInfo(next_offset, last, max_ts, offset_of_max, -1, 0, n, 1, count,
                          last_epoch, epoch_starts, producer_batches),
            [_PATCHED_HEAD.pack(next_offset, length, epoch, 2, crc), covered])


def validate_append(buf: bytes | bytearray | memoryview, rules: AppendRules, next_offset: int, assign_offsets: bool,
                    leader_epoch: int | None, origin: AppendOrigin, now_ms: int,
                    latest_epoch: int | None = None, name: str = "") -> tuple[LogAppendInfo, list]:
    """Validate every whole batch in `buf`; as leader, assign offsets. Returns (info, pieces).

    `buf` is never modified. `pieces` are the buffers to write, in order: where a batch
    needs its baseOffset or leader epoch patched, a 17-byte patched copy of its first
    fields followed by a view of the rest (neither field is under the CRC), so the
    batch itself is not copied; LogAppendTime batches are copied whole since their CRC
    changes. A torn batch at the very end is dropped, as Kafka's batch iterator drops
    it; info.valid_bytes says how much is kept. `epoch_starts` lists epoch changes
    relative to `latest_epoch` (the log's latest cached epoch), so the usual append
    reports none. Raises CorruptRecordError (bad length, magic or CRC),
    RecordTooLargeError, InvalidRecordError, InvalidTimestampError, OffsetsOutOfOrderError,
    and RecordValidationError naming each keyless record a client sends to a compacted
    topic (`name` is the partition, for its message).
    """
    view = memoryview(buf)
    n = len(view)
    pos = 0
    max_size = rules.max_message_bytes if origin is not _REPLICATION else n + 1
    client = assign_offsets and origin is _CLIENT
    log_append_time = assign_offsets and rules.log_append_time
    ts_limit = rules.timestamp_limit_ms if assign_offsets and not log_append_time else None
    patch = assign_offsets or leader_epoch is not None
    offset = next_offset
    first = last = -1
    max_ts = offset_of_max = -1
    epoch = -1
    prev_epoch = -1 if latest_epoch is None else latest_epoch
    epoch_starts: list[tuple[int, int]] = []
    pieces: list = []
    producer_batches: list = []
    records = batches = 0
    unpack = HEADER_STRUCT.unpack_from
    while n - pos >= LOG_OVERHEAD:
        if n - pos < HEADER_SIZE:
            if not assign_offsets and n - pos > MAGIC and view[pos + MAGIC] < 2:
                return validate_replicated_legacy(view, rules, latest_epoch)
            length = _LENGTH.unpack_from(view, pos + 8)[0]
            if length < _MIN_BATCH_LENGTH:
                raise CorruptRecordError(
                    f"record batch at position {pos} has length {length}, smaller than the v2 header")
            break  # a torn trailing batch is dropped, not an error
        (base, length, epoch, magic, crc, attributes, delta, first_ts, batch_max_ts, producer_id,
         producer_epoch, base_sequence, count) = unpack(view, pos)
        size = length + LOG_OVERHEAD
        if magic < 2 and not assign_offsets:  # an old-format log's entries, replicated as they are
            return validate_replicated_legacy(view, rules, latest_epoch)
        if length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"record batch at position {pos} has length {length}, smaller than the v2 header")
        if size > n - pos:
            break  # a torn trailing batch is dropped, not an error
        if size > max_size:
            raise RecordTooLargeError(
                f"The record batch size in the append is {size} bytes which exceeds the maximum "
                f"configured value of {max_size}.")
        if magic != 2:
            raise CorruptRecordError(f"Record is corrupt: unsupported magic {magic} at position {pos}")
        if crc32c(view[pos + ATTRIBUTES:pos + size]) != crc:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {crc}) at position {pos}")
        if delta < 0 or count < 0:
            raise CorruptRecordError(f"Record is corrupt: batch at position {pos} has negative counts")
        if assign_offsets:
            if client and (base or count != delta + 1 or attributes & CONTROL_MASK
                           or (producer_id >= 0 and base_sequence < 0)):
                _check_client_batch(base, delta, count, attributes, producer_id, base_sequence)
            base = offset
            offset = base + delta + 1
            if ts_limit is not None:
                _check_timestamps(first_ts, batch_max_ts, now_ms, ts_limit)
            if client and rules.compacted:
                missing = keyless_records(view[pos:pos + size])
                if missing:
                    message = f"Compacted topic cannot accept message without key in topic partition {name}."
                    raise RecordValidationError([(i, message) for i in missing])
        elif base <= last:
            raise OffsetsOutOfOrderError(
                f"Out of order offsets found in append: batch at offset {base} follows {last}")
        if leader_epoch is not None:
            epoch = leader_epoch
        if patch:
            if assign_offsets and (log_append_time or attributes & TIMESTAMP_TYPE_MASK):
                whole = bytearray(view[pos:pos + size])
                _PATCH.pack_into(whole, 0, base, length, epoch, 2)
                if log_append_time:
                    batch_header.set_max_timestamp_log_append(whole, 0, size, now_ms)
                    batch_max_ts = now_ms
                else:
                    _set_create_time(whole, 0, size)
                pieces.append(whole)
            else:
                pieces.append(_PATCH.pack(base, length, epoch, 2))
                pieces.append(view[pos + CRC:pos + size])
        last = base + delta
        if producer_id >= 0:
            if attributes & CONTROL_MASK:   # a coordinator's marker or a replicated one: read its record
                producer_batches.append(producer_batch(
                    (base, length, epoch, magic, crc, attributes, delta, first_ts, batch_max_ts, producer_id,
                     producer_epoch, base_sequence, count), view[pos:pos + size]))
            else:
                producer_batches.append(ProducerBatch(producer_id, producer_epoch, base_sequence,
                                                      last_sequence(base_sequence, delta), base, last,
                                                      batch_max_ts, False, bool(attributes & TRANSACTIONAL_MASK)))
        if batches == 0:
            first = base
        if batch_max_ts > max_ts:
            max_ts, offset_of_max = batch_max_ts, last
        if epoch >= 0 and epoch != prev_epoch:
            epoch_starts.append((epoch, base))
            prev_epoch = epoch
        records += count
        batches += 1
        pos += size
    if not patch and pos:
        pieces.append(view[:pos] if pos < n else buf)
    if log_append_time and batches:
        max_ts, offset_of_max, append_time = now_ms, last, now_ms
    else:
        append_time = -1
    info = LogAppendInfo(first, last, max_ts, offset_of_max, append_time, 0, pos, batches, records,
                         epoch if batches and epoch >= 0 else None, epoch_starts, producer_batches)
    return info, pieces


def validate_replicated_legacy(buf: memoryview, rules: AppendRules,
                               latest_epoch: int | None = None) -> tuple[LogAppendInfo, list]:
    """`validate_append` for a follower's append that holds magic 0/1 entries (an old-format log).

    Kafka 2.8's analyzeAndValidateRecords for a follower: every whole entry, v2 batch or
    legacy message, must pass its CRC (CRC-32C, or CRC-32 for magic 0/1) and the offsets
    rise; nothing is rewritten. A legacy entry's offset field is its last offset; a
    compressed one's first offset is unknown without decompressing it, so, as in Kafka,
    the last offset of the first entry stands for the append's first offset when it is
    one. Legacy entries carry no leader epoch and no producer; the v2 batches among them
    (written before the topic's format was lowered) count as usual. A torn entry at the
    very end is dropped.
    """
    view = buf
    n = len(view)
    pos = 0
    first = last = -1
    max_ts = offset_of_max = -1
    epoch = -1
    prev_epoch = -1 if latest_epoch is None else latest_epoch
    epoch_starts: list[tuple[int, int]] = []
    producer_batches: list = []
    records = batches = 0
    while n - pos > MAGIC:
        length = _LENGTH.unpack_from(view, pos + 8)[0]
        if length < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"Record size {length} at position {pos} is less than the minimum record "
                                     f"overhead ({RECORD_OVERHEAD_V0})")
        size = length + LOG_OVERHEAD
        if size > n - pos:
            break
        magic = view[pos + MAGIC]
        if magic == 2:
            try:
                header = batch_header.validate_batch(view[:pos + size], pos)
            except batch_header.InvalidRecordError as exc:
                raise CorruptRecordError(f"Record is corrupt: {exc}") from None
            base, entry_last, entry_ts, count = (header.base_offset, header.last_offset, header.max_timestamp,
                                                 header.records_count)
            if header.partition_leader_epoch >= 0 and header.partition_leader_epoch != prev_epoch:
                epoch_starts.append((header.partition_leader_epoch, base))
                prev_epoch = epoch = header.partition_leader_epoch
            if header.producer_id >= 0:
                producer_batches.append(producer_batch(
                    (header.base_offset, header.batch_length, header.partition_leader_epoch, 2, header.crc,
                     header.attributes, header.last_offset_delta, header.base_timestamp, header.max_timestamp,
                     header.producer_id, header.producer_epoch, header.base_sequence, header.records_count),
                    view[pos:pos + size]))
        elif magic in (0, 1):
            try:
                entry = check_legacy_entry(view[:pos + size], pos)
            except batch_header.InvalidRecordError as exc:
                raise CorruptRecordError(f"Record is corrupt: {exc}") from None
            base = entry_last = entry.offset
            entry_ts, count = entry.timestamp, 1
        else:
            raise CorruptRecordError(f"Record is corrupt: unsupported magic {magic} at position {pos}")
        if entry_last <= last:
            raise OffsetsOutOfOrderError(
                f"Out of order offsets found in append: entry with last offset {entry_last} follows {last}")
        if batches == 0:
            first = base
        last = entry_last
        if entry_ts > max_ts:
            max_ts, offset_of_max = entry_ts, last
        records += count
        batches += 1
        pos += size
    pieces = [view[:pos]] if pos else []
    info = LogAppendInfo(first, last, max_ts, offset_of_max, -1, 0, pos, batches, records,
                         epoch if epoch >= 0 else None, epoch_starts, producer_batches)
    return info, pieces
