"""The idempotent producer's bookkeeping: its producer id, epoch and per-partition sequences.

The broker drops a batch it already has and refuses one that skips sequences, so the
producer's part is to number batches once: a batch gets its base sequence when it is
first drained, and keeps it (and its bytes) through every retry. Up to five batches of
a partition may be in flight; when one fails with a retriable error the ones behind it
fail too (the broker sees a gap), and they go back to the queue in sequence order. A
retried batch is sent only once it is the lowest unacknowledged batch of its partition,
so retries go out in order and each lands exactly once (Java's TransactionManager does
the same for idempotent producers). A batch split after MESSAGE_TOO_LARGE hands its
sequence range to its pieces.

If a batch fails for good (delivery timeout, a non-retriable error), or the broker
reports a real gap or no longer knows the producer, the partition's sequence can never
be continued. As Kafka 2.8's producer does (KIP-360), the producer then bumps its epoch
locally and renumbers that partition's unacknowledged batches from sequence 0 under the
new epoch; the broker accepts sequence 0 of a newer epoch. Other partitions keep their
sequences under the old epoch until their unacknowledged batches are done, then start
at 0 under the new one. Only when the epoch is exhausted is a new producer id asked for.

Used by the sender thread only; the accumulator calls may_drain/assign under its lock.
"""
from __future__ import annotations

import bisect

from kafkalike.client.metadata import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
INT_MAX = (1 << 31) - 1
MAX_EPOCH = (1 << 15) - 1


class IdempotenceManager:
    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.reset_pending = False
        self._next_sequence: dict[TopicPartition, int] = {}
        # The (producer id, epoch) each partition's sequences currently run under.
        self._numbered_under: dict[TopicPartition, tuple[int, int]] = {}
        # Drained, not yet completed batches of each partition, by base sequence.
        self._unacked: dict[TopicPartition, list] = {}

    @property
    def _current(self) -> tuple[int, int]:
        return self.producer_id, self.producer_epoch

    def has_producer_id(self) -> bool:
        return self.producer_id >= 0 and not self.reset_pending

    def needs_producer_id(self) -> bool:
        """True when an InitProducerId should be sent now."""
        return self.producer_id < 0 or (self.reset_pending and not any(self._unacked.values()))

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        self.producer_id, self.producer_epoch = producer_id, epoch
        self.reset_pending = False
        self._next_sequence.clear()
        self._numbered_under.clear()
        self._unacked.clear()

    # -- called by the accumulator while draining ----------------------------------------

    def may_drain(self, batch) -> bool:
        unacked = self._unacked.get(batch.tp)
        if batch.base_sequence < 0:
            # A partition still numbered under an older epoch starts over only once its old batches are done.
            stale = self._numbered_under.get(batch.tp, self._current) != self._current
            return self.has_producer_id() and not (stale and unacked)
        return bool(unacked) and unacked[0] is batch

    def assign(self, batch) -> None:
        """Number a batch the first time it is drained; a retried batch keeps its numbers."""
        batch.resequenced = False  # it goes out now with the numbers it has
        if batch.base_sequence >= 0:
            return
        tp = batch.tp
        if self._numbered_under.get(tp) != self._current:
            self._numbered_under[tp] = self._current
            self._next_sequence[tp] = 0
        seq = self._next_sequence.get(tp, 0)
        batch.set_producer_state(self.producer_id, self.producer_epoch, seq)
        self._next_sequence[tp] = (seq + batch.count) % (INT_MAX + 1)
        self._unacked.setdefault(tp, []).append(batch)

    # -- called by the sender on answers ---------------------------------------------------

    def is_first_unacked(self, batch) -> bool:
        unacked = self._unacked.get(batch.tp)
        return bool(unacked) and unacked[0] is batch

    def replace(self, batch, pieces: list) -> None:
        """A split batch's pieces take over its place and its sequence numbers."""
        unacked = self._unacked.get(batch.tp)
        if unacked is None or batch not in unacked:
            return
        seq = batch.base_sequence
        for piece in pieces:
            piece.set_producer_state(batch.producer_id, batch.producer_epoch, seq)
            seq = (seq + piece.count) % (INT_MAX + 1)
        at = unacked.index(batch)
        unacked[at:at + 1] = pieces

    def completed(self, batch, succeeded: bool) -> None:
        """A batch is done for good; a failure leaves a gap in its partition's sequence."""
        unacked = self._unacked.get(batch.tp)
        if unacked is None or batch not in unacked:
            return
        unacked.remove(batch)
        if not succeeded:
            self.restart_sequences(batch.tp, batch)
        if not unacked:
            self._unacked.pop(batch.tp, None)

    def restart_sequences(self, tp: TopicPartition, cause) -> None:
        """Bump the epoch (unless `cause` is from an older one: it was bumped since) and
        renumber the partition's unacknowledged batches from 0 under it (KIP-360)."""
        if (cause.producer_id, cause.producer_epoch) == self._current:
            if self.producer_epoch >= MAX_EPOCH:
                self.reset_pending = True  # a new producer id once nothing old is unacknowledged
                return
            self.producer_epoch += 1
        seq = 0
        for batch in self._unacked.get(tp, ()):
            batch.renumber(self.producer_id, self.producer_epoch, seq)
            seq = (seq + batch.count) % (INT_MAX + 1)
        self._numbered_under[tp] = self._current
        self._next_sequence[tp] = seq


def insert_in_sequence_order(queue, batch) -> None:
    """Put a retried batch back ahead of newer ones, after retried ones with lower sequences."""
    keys = [b.base_sequence if b.base_sequence >= 0 else INT_MAX + 1 for b in queue]
    position = bisect.bisect_left(keys, batch.base_sequence)
    queue.insert(position, batch)
