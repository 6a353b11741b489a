"""Fetch (1) v0-12: the response encoded without the schema walker.

Record sets of a LogSlice (kafkalike.storage.log: a range of a segment file) stay in
the chunk list when they are at least `keep_files_from` bytes, so the listener can send
them with sendfile instead of reading them into Python; everything else is bytes. The
v12 tagged fields Kafka 2.8 writes (diverging_epoch, current_leader, snapshot_id) are
written when they differ from their defaults, as the generic writer does.
"""
from __future__ import annotations

import struct

from kafkalike.protocol.fast.wire import I32, put_array_length, put_length, put_string
from kafkalike.protocol.messages.fetch import FetchResponse

_I = I32
_THROTTLE_ERROR_SESSION = struct.Struct(">ihi")
_PART_V0 = struct.Struct(">ihq")         # partition, error code, high watermark
_PART_V4 = struct.Struct(">ihqq")        # + last stable offset
_PART_V5 = struct.Struct(">ihqqq")       # + log start offset
_ABORTED = struct.Struct(">qq")
_EPOCH_END = struct.Struct(">iqB")       # diverging_epoch: epoch, end offset, no tagged fields
_LEADER = struct.Struct(">iiB")          # current_leader: leader id, leader epoch
_SNAPSHOT = struct.Struct(">qiB")        # snapshot_id: end offset, epoch
_BUFFERS = (bytes, bytearray, memoryview)
# Smaller record sets are copied into the surrounding buffer (the generic Writer's rule).
CHUNK_FROM = 4096

VERSIONS = (0, 12)


def encode_fetch_response(version: int, correlation_id: int, response: FetchResponse,
                          keep_files_from: int | None = None) -> list:
    """The response frame (header and body, without the size prefix) as a list of chunks:
    bytes, and with `keep_files_from` the record sets that are files of at least that size."""
    flexible = version >= 12
    chunks: list = []
    out = bytearray(_I.pack(correlation_id))
    if flexible:
        out.append(0)
    if version >= 7:
        out += _THROTTLE_ERROR_SESSION.pack(response.throttle_time_ms, response.error_code, response.session_id)
    elif version >= 1:
        out += _I.pack(response.throttle_time_ms)
    topics = response.responses
    put_array_length(out, topics, flexible, "responses", version)
    for topic in topics:
        put_string(out, topic.topic, flexible)
        parts = topic.partition_responses
        put_array_length(out, parts, flexible, "partition_responses", version)
        for p in parts:
            if version >= 5:
                out += _PART_V5.pack(p.partition, p.error_code, p.high_watermark, p.last_stable_offset,
                                     p.log_start_offset)
            elif version >= 4:
                out += _PART_V4.pack(p.partition, p.error_code, p.high_watermark, p.last_stable_offset)
            else:
                out += _PART_V0.pack(p.partition, p.error_code, p.high_watermark)
            if version >= 4:
                aborted = p.aborted_transactions
                if aborted is None:
                    out += b"\x00" if flexible else b"\xff\xff\xff\xff"
                else:
                    put_length(out, len(aborted), flexible)
                    for a in aborted:
                        out += _ABORTED.pack(a.producer_id, a.first_offset)
                        if flexible:
                            out.append(0)
            if version >= 11:
                out += _I.pack(p.preferred_read_replica)
            records = p.record_set
            if records is None:
                out += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                size = len(records)
                put_length(out, size, flexible)
                if size:
                    if type(records) not in _BUFFERS and (keep_files_from is None or size < keep_files_from):
                        records = bytes(records)      # a file range read now (LogSlice.__bytes__)
                    if size >= CHUNK_FROM:
                        chunks.append(bytes(out))
                        out = bytearray()
                        chunks.append(records if type(records) is not bytearray and type(records) is not memoryview
                                      else bytes(records))
                    else:
                        out += records
            if flexible:
                _partition_tags(out, p)
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)
    if out:
        chunks.append(bytes(out))
    return chunks


def _partition_tags(out: bytearray, p) -> None:
    """v12's tagged fields, each written when it differs from its default (all -1)."""
    d, leader, snap = p.diverging_epoch, p.current_leader, p.snapshot_id
    tags = []
    if d.epoch != -1 or d.end_offset != -1:
        tags.append(b"\x00\x0d" + _EPOCH_END.pack(d.epoch, d.end_offset, 0))
    if leader.leader_id != -1 or leader.leader_epoch != -1:
        tags.append(b"\x01\x09" + _LEADER.pack(leader.leader_id, leader.leader_epoch, 0))
    if snap.end_offset != -1 or snap.epoch != -1:
        tags.append(b"\x02\x0d" + _SNAPSHOT.pack(snap.end_offset, snap.epoch, 0))
    out.append(len(tags))
    for t in tags:
        out += t
