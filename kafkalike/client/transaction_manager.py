"""The transactional producer's state machine and its requests to the coordinators (KIP-98, KIP-447).

This is Java's TransactionManager, because its states and errors are what transactional
applications are written against:

    UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION -> COMMITTING_TRANSACTION -> READY
                                                      \\-> ABORTING_TRANSACTION -> READY
    IN_TRANSACTION / COMMITTING -> ABORTABLE_ERROR -> ABORTING_TRANSACTION -> READY (or INITIALIZING)
    anything -> FATAL_ERROR (fenced, not authorized: the producer can only be closed)

User threads call the begin_* methods, which check and move the state and queue requests;
the sender thread sends the queue's head before any produce data (next_request) and the
answers move the state on. A user call waits on a TransactionalRequestResult. Requests go
to the transaction coordinator (FindCoordinator key type 1) except TxnOffsetCommit, which
goes to the group's coordinator (key type 0); a lost connection or NOT_COORDINATOR finds
the coordinator again, CONCURRENT_TRANSACTIONS and COORDINATOR_LOAD_IN_PROGRESS retry
after retry.backoff.ms.

A partition joins the transaction with AddPartitionsToTxn before any of its batches may
be drained: send() records it as new, and the next request adds every new partition in
one AddPartitionsToTxn (as Java batches them). EndTxn waits until every batch is done
(commit flushes first). A failed batch makes the transaction abortable; its abort then
also bumps the epoch (InitProducerId with the current id and epoch, KIP-360) so the
partitions' sequences start afresh.
"""
from __future__ import annotations

import enum
import logging
import threading
import time
from collections import deque
from typing import Any, Callable, Mapping

from kafkalike.client.errors import (
    CommitFailedError,
    IllegalStateError,
    InvalidProducerEpochError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
    TopicAuthorizationError,
    TransactionalIdAuthorizationError,
    error_for_code,
)
from kafkalike.client.idempotence import IdempotenceManager
from kafkalike.client.metadata import TopicPartition
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kafkalike.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kafkalike.protocol.messages.end_txn import EndTxnRequest
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest
from kafkalike.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest

log = logging.getLogger("kafkalike.client.transaction_manager")

GROUP, TRANSACTION = 0, 1  # FindCoordinator key types
# The first AddPartitionsToTxn of a transaction often meets the previous one's markers
# still being written (CONCURRENT_TRANSACTIONS); Java retries it sooner than retry.backoff.ms.
ADD_PARTITIONS_RETRY_BACKOFF = 0.02


class State(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


# Java's State.isTransitionValid: the states each one may be entered from.
_SOURCES: dict[State, frozenset[State]] = {
    State.INITIALIZING: frozenset({State.UNINITIALIZED, State.ABORTING_TRANSACTION}),
    State.READY: frozenset({State.UNINITIALIZED, State.INITIALIZING, State.COMMITTING_TRANSACTION,
                            State.ABORTING_TRANSACTION}),
    State.IN_TRANSACTION: frozenset({State.READY}),
    State.COMMITTING_TRANSACTION: frozenset({State.IN_TRANSACTION}),
    State.ABORTING_TRANSACTION: frozenset({State.IN_TRANSACTION, State.ABORTABLE_ERROR}),
    State.ABORTABLE_ERROR: frozenset({State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR}),
}


class TransactionalRequestResult:
    """What a user call waits on; `operation` names it in the time-out message as Java does."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.error: Exception | None = None
        self._event = threading.Event()

    def done(self, error: Exception | None = None) -> None:
        if not self._event.is_set():
            self.error = error
            self._event.set()

    @property
    def completed(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None) -> None:
        """Raise the request's error, or KafkaTimeoutError if it is not done within `timeout` s."""
        if not self._event.wait(timeout):
            raise KafkaTimeoutError(f"Timeout expired after {int((timeout or 0) * 1000)}ms while awaiting "
                                    f"{self.operation}")
        if self.error is not None:
            raise self.error


class _Handler:
    """One queued request: what to send, to which coordinator, and what its answer does."""

    def __init__(self, manager: "TransactionManager", name: str, result: TransactionalRequestResult,
                 coordinator: int | None, build: Callable[[], Any], handle: Callable[["_Handler", Any], None],
                 group_id: str | None = None) -> None:
        self.manager = manager
        self.name = name
        self.result = result
        self.coordinator = coordinator   # GROUP, TRANSACTION, or None (any broker: FindCoordinator)
        self.group_id = group_id
        self.build = build
        self.handle = handle
        self.retry_at = 0.0

    def __repr__(self) -> str:
        return f"<{self.name}>"


class TransactionManager:
    """Thread safe; see the module docstring."""

    def __init__(self, transactional_id: str, transaction_timeout_ms: int, idempotence: IdempotenceManager, *,
                 retry_backoff_ms: int = 100, log_prefix: str = "") -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.idempotence = idempotence
        self.retry_backoff = retry_backoff_ms / 1000
        self.log_prefix = f"{log_prefix[:-2]}, transactionalId={transactional_id}] " if log_prefix else ""
        self.lock = threading.RLock()
        self.state = State.UNINITIALIZED
        self.last_error: Exception | None = None
        self.epoch_bump_required = False
        self._pending: deque[_Handler] = deque()
        self.in_flight: _Handler | None = None
        self._coordinators: dict[tuple[int, str], int] = {}  # (key type, key) -> node id
        self.partitions_in_transaction: set[TopicPartition] = set()
        self._new_partitions: set[TopicPartition] = set()
        self._pending_partitions: set[TopicPartition] = set()
        self._pending_result: TransactionalRequestResult | None = None
        self._pending_for: State | None = None
        self.transaction_started = False

    # -- state ----------------------------------------------------------------------------------

    def _transition(self, target: State, error: Exception | None = None) -> None:
        if target is State.FATAL_ERROR or (target in _SOURCES and self.state in _SOURCES[target]):
            if target in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
                self.last_error = error
                log.debug("%sTransition from state %s to error state %s", self.log_prefix, self.state.name,
                          target.name, exc_info=error)
            else:
                self.last_error = None
                log.debug("%sTransition from state %s to %s", self.log_prefix, self.state.name, target.name)
            self.state = target
            return
        raise IllegalStateError(f"TransactionalId {self.transactional_id}: Invalid transition attempted from state "
                                f"{self.state.name} to state {target.name}")

    def has_fatal_error(self) -> bool:
        return self.state is State.FATAL_ERROR

    def has_abortable_error(self) -> bool:
        return self.state is State.ABORTABLE_ERROR

    def is_aborting(self) -> bool:
        return self.state is State.ABORTING_TRANSACTION

    def is_completing(self) -> bool:
        return self.state in (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION)

    def is_in_transaction(self) -> bool:
        return self.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION,
                              State.ABORTABLE_ERROR)

    def has_pending_requests(self) -> bool:
        with self.lock:
            return bool(self._pending) or self.in_flight is not None

    def _maybe_fail_with_error(self) -> None:
        error = self.last_error
        if self.state not in (State.FATAL_ERROR, State.ABORTABLE_ERROR) or error is None:
            return
        # A fenced producer learns it afresh on each call (Java makes new exceptions too).
        if isinstance(error, ProducerFencedError):
            raise ProducerFencedError("The producer has been rejected from the broker because it tried to use an old "
                                      "epoch with the transactionalId")
        if isinstance(error, InvalidProducerEpochError):
            raise InvalidProducerEpochError(
                f"Producer attempted to produce with an old epoch (producerId={self.idempotence.producer_id}, "
                f"epoch={self.idempotence.producer_epoch})")
        raise KafkaError("Cannot execute transactional method because we are in an error state") from error

    def _throw_if_pending(self, operation: str) -> None:
        result = self._pending_result
        if result is not None and not result.completed:
            raise IllegalStateError(f"Cannot attempt operation `{operation}` because the previous call to "
                                    f"`{result.operation}` timed out and must be retried")

    def _cached(self, state: State, start: Callable[[], TransactionalRequestResult]) -> TransactionalRequestResult:
        """A call that timed out may be called again and waits on the same request (KIP-653's shape)."""
        result = self._pending_result
        if result is not None and not result.completed and self._pending_for is state:
            return result
        self._throw_if_pending(state.name)
        result = start()
        self._pending_result, self._pending_for = result, state
        return result

    # -- user calls ------------------------------------------------------------------------------

    def initialize_transactions(self) -> TransactionalRequestResult:
        with self.lock:
            def start() -> TransactionalRequestResult:
                self._maybe_fail_with_error()
                self._transition(State.INITIALIZING)
                self.idempotence.set_producer_id(-1, -1)
                return self._enqueue_init_producer_id(-1, -1)
            return self._cached(State.INITIALIZING, start)

    def begin_transaction(self) -> None:
        with self.lock:
            self._throw_if_pending("beginTransaction")
            self._maybe_fail_with_error()
            self._transition(State.IN_TRANSACTION)

    def begin_commit(self) -> TransactionalRequestResult:
        with self.lock:
            def start() -> TransactionalRequestResult:
                self._maybe_fail_with_error()
                self._transition(State.COMMITTING_TRANSACTION)
                return self._begin_completing(committed=True)
            return self._cached(State.COMMITTING_TRANSACTION, start)

    def begin_abort(self) -> TransactionalRequestResult:
        with self.lock:
            def start() -> TransactionalRequestResult:
                if self.state is not State.ABORTABLE_ERROR:
                    self._maybe_fail_with_error()
                self._transition(State.ABORTING_TRANSACTION)
                self._new_partitions.clear()  # nothing more is sent in an aborted transaction
                return self._begin_completing(committed=False)
            return self._cached(State.ABORTING_TRANSACTION, start)

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any], group_metadata: Any
                                    ) -> TransactionalRequestResult:
        with self.lock:
            self._throw_if_pending("sendOffsetsToTransaction")
            self._maybe_fail_with_error()
            if self.state is not State.IN_TRANSACTION:
                raise KafkaError(f"Cannot send offsets if a transaction is not in progress (currentState= "
                                 f"{self.state.name})")
            result = TransactionalRequestResult("AddOffsetsToTxn")
            group_id = group_metadata.group_id

            def build():
                return AddOffsetsToTxnRequest(transactional_id=self.transactional_id,
                                              producer_id=self.idempotence.producer_id,
                                              producer_epoch=self.idempotence.producer_epoch, group_id=group_id)

            def handle(handler: _Handler, response) -> None:
                code = response.error_code
                if code == ErrorCode.NONE:
                    log.debug("%sSuccessfully added partition for consumer group %s to transaction",
                              self.log_prefix, group_id)
                    self.transaction_started = True
                    # The offsets go to the group's coordinator next, under the same result.
                    self._enqueue_txn_offset_commit(result, offsets, group_metadata)
                elif code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
                    self._lookup_coordinator(TRANSACTION, self.transactional_id)
                    self._reenqueue(handler)
                elif code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
                    self._reenqueue(handler)
                elif code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
                    self._abortable_error(handler, error_for_code(code, f"Not authorized to access group: {group_id}"))
                else:
                    self._fatal_for_code(handler, code, "AddOffsetsToTxn")

            self._pending.append(_Handler(self, "AddOffsetsToTxn", result, TRANSACTION, build, handle))
            return result

    def fail_if_not_ready_for_send(self) -> None:
        with self.lock:
            if self.state in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
                raise KafkaError("Cannot perform send because at least one previous transactional or idempotent "
                                 f"request has failed with errors: {self.last_error}") from self.last_error
            if self.idempotence.producer_id < 0:
                raise IllegalStateError("Cannot perform a 'send' before completing a call to initTransactions when "
                                        "transactions are enabled.")
            if self.state is not State.IN_TRANSACTION:
                raise IllegalStateError(f"Cannot call send in state {self.state.name}")

    def maybe_add_partition(self, tp: TopicPartition) -> bool:
        """Note a partition this transaction sends to; True if it is new to the transaction."""
        if tp in self.partitions_in_transaction:  # the common case, without the lock
            return False
        with self.lock:
            self.fail_if_not_ready_for_send()
            if tp in self.partitions_in_transaction or tp in self._pending_partitions or tp in self._new_partitions:
                return False
            log.debug("%sBegin adding new partition %s to transaction", self.log_prefix, tp)
            self._new_partitions.add(tp)
            return True

    def has_new_partitions(self) -> bool:
        return bool(self._new_partitions)

    # -- called by the sender -----------------------------------------------------------------

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        return self.state is not State.FATAL_ERROR and tp in self.partitions_in_transaction

    def next_request(self, has_incomplete_batches: bool, now: float) -> _Handler | None:
        """The request to send now, if any: new partitions first, EndTxn only once every batch is done."""
        with self.lock:
            if self._new_partitions and self.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION):
                self._enqueue_add_partitions()
            while self._pending:
                handler = self._pending[0]
                if self.state in (State.FATAL_ERROR, State.ABORTABLE_ERROR) and handler.name != "FindCoordinator":
                    # Java's maybeTerminateRequestWithError: whoever waits learns why, nothing goes out.
                    self._pending.popleft()
                    handler.result.done(self.last_error)
                    continue
                if handler.name.startswith("EndTxn"):
                    if not self.transaction_started:
                        # Nothing reached the coordinator: completed here, as Java does (the
                        # coordinator would refuse an EndTxn for a transaction it never saw).
                        self._pending.popleft()
                        log.debug("%sNot sending EndTxn for completed transaction since no partitions or offsets "
                                  "were successfully added", self.log_prefix)
                        self._complete_transaction()
                        handler.result.done()
                        continue
                    if has_incomplete_batches:
                        return None
                if handler.retry_at > now:
                    return None
                return self._pending.popleft()
            return None

    def next_retry_delay(self, now: float) -> float:
        with self.lock:
            return max(0.0, self._pending[0].retry_at - now) if self._pending else float("inf")

    def coordinator_for(self, handler: _Handler) -> int | None:
        """The node the handler's request goes to; None (and a lookup queued first) if unknown."""
        if handler.coordinator is None:
            return None
        key = self.transactional_id if handler.coordinator == TRANSACTION else handler.group_id
        with self.lock:
            node = self._coordinators.get((handler.coordinator, key))
            if node is None:
                self._lookup_coordinator(handler.coordinator, key)
            return node

    def put_back(self, handler: _Handler) -> None:
        """A request that could not go out yet (no coordinator or connection): it stays first,
        behind the coordinator lookups it waits for."""
        with self.lock:
            if handler.name == "FindCoordinator":
                self._pending.appendleft(handler)
                return
            position = 0
            while position < len(self._pending) and self._pending[position].name == "FindCoordinator":
                position += 1
            self._pending.insert(position, handler)

    def on_response(self, handler: _Handler, response, error: Exception | None) -> None:
        """The answer to the in-flight request (sender thread)."""
        with self.lock:
            self.in_flight = None
            if error is not None or response is None:
                log.debug("%sDisconnected while waiting for %s: %s; finding the coordinator again",
                          self.log_prefix, handler.name, error)
                if handler.coordinator is not None:
                    key = self.transactional_id if handler.coordinator == TRANSACTION else handler.group_id
                    self._lookup_coordinator(handler.coordinator, key)
                self._reenqueue(handler)
                return
            try:
                handler.handle(handler, response)
            except Exception as unexpected:  # a bug here must not leave a user waiting forever
                log.exception("%sError handling the %s response", self.log_prefix, handler.name)
                self._fatal(handler, KafkaError(f"Unexpected error handling {handler.name}: {unexpected}"))

    def handle_failed_batch(self, error: Exception, sequenced: bool = True) -> None:
        """A batch of this transaction failed for good: fatal for fencing and authorization,
        otherwise abortable (its records are not in the transaction); if it was sent, the
        partition's sequence has a gap, so the abort bumps the epoch too."""
        with self.lock:
            if isinstance(error, (ProducerFencedError, TransactionalIdAuthorizationError)):
                self._transition(State.FATAL_ERROR, error)
                return
            if self.state is State.FATAL_ERROR:
                return
            if sequenced:
                self.epoch_bump_required = True
            if self.state is not State.ABORTING_TRANSACTION and self.state in _SOURCES[State.ABORTABLE_ERROR]:
                self._transition(State.ABORTABLE_ERROR, error)

    def fatal_error(self, handler: _Handler, error: Exception) -> None:
        with self.lock:
            self._fatal(handler, error)

    def close_abort_needed(self) -> bool:
        """On close, an open transaction is aborted (Java: 'Aborting incomplete transaction due to shutdown')."""
        with self.lock:
            if self.state in (State.IN_TRANSACTION, State.ABORTABLE_ERROR):
                log.info("%sAborting incomplete transaction due to shutdown", self.log_prefix)
                try:
                    self.begin_abort()
                except KafkaError:
                    return False
                return True
            return self.is_completing()

    # -- requests -----------------------------------------------------------------------------------

    def _begin_completing(self, committed: bool) -> TransactionalRequestResult:
        if self._new_partitions and committed:
            self._enqueue_add_partitions()
        operation = f"EndTxn({'COMMIT' if committed else 'ABORT'})"
        result = TransactionalRequestResult(operation)

        def build():
            return EndTxnRequest(transactional_id=self.transactional_id, producer_id=self.idempotence.producer_id,
                                 producer_epoch=self.idempotence.producer_epoch, committed=committed)

        def handle(handler: _Handler, response) -> None:
            code = response.error_code
            if code == ErrorCode.NONE:
                self._complete_transaction()
                result.done()  # after an abort that bumps the epoch, the user waits on the InitProducerId
            elif code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
                self._lookup_coordinator(TRANSACTION, self.transactional_id)
                self._reenqueue(handler)
            elif code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
                self._reenqueue(handler)
            else:
                self._fatal_for_code(handler, code, "EndTxn")

        self._pending.append(_Handler(self, operation, result, TRANSACTION, build, handle))
        if self.epoch_bump_required and not committed:
            return self._enqueue_init_producer_id(self.idempotence.producer_id, self.idempotence.producer_epoch)
        return result

    def _complete_transaction(self) -> None:
        bump = self.epoch_bump_required and self.state is State.ABORTING_TRANSACTION
        self._transition(State.INITIALIZING if bump else State.READY)
        self.partitions_in_transaction.clear()
        self._pending_partitions.clear()
        self._new_partitions.clear()
        self.transaction_started = False

    def _enqueue_init_producer_id(self, producer_id: int, producer_epoch: int) -> TransactionalRequestResult:
        result = TransactionalRequestResult("InitProducerId")

        def build():
            return InitProducerIdRequest(transactional_id=self.transactional_id,
                                         transaction_timeout_ms=self.transaction_timeout_ms,
                                         producer_id=producer_id, producer_epoch=producer_epoch)

        def handle(handler: _Handler, response) -> None:
            code = response.error_code
            if code == ErrorCode.NONE:
                log.info("%sProducerId set to %d with epoch %d", self.log_prefix, response.producer_id,
                         response.producer_epoch)
                self.idempotence.set_producer_id(response.producer_id, response.producer_epoch)
                self.epoch_bump_required = False
                self._transition(State.READY)
                result.done()
            elif code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
                self._lookup_coordinator(TRANSACTION, self.transactional_id)
                self._reenqueue(handler)
            elif code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
                self._reenqueue(handler)
            else:
                self._fatal_for_code(handler, code, "InitProducerId")

        self._pending.append(_Handler(self, "InitProducerId", result, TRANSACTION, build, handle))
        return result

    def _enqueue_add_partitions(self) -> None:
        partitions = set(self._new_partitions)
        self._pending_partitions |= partitions
        self._new_partitions.clear()
        result = TransactionalRequestResult("AddPartitionsToTxn")

        def build():
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(partitions):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            return AddPartitionsToTxnRequest(
                transactional_id=self.transactional_id, producer_id=self.idempotence.producer_id,
                producer_epoch=self.idempotence.producer_epoch,
                topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=p)
                        for t, p in by_topic.items()])

        def handle(handler: _Handler, response) -> None:
            errors: dict[TopicPartition, int] = {}
            for topic in response.results:
                for p in topic.results:
                    errors[TopicPartition(topic.name, p.partition_index)] = p.error_code
            unauthorized: set[str] = set()
            failed: dict[TopicPartition, str] = {}
            for tp, code in errors.items():
                if code == ErrorCode.NONE:
                    continue
                if code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
                    self._lookup_coordinator(TRANSACTION, self.transactional_id)
                    self._reenqueue(handler)
                    return
                if code == ErrorCode.CONCURRENT_TRANSACTIONS:
                    self._reenqueue(handler, ADD_PARTITIONS_RETRY_BACKOFF if not self.partitions_in_transaction
                                    else None)
                    return
                if code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    self._reenqueue(handler)
                    return
                if code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED,
                            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.INVALID_TXN_STATE):
                    self._fatal_for_code(handler, code, "AddPartitionsToTxn")
                    return
                if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                    unauthorized.add(tp.topic)
                elif code != ErrorCode.OPERATION_NOT_ATTEMPTED:
                    failed[tp] = ErrorCode(code).name
            self._pending_partitions -= set(errors)
            if unauthorized:
                self._abortable_error(handler, TopicAuthorizationError(
                    f"Not authorized to access topics: [{', '.join(sorted(unauthorized))}]"))
            elif failed:
                self._abortable_error(handler, KafkaError(f"Could not add partitions to transaction due to errors: "
                                                          f"{failed}"))
            else:
                log.debug("%sSuccessfully added partitions %s to transaction", self.log_prefix, sorted(errors))
                self.partitions_in_transaction |= set(errors)
                self.transaction_started = True
                result.done()

        # Ahead of an EndTxn already queued: a commit must add its last partitions first.
        handler = _Handler(self, "AddPartitionsToTxn", result, TRANSACTION, build, handle)
        for i, queued in enumerate(self._pending):
            if queued.name.startswith("EndTxn"):
                self._pending.insert(i, handler)
                break
        else:
            self._pending.append(handler)

    def _enqueue_txn_offset_commit(self, result: TransactionalRequestResult, offsets: Mapping[TopicPartition, Any],
                                   group_metadata: Any) -> None:
        pending = dict(offsets)

        def build():
            by_topic: dict[str, list] = {}
            for tp, (offset, metadata, leader_epoch) in sorted(pending.items()):
                by_topic.setdefault(tp.topic, []).append(TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=offset, committed_leader_epoch=leader_epoch,
                    committed_metadata=metadata))
            return TxnOffsetCommitRequest(
                transactional_id=self.transactional_id, group_id=group_metadata.group_id,
                producer_id=self.idempotence.producer_id, producer_epoch=self.idempotence.producer_epoch,
                generation_id=group_metadata.generation_id, member_id=group_metadata.member_id,
                group_instance_id=group_metadata.group_instance_id,
                topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=p)
                        for t, p in by_topic.items()])

        def handle(handler: _Handler, response) -> None:
            retry = False
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    code = p.error_code
                    if code == ErrorCode.NONE:
                        pending.pop(tp, None)
                    elif code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                                  ErrorCode.REQUEST_TIMED_OUT):
                        self._lookup_coordinator(GROUP, group_metadata.group_id)
                        retry = True
                    elif code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  ErrorCode.CONCURRENT_TRANSACTIONS):
                        retry = True
                    elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                                  ErrorCode.FENCED_INSTANCE_ID):
                        self._abortable_error(handler, CommitFailedError(
                            "Transaction offset Commit failed due to consumer group metadata mismatch: "
                            + error_for_code(code).message))
                        return
                    elif code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
                        self._abortable_error(handler, error_for_code(code, "Not authorized to access group: "
                                                                      f"{group_metadata.group_id}"))
                        return
                    elif code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED,
                                  ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                  ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT):
                        self._fatal_for_code(handler, code, "TxnOffsetCommit")
                        return
                    else:
                        self._abortable_error(handler, error_for_code(code, "Unexpected error in TxnOffsetCommit"
                                                                      f"Response: {ErrorCode(code).name}"))
                        return
            if retry and pending:
                self._reenqueue(handler)
            else:
                result.done()

        self._pending.append(_Handler(self, "TxnOffsetCommit", result, GROUP, build, handle,
                                      group_id=group_metadata.group_id))

    def _lookup_coordinator(self, key_type: int, key: str) -> None:
        self._coordinators.pop((key_type, key), None)
        if any(h.name == "FindCoordinator" and h.group_id == key for h in self._pending):
            return
        result = TransactionalRequestResult("FindCoordinator")

        def build():
            return FindCoordinatorRequest(key=key, key_type=key_type)

        def handle(handler: _Handler, response) -> None:
            code = response.error_code
            if code == ErrorCode.NONE:
                self._coordinators[(key_type, key)] = response.node_id
                log.info("%sDiscovered %s coordinator %s:%d (id: %d rack: null)", self.log_prefix,
                         "transaction" if key_type == TRANSACTION else "group", response.host, response.port,
                         response.node_id)
                result.done()
            elif code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                          ErrorCode.NOT_COORDINATOR):
                self._reenqueue(handler)
            elif code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                self._fatal_for_code(handler, code, "FindCoordinator")
            elif code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
                self._abortable_error(handler, error_for_code(code, f"Not authorized to access group: {key}"))
            else:
                self._fatal(handler, KafkaError(f"Could not find a coordinator with type "
                                                f"{'TRANSACTION' if key_type == TRANSACTION else 'GROUP'} with key "
                                                f"{key} due to unexpected error: {response.error_message}"))

        self._pending.appendleft(_Handler(self, "FindCoordinator", result, None, build, handle, group_id=key))

    def _reenqueue(self, handler: _Handler, backoff: float | None = None) -> None:
        handler.retry_at = time.monotonic() + (self.retry_backoff if backoff is None else backoff)
        position = 0
        while position < len(self._pending) and self._pending[position].name == "FindCoordinator":
            position += 1
        self._pending.insert(position, handler)

    def _abortable_error(self, handler: _Handler, error: Exception) -> None:
        if self.state is State.FATAL_ERROR:
            handler.result.done(self.last_error)
            return
        if self.state is State.ABORTING_TRANSACTION:
            handler.result.done(error)  # already being aborted (Java skips the transition too)
            return
        self._transition(State.ABORTABLE_ERROR, error)
        handler.result.done(error)

    def _fatal(self, handler: _Handler, error: Exception) -> None:
        self._transition(State.FATAL_ERROR, error)
        handler.result.done(error)
        for pending in self._pending:
            pending.result.done(error)
        self._pending.clear()

    def _fatal_for_code(self, handler: _Handler, code: int, what: str) -> None:
        if code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
            # From a coordinator both mean a newer instance took over (Java: ProducerFencedException).
            error: Exception = ProducerFencedError()
        elif code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            error = TransactionalIdAuthorizationError()
        else:
            error = KafkaError(f"Unexpected error in {what}Response: {error_for_code(code)}")
        self._fatal(handler, error)


__all__ = ["GROUP", "State", "TRANSACTION", "TransactionManager", "TransactionalRequestResult"]
