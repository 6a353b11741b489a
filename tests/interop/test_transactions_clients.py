"""Transactional producers of third-party clients against one broker (KIP-98, KIP-447).

confluent-kafka (librdkafka) and kafka-python 3 find the transaction coordinator
(FindCoordinator key type 1, which creates __transaction_state), get a producer id and
epoch (InitProducerId), add partitions and offsets, and commit or abort (EndTxn); the
coordinator then writes markers into the partitions. A second instance with the same
transactional.id fences the first. A read_committed consumer sees what was committed and
nothing that was aborted.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.interop

TIMEOUT_S = 30


def create_topic(bootstrap: str, name: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT_S)


def txn_producer(bootstrap: str, txn_id: str, **extra) -> Producer:
    config = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
              "transaction.timeout.ms": 60000, **extra}
    producer = Producer(config)
    producer.init_transactions(TIMEOUT_S)
    return producer


def consume_all(bootstrap: str, topic: str, isolation: str, expected: int | None = None,
                timeout_s: float = 10) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": isolation})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and (expected is None or len(values) < expected):
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            values.append(msg.value())
        if expected is not None:      # anything beyond what is expected would be a bug: look a little more
            extra_deadline = time.monotonic() + 1.5
            while time.monotonic() < extra_deadline:
                msg = consumer.poll(0.3)
                if msg is not None and not msg.error():
                    values.append(msg.value())
    finally:
        consumer.close()
    return values


def test_confluent_kafka_commits_and_aborts(broker, topic_name):
    create_topic(broker.bootstrap, topic_name)
    producer = txn_producer(broker.bootstrap, f"txn-{topic_name}")
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic_name, key=b"k", value=f"committed-{i}".encode(), partition=i % 2)
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic_name, value=f"aborted-{i}".encode(), partition=i % 2)
    producer.flush(TIMEOUT_S)
    producer.abort_transaction(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic_name, value=b"committed-last", partition=0)
    producer.commit_transaction(TIMEOUT_S)
    values = consume_all(broker.bootstrap, topic_name, "read_committed", expected=11)
    assert sorted(values) == sorted([f"committed-{i}".encode() for i in range(10)] + [b"committed-last"])
    # read_uncommitted sees the aborted records too (they are in the log, markers skipped)
    uncommitted = consume_all(broker.bootstrap, topic_name, "read_uncommitted", expected=16)
    assert sorted(v for v in uncommitted if v.startswith(b"aborted")) == [f"aborted-{i}".encode()
                                                                          for i in range(5)]


def test_a_second_instance_fences_the_first(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 1)
    txn_id = f"txn-{topic_name}"
    first = txn_producer(broker.bootstrap, txn_id)
    first.begin_transaction()
    first.produce(topic_name, value=b"from-the-first")
    first.flush(TIMEOUT_S)
    second = txn_producer(broker.bootstrap, txn_id)      # aborts the first one's open transaction
    second.begin_transaction()
    second.produce(topic_name, value=b"from-the-second")
    second.commit_transaction(TIMEOUT_S)
    with pytest.raises(KafkaException) as raised:
        first.produce(topic_name, value=b"after-fencing")
        first.commit_transaction(TIMEOUT_S)
    error = raised.value.args[0]
    assert error.fatal(), error
    assert "fenced" in error.str().lower(), error.str()
    assert consume_all(broker.bootstrap, topic_name, "read_committed", expected=1) == [b"from-the-second"]


def test_send_offsets_to_transaction_in_a_consume_transform_produce_loop(broker, topic_name):
    source, sink, group = f"{topic_name}-in", f"{topic_name}-out", f"g-{topic_name}"
    create_topic(broker.bootstrap, source, 1)
    create_topic(broker.bootstrap, sink, 1)
    feeder = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(30):
        feeder.produce(source, value=f"{i}".encode())
    feeder.flush(TIMEOUT_S)

    def run(limit: int, commit: bool) -> int:
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed"})
        consumer.subscribe([source])
        producer = txn_producer(broker.bootstrap, f"ctp-{topic_name}")
        done = 0
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while done < limit and time.monotonic() < deadline:
                msgs = [m for m in consumer.consume(10, 1.0) if not m.error()]
                if not msgs:
                    continue
                producer.begin_transaction()
                for m in msgs:
                    producer.produce(sink, value=b"x" + m.value())
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata(), TIMEOUT_S)
                if commit:
                    producer.commit_transaction(TIMEOUT_S)
                else:
                    producer.abort_transaction(TIMEOUT_S)
                done += len(msgs)
        finally:
            consumer.close()
        return done

    run(10, commit=False)            # aborted: neither the outputs nor the offsets count
    assert run(30, commit=True) == 30
    out = consume_all(broker.bootstrap, sink, "read_committed", expected=30)
    assert sorted(out) == sorted(b"x%d" % i for i in range(30))
    check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        committed = check.committed([TopicPartition(source, 0)], TIMEOUT_S)
    finally:
        check.close()
    assert committed[0].offset == 30


def test_kafka_python_transactional_producer(broker, topic_name):
    from kafka import KafkaProducer
    create_topic(broker.bootstrap, topic_name, 1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"kp-{topic_name}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(5):
            producer.send(topic_name, value=f"kp-committed-{i}".encode())
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic_name, value=b"kp-aborted")
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(10)
    values = consume_all(broker.bootstrap, topic_name, "read_committed", expected=5)
    assert sorted(values) == [f"kp-committed-{i}".encode() for i in range(5)]


def test_a_timeout_above_transaction_max_timeout_ms_is_refused(broker):
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "too-patient",
                         "transaction.timeout.ms": 900001})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, raised.value.args[0]
