"""The sender's own Produce request encoder against ProduceRequest's schema encoder.

The sender skips the dataclasses and the schema walker for its Produce requests (the
request it sends per batch was a tenth of its work at 1 KiB records); what goes on the
wire must stay byte for byte what the generic encoder writes, at every version it uses.
"""
from __future__ import annotations

import pytest

from kafkalike.client.errors import UnsupportedFeatureError
from kafkalike.client.sender import ProduceData
from kafkalike.protocol.messages.produce import ProduceRequest
from kafkalike.protocol.types import Writer

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
