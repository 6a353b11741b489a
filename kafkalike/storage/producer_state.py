"""Per-partition state of idempotent and transactional producers (Kafka 2.8's ProducerStateManager).

For each producer id the log remembers the producer's epoch and the sequence ranges
and offsets of its last five batches, which is how many a producer may have in flight.
A retried batch that already landed is recognised by its (epoch, first seq, last seq)
and answered with its original offsets instead of being written twice; a batch that
skips sequences, or comes from an older epoch, is refused, so a producer's records land
exactly once and in order.

Transactions: a producer's first transactional batch opens its transaction at that
batch's offset; the COMMIT or ABORT marker the coordinator writes (a control batch)
closes it and records the coordinator epoch, so a marker from an older coordinator is
refused (TRANSACTION_COORDINATOR_FENCED) as is one from an older producer epoch
(INVALID_PRODUCER_EPOCH). The open transactions bound the last stable offset; a closed
one keeps bounding it until its marker is below the high watermark (replicated). An
aborted transaction becomes an entry of the segment's `.txnindex`, which the Log writes.

Producer ids expire as in Kafka 2.8: a producer with no open transaction whose last
batch (data or marker) has a timestamp older than transactional.id.expiration.ms is
forgotten (`remove_expired`, which the LogManager runs every ten minutes, and when a
snapshot is loaded); its next batch must then start a new epoch or sequence 0. When the
log start offset moves (retention, DeleteRecords) only the closed transactions whose
marker lies below it are dropped (`on_log_start_offset_incremented`): since KAFKA-7190
(Kafka 2.4) producers outlive the data they wrote, until they expire.

The leader validates (AppendOrigin.CLIENT, and COORDINATOR for markers); replicated
batches (REPLICATION) only update the state, so a follower that becomes leader can
dedupe retries of batches its predecessor accepted and knows the open transactions.
The state is rebuilt by reading batch headers from the log (and the one record of each
control batch), since it is a pure function of the batches the log holds.
"""
from __future__ import annotations

import os
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from kafkalike.records.header import (CODEC_MASK, CONTROL_MASK, HEADER_SIZE, HEADER_STRUCT, LOG_OVERHEAD,
                                      NO_PRODUCER_EPOCH, TRANSACTIONAL_MASK)
from kafkalike.storage.errors import CorruptRecordError, StorageError

NUM_BATCHES_TO_RETAIN = 5          # a producer's max.in.flight.requests.per.connection limit
INT_MAX = (1 << 31) - 1
NO_COORDINATOR_EPOCH = -1
NO_MARKER = -1                     # ProducerBatch.marker for data batches; else 0 ABORT, 1 COMMIT
ABORT = 0
COMMIT = 1
_SCAN_CHUNK = 1 << 20
_MARKER_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


class OutOfOrderSequenceError(StorageError):
    """A batch's first sequence does not follow the producer's last one: records would be lost or reordered."""

    error_code = 45


class InvalidProducerEpochError(StorageError):
    """A batch from an epoch older than the producer's latest: a zombie instance of it."""

    error_code = 47


class InvalidTxnStateError(StorageError):
    """A non-transactional batch from a producer whose transaction is open (INVALID_TXN_STATE)."""

    error_code = 48


class TransactionCoordinatorFencedError(StorageError):
    """A marker from a coordinator epoch older than the one that last wrote to this producer."""

    error_code = 52


class UnknownProducerIdError(StorageError):
    """A batch with sequence > 0 from a producer this partition has no record of (e.g. retention removed it)."""

    error_code = 59


def last_sequence(base_sequence: int, offset_delta: int) -> int:
    """The sequence of a batch's last record; sequences wrap from INT_MAX to 0."""
    if base_sequence > INT_MAX - offset_delta:
        return offset_delta - (INT_MAX - base_sequence) - 1
    return base_sequence + offset_delta


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


def _read_varint(buf, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def read_end_txn_marker(batch) -> tuple[int, int] | None:
    """(ABORT or COMMIT, coordinator epoch) of a whole control batch; None if it is empty.

    A control batch holds one record, so reading it costs next to nothing; only markers
    (never clients' data batches) come here. Compressed control batches, which no
    Kafka writes, are decoded with the records codec. Raises CorruptRecordError for a
    record that is not an end-transaction marker, as Kafka's EndTransactionMarker does.
    """
    view = memoryview(batch)
    try:
        attributes = int.from_bytes(view[21:23], "big")
        if attributes & CODEC_MASK:
            from kafkalike.records.batch import decode_batches
            records = [r for b in decode_batches(bytes(view), verify_crc=False) for r in b.records()]
            if not records:
                return None
            key, value = records[0].key, records[0].value
        else:
            if int.from_bytes(view[57:61], "big", signed=True) <= 0 or len(view) <= HEADER_SIZE:
                return None
            pos = HEADER_SIZE
            _length, pos = _read_varint(view, pos)
            pos += 1                                  # record attributes
            _ts, pos = _read_varint(view, pos)
            _delta, pos = _read_varint(view, pos)
            key_len, pos = _read_varint(view, pos)
            key = bytes(view[pos:pos + key_len]) if key_len >= 0 else None
            pos += max(key_len, 0)
            value_len, pos = _read_varint(view, pos)
            value = bytes(view[pos:pos + value_len]) if value_len >= 0 else None
        if key is None or len(key) < _MARKER_KEY.size or value is None or len(value) < _MARKER_VALUE.size:
            raise ValueError("marker key or value too short")
        version, control_type = _MARKER_KEY.unpack_from(key)
        value_version, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
    except (ValueError, IndexError, struct.error) as exc:
        raise CorruptRecordError(f"Control batch holds no valid end transaction marker: {exc}") from None
    if version < 0 or value_version < 0 or control_type not in (ABORT, COMMIT):
        raise CorruptRecordError(f"Invalid record type for end transaction marker: {control_type}")
    return control_type, coordinator_epoch


@dataclass(frozen=True, slots=True)
class ProducerBatch:
    """The producer fields of one appended batch, as the validator saw them."""

    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int
    is_control: bool = False
    is_transactional: bool = False
    marker: int = NO_MARKER            # control batches: ABORT or COMMIT (NO_MARKER: an empty one)
    coordinator_epoch: int = NO_COORDINATOR_EPOCH


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class CompletedTxn(NamedTuple):
    """A transaction its marker closed: [first_offset, last_offset], the marker being last_offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int = -1    # -1: no open transaction

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> "ProducerStateEntry":
        return ProducerStateEntry(self.producer_id, self.epoch, deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
                                  self.last_timestamp, self.coordinator_epoch, self.current_txn_first_offset)

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None

    def add(self, batch: ProducerBatch) -> CompletedTxn | None:
        """Take a batch in; a marker closing a non-empty transaction returns it."""
        if batch.epoch != self.epoch:
            if batch.epoch > self.epoch or not batch.is_control:
                self.batches.clear()           # a new epoch restarts sequences at 0
            self.epoch = max(self.epoch, batch.epoch) if batch.is_control else batch.epoch
        self.last_timestamp = batch.timestamp
        if batch.is_control:
            if batch.marker == NO_MARKER:      # emptied by the cleaner: nothing to close
                return None
            completed = None
            if self.current_txn_first_offset >= 0:
                completed = CompletedTxn(self.producer_id, self.current_txn_first_offset, batch.first_offset,
                                         batch.marker == ABORT)
            self.current_txn_first_offset = -1
            self.coordinator_epoch = batch.coordinator_epoch
            return completed
        self.batches.append(BatchMetadata(batch.first_seq, batch.last_seq, batch.first_offset,
                                          batch.last_offset, batch.timestamp))
        if batch.is_transactional and self.current_txn_first_offset < 0:
            self.current_txn_first_offset = batch.first_offset
        return None


@dataclass(slots=True)
class PendingUpdate:
    """What an append will do to the producer state; applied once its batches are written."""

    entries: dict[int, ProducerStateEntry]
    completed: list[CompletedTxn]
    last_offset: int = -1              # of the last batch it takes in

    def __bool__(self) -> bool:
        return bool(self.entries)


class ProducerStateManager:
    """The producers of one partition. Called under the Log's lock only."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        # Closed transactions whose marker may not be replicated yet, in marker order: they
        # hold the last stable offset back until the high watermark passes their marker.
        self.unreplicated: deque[CompletedTxn] = deque()
        self._ongoing: dict[int, int] = {}   # producer id -> first offset of its open transaction
        # The last offset of any producer batch taken in (or below a loaded snapshot): a
        # truncation above it changes nothing here.
        self.last_batch_offset = -1

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    @property
    def ongoing(self) -> dict[int, int]:
        """Producer id -> first offset of each open transaction."""
        return self._ongoing

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open or unreplicated transaction, None when all are stable."""
        if not self._ongoing and not self.unreplicated:
            return None
        # list() copies in one step under the GIL: the cleaner's thread reads this too.
        candidates = list(self._ongoing.values())
        candidates.extend(t.first_offset for t in list(self.unreplicated))
        return min(candidates) if candidates else None

    def is_expired(self, entry: ProducerStateEntry, now_ms: int, max_age_ms: int) -> bool:
        """Kafka 2.8's isProducerExpired: idle for max_age_ms (by its last batch's timestamp)
        and no transaction open."""
        return entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= max_age_ms

    def remove_expired(self, now_ms: int, max_age_ms: int) -> list[int]:
        """Forget the producers idle for `max_age_ms` without an open transaction (Kafka's
        removeExpiredProducers); returns their ids."""
        producers = self.producers
        expired = [pid for pid, entry in producers.items() if self.is_expired(entry, now_ms, max_age_ms)]
        for pid in expired:
            del producers[pid]
        return expired

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """The log start moved: closed transactions whose marker lies below it stop holding the
        LSO (Kafka 2.8's onLogStartOffsetIncremented). Producers stay until they expire."""
        unreplicated = self.unreplicated
        if any(t.last_offset < log_start_offset for t in unreplicated):
            self.unreplicated = deque(t for t in unreplicated if t.last_offset >= log_start_offset)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Closed transactions whose marker is below the high watermark no longer hold the LSO."""
        unreplicated = self.unreplicated
        while unreplicated and unreplicated[0].last_offset < high_watermark:
            unreplicated.popleft()

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO recorded with an aborted transaction: where the next other open one starts, else after the marker."""
        others = [first for pid, first in self._ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete(self, completed: CompletedTxn) -> None:
        # By first offset, as Kafka: the same append may already have opened the producer's next one.
        if self._ongoing.get(completed.producer_id) == completed.first_offset:
            del self._ongoing[completed.producer_id]
        self.unreplicated.append(completed)

    def find_duplicate(self, batches: Iterable[ProducerBatch]) -> BatchMetadata | None:
        """The stored batch one of `batches` repeats, if any (checked for client appends only)."""
        for b in batches:
            entry = self.producers.get(b.producer_id)
            if entry is not None and not b.is_control:
                found = entry.find_duplicate(b.epoch, b.first_seq, b.last_seq)
                if found is not None:
                    return found
        return None

    def prepare(self, batches: Iterable[ProducerBatch], validate: bool,
                check_epochs: bool | None = None) -> PendingUpdate:
        """The entries after `batches`, without changing this manager; raises if a batch is refused.

        `validate` applies a client's checks (epoch, sequence, transaction state);
        `check_epochs` (default: as `validate`) the ones a coordinator's markers get (producer
        and coordinator epochs). The caller writes the batches and then calls apply(), so a
        refused or failed append leaves the state untouched.
        """
        if check_epochs is None:
            check_epochs = validate
        updated: dict[int, ProducerStateEntry] = {}
        completed: list[CompletedTxn] = []
        last = -1
        for b in batches:
            entry = updated.get(b.producer_id)
            if entry is None:
                current = self.producers.get(b.producer_id)
                entry = current.copy() if current is not None else ProducerStateEntry(b.producer_id)
                updated[b.producer_id] = entry
            if check_epochs:
                _check(entry, b, sequences=validate)
            done = entry.add(b)
            if done is not None:
                completed.append(done)
            last = b.last_offset
        return PendingUpdate(updated, completed, last)

    def apply(self, update: PendingUpdate) -> None:
        """Store the entries; newly opened transactions start counting for the LSO.

        The transactions the update closed stay open here until complete() is called for
        each (the Log first writes their txn index entries, whose LSO still sees them).
        """
        self.producers.update(update.entries)
        self.last_batch_offset = max(self.last_batch_offset, update.last_offset)
        closed = {t.producer_id for t in update.completed}
        for pid, entry in update.entries.items():
            if entry.current_txn_first_offset >= 0:
                self._ongoing[pid] = entry.current_txn_first_offset
            elif pid not in closed:
                self._ongoing.pop(pid, None)

    def update(self, batches: Iterable[ProducerBatch]) -> list[CompletedTxn]:
        """Take replicated or reloaded batches as they are (no validation); the transactions closed."""
        pending = self.prepare(batches, validate=False)
        self.apply(pending)
        for txn in pending.completed:
            self.complete(txn)
        return pending.completed

    def load(self, entries: dict[int, ProducerStateEntry], offset: int) -> None:
        """Start from the entries of a snapshot taken at `offset` (their open transactions included)."""
        self.clear()
        self.producers = entries
        self.last_batch_offset = offset - 1
        self._ongoing = {pid: e.current_txn_first_offset for pid, e in entries.items()
                         if e.current_txn_first_offset >= 0}

    def clear(self) -> None:
        self.producers = {}
        self._ongoing = {}
        self.unreplicated.clear()
        self.last_batch_offset = -1


def _check(entry: ProducerStateEntry, b: ProducerBatch, sequences: bool) -> None:
    """Kafka 2.8's checks of a batch from a client (sequences) or a coordinator's marker."""
    pid = b.producer_id
    if b.epoch < entry.epoch:
        raise InvalidProducerEpochError(
            f"Epoch of producer {pid} at offset {b.first_offset} is {b.epoch}, which is smaller than "
            f"the last seen epoch {entry.epoch}")
    if b.is_control:
        if b.marker != NO_MARKER and entry.coordinator_epoch > b.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for {pid}: {b.coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)")
        return
    if not sequences:
        return
    if b.epoch != entry.epoch:
        if b.first_seq != 0:
            if entry.epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {pid} at offset {b.first_offset}: "
                    f"{b.epoch} (request epoch), {b.first_seq} (seq. number), {entry.epoch} (current producer epoch)")
            raise UnknownProducerIdError(
                f"Found no record of producerId={pid} on the broker at offset {b.first_offset}. It is possible "
                f"that the last message with the producerId={pid} has been removed due to hitting the "
                f"retention limit.")
    elif not in_sequence(entry.last_seq, b.first_seq):
        raise OutOfOrderSequenceError(
            f"Out of order sequence number for producerId {pid} at offset {b.first_offset}: "
            f"{b.first_seq} (incoming seq. number), {entry.last_seq} (current end sequence number)")
    if entry.current_txn_first_offset >= 0 and not b.is_transactional:
        raise InvalidTxnStateError(
            f"Expected transactional write from producer {pid} at offset {b.first_offset} in partition")


def producer_batch(fields: tuple, batch=None) -> ProducerBatch:
    """A ProducerBatch from an unpacked batch header; `batch` (the whole batch) is read only for a control batch."""
    (base, _length, _epoch, _magic, _crc, attributes, delta, _first_ts, max_ts, producer_id,
     producer_epoch, base_sequence, _count) = fields
    if attributes & CONTROL_MASK:
        found = read_end_txn_marker(batch) if batch is not None else None
        marker, coordinator_epoch = found if found is not None else (NO_MARKER, NO_COORDINATOR_EPOCH)
        return ProducerBatch(producer_id, producer_epoch, base_sequence, last_sequence(base_sequence, delta),
                             base, base + delta, max_ts, True, True, marker, coordinator_epoch)
    return ProducerBatch(producer_id, producer_epoch, base_sequence, last_sequence(base_sequence, delta),
                         base, base + delta, max_ts, False, bool(attributes & TRANSACTIONAL_MASK))


def scan_segment(fd: int, size: int, start: int = 0) -> Iterable[ProducerBatch]:
    """The producer batches of a segment file from position `start`, from headers only (recovery
    validated the bytes); a control batch's one record is read for its marker."""
    unpack = HEADER_STRUCT.unpack_from
    position = start
    while position + HEADER_SIZE <= size:
        chunk = os.pread(fd, min(_SCAN_CHUNK, size - position), position)
        pos = 0
        n = len(chunk)
        while n - pos >= HEADER_SIZE:
            fields = unpack(chunk, pos)
            length, magic, attributes, producer_id = fields[1], fields[3], fields[5], fields[9]
            batch_size = length + LOG_OVERHEAD
            if magic != 2:
                if magic < 2 and length > 0:  # a magic 0/1 entry: no producer, skip it
                    pos += batch_size
                    continue
                return
            if length <= 0:
                return
            if producer_id >= 0:
                if attributes & CONTROL_MASK:
                    if pos + batch_size > n:
                        if pos == 0:   # one batch larger than the chunk: read it alone
                            whole = os.pread(fd, batch_size, position)
                        else:
                            break
                    else:
                        whole = chunk[pos:pos + batch_size]
                    try:
                        yield producer_batch(fields, whole)
                    except CorruptRecordError:
                        yield producer_batch(fields)
                else:
                    yield producer_batch(fields)
            pos += batch_size
        if pos == 0:
            return
        position += pos
