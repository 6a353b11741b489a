"""The producer's Produce request encoder and Produce response decoder against the schema
walker's.

The sender skips the dataclasses and the schema walker for its Produce requests, and
Produce answers are decoded by kafkalike.protocol.fast.produce (one request and one
answer per batch: at 1 KiB records both were a fifth of the sender's work); the bytes
must stay what the generic encoder writes, and the answers what the generic decoder
reads, at every version, and a truncated answer is still a ProtocolDecodeError.
"""
from __future__ import annotations

import pytest

from kafkalike.client.errors import UnsupportedFeatureError
from kafkalike.client.sender import ProduceData
from kafkalike.protocol.api import APIS, decode_response, encode_response_generic
from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.messages.headers import ResponseHeader
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
from kafkalike.protocol.types import Reader, Writer

BIG = bytes(range(256)) * 64        # past the Writer's chunk threshold: kept as its own chunk


def encoded(request, version: int) -> bytes:
    w = Writer()
    request.encode_into(w, version)
    return w.getvalue()


@pytest.mark.parametrize("version", range(3, 10))
@pytest.mark.parametrize("transactional_id", [None, "", "txn-é"])
def test_produce_data_writes_what_produce_request_writes(version, transactional_id):
    data = ProduceData(transactional_id, -1, 30000, {
        "a": [(0, b"\x00" * 70), (3, BIG)],
        "topic-ü": [(7, b"")],
    })
    ours = encoded(data, version)
    assert ours == encoded(data.to_request(), version)
    decoded = ProduceRequest.decode(ours, version)
    assert decoded.acks == -1 and decoded.timeout_ms == 30000
    assert [(t.name, [(p.index, bytes(p.records)) for p in t.partition_data]) for t in decoded.topic_data] == [
        ("a", [(0, b"\x00" * 70), (3, BIG)]), ("topic-ü", [(7, b"")])]


def test_produce_data_refuses_versions_without_v2_batches():
    with pytest.raises(UnsupportedFeatureError):
        encoded(ProduceData(None, 1, 1000, {"a": [(0, b"x")]}), 2)


def generic_decode(frame: bytes, version: int):
    spec = APIS[0]
    r = Reader(frame)
    header = ResponseHeader.read_from(r, spec.response_header_version(version))
    return header.correlation_id, spec.response.read_from(r, version)


def produce_response() -> ProduceResponse:
    P = ProduceResponse.PartitionProduceResponse
    return ProduceResponse(responses=[
        ProduceResponse.TopicProduceResponse(name="a", partition_responses=[
            P(index=0, error_code=0, base_offset=1 << 40, log_append_time_ms=1_700_000_000_000, log_start_offset=3),
            P(index=5, error_code=87, base_offset=-1, record_errors=[
                ProduceResponse.BatchIndexAndErrorMessage(batch_index=2, batch_index_error_message="bad é"),
                ProduceResponse.BatchIndexAndErrorMessage(batch_index=4, batch_index_error_message=None)],
              error_message="INVALID_RECORD")]),
        ProduceResponse.TopicProduceResponse(name="b" * 300, partition_responses=[])], throttle_time_ms=25)


@pytest.mark.parametrize("version", range(0, 10))
def test_the_fast_produce_response_decoder_reads_what_the_generic_one_reads(version):
    frame = b"".join(bytes(c) for c in encode_response_generic(0, version, 77, produce_response()))
    assert decode_response(0, version, frame) == generic_decode(frame, version)
    assert decode_response(0, version, frame)[0] == 77
    for cut in (3, 9, len(frame) // 2, len(frame) - 1):
        with pytest.raises(ProtocolDecodeError):
            decode_response(0, version, frame[:cut])
