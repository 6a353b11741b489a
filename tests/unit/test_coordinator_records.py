"""__consumer_offsets keys and values: Kafka's bytes, every version, tombstones, and the
partition a group lives on."""
from __future__ import annotations

import struct

import pytest

from kafkalike.coordinator.group_metadata_manager import partition_for
from kafkalike.coordinator.records import (GroupKey, GroupRecord, MemberRecord, OffsetAndMetadata, OffsetKey,
                                           UnknownRecordKey, decode_group_value, decode_key,
                                           decode_offset_value, group_key, group_value, offset_key,
                                           offset_value)
from kafkalike.coordinator.schemas import GroupMetadataValue, OffsetCommitValue


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_key_is_version_1_group_topic_partition():
    assert offset_key("my-group", "orders", 7) == b"\x00\x01" + s16("my-group") + s16("orders") + b"\x00\x00\x00\x07"
    assert decode_key(offset_key("g", "t", 3)) == OffsetKey("g", "t", 3)


def test_offset_key_version_0_still_reads():
    assert decode_key(b"\x00\x00" + s16("g") + s16("t") + b"\x00\x00\x00\x01") == OffsetKey("g", "t", 1)


def test_group_key_is_version_2():
    assert group_key("my-group") == b"\x00\x02" + s16("my-group")
    assert decode_key(group_key("my-group")) == GroupKey("my-group")


def test_unknown_key_versions_are_refused():
    with pytest.raises(UnknownRecordKey):
        decode_key(b"\x00\x07" + s16("g"))


def test_offset_value_is_version_3_with_leader_epoch():
    o = OffsetAndMetadata(offset=42, leader_epoch=5, metadata="meta", commit_timestamp=1_650_000_000_000)
    expected = (b"\x00\x03" + struct.pack(">q", 42) + struct.pack(">i", 5) + s16("meta")
                + struct.pack(">q", 1_650_000_000_000))
    assert offset_value(o) == expected
    assert decode_offset_value(expected) == o


def test_commits_with_a_retention_are_written_as_version_1():
    o = OffsetAndMetadata(offset=1, metadata="", commit_timestamp=10, expire_timestamp=99)
    data = offset_value(o)
    assert data == b"\x00\x01" + struct.pack(">q", 1) + s16("") + struct.pack(">qq", 10, 99)
    assert decode_offset_value(data) == o


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_offset_value_version_reads(version):
    v = OffsetCommitValue(offset=9, leader_epoch=4, metadata="m", commit_timestamp=7, expire_timestamp=20)
    decoded = decode_offset_value(struct.pack(">h", version) + v.encode(version))
    assert (decoded.offset, decoded.metadata, decoded.commit_timestamp) == (9, "m", 7)
    assert decoded.leader_epoch == (4 if version >= 3 else -1)
    assert decoded.expire_timestamp == (20 if version == 1 else None)


def test_tombstones_decode_to_none():
    assert decode_offset_value(None) is None
    assert decode_group_value(None) is None


def sample_group() -> GroupRecord:
    return GroupRecord(
        protocol_type="consumer", generation=3, protocol="range", leader="m-1", current_state_timestamp=123,
        members=[MemberRecord("m-1", "host-1", "client", "/10.0.0.1", 300000, 10000, b"sub", b"assign"),
                 MemberRecord("m-2", None, "client", "/10.0.0.2", 300000, 10000, b"sub2", b"")])


def test_group_value_is_version_3_in_kafkas_field_order():
    data = group_value(sample_group())
    member1 = (s16("m-1") + s16("host-1") + s16("client") + s16("/10.0.0.1") + struct.pack(">ii", 300000, 10000)
               + struct.pack(">i", 3) + b"sub" + struct.pack(">i", 6) + b"assign")
    head = b"\x00\x03" + s16("consumer") + struct.pack(">i", 3) + s16("range") + s16("m-1") + struct.pack(">q", 123)
    assert data.startswith(head + struct.pack(">i", 2) + member1)
    assert decode_group_value(data) == sample_group()


def test_empty_group_value_has_null_protocol_and_leader():
    record = GroupRecord("consumer", 4, None, None, None, [])
    data = group_value(record)
    assert data == b"\x00\x03" + s16("consumer") + struct.pack(">i", 4) + b"\xff\xff\xff\xff" \
        + struct.pack(">q", -1) + struct.pack(">i", 0)
    assert decode_group_value(data) == record


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_group_value_version_reads(version):
    m = GroupMetadataValue.MemberMetadata(member_id="m", group_instance_id="i", client_id="c", client_host="h",
                                          rebalance_timeout=500, session_timeout=100, subscription=b"s",
                                          assignment=b"a")
    v = GroupMetadataValue(protocol_type="consumer", generation=2, protocol="range", leader="m",
                           current_state_timestamp=77, members=[m])
    record = decode_group_value(struct.pack(">h", version) + v.encode(version))
    [member] = record.members
    assert (record.generation, record.protocol, record.leader) == (2, "range", "m")
    assert record.current_state_timestamp == (77 if version >= 2 else None)
    assert member.group_instance_id == ("i" if version >= 3 else None)
    assert member.rebalance_timeout_ms == (500 if version >= 1 else 100)   # v0: the session timeout
    assert (member.subscription, member.assignment) == (b"s", b"a")


@pytest.mark.parametrize("group,partition", [("my-group", 12), ("test-group", 12), ("group1", 40),
                                             # hashCode is Integer.MIN_VALUE: Kafka's abs makes it 0
                                             ("polygenelubricants", 0)])
def test_group_partition_is_kafkas(group, partition):
    assert partition_for(group, 50) == partition
