"""The producer's background thread: drains the accumulator into Produce requests.

Each loop, as Java's Sender does: refresh metadata if due (network.MetadataUpdater, the
loop the consumer uses too); ask the accumulator which leaders have sendable batches;
connect to those not yet connected; drain at most one batch per partition and
max.request.size bytes per leader; fail batches that passed delivery.timeout.ms; send
one Produce request per leader; then poll the network until something can happen.
Answers complete batches, or put them back at the head of their queue to retry
(retriable errors, while retries and delivery.timeout.ms allow), or split them
(MESSAGE_TOO_LARGE for a batch of several records). Errors that mean the
leader moved, and lost connections, trigger a metadata refresh first.

With max.in.flight.requests.per.connection=1 a partition is muted while its batch is in
flight, so retries cannot reorder records. An idempotent producer (enable.idempotence)
first gets a producer id with InitProducerId, then numbers its batches (idempotence.py):
up to five per partition in flight, retried in sequence order, deduplicated by the broker.

A transactional producer (transactional.id) gets its producer id from the transaction
coordinator instead, through its TransactionManager (transaction_manager.py): each loop
first sends the manager's next request (FindCoordinator, InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn), one at a time and ahead of produce data, as
Java's Sender does; a partition's batches are drained only once it is in the transaction;
while a commit or abort waits every batch is sendable at once; an aborted transaction's
unsent batches fail with TransactionAbortedError; a failed batch makes the transaction
abortable (or fatal when fenced) instead of bumping the epoch locally.
"""
from __future__ import annotations

import logging
import threading
import time

from kafkalike.client.accumulator import ProducerBatch, RecordAccumulator
from kafkalike.client.errors import (
    INVALID_METADATA_CODES,
    KafkaError,
    KafkaTimeoutError,
    TransactionAbortedError,
    UnsupportedFeatureError,
    error_for_code,
)
from kafkalike.client.idempotence import IdempotenceManager
from kafkalike.client.transaction_manager import TransactionManager
from kafkalike.client.metadata import Metadata, TopicPartition
from kafkalike.client.metrics import Metrics, ProducerMetrics
from kafkalike.client.network import MetadataUpdater, NetworkClient
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest
from kafkalike.protocol.messages.produce import ProduceRequest
from kafkalike.protocol.types import Writer

log = logging.getLogger("kafkalike.client.sender")

# Produce v3 is the first that carries v2 record batches, the only format we write.
MIN_PRODUCE_VERSION = 3
_MAX_POLL = 0.5  # seconds; bounds how late close() or a new topic is noticed if no wakeup came


class ProduceData:
    """A Produce request (v3 and later) as the sender sends it: NetworkClient encodes it
    like any request (API_KEY, encode_into) into the bytes ProduceRequest's own encoder
    writes (tests/unit/test_client_sender_wire.py holds them equal at every version), from
    {topic: [(partition, batch bytes)]} without a dataclass per topic and partition and
    without the schema walker's call per field: at 1 KiB records the sender sends a
    request per 15 records, and building and walking ProduceRequest was a tenth of its work."""

    API_KEY = ProduceRequest.API_KEY
    __slots__ = ("transactional_id", "acks", "timeout_ms", "topics")

    def __init__(self, transactional_id: str | None, acks: int, timeout_ms: int,
                 topics: dict[str, list[tuple[int, bytes]]]) -> None:
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.topics = topics

    def encode_into(self, w: Writer, version: int) -> None:
        if version < MIN_PRODUCE_VERSION:
            raise UnsupportedFeatureError(f"Produce v{version} cannot carry v2 record batches")
        topics = self.topics
        if version >= 9:  # flexible: compact strings, arrays and bytes, empty tagged fields
            w.compact_string(self.transactional_id)
            w.int16(self.acks)
            w.int32(self.timeout_ms)
            w.uvarint(len(topics) + 1)
            for name, partitions in topics.items():
                w.compact_string(name)
                w.uvarint(len(partitions) + 1)
                for index, records in partitions:
                    w.int32(index)
                    w.compact_bytes(records)
                    w.uvarint(0)
                w.uvarint(0)
            w.uvarint(0)
            return
        w.string(self.transactional_id)
        w.int16(self.acks)
        w.int32(self.timeout_ms)
        w.int32(len(topics))
        for name, partitions in topics.items():
            w.string(name)
            w.int32(len(partitions))
            for index, records in partitions:
                w.int32(index)
                w.bytes(records)

    def to_request(self) -> ProduceRequest:
        """The same request as a ProduceRequest (for tests and tools that inspect one)."""
        return ProduceRequest(transactional_id=self.transactional_id, acks=self.acks, timeout_ms=self.timeout_ms,
                              topic_data=[ProduceRequest.TopicProduceData(
                                  name=name, partition_data=[ProduceRequest.PartitionProduceData(index=i, records=r)
                                                             for i, r in partitions])
                                  for name, partitions in self.topics.items()])


class Sender(threading.Thread):
    def __init__(self, client: NetworkClient, metadata: Metadata, accumulator: RecordAccumulator, *,
                 acks: int, retries: int, request_timeout_ms: int, max_request_size: int,
                 guarantee_order: bool, log_prefix: str = "", name: str = "kafka-producer-network-thread",
                 idempotence: IdempotenceManager | None = None,
                 transactions: TransactionManager | None = None,
                 sensors: ProducerMetrics | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.client = client
        self.metadata = metadata
        self.accumulator = accumulator
        self.acks = acks
        self.retries = retries
        self.request_timeout_ms = request_timeout_ms
        self.max_request_size = max_request_size
        self.guarantee_order = guarantee_order
        self.log_prefix = log_prefix
        self._running = True
        self._force_close = False
        self._in_flight: dict[TopicPartition, list[ProducerBatch]] = {}
        self.metadata_updater = MetadataUpdater(client, metadata, log_prefix=log_prefix)
        self.idempotence = idempotence
        accumulator.idempotence = idempotence
        self.transactions = transactions
        accumulator.transactions = transactions
        self._init_pid_in_flight = False
        self._init_pid_retry_at = 0.0
        # Java's SenderMetrics: recorded per batch and per request on this thread.
        self.sensors = sensors if sensors is not None else ProducerMetrics(Metrics("producer"))
        # The record tracer (kafkalike-trace): None unless asked for, then called at each step.
        self.tracer = None

    # -- lifecycle ----------------------------------------------------------------------

    def run(self) -> None:
        while self._running:
            self._run_once_safely()
        transactions = self.transactions
        if transactions is not None and not self._force_close:
            transactions.close_abort_needed()
        # Closing: send what is queued and wait for the answers, unless forced.
        while not self._force_close and (self.accumulator.has_undrained() or self.client.in_flight_count() > 0
                                         or self._in_flight
                                         or (transactions is not None and transactions.has_pending_requests())):
            self._run_once_safely()
        if self._force_close:
            self.accumulator.abort_incomplete(KafkaError("Producer is closed forcefully."))
            self._in_flight.clear()
        self.client.close()
        self.metadata.close()

    def _run_once_safely(self) -> None:
        try:
            self.run_once()
        except Exception:  # the thread must survive anything a loop throws
            log.exception("%sUncaught error in kafka producer I/O thread: ", self.log_prefix)
            time.sleep(0.01)

    def initiate_close(self) -> None:
        self.accumulator.close()
        self._running = False
        self.wakeup()

    def force_close(self) -> None:
        self._force_close = True
        self.initiate_close()

    def wakeup(self) -> None:
        self.client.wakeup()

    # -- one loop ---------------------------------------------------------------------------

    def run_once(self) -> None:
        now = time.monotonic()
        metadata_wait = self.metadata_updater.maybe_update(now)
        transactions = self.transactions
        if transactions is not None:
            if transactions.has_fatal_error():
                # Nothing more is sent; what is still queued fails with the reason.
                self.accumulator.abort_undrained(transactions.last_error or KafkaError("fatal error"))
                self.client.poll(min(metadata_wait, _MAX_POLL))
                return
            wait = self._maybe_send_transactional_request(now)
            if wait is not None:
                self.client.poll(min(wait, metadata_wait, _MAX_POLL))
                return
            metadata_wait = min(metadata_wait, transactions.next_retry_delay(now))
        elif self.idempotence is not None and self.idempotence.needs_producer_id():
            metadata_wait = min(metadata_wait, self._maybe_init_producer_id(now))
        poll_timeout = min(self._send_produce_data(now), metadata_wait, _MAX_POLL)
        self.client.poll(poll_timeout)

    def _maybe_send_transactional_request(self, now: float) -> float | None:
        """Send the transaction manager's next request; a poll timeout if produce data must wait
        this loop (a transactional request is in flight or just went out), else None."""
        tm = self.transactions
        if tm.in_flight is not None:
            return self.client.request_timeout
        accumulator = self.accumulator
        if tm.has_abortable_error() or tm.is_aborting():
            if accumulator.has_incomplete():
                accumulator.abort_undrained(tm.last_error or TransactionAbortedError(
                    "Failing batch since transaction was aborted"))
        accumulator.completing = tm.is_completing()
        for _ in range(3):  # a coordinator lookup, then the request that needed it
            handler = tm.next_request(accumulator.has_incomplete(), now)
            if handler is None:
                return None
            if handler.coordinator is None:
                node = self.client.least_loaded_node(now)
            else:
                node = tm.coordinator_for(handler)
                if node is not None and not self.client.knows(node):
                    self.metadata.request_update()  # a coordinator newer than our metadata
                    tm.put_back(handler)
                    return self.accumulator.retry_backoff
            if node is None:
                tm.put_back(handler)
                if handler.coordinator is None:
                    return self.client.reconnect_backoff
                continue  # its coordinator lookup is first in the queue now
            if not self.client.ready(node, now):
                tm.put_back(handler)
                return min(self.client.connection_delay(node, now), self.accumulator.retry_backoff)
            try:
                request = handler.build()
                version = self.client.version_for(node, request.API_KEY)
            except UnsupportedFeatureError as error:
                tm.fatal_error(handler, error)
                return None
            tm.in_flight = handler
            log.debug("%sSending transactional request %s to node %s", self.log_prefix, type(request).__name__,
                      node)
            self.client.send(node, request, lambda response, error, h=handler: tm.on_response(h, response, error),
                             now, version=version)
            return self.client.request_timeout
        return 0.0

    def _maybe_init_producer_id(self, now: float) -> float:
        """Ask the least loaded broker for a producer id (any broker hands them out)."""
        if self._init_pid_in_flight:
            return self.client.request_timeout
        if now < self._init_pid_retry_at:
            return self._init_pid_retry_at - now
        node = self.client.least_loaded_node(now)
        if node is None or not self.client.ready(node, now):
            return self.client.reconnect_backoff
        self._init_pid_in_flight = True
        request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
        self.client.send(node, request, self._handle_init_producer_id, now,
                         version=self.client.version_for(node, InitProducerIdRequest.API_KEY))
        return self.client.request_timeout

    def _handle_init_producer_id(self, response, error: Exception | None) -> None:
        self._init_pid_in_flight = False
        code = response.error_code if error is None and response is not None else ErrorCode.NETWORK_EXCEPTION
        if code == ErrorCode.NONE:
            log.info("%sProducerId set to %d with epoch %d", self.log_prefix, response.producer_id,
                     response.producer_epoch)
            self.idempotence.set_producer_id(response.producer_id, response.producer_epoch)
            return
        log.warning("%sInitProducerId failed (%s); retrying", self.log_prefix,
                    error or ErrorCode(code).name)
        self._init_pid_retry_at = time.monotonic() + self.accumulator.retry_backoff

    def _send_produce_data(self, now: float) -> float:
        cluster = self.metadata.cluster
        check = self.accumulator.ready(cluster, now)
        if check.unknown_leader_topics:
            for topic in check.unknown_leader_topics:
                self.metadata.add_topic(topic, now)
            self.metadata.request_update()
        not_ready_timeout = float("inf")
        for node in list(check.nodes):
            if not self.client.ready(node, now):
                check.nodes.discard(node)
                not_ready_timeout = min(not_ready_timeout, self.client.connection_delay(node, now))
        batches = self.accumulator.drain(cluster, check.nodes, self.max_request_size, now)
        for node_batches in batches.values():
            for batch in node_batches:
                self._in_flight.setdefault(batch.tp, []).append(batch)
                if self.guarantee_order:
                    self.accumulator.mute(batch.tp)
        for batch in self.accumulator.expired_batches(now):
            self._fail_expired(batch, now)
        for tp, in_flight in list(self._in_flight.items()):
            for batch in list(in_flight):
                if now - batch.created >= self.accumulator.delivery_timeout:
                    self._fail_expired(batch, now)
        for node, node_batches in batches.items():
            self._send_produce_request(node, node_batches, now)
        if batches:
            return 0.0  # more may be sendable at once (the next batch of a full partition)
        return min(check.next_delay, not_ready_timeout, max(0.0, self.accumulator.next_expiry() - now))

    def _fail_expired(self, batch: ProducerBatch, now: float) -> None:
        error = KafkaTimeoutError(f"Expiring {batch.count} record(s) for {batch.tp}:"
                                  f"{int((now - batch.created) * 1000)} ms has passed since batch creation")
        self._finish(batch, -1, -1, error)

    # -- produce requests and answers ----------------------------------------------------------

    def _send_produce_request(self, node: int, batches: list[ProducerBatch], now: float) -> None:
        try:
            version = self.client.version_for(node, ProduceRequest.API_KEY)
            if version < MIN_PRODUCE_VERSION:
                raise UnsupportedFeatureError(f"The broker's Produce versions end at v{version}; record batches "
                                              f"v2 need v{MIN_PRODUCE_VERSION} or newer")
        except UnsupportedFeatureError as error:
            for batch in batches:
                self._finish(batch, -1, -1, error)
            return
        by_topic: dict[str, list[tuple[int, bytes]]] = {}
        by_tp: dict[tuple[str, int], ProducerBatch] = {}
        sensors = self.sensors
        records = 0
        for batch in batches:
            try:
                data = batch.build()
            except Exception as error:  # never strand a batch (and its partition) on a bug here
                log.error("%sCould not encode a batch for %s", self.log_prefix, batch.tp, exc_info=True)
                self._finish(batch, -1, -1, KafkaError(f"The batch for {batch.tp} could not be encoded: {error}"))
                continue
            self.accumulator.record_compression(batch)
            records += batch.count
            sensors.batch_sent(batch.tp.topic, batch.count, len(data), batch.uncompressed_size,
                               (batch.drained - batch.created) * 1000, now)
            by_topic.setdefault(batch.tp.topic, []).append((batch.tp.partition, data))
            by_tp[(batch.tp.topic, batch.tp.partition)] = batch
        transactional_id = self.transactions.transactional_id if self.transactions is not None else None
        request = ProduceData(transactional_id, self.acks, self.request_timeout_ms, by_topic)
        correlation: list[int] = []

        def on_response(response, error: Exception | None) -> None:
            answered = time.monotonic()
            sensors.answered((answered - now) * 1000, getattr(response, "throttle_time_ms", 0), records, answered)
            self._handle_produce_response(node, correlation[0] if correlation else -1, by_tp, response, error)

        correlation.append(self.client.send(node, request, on_response, now, version=version,
                                            expect_response=self.acks != 0))
        if self.tracer is not None:
            self.tracer.request_sent(node, correlation[0], by_tp, self.acks)

    def _handle_produce_response(self, node: int, correlation_id: int, batches: dict, response,
                                 error: Exception | None) -> None:
        now = time.monotonic()
        if self.tracer is not None:
            self.tracer.response_received(node, correlation_id, response, error)
        if error is not None:
            code = ErrorCode.REQUEST_TIMED_OUT if isinstance(error, KafkaTimeoutError) else ErrorCode.NETWORK_EXCEPTION
            for batch in batches.values():
                self._complete(batch, code, -1, -1, str(error), correlation_id, now)
            return
        if response is None:  # acks=0: done once written, offsets unknown
            for batch in batches.values():
                self._complete(batch, ErrorCode.NONE, -1, -1, None, correlation_id, now)
            return
        seen = set()
        for topic in response.responses:
            for p in topic.partition_responses:
                batch = batches.get((topic.name, p.index))
                if batch is None:
                    continue
                seen.add((topic.name, p.index))
                message = p.error_message
                if not message and p.record_errors:
                    message = "; ".join(e.batch_index_error_message or "" for e in p.record_errors) or None
                self._complete(batch, p.error_code, p.base_offset, p.log_append_time_ms, message, correlation_id, now)
        for key, batch in batches.items():
            if key not in seen:  # a broker that leaves a partition out of its answer
                self._complete(batch, ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1,
                               "The broker's response left this partition out", correlation_id, now)

    def _complete(self, batch: ProducerBatch, code: int, base_offset: int, log_append_time: int,
                  message: str | None, correlation_id: int, now: float) -> None:
        if batch.finished:  # expired while in flight: its records already failed
            self._forget(batch)
            return
        if code == ErrorCode.NONE or (code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER and batch.base_sequence >= 0):
            self._finish(batch, base_offset, log_append_time, None)
            return
        idempotence = self.idempotence
        if (code in (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID)
                and idempotence is not None and batch.base_sequence >= 0
                and now - batch.created < self.accumulator.delivery_timeout):
            # Retried, never failed, as Java's idempotent producer does: behind a batch that is
            # being retried or was renumbered, this one follows it; otherwise the broker's
            # sequence has a real gap (or it lost the producer), closed with a new epoch (KIP-360).
            gap = code == ErrorCode.UNKNOWN_PRODUCER_ID or (idempotence.is_first_unacked(batch)
                                                            and not batch.resequenced)
            if gap and self.transactions is not None:
                # A transaction cannot renumber on its own: the batch fails, the transaction
                # becomes abortable, and its abort bumps the epoch at the coordinator.
                self._finish(batch, -1, -1, error_for_code(code, message))
                return
            if gap:
                log.warning("%s%s for %s: bumping the producer epoch and renumbering its batches from 0",
                            self.log_prefix, ErrorCode(code).name, batch.tp)
                idempotence.restart_sequences(batch.tp, batch)
            self._forget(batch)
            self.sensors.retried(batch.tp.topic, batch.count, now)
            self.accumulator.reenqueue(batch, now)
            return
        if code == ErrorCode.MESSAGE_TOO_LARGE and batch.count > 1:
            log.warning("%sGot error produce response in correlation id %d on topic-partition %s, splitting and "
                        "retrying (%d attempts left). Error: %s", self.log_prefix, correlation_id, batch.tp,
                        self.retries - batch.attempts, ErrorCode(code).name)
            self._forget(batch)
            pieces = self.accumulator.split_and_reenqueue(batch, now)
            self.sensors.split.record(1, now)
            if idempotence is not None:
                idempotence.replace(batch, pieces)  # the pieces take over its sequence numbers
            self.accumulator.deallocate(batch)
            return
        error = error_for_code(code, message)
        if code in INVALID_METADATA_CODES:
            log.warning("%sReceived invalid metadata error in produce request on partition %s due to %s. Going to "
                        "request metadata update now", self.log_prefix, batch.tp, f"{error.java_class}: {error}")
            self.metadata.request_update()
        elif code == ErrorCode.REQUEST_TIMED_OUT:
            # Past Java, which keeps its metadata here: the leader could not replicate in time,
            # most often because it lost its followers, and may no longer lead without knowing
            # it (cut off from ZooKeeper while clients still reach it). Metadata from the least
            # loaded broker names the new leader; Java learns it only when a request of its own
            # times out or at metadata.max.age.ms.
            self.metadata.request_update()
        if error.retriable and batch.attempts < self.retries and \
                now - batch.created < self.accumulator.delivery_timeout:
            log.warning("%sGot error produce response with correlation id %d on topic-partition %s, retrying (%d "
                        "attempts left). Error: %s", self.log_prefix, correlation_id, batch.tp,
                        self.retries - batch.attempts - 1, ErrorCode(code).name)
            self._forget(batch)
            self.sensors.retried(batch.tp.topic, batch.count, now)
            self.accumulator.reenqueue(batch, now)
            return
        self._finish(batch, -1, -1, error)

    def _forget(self, batch: ProducerBatch) -> None:
        in_flight = self._in_flight.get(batch.tp)
        if in_flight is not None:
            try:
                in_flight.remove(batch)
            except ValueError:
                pass
            if not in_flight:
                del self._in_flight[batch.tp]
        if self.guarantee_order:
            self.accumulator.unmute(batch.tp)

    def _finish(self, batch: ProducerBatch, base_offset: int, log_append_time: int, error: Exception | None) -> None:
        self._forget(batch)
        transactions = self.transactions
        if error is not None:
            self.sensors.failed(batch.tp.topic, batch.count, time.monotonic())
        if transactions is not None and error is not None:
            transactions.handle_failed_batch(error, sequenced=batch.base_sequence >= 0)
        if self.idempotence is not None:
            # A transactional producer's sequences start afresh with the epoch its abort gets.
            self.idempotence.completed(batch, succeeded=error is None or transactions is not None)
        batch.done(base_offset, log_append_time, error)
        self.accumulator.deallocate(batch)


__all__ = ["ProduceData", "Sender"]
