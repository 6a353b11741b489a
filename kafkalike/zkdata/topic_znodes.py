"""/brokers/topics/T and its partition state znodes.

The topic znode holds the replica assignment (which brokers host each partition, and
any reassignment in flight) plus, from Kafka 2.8, the topic id. Each partition's state
znode holds the leader, ISR and epochs the controller decided; its ZooKeeper data
version is the "zkVersion" every conditional update of that state must name.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

from .ids import uuid_from_base64, uuid_to_base64
from .kafka_json import (
    ZNodeDecodeError,
    decode_json,
    decode_json_object,
    encode_json,
    ordered,
    scala_immutable_map_order,
    scala_mutable_map_order,
)

TOPICS_PATH = "/brokers/topics"
TOPIC_ZNODE_VERSION = 3
PARTITION_STATE_VERSION = 1
NO_LEADER = -1
INITIAL_ZK_VERSION = 0


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True)
class ReplicaAssignment:
    """The replicas of one partition; adding/removing are non-empty during a reassignment."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("replicas", "adding_replicas", "removing_replicas"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True)
class PartitionAssignment:
    """The value of /brokers/topics/<topic>: partition number -> replicas, and the topic id."""

    partitions: Mapping[int, ReplicaAssignment]
    topic_id: uuid.UUID | None = None

    @classmethod
    def of(cls, replicas: Mapping[int, Sequence[int]], topic_id: uuid.UUID | None = None) -> PartitionAssignment:
        """An assignment with no reassignment in flight, from partition -> replica list."""
        return cls({p: ReplicaAssignment(tuple(r)) for p, r in replicas.items()}, topic_id)

    def replicas(self) -> dict[int, tuple[int, ...]]:
        return {p: a.replicas for p, a in self.partitions.items()}


class TopicZNode:
    """Codec for /brokers/topics/<topic> (version 3, Kafka 2.8)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{TOPICS_PATH}/{topic}"

    @staticmethod
    def encode(assignment: PartitionAssignment) -> bytes:
        def replica_map(pick: str) -> dict[str, list[int]]:
            lists = {str(p): list(getattr(a, pick)) for p, a in assignment.partitions.items() if getattr(a, pick)}
            return ordered(lists, scala_mutable_map_order(list(lists)))

        value: dict[str, Any] = {
            "version": TOPIC_ZNODE_VERSION,
            "partitions": replica_map("replicas"),
            "adding_replicas": replica_map("adding_replicas"),
            "removing_replicas": replica_map("removing_replicas"),
        }
        if assignment.topic_id is not None:
            value["topic_id"] = uuid_to_base64(assignment.topic_id)
        return encode_json(ordered(value, scala_mutable_map_order(list(value), built_from=4)))

    @staticmethod
    def decode(topic: str, data: bytes | None) -> PartitionAssignment:
        """Read versions 1 to 3; a null znode is a topic without partitions, as Kafka reads it."""
        value = decode_json(data)
        if value is None:
            return PartitionAssignment({})
        if not isinstance(value, dict):
            raise ZNodeDecodeError(f"/brokers/topics/{topic}: not a JSON object: {data!r}")
        try:
            adding = value.get("adding_replicas") or {}
            removing = value.get("removing_replicas") or {}
            partitions = {
                int(p): ReplicaAssignment(
                    tuple(int(r) for r in replicas),
                    tuple(int(r) for r in adding.get(p, ())),
                    tuple(int(r) for r in removing.get(p, ())),
                )
                for p, replicas in (value.get("partitions") or {}).items()
            }
            topic_id = uuid_from_base64(value["topic_id"]) if value.get("topic_id") else None
        except (AttributeError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad assignment for topic {topic}: {data!r}") from error
        return PartitionAssignment(dict(sorted(partitions.items())), topic_id)


class TopicPartitionsZNode:
    """/brokers/topics/<topic>/partitions: a null znode that parents the partitions."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicZNode.path(topic)}/partitions"


class TopicPartitionZNode:
    """/brokers/topics/<topic>/partitions/<n>: a null znode that parents the state znode."""

    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionsZNode.path(tp.topic)}/{tp.partition}"


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    """A partition's leader and ISR as the controller of controller_epoch last wrote them.

    zk_version is the state znode's data version when this value was read (or written);
    it is not part of the JSON, and a conditional update must quote it.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = INITIAL_ZK_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "isr", tuple(self.isr))


class TopicPartitionStateZNode:
    """Codec for /brokers/topics/<topic>/partitions/<n>/state."""

    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionZNode.path(tp)}/state"

    @staticmethod
    def encode(state: LeaderIsrAndControllerEpoch) -> bytes:
        value = {
            "version": PARTITION_STATE_VERSION,
            "leader": state.leader,
            "leader_epoch": state.leader_epoch,
            "controller_epoch": state.controller_epoch,
            "isr": list(state.isr),
        }
        return encode_json(ordered(value, scala_immutable_map_order(list(value))))

    @staticmethod
    def decode(data: bytes, zk_version: int) -> LeaderIsrAndControllerEpoch:
        value = decode_json_object(data, "partition state")
        try:
            return LeaderIsrAndControllerEpoch(
                leader=int(value["leader"]),
                leader_epoch=int(value["leader_epoch"]),
                isr=tuple(int(r) for r in value["isr"]),
                controller_epoch=int(value["controller_epoch"]),
                zk_version=zk_version,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad partition state: {data!r}") from error


def partitions_of(topic: str, assignment: PartitionAssignment) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in sorted(assignment.partitions)]

