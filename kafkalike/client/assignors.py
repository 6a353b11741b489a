"""Partition assignors for the "consumer" group protocol: range, roundrobin, sticky, cooperative-sticky.

The group leader runs one of these over every member's subscription; members in other
languages may be the leader instead, so what matters is that the names and the
subscription/assignment bytes are Kafka's (see encode_subscription and friends), and
that range and roundrobin place partitions exactly as Java's assignors do: members are
ordered by group.instance.id when both have one, else by member id.

The sticky assignors keep every partition with its current owner while that keeps the
group balanced (counts differ by at most one among members that could take it), then
hand out the rest to the least loaded members. cooperative-sticky computes the same
target but never gives a partition to a new owner in the same rebalance it is taken
from the old one: it is only revoked then, and assigned in the follow-up rebalance
(KIP-429), so no partition is ever read by two members at once.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Mapping

from kafkalike.client.metadata import TopicPartition
from kafkalike.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

EAGER, COOPERATIVE = "EAGER", "COOPERATIVE"
_VERSION = struct.Struct(">h")
_SUBSCRIPTION_VERSION = 1


@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    group_instance_id: str | None = None


def _grouped(partitions) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def encode_subscription(sub: Subscription) -> bytes:
    data = ConsumerProtocolSubscription(
        topics=list(sub.topics), user_data=sub.user_data,
        owned_partitions=[ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
                          for t, ps in _grouped(sub.owned_partitions).items()])
    return _VERSION.pack(_SUBSCRIPTION_VERSION) + data.encode(_SUBSCRIPTION_VERSION)


def decode_subscription(blob: bytes, group_instance_id: str | None = None) -> Subscription:
    """Any version: fields added by versions above ours are after ours, so read what we know."""
    version = _VERSION.unpack_from(blob, 0)[0]
    data = ConsumerProtocolSubscription.decode(blob, min(max(version, 0), 1), pos=2)
    owned = [TopicPartition(t.topic, p) for t in (data.owned_partitions or []) for p in t.partitions]
    return Subscription(list(data.topics), data.user_data, owned, group_instance_id)


def encode_assignment(partitions, user_data: bytes | None = None) -> bytes:
    data = ConsumerProtocolAssignment(
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=ps)
                             for t, ps in _grouped(partitions).items()], user_data=user_data)
    return _VERSION.pack(_SUBSCRIPTION_VERSION) + data.encode(_SUBSCRIPTION_VERSION)


def decode_assignment(blob: bytes) -> list[TopicPartition]:
    if not blob:
        return []  # a member the leader left out gets an empty assignment
    version = _VERSION.unpack_from(blob, 0)[0]
    data = ConsumerProtocolAssignment.decode(blob, min(max(version, 0), 1), pos=2)
    return [TopicPartition(t.topic, p) for t in data.assigned_partitions for p in t.partitions]


def _member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Java's MemberInfo order: by group.instance.id when both have one, else by member id."""
    import functools

    def compare(a: str, b: str) -> int:
        ia, ib = subscriptions[a].group_instance_id, subscriptions[b].group_instance_id
        if ia is not None and ib is not None:
            return (ia > ib) - (ia < ib)
        return (a > b) - (a < b)
    return sorted(subscriptions, key=functools.cmp_to_key(compare))


Assignment = dict[str, list[TopicPartition]]


class RangeAssignor:
    """Per topic, consecutive ranges of partitions; the first members get one extra."""

    name = "range"
    protocols = (EAGER,)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> Assignment:
        out: Assignment = {m: [] for m in subscriptions}
        order = _member_order(subscriptions)
        for topic in sorted({t for s in subscriptions.values() for t in s.topics}):
            count = partitions_per_topic.get(topic)
            if not count:
                continue
            members = [m for m in order if topic in subscriptions[m].topics]
            per, extra = divmod(count, len(members))
            for i, member in enumerate(members):
                start = per * i + min(i, extra)
                length = per + (1 if i < extra else 0)
                out[member].extend(TopicPartition(topic, p) for p in range(start, start + length))
        return out


class RoundRobinAssignor:
    """All partitions in topic order, dealt in turn to the members subscribed to each."""

    name = "roundrobin"
    protocols = (EAGER,)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> Assignment:
        out: Assignment = {m: [] for m in subscriptions}
        order = _member_order(subscriptions)
        if not order:
            return out
        topics = sorted({t for s in subscriptions.values() for t in s.topics if partitions_per_topic.get(t)})
        turn = 0
        for topic in topics:
            for partition in range(partitions_per_topic[topic]):
                for _ in range(len(order)):
                    member = order[turn % len(order)]
                    turn += 1
                    if topic in subscriptions[member].topics:
                        out[member].append(TopicPartition(topic, partition))
                        break
        return out


class StickyAssignor:
    """Balanced like roundrobin, but moving as few partitions as possible between rebalances."""

    name = "sticky"
    protocols = (EAGER,)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> Assignment:
        order = _member_order(subscriptions)
        rank = {m: i for i, m in enumerate(order)}
        out: Assignment = {m: [] for m in order}
        eligible: dict[TopicPartition, list[str]] = {}
        for topic in sorted({t for s in subscriptions.values() for t in s.topics}):
            members = [m for m in order if topic in subscriptions[m].topics]
            for p in range(partitions_per_topic.get(topic, 0)):
                eligible[TopicPartition(topic, p)] = members
        claimed: set[TopicPartition] = set()
        for member in order:
            for tp in sorted(set(subscriptions[member].owned_partitions)):
                if tp in eligible and member in eligible[tp] and tp not in claimed:
                    out[member].append(tp)
                    claimed.add(tp)
        # Nobody keeps more than its fair share when others subscribe to the same partitions.
        total = len(eligible)
        if order:
            ceiling = -(-total // len(order))
            for member in order:
                if len(out[member]) > ceiling and all(len(eligible[tp]) == len(order) for tp in out[member]):
                    for tp in out[member][ceiling:]:
                        claimed.discard(tp)
                    out[member] = out[member][:ceiling]
        for tp in sorted(eligible):
            if tp in claimed or not eligible[tp]:
                continue
            target = min(eligible[tp], key=lambda m: (len(out[m]), rank[m]))
            out[target].append(tp)
        self._balance(out, eligible, rank)
        return {m: sorted(tps) for m, tps in out.items()}

    @staticmethod
    def _balance(out: Assignment, eligible: Mapping[TopicPartition, list[str]], rank: Mapping[str, int]) -> None:
        """Move partitions from the most to the least loaded eligible member until none can move."""
        moved = True
        while moved:
            moved = False
            for member in sorted(out, key=lambda m: (-len(out[m]), rank[m])):
                for tp in sorted(out[member], reverse=True):
                    candidates = [m for m in eligible[tp] if len(out[m]) + 1 < len(out[member])]
                    if candidates:
                        target = min(candidates, key=lambda m: (len(out[m]), rank[m]))
                        out[member].remove(tp)
                        out[target].append(tp)
                        moved = True
                        break
                if moved:
                    break


class CooperativeStickyAssignor(StickyAssignor):
    """The sticky target, minus partitions that change owner in this rebalance (KIP-429)."""

    name = "cooperative-sticky"
    protocols = (COOPERATIVE, EAGER)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> Assignment:
        target = super().assign(partitions_per_topic, subscriptions)
        owner = {tp: m for m, s in subscriptions.items() for tp in s.owned_partitions}
        return {m: [tp for tp in tps if owner.get(tp, m) == m] for m, tps in target.items()}


ASSIGNORS = {cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)}
_JAVA_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def resolve_assignors(specs) -> list:
    """partition.assignment.strategy entries (short names, Java class names or objects) to assignors."""
    out = []
    for spec in specs:
        if isinstance(spec, str):
            name = _JAVA_NAMES.get(spec.strip(), spec.strip())
            if name not in ASSIGNORS:
                from kafkalike.client.errors import ConfigError
                raise ConfigError(f"Invalid value {spec} for configuration partition.assignment.strategy: "
                                  f"unknown assignor; known are {', '.join(ASSIGNORS)}")
            out.append(ASSIGNORS[name]())
        elif isinstance(spec, type):
            out.append(spec())
        else:
            out.append(spec)
    return out


__all__ = ["ASSIGNORS", "COOPERATIVE", "CooperativeStickyAssignor", "EAGER", "RangeAssignor", "RoundRobinAssignor",
           "StickyAssignor", "Subscription", "decode_assignment", "decode_subscription", "encode_assignment",
           "encode_subscription", "resolve_assignors"]
