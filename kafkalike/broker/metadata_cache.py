"""What this broker believes about the cluster, as the controller last told it.

Like Kafka's MetadataCache it is fed only by UpdateMetadata requests, never by reading
ZooKeeper, so every broker answers Metadata from the same controller-ordered view.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafkalike.protocol.errors import ErrorCode

NO_LEADER = -1


@dataclass(frozen=True)
class Endpoint:
    listener: str
    host: str
    port: int
    security_protocol: int = 0      # 0 = PLAINTEXT


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None

    def endpoint(self, listener: str) -> Endpoint | None:
        for e in self.endpoints:
            if e.listener == listener:
                return e
        return None


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int]
    offline_replicas: list[int] = field(default_factory=list)
    zk_version: int = 0
    controller_epoch: int = 0


class MetadataCache:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.controller_id = -1
        self.controller_epoch = -1
        self.brokers: dict[int, BrokerInfo] = {}
        self.partitions: dict[str, dict[int, PartitionInfo]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}

    # -- updates ----------------------------------------------------------------------

    def update(self, request, version: int) -> list[str]:
        """Apply an UpdateMetadata request; returns the topics that were deleted."""
        self.controller_id = request.controller_id
        self.controller_epoch = request.controller_epoch
        brokers = {}
        for b in request.live_brokers:
            if version == 0:
                eps = (Endpoint("PLAINTEXT", b.v0_host, b.v0_port),)
            else:
                eps = tuple(Endpoint(e.listener or "PLAINTEXT", e.host, e.port, e.security_protocol)
                            for e in b.endpoints)
            brokers[b.id] = BrokerInfo(b.id, eps, b.rack)
        self.brokers = brokers
        deleted = []
        if version >= 5:
            states = [(t.topic_name, getattr(t, "topic_id", None), p)
                      for t in request.topic_states for p in t.partition_states]
        else:
            states = [(p.topic_name, None, p) for p in request.ungrouped_partition_states]
        for topic, topic_id, p in states:
            if topic_id is not None and topic_id.int:
                self.topic_ids[topic] = topic_id
            if p.leader == -2:   # LeaderDuringDelete: the topic is going away
                self.partitions.get(topic, {}).pop(p.partition_index, None)
                if not self.partitions.get(topic):
                    self.partitions.pop(topic, None)
                    self.topic_ids.pop(topic, None)
                    deleted.append(topic)
                continue
            self.partitions.setdefault(topic, {})[p.partition_index] = PartitionInfo(
                topic, p.partition_index, p.leader, p.leader_epoch, list(p.isr), list(p.replicas),
                list(getattr(p, "offline_replicas", []) or []), p.zk_version, p.controller_epoch)
        return deleted

    # -- queries ----------------------------------------------------------------------

    def contains(self, topic: str) -> bool:
        return topic in self.partitions

    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.partitions.get(topic, {}).get(partition)

    def num_partitions(self, topic: str) -> int | None:
        parts = self.partitions.get(topic)
        return len(parts) if parts is not None else None

    def alive_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def broker_endpoints(self, listener: str) -> list[tuple[int, Endpoint, str | None]]:
        out = []
        for bid in sorted(self.brokers):
            b = self.brokers[bid]
            ep = b.endpoint(listener)
            if ep is not None:
                out.append((bid, ep, b.rack))
        return out

    def partition_error(self, info: PartitionInfo, listener: str) -> ErrorCode:
        """Kafka's per-partition Metadata error: leader missing or not on this listener."""
        if info.leader == NO_LEADER or info.leader not in self.brokers:
            return ErrorCode.LEADER_NOT_AVAILABLE
        if self.brokers[info.leader].endpoint(listener) is None:
            return ErrorCode.LISTENER_NOT_FOUND
        return ErrorCode.NONE
