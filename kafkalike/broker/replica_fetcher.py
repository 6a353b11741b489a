"""Followers copy their leaders' logs: one fetcher per source broker.

A fetcher long-polls the leader with Fetch v12 carrying this broker's id as replica id,
appends what comes back with the leader's offsets, and takes the leader's high
watermark. Divergence after a leader change is found the 2.7+ way: each request says
the epoch of the last batch we hold (last_fetched_epoch); when the leader's history
differs it answers with DivergingEpoch and we truncate to where the two agree before
fetching again, so replicas never keep a tail the leader does not have.

Each fetcher keeps an incremental fetch session with its leader (KIP-227), as Kafka's
ReplicaFetcherThread does through FetchSessionHandler: the first fetch lists every
partition, later ones only the partitions whose position (or epoch, or log start)
moved, and the leader answers only the partitions with news. A session error, a
malformed answer or a lost connection sends a full fetch next, which opens a new
session; a leader whose session cache is full answers session id 0 and the fetcher
keeps sending full fetches.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from twisted.internet import defer, task

from kafkalike.broker.replication_quota import ReplicationQuota
from kafkalike.common import outbound
from kafkalike.common.fetch_session_handler import FetchRequestData, FetchSessionHandler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchRequest

if TYPE_CHECKING:
    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.partition import Partition
    from kafkalike.broker.purgatory import Purgatory
    from kafkalike.metrics.stats import ReplicaStats

log = logging.getLogger("kafka.server.ReplicaFetcherThread")
FETCH_VERSION = 12

TopicPartition = tuple[str, int]


class FollowedReplicas(Protocol):
    """What the fetchers use of the ReplicaManager (which holds them, so they name it
    only by this shape): the hosted partitions, the bytes-replicated meter, and the fetch
    purgatory, where consumers reading a follower wait on its high watermark."""

    partitions: dict[TopicPartition, Partition]
    stats: ReplicaStats
    fetch_purgatory: Purgatory


@dataclass
class FetchState:
    fetch_offset: int
    leader_epoch: int
    in_sync: bool = False     # caught up with the leader's high watermark at the last answer
    lag: int = 0              # the leader's high watermark less our fetch offset, at the last answer
    delayed_until: float = 0.0    # reactor time before which it is left out of fetches (an error)


class ReplicaFetcher:
    def __init__(self, broker_id: int, config: KafkaConfig, reactor, replicas: FollowedReplicas, leader_id: int,
                 host: str, port: int, quota: ReplicationQuota | None = None):
        self.broker_id = broker_id
        self.reactor = reactor
        self.replicas = replicas
        self.quota = quota
        self.leader_id = leader_id
        self.host, self.port = host, port
        self.partitions: dict[TopicPartition, FetchState] = {}
        self.conn: outbound.OutboundConnection | None = None
        self.running = False
        self.stopped = False
        cfg = config
        self.max_wait_ms = cfg.get("replica.fetch.wait.max.ms")
        self.min_bytes = cfg.get("replica.fetch.min.bytes")
        self.max_bytes = cfg.get("replica.fetch.response.max.bytes")
        self.partition_max_bytes = cfg.get("replica.fetch.max.bytes")
        self.backoff_s = cfg.get("replica.fetch.backoff.ms") / 1000.0
        self.request_timeout_s = cfg.get("replica.socket.timeout.ms") / 1000.0
        self.name = f"ReplicaFetcherThread-0-{leader_id}"
        self.session: FetchSessionHandler[TopicPartition, tuple] = FetchSessionHandler()

    def add(self, tp: TopicPartition, state: FetchState) -> None:
        self.partitions[tp] = state
        if not self.running and not self.stopped:
            self.running = True
            defer.ensureDeferred(self._run()).addErrback(
                lambda f: log.error("[%s] stopped: %s", self.name, f.getTraceback()))

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    def stop(self) -> None:
        self.stopped = True
        self.partitions.clear()
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _closed(self, _ignored, conn) -> None:
        """Forget a connection the leader closed while we were idle (it stopped, or lost
        leadership and restarted): a request written to it would never be answered, and
        the fetcher would wait on it for good once partitions are added again."""
        if self.conn is conn:
            self.conn = None

    async def _run(self) -> None:
        reactor = self.reactor
        try:
            while self.partitions and not self.stopped:
                try:
                    if self.conn is None:
                        self.conn = await outbound.connect(self.host, self.port, f"broker-{self.broker_id}-fetcher-0",
                                                           reactor, timeout=5)
                        self.conn.closed.addCallback(self._closed, self.conn)
                        _no_delay(self.conn)
                    now = reactor.seconds()
                    sent = {tp: s for tp, s in self.partitions.items()
                            if s.delayed_until <= now and not self._held_back(tp, s)}
                    if not sent:      # every partition waits out an error or the throttle (as Kafka's)
                        await task.deferLater(reactor, self.backoff_s, lambda: None)
                        continue
                    data = self._session_request(sent)
                    # Kafka's replica.socket.timeout.ms: an answer lost on the way (the leader cut
                    # off, then back) must not hold every partition of this fetcher for good.
                    response = await self.conn.request(self._request(data), FETCH_VERSION).addTimeout(
                        self.request_timeout_s, reactor)
                except Exception as exc:
                    if self.stopped:
                        return
                    self.session.handle_error()
                    log.warning("[%s] Error in fetch from broker %d at %s:%d: %s", self.name,
                                self.leader_id, self.host, self.port, exc or type(exc).__name__)
                    if self.conn is not None:
                        self.conn.close()
                    self.conn = None
                    await task.deferLater(reactor, self.backoff_s, lambda: None)
                    continue
                answered = [(t.topic, p.partition) for t in response.responses for p in t.partition_responses]
                if not self.session.handle_response(response.error_code, response.session_id, answered,
                                                    response.throttle_time_ms > 0):
                    if response.error_code:
                        log.info("[%s] Node %d was unable to process the fetch request with (sessionId=%d, "
                                 "epoch=%d): %s.", self.name, self.leader_id, data.session_id, data.epoch,
                                 ErrorCode(response.error_code).name)
                    continue          # the next fetch is a full one
                self._process(sent, response)
        finally:
            self.running = False

    def _held_back(self, tp: TopicPartition, state: FetchState) -> bool:
        """Kafka's shouldFollowerThrottle: a throttled replica that is behind waits out a
        used-up follower quota; one in sync never does."""
        quota = self.quota
        return quota is not None and not state.in_sync and quota.is_throttled(*tp) and quota.is_exceeded()

    def _session_request(self, sent: dict[TopicPartition, FetchState]) -> FetchRequestData:
        """What this round's fetch lists: with a session, only what changed."""
        rm = self.replicas
        wanted = {}
        for tp, state in sent.items():
            part = rm.partitions.get(tp)
            last_epoch = part.log.leader_epoch_cache.latest_epoch if part is not None else None
            wanted[tp] = (state.fetch_offset, state.leader_epoch, -1 if last_epoch is None else last_epoch,
                          part.log.log_start_offset if part is not None else -1)
        return self.session.build(wanted)

    def _request(self, data: FetchRequestData) -> FetchRequest:
        by_topic: dict[str, list] = {}
        for (topic, p), (fetch_offset, leader_epoch, last_epoch, log_start) in data.to_send.items():
            by_topic.setdefault(topic, []).append(FetchRequest.FetchPartition(
                partition=p, current_leader_epoch=leader_epoch, fetch_offset=fetch_offset,
                last_fetched_epoch=last_epoch, log_start_offset=log_start,
                partition_max_bytes=self.partition_max_bytes))
        forgotten: dict[str, list[int]] = {}
        for topic, p in data.to_forget:
            forgotten.setdefault(topic, []).append(p)
        return FetchRequest(replica_id=self.broker_id, max_wait_ms=self.max_wait_ms,
                            min_bytes=self.min_bytes, max_bytes=self.max_bytes, isolation_level=0,
                            session_id=data.session_id, session_epoch=data.epoch,
                            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
                            forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=t, partitions=ps)
                                                   for t, ps in forgotten.items()])

    def _process(self, sent, response) -> None:
        """Apply one fetch response. A partition answered with an error sits out
        replica.fetch.backoff.ms while the others keep fetching, as in Kafka: one partition
        the leader no longer hosts (a topic deleted while this broker was away) must not
        slow the rest below the pace that keeps them in the ISR."""
        rm = self.replicas
        delayed_until = self.reactor.seconds() + self.backoff_s
        for topic_resp in response.responses:
            for pr in topic_resp.partition_responses:
                tp = (topic_resp.topic, pr.partition)
                state = self.partitions.get(tp)
                part = rm.partitions.get(tp)
                if state is None or part is None or state is not sent.get(tp):
                    continue          # removed or re-added while the request was out
                error = ErrorCode(pr.error_code)
                try:
                    if error == ErrorCode.NONE:
                        self._apply(tp, part, state, pr)
                        continue
                    if error == ErrorCode.OFFSET_OUT_OF_RANGE:
                        self._out_of_range(tp, part, state, pr)
                        continue
                    if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                        log.warning("[%s] Received UNKNOWN_TOPIC_OR_PARTITION from the leader for partition %s-%d. "
                                    "This error may be returned transiently when the partition is being created or "
                                    "deleted, but it is not expected to persist.", self.name, *tp)
                    elif error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   ErrorCode.UNKNOWN_LEADER_EPOCH):
                        # The leader moved or does not know yet: wait for the controller.
                        log.debug("[%s] Remote broker answered %s for partition %s-%d", self.name, error.name, *tp)
                    else:
                        log.warning("[%s] Error for partition %s-%d at offset %d: %s", self.name,
                                    tp[0], tp[1], state.fetch_offset, error.name)
                except Exception:
                    log.exception("[%s] Unexpected error processing %s-%d", self.name, *tp)
                state.delayed_until = delayed_until      # reached only by an error

    def _apply(self, tp, part, state: FetchState, pr) -> None:
        log_ = part.log
        diverging = pr.diverging_epoch
        if diverging.epoch >= 0:
            _, own_end = log_.end_offset_for_epoch(diverging.epoch)
            target = diverging.end_offset if own_end < 0 else min(diverging.end_offset, own_end)
            log.info("[%s] Truncating partition %s-%d to offset %d (leader epoch %d ends at %d there)",
                     self.name, tp[0], tp[1], target, diverging.epoch, diverging.end_offset)
            log_.truncate_to(max(target, log_.log_start_offset))
            state.fetch_offset = log_.log_end_offset
            return
        records = pr.record_set
        if records:
            info = log_.append_as_follower(records)
            self.replicas.stats.replicated_in(info.valid_bytes)
            if info.batch_count:
                state.fetch_offset = info.last_offset + 1
            if self.quota is not None and self.quota.is_throttled(*tp):
                self.quota.record(len(records))
        state.in_sync = state.fetch_offset >= pr.high_watermark
        # Kafka's fetcher lag (FetcherLagMetrics, whose maximum is MaxLag), set as its
        # processFetchRequest sets it: the high watermark less the next offset to fetch.
        state.lag = max(0, pr.high_watermark - state.fetch_offset)
        high_watermark = log_.high_watermark
        log_.update_high_watermark(min(pr.high_watermark, log_.log_end_offset))
        if log_.high_watermark != high_watermark:
            # Consumers reading this follower (Fetch v11+) wait on its high watermark.
            self.replicas.fetch_purgatory.check_and_complete(tp)
        if pr.log_start_offset > log_.log_start_offset:
            log_.maybe_increment_log_start_offset(min(pr.log_start_offset, log_.high_watermark))

    def _out_of_range(self, tp, part, state: FetchState, pr) -> None:
        """The leader's log starts after or ends before our position (KIP-101 rules)."""
        log_ = part.log
        leader_end = pr.high_watermark  # a lower bound of the leader's end offset
        if pr.log_start_offset >= 0 and state.fetch_offset < pr.log_start_offset:
            log.info("[%s] Partition %s-%d: our offset %d is below the leader's log start %d; "
                     "starting over there", self.name, tp[0], tp[1], state.fetch_offset, pr.log_start_offset)
            log_.truncate_fully_and_start_at(pr.log_start_offset)
        elif leader_end >= 0 and state.fetch_offset > leader_end:
            log_.truncate_to(leader_end)
        state.fetch_offset = log_.log_end_offset


def _no_delay(conn) -> None:
    """TCP_NODELAY, as Kafka's fetcher sockets: a fetch is written whole, and Nagle would
    hold it while the previous segment waits for a delayed ACK."""
    transport = getattr(conn, "transport", None)
    while transport is not None and not hasattr(transport, "setTcpNoDelay"):
        transport = getattr(transport, "transport", None)     # under TLS: the TCP transport below
    if transport is not None:
        try:
            transport.setTcpNoDelay(True)
        except OSError:
            pass


class ReplicaFetcherManager:
    """Made before the ReplicaManager, which hands it the partitions to follow; the
    composition root attaches that ReplicaManager (`attach`) before any is added."""

    def __init__(self, broker_id: int, config: KafkaConfig, reactor, quota: ReplicationQuota | None = None):
        self.broker_id = broker_id
        self.config = config
        self.reactor = reactor
        self.replicas: FollowedReplicas | None = None
        self.quota = quota           # the follower side of the replication throttle
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.stopped = False         # shut down: a LeaderAndIsr that comes after starts nothing

    def attach(self, replicas: FollowedReplicas) -> None:
        self.replicas = replicas

    def add(self, tp: TopicPartition, leader_id: int, host: str, port: int, leader_epoch: int) -> None:
        self.remove(tp)
        if self.stopped:
            return
        fetcher = self.fetchers.get(leader_id)
        if fetcher is not None and (fetcher.host, fetcher.port) != (host, port):
            fetcher.stop()
            fetcher = None
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = ReplicaFetcher(self.broker_id, self.config, self.reactor,
                                                                self.replicas, leader_id, host, port, self.quota)
        part = self.replicas.partitions[tp]
        fetcher.add(tp, FetchState(part.log.log_end_offset, leader_epoch))

    def remove(self, tp: TopicPartition) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove(tp)

    def max_lag(self) -> int:
        """Kafka's kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica: the
        largest lag, in offsets, of any partition this broker follows (0 with none)."""
        return max((state.lag for fetcher in list(self.fetchers.values())
                    for state in list(fetcher.partitions.values())), default=0)

    def shutdown(self) -> None:
        self.stopped = True
        for fetcher in self.fetchers.values():
            fetcher.stop()
        self.fetchers.clear()
