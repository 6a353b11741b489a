"""Fetch (1) v0-12: the request decoded without the schema walker.

Consumers and followers send a Fetch every few hundred milliseconds per connection, often
naming every partition they follow, so the request is decoded as often as Produce. The
fixed run at the top and each partition's fixed run (partition, epochs, offsets, size
limit) are one struct call each; the layout of both depends only on the version, so the
struct is chosen once per request. Fields a version does not carry get the defaults the
generic reader gives (FetchRequest's declaration in kafkalike.protocol.messages.fetch).
"""
from __future__ import annotations

import struct

from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.fast.wire import array_length, skip_tagged, string
from kafkalike.protocol.messages.fetch import FetchRequest

_Topic = FetchRequest.FetchTopic
_Partition = FetchRequest.FetchPartition
_Forgotten = FetchRequest.ForgottenTopic

_MAX_BYTES_DEFAULT = 2147483647

# The run before the topics: replica id, max wait, min bytes, then by version max bytes
# (v3+), isolation level (v4+), session id and epoch (v7+).
_HEAD_V0 = struct.Struct(">iii")
_HEAD_V3 = struct.Struct(">iiii")
_HEAD_V4 = struct.Struct(">iiiib")
_HEAD_V7 = struct.Struct(">iiiibii")

# A partition: index, current leader epoch (v9+), fetch offset, last fetched epoch (v12+),
# log start offset (v5+), partition max bytes.
_PART_V0 = struct.Struct(">iqi")
_PART_V5 = struct.Struct(">iqqi")
_PART_V9 = struct.Struct(">iiqqi")
_PART_V12 = struct.Struct(">iiqiqi")

VERSIONS = (0, 12)


def _head_struct(version: int) -> struct.Struct:
    if version >= 7:
        return _HEAD_V7
    if version >= 4:
        return _HEAD_V4
    if version >= 3:
        return _HEAD_V3
    return _HEAD_V0


def _partition_struct(version: int) -> struct.Struct:
    if version >= 12:
        return _PART_V12
    if version >= 9:
        return _PART_V9
    if version >= 5:
        return _PART_V5
    return _PART_V0


def decode_fetch_request(frame, pos: int, version: int) -> FetchRequest:
    """The body at `pos` of a Fetch request frame at `version` (0-12)."""
    buf = frame if type(frame) is memoryview else memoryview(frame)
    end = len(buf)
    flexible = version >= 12
    head = _head_struct(version)
    part = _partition_struct(version)
    part_unpack = part.unpack_from
    part_size = part.size
    try:
        fixed = head.unpack_from(buf, pos)
        pos += head.size
        replica_id, max_wait_ms, min_bytes = fixed[0], fixed[1], fixed[2]
        max_bytes = fixed[3] if version >= 3 else _MAX_BYTES_DEFAULT
        isolation_level = fixed[4] if version >= 4 else 0
        session_id, session_epoch = (fixed[5], fixed[6]) if version >= 7 else (0, -1)

        n_topics, pos = array_length(buf, pos, end, flexible)
        topics = []
        for _ in range(n_topics):
            name, pos = string(buf, pos, end, flexible, False)
            n_parts, pos = array_length(buf, pos, end, flexible)
            parts = []
            for _ in range(n_parts):
                v = part_unpack(buf, pos)
                pos += part_size
                if version >= 12:
                    p = _Partition(v[0], v[1], v[2], v[3], v[4], v[5])
                elif version >= 9:
                    p = _Partition(v[0], v[1], v[2], -1, v[3], v[4])
                elif version >= 5:
                    p = _Partition(v[0], -1, v[1], -1, v[2], v[3])
                else:
                    p = _Partition(v[0], -1, v[1], -1, -1, v[2])
                if flexible:
                    pos = skip_tagged(buf, pos, end)
                parts.append(p)
            if flexible:
                pos = skip_tagged(buf, pos, end)
            topics.append(_Topic(name, parts))

        forgotten = []
        if version >= 7:
            n_forgotten, pos = array_length(buf, pos, end, flexible)
            for _ in range(n_forgotten):
                name, pos = string(buf, pos, end, flexible, False)
                n, pos = array_length(buf, pos, end, flexible)
                indexes = list(struct.unpack_from(f">{n}i", buf, pos))
                pos += 4 * n
                if flexible:
                    pos = skip_tagged(buf, pos, end)
                forgotten.append(_Forgotten(name, indexes))

        rack_id = ""
        if version >= 11:
            rack_id, pos = string(buf, pos, end, flexible, False)

        cluster_id = None
        if flexible:
            cluster_id = _request_tags(buf, pos, end)
    except struct.error as exc:
        raise ProtocolDecodeError(f"truncated Fetch v{version} request: {exc}") from None
    return FetchRequest(cluster_id, replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level,
                        session_id, session_epoch, topics, forgotten, rack_id)


def _request_tags(buf, pos: int, end: int) -> str | None:
    """The request's tagged fields: cluster_id (tag 0) read, others checked and skipped,
    as the generic reader does (a known field must fill its declared size exactly)."""
    found: list[str | None] = []

    def cluster_id(tag: int, start: int, field_end: int) -> None:
        if tag == 0:
            value, at = string(buf, start, field_end, True, True)
            if at != field_end:
                raise ProtocolDecodeError(f"tagged field {tag} did not consume its {field_end - start} bytes")
            found.append(value)
    skip_tagged(buf, pos, end, cluster_id)
    return found[0] if found else None

