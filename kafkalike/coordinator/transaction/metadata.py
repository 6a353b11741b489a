"""One transactional id's state, with Kafka 2.8's state table checked on every transition.

A change is made in two steps, as in Kafka: prepare_* computes the target
(TxnTransitMetadata) and marks it pending, the target is written to __transaction_state,
and only once the write is acknowledged does complete_transition_to() make it the
current state. While a transition is pending no other may start, so two requests of
the same producer can never race each other's log writes. A transition the table does
not allow is a coordinator bug and raises, never a client error.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 2**15 - 1

TopicPartition = tuple[str, int]


class TransactionState(enum.Enum):
    """Values are the ids written in the log's TransactionStatus byte."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """The Scala case object's name, which Kafka's logs and tools print."""
        return _NAMES[self]

    def __str__(self) -> str:
        return self.state_name

    @classmethod
    def from_id(cls, state_id: int) -> "TransactionState":
        try:
            return cls(state_id)
        except ValueError:
            raise ValueError(f"Unknown transaction state id {state_id} from the transaction status message") from None

    @property
    def is_expiration_allowed(self) -> bool:
        return self in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)


EMPTY = TransactionState.EMPTY
ONGOING = TransactionState.ONGOING
PREPARE_COMMIT = TransactionState.PREPARE_COMMIT
PREPARE_ABORT = TransactionState.PREPARE_ABORT
COMPLETE_COMMIT = TransactionState.COMPLETE_COMMIT
COMPLETE_ABORT = TransactionState.COMPLETE_ABORT
DEAD = TransactionState.DEAD
PREPARE_EPOCH_FENCE = TransactionState.PREPARE_EPOCH_FENCE

_NAMES = {EMPTY: "Empty", ONGOING: "Ongoing", PREPARE_COMMIT: "PrepareCommit", PREPARE_ABORT: "PrepareAbort",
          COMPLETE_COMMIT: "CompleteCommit", COMPLETE_ABORT: "CompleteAbort", DEAD: "Dead",
          PREPARE_EPOCH_FENCE: "PrepareEpochFence"}

# state -> the states it may be entered from (Kafka's validPreviousStates)
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    EMPTY: frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    ONGOING: frozenset({ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    PREPARE_COMMIT: frozenset({ONGOING}),
    PREPARE_ABORT: frozenset({ONGOING, PREPARE_EPOCH_FENCE}),
    COMPLETE_COMMIT: frozenset({PREPARE_COMMIT}),
    COMPLETE_ABORT: frozenset({PREPARE_ABORT}),
    DEAD: frozenset({EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT}),
    PREPARE_EPOCH_FENCE: frozenset({ONGOING}),
}


class IllegalTransactionTransition(RuntimeError):
    """A transition the state table forbids: a coordinator bug, never a client error."""


def is_epoch_exhausted(epoch: int) -> bool:
    """Short.MaxValue is kept back so the coordinator can always fence one more time."""
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The target of a pending transition: what is written to the log."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@dataclass(eq=False)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending_state: TransactionState | None = None
    # A fence whose log write failed: its bumped epoch was never returned, so the next
    # fence reuses it instead of bumping again.
    has_failed_epoch_fence: bool = False

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (ONGOING, PREPARE_ABORT, PREPARE_COMMIT)

    def __repr__(self) -> str:
        parts = ",".join(f"{t}-{p}" for t, p in sorted(self.topic_partitions))
        return (f"TransactionMetadata(transactionalId={self.transactional_id}, producerId={self.producer_id}, "
                f"producerEpoch={self.producer_epoch}, txnTimeoutMs={self.txn_timeout_ms}, state={self.state}, "
                f"pendingState={self.pending_state}, topicPartitions=Set({parts}), "
                f"txnStartTimestamp={self.txn_start_timestamp}, "
                f"txnLastUpdateTimestamp={self.txn_last_update_timestamp})")

    # -- preparing ----------------------------------------------------------------------

    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The current state as a transit, with nothing pending (for re-sending markers)."""
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransactionTransition(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata | None:
        """None: the caller's expected epoch is neither the current nor the last one (fenced)."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransactionTransition(f"Cannot allocate any more producer epochs for producerId "
                                               f"{self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            # a retry of a bump whose answer was lost: the same epoch again
            epochs = (self.producer_epoch, self.last_producer_epoch)
        else:
            return None
        return self._prepare(EMPTY, self.producer_id, epochs[0], epochs[1], new_timeout_ms, frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        if self.has_pending_transaction:
            raise IllegalTransactionTransition("Cannot rotate producer ids while a transaction is still pending")
        return self._prepare(EMPTY, new_producer_id, 0, self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             new_timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added: set[TopicPartition], now_ms: int) -> TxnTransitMetadata:
        start = now_ms if self.state in (EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT) else self.txn_start_timestamp
        return self._prepare(ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions | set(added)), start, now_ms)

    def prepare_abort_or_commit(self, new_state: TransactionState, now_ms: int) -> TxnTransitMetadata:
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions), self.txn_start_timestamp, now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        new_state = COMPLETE_COMMIT if self.state is PREPARE_COMMIT else COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp, now_ms)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def _prepare(self, new_state: TransactionState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartition], start: int, now_ms: int) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransactionTransition(f"Preparing transaction state transition to {new_state} while it "
                                               f"already a pending state {self.pending_state}")
        if producer_id < 0:
            raise IllegalTransactionTransition(f"Illegal new producer id {producer_id}")
        if new_state is not DEAD and epoch < 0:
            raise IllegalTransactionTransition(f"Illegal new producer epoch {epoch}")
        if self.state not in VALID_PREVIOUS_STATES[new_state]:
            raise IllegalTransactionTransition(
                f"Preparing transaction state transition to {new_state} failed since the target state {new_state} "
                f"is not a valid previous state of the current state {self.state}")
        self.pending_state = new_state
        return TxnTransitMetadata(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, new_state,
                                  partitions, start, now_ms)

    # -- completing ---------------------------------------------------------------------

    def complete_transition_to(self, t: TxnTransitMetadata) -> None:
        """The transit is in the log: make it the current state (Kafka's checks, then the copy)."""
        to_state = self.pending_state
        if to_state is None:
            raise IllegalTransactionTransition(f"TransactionalId {self.transactional_id} completing transaction "
                                               "state transition while it does not have a pending state")
        if to_state is not t.txn_state:
            self._fail(t)
        same_epoch = t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id
        if to_state is EMPTY:
            bump = t.producer_epoch == self.producer_epoch + 1 or (t.producer_epoch == 0
                                                                   and t.producer_id != self.producer_id)
            if (self.producer_epoch != t.producer_epoch and not bump) or t.topic_partitions \
                    or t.txn_start_timestamp != -1:
                self._fail(t)
            self.txn_timeout_ms = t.txn_timeout_ms
            self.producer_epoch = t.producer_epoch
            self.last_producer_epoch = t.last_producer_epoch
            self.producer_id = t.producer_id
            self.last_producer_id = t.last_producer_id
        elif to_state is ONGOING:
            if not same_epoch or not self.topic_partitions <= t.topic_partitions \
                    or self.txn_timeout_ms != t.txn_timeout_ms:
                self._fail(t)
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions |= t.topic_partitions
        elif to_state in (PREPARE_ABORT, PREPARE_COMMIT):
            if not same_epoch or set(self.topic_partitions) != set(t.topic_partitions) \
                    or self.txn_timeout_ms != t.txn_timeout_ms or self.txn_start_timestamp != t.txn_start_timestamp:
                self._fail(t)
        elif to_state in (COMPLETE_ABORT, COMPLETE_COMMIT):
            if not same_epoch or self.txn_timeout_ms != t.txn_timeout_ms or t.txn_start_timestamp == -1:
                self._fail(t)
            self.txn_start_timestamp = t.txn_start_timestamp
            self.topic_partitions.clear()
        else:   # PrepareEpochFence is never completed (it becomes PrepareAbort); Dead is removed instead
            self._fail(t)
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.pending_state = None
        self.state = to_state

    def remove_partition(self, tp: TopicPartition) -> None:
        """A marker landed on `tp` (or it was deleted): it no longer waits for one."""
        if self.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            raise IllegalTransactionTransition(
                f"Transaction metadata's current state is {self.state}, and its pending state is {self.pending_state} "
                "while trying to remove partitions whose txn marker has been sent, this is not expected")
        self.topic_partitions.discard(tp)

    def _fail(self, t: TxnTransitMetadata) -> None:
        raise IllegalTransactionTransition(f"TransactionalId {self.transactional_id} failed transition to state {t} "
                                           "due to unexpected metadata")
