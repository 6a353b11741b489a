"""The idempotent producer's bookkeeping: its producer id and per-partition sequences.

The broker drops a batch it already has and refuses one that skips sequences, so the
producer's part is to number batches once and never renumber them: a batch gets its
base sequence when it is first drained, and keeps it (and its bytes) through every
retry. Up to five batches of a partition may be in flight; when one fails with a
retriable error the ones behind it fail too (the broker sees a gap), and they go back
to the queue in sequence order. A retried batch is sent only once it is the lowest
unacknowledged batch of its partition, so retries go out in order and each lands
exactly once (Java's TransactionManager does the same for idempotent producers).

If a batch fails for good (delivery timeout, a non-retriable error) the broker's
sequence for that partition has a gap the producer can never fill. Kafka 2.8 brokers
answer InitProducerId for an idempotent producer with a fresh producer id, so once
nothing of the old id is unacknowledged the producer asks for a new one and restarts
every partition at sequence 0.

Used by the sender thread only; the accumulator calls may_drain/assign under its lock.
"""
from __future__ import annotations

import bisect

from kafkalike.client.metadata import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
INT_MAX = (1 << 31) - 1


class IdempotenceManager:
    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.reset_pending = False
        self._next_sequence: dict[TopicPartition, int] = {}
        # Drained, not yet completed batches of each partition, by base sequence.
        self._unacked: dict[TopicPartition, list] = {}

    def has_producer_id(self) -> bool:
        return self.producer_id >= 0 and not self.reset_pending

    def needs_producer_id(self) -> bool:
        """True when an InitProducerId should be sent now."""
        return self.producer_id < 0 or (self.reset_pending and not any(self._unacked.values()))

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        self.producer_id, self.producer_epoch = producer_id, epoch
        self.reset_pending = False
        self._next_sequence.clear()
        self._unacked.clear()

    # -- called by the accumulator while draining ----------------------------------------

    def may_drain(self, batch) -> bool:
        if batch.base_sequence < 0:
            return self.has_producer_id()
        unacked = self._unacked.get(batch.tp)
        return bool(unacked) and unacked[0] is batch

    def assign(self, batch) -> None:
        """Number a batch the first time it is drained; a retried batch keeps its numbers."""
        if batch.base_sequence >= 0:
            return
        seq = self._next_sequence.get(batch.tp, 0)
        batch.set_producer_state(self.producer_id, self.producer_epoch, seq)
        self._next_sequence[batch.tp] = (seq + batch.count) % (INT_MAX + 1)
        self._unacked.setdefault(batch.tp, []).append(batch)

    # -- called by the sender on answers ---------------------------------------------------

    def is_first_unacked(self, batch) -> bool:
        unacked = self._unacked.get(batch.tp)
        return bool(unacked) and unacked[0] is batch

    def completed(self, batch, succeeded: bool) -> None:
        """A batch is done for good; a failure leaves a gap only a new producer id closes."""
        unacked = self._unacked.get(batch.tp)
        if unacked is None or batch not in unacked:
            return
        unacked.remove(batch)
        if not unacked:
            del self._unacked[batch.tp]
        if not succeeded and batch.producer_id == self.producer_id:
            self.reset_pending = True


def insert_in_sequence_order(queue, batch) -> None:
    """Put a retried batch back ahead of newer ones, after retried ones with lower sequences."""
    keys = [b.base_sequence if b.base_sequence >= 0 else INT_MAX + 1 for b in queue]
    position = bisect.bisect_left(keys, batch.base_sequence)
    queue.insert(position, batch)
