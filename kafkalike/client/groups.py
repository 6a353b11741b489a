"""What the admin client's group operations return, and the consumer protocol blobs read.

Kept apart from admin.py so the tools and tests can use these plain values without the
network machinery. DescribeGroups hands members' assignments over as the opaque bytes
the group leader sent in SyncGroup; for groups of protocol type "consumer" those bytes
are the consumer protocol's Assignment, decoded here the way Java's ConsumerProtocol
does it: an int16 version, then the v0 layout that later versions only extend (a
version above the highest we know is read with the highest one, for forward
compatibility; a negative one is refused).
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.messages.consumer_protocol import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafkalike.protocol.types import Reader

TopicPartition = tuple[str, int]
CONSUMER_PROTOCOL_TYPE = "consumer"
_HIGHEST_CONSUMER_PROTOCOL_VERSION = 1

# ListOffsets' special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
UNKNOWN_OFFSET = -1


@dataclass(frozen=True)
class GroupListing:
    """One group as ListGroups reports it; state is None from brokers older than ListGroups v4."""

    group_id: str
    protocol_type: str
    state: str | None = None

    @property
    def is_consumer_group(self) -> bool:
        """Consumer groups and "simple" ones that only store offsets (empty protocol type)."""
        return self.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class CoordinatorNode:
    id: int
    host: str
    port: int

    @property
    def id_string(self) -> str:
        return str(self.id)


@dataclass(frozen=True)
class GroupDescription:
    """partition_assignor is the protocol the group chose ("" unless Stable, as Kafka reports)."""

    group_id: str
    protocol_type: str
    state: str
    partition_assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: CoordinatorNode

    @property
    def is_simple_consumer_group(self) -> bool:
        return self.protocol_type == ""

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")


@dataclass(frozen=True)
class CommittedOffset:
    """A group's committed position: the next offset it will read, as Java's OffsetAndMetadata."""

    offset: int
    leader_epoch: int | None = None
    metadata: str = ""


@dataclass(frozen=True)
class OffsetSpec:
    """Which offset ListOffsets should find: earliest, latest, or the first at or after a time."""

    timestamp: int

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(EARLIEST_TIMESTAMP)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(LATEST_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        if timestamp_ms < 0:
            raise ValueError(f"A timestamp to look up must not be negative, not {timestamp_ms}")
        return cls(timestamp_ms)


@dataclass(frozen=True)
class ListedOffset:
    """offset is UNKNOWN_OFFSET (-1) when no record is at or after the asked-for timestamp."""

    offset: int
    timestamp: int = -1
    leader_epoch: int | None = None


def _versioned_reader(blob: bytes, what: str) -> tuple[Reader, int]:
    reader = Reader(blob)
    version = reader.int16()
    if version < 0:
        raise ProtocolDecodeError(f"Unsupported {what} version: {version}")
    return reader, min(version, _HIGHEST_CONSUMER_PROTOCOL_VERSION)


def decode_assignment(blob: bytes) -> tuple[TopicPartition, ...]:
    """The partitions a consumer protocol Assignment gives its member (empty bytes: none)."""
    if not blob:
        return ()
    reader, version = _versioned_reader(blob, "assignment")
    assignment = ConsumerProtocolAssignment.read_from(reader, version)
    return tuple((t.topic, p) for t in assignment.assigned_partitions for p in t.partitions)


def decode_subscription(blob: bytes) -> tuple[str, ...]:
    """The topics a consumer protocol Subscription names."""
    if not blob:
        return ()
    reader, version = _versioned_reader(blob, "subscription")
    return tuple(ConsumerProtocolSubscription.read_from(reader, version).topics)


def encode_assignment(partitions: list[TopicPartition] | tuple[TopicPartition, ...], version: int = 0) -> bytes:
    """A consumer protocol Assignment (what a group leader sends); for tests and tools."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    body = ConsumerProtocolAssignment(assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=ps) for t, ps in by_topic.items()],
        user_data=None).encode(version)
    return version.to_bytes(2, "big", signed=True) + body


__all__ = ["CONSUMER_PROTOCOL_TYPE", "CommittedOffset", "CoordinatorNode", "EARLIEST_TIMESTAMP",
           "GroupDescription", "GroupListing", "LATEST_TIMESTAMP", "ListedOffset", "MemberDescription",
           "OffsetSpec", "TopicPartition", "UNKNOWN_OFFSET", "decode_assignment", "decode_subscription",
           "encode_assignment"]
