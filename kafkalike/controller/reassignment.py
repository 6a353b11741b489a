"""Partition reassignment rules (KIP-455), kept apart from the controller's event handling.

A partition's full assignment during a reassignment is three lists (Kafka's
ReplicaAssignment): RS, the replicas, which is the target set followed by the original
replicas not in it (TRS ++ ORS, each broker once); AR, the replicas being added
(RS - ORS); RR, the replicas being removed (RS - TRS). ORS = RS - AR and TRS = RS - RR can
always be recovered from the three, which is why the topic znode holds exactly these
and a controller that takes over mid-way can resume. A reassignment is complete once
every target replica is in the ISR.

Everything here is a pure function of a ControllerContext and plain values, so the
rules (and the error texts, which are Kafka 2.8's and reach the operator through the
admin client and kafka-reassign-partitions) can be checked without ZooKeeper.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from kafkalike.controller.context import ControllerContext
from kafkalike.protocol.errors import ErrorCode, default_message
from kafkalike.zkdata.topic_znodes import ReplicaAssignment, TopicPartition


@dataclass(frozen=True)
class ApiError:
    """One partition's (or a whole request's) answer: Kafka's ApiError, code and message."""

    error: ErrorCode
    message: str | None = None

    @classmethod
    def of(cls, error: ErrorCode) -> ApiError:
        """new ApiError(error): the error's default message (NONE has none)."""
        return cls(error, None if error == ErrorCode.NONE else default_message(error))


NONE = ApiError(ErrorCode.NONE)
PARTITION_DOES_NOT_EXIST = ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")


def _distinct(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(values))


def origin_replicas(ra: ReplicaAssignment) -> tuple[int, ...]:
    """ORS: the replicas the partition had before the reassignment began."""
    return tuple(r for r in ra.replicas if r not in ra.adding_replicas)


def target_replicas(ra: ReplicaAssignment) -> tuple[int, ...]:
    """TRS: the replicas it will have when the reassignment completes."""
    return tuple(r for r in ra.replicas if r not in ra.removing_replicas)


def is_being_reassigned(ra: ReplicaAssignment) -> bool:
    return bool(ra.adding_replicas or ra.removing_replicas)


def reassign_to(ra: ReplicaAssignment, target: Sequence[int]) -> ReplicaAssignment:
    """The full assignment for moving to `target` from the partition's original replicas
    (a reassignment already in flight is replaced, never stacked)."""
    origin = origin_replicas(ra)
    full = _distinct(list(target) + list(origin))
    return ReplicaAssignment(full, tuple(r for r in full if r not in origin),
                             tuple(r for r in full if r not in target))


def remove_replica(ra: ReplicaAssignment, replica: int) -> ReplicaAssignment:
    return ReplicaAssignment(tuple(r for r in ra.replicas if r != replica),
                             tuple(r for r in ra.adding_replicas if r != replica),
                             tuple(r for r in ra.removing_replicas if r != replica))


def is_complete(ra: ReplicaAssignment, isr: Iterable[int] | None) -> bool:
    """Nothing to do, or every target replica has joined the ISR (None: no state znode)."""
    if not is_being_reassigned(ra):
        return True
    return isr is not None and set(target_replicas(ra)) <= set(isr)


def scala_seq(values: Iterable[int]) -> str:
    """How Kafka prints the replica list it was sent (a Scala ArrayBuffer)."""
    return f"ArrayBuffer({', '.join(map(str, values))})"


def scala_set(values: Iterable[int]) -> str:
    return f"Set({', '.join(map(str, sorted(values)))})"


def validate_replicas(ctx: ControllerContext, tp: TopicPartition, replicas: Sequence[int]) -> ApiError | None:
    """The controller's checks of a target replica list from AlterPartitionReassignments."""
    if not replicas:
        return ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        "Empty replica list specified in partition reassignment.")
    if len(set(replicas)) != len(replicas):
        return ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Duplicate replica ids in partition reassignment replica list: {scala_seq(replicas)}")
    if any(r < 0 for r in replicas):
        return ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Invalid broker id in replica list: {scala_seq(replicas)}")
    # Only the replicas to be added must be alive: original ones may be down.
    adding = reassign_to(ctx.full_assignment(tp), replicas).adding_replicas
    live = ctx.usable_ids
    if not set(adding) <= live:
        return ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Replica assignment has brokers that are not alive. Replica list: "
                        f"{scala_seq(adding)}, live broker list: {scala_set(live)}")
    return None


def build_reassignment(ctx: ControllerContext, tp: TopicPartition,
                       target: Sequence[int] | None) -> ReplicaAssignment | None:
    """The full assignment to move to; None (a cancellation of nothing) means there is
    no reassignment in progress to cancel. Cancelling goes back to the original replicas."""
    current = ctx.full_assignment(tp)
    if target is None:
        return reassign_to(current, origin_replicas(current)) if is_being_reassigned(current) else None
    return reassign_to(current, target)


def reassign_leader(ctx: ControllerContext, target: Sequence[int], isr: Iterable[int]) -> int | None:
    """Kafka's reassignPartitionLeaderElection: the first target replica that is live (and
    not shutting down) and in the ISR."""
    in_sync = set(isr)
    usable = ctx.usable_ids
    return next((r for r in target if r in usable and r in in_sync), None)
