"""Per-partition state of idempotent producers: what makes a retried batch harmless.

For each producer id the log remembers the producer's epoch and the sequence ranges
and offsets of its last five batches, which is how many a producer may have in flight.
A retried batch that already landed is recognised by its (epoch, first seq, last seq)
and answered with its original offsets instead of being written twice; a batch that
skips sequences, or comes from an older epoch, is refused, so a producer's records land
exactly once and in order (Kafka 2.8's ProducerStateManager, without transactions).

The leader validates (AppendOrigin.CLIENT); replicated batches (REPLICATION) only
update the state, so a follower that becomes leader can dedupe retries of batches its
predecessor accepted. The state is rebuilt by reading batch headers from the log, since
it is a pure function of the batches the log holds.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from kafkalike.records.header import (CONTROL_MASK, HEADER_SIZE, HEADER_STRUCT, LOG_OVERHEAD,
                                      NO_PRODUCER_EPOCH)
from kafkalike.storage.errors import StorageError

NUM_BATCHES_TO_RETAIN = 5          # a producer's max.in.flight.requests.per.connection limit
INT_MAX = (1 << 31) - 1
_SCAN_CHUNK = 1 << 20


class OutOfOrderSequenceError(StorageError):
    """A batch's first sequence does not follow the producer's last one: records would be lost or reordered."""

    error_code = 45


class InvalidProducerEpochError(StorageError):
    """A batch from an epoch older than the producer's latest: a zombie instance of it."""

    error_code = 47


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


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> "ProducerStateEntry":
        return ProducerStateEntry(self.producer_id, self.epoch, deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
                                  self.last_timestamp)

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None

    def add(self, batch: ProducerBatch) -> None:
        if batch.epoch != self.epoch:
            self.batches.clear()           # a new epoch restarts sequences at 0
            self.epoch = batch.epoch
        if not batch.is_control:
            self.batches.append(BatchMetadata(batch.first_seq, batch.last_seq, batch.first_offset,
                                              batch.last_offset, batch.timestamp))
        self.last_timestamp = batch.timestamp


class ProducerStateManager:
    """The producers of one partition. Called under the Log's lock only."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def find_duplicate(self, batches: Iterable[ProducerBatch]) -> BatchMetadata | None:
        """The stored batch one of `batches` repeats, if any (checked for client appends only)."""
        for b in batches:
            entry = self.producers.get(b.producer_id)
            if entry is not None and not b.is_control:
                found = entry.find_duplicate(b.epoch, b.first_seq, b.last_seq)
                if found is not None:
                    return found
        return None

    def prepare(self, batches: Iterable[ProducerBatch], validate: bool) -> dict[int, ProducerStateEntry]:
        """The entries after `batches`, without changing this manager; raises if a client batch is refused.

        The caller writes the batches and then calls apply(), so a refused or failed
        append leaves the state untouched.
        """
        updated: dict[int, ProducerStateEntry] = {}
        for b in batches:
            entry = updated.get(b.producer_id)
            if entry is None:
                current = self.producers.get(b.producer_id)
                entry = current.copy() if current is not None else ProducerStateEntry(b.producer_id)
                updated[b.producer_id] = entry
            if validate:
                _check(entry, b)
            entry.add(b)
        return updated

    def apply(self, updated: dict[int, ProducerStateEntry]) -> None:
        self.producers.update(updated)

    def update(self, batches: Iterable[ProducerBatch]) -> None:
        """Take replicated or reloaded batches as they are (no validation)."""
        self.apply(self.prepare(batches, validate=False))

    def clear(self) -> None:
        self.producers.clear()

    def rebuild(self, segments: Iterable, end_offset: int | None = None) -> None:
        """Forget everything and replay the producer batches of `segments` (LogSegments, in order)."""
        self.clear()
        for segment in segments:
            self.update(b for b in scan_segment(segment.fd, segment.size)
                        if end_offset is None or b.last_offset < end_offset)


def _check(entry: ProducerStateEntry, b: ProducerBatch) -> None:
    """Kafka 2.8's checkProducerEpoch and checkSequence for a batch from a client."""
    pid = b.producer_id
    if b.epoch < entry.epoch:
        raise InvalidProducerEpochError(
            f"Epoch of producer {pid} at offset {b.first_offset} is {b.epoch}, which is smaller than "
            f"the last seen epoch {entry.epoch}")
    if b.is_control:
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


def scan_segment(fd: int, size: int) -> Iterable[ProducerBatch]:
    """The producer batches of a segment file, from its headers only (recovery validated the bytes)."""
    unpack = HEADER_STRUCT.unpack_from
    position = 0
    while position + HEADER_SIZE <= size:
        chunk = os.pread(fd, min(_SCAN_CHUNK, size - position), position)
        pos = 0
        n = len(chunk)
        while n - pos >= HEADER_SIZE:
            (base, length, _epoch, magic, _crc, attributes, delta, _first_ts, max_ts, producer_id,
             producer_epoch, base_sequence, _count) = unpack(chunk, pos)
            batch_size = length + LOG_OVERHEAD
            if magic != 2 or length <= 0:
                return
            if producer_id >= 0:
                yield ProducerBatch(producer_id, producer_epoch, base_sequence, last_sequence(base_sequence, delta),
                                    base, base + delta, max_ts, bool(attributes & CONTROL_MASK))
            pos += batch_size
        if pos == 0:
            return
        position += pos
