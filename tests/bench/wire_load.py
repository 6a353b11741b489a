"""A load generator that costs (almost) nothing per record: pre-built frames on a raw socket.

    python tests/bench/wire_load.py produce HOST:PORT TOPIC RECORDS VALUE_SIZE BATCH_SIZE [IN_FLIGHT]
    python tests/bench/wire_load.py fetch HOST:PORT TOPIC RECORDS

kcat and confluent-kafka spend CPU on every record, and on this 2-core machine that CPU
is taken from the broker: with 100-byte records kcat needs more than a core at 170 MB/s.
This process shows what the broker takes when the load generator is not the limit.

produce: one record batch of BATCH_SIZE bytes' worth of VALUE_SIZE-byte values is built
once; one ProduceRequest v8 frame (acks=1, partition 0) carrying it is sent again and
again, IN_FLIGHT (5, the Java producer's max.in.flight.requests.per.connection) in
flight, until RECORDS records were sent; each answer's error code is read at its fixed
position and must be NONE. fetch: Fetch v11 requests (16 MiB max, 8 MiB per partition)
one after another from offset 0 until RECORDS records arrived; only the batch headers
are read (offsets and record counts), as a consumer that hands raw batches on would.

The last stdout line is a JSON result: seconds, records, bytes (batches as sent or
received), cpu (this process's seconds).
"""
from __future__ import annotations

import json
import resource
import socket
import struct
import sys
import time

from kafkalike.protocol import api
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.protocol.messages.produce import ProduceRequest
from kafkalike.records.batch import encode_batch

_SIZE = struct.Struct(">i")
BATCH_HEADER = 61
RECORD_OVERHEAD = 8       # a first guess at a small record's framing (length, deltas, lengths, header count)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def connect(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_frame(sock: socket.socket, buffer: bytearray) -> memoryview:
    """One size-prefixed answer, received into `buffer` (grown as needed)."""
    view = memoryview(buffer)
    got = 0
    while got < 4:
        n = sock.recv_into(view[got:4])
        if not n:
            raise ConnectionError("the broker closed the connection")
        got += n
    (size,) = _SIZE.unpack_from(buffer, 0)
    if size > len(buffer):
        view.release()
        buffer.extend(bytes(size - len(buffer)))
        view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:size])
        if not n:
            raise ConnectionError("the broker closed the connection mid-answer")
        got += n
    return view[:size]


def produce(address: str, topic: str, records: int, value_size: int, batch_size: int, in_flight: int = 5) -> dict:
    value = bytes(33 + (i * 7) % 90 for i in range(value_size))
    per_batch = max(1, (batch_size - BATCH_HEADER) // (value_size + RECORD_OVERHEAD))
    while True:        # as many records as fit in batch.size, as a producer fills its batches
        batch = encode_batch([(None, value)] * per_batch, base_timestamp=int(time.time() * 1000))
        if len(batch) <= batch_size or per_batch == 1:
            break
        per_batch = max(1, per_batch * batch_size // len(batch) - 1)
    request = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    body = api.encode_request(0, 8, 1, "wire-load", request)
    frame = _SIZE.pack(len(body)) + body
    # v8 answer: correlation id, topics (1), name, partitions (1), index, then the error code.
    error_at = 4 + 4 + 2 + len(topic.encode()) + 4 + 4
    frames = -(-records // per_batch)
    sock = connect(address)
    buffer = bytearray(1024)
    sent = answered = 0
    cpu0, start = cpu(), time.perf_counter()
    while answered < frames:
        while sent < frames and sent - answered < in_flight:
            sock.sendall(frame)
            sent += 1
        answer = read_frame(sock, buffer)
        (error,) = struct.unpack_from(">h", answer, error_at)
        if error:
            raise RuntimeError(f"produce answered error code {error}")
        answered += 1
    seconds = time.perf_counter() - start
    sock.close()
    return {"seconds": seconds, "records": frames * per_batch, "bytes": frames * len(batch), "cpu": cpu() - cpu0}


def fetch(address: str, topic: str, records: int) -> dict:
    sock = connect(address)
    buffer = bytearray(1 << 20)
    offset = received = size = 0
    correlation = 0
    cpu0, start = cpu(), time.perf_counter()
    while received < records:
        correlation += 1
        request = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=16 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                                   topic=topic, partitions=[FetchRequest.FetchPartition(
                                       partition=0, current_leader_epoch=-1, fetch_offset=offset,
                                       log_start_offset=-1, partition_max_bytes=8 << 20)])],
                               forgotten_topics_data=[], rack_id="")
        body = api.encode_request(1, 11, correlation, "wire-load", request)
        sock.sendall(_SIZE.pack(len(body)) + body)
        _, response = api.decode_response(1, 11, bytes(read_frame(sock, buffer)))
        part = response.responses[0].partition_responses[0]
        if part.error_code:
            raise RuntimeError(f"fetch answered error code {part.error_code}")
        data = memoryview(part.record_set or b"")
        pos = 0
        while pos + BATCH_HEADER <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            if pos + 12 + length > len(data):
                break       # a partial batch at the end of the answer: fetched again from its start
            (last_delta,) = struct.unpack_from(">i", data, pos + 23)
            (count,) = struct.unpack_from(">i", data, pos + 57)
            received += count
            size += 12 + length
            offset = base + last_delta + 1
            pos += 12 + length
    seconds = time.perf_counter() - start
    sock.close()
    return {"seconds": seconds, "records": received, "bytes": size, "cpu": cpu() - cpu0}


def main(argv: list[str]) -> int:
    mode, address, topic, *numbers = argv
    if mode == "produce":
        result = produce(address, topic, *map(int, numbers))
    elif mode == "fetch":
        result = fetch(address, topic, *map(int, numbers))
    else:
        raise SystemExit(f"unknown mode {mode!r}: produce or fetch")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
