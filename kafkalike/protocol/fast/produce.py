"""Produce (0) v0-9: the request decoded and the response encoded without the schema walker
(the broker's side), and the response decoded the same way (the producer's side: one per
batch it sends, so at 1 KiB records one per 15 records).

The request's record sets stay memoryview slices of the frame, as the generic reader
leaves them; the broker looks at a batch's header bytes only. Fixed runs (acks and
timeout; a partition answer's index, error, offsets and times) are one struct call each.
"""
from __future__ import annotations

import struct

from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.fast.wire import (I32, array_length, length, put_array_length, put_nullable_string, put_string,
                                         skip_tagged, string, uvarint)
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse

_ACKS_TIMEOUT = struct.Struct(">hi")
_TopicData = ProduceRequest.TopicProduceData
_PartitionData = ProduceRequest.PartitionProduceData
_TopicResponse = ProduceResponse.TopicProduceResponse
_PartitionResponse = ProduceResponse.PartitionProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage

_HEAD = struct.Struct(">i")          # response header: correlation id
_PART_V0 = struct.Struct(">ihq")     # index, error code, base offset
_PART_V2 = struct.Struct(">ihqq")    # + log append time
_PART_V5 = struct.Struct(">ihqqq")   # + log start offset

VERSIONS = (0, 9)


def decode_produce_request(frame, pos: int, version: int) -> ProduceRequest:
    """The body at `pos` of a Produce request frame at `version` (0-9)."""
    buf = frame if type(frame) is memoryview else memoryview(frame)
    end = len(buf)
    flexible = version >= 9
    try:
        transactional_id = None
        if version >= 3:
            transactional_id, pos = string(buf, pos, end, flexible, True)
        acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(buf, pos)
        pos += 6
        n_topics, pos = array_length(buf, pos, end, flexible)
        topics = []
        for _ in range(n_topics):
            name, pos = string(buf, pos, end, flexible, False)
            n_parts, pos = array_length(buf, pos, end, flexible)
            parts = []
            for _ in range(n_parts):
                index = I32.unpack_from(buf, pos)[0]
                pos += 4
                if flexible:
                    n, pos = uvarint(buf, pos, end)
                    n -= 1
                else:
                    n = I32.unpack_from(buf, pos)[0]
                    pos += 4
                n = length(n, True, pos, end, "records")
                if n < 0:
                    records = None
                else:
                    records = buf[pos:pos + n]
                    pos += n
                if flexible:
                    pos = skip_tagged(buf, pos, end)
                parts.append(_PartitionData(index, records))
            if flexible:
                pos = skip_tagged(buf, pos, end)
            topics.append(_TopicData(name, parts))
        if flexible:
            skip_tagged(buf, pos, end)
    except struct.error as exc:
        raise ProtocolDecodeError(f"truncated Produce v{version} request: {exc}") from None
    return ProduceRequest(transactional_id, acks, timeout_ms, topics)


def encode_produce_response(version: int, correlation_id: int, response: ProduceResponse) -> list:
    """The response frame (header and body, without the size prefix) as a list of buffers."""
    flexible = version >= 9
    out = bytearray(_HEAD.pack(correlation_id))
    if flexible:
        out.append(0)                         # response header v1: no tagged fields
    topics = response.responses
    put_array_length(out, topics, flexible, "responses", version)
    for topic in topics:
        put_string(out, topic.name, flexible)
        parts = topic.partition_responses
        put_array_length(out, parts, flexible, "partition_responses", version)
        for p in parts:
            if version >= 5:
                out += _PART_V5.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset)
            elif version >= 2:
                out += _PART_V2.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms)
            else:
                out += _PART_V0.pack(p.index, p.error_code, p.base_offset)
            if version >= 8:
                errors = p.record_errors
                put_array_length(out, errors, flexible, "record_errors", version)
                for e in errors:
                    out += I32.pack(e.batch_index)
                    put_nullable_string(out, e.batch_index_error_message, flexible)
                    if flexible:
                        out.append(0)
                put_nullable_string(out, p.error_message, flexible)
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)
    if version >= 1:
        out += I32.pack(response.throttle_time_ms)
    if flexible:
        out.append(0)
    return [bytes(out)]


def decode_produce_response(frame, version: int) -> tuple[int, ProduceResponse]:
    """(correlation id, body) of a Produce response frame (header and body, no size prefix)."""
    buf = frame if type(frame) is memoryview else memoryview(frame)
    end = len(buf)
    flexible = version >= 9
    try:
        correlation_id = _HEAD.unpack_from(buf, 0)[0]
        pos = 4
        if flexible:
            pos = skip_tagged(buf, pos, end)
        n_topics, pos = array_length(buf, pos, end, flexible)
        topics = []
        for _ in range(n_topics):
            name, pos = string(buf, pos, end, flexible, False)
            n_parts, pos = array_length(buf, pos, end, flexible)
            parts = []
            for _ in range(n_parts):
                append_time = start_offset = -1
                if version >= 5:
                    index, error, base, append_time, start_offset = _PART_V5.unpack_from(buf, pos)
                    pos += _PART_V5.size
                elif version >= 2:
                    index, error, base, append_time = _PART_V2.unpack_from(buf, pos)
                    pos += _PART_V2.size
                else:
                    index, error, base = _PART_V0.unpack_from(buf, pos)
                    pos += _PART_V0.size
                errors = []
                message = None
                if version >= 8:
                    n_errors, pos = array_length(buf, pos, end, flexible)
                    for _ in range(n_errors):
                        batch_index = I32.unpack_from(buf, pos)[0]
                        text, pos = string(buf, pos + 4, end, flexible, True)
                        if flexible:
                            pos = skip_tagged(buf, pos, end)
                        errors.append(_RecordError(batch_index, text))
                    message, pos = string(buf, pos, end, flexible, True)
                if flexible:
                    pos = skip_tagged(buf, pos, end)
                parts.append(_PartitionResponse(index, error, base, append_time, start_offset, errors, message))
            if flexible:
                pos = skip_tagged(buf, pos, end)
            topics.append(_TopicResponse(name, parts))
        throttle = 0
        if version >= 1:
            throttle = I32.unpack_from(buf, pos)[0]
            pos += 4
        if flexible:
            skip_tagged(buf, pos, end)
    except (struct.error, IndexError) as exc:
        raise ProtocolDecodeError(f"truncated Produce v{version} response: {exc}") from None
    return correlation_id, ProduceResponse(topics, throttle)
