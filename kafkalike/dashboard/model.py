"""What one look at the cluster saw: plain values the pages render and the JSON view dumps.

A snapshot is taken on a worker thread and then only read, on the reactor, by the pages;
it is never changed after it is made, so no lock guards it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

UP = "up"
DOWN = "down"


@dataclass(frozen=True)
class BrokerRow:
    """A broker the dashboard knows of: live in the cluster's metadata or ZooKeeper, or seen before.

    status is `up` when it answered ApiVersions on this look, `down` otherwise; `registered`
    says whether /brokers/ids/<id> exists (None without --zookeeper), `in_metadata` whether
    the cluster's metadata still lists it (it does until ZooKeeper expires its session).
    """

    id: int
    host: str
    port: int
    rack: str | None
    status: str
    is_controller: bool
    in_metadata: bool
    registered: bool | None = None
    reason: str = ""


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    log_end_offset: int | None = None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        return self.leader is None


@dataclass(frozen=True)
class TopicRow:
    name: str
    internal: bool
    partitions: tuple[PartitionRow, ...]

    @property
    def under_replicated(self) -> int:
        return sum(1 for p in self.partitions if p.under_replicated)

    @property
    def offline(self) -> int:
        return sum(1 for p in self.partitions if p.offline)

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True)
class MemberRow:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class LagRow:
    """One partition of a group, as kafka-consumer-groups --describe shows it."""

    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None

    @property
    def lag(self) -> int | None:
        if self.current_offset is None or self.log_end_offset is None:
            return None
        return max(0, self.log_end_offset - self.current_offset)


@dataclass(frozen=True)
class GroupRow:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator: int | None
    members: tuple[MemberRow, ...]
    partitions: tuple[LagRow, ...]
    error: str = ""

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)


@dataclass(frozen=True)
class Snapshot:
    """One look at the cluster. `errors` are what could not be read this time, one line each."""

    taken_at: float
    duration: float
    cluster_id: str | None
    controller_id: int
    controller_epoch: int | None
    brokers: tuple[BrokerRow, ...]
    topics: tuple[TopicRow, ...]
    groups: tuple[GroupRow, ...]
    errors: tuple[str, ...] = ()
    counters: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def under_replicated(self) -> int:
        return sum(t.under_replicated for t in self.topics)

    @property
    def offline(self) -> int:
        return sum(t.offline for t in self.topics)

    def to_json(self) -> dict[str, Any]:
        """The snapshot as JSON-able data (the /snapshot.json view)."""
        data = dataclasses.asdict(self)
        for topic, row in zip(data["topics"], self.topics):
            topic["under_replicated"] = row.under_replicated
            for part, prow in zip(topic["partitions"], row.partitions):
                part["under_replicated"] = prow.under_replicated
        for group, grow in zip(data["groups"], self.groups):
            group["total_lag"] = grow.total_lag
            for part, lrow in zip(group["partitions"], grow.partitions):
                part["lag"] = lrow.lag
        return data
