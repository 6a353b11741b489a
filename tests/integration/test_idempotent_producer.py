"""Our idempotent KafkaProducer against real brokers: a leader killed mid-stream must not
duplicate or reorder anything. confluent-kafka (librdkafka) reads the result back."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.producer import KafkaProducer
from kafkalike.records.header import iter_batch_headers

pytestmark = pytest.mark.integration

TOPIC = "idem"
PARTITIONS = 2
PER_PARTITION = 3000


def wait_until(predicate, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def leaders(admin) -> dict[int, int]:
    md = admin.list_topics(TOPIC, timeout=10)
    return {p.id: p.leader for p in md.topics[TOPIC].partitions.values()}


def read_partition(bootstrap: str, partition: int, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "idem-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    keys: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                if len(keys) >= expected:
                    break
                continue
            if msg.error() is None:
                keys.append(msg.key())
    finally:
        consumer.close()
    return keys


def test_killing_a_leader_mid_stream_leaves_every_record_exactly_once_in_order(kafka_cluster):
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=3,
                                  config={"min.insync.replicas": "2"})])[TOPIC].result(20)
    wait_until(lambda: all(v >= 0 for v in leaders(admin).values()), what="leaders")
    victim = leaders(admin)[0]
    failures: list = []
    producer = KafkaProducer({"bootstrap.servers": kafka_cluster.bootstrap, "enable.idempotence": True,
                              "linger.ms": 2, "batch.size": 4096})
    killed = threading.Event()

    def on_done(metadata, error):
        if error is not None:
            failures.append(error)

    try:
        for i in range(PER_PARTITION):
            for p in range(PARTITIONS):
                producer.send(TOPIC, b"v", key=b"%d-%06d" % (p, i), partition=p, callback=on_done)
            if i == PER_PARTITION // 3:
                producer.flush(60)
            if i == PER_PARTITION // 3 + 50 and not killed.is_set():
                kafka_cluster.broker(victim).kill()     # kill -9 with batches in flight
                killed.set()
        producer.flush(180)
    finally:
        producer.close()
    assert failures == []
    survivors = ",".join(b.bootstrap for b in kafka_cluster.brokers if b.is_running())
    for p in range(PARTITIONS):
        keys = read_partition(survivors, p, PER_PARTITION)
        assert keys == [b"%d-%06d" % (p, i) for i in range(PER_PARTITION)]   # no loss, duplicate or reorder
    # The batches carry one producer id and gap-free sequences, as a broker would check them.
    survivor = next(b for b in kafka_cluster.brokers if b.is_running())
    data = b"".join(f.read_bytes() for f in sorted((survivor.log_dir / f"{TOPIC}-0").glob("*.log")))
    headers = [h for _, h in iter_batch_headers(data)]
    assert len({(h.producer_id, h.producer_epoch) for h in headers}) == 1
    sequences = [(h.base_sequence, h.last_offset_delta) for h in headers]
    assert all(seq == prev + delta + 1 for (prev, delta), (seq, _) in zip(sequences, sequences[1:]))
