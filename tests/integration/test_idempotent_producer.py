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
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

TOPIC = "idem"
PARTITIONS = 2
PER_PARTITION = 3000


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


def _topic(bootstrap: str, name: str, config: dict) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1, config=config)], operation_timeout=30).values():
        future.result()


def _values_in_log(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "idem-values", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
        tail = consumer.poll(1.0)  # nothing beyond what was sent
        assert tail is None or tail.error() is not None, tail.value()
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("case", ["one record too large", "batches split"])
def test_a_batch_rejected_for_size_costs_nothing_else(broker, case):
    """A non-retriable failure (or a split) amid five batches in flight: every other record
    lands exactly once and in order, under one producer id (the epoch is bumped instead)."""
    topic = f"idem-size-{case.replace(' ', '-')}-{int(time.time() * 1000)}"
    _topic(broker.bootstrap, topic, {"max.message.bytes": "2000"})
    big = 10 if case == "one record too large" else None
    config = {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 200,
              "batch.size": 700 if big is not None else 16384}
    values = [b"%04d" % i + (b"B" * 5000 if i == big else b"s" * 300) for i in range(30)]
    with KafkaProducer(config) as producer:
        futures = [producer.send(topic, v) for v in values]
        producer.flush(30)
        outcomes = [f.exception(0) for f in futures]
    failed = [i for i, error in enumerate(outcomes) if error is not None]
    assert failed == ([big] if big is not None else [])
    kept = [v for i, v in enumerate(values) if i != big]
    assert [f.get(0).offset for i, f in enumerate(futures) if i != big] == list(range(len(kept)))
    assert _values_in_log(broker.bootstrap, topic, len(kept)) == kept
