"""The transaction coordinator: Kafka 2.8's TransactionCoordinator.

InitProducerId gives a transactional id its producer id and a new epoch (fencing every
older instance; an open transaction of the fenced one is aborted first and the new one
told CONCURRENT_TRANSACTIONS until that is done). AddPartitionsToTxn and
AddOffsetsToTxn make the transaction Ongoing; EndTxn writes PrepareCommit or
PrepareAbort, answers, and hands the markers to the channel, which writes
CompleteCommit/CompleteAbort once every partition has one. Every change is in
__transaction_state (acks=all) before anyone is told about it.

Answers are Deferreds fired only between changes (delivery.py), as the group
coordinator's are.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from twisted.internet import defer, task

from kafkalike.coordinator.delivery import Deliveries, entry
from kafkalike.coordinator.transaction.config import TRANSACTION_STATE_TOPIC, TransactionConfig
from kafkalike.coordinator.transaction.marker_channel import TransactionMarkerChannelManager
from kafkalike.coordinator.transaction.metadata import (COMPLETE_ABORT, COMPLETE_COMMIT, DEAD, EMPTY,
                                                        NO_PRODUCER_EPOCH, NO_PRODUCER_ID, ONGOING, PREPARE_ABORT,
                                                        PREPARE_COMMIT, PREPARE_EPOCH_FENCE, TransactionMetadata,
                                                        TxnTransitMetadata, is_epoch_exhausted)
from kafkalike.coordinator.transaction.state_manager import TransactionStateManager
from kafkalike.protocol.errors import ErrorCode

log = logging.getLogger("kafka.coordinator.transaction.TransactionCoordinator")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class InitProducerIdResult:
    producer_id: int
    producer_epoch: int
    error: ErrorCode


def _init_error(error: ErrorCode) -> InitProducerIdResult:
    return InitProducerIdResult(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, error)


class TransactionCoordinator(Deliveries):
    def __init__(self, broker_id: int, config: TransactionConfig, producer_ids, replica_manager, metadata_cache,
                 listener_name: str, reactor, now_ms: Callable[[], int] | None = None,
                 connect: Callable | None = None):
        super().__init__()
        self.broker_id = broker_id
        self.config = config
        self.producer_ids = producer_ids
        self.reactor = reactor
        self.now_ms = now_ms or (lambda: int(reactor.seconds() * 1000))
        self.state = TransactionStateManager(broker_id, config, replica_manager, reactor, self.now_ms)
        self.markers = TransactionMarkerChannelManager(broker_id, metadata_cache, listener_name, reactor, self.state,
                                                       config.request_timeout_ms, connect)
        self.active = False
        self._loops: list[task.LoopingCall] = []
        self.log_prefix = f"[TransactionCoordinator id={broker_id}] "

    # -- lifecycle ----------------------------------------------------------------------

    def startup(self, enable_transactional_id_expiration: bool = True) -> None:
        log.info("%sStarting up.", self.log_prefix)
        self._every(self.config.abort_timed_out_transactions_interval_ms, self.abort_timed_out_transactions)
        if enable_transactional_id_expiration:
            self._every(self.config.remove_expired_transactional_ids_interval_ms,
                        self.remove_expired_transactional_ids)
        self.markers.start()
        self.active = True
        log.info("%sStartup complete.", self.log_prefix)

    def _every(self, interval_ms: int, fn: Callable[[], None]) -> None:
        loop = task.LoopingCall(fn)
        loop.clock = self.reactor
        loop.start(interval_ms / 1000.0, now=False).addErrback(
            lambda f: log.error("%s failed: %s", fn.__name__, f.getTraceback()))
        self._loops.append(loop)

    def shutdown(self) -> None:
        log.info("%sShutting down.", self.log_prefix)
        self.active = False
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()
        self.state.shutdown()
        self.markers.shutdown()
        self._outbox.clear()
        log.info("%sShutdown complete.", self.log_prefix)

    def partition_for(self, transactional_id: str) -> int:
        return self.state.partition_for(transactional_id)

    def transaction_topic_configs(self) -> dict[str, str]:
        return self.config.transaction_topic_configs()

    @entry
    def on_elected(self, partition: int, coordinator_epoch: int) -> None:
        """This broker now leads __transaction_state-<partition>: load it, then finish
        the transactions the old coordinator left between prepare and complete."""
        self.markers.remove_markers_for_txn_topic_partition(partition)
        self.state.schedule_load(partition, coordinator_epoch, self._guarded(self._on_loaded))

    @entry
    def on_resigned(self, partition: int, coordinator_epoch: int | None = None) -> None:
        self.state.remove_transactions_for_partition(partition, coordinator_epoch)
        self.markers.remove_markers_for_txn_topic_partition(partition)

    def _on_loaded(self, partition: int, coordinator_epoch: int, transactions: list[TransactionMetadata]) -> None:
        for metadata in transactions:
            if metadata.state in (PREPARE_COMMIT, PREPARE_ABORT) and not metadata.pending_transition_in_progress:
                log.info("%sCompleting %s of %s left by the previous coordinator of %s-%d", self.log_prefix,
                         metadata.state, metadata.transactional_id, TRANSACTION_STATE_TOPIC, partition)
                transit = metadata.prepare_complete(self.now_ms())
                self.markers.add_txn_markers_to_send(coordinator_epoch, metadata.state is PREPARE_COMMIT,
                                                     metadata, transit)

    def _validate(self, transactional_id: str | None) -> ErrorCode | None:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return None

    # -- InitProducerId -----------------------------------------------------------------

    @entry
    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> defer.Deferred:
        """Deferred[InitProducerIdResult]; `expected` is KIP-360's (producer id, epoch) of v3+."""
        d = defer.Deferred()
        respond = self._responder(d)
        error = self._validate(transactional_id)
        if error is None and not self.state.validate_transaction_timeout(timeout_ms):
            error = ErrorCode.INVALID_TRANSACTION_TIMEOUT
        if error is not None:
            respond(_init_error(error))
            return d
        self._init_with(transactional_id, timeout_ms, expected, respond, None)
        return d

    def _init_with(self, transactional_id, timeout_ms, expected, respond, new_producer_id: int | None) -> None:
        error, found = self.state.get_transaction_state(transactional_id)
        if error is not None:
            respond(_init_error(error))
            return
        needs_id = found is None or (
            found.metadata.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
            and not found.metadata.pending_transition_in_progress
            and found.metadata.is_producer_epoch_exhausted)
        if needs_id and new_producer_id is None:
            # The id comes from ZooKeeper's blocks, maybe asynchronously: decide again with it.
            generated = self.producer_ids.generate_producer_id()
            generated.addCallbacks(
                self._guarded(lambda pid: self._init_with(transactional_id, timeout_ms, expected, respond, pid)),
                self._guarded(lambda failure: respond(_init_error(ErrorCode.UNKNOWN_SERVER_ERROR))))
            return
        if found is None:
            created = TransactionMetadata(transactional_id, new_producer_id, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
                                          NO_PRODUCER_EPOCH, timeout_ms, EMPTY,
                                          txn_last_update_timestamp=self.now_ms())
            error, found = self.state.put_if_not_exists(created)
            if error is not None:
                respond(_init_error(error))
                return
        coordinator_epoch, metadata = found.coordinator_epoch, found.metadata
        outcome = self._prepare_init_transit(transactional_id, timeout_ms, metadata, expected, new_producer_id)
        if isinstance(outcome, ErrorCode):
            respond(_init_error(outcome))
            return
        if outcome is None:                  # exhausted epoch, but no new id in hand yet
            self._init_with(transactional_id, timeout_ms, expected, respond, None)
            return
        transit = outcome
        if transit.txn_state is PREPARE_EPOCH_FENCE:
            def fenced(error: ErrorCode) -> None:
                # the old instance's transaction is being aborted: the new one retries
                respond(_init_error(error if error != ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS))
            self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False, False, fenced)
            return

        def written(error: ErrorCode) -> None:
            if error == ErrorCode.NONE:
                log.info("%sInitialized transactionalId %s with producerId %d and producer epoch %d on partition "
                         "%s-%d", self.log_prefix, transactional_id, transit.producer_id, transit.producer_epoch,
                         TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
                respond(InitProducerIdResult(transit.producer_id, transit.producer_epoch, ErrorCode.NONE))
            else:
                log.info("%sReturning %s error code to client for %s's InitProducerId request", self.log_prefix,
                         error.name, transactional_id)
                respond(_init_error(error))
        self.state.append_transaction_to_log(transactional_id, coordinator_epoch, transit, self._guarded(written))

    def _prepare_init_transit(self, transactional_id: str, timeout_ms: int, metadata: TransactionMetadata,
                              expected: tuple[int, int] | None, new_producer_id: int | None
                              ) -> TxnTransitMetadata | ErrorCode | None:
        def valid_producer(pid: int, epoch: int) -> bool:
            # KIP-360: a producer recovering may name its old id; fence it unless it is
            # ours, the metadata is brand new, or it is a retry after an id rotation.
            return (metadata.producer_epoch == NO_PRODUCER_EPOCH or pid == metadata.producer_id
                    or (pid == metadata.last_producer_id and is_epoch_exhausted(epoch)))

        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not valid_producer(*expected):
            return ErrorCode.PRODUCER_FENCED
        state = metadata.state
        if state in (PREPARE_ABORT, PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state in (COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY):
            if metadata.is_producer_epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                if new_producer_id is None:
                    return None
                return metadata.prepare_producer_id_rotation(new_producer_id, timeout_ms, self.now_ms(),
                                                             expected is not None)
            transit = metadata.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1],
                                                                self.now_ms())
            return ErrorCode.PRODUCER_FENCED if transit is None else transit
        if state is ONGOING:
            # Abort the open transaction first; the epoch bumped here is never returned,
            # the client retries and bumps it once more.
            return metadata.prepare_fence_producer_epoch()
        raise RuntimeError(f"Found transactionalId {transactional_id} with state {state}. This is illegal as we "
                           "should never have transitioned to this state.")

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------

    @entry
    def add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                      partitions: set[TopicPartition]) -> defer.Deferred:
        """Deferred[ErrorCode] for all the partitions (AddOffsetsToTxn adds the group's
        __consumer_offsets partition the same way)."""
        d = defer.Deferred()
        respond = self._responder(d)
        error = self._validate(transactional_id)
        if error is not None:
            respond(error)
            return d
        error, found = self.state.get_transaction_state(transactional_id)
        if error is None:
            if found is None:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            else:
                metadata = found.metadata
                if metadata.producer_id != producer_id:
                    error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
                elif metadata.producer_epoch != producer_epoch:
                    error = ErrorCode.PRODUCER_FENCED
                elif metadata.pending_transition_in_progress or metadata.state in (PREPARE_COMMIT, PREPARE_ABORT):
                    error = ErrorCode.CONCURRENT_TRANSACTIONS
                elif metadata.state is ONGOING and set(partitions) <= metadata.topic_partitions:
                    error = ErrorCode.NONE
        if error is not None:
            respond(error)
            return d
        transit = found.metadata.prepare_add_partitions(set(partitions), self.now_ms())
        self.state.append_transaction_to_log(transactional_id, found.coordinator_epoch, transit,
                                             self._guarded(respond))
        return d

    # -- EndTxn -------------------------------------------------------------------------

    @entry
    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        committed: bool) -> defer.Deferred:
        """Deferred[ErrorCode]: NONE once PrepareCommit/PrepareAbort is in the log."""
        d = defer.Deferred()
        self._end_transaction(transactional_id, producer_id, producer_epoch, committed, True, self._responder(d))
        return d

    def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                         from_client: bool, respond: Callable[[ErrorCode], None]) -> None:
        error = self._validate(transactional_id)
        if error is not None:
            respond(error)
            return
        result = "COMMIT" if committed else "ABORT"
        error, found = self.state.get_transaction_state(transactional_id)
        if error is None and found is None:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        is_epoch_fence = False
        transit = None
        if error is None:
            metadata = found.metadata
            state = metadata.state
            if metadata.producer_id != producer_id:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            elif (from_client and producer_epoch != metadata.producer_epoch) or producer_epoch < metadata.producer_epoch:
                # strict for clients; the coordinator's own fence comes with the bumped epoch
                error = ErrorCode.PRODUCER_FENCED
            elif metadata.pending_transition_in_progress and metadata.pending_state is not PREPARE_EPOCH_FENCE:
                error = ErrorCode.CONCURRENT_TRANSACTIONS
            elif state is ONGOING:
                next_state = PREPARE_COMMIT if committed else PREPARE_ABORT
                if next_state is PREPARE_ABORT and metadata.pending_state is PREPARE_EPOCH_FENCE:
                    # the fence becomes this abort: the bumped epoch is the current one from now
                    is_epoch_fence = True
                    metadata.pending_state = None
                    metadata.producer_epoch = producer_epoch
                    metadata.last_producer_epoch = NO_PRODUCER_EPOCH
                transit = metadata.prepare_abort_or_commit(next_state, self.now_ms())
            elif state is COMPLETE_COMMIT:
                error = ErrorCode.NONE if committed else self._invalid_state(transactional_id, state, result)
            elif state is COMPLETE_ABORT:
                error = ErrorCode.NONE if not committed else self._invalid_state(transactional_id, state, result)
            elif state is PREPARE_COMMIT:
                error = ErrorCode.CONCURRENT_TRANSACTIONS if committed else self._invalid_state(
                    transactional_id, state, result)
            elif state is PREPARE_ABORT:
                error = ErrorCode.CONCURRENT_TRANSACTIONS if not committed else self._invalid_state(
                    transactional_id, state, result)
            elif state is EMPTY:
                error = self._invalid_state(transactional_id, state, result)
            else:
                raise RuntimeError(f"Found transactionalId {transactional_id} with state {state}. This is illegal "
                                   "as we should never have transitioned to this state.")
        if error is not None:
            log.debug("%sAborting append of %s to transaction log with coordinator and returning %s error to client "
                      "for %s's EndTransaction request", self.log_prefix, result, error.name, transactional_id)
            respond(error)
            return
        coordinator_epoch = found.coordinator_epoch

        def written(error: ErrorCode) -> None:
            if error != ErrorCode.NONE:
                log.info("%sAborting sending of transaction markers and returning %s error to client for %s's "
                         "EndTransaction request of %s, since appending %s to transaction log with coordinator "
                         "epoch %d failed", self.log_prefix, error.name, transactional_id, result, transit,
                         coordinator_epoch)
                if is_epoch_fence:
                    _e, now = self.state.get_transaction_state(transactional_id)
                    if now is not None and now.coordinator_epoch == coordinator_epoch:
                        now.metadata.has_failed_epoch_fence = True
                respond(error)
                return
            self._send_markers(transactional_id, producer_id, transit.producer_epoch, committed, coordinator_epoch,
                               respond)
        self.state.append_transaction_to_log(transactional_id, coordinator_epoch, transit, self._guarded(written))

    def _send_markers(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                      coordinator_epoch: int, respond: Callable[[ErrorCode], None]) -> None:
        """PrepareX is in the log: answer, and let the channel write the markers."""
        error, found = self.state.get_transaction_state(transactional_id)
        if error is None and (found is None or found.coordinator_epoch != coordinator_epoch):
            error = ErrorCode.NOT_COORDINATOR
        if error is None:
            metadata = found.metadata
            wanted = PREPARE_COMMIT if committed else PREPARE_ABORT
            if metadata.producer_id != producer_id:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            elif metadata.producer_epoch != producer_epoch:
                error = ErrorCode.PRODUCER_FENCED
            elif metadata.pending_transition_in_progress:
                error = ErrorCode.CONCURRENT_TRANSACTIONS
            elif metadata.state is not wanted:
                if metadata.state is DEAD or metadata.state is PREPARE_EPOCH_FENCE:
                    raise RuntimeError(f"Found transactionalId {transactional_id} with state {metadata.state}")
                error = self._invalid_state(transactional_id, metadata.state, "COMMIT" if committed else "ABORT")
        if error is not None:
            log.info("%sAborting sending of transaction markers after appended %s to transaction log and returning "
                     "%s error to client for %s's EndTransaction request", self.log_prefix,
                     "COMMIT" if committed else "ABORT", error.name, transactional_id)
            respond(error)
            return
        transit = metadata.prepare_complete(self.now_ms())
        respond(ErrorCode.NONE)
        self.markers.add_txn_markers_to_send(coordinator_epoch, committed, metadata, transit)

    @staticmethod
    def _invalid_state(transactional_id: str, state, result: str) -> ErrorCode:
        log.debug("TransactionalId: %s's state is %s, but received transaction marker result to send: %s",
                  transactional_id, state, result)
        return ErrorCode.INVALID_TXN_STATE

    # -- timeouts and expiry ------------------------------------------------------------

    @entry
    def abort_timed_out_transactions(self) -> None:
        """transaction.timeout.ms: an Ongoing transaction older than its timeout is aborted
        with a fenced epoch, so its producer cannot add to it any more."""
        for timed_out in self.state.timed_out_transactions():
            error, found = self.state.get_transaction_state(timed_out.transactional_id)
            if error is not None or found is None:
                continue
            metadata = found.metadata
            if metadata.producer_id != timed_out.producer_id or metadata.pending_transition_in_progress:
                continue
            transit = metadata.prepare_fence_producer_epoch()
            log.info("%sAborting transaction of %s (producerId %d) after its timeout of %d ms", self.log_prefix,
                     timed_out.transactional_id, metadata.producer_id, metadata.txn_timeout_ms)

            def done(error: ErrorCode, txn_id=timed_out.transactional_id) -> None:
                if error == ErrorCode.NONE:
                    log.info("%sCompleted rollback of ongoing transaction for transactionalId %s due to timeout",
                             self.log_prefix, txn_id)
                elif error in (ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.PRODUCER_FENCED,
                               ErrorCode.CONCURRENT_TRANSACTIONS):
                    log.debug("%sRollback of ongoing transaction for transactionalId %s has been cancelled due to "
                              "error %s", self.log_prefix, txn_id, error.name)
                else:
                    log.warning("%sRollback of ongoing transaction for transactionalId %s failed due to error %s",
                                self.log_prefix, txn_id, error.name)
            self._end_transaction(metadata.transactional_id, transit.producer_id, transit.producer_epoch, False,
                                  False, done)

    @entry
    def remove_expired_transactional_ids(self) -> None:
        self.state.remove_expired_transactional_ids()
