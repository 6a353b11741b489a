"""Idempotent producers of third-party clients: InitProducerId and their batches.

kafka-python 3 is idempotent by default (KIP-679: enable_idempotence=True, acks=all),
so before the broker served InitProducerId every one of its sends failed. Two such
producers must get distinct producer ids, which come from the block this broker
claimed in /latest_producer_id_block.
"""
from __future__ import annotations

import json

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kazoo.client import KazooClient

from kafkalike.records.header import iter_batch_headers

pytestmark = pytest.mark.interop


def produce_default_kafka_python(bootstrap: str, topic: str, n: int, tag: str) -> list:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)   # every default: idempotent
    try:
        futures = [producer.send(topic, key=f"{tag}-{i}".encode(), value=f"v{i}".encode()) for i in range(n)]
        producer.flush(30)
        return [f.get(timeout=30) for f in futures]
    finally:
        producer.close(10)


def batch_producer_ids(broker, topic: str) -> list[tuple[int, int, int]]:
    """(producer id, epoch, base sequence) of every batch in the partition's segment files."""
    found = []
    for segment in sorted((broker.log_dir / f"{topic}-0").glob("*.log")):
        data = segment.read_bytes()
        found += [(h.producer_id, h.producer_epoch, h.base_sequence) for _, h in iter_batch_headers(data)]
    return found


def test_default_kafka_python_producers_deliver_and_get_distinct_producer_ids(broker, topic_name):
    first = produce_default_kafka_python(broker.bootstrap, topic_name, 200, "a")
    second = produce_default_kafka_python(broker.bootstrap, topic_name, 200, "b")
    assert len(first) == len(second) == 200
    consumer = KafkaConsumer(topic_name, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    keys = sorted(r.key for r in consumer)
    consumer.close()
    assert keys == sorted([f"a-{i}".encode() for i in range(200)] + [f"b-{i}".encode() for i in range(200)])

    zk = KazooClient(hosts=broker.zk_connect)
    zk.start(timeout=15)
    try:
        data, _ = zk.get("/latest_producer_id_block")
    finally:
        zk.stop()
        zk.close()
    batches = batch_producer_ids(broker, topic_name)
    producers = {pid for pid, _, _ in batches}
    assert len(producers) == 2 and all(pid >= 0 for pid in producers)
    assert all(epoch == 0 for _, epoch, _ in batches)
    for pid in producers:
        sequences = [seq for p, _, seq in batches if p == pid]
        assert sequences[0] == 0 and sequences == sorted(sequences)
    block = json.loads(data)
    assert block["version"] == 1 and block["broker"] == broker.broker_id
    assert isinstance(block["block_start"], str)
    assert int(block["block_end"]) - int(block["block_start"]) == 999
    assert all(int(block["block_start"]) <= pid <= int(block["block_end"]) for pid in producers)
