"""The transactional ids this broker coordinates, and their records in __transaction_state.

Which partition of __transaction_state holds an id decides its coordinator: the
partition's leader. The manager keeps one cache per owned partition, stamped with the
coordinator epoch (the partition's leader epoch when we became its leader), and writes
every transition through the ReplicaManager with acks=all before it is applied, as
Kafka's TransactionStateManager does. A write that lands after the partition moved to
another coordinator (the epoch changed) is not applied here: NOT_COORDINATOR.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from twisted.internet import defer

from kafkalike.coordinator.group_metadata_manager import partition_for
from kafkalike.coordinator.loader import PartitionLoad
from kafkalike.coordinator.transaction.config import TRANSACTION_STATE_TOPIC, TransactionConfig
from kafkalike.coordinator.transaction.metadata import (DEAD, ONGOING, TransactionMetadata,
                                                        TxnTransitMetadata)
from kafkalike.coordinator.transaction.records import key_bytes, read_key, read_value, value_bytes
from kafkalike.protocol.errors import ErrorCode
from kafkalike.records import encode_batch
from kafkalike.storage.validation import AppendOrigin

log = logging.getLogger("kafka.coordinator.transaction.TransactionStateManager")

_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


@dataclass(frozen=True)
class CoordinatorEpochAndMetadata:
    coordinator_epoch: int
    metadata: TransactionMetadata


@dataclass(frozen=True)
class TimedOutTransaction:
    transactional_id: str
    producer_id: int
    producer_epoch: int


class TxnPartitionLoad(PartitionLoad):
    """Replays one __transaction_state partition: the last record per transactional id wins."""

    topic = TRANSACTION_STATE_TOPIC

    def new_result(self) -> dict[str, TransactionMetadata]:
        return {}

    def replay_batch(self, batch) -> None:
        if batch.is_control:
            return
        for record in batch.records():
            if record.key is None:
                raise ValueError("Transaction log entry key should not be null")
            transactional_id = read_key(record.key)
            metadata = read_value(transactional_id, record.value)
            if metadata is None:
                self.result.pop(transactional_id, None)
            else:
                self.result[transactional_id] = metadata


class TransactionStateManager:
    def __init__(self, broker_id: int, config: TransactionConfig, replica_manager, reactor,
                 now_ms: Callable[[], int]):
        self.broker_id = broker_id
        self.config = config
        self.replica_manager = replica_manager
        self.reactor = reactor
        self.now_ms = now_ms
        # partition -> (coordinator epoch, transactional id -> metadata)
        self.caches: dict[int, tuple[int, dict[str, TransactionMetadata]]] = {}
        self.loads: dict[int, TxnPartitionLoad] = {}
        self.epochs: dict[int, int] = {}
        self.load_slice_bytes = min(config.transaction_log_load_buffer_size, 256 * 1024)

    # -- where transactional ids live ---------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.transaction_log_num_partitions)

    def validate_transaction_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    def is_loading(self) -> bool:
        return bool(self.loads)

    def get_transaction_state(self, transactional_id: str
                              ) -> tuple[ErrorCode | None, CoordinatorEpochAndMetadata | None]:
        """(error, None) unless this broker coordinates the id; then (None, entry or None)."""
        partition = self.partition_for(transactional_id)
        if partition in self.loads:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        cache = self.caches.get(partition)
        if cache is None:
            return ErrorCode.NOT_COORDINATOR, None
        epoch, entries = cache
        metadata = entries.get(transactional_id)
        return None, (CoordinatorEpochAndMetadata(epoch, metadata) if metadata is not None else None)

    def put_if_not_exists(self, metadata: TransactionMetadata
                          ) -> tuple[ErrorCode | None, CoordinatorEpochAndMetadata | None]:
        error, found = self.get_transaction_state(metadata.transactional_id)
        if error is not None or found is not None:
            return error, found
        epoch, entries = self.caches[self.partition_for(metadata.transactional_id)]
        entries[metadata.transactional_id] = metadata
        return None, CoordinatorEpochAndMetadata(epoch, metadata)

    def all_transactions(self) -> list[tuple[int, TransactionMetadata]]:
        return [(epoch, m) for epoch, entries in self.caches.values() for m in entries.values()]

    # -- writes -------------------------------------------------------------------------

    def _append(self, transactional_id: str, value: bytes | None, callback: Callable[[ErrorCode], None]) -> None:
        tp = (TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        batch = encode_batch([(key_bytes(transactional_id), value)], base_timestamp=self.now_ms())
        try:
            result = self.replica_manager.append_records({tp: batch}, -1, self.config.request_timeout_ms,
                                                         lambda topic: True, origin=AppendOrigin.COORDINATOR)
        except Exception:
            log.exception("Appending to %s-%d failed", *tp)
            callback(ErrorCode.UNKNOWN_SERVER_ERROR)
            return

        def done(results) -> None:
            error = results[tp].error
            callback(error if error == ErrorCode.NONE else _APPEND_ERRORS.get(error, ErrorCode.UNKNOWN_SERVER_ERROR))

        def failed(failure) -> None:
            log.error("Appending to %s-%d failed: %s", *tp, failure.getTraceback())
            callback(ErrorCode.UNKNOWN_SERVER_ERROR)

        if isinstance(result, defer.Deferred):
            result.addCallbacks(done, failed)
        else:
            done(result)

    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int, transit: TxnTransitMetadata,
                                  callback: Callable[[ErrorCode], None],
                                  retry_on_error: Callable[[ErrorCode], bool] = lambda error: False) -> None:
        """Write `transit`; once replicated (acks=all), apply it to the cached metadata and
        call back NONE. On an error the pending transition is dropped, unless the caller
        will retry it (retry_on_error)."""
        error, found = self.get_transaction_state(transactional_id)
        if error is not None:
            callback(error)
            return
        if found is None or found.coordinator_epoch != coordinator_epoch:
            callback(ErrorCode.NOT_COORDINATOR)
            return

        def appended(response_error: ErrorCode) -> None:
            if response_error != ErrorCode.NONE:
                log.debug("Appending %s's new metadata %s failed due to %s", transactional_id, transit,
                          response_error.name)
            error, now_found = self.get_transaction_state(transactional_id)
            if error is not None:
                log.info("Accessing the cached transaction metadata for %s returns %s error; aborting "
                         "transition to the new metadata and setting the error in the callback",
                         transactional_id, error.name)
                callback(error)
                return
            if now_found is None:
                log.info("The cached metadata for %s has gone since the append was sent", transactional_id)
                callback(ErrorCode.NOT_COORDINATOR)
                return
            metadata = now_found.metadata
            if now_found.coordinator_epoch != coordinator_epoch:
                log.info("The cached coordinator epoch for %s has changed to %d after appended its new metadata "
                         "%s to the transaction log (txn topic partition %d) while it was %d before appending",
                         transactional_id, now_found.coordinator_epoch, transit,
                         self.partition_for(transactional_id), coordinator_epoch)
                callback(ErrorCode.NOT_COORDINATOR)
                return
            if response_error == ErrorCode.NONE:
                metadata.complete_transition_to(transit)
                log.debug("Updating %s's transaction state to %s with coordinator epoch %d for %s succeeded",
                          transactional_id, transit, coordinator_epoch, transactional_id)
            elif not retry_on_error(response_error):
                metadata.pending_state = None
            callback(response_error)

        self._append(transactional_id, value_bytes(transit), appended)

    # -- timeouts and expiry ------------------------------------------------------------

    def timed_out_transactions(self) -> list[TimedOutTransaction]:
        now = self.now_ms()
        return [TimedOutTransaction(m.transactional_id, m.producer_id, m.producer_epoch)
                for _epoch, m in self.all_transactions()
                if not m.pending_transition_in_progress and m.state is ONGOING
                and m.txn_start_timestamp + m.txn_timeout_ms < now]

    def remove_expired_transactional_ids(self) -> None:
        """Kafka's transactional.id.expiration.ms: an id idle that long (with no open
        transaction) is tombstoned, and forgotten once the tombstone is replicated."""
        now = self.now_ms()
        for epoch, metadata in self.all_transactions():
            if metadata.pending_transition_in_progress or not metadata.state.is_expiration_allowed \
                    or metadata.txn_last_update_timestamp > now - self.config.transactional_id_expiration_ms:
                continue
            transit = metadata.prepare_dead()
            self._tombstone(epoch, metadata, transit)

    def _tombstone(self, epoch: int, metadata: TransactionMetadata, transit: TxnTransitMetadata) -> None:
        transactional_id = metadata.transactional_id

        def written(error: ErrorCode) -> None:
            partition = self.partition_for(transactional_id)
            cache = self.caches.get(partition)
            if cache is None or cache[0] != epoch or cache[1].get(transactional_id) is not metadata:
                return
            if error == ErrorCode.NONE and metadata.pending_state is DEAD \
                    and metadata.producer_id == transit.producer_id \
                    and metadata.producer_epoch == transit.producer_epoch:
                del cache[1][transactional_id]
                log.info("Removed expired transactional id %s from %s-%d", transactional_id,
                         TRANSACTION_STATE_TOPIC, partition)
            else:
                metadata.pending_state = None
                if error != ErrorCode.NONE:
                    log.warning("Failed to remove expired transactionalId: %s from the transaction log due to %s",
                                transactional_id, error.name)
        self._append(transactional_id, None, written)

    # -- loading and unloading ----------------------------------------------------------

    def schedule_load(self, partition: int, coordinator_epoch: int,
                      on_loaded: Callable[[int, int, list[TransactionMetadata]], None]) -> bool:
        """Replay `partition`; on_loaded(partition, epoch, transactions) once it is served."""
        if coordinator_epoch < self.epochs.get(partition, -1):
            log.info("Not loading transaction metadata of %s-%d for epoch %d since current epoch is %d",
                     TRANSACTION_STATE_TOPIC, partition, coordinator_epoch, self.epochs[partition])
            return False
        if coordinator_epoch == self.epochs.get(partition) and (partition in self.loads or partition in self.caches):
            # the same leadership told again (a repeated LeaderAndIsr): keep what is loaded
            return False
        self.epochs[partition] = coordinator_epoch
        old = self.loads.pop(partition, None)
        if old is not None:
            old.cancel()
        self.caches.pop(partition, None)
        started = self.now_ms()
        log.info("Loading transaction metadata from %s-%d at epoch %d", TRANSACTION_STATE_TOPIC, partition,
                 coordinator_epoch)

        def log_of():
            part = self.replica_manager.partitions.get((TRANSACTION_STATE_TOPIC, partition))
            return part.log if part is not None and part.is_leader else None

        def done(load: TxnPartitionLoad) -> None:
            if self.loads.get(partition) is not load:
                return
            del self.loads[partition]
            if load.cancelled:
                return
            self.caches[partition] = (coordinator_epoch, dict(load.result))
            log.info("Finished loading %d transaction metadata from %s-%d in %d milliseconds, of which 0 "
                     "milliseconds was spent in the scheduler.", len(load.result), TRANSACTION_STATE_TOPIC,
                     partition, self.now_ms() - started)
            on_loaded(partition, coordinator_epoch, list(load.result.values()))

        load = TxnPartitionLoad(partition, log_of, self.reactor, done, self.load_slice_bytes)
        self.loads[partition] = load
        load.start()
        return True

    def remove_transactions_for_partition(self, partition: int, coordinator_epoch: int | None) -> None:
        if coordinator_epoch is not None:
            if coordinator_epoch < self.epochs.get(partition, -1):
                return
            self.epochs[partition] = coordinator_epoch
        load = self.loads.pop(partition, None)
        if load is not None:
            load.cancel()
        cache = self.caches.pop(partition, None)
        if cache is not None:
            log.info("Unloaded transaction metadata %s for %s-%d following local partition deletion",
                     sorted(cache[1]), TRANSACTION_STATE_TOPIC, partition)

    def shutdown(self) -> None:
        for load in self.loads.values():
            load.cancel()
        self.loads.clear()
        self.caches.clear()
