"""Leaders propose ISR changes to the controller with AlterIsr (API 56, Kafka 2.8).

Proposals are batched per reactor turn and sent over one connection to the current
controller; one proposal per partition may be in flight. A request unanswered after
controller.socket.timeout.ms is sent again, over a new connection to whoever is
controller then. The controller answers with
the state it wrote (ISR and new zkVersion); a partition's error leaves it as it was
until the next LeaderAndIsr, and a refusal of the whole request is sent again, as
Kafka's AlterIsrManager does.

A proposal is fixed when it is made: the ISR with the leader epoch and zkVersion it was
made against (Kafka's AlterIsrItem). Read at send time instead, a proposal that waited
out a controller failover went to the new controller with the epoch and zkVersion of a
LeaderAndIsr that came since; the controller wrote an ISR the leader no longer proposed
and the leader's zkVersion fell behind it, so every later proposal was refused
(INVALID_UPDATE_VERSION) while producers got NOT_ENOUGH_REPLICAS.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from twisted.internet import defer, task

from kafkalike.common import outbound
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_isr import AlterIsrRequest

if TYPE_CHECKING:
    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.metadata_cache import MetadataCache
    from kafkalike.broker.partition import Partition

log = logging.getLogger("kafka.server.AlterIsrManager")
partition_log = logging.getLogger("kafka.cluster.Partition")
RETRY_BACKOFF_S = 0.5


@dataclass(frozen=True)
class Proposal:
    """An ISR change as the leader proposed it: `isr` is the very list the partition holds
    as pending_isr while the proposal stands, so a LeaderAndIsr that withdraws or replaces
    it is seen by identity."""
    isr: list[int]
    leader_epoch: int
    zk_version: int


class ControllerRefused(Exception):
    """The controller answered the whole AlterIsr with a top-level error."""


class AlterIsrManager:
    """Made before the ReplicaManager, which it reaches only through `on_isr_updated`
    (Kafka's per-item callback into the partition): called with the partition and its old
    ISR size once the controller's ISR is in place; and `on_isr_failed`, called with the
    partition when the controller refused its change (Kafka's FailedIsrUpdatesPerSec)."""

    def __init__(self, broker_id: int, reactor, metadata: MetadataCache, config: KafkaConfig,
                 broker_epoch: Callable[[], int], is_shutting_down: Callable[[], bool],
                 on_isr_updated: Callable[[Partition, int], None],
                 on_isr_failed: Callable[[Partition], None] = lambda part: None):
        self.broker_id = broker_id
        self.reactor = reactor
        self.metadata = metadata
        self.config = config
        self.broker_epoch = broker_epoch
        self.is_shutting_down = is_shutting_down
        self.on_isr_updated = on_isr_updated
        self.on_isr_failed = on_isr_failed
        self.unsent: dict[tuple[str, int], object] = {}
        self.conn: outbound.OutboundConnection | None = None
        self.conn_to: int | None = None
        self.sending = False

    def submit(self, partition, new_isr: list[int]) -> bool:
        """Propose `new_isr` for a partition this broker leads; False if one is pending."""
        if partition.pending_isr is not None or sorted(new_isr) == sorted(partition.isr):
            return False
        partition.pending_isr = list(new_isr)
        self.unsent[partition.tp] = (partition, Proposal(partition.pending_isr, partition.leader_epoch,
                                                         partition.zk_version))
        log.info("[Partition %s-%d broker=%d] Proposing ISR change from %s to %s", partition.topic,
                 partition.index, self.broker_id, partition.isr, new_isr)
        if not self.sending:
            self.sending = True
            self.reactor.callLater(0, lambda: defer.ensureDeferred(self._send_loop()))
        return True

    async def _send_loop(self) -> None:
        try:
            while self.unsent and not self.is_shutting_down():
                # A LeaderAndIsr since the proposal (leadership moved, or the controller
                # wrote the ISR itself) withdrew it: it is not sent again.
                batch = {tp: item for tp, item in self.unsent.items() if item[0].pending_isr is item[1].isr}
                self.unsent = {}
                if not batch:
                    break
                try:
                    response = await self._send(batch)
                except Exception as exc:
                    log.warning("AlterIsr to the controller failed (%s: %s); retrying", type(exc).__name__, exc)
                    if self.conn is not None:
                        self.conn.close()
                    self.conn, self.conn_to = None, None
                    for tp, item in batch.items():
                        self.unsent.setdefault(tp, item)
                    await task.deferLater(self.reactor, RETRY_BACKOFF_S, lambda: None)
                    continue
                self._apply(batch, response)
        finally:
            self.sending = False

    async def _send(self, batch):
        controller = self.metadata.controller_id
        info = self.metadata.brokers.get(controller)
        ep = info.endpoint(self.config.inter_broker_listener_name) if info else None
        if ep is None:
            raise ConnectionError("no controller known")
        if self.conn is None or self.conn_to != controller:
            if self.conn is not None:
                self.conn.close()
            self.conn = await outbound.connect(ep.host, ep.port, f"broker-{self.broker_id}-alter-isr",
                                               self.reactor, timeout=5)
            self.conn_to = controller
            # A controller that stops (or restarts on the same address) closes this
            # connection between proposals; a request written to it afterwards would wait
            # forever and hold every later ISR change behind it.
            self.conn.closed.addCallback(self._closed, self.conn)
        topics: dict[str, list] = {}
        for (topic, p), (_, proposal) in batch.items():
            topics.setdefault(topic, []).append(AlterIsrRequest.PartitionData(
                partition_index=p, leader_epoch=proposal.leader_epoch, new_isr=list(proposal.isr),
                current_isr_version=proposal.zk_version))
        request = AlterIsrRequest(broker_id=self.broker_id, broker_epoch=self.broker_epoch(),
                                  topics=[AlterIsrRequest.TopicData(name=t, partitions=ps)
                                          for t, ps in topics.items()])
        # A controller that never answers (a handler that failed, a paused process) must not
        # hold every later ISR change: give up after controller.socket.timeout.ms, find the
        # controller again and propose again, as Kafka's AlterIsr channel does.
        answer = self.conn.request(request, 0)
        answer.addTimeout(self.config.get("controller.socket.timeout.ms") / 1000, self.reactor)
        response = await answer
        if response.error_code:
            # NOT_CONTROLLER (it resigned) or STALE_BROKER_EPOCH (it has not seen this
            # broker's registration yet): the whole proposal goes again, to whoever is
            # controller by then.
            raise ControllerRefused(ErrorCode(response.error_code).name)
        return response

    def _apply(self, batch, response) -> None:
        results = {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}
        for tp, (part, proposal) in batch.items():
            standing = part.pending_isr is proposal.isr
            if standing:
                part.pending_isr = None
            result = results.get(tp)
            code = ErrorCode(result.error_code if result else ErrorCode.UNKNOWN_SERVER_ERROR)
            if code != ErrorCode.NONE:
                if standing:
                    log.info("[Partition %s-%d] Controller rejected ISR change: %s", tp[0], tp[1], code.name)
                    self.on_isr_failed(part)
                continue
            # The controller's answer is its state as of now. A LeaderAndIsr of the same
            # leader epoch may have overtaken it (Kafka would ignore the answer then), but
            # only one with a newer zkVersion is newer than the answer.
            if result.leader_epoch != part.leader_epoch or result.current_isr_version <= part.zk_version:
                continue
            old_size = len(part.isr)
            part.isr = list(result.isr)
            part.zk_version = result.current_isr_version
            partition_log.info("[Partition %s-%d broker=%d] ISR updated to %s and version updated to [%d]",   # Kafka 2.8's
                               tp[0], tp[1], self.broker_id, ",".join(map(str, part.isr)), part.zk_version)
            self.on_isr_updated(part, old_size)

    def _closed(self, _ignored, conn) -> None:
        if self.conn is conn:
            self.conn, self.conn_to = None, None

    def shutdown(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
