"""kafkalike's transactional producer against a real broker, judged by confluent-kafka.

Commits and aborts (a read_committed confluent-kafka consumer, and kafkalike's own
read_committed consumer, see only committed records; read_uncommitted sees the aborted
ones too), fencing by a second instance with the same transactional.id, group offsets
that send_offsets_to_transaction makes visible only on commit (confluent-kafka's
committed()), and a consume-transform-produce application killed with SIGKILL mid-way
and restarted: the output holds every input record exactly once.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.consumer import ConsumerGroupMetadata, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafkalike.client.errors import (
    IllegalStateError,
    InvalidProducerEpochError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
    RecordTooLargeError,
    TransactionAbortedError,
)
from kafkalike.client.producer import KafkaProducer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30


def new_topic(bootstrap: str, partitions: int = 2) -> str:
    name = f"txn-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT_S)
    return name


def txn_producer(bootstrap: str, transactional_id: str, **extra) -> KafkaProducer:
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                              "linger.ms": 5, **extra})
    producer.init_transactions(TIMEOUT_S)
    return producer


def read_confluent(bootstrap: str, topic: str, isolation: str, expected: int, timeout_s: float = 15) -> list[bytes]:
    """Every value a confluent-kafka consumer reads, waiting for `expected` and a little beyond."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": isolation})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and len(values) < expected:
            for msg in consumer.consume(500, timeout=0.3):
                if not msg.error():
                    values.append(msg.value())
        extra = time.monotonic() + 1.0  # anything beyond what is expected would be a bug
        while time.monotonic() < extra:
            values.extend(m.value() for m in consumer.consume(500, timeout=0.2) if not m.error())
    finally:
        consumer.close()
    return values


def read_kafkalike(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed",
                              "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(values) < expected:
            values.extend(r.value for r in consumer.poll(0.3))
        values.extend(r.value for r in consumer.poll(1.0))
        return values
    finally:
        consumer.close()


def test_commits_are_read_and_aborts_are_not(broker):
    topic = new_topic(broker.bootstrap)
    producer = txn_producer(broker.bootstrap, f"tx-{topic}")
    try:
        producer.begin_transaction()
        futures = [producer.send(topic, f"committed-{i}".encode(), partition=i % 2) for i in range(10)]
        producer.commit_transaction(TIMEOUT_S)  # flushes first: every record is acknowledged
        assert all(f.done() and f.succeeded() for f in futures)

        producer.begin_transaction()
        for i in range(5):
            producer.send(topic, f"aborted-{i}".encode(), partition=i % 2)
        producer.flush(TIMEOUT_S)  # in the log, then aborted: read_committed must skip them
        producer.abort_transaction(TIMEOUT_S)

        producer.begin_transaction()
        producer.send(topic, b"committed-last", partition=1)
        producer.commit_transaction(TIMEOUT_S)

        with pytest.raises(IllegalStateError, match="Cannot call send in state READY"):
            producer.send(topic, b"outside a transaction")
    finally:
        producer.close()
    committed = sorted([f"committed-{i}".encode() for i in range(10)] + [b"committed-last"])
    assert sorted(read_confluent(broker.bootstrap, topic, "read_committed", 11)) == committed
    assert sorted(read_kafkalike(broker.bootstrap, topic, 2, 11)) == committed
    uncommitted = read_confluent(broker.bootstrap, topic, "read_uncommitted", 16)
    assert sorted(uncommitted) == sorted(committed + [f"aborted-{i}".encode() for i in range(5)])


def test_records_not_yet_sent_fail_when_the_transaction_aborts(broker):
    topic = new_topic(broker.bootstrap, partitions=1)
    producer = txn_producer(broker.bootstrap, f"tx-{topic}", **{"linger.ms": 60000, "batch.size": 1 << 20})
    try:
        producer.begin_transaction()
        future = producer.send(topic, b"never sent")  # lingers: still in the accumulator
        producer.abort_transaction(TIMEOUT_S)
        with pytest.raises(TransactionAbortedError):
            future.get(TIMEOUT_S)
        producer.begin_transaction()
        producer.send(topic, b"kept")
        producer.commit_transaction(TIMEOUT_S)
    finally:
        producer.close()
    assert read_confluent(broker.bootstrap, topic, "read_uncommitted", 1) == [b"kept"]


def test_a_failed_record_makes_the_transaction_abortable_and_the_abort_starts_over(broker):
    topic = f"txn-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": "1000"})])[topic].result(TIMEOUT_S)
    producer = txn_producer(broker.bootstrap, f"tx-{topic}")
    try:
        producer.begin_transaction()
        producer.send(topic, b"before the failure").get(TIMEOUT_S)
        with pytest.raises(RecordTooLargeError):
            producer.send(topic, b"x" * 2000).get(TIMEOUT_S)  # the broker refuses it: MESSAGE_TOO_LARGE
        with pytest.raises(KafkaError, match="Cannot perform send because"):
            producer.send(topic, b"while abortable")
        with pytest.raises(KafkaError, match="Cannot execute transactional method because we are in an error "
                                             "state") as commit:
            producer.commit_transaction(TIMEOUT_S)
        assert isinstance(commit.value.__cause__, RecordTooLargeError)
        epoch = producer._transactions.idempotence.producer_epoch
        producer.abort_transaction(TIMEOUT_S)  # and a new epoch: the partition's sequence had a gap
        assert producer._transactions.idempotence.producer_epoch == epoch + 1
        producer.begin_transaction()
        producer.send(topic, b"after the abort")
        producer.commit_transaction(TIMEOUT_S)
    finally:
        producer.close()
    assert read_confluent(broker.bootstrap, topic, "read_committed", 1) == [b"after the abort"]


def test_close_aborts_an_open_transaction(broker):
    topic = new_topic(broker.bootstrap, partitions=1)
    producer = txn_producer(broker.bootstrap, f"tx-{topic}")
    producer.begin_transaction()
    producer.send(topic, b"left open").get(TIMEOUT_S)
    producer.close()  # Java: "Aborting incomplete transaction due to shutdown"
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, b"after")
    plain.flush(TIMEOUT_S)
    # Left open, the transaction would hold read_committed readers back for transaction.timeout.ms.
    assert read_confluent(broker.bootstrap, topic, "read_committed", 1, timeout_s=10) == [b"after"]


def test_a_second_instance_with_the_same_transactional_id_fences_the_first(broker):
    topic = new_topic(broker.bootstrap)
    transactional_id = f"tx-{topic}"
    first = txn_producer(broker.bootstrap, transactional_id)
    try:
        first.begin_transaction()
        first.send(topic, b"from the zombie", partition=0).get(TIMEOUT_S)
        second = txn_producer(broker.bootstrap, transactional_id)  # fences `first`, aborts its transaction
        try:
            with pytest.raises(ProducerFencedError):
                first.commit_transaction(TIMEOUT_S)
            with pytest.raises(KafkaError) as sent:  # a fatal error: every later call says so
                first.send(topic, b"after the fence", partition=1)
            assert isinstance(sent.value.__cause__, ProducerFencedError)
            with pytest.raises(ProducerFencedError):
                first.begin_transaction()
            second.begin_transaction()
            second.send(topic, b"from the new instance", partition=1)
            second.commit_transaction(TIMEOUT_S)
        finally:
            second.close()
    finally:
        first.close()
    assert read_confluent(broker.bootstrap, topic, "read_committed", 1) == [b"from the new instance"]


def test_a_fenced_producer_learns_it_on_its_next_send(broker):
    topic = new_topic(broker.bootstrap)
    transactional_id = f"tx-{topic}"
    first = txn_producer(broker.bootstrap, transactional_id)
    try:
        first.begin_transaction()
        first.send(topic, b"zombie", partition=0).get(TIMEOUT_S)
        txn_producer(broker.bootstrap, transactional_id).close()
        # Partition 0 is in the transaction already: its leader refuses the old epoch
        # (abortable, KIP-588); partition 1 is new: the coordinator says fenced (fatal).
        with pytest.raises((InvalidProducerEpochError, ProducerFencedError)):
            first.send(topic, b"zombie again", partition=0).get(TIMEOUT_S)
        with pytest.raises((InvalidProducerEpochError, ProducerFencedError)):
            first.commit_transaction(TIMEOUT_S)
        with pytest.raises(ProducerFencedError):
            first.abort_transaction(TIMEOUT_S)  # the coordinator has the newer epoch
    finally:
        first.close()
    assert read_confluent(broker.bootstrap, topic, "read_committed", 0, timeout_s=2) == []


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int,
                      timeout_s: float = TIMEOUT_S) -> dict[int, int]:
    """The group's committed offsets as confluent-kafka's committed() reports them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = consumer.committed([CkTopicPartition(topic, p) for p in range(partitions)], timeout=timeout_s)
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    finally:
        consumer.close()


def test_send_offsets_to_transaction_commits_the_groups_offsets_only_on_commit(broker):
    source, sink = new_topic(broker.bootstrap), new_topic(broker.bootstrap)
    group = f"ctp-{source}"
    seed = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(6):
        seed.produce(source, f"in-{i}".encode(), partition=i % 2)
    seed.flush(TIMEOUT_S)
    consumer = KafkaConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                              "enable.auto.commit": False, "auto.offset.reset": "earliest",
                              "isolation.level": "read_committed"})
    producer = txn_producer(broker.bootstrap, f"tx-{source}")
    try:
        consumer.subscribe([source])
        records = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(records) < 6 and time.monotonic() < deadline:
            records.extend(consumer.poll(0.5))
        assert len(records) == 6
        positions = {tp: OffsetAndMetadata(consumer.position(tp)) for tp in consumer.assignment()}
        assert sorted(o.offset for o in positions.values()) == [3, 3]

        producer.begin_transaction()
        producer.send(sink, b"aborted output")
        producer.send_offsets_to_transaction(positions, consumer.group_metadata())
        producer.abort_transaction(TIMEOUT_S)
        assert committed_offsets(broker.bootstrap, group, source, 2) == {}

        producer.begin_transaction()
        for record in records:
            producer.send(sink, b"out-" + record.value)
        producer.send_offsets_to_transaction(positions, consumer.group_metadata())
        # Pending until the commit: librdkafka asks for stable offsets (KIP-447) and waits.
        with pytest.raises(KafkaException, match="Timed out"):
            committed_offsets(broker.bootstrap, group, source, 2, timeout_s=2)
        # kafkalike's consumer asks for stable offsets too, as the Java consumer does.
        assigned = sorted(consumer.assignment())
        with pytest.raises(KafkaTimeoutError):
            consumer.committed(assigned, timeout=2)
        producer.commit_transaction(TIMEOUT_S)
        # Right after the commit the markers may still be on their way; committed() waits for them.
        assert {tp.partition: o.offset for tp, o in consumer.committed(assigned).items()} == {0: 3, 1: 3}
        assert committed_offsets(broker.bootstrap, group, source, 2) == {0: 3, 1: 3}

        with pytest.raises(ValueError, match="generationId > 0 but member.id"):
            producer.send_offsets_to_transaction(positions, ConsumerGroupMetadata(group, 3, "", None))
    finally:
        producer.close()
        consumer.close()
    assert sorted(read_confluent(broker.bootstrap, sink, "read_committed", 6)) == \
        sorted(f"out-in-{i}".encode() for i in range(6))


def start_app(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.integration.eos_app", bootstrap, source, sink, group,
                             transactional_id], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)


def wait_for_line(process: subprocess.Popen, prefix: str, at_least: int, timeout_s: float) -> int:
    """Read the app's lines until one is '<prefix> N' with N >= at_least; returns N."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline().decode()
        if not line:
            break
        if line.startswith(prefix) and int(line.split()[1]) >= at_least:
            return int(line.split()[1])
    raise AssertionError(f"the app did not commit {at_least} records in {timeout_s}s; stderr: "
                         f"{process.stderr.read().decode()[-3000:] if process.poll() is not None else '(running)'}")


def test_consume_transform_produce_is_exactly_once_across_a_kill_9_of_the_app(broker):
    source, sink = new_topic(broker.bootstrap, 3), new_topic(broker.bootstrap, 2)
    count = 600
    seed = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(count):
        seed.produce(source, f"{i:04d}".encode(), key=str(i % 7).encode())
    seed.flush(TIMEOUT_S)
    group, transactional_id = f"eos-{source}", f"eos-app-{source}"
    app = start_app(broker.bootstrap, source, sink, group, transactional_id)
    try:
        wait_for_line(app, "committed", 100, 60)
        wait_for_line(app, "open", 0, 30)
        os.killpg(app.pid, signal.SIGKILL)  # inside a transaction whose records are in the log
        app.wait(10)
        app = start_app(broker.bootstrap, source, sink, group, transactional_id)
        output = read_confluent(broker.bootstrap, sink, "read_committed", count, timeout_s=60)
    finally:
        if app.poll() is None:
            os.killpg(app.pid, signal.SIGKILL)
        app.wait(10)
        app.stdout.close()
        app.stderr.close()
    expected = sorted(f"out-{i:04d}".encode() for i in range(count))
    assert len(output) == count, f"{len(output)} committed output records for {count} inputs"
    assert sorted(output) == expected  # each input exactly once: nothing lost, nothing twice
    # The killed transaction's records are in the log (read_uncommitted sees them), aborted.
    assert len(read_confluent(broker.bootstrap, sink, "read_uncommitted", count + 1, timeout_s=10)) > count
