"""kafka-topics --describe: the topic and partition lines, and which of them to print.

The line formats are Kafka 2.8's TopicDescription and PartitionDescription, TopicId
included. Two orders come from Java hash maps, not from any sorting, and are
reproduced here: the AdminClient hands topic descriptions back in a HashMap, and
Java's admin Config keeps its entries in one.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Sequence

from kafkalike.cli.topics_options import ParsedArgs
from kafkalike.client.admin import PartitionReassignment
from kafkalike.zkdata.ids import uuid_to_base64
from kafkalike.zkdata.kafka_json import java_string_hash


@dataclass(frozen=True)
class TopicView:
    """The topic line of --describe (Kafka's TopicDescription.printDescription)."""

    topic: str
    topic_id: uuid.UUID | None
    partition_count: int
    replication_factor: int
    configs: tuple[tuple[str, str | None], ...] = ()
    marked_for_deletion: bool = False


def format_topic(view: TopicView) -> str:
    configs = ",".join(f"{k}={'null' if v is None else v}" for k, v in view.configs)
    line = f"Topic: {view.topic}"
    if view.topic_id is not None and view.topic_id.int != 0:
        line += f"\tTopicId: {uuid_to_base64(view.topic_id)}"
    line += f"\tPartitionCount: {view.partition_count}\tReplicationFactor: {view.replication_factor}"
    line += f"\tConfigs: {configs}"
    return line + ("\tMarkedForDeletion: true" if view.marked_for_deletion else "")


@dataclass(frozen=True)
class PartitionView:
    """One partition line of --describe and the facts the report options filter on."""

    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    reassignment: PartitionReassignment | None = None
    marked_for_deletion: bool = False
    min_isr: int | None = None

    @property
    def replication_factor(self) -> int:
        """While a reassignment is under way, the replicas that are not being added."""
        ra = self.reassignment
        if ra is not None and set(self.replicas) & (set(ra.adding_replicas) | set(ra.removing_replicas)):
            remaining = list(ra.replicas)
            for replica in ra.adding_replicas:
                if replica in remaining:
                    remaining.remove(replica)
            return len(remaining)
        return len(self.replicas)

    @property
    def under_replicated(self) -> bool:
        return self.replication_factor - len(self.isr) > 0

    @property
    def under_min_isr(self) -> bool:
        return self.leader is None or (self.min_isr is not None and len(self.isr) < self.min_isr)

    @property
    def at_min_isr(self) -> bool:
        return self.min_isr is not None and len(self.isr) == self.min_isr

    def unavailable(self, live_brokers: set[int]) -> bool:
        return self.leader is None or self.leader not in live_brokers


def format_partition(view: PartitionView) -> str:
    line = (f"\tTopic: {view.topic}\tPartition: {view.partition}"
            f"\tLeader: {'none' if view.leader is None else view.leader}"
            f"\tReplicas: {','.join(map(str, view.replicas))}\tIsr: {','.join(map(str, view.isr))}")
    if view.reassignment is not None:
        line += (f"\tAdding Replicas: {','.join(map(str, view.reassignment.adding_replicas))}"
                 f"\tRemoving Replicas: {','.join(map(str, view.reassignment.removing_replicas))}")
    return line + ("\tMarkedForDeletion: true" if view.marked_for_deletion else "")


@dataclass(frozen=True)
class DescribeFilter:
    """Which lines --describe prints, given the report options (Kafka's DescribeOptions)."""

    under_replicated: bool = False
    unavailable: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False
    overrides_only: bool = False

    @classmethod
    def from_args(cls, args: ParsedArgs) -> DescribeFilter:
        return cls(args.has("under-replicated-partitions"), args.has("unavailable-partitions"),
                   args.has("under-min-isr-partitions"), args.has("at-min-isr-partitions"),
                   args.has("topics-with-overrides"))

    @property
    def describe_configs(self) -> bool:
        return not (self.under_replicated or self.unavailable or self.under_min_isr or self.at_min_isr)

    @property
    def describe_partitions(self) -> bool:
        return not self.overrides_only

    def shows_topic(self, has_overrides: bool) -> bool:
        return self.describe_configs and (not self.overrides_only or has_overrides)

    def shows_partition(self, view: PartitionView, live_brokers: set[int]) -> bool:
        return (self.describe_configs
                or (self.under_replicated and view.under_replicated)
                or (self.unavailable and view.unavailable(live_brokers))
                or (self.under_min_isr and view.under_min_isr)
                or (self.at_min_isr and view.at_min_isr))


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size *= 2
    return size


def _grown(entries: int, capacity: int) -> int:
    while entries > int(capacity * 0.75):
        capacity *= 2
    return capacity


def _java_hash_map_order(keys: Sequence[str], capacity: int) -> list[str]:
    """Iteration order of a java.util.HashMap with this table size, filled in the given order."""
    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(keys, key=bucket)


def admin_describe_order(topics: Sequence[str]) -> list[str]:
    """The order DescribeTopicsResult.all() yields topics in: a HashMap(n) filled from a HashMap copy."""
    n = len(topics)
    copy = _java_hash_map_order(sorted(topics), _grown(n, _table_size_for(int(n / 0.75 + 1))))
    return _java_hash_map_order(copy, _grown(n, _table_size_for(n)))


def config_order(names: Sequence[str]) -> list[str]:
    """The order of Java's admin Config.entries(): a default HashMap filled in the given order."""
    return _java_hash_map_order(list(names), _grown(len(names), 16))
