"""Sends a transaction's commit or abort markers to the leaders of its partitions.

Kafka's TransactionMarkerChannelManager: once PrepareCommit/PrepareAbort is in the log,
every partition of the transaction needs a marker, written by its leader
(WriteTxnMarkers). Markers are grouped per leader, one request in flight per broker,
over the same outbound connections the controller channel and AlterIsr use. A
partition whose leader moved or is unknown stays queued and goes to whoever the
metadata cache names next; a partition whose topic was deleted is dropped. When the
last partition has its marker, CompleteCommit/CompleteAbort is written and the
transactional id can start its next transaction.

A coordinator that loses its partition of __transaction_state (or whose epoch a
partition leader fences) stops: the new coordinator loads the log and sends the
markers again, which the leaders accept as the duplicates they are.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from twisted.internet import defer

from kafkalike.common import outbound
from kafkalike.coordinator.transaction.metadata import TransactionMetadata, TxnTransitMetadata
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.write_txn_markers import WriteTxnMarkersRequest

log = logging.getLogger("kafka.coordinator.transaction.TransactionMarkerChannelManager")

WRITE_TXN_MARKERS_VERSION = 1
RETRY_BACKOFF_S = 0.1
TopicPartition = tuple[str, int]

_RETRY = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR})
_FENCED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})


@dataclass(eq=False)
class PendingCompletion:
    """One transaction whose markers are on their way."""

    transactional_id: str
    txn_partition: int
    coordinator_epoch: int
    committed: bool
    metadata: TransactionMetadata
    transit: TxnTransitMetadata
    unsent: set[TopicPartition] = field(default_factory=set)
    aborted: bool = False


class TransactionMarkerChannelManager:
    def __init__(self, broker_id: int, metadata_cache, listener_name: str, reactor, state_manager,
                 request_timeout_ms: int, connect: Callable | None = None):
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.listener_name = listener_name
        self.reactor = reactor
        self.state_manager = state_manager
        self.request_timeout_ms = request_timeout_ms
        self._connect = connect or (lambda host, port: outbound.connect(
            host, port, f"broker-{broker_id}-txn-marker-sender", reactor, timeout=5))
        self.pending: dict[str, PendingCompletion] = {}
        self.connections: dict[int, outbound.OutboundConnection] = {}
        self.in_flight: set[int] = set()
        self._drain_call = None
        self.running = False

    def start(self) -> None:
        self.running = True

    def shutdown(self) -> None:
        self.running = False
        if self._drain_call is not None and self._drain_call.active():
            self._drain_call.cancel()
        for conn in self.connections.values():
            conn.close()
        self.connections.clear()
        self.pending.clear()

    # -- what to send -------------------------------------------------------------------

    def add_txn_markers_to_send(self, coordinator_epoch: int, committed: bool, metadata: TransactionMetadata,
                                transit: TxnTransitMetadata) -> None:
        """Send markers for the partitions of `metadata`, then write `transit` (CompleteX)."""
        job = PendingCompletion(metadata.transactional_id,
                                self.state_manager.partition_for(metadata.transactional_id),
                                coordinator_epoch, committed, metadata, transit, set(metadata.topic_partitions))
        old = self.pending.get(job.transactional_id)
        if old is not None:
            old.aborted = True
        self.pending[job.transactional_id] = job
        if not job.unsent:
            self._try_complete(job)
        else:
            self._schedule(0)

    def remove_markers_for_txn_topic_partition(self, txn_partition: int) -> None:
        for txn_id, job in list(self.pending.items()):
            if job.txn_partition == txn_partition:
                job.aborted = True
                del self.pending[txn_id]

    def _still_ours(self, job: PendingCompletion) -> bool:
        if job.aborted or self.pending.get(job.transactional_id) is not job:
            return False
        error, found = self.state_manager.get_transaction_state(job.transactional_id)
        if error is not None or found is None or found.coordinator_epoch != job.coordinator_epoch \
                or found.metadata is not job.metadata:
            log.info("I am no longer the coordinator for %s with coordinator epoch %d; cancel sending "
                     "transaction markers to the brokers", job.transactional_id, job.coordinator_epoch)
            self._drop(job)
            return False
        return True

    def _drop(self, job: PendingCompletion) -> None:
        job.aborted = True
        if self.pending.get(job.transactional_id) is job:
            del self.pending[job.transactional_id]

    # -- sending ------------------------------------------------------------------------

    def _schedule(self, delay_s: float) -> None:
        if not self.running:
            return
        if self._drain_call is not None and self._drain_call.active():
            if self._drain_call.getTime() <= self.reactor.seconds() + delay_s:
                return
            self._drain_call.cancel()
        self._drain_call = self.reactor.callLater(delay_s, self._drain)

    def _drain(self) -> None:
        """Group what is unsent by its leader now, and send to each leader not busy."""
        self._drain_call = None
        by_broker: dict[int, list[tuple[PendingCompletion, TopicPartition]]] = {}
        waiting = False
        for job in list(self.pending.values()):
            if not self._still_ours(job):
                continue
            for tp in sorted(job.unsent):
                if not self.metadata_cache.contains(tp[0]) or self.metadata_cache.partition(*tp) is None:
                    log.info("Dropping marker for %s-%d of %s: the partition no longer exists",
                             tp[0], tp[1], job.transactional_id)
                    job.unsent.discard(tp)
                    job.metadata.remove_partition(tp)
                    continue
                info = self.metadata_cache.partition(*tp)
                broker = self.metadata_cache.brokers.get(info.leader) if info.leader >= 0 else None
                if broker is None or broker.endpoint(self.listener_name) is None:
                    waiting = True          # leader unknown: try again once metadata names one
                    continue
                by_broker.setdefault(info.leader, []).append((job, tp))
            if not job.metadata.topic_partitions and not job.unsent:
                self._try_complete(job)
        for broker_id, items in by_broker.items():
            if broker_id in self.in_flight:
                waiting = True
                continue
            for job, tp in items:
                job.unsent.discard(tp)
            self.in_flight.add(broker_id)
            d = defer.ensureDeferred(self._send(broker_id, items))
            d.addErrback(lambda f, b=broker_id, i=items: self._failed(b, i, f))
        if waiting:
            self._schedule(RETRY_BACKOFF_S)

    async def _send(self, broker_id: int, items: list[tuple[PendingCompletion, TopicPartition]]) -> None:
        markers: dict[int, tuple[PendingCompletion, dict[str, list[int]]]] = {}
        for job, (topic, p) in items:
            key = id(job)
            markers.setdefault(key, (job, {}))[1].setdefault(topic, []).append(p)
        request = WriteTxnMarkersRequest(markers=[
            WriteTxnMarkersRequest.WritableTxnMarker(
                producer_id=job.transit.producer_id, producer_epoch=job.transit.producer_epoch,
                transaction_result=job.committed, coordinator_epoch=job.coordinator_epoch,
                topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                        for t, ps in topics.items()])
            for job, topics in markers.values()])
        conn = await self._connection(broker_id)
        answer = conn.request(request, WRITE_TXN_MARKERS_VERSION)
        answer.addTimeout(self.request_timeout_ms / 1000, self.reactor)
        response = await answer
        self.in_flight.discard(broker_id)
        self._handle_response(items, response)

    async def _connection(self, broker_id: int):
        conn = self.connections.get(broker_id)
        if conn is not None:
            return conn
        info = self.metadata_cache.brokers.get(broker_id)
        ep = info.endpoint(self.listener_name) if info is not None else None
        if ep is None:
            raise ConnectionError(f"no endpoint for broker {broker_id}")
        conn = await self._connect(ep.host, ep.port)
        self.connections[broker_id] = conn
        conn.closed.addCallback(lambda _ignored: self.connections.pop(broker_id, None)
                                if self.connections.get(broker_id) is conn else None)
        return conn

    def _failed(self, broker_id: int, items, failure) -> None:
        """No answer (the leader died, or is slow): every marker goes back in the queue,
        to be sent to whoever leads each partition when we try again."""
        self.in_flight.discard(broker_id)
        conn = self.connections.pop(broker_id, None)
        if conn is not None:
            conn.close()
        log.info("Sending transaction markers to broker %d failed (%s); will retry", broker_id,
                 failure.getErrorMessage())
        for job, tp in items:
            if not job.aborted:
                job.unsent.add(tp)
        self._schedule(RETRY_BACKOFF_S)

    def _handle_response(self, items, response) -> None:
        errors = {(m.producer_id, t.name, p.partition_index): ErrorCode(p.error_code)
                  for m in response.markers for t in m.topics for p in t.partitions}
        retry = False
        for job, tp in items:
            if not self._still_ours(job):
                continue
            error = errors.get((job.transit.producer_id, tp[0], tp[1]), ErrorCode.UNKNOWN_SERVER_ERROR)
            if error == ErrorCode.NONE:
                job.metadata.remove_partition(tp)
            elif error in _FENCED:
                log.info("Sending %s's transaction marker for partition %s-%d has permanently failed with error "
                         "%s with the current coordinator epoch %d; cancel sending any more transaction markers "
                         "%s to the brokers", job.transactional_id, tp[0], tp[1], error.name,
                         job.coordinator_epoch, "COMMIT" if job.committed else "ABORT")
                self._drop(job)
            elif error == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT:
                log.info("Sending %s's transaction marker for partition %s-%d has permanently failed with error "
                         "%s; the partition is dropped from the transaction", job.transactional_id, tp[0], tp[1],
                         error.name)
                job.metadata.remove_partition(tp)
            else:
                if error not in _RETRY:
                    log.error("Unexpected error %s while sending txn marker for %s to %s-%d; retrying",
                              error.name, job.transactional_id, tp[0], tp[1])
                else:
                    log.debug("Sending %s's transaction marker for partition %s-%d has failed with error %s, "
                              "retrying with current coordinator epoch %d", job.transactional_id, tp[0], tp[1],
                              error.name, job.coordinator_epoch)
                job.unsent.add(tp)
                retry = True
        for job in {id(j): j for j, _tp in items}.values():
            if not job.aborted and not job.unsent and not job.metadata.topic_partitions:
                self._try_complete(job)
        self._schedule(RETRY_BACKOFF_S if retry else 0)

    # -- completing ---------------------------------------------------------------------

    def _try_complete(self, job: PendingCompletion) -> None:
        if self.pending.get(job.transactional_id) is not job or job.aborted:
            return
        del self.pending[job.transactional_id]
        log.debug("Completed sending transaction markers for %s; begin transition to %s", job.transactional_id,
                  job.transit.txn_state)
        self._append_complete(job)

    def _append_complete(self, job: PendingCompletion) -> None:
        def written(error: ErrorCode) -> None:
            if error == ErrorCode.NONE:
                log.debug("Completed transaction for %s with coordinator epoch %d, final state after commit: %s",
                          job.transactional_id, job.coordinator_epoch, job.metadata.state)
            elif error == ErrorCode.COORDINATOR_NOT_AVAILABLE and self.running:
                log.warning("Failed updating transaction state for %s when appending to transaction log due to "
                            "%s. retrying.", job.transactional_id, error.name)
                self.reactor.callLater(RETRY_BACKOFF_S, self._append_complete, job)
            elif error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                log.info("No longer the coordinator for transactionalId: %s while trying to append to "
                         "transaction log, skip writing to transaction log", job.transactional_id)
            else:
                log.error("Unexpected error %s while appending to transaction log for %s", error.name,
                          job.transactional_id)
        self.state_manager.append_transaction_to_log(job.transactional_id, job.coordinator_epoch, job.transit,
                                                     written,
                                                     lambda e: e == ErrorCode.COORDINATOR_NOT_AVAILABLE)
