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

import logging

from kafkalike.client.metadata import TopicPartition
from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.messages.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    StickyAssignorUserData,
)

log = logging.getLogger("kafkalike.client.assignors")

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


def encode_sticky_user_data(partitions, generation: int) -> bytes:
    """Java StickyAssignor's user data, version 1: the last assignment and its generation."""
    return StickyAssignorUserData(
        previous_assignment=[StickyAssignorUserData.TopicPartition(topic=t, partitions=ps)
                             for t, ps in _grouped(partitions).items()],
        generation=generation).encode(1)


def decode_sticky_user_data(blob: bytes | None) -> tuple[list[TopicPartition], int | None]:
    """(previous assignment, generation or None); version 0 blobs (no generation) are read too."""
    if not blob:
        return [], None
    for version in (1, 0):
        try:
            data = StickyAssignorUserData.decode(blob, version)
        except ProtocolDecodeError:
            continue
        generation = data.generation if version == 1 else None
        return [TopicPartition(t.topic, p) for t in data.previous_assignment for p in t.partitions], generation
    log.warning("Ignoring sticky assignor user data that is in neither of Java's formats")
    return [], None


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
    """Balanced like roundrobin, but moving as few partitions as possible between rebalances.

    Eager members own nothing when they rejoin (they revoked everything first), so, as in
    Java, each member remembers its last assignment and generation and sends them as
    subscription user data in StickyAssignor's format; Java, kafka-python and aiokafka
    members do the same, so stickiness holds whoever leads a mixed group.
    """

    name = "sticky"
    protocols = (EAGER,)

    def __init__(self) -> None:
        self._last: list[TopicPartition] | None = None
        self._generation = -1

    def on_assignment(self, partitions: list[TopicPartition], generation: int) -> None:
        self._last, self._generation = list(partitions), generation

    def subscription_user_data(self, topics: list[str]) -> bytes | None:
        return None if self._last is None else encode_sticky_user_data(self._last, self._generation)

    @staticmethod
    def member_claims(subscription: Subscription) -> tuple[list[TopicPartition], int | None]:
        """What a member says it owned, and in which generation (None: unknown)."""
        return decode_sticky_user_data(subscription.user_data)

    def _current_owners(self, subscriptions: Mapping[str, Subscription]) -> dict[TopicPartition, str]:
        """Each partition's previous owner: the claim from the newest generation wins; two
        claims from one generation cancel out (one of them is stale), as Java resolves them."""
        best: dict[TopicPartition, tuple[int, str | None]] = {}
        for member, subscription in subscriptions.items():
            partitions, generation = self.member_claims(subscription)
            generation = -1 if generation is None else generation
            for tp in set(partitions):
                if tp not in best or generation > best[tp][0]:
                    best[tp] = (generation, member)
                elif generation == best[tp][0]:
                    log.error("Found multiple consumers %s and %s claiming the same TopicPartition %s in the "
                              "same generation %d; neither keeps it", best[tp][1], member, tp, generation)
                    best[tp] = (generation, None)
        return {tp: member for tp, (_, member) in best.items() if member is not None}

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
        for tp, member in sorted(self._current_owners(subscriptions).items()):
            if tp in eligible and member in eligible[tp]:
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

    def subscription_user_data(self, topics: list[str]) -> bytes | None:
        return None  # what a member owns travels in the subscription's owned_partitions (version 1)

    @staticmethod
    def member_claims(subscription: Subscription) -> tuple[list[TopicPartition], int | None]:
        return list(subscription.owned_partitions), None

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
           "StickyAssignor", "Subscription", "decode_assignment", "decode_sticky_user_data", "decode_subscription",
           "encode_assignment", "encode_sticky_user_data", "encode_subscription", "resolve_assignors"]
