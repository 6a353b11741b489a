"""Preferred and unclean leader elections asked for by an admin, and the leader balance check.

Kept apart from the controller's event handling so the rules (which replica may lead,
which error a partition gets and with what text) can be checked on a ControllerContext
alone. The error texts are Kafka 2.8's: clients and kafka-leader-election print them.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Iterable

from kafkalike.controller.context import ControllerContext
from kafkalike.protocol.errors import ErrorCode
from kafkalike.zkdata.topic_znodes import LeaderIsrAndControllerEpoch, TopicPartition

NO_LEADER = -1


class ElectionType(IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


# What Kafka's Election strategies are called in its StateChangeFailedException text.
_STRATEGY_NAMES = {
    ElectionType.PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
    ElectionType.UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)",
}
_NO_LEADER_ERRORS = {
    ElectionType.PREFERRED: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
    ElectionType.UNCLEAN: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
}


@dataclass(frozen=True)
class ElectionResult:
    """One partition's answer: NONE with the new leader, or an error and Kafka's message."""

    error: ErrorCode
    message: str | None = None
    leader: int | None = None


@dataclass
class ElectionPlan:
    changes: dict[TopicPartition, LeaderIsrAndControllerEpoch]
    results: dict[TopicPartition, ElectionResult]


def _usable(ctx: ControllerContext, broker_id: int) -> bool:
    # Kafka's isReplicaOnline: live and not in the middle of a controlled shutdown.
    return broker_id in ctx.live_brokers and broker_id not in ctx.shutting_down


def preferred_leader(ctx: ControllerContext, tp: TopicPartition) -> int | None:
    """The head of the assignment, if it is live and in the ISR; otherwise nobody."""
    replicas = ctx.assignments.get(tp) or ()
    state = ctx.leadership.get(tp)
    if not replicas or state is None:
        return None
    head = replicas[0]
    return head if _usable(ctx, head) and head in state.isr else None


def _unclean_choice(ctx: ControllerContext, tp: TopicPartition) -> tuple[int, tuple[int, ...]] | None:
    """Kafka's offline election with unclean allowed: an in-sync live replica if there is
    one (ISR kept, minus the dead), else the first live replica alone."""
    replicas = ctx.assignments[tp]
    state = ctx.leadership[tp]
    live = [r for r in replicas if _usable(ctx, r)]
    in_sync = [r for r in live if r in state.isr]
    if in_sync:
        return in_sync[0], tuple(r for r in state.isr if _usable(ctx, r))
    if live:
        return live[0], (live[0],)
    return None


def needs_election(ctx: ControllerContext, tp: TopicPartition, election_type: ElectionType) -> bool:
    state = ctx.leadership[tp]
    if election_type == ElectionType.PREFERRED:
        return state.leader != ctx.assignments[tp][0]
    return state.leader == NO_LEADER or state.leader not in ctx.live_brokers


def plan_election(ctx: ControllerContext, partitions: Iterable[TopicPartition],
                  election_type: ElectionType) -> ElectionPlan:
    """Decide each partition's outcome; `changes` holds the states still to be written."""
    changes: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    results: dict[TopicPartition, ElectionResult] = {}
    for tp in partitions:
        state = ctx.leadership.get(tp)
        if tp not in ctx.assignments or state is None:
            results[tp] = ElectionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        elif tp.topic in ctx.topics_to_delete:
            results[tp] = ElectionResult(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
        elif not needs_election(ctx, tp, election_type):
            results[tp] = ElectionResult(ErrorCode.ELECTION_NOT_NEEDED)
        else:
            if election_type == ElectionType.PREFERRED:
                leader = preferred_leader(ctx, tp)
                choice = None if leader is None else (leader, tuple(state.isr))
            else:
                choice = _unclean_choice(ctx, tp)
            if choice is None:
                results[tp] = ElectionResult(
                    _NO_LEADER_ERRORS[election_type],
                    f"Failed to elect leader for partition {tp.topic}-{tp.partition} under strategy "
                    f"{_STRATEGY_NAMES[election_type]}")
            else:
                leader, isr = choice
                changes[tp] = LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, isr,
                                                          ctx.epoch, state.zk_version)
    return ElectionPlan(changes, results)


def imbalance_ratios(ctx: ControllerContext) -> dict[int, float]:
    """Per preferred broker: the share of its preferred partitions that someone else leads."""
    owned: dict[int, int] = {}
    elsewhere: dict[int, int] = {}
    for tp, replicas in ctx.assignments.items():
        if not replicas or tp.topic in ctx.topics_to_delete:
            continue
        head = replicas[0]
        owned[head] = owned.get(head, 0) + 1
        state = ctx.leadership.get(tp)
        if state is not None and state.leader != head:
            elsewhere[head] = elsewhere.get(head, 0) + 1
    return {b: elsewhere.get(b, 0) / n for b, n in owned.items()}


def rebalance_candidates(ctx: ControllerContext, imbalance_percentage: int) -> list[TopicPartition]:
    """Partitions the auto rebalance moves back: those of brokers whose imbalance ratio is
    above leader.imbalance.per.broker.percentage, whose preferred replica can lead now."""
    ratios = imbalance_ratios(ctx)
    over = {b for b, ratio in ratios.items() if ratio > imbalance_percentage / 100}
    out = []
    for tp, replicas in sorted(ctx.assignments.items()):
        if not replicas or replicas[0] not in over or tp.topic in ctx.topics_to_delete:
            continue
        state = ctx.leadership.get(tp)
        if state is not None and state.leader != replicas[0] and preferred_leader(ctx, tp) is not None:
            out.append(tp)
    return out
