"""Keys and values of __consumer_offsets records, with their int16 version prefixes.

The key's version says what the record is: 0 and 1 an offset commit, 2 a group's
metadata. A record with a null value is a tombstone: it deletes what its key names,
and compaction later drops both. The broker writes the versions Kafka 2.8 writes
(offset value v3, or v1 when a commit carried an explicit retention; group value v3)
and reads every version the schemas declare.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkalike.coordinator.schemas import (GroupMetadataKey, GroupMetadataValue, OffsetCommitKey,
                                           OffsetCommitValue)
from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.types import Reader

_VERSION = struct.Struct(">h")

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3
NO_LEADER_EPOCH = -1


class UnknownRecordKey(ValueError):
    """A key whose version names neither an offset commit nor group metadata."""


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class OffsetAndMetadata:
    """One committed offset as the coordinator keeps and writes it."""

    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None   # only commits from clients that asked for retention


@dataclass
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupRecord:
    """A group's metadata value: what a new coordinator restores the group from."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None
    members: list[MemberRecord] = field(default_factory=list)


def versioned(version: int, message) -> bytes:
    """An internal topic's key or value: an int16 schema version, then the message."""
    return _VERSION.pack(version) + message.encode(version)


def split_version(data) -> tuple[int, memoryview]:
    """The schema version of an internal topic's key or value, and the bytes after it."""
    view = memoryview(data)
    if len(view) < 2:
        raise ProtocolDecodeError("record key or value shorter than its version prefix")
    return _VERSION.unpack_from(view)[0], view[2:]


def _decode(cls, version: int, body):
    valid = cls.SCHEMA.valid_range
    if not valid[0] <= version <= valid[1]:
        raise ProtocolDecodeError(f"{cls.__name__} version {version} is unknown")
    return cls.read_from(Reader(body), version)


# -- keys --------------------------------------------------------------------------------

def offset_key(group: str, topic: str, partition: int) -> bytes:
    return versioned(OFFSET_KEY_VERSION, OffsetCommitKey(group=group, topic=topic, partition=partition))


def group_key(group: str) -> bytes:
    return versioned(GROUP_KEY_VERSION, GroupMetadataKey(group=group))


def decode_key(data) -> OffsetKey | GroupKey:
    version, body = split_version(data)
    if version in (0, 1):
        k = _decode(OffsetCommitKey, version, body)
        return OffsetKey(k.group, k.topic, k.partition)
    if version == GROUP_KEY_VERSION:
        return GroupKey(_decode(GroupMetadataKey, version, body).group)
    raise UnknownRecordKey(f"unknown __consumer_offsets key version {version}")


# -- offset values -----------------------------------------------------------------------

def offset_value(offset: OffsetAndMetadata) -> bytes:
    if offset.expire_timestamp is not None:
        return versioned(OFFSET_VALUE_VERSION_WITH_EXPIRY, OffsetCommitValue(
            offset=offset.offset, metadata=offset.metadata, commit_timestamp=offset.commit_timestamp,
            expire_timestamp=offset.expire_timestamp))
    return versioned(OFFSET_VALUE_VERSION, OffsetCommitValue(
        offset=offset.offset, leader_epoch=offset.leader_epoch, metadata=offset.metadata,
        commit_timestamp=offset.commit_timestamp))


def decode_offset_value(data) -> OffsetAndMetadata | None:
    """None for a tombstone."""
    if data is None:
        return None
    version, body = split_version(data)
    v = _decode(OffsetCommitValue, version, body)
    return OffsetAndMetadata(
        offset=v.offset,
        leader_epoch=v.leader_epoch if version >= 3 else NO_LEADER_EPOCH,
        metadata=v.metadata,
        commit_timestamp=v.commit_timestamp,
        expire_timestamp=v.expire_timestamp if version == 1 and v.expire_timestamp != -1 else None)


# -- group values ------------------------------------------------------------------------

def group_value(record: GroupRecord) -> bytes:
    members = [GroupMetadataValue.MemberMetadata(
        member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
        session_timeout=m.session_timeout_ms, subscription=m.subscription, assignment=m.assignment)
        for m in record.members]
    ts = record.current_state_timestamp
    return versioned(GROUP_VALUE_VERSION, GroupMetadataValue(
        protocol_type=record.protocol_type, generation=record.generation, protocol=record.protocol,
        leader=record.leader, current_state_timestamp=-1 if ts is None else ts, members=members))


def decode_group_value(data) -> GroupRecord | None:
    """None for a tombstone (the group was removed)."""
    if data is None:
        return None
    version, body = split_version(data)
    v = _decode(GroupMetadataValue, version, body)
    members = []
    for m in v.members:
        members.append(MemberRecord(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id if version >= 3 else None,
            client_id=m.client_id, client_host=m.client_host,
            # v0 had no rebalance timeout; the session timeout stood in for it.
            rebalance_timeout_ms=m.rebalance_timeout if version >= 1 else m.session_timeout,
            session_timeout_ms=m.session_timeout,
            subscription=bytes(m.subscription), assignment=bytes(m.assignment)))
    ts = v.current_state_timestamp if version >= 2 else -1
    return GroupRecord(protocol_type=v.protocol_type, generation=v.generation, protocol=v.protocol,
                       leader=v.leader, current_state_timestamp=None if ts == -1 else ts,
                       members=members)
