"""Transactions on a partition leader, driven as a transaction coordinator drives them: transactional
batches produced with raw requests, then WriteTxnMarkers. read_uncommitted sees everything,
read_committed stops at the last stable offset and never sees aborted records (our consumer,
confluent-kafka's and kafka-python's), ListOffsets honours the isolation level, and a kill -9
of the broker rebuilds the LSO and the `.txnindex` from the log."""
from __future__ import annotations

import os
import struct
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

from kafkalike.client.connection import BrokerConnection
from kafkalike.client.consumer import KafkaConsumer, TopicPartition
from kafkalike.protocol.errors import ErrorCode as E
from kafkalike.protocol.messages.create_topics import CreateTopicsRequest
from kafkalike.protocol.messages.describe_producers import DescribeProducersRequest
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest
from kafkalike.protocol.messages.produce import ProduceRequest
from kafkalike.protocol.messages.write_txn_markers import WriteTxnMarkersRequest
from kafkalike.lab.cluster import BrokerStartError
from kafkalike.records import decode_batches, encode_batch
from tests.conftest import _cluster

pytestmark = pytest.mark.integration

TOPIC = "txn-markers"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def broker(module_zk_chroot):
    """This module's broker: a short ZooKeeper session, so its restart after kill -9 comes soon."""
    for cluster in _cluster(module_zk_chroot, 1, {"zookeeper.session.timeout.ms": "6000"}):
        yield cluster.brokers[0]


@pytest.fixture(scope="module")
def conn(broker):
    c = BrokerConnection("127.0.0.1", broker.port)
    c.connect()
    resp = c.send(CreateTopicsRequest(timeout_ms=20000, topics=[CreateTopicsRequest.CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=1)]), version=5)
    assert resp.topics[0].error_code == 0
    deadline = time.monotonic() + 20
    while produce(c, encode_batch([(None, b"probe")]), acks=1) is None:   # until the leader is up
        assert time.monotonic() < deadline, f"produce error {produce.last_error}"
        time.sleep(0.2)
    yield c
    c.close()


def produce(c, batch: bytes, transactional_id: str | None = "app-1", acks: int = -1) -> int | None:
    """The base offset, or None for an error (the code is in produce.last_error)."""
    resp = c.send(ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch)])]), version=8)
    part = resp.responses[0].partition_responses[0]
    produce.last_error = part.error_code
    return part.base_offset if part.error_code == 0 else None


def txn_batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    return encode_batch([(None, v) for v in values], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        is_transactional=True)


def markers(c, pid: int, epoch: int, commit: bool, coordinator_epoch: int = 5,
            partitions: tuple = ((TOPIC, 0),)) -> dict:
    topics: dict[str, list[int]] = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(p)
    resp = c.send(WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                for t, ps in topics.items()])]), version=1)
    return {(t.name, p.partition_index): p.error_code for m in resp.markers for t in m.topics for p in t.partitions}


def fetch(c, offset: int, isolation: int):
    resp = c.send(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, isolation_level=isolation, topics=[
        FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])]), version=11)
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == 0
    values = [(r.offset, r.value) for b in decode_batches(bytes(part.record_set or b""))
              if not b.header.is_control for r in b.records()]
    aborted = None if part.aborted_transactions is None else [
        (a.producer_id, a.first_offset) for a in part.aborted_transactions]
    return values, part.last_stable_offset, part.high_watermark, aborted


def latest(c, isolation: int) -> int:
    resp = c.send(ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), version=5)
    return resp.topics[0].partitions[0].offset


def init_pid(c) -> tuple[int, int]:
    resp = c.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), version=2)
    assert resp.error_code == 0
    return resp.producer_id, resp.producer_epoch


def committed_values(values) -> list[bytes]:
    return [v for _, v in values]


def test_markers_commit_and_abort_and_read_committed_hides_aborted_data(conn, broker):
    pid, epoch = init_pid(conn)
    start = produce(conn, txn_batch(pid, epoch, 0, [b"aborted-1", b"aborted-2"]))
    assert start == 1                                               # after the fixture's probe
    assert produce(conn, encode_batch([(None, b"plain")]), transactional_id=None) == 3
    # The transaction is open: read_committed stops at its first offset, read_uncommitted does not.
    values, lso, hw, aborted = fetch(conn, 0, isolation=0)
    assert committed_values(values) == [b"probe", b"aborted-1", b"aborted-2", b"plain"]
    assert (lso, hw, aborted) == (1, 4, None)
    values, lso, hw, aborted = fetch(conn, 0, isolation=1)
    assert committed_values(values) == [b"probe"] and (lso, aborted) == (1, [])
    assert (latest(conn, 0), latest(conn, 1)) == (4, 1)
    described = conn.send(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=TOPIC, partition_indexes=[0])]), version=0).topics[0].partitions[0].active_producers
    assert [(p.producer_id, p.current_txn_start_offset) for p in described] == [(pid, 1)]

    assert markers(conn, pid, epoch, commit=False) == {(TOPIC, 0): E.NONE}          # offset 4
    assert produce(conn, txn_batch(pid, epoch, 2, [b"committed-1", b"committed-2"])) == 5
    assert markers(conn, pid, epoch, commit=True) == {(TOPIC, 0): E.NONE}           # offset 7
    values, lso, hw, aborted = fetch(conn, 0, isolation=1)
    assert (lso, hw) == (8, 8) and aborted == [(pid, 1)]
    assert (latest(conn, 0), latest(conn, 1)) == (8, 8)
    # A consumer applies the list: only committed and plain records remain.
    kept = [v for off, v in values if off not in (1, 2)]   # the aborted batch (pid from offset 1)
    assert kept == [b"probe", b"plain", b"committed-1", b"committed-2"]
    values, _, _, aborted = fetch(conn, 5, isolation=1)
    assert aborted == [] and committed_values(values) == [b"committed-1", b"committed-2"]

    # A retried marker for a producer with no open transaction is written and harmless.
    assert markers(conn, pid, epoch, commit=True) == {(TOPIC, 0): E.NONE}           # offset 8
    expected = [b"probe", b"plain", b"committed-1", b"committed-2"]
    assert read_with_our_consumer(broker.bootstrap) == expected
    assert read_with_confluent_kafka(broker.bootstrap) == expected
    assert read_with_kafka_python(broker.bootstrap) == expected


def read_with_our_consumer(bootstrap: str) -> list[bytes]:
    with KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed",
                        "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(TOPIC, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < 4 and time.monotonic() < deadline:
            got.extend(r.value for r in consumer.poll(0.5))
        got.extend(r.value for r in consumer.poll(0.5))
        return got


def read_with_confluent_kafka(bootstrap: str, last: bytes = b"committed-2") -> list[bytes]:
    """Everything read_committed returns up to the record `last`, plus whatever follows at once."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-check", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([CTopicPartition(TOPIC, 0, 0)])
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                if last in got:
                    break
            elif msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def read_with_kafka_python(bootstrap: str) -> list[bytes]:
    from kafka import KafkaConsumer as PyConsumer
    from kafka import TopicPartition as PyTopicPartition
    consumer = PyConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                          auto_offset_reset="earliest", enable_auto_commit=False, api_version=(2, 8))
    try:
        consumer.assign([PyTopicPartition(TOPIC, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            batch = consumer.poll(500)
            for records in batch.values():
                got.extend(r.value for r in records)
            if not batch and len(got) >= 4:
                break
        return got
    finally:
        consumer.close()


def test_fencing_and_per_partition_errors(conn):
    pid, epoch = 900_001, 3                        # a coordinator's producer at epoch 3
    first = produce(conn, txn_batch(pid, epoch, 0, [b"zombie?"]))
    assert first is not None
    assert markers(conn, pid, epoch, commit=False, coordinator_epoch=7) == {(TOPIC, 0): E.NONE}
    assert produce(conn, txn_batch(pid, epoch, 1, [b"next"])) is not None
    assert markers(conn, pid, epoch, commit=True, coordinator_epoch=6) == {(TOPIC, 0): E.TRANSACTION_COORDINATOR_FENCED}
    assert markers(conn, pid, epoch - 1, commit=True, coordinator_epoch=7) == {(TOPIC, 0): E.INVALID_PRODUCER_EPOCH}
    assert markers(conn, pid, epoch, commit=True, coordinator_epoch=7,
                   partitions=((TOPIC, 0), (TOPIC, 9), ("no-such-topic", 0))) == {
        (TOPIC, 0): E.NONE, (TOPIC, 9): E.UNKNOWN_TOPIC_OR_PARTITION, ("no-such-topic", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    # A transactional batch needs the request's transactional id (Kafka 2.8's authorization check).
    assert produce(conn, txn_batch(pid, epoch, 2, [b"x"]), transactional_id=None) is None
    assert produce.last_error == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # A plain batch from a producer inside a transaction is refused.
    assert produce(conn, txn_batch(pid, epoch, 2, [b"open"])) is not None
    plain = encode_batch([(None, b"plain")], producer_id=pid, producer_epoch=epoch, base_sequence=3)
    assert produce(conn, plain, transactional_id=None) is None and produce.last_error == E.INVALID_TXN_STATE
    assert markers(conn, pid, epoch, commit=False, coordinator_epoch=7) == {(TOPIC, 0): E.NONE}


def test_a_real_coordinators_markers_commit_records_and_offsets(conn, broker):
    """confluent-kafka's transactional producer through the transaction coordinator: its markers
    reach this handler, aborted records stay hidden, and offsets sent to the transaction
    become the group's committed offsets only with the commit marker on __consumer_offsets."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "markers-e2e"})
    producer.init_transactions(30)
    group = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "markers-e2e-group"})
    for round_, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(TOPIC, value=b"e2e-%d-%d" % (round_, i), partition=0)
        producer.send_offsets_to_transaction([CTopicPartition(TOPIC, 0, 100 + round_)],
                                             group.consumer_group_metadata(), 30)
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)
    committed = group.committed([CTopicPartition(TOPIC, 0)], timeout=10)[0].offset
    group.close()
    assert committed == 102            # round 1's offset was aborted with its records
    seen = [v for v in read_with_confluent_kafka(broker.bootstrap, b"e2e-2-4") if v.startswith(b"e2e-")]
    assert seen == [b"e2e-%d-%d" % (r, i) for r in (0, 2) for i in range(5)]


def test_dump_log_prints_the_markers(conn, broker):
    segment = partition_dir(broker) / "00000000000000000000.log"
    out = subprocess.run([str(ROOT / "bin" / "kafka-dump-log.sh"), "--files", str(segment), "--deep-iteration"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "endTxnMarker: ABORT coordinatorEpoch: 5" in out
    assert "endTxnMarker: COMMIT coordinatorEpoch: 5" in out
    assert "isTransactional: true" in out and "isControl: true" in out


def partition_dir(broker) -> Path:
    return Path(broker.log_dir) / f"{TOPIC}-0"


def test_kill_9_rebuilds_the_lso_and_the_txn_index(conn, broker):
    pid, epoch = 900_002, 0
    open_at = produce(conn, txn_batch(pid, epoch, 0, [b"left-open"]))
    values, lso, hw, aborted = fetch(conn, 0, isolation=1)
    assert lso == open_at < hw
    index = partition_dir(broker) / "00000000000000000000.txnindex"
    before = index.read_bytes()
    entries = [struct.unpack_from(">hqqqq", before, i) for i in range(0, len(before), 34)]
    assert len(before) % 34 == 0 and entries[0][:3] == (0, entries[0][1], 1) and len(entries) >= 3
    conn.close()
    broker.kill()
    os.unlink(index)                               # lost in the crash: the log has what it needs
    deadline = time.monotonic() + 30
    while True:            # until ZooKeeper expires the killed broker's session
        try:
            broker.restart()
            break
        except BrokerStartError:
            assert time.monotonic() < deadline, broker.log_tail()
            time.sleep(1)
    conn.connect()
    deadline = time.monotonic() + 30
    while True:
        try:
            after = fetch(conn, 0, isolation=1)
            break
        except AssertionError:
            assert time.monotonic() < deadline, "partition did not come back"
            time.sleep(0.3)
    assert after[1:] == (lso, hw, aborted)
    assert index.read_bytes() == before
    assert (latest(conn, 0), latest(conn, 1)) == (hw, lso)
    assert markers(conn, pid, epoch, commit=True) == {(TOPIC, 0): E.NONE}
    assert fetch(conn, 0, isolation=1)[1] == hw + 1

