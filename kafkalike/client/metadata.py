"""The producer's view of the cluster: an immutable Cluster snapshot plus the refresh logic.

User threads read the current snapshot on every send without a lock (the attribute is
swapped whole by the sender thread), and block on a condition only while a topic they
need is missing. Refreshes happen on demand (a new topic, an unknown leader, a
NOT_LEADER_OR_FOLLOWER answer, a lost connection), at most once per retry.backoff.ms,
and otherwise every metadata.max.age.ms, as Java's Metadata does. Topics the producer
has not used for metadata.max.idle.ms are dropped from the refresh set.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from kafkalike.client.errors import (
    IllegalStateError,
    InvalidTopicError,
    KafkaTimeoutError,
    TopicAuthorizationError,
)
from kafkalike.protocol.errors import ErrorCode


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Node:
    id: int
    host: str
    port: int
    rack: str | None = None

    def __str__(self) -> str:  # Java's Node.toString, which log lines print
        return f"{self.host}:{self.port} (id: {self.id} rack: {'null' if self.rack is None else self.rack})"


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int | None  # broker id, None while the partition has no live leader
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    leader_epoch: int = -1


@dataclass(frozen=True)
class TopicView:
    """One topic's partitions, with the lists partitioners need precomputed."""

    partitions: tuple[PartitionInfo, ...]
    available: tuple[PartitionInfo, ...]
    available_ids: tuple[int, ...]
    leaders: dict[int, "int | None"]

    @classmethod
    def of(cls, partitions: Iterable[PartitionInfo]) -> "TopicView":
        ordered = tuple(sorted(partitions, key=lambda p: p.partition))
        available = tuple(p for p in ordered if p.leader is not None)
        return cls(ordered, available, tuple(p.partition for p in available),
                   {p.partition: p.leader for p in ordered})


@dataclass(frozen=True)
class Cluster:
    """What the producer knows at one moment; never mutated, only replaced."""

    nodes: dict[int, Node] = field(default_factory=dict)
    topics: dict[str, TopicView] = field(default_factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1
    bootstrap: bool = False

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        view = self.topics.get(topic)
        return list(view.partitions) if view else []

    def available_partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        view = self.topics.get(topic)
        return list(view.available) if view else []

    def partition_count(self, topic: str) -> int | None:
        view = self.topics.get(topic)
        return len(view.partitions) if view else None

    def leader_for(self, topic: str, partition: int) -> int | None:
        view = self.topics.get(topic)
        return None if view is None else view.leaders.get(partition)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        view = self.topics.get(topic)
        if view is None:
            return None
        for info in view.partitions:
            if info.partition == partition:
                return info
        return None


def bootstrap_cluster(addresses: list[tuple[str, int]]) -> Cluster:
    """Bootstrap servers as nodes -1, -2, ... (Java's ids for them) and no topics."""
    nodes = {-(i + 1): Node(-(i + 1), host, port) for i, (host, port) in enumerate(addresses)}
    return Cluster(nodes=nodes, bootstrap=True)


class Metadata:
    """The current Cluster and when to refresh it; shared by user threads and the sender."""

    def __init__(self, bootstrap: list[tuple[str, int]], *, retry_backoff_ms: int = 100,
                 max_age_ms: int = 300000, max_idle_ms: int = 300000) -> None:
        self.cluster = bootstrap_cluster(bootstrap)
        self.retry_backoff = retry_backoff_ms / 1000
        self.max_age = max_age_ms / 1000
        self.max_idle = max_idle_ms / 1000
        self._cond = threading.Condition()
        self._topics: dict[str, float] = {}  # topic -> last time a user asked for it
        self._version = 0
        self._need_update = True
        self._last_refresh = 0.0   # last attempt, successful or not
        self._last_success = 0.0
        self._fatal: dict[str, Exception] = {}
        self._closed = False

    # -- what user threads do ----------------------------------------------------------

    def add_topic(self, topic: str, now: float) -> bool:
        """Keep `topic` in the refresh set; True when it is new (a refresh is then due)."""
        with self._cond:
            new = topic not in self._topics
            self._topics[topic] = now
            if new:
                self._need_update = True
            return new

    def touch(self, topic: str, now: float) -> None:
        self._topics[topic] = now

    def request_update(self) -> int:
        with self._cond:
            self._need_update = True
            return self._version

    def await_update(self, last_version: int, timeout: float) -> None:
        """Block until a metadata response newer than `last_version` arrives."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._version <= last_version:
                if self._closed:
                    raise IllegalStateError("Producer closed while waiting for metadata")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise KafkaTimeoutError(f"Failed to update metadata after {int(timeout * 1000)} ms.")
                self._cond.wait(remaining)

    def raise_if_fatal(self, topic: str) -> None:
        """Errors that waiting cannot fix: an invalid or forbidden topic."""
        error = self._fatal.get(topic)
        if error is not None:
            raise error

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- what the sender does ----------------------------------------------------------

    @property
    def version(self) -> int:
        return self._version

    def topics(self, now: float) -> list[str]:
        """Topics to ask about, after dropping those idle longer than metadata.max.idle.ms."""
        with self._cond:
            # touch() writes without the lock; a C-level copy of the items cannot see a resize.
            idle = [t for t, used in list(self._topics.items()) if now - used > self.max_idle]
            for topic in idle:
                self._topics.pop(topic, None)
            return list(self._topics)

    def time_to_next_update(self, now: float) -> float:
        """Seconds until a refresh is due: 0 when one was asked for and the backoff has passed."""
        backoff_left = self._last_refresh + self.retry_backoff - now
        if self._need_update:
            return max(backoff_left, 0.0)
        return max(self._last_success + self.max_age - now, backoff_left, 0.0)

    def attempted(self, now: float) -> None:
        self._last_refresh = now

    def failed(self, now: float) -> None:
        with self._cond:
            self._last_refresh = now
            self._need_update = True

    def update(self, response, now: float) -> dict[str, ErrorCode]:
        """Install a Metadata response; returns topics that came back with an error."""
        nodes = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
        old = self.cluster
        topics: dict[str, TopicView] = {}
        errors: dict[str, ErrorCode] = {}
        fatal: dict[str, Exception] = {}
        for t in response.topics:
            code = ErrorCode(t.error_code) if t.error_code in ErrorCode._value2member_map_ else ErrorCode.UNKNOWN_SERVER_ERROR
            if code != ErrorCode.NONE:
                errors[t.name] = code
                if code == ErrorCode.INVALID_TOPIC_EXCEPTION:
                    fatal[t.name] = InvalidTopicError(f"Invalid topics: [{t.name}]")
                elif code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                    fatal[t.name] = TopicAuthorizationError(f"Not authorized to access topics: [{t.name}]")
                continue
            partitions = []
            previous = old.topics.get(t.name)
            for p in t.partitions:
                leader = p.leader_id if p.leader_id >= 0 and p.leader_id in nodes else None
                info = PartitionInfo(t.name, p.partition_index, leader, tuple(p.replica_nodes),
                                     tuple(p.isr_nodes), tuple(p.offline_replicas or ()), p.leader_epoch)
                # A broker with an older view must not move a leader back (KIP-320).
                if previous is not None and p.leader_epoch >= 0:
                    known = next((q for q in previous.partitions if q.partition == p.partition_index), None)
                    if known is not None and known.leader_epoch > p.leader_epoch and known.leader in nodes:
                        info = known
                partitions.append(info)
            if any(p.error_code == ErrorCode.LEADER_NOT_AVAILABLE for p in t.partitions):
                errors.setdefault(t.name, ErrorCode.LEADER_NOT_AVAILABLE)
            topics[t.name] = TopicView.of(partitions)
        with self._cond:
            self.cluster = Cluster(nodes, topics, response.cluster_id, response.controller_id)
            self._fatal = fatal
            self._version += 1
            self._need_update = False
            self._last_refresh = self._last_success = now
            self._cond.notify_all()
        return errors


__all__ = ["Cluster", "Metadata", "Node", "PartitionInfo", "TopicPartition", "TopicView", "bootstrap_cluster"]
