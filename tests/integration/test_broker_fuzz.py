"""Mutated and random frames against a real broker: it stays up and keeps serving.

Frames start from valid requests of the APIs clients use most, then get bit flips,
truncations, wrong length prefixes, spliced garbage and random bytes. Each goes on its
own connection; between rounds a well-behaved client must still produce and fetch.
"""
from __future__ import annotations

import random
import socket
import struct

import pytest

from kafkalike.client.connection import BrokerConnection
from kafkalike.protocol.api import encode_request
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.create_topics import CreateTopicsRequest
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.messages.produce import ProduceRequest
from kafkalike.records.batch import encode_batch

pytestmark = pytest.mark.integration
TOPIC = "fuzz"


def valid_frames() -> list[bytes]:
    batch = encode_batch([(b"k", b"v" * 50), (None, b"w")])
    bodies = [
        (ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"), 3),
        (MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)]), 9),
        (MetadataRequest(topics=None), 1),
        (ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])]), 8),
        (ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])]), 9),
        (FetchRequest(replica_id=-1, max_wait_ms=10, min_bytes=1, topics=[FetchRequest.FetchTopic(
            topic=TOPIC, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                                 partition_max_bytes=65536)])]), 11),
        (ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 5),
        (CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="fuzz-created", num_partitions=1, replication_factor=1)], timeout_ms=1000), 5),
    ]
    return [encode_request(body.API_KEY, v, 1, "fuzzer", body) for body, v in bodies]


def mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(6)
    if kind == 0:                       # bit flips
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)
    elif kind == 1:                     # truncation
        data = data[:rng.randrange(len(data))]
    elif kind == 2:                     # a field overwritten with an extreme value
        pos = rng.randrange(max(1, len(data) - 4))
        data[pos:pos + 4] = rng.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00"])
    elif kind == 3:                     # spliced garbage
        pos = rng.randrange(len(data))
        data[pos:pos] = rng.randbytes(rng.randint(1, 32))
    elif kind == 4:                     # pure random body behind a valid header
        data = data[:8] + rng.randbytes(rng.randint(0, 64))
    else:                               # unknown api key / version
        data[0:4] = struct.pack(">hh", rng.randint(-5, 80), rng.randint(-3, 20))
    return bytes(data)


def send_raw(port: int, payload: bytes, prefix: int | None = None) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        size = len(payload) if prefix is None else prefix
        sock.sendall(struct.pack(">i", size) + payload)
        sock.settimeout(0.3)
        try:
            while sock.recv(65536):
                pass
        except (socket.timeout, ConnectionResetError):
            pass


def closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        return sock.recv(10) == b""
    except ConnectionResetError:
        return True


def healthy(broker) -> None:
    conn = BrokerConnection("127.0.0.1", broker.port)
    conn.connect()
    try:
        batch = encode_batch([(b"ok", b"still-serving")])
        resp = conn.send(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])]), version=8)
        part = resp.responses[0].partition_responses[0]
        assert part.error_code == 0
        fetched = conn.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, topics=[FetchRequest.FetchTopic(
            topic=TOPIC, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=part.base_offset,
                                                                 partition_max_bytes=65536)])]), version=11)
        assert b"still-serving" in bytes(fetched.responses[0].partition_responses[0].record_set)
    finally:
        conn.close()


def test_fuzzed_frames_never_take_the_broker_down(broker):
    conn = BrokerConnection("127.0.0.1", broker.port)
    conn.connect()
    created = conn.send(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=1)], timeout_ms=10000), version=5)
    conn.close()
    assert created.topics[0].error_code == 0
    healthy(broker)
    rng = random.Random(20261122)
    frames = valid_frames()
    for round_ in range(5):
        for _ in range(50):
            send_raw(broker.port, mutate(rng, rng.choice(frames)))
        send_raw(broker.port, rng.randbytes(rng.randint(0, 200)))
        send_raw(broker.port, b"abc", prefix=rng.choice([-1, -2**31, 0]))
        assert broker.is_running(), broker.log_tail()
        healthy(broker)
    log = (broker.app_log_dir / "server.log").read_text()
    assert "Error handling" not in log, "a handler raised on decodable input"


def test_oversized_request_closes_only_that_connection(broker):
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as sock:
        sock.sendall(struct.pack(">i", 104857600 + 1) + b"x" * 100)
        assert closed_by_peer(sock)
    assert "larger than socket.request.max.bytes" in (broker.app_log_dir / "server.log").read_text()
    healthy(broker)


def test_unknown_api_key_closes_the_connection(broker):
    body = struct.pack(">hhih", 1000, 0, 7, -1)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        assert closed_by_peer(sock)
    healthy(broker)
