"""The partitions this broker hosts, the produce and fetch paths through them, and the
controller's orders that make and stop them (Kafka's ReplicaManager).

Handlers translate wire messages into calls here; this module knows partitions, logs
and delayed operations but not message classes, so the same paths serve Produce,
Fetch, replica fetchers and the group coordinator's writes. LeaderAndIsr's partition
states are taken as the controller sent them (Partition reads their fields).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from twisted.internet import defer, threads

from kafkalike.broker import heap_freezer
from kafkalike.broker.partition import Partition
from kafkalike.broker.purgatory import DelayedOperation, Purgatory
from kafkalike.broker.replication_quota import ReplicationQuota
from kafkalike.metrics.stats import ReplicaStats
from kafkalike.protocol.errors import ErrorCode, KafkaProtocolError
from kafkalike.storage import errors as storage_errors
from kafkalike.storage.producer_state import (InvalidProducerEpochError, InvalidTxnStateError,
                                              OutOfOrderSequenceError, TransactionCoordinatorFencedError,
                                              UnknownProducerIdError)

if TYPE_CHECKING:
    from kafkalike.broker.alter_isr import AlterIsrManager
    from kafkalike.broker.metadata_cache import MetadataCache
    from kafkalike.broker.replica_fetcher import ReplicaFetcherManager
    from kafkalike.broker.topic_configs import TopicConfigs
    from kafkalike.storage.config import LogConfig
    from kafkalike.storage.manager import LogManager
    from kafkalike.zkdata import KafkaZkClient

log = logging.getLogger("kafka.server.ReplicaManager")
state_log = logging.getLogger("state.change.logger")
partition_log = logging.getLogger("kafka.cluster.Partition")

TopicPartition = tuple[str, int]
READ_COMMITTED = 1   # Fetch and ListOffsets isolation_level
# (topic, partition, now leader?, leader epoch or None when the replica stopped): who
# follows leadership of internal topics (the group coordinator) hears of every change.
LeadershipListener = Callable[[str, int, bool, "int | None"], None]


def error_for(exc: Exception) -> ErrorCode:
    """Map storage and protocol exceptions to the error code Kafka answers with."""
    if isinstance(exc, KafkaProtocolError):
        return exc.code
    mapping = [
        (storage_errors.OffsetOutOfRangeError, ErrorCode.OFFSET_OUT_OF_RANGE),
        (storage_errors.RecordBatchTooLargeError, ErrorCode.RECORD_LIST_TOO_LARGE),
        (storage_errors.RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
        (storage_errors.CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (storage_errors.InvalidTimestampError, ErrorCode.INVALID_TIMESTAMP),
        (storage_errors.InvalidRecordError, ErrorCode.INVALID_RECORD),
        (storage_errors.KafkaStorageError, ErrorCode.KAFKA_STORAGE_ERROR),
        (OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
        (InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH),
        (UnknownProducerIdError, ErrorCode.UNKNOWN_PRODUCER_ID),
        (InvalidTxnStateError, ErrorCode.INVALID_TXN_STATE),
        (TransactionCoordinatorFencedError, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    ]
    for cls, code in mapping:
        if isinstance(exc, cls):
            return code
    return ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass
class ProduceResult:
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    last_offset: int = -1
    message: str | None = None
    record_errors: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class FetchSpec:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1


@dataclass
class FetchResult:
    error: ErrorCode = ErrorCode.NONE
    high_watermark: int = -1
    log_start_offset: int = -1
    records: object = b""
    log_end_offset: int = -1
    diverging: tuple[int, int] | None = None
    last_stable_offset: int = -1
    # read_committed only: (producer id, first offset) of the aborted transactions in range
    aborted_transactions: list[tuple[int, int]] | None = None


@dataclass
class FetchParams:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partitions: dict[TopicPartition, FetchSpec] = field(default_factory=dict)
    isolation_level: int = 0     # 1: read_committed (consumers stop at the last stable offset)
    # Kafka 2.8 serves a consumer from a follower replica too once the request can carry
    # client metadata (Fetch v11+, KIP-392); followers and older fetches read leaders only.
    leader_only: bool = True
    # Fetch v0-2 (Kafka's hardMaxBytesLimit): every partition is cut at its max bytes, so
    # each reads its whole first batch for the answer's down-conversion to cut, not only
    # the first partition with data.
    hard_max_bytes_limit: bool = False


class DelayedProduce(DelayedOperation):
    def __init__(self, manager: "ReplicaManager", timeout_ms: int, results: dict[TopicPartition, ProduceResult]):
        super().__init__(timeout_ms)
        self.manager = manager
        self.results = results
        self.pending = {tp for tp, r in results.items() if r.error == ErrorCode.NONE}

    def try_complete(self) -> bool:
        for tp in list(self.pending):
            part = self.manager.partitions.get(tp)
            if part is None:
                self.results[tp].error = ErrorCode.NOT_LEADER_OR_FOLLOWER
                self.pending.discard(tp)
                continue
            status = part.enough_replicas_reached(self.results[tp].last_offset + 1,
                                                  self.manager.min_insync(tp[0]))
            if status is not None:
                self.results[tp].error = status
                self.pending.discard(tp)
        if not self.pending:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        for tp in self.pending:
            self.results[tp].error = ErrorCode.REQUEST_TIMED_OUT

    def on_complete(self) -> None:
        self.deferred.callback(self.results)


class DelayedFetch(DelayedOperation):
    def __init__(self, manager: "ReplicaManager", params: FetchParams, accumulated: int):
        super().__init__(params.max_wait_ms)
        self.manager = manager
        self.params = params
        self.accumulated = accumulated

    def try_complete(self) -> bool:
        available = 0
        for tp, spec in self.params.partitions.items():
            part = self.manager.partitions.get(tp)
            if part is None or (self.params.leader_only and not part.is_leader):
                return self.force_complete()     # leadership moved: answer now
            end = part.fetch_upper_bound(self.params.replica_id, self.params.isolation_level)
            if spec.fetch_offset > end:
                return self.force_complete()     # truncated under us: answer (with error)
            if self.params.replica_id >= 0 and part.is_leader and part.high_watermark_news(self.params.replica_id):
                return self.force_complete()     # a follower learns the high watermark at once
            if self.manager.leader_throttled(part, self.params.replica_id):
                continue                          # its bytes would not be sent: they do not count
            available += self.manager.bytes_between(part, spec.fetch_offset, end)
            if available >= self.params.min_bytes:
                return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.deferred.callback(self.manager.read(self.params))


class ReplicaManager:
    """The server hands in what the controller's orders need: topic configs and
    ZooKeeper to read a new topic's overrides before its log is made, the fetcher
    manager to follow leaders, the metadata cache to find a leader the request does
    not name, and a listener for leadership changes. Tests of the produce and fetch
    paths leave those out."""

    def __init__(self, broker_id: int, log_manager: LogManager, clock, topic_config: Callable[[str], LogConfig],
                 time_ms: Callable[[], int], *, topic_configs: TopicConfigs | None = None,
                 zk: KafkaZkClient | None = None, fetchers: ReplicaFetcherManager | None = None,
                 alter_isr: AlterIsrManager | None = None, metadata: MetadataCache | None = None,
                 inter_broker_listener: str = "PLAINTEXT",
                 on_leadership_change: LeadershipListener | None = None,
                 leader_quota: ReplicationQuota | None = None) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.clock = clock
        self.topic_config = topic_config    # topic -> LogConfig
        self.time_ms = time_ms
        self.topic_configs = topic_configs
        self.zk = zk
        self.fetchers = fetchers
        self.alter_isr = alter_isr
        self.metadata = metadata
        self.inter_broker_listener = inter_broker_listener
        self.on_leadership_change = on_leadership_change
        self.leader_quota = leader_quota    # the leader side of the replication throttle
        self.partitions: dict[TopicPartition, Partition] = {}
        self.replica_lag_ms = 30000
        self.produce_purgatory = Purgatory("Produce", clock)
        self.fetch_purgatory = Purgatory("Fetch", clock)
        self._negative_max_bytes_logged_ms = -60_000
        self.stats = ReplicaStats()    # BrokerTopicMetrics and the ISR meters (kafkalike.broker.metrics)

    def min_insync(self, topic: str) -> int:
        return self.topic_config(topic).min_insync_replicas

    # -- partition access ---------------------------------------------------------------

    def leader_partition(self, tp: TopicPartition, known_topic) -> Partition:
        part = self.partitions.get(tp)
        if part is None:
            if known_topic(tp[0]):
                raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            raise KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not part.is_leader:
            raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return part

    def local_partition(self, tp: TopicPartition, known_topic) -> Partition:
        """A replica hosted here, leader or follower (reads that may come from a follower)."""
        part = self.partitions.get(tp)
        if part is None:
            raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER if known_topic(tp[0])
                                     else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return part

    def leader_throttled(self, part: Partition, replica_id: int) -> bool:
        """Kafka's shouldLeaderThrottle: a throttled follower outside the ISR gets nothing
        while the leader's replication quota is used up."""
        quota = self.leader_quota
        return (quota is not None and replica_id >= 0 and replica_id not in part.isr
                and quota.is_throttled(part.topic, part.index) and quota.is_exceeded())

    def get_or_create_partition(self, tp: TopicPartition, is_new: bool) -> Partition:
        part = self.partitions.get(tp)
        if part is None:
            log_ = self.log_manager.get_or_create_log(tp, self.topic_config(tp[0]), is_new=is_new)
            part = Partition(tp[0], tp[1], self.broker_id, log_)
            self.partitions[tp] = part
        return part

    # -- produce ------------------------------------------------------------------------

    def append_records(self, entries: dict[TopicPartition, object], acks: int, timeout_ms: int,
                       known_topic, origin=None) -> defer.Deferred | dict[TopicPartition, ProduceResult]:
        now = self.time_ms()
        results: dict[TopicPartition, ProduceResult] = {}
        for tp, records in entries.items():
            try:
                part = self.leader_partition(tp, known_topic)
                info = part.append_as_leader(records, acks, self.min_insync(tp[0]), now, origin=origin)
                results[tp] = ProduceResult(ErrorCode.NONE, info.first_offset,
                                            info.log_append_time, part.log.log_start_offset,
                                            info.last_offset)
                self.stats.appended(tp[0], info.records_count, len(records))
                self.fetch_purgatory.check_and_complete(tp)
            except Exception as exc:  # each partition fails on its own
                code = error_for(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("Error appending to %s-%d", *tp)
                results[tp] = ProduceResult(code, message=str(exc) if code != ErrorCode.NONE else None,
                                            record_errors=getattr(exc, "record_errors", []))
                self.stats.append_failed(tp[0], code, len(records))
        if acks != -1 or not any(r.error == ErrorCode.NONE for r in results.values()):
            return results
        op = DelayedProduce(self, timeout_ms, results)
        d = self.produce_purgatory.try_complete_else_watch(op, list(results))
        # The records are in the log; the answer only waits for the high watermark. The
        # listener may then take the connection's next produce (kafkalike.broker.network).
        d.appended = True
        return d

    # -- fetch --------------------------------------------------------------------------

    def fetch(self, params: FetchParams, known_topic) -> defer.Deferred | dict:
        results = self.read(params, known_topic)
        if params.replica_id >= 0:
            self._record_follower_positions(params, results)
        total = sum(len(r.records) for r in results.values() if r.records)
        answer_now = any(r.error != ErrorCode.NONE or r.diverging is not None for r in results.values())
        if params.max_wait_ms <= 0 or total >= params.min_bytes or answer_now or not params.partitions:
            self.stats.fetched(params.replica_id, results)
            return results
        op = DelayedFetch(self, params, total)
        d = self.fetch_purgatory.try_complete_else_watch(op, list(params.partitions))
        d.addCallback(self._count_fetched, params.replica_id)
        return d

    def _count_fetched(self, results: dict, replica_id: int) -> dict:
        """A delayed fetch's answer counts in the fetch meters when it is given."""
        self.stats.fetched(replica_id, results)
        return results

    def _record_follower_positions(self, params: FetchParams, results: dict[TopicPartition, "FetchResult"]) -> None:
        """A follower's fetch offset is its log end, but only where the read succeeded.

        As Kafka 2.8 does, a partition whose read failed or found a diverging epoch
        keeps the follower's old position: that offset is the end of a log the leader
        does not share, and counting it would admit the follower to the ISR before it
        truncates (acknowledged records would then be lost if it were elected).
        """
        now = self.time_ms()
        for tp, spec in params.partitions.items():
            result = results[tp]
            if result.error != ErrorCode.NONE or result.diverging is not None:
                continue
            part = self.partitions.get(tp)
            if part is None or not part.is_leader:
                continue
            if part.update_follower_position(params.replica_id, spec.fetch_offset, now):
                self.on_high_watermark_moved(tp)
                result.high_watermark = part.high_watermark
            candidates = part.expansion_candidates()
            if candidates and self.alter_isr is not None:
                self.alter_isr.submit(part, part.isr + candidates)

    def shrink_isrs(self) -> None:
        """Drop followers that fell behind for replica.lag.time.max.ms (periodic)."""
        now = self.time_ms()
        lag = self.replica_lag_ms
        for part in list(self.partitions.values()):
            out = part.out_of_sync(now, lag)
            if out and self.alter_isr is not None:
                # Kafka 2.8's line (Partition.maybeShrinkIsr), which operators grep for.
                partition_log.info(
                    "[Partition %s-%d broker=%d] Shrinking ISR from %s to %s. Leader: (highWatermark: %d, "
                    "endOffset: %d). Out of sync replicas: %s.", part.topic, part.index, self.broker_id,
                    ",".join(map(str, part.isr)), ",".join(str(r) for r in part.isr if r not in out),
                    part.high_watermark, part.log.log_end_offset,
                    " ".join(f"(brokerId: {r}, endOffset: {part.followers[r].log_end_offset if r in part.followers else -1})"
                             for r in out))
                self.alter_isr.submit(part, [r for r in part.isr if r not in out])

    def on_high_watermark_moved(self, tp: TopicPartition) -> None:
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)

    def on_isr_updated(self, part: Partition, old_isr_size: int) -> None:
        """The controller accepted an ISR change (the AlterIsr sender's callback): a grown
        or shrunk ISR may move the high watermark, or complete acks=all produces."""
        if part.maybe_increment_high_watermark():
            self.on_high_watermark_moved(part.tp)
        else:
            self.produce_purgatory.check_and_complete(part.tp)
        self.stats.isr_changed(old_isr_size, len(part.isr))   # IsrExpands/ShrinksPerSec

    def read(self, params: FetchParams, known_topic=lambda t: True) -> dict[TopicPartition, FetchResult]:
        results: dict[TopicPartition, FetchResult] = {}
        budget = params.max_bytes
        first_batch_owed = True
        for tp, spec in params.partitions.items():
            try:
                if spec.max_bytes < 0:
                    results[tp] = self._refuse_negative_max_bytes(tp, spec)
                    continue
                part = (self.leader_partition(tp, known_topic) if params.leader_only
                        else self.local_partition(tp, known_topic))
                part.check_leader_epoch(spec.current_leader_epoch)
                diverging = part.diverging_epoch(spec.last_fetched_epoch, spec.fetch_offset)
                log_ = part.log
                if diverging is not None:
                    results[tp] = FetchResult(ErrorCode.NONE, part.high_watermark, log_.log_start_offset,
                                              b"", log_.log_end_offset, diverging, log_.last_stable_offset)
                    continue
                committed = params.isolation_level == READ_COMMITTED and params.replica_id < 0
                upper = part.fetch_upper_bound(params.replica_id, params.isolation_level)
                limit = min(spec.max_bytes, max(budget, 0))
                if self.leader_throttled(part, params.replica_id):
                    data = b""
                else:
                    # Where the batches lie, not their bytes: the listener sends them from
                    # the file (sendfile) or reads them when it encodes the answer.
                    data = log_.read_slice(spec.fetch_offset, limit, max_offset=upper,
                                           min_one_batch=first_batch_owed)
                if data:
                    first_batch_owed = params.hard_max_bytes_limit
                    budget -= len(data)
                    if params.replica_id >= 0 and self.leader_quota is not None \
                            and self.leader_quota.is_throttled(*tp):
                        self.leader_quota.record(len(data))
                aborted = None
                if committed:
                    # Transactions overlapping the range read: up to the LSO, which bounds it
                    # (Kafka bounds it tighter by an index lookup; extra entries are harmless,
                    # a consumer applies only those its records reach).
                    aborted = ([(t.producer_id, t.first_offset)
                                for t in log_.collect_aborted_transactions(spec.fetch_offset, upper)]
                               if data else [])
                results[tp] = FetchResult(ErrorCode.NONE, part.high_watermark, log_.log_start_offset, data,
                                          log_.log_end_offset, None, log_.last_stable_offset, aborted)
                if params.replica_id >= 0 and part.is_leader:
                    part.note_high_watermark_sent(params.replica_id)
            except Exception as exc:
                code = error_for(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("Error reading %s-%d", *tp)
                part = self.partitions.get(tp)
                hw = part.high_watermark if part is not None and part.is_leader else -1
                lso = part.log.log_start_offset if part is not None and part.is_leader else -1
                results[tp] = FetchResult(code, hw, lso, None)
        return results

    def _refuse_negative_max_bytes(self, tp: TopicPartition, spec: FetchSpec) -> FetchResult:
        """Kafka 2.8 answers UNKNOWN_SERVER_ERROR (its Log.read refuses a negative size) and
        logs a stack trace per request; we answer the same but log one line a minute, so a
        client cannot flood server.log."""
        now = self.time_ms()
        if now - self._negative_max_bytes_logged_ms >= 60_000:
            self._negative_max_bytes_logged_ms = now
            log.warning("Refusing fetches of %s-%d with a negative partition max bytes (%d): answered "
                        "UNKNOWN_SERVER_ERROR; more are not logged for a minute", tp[0], tp[1], spec.max_bytes)
        part = self.partitions.get(tp)
        lead = part is not None and part.is_leader
        return FetchResult(ErrorCode.UNKNOWN_SERVER_ERROR, part.high_watermark if lead else -1,
                           part.log.log_start_offset if lead else -1, None)

    @staticmethod
    def bytes_between(part: Partition, start: int, end: int) -> int:
        """Bytes readable in [start, end): enough for fetch.min.bytes accounting."""
        if start >= end:
            return 0
        return part.log.size_between(start, end)

    # -- the controller's orders: LeaderAndIsr and StopReplica ---------------------------

    async def become_leader_or_follower(self, controller_id: int, controller_epoch: int,
                                        topics: Sequence[tuple[str, Any, Sequence[Any]]],
                                        live_leaders: dict[int, tuple[str, int]],
                                        correlation_id: int = -1) -> dict[TopicPartition, ErrorCode]:
        """Apply LeaderAndIsr's partition states, given per topic as (name, topic id,
        states); answers the partitions that failed, with their error."""
        configs = self.topic_configs
        new_topics = sorted({t for t, _, _ in topics if not configs.loaded(t)})
        if new_topics:
            for topic, props in (await self.zk.get_topic_configs(new_topics)).items():
                configs.set_overrides(topic, props)
        # New replicas' log dirs and files are made on a thread, not the reactor (many at
        # once when a topic is created); the controller's next request waits for this one.
        new_logs = [((topic, s.partition_index), getattr(s, "is_new", False), configs.effective(topic))
                    for topic, _, states in topics for s in states
                    if self.broker_id in s.replicas and (topic, s.partition_index) not in self.partitions]
        if new_logs:
            await threads.deferToThread(self._create_logs, new_logs)
        outcome: dict[TopicPartition, ErrorCode] = {}
        now = self.time_ms()
        for topic, _topic_id, states in topics:
            for s in states:
                tp = (topic, s.partition_index)
                if self.broker_id not in s.replicas:
                    outcome[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                try:
                    part = self.get_or_create_partition(tp, getattr(s, "is_new", False))
                    # Kafka's makeLeaders: only a newly made leader is reported, so a leader
                    # epoch bump (an ISR shrink by the controller) never makes a coordinator
                    # reload a partition it serves, dropping the work it has in flight.
                    was_leader = part.is_leader
                    if s.leader == self.broker_id:
                        ok = part.make_leader(s, now)
                        role = "leader"
                        if ok:
                            self.fetchers.remove(tp)
                    else:
                        ok = part.make_follower(s)
                        role = "follower"
                        if ok:
                            self._follow(tp, s, live_leaders)
                    if not ok:
                        outcome[tp] = ErrorCode.STALE_CONTROLLER_EPOCH
                        continue
                    if self.on_leadership_change is not None and not (role == "leader" and was_leader):
                        self.on_leadership_change(topic, s.partition_index, role == "leader", s.leader_epoch)
                    state_log.info("[Broker id=%d] Handled LeaderAndIsr request correlationId %d from "
                                   "controller %d epoch %d: %s-%d is now %s with leader epoch %d, isr %s",
                                   self.broker_id, correlation_id, controller_id, controller_epoch,
                                   topic, s.partition_index, role, s.leader_epoch, list(s.isr))
                    self.on_high_watermark_moved(tp)
                except Exception:
                    log.exception("Error handling LeaderAndIsr for %s-%d", *tp)
                    outcome[tp] = ErrorCode.KAFKA_STORAGE_ERROR
        return outcome

    def _create_logs(self, items: list[tuple[TopicPartition, bool, LogConfig]]) -> None:
        """Runs on a thread. A failure is left for the reactor's own attempt to report."""
        for tp, is_new, config in items:
            try:
                self.log_manager.get_or_create_log(tp, config, is_new=is_new)
            except Exception:
                log.debug("Creating the log of %s-%d failed on the first attempt", *tp, exc_info=True)

    def _follow(self, tp: TopicPartition, state, leaders: dict[int, tuple[str, int]]) -> None:
        """Fetch from the new leader, found in the request's live leaders or our metadata."""
        self.fetchers.remove(tp)
        address = leaders.get(state.leader)
        if address is None:
            info = self.metadata.brokers.get(state.leader)
            ep = info.endpoint(self.inter_broker_listener) if info else None
            address = (ep.host, ep.port) if ep else None
        if address is None or state.leader < 0:
            state_log.info("[Broker id=%d] No live leader for %s-%d; not fetching", self.broker_id, *tp)
            return
        self.fetchers.add(tp, state.leader, address[0], address[1], state.leader_epoch)

    def stop_replicas(self, items: Sequence[tuple[str, int, bool]]) -> dict[TopicPartition, ErrorCode]:
        """StopReplica's (topic, partition, delete) items; answers the ones that failed."""
        errors: dict[TopicPartition, ErrorCode] = {}
        if any(delete for _, _, delete in items):
            heap_freezer.thaw()      # the deleted partitions' reference cycles go to the collector again
        for topic, partition, delete in items:
            self.fetchers.remove((topic, partition))
            try:
                self.remove_partition((topic, partition), delete)
                if self.on_leadership_change is not None:
                    self.on_leadership_change(topic, partition, False, None)
                if delete and not any(t == topic for t, _ in self.partitions):
                    self.topic_configs.set_overrides(topic, None)
                    self.stats.forget_topic(topic)
            except Exception:
                log.exception("Error stopping replica %s-%d", topic, partition)
                errors[(topic, partition)] = ErrorCode.KAFKA_STORAGE_ERROR
        return errors

    # -- lifecycle ----------------------------------------------------------------------

    def remove_partition(self, tp: TopicPartition, delete: bool) -> None:
        part = self.partitions.pop(tp, None)
        self.fetch_purgatory.check_and_complete(tp)
        self.produce_purgatory.check_and_complete(tp)
        if delete:
            self.log_manager.delete_log(tp)
        elif part is not None:
            part.leader_id = -1

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: p.high_watermark for tp, p in self.partitions.items()}

    def shutdown(self) -> None:
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
