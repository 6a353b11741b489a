"""kill -9 of a transaction's coordinator in the middle of the transaction.

Three brokers keep __transaction_state with replication factor 3 (min.insync.replicas
2), so every state the coordinator wrote before answering (Ongoing, with the
transaction's partitions) is on the survivors. A confluent-kafka transactional producer
produces its records, then the coordinator's broker is killed and the producer commits.
What a user relies on:

- the producer finds the new coordinator (the new leader of the id's
  __transaction_state partition) and its commit either succeeds or fails in a way that
  lets it abort; either way the transaction ends cleanly;
- a read_committed consumer then sees all of the transaction's records or none of them,
  never a part, and the producer carries on with its next transaction.

And once a commit is decided (PrepareCommit written, the producer told it committed)
while a partition leader cannot take its marker (SIGSTOPped), a kill -9 of the
coordinator loses nothing: the new coordinator loads PrepareCommit, sends the markers
again (duplicates are harmless) and writes CompleteCommit, and every record of the
transaction becomes visible once the leader wakes. And when it is the partition's leader
that dies (kill -9 while frozen) after the commit was decided, the marker goes to the
follower that takes over, and the producer's next transaction commits after it.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.admin import AdminClient as KafkalikeAdmin
from kafkalike.client.admin import NewTopic as KafkalikeNewTopic
from kafkalike.client.connection import BrokerConnection, KafkaConnectionError
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from tests.conftest import scratch_dir

pytestmark = pytest.mark.fault

TOPIC = "ledger"
TXN_ID = "ledger-writer"
PARTITIONS = 3


@pytest.fixture
def cluster(zk_chroot):
    base = scratch_dir("txn-failover")
    c = Cluster(zk_chroot, base, 3, {"transaction.state.log.replication.factor": "3",
                                     "transaction.state.log.min.isr": "2",
                                     "transaction.state.log.num.partitions": "5",
                                     "offsets.topic.replication.factor": "3",
                                     "offsets.topic.num.partitions": "5",
                                     "replica.lag.time.max.ms": "3000",
                                     "zookeeper.session.timeout.ms": "6000"})
    try:
        c.start()
        yield c
    finally:
        c.kill()
        shutil.rmtree(base, ignore_errors=True)


def transaction_coordinator(cluster) -> int:
    """The node the brokers name for TXN_ID (FindCoordinator key type 1)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for broker in cluster.brokers:
            conn = BrokerConnection(broker.host, broker.port, client_id="txn-probe", timeout=5)
            try:
                conn.connect()
                answer = conn.send(FindCoordinatorRequest(key=TXN_ID, key_type=1), 3)
            except KafkaConnectionError:
                continue
            finally:
                conn.close()
            if answer.error_code == ErrorCode.NONE:
                return answer.node_id
        time.sleep(0.2)
    raise AssertionError("no transaction coordinator named within 30 s")


def read_committed(cluster, expected: int, topics: tuple[str, ...] = (TOPIC,), partitions: int = PARTITIONS
                   ) -> list[bytes]:
    """Every partition from its start, without a group (__consumer_offsets cannot be
    created with a broker down and offsets.topic.replication.factor 3)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"audit-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.3)
            if msg is not None and not msg.error():
                values.append(msg.value())
            if len(values) >= expected:
                quiet_until = quiet_until or time.monotonic() + 2     # anything more would be a bug
                if time.monotonic() > quiet_until:
                    break
    finally:
        consumer.close()
    return values


def test_kill_9_of_the_coordinator_mid_transaction_ends_it_cleanly(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TXN_ID,
                         "transaction.timeout.ms": 60000, "linger.ms": 5})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(30):
        producer.produce(TOPIC, value=b"first-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0

    victim = transaction_coordinator(cluster)
    cluster.broker(victim).kill()
    committed = True
    try:
        producer.commit_transaction(90)
    except KafkaException as exc:
        error = exc.args[0]
        assert error.txn_requires_abort() and not error.fatal(), error
        producer.abort_transaction(90)
        committed = False
    assert transaction_coordinator(cluster) != victim

    # The producer goes on: a second transaction through the new coordinator.
    producer.begin_transaction()
    for i in range(6):
        producer.produce(TOPIC, value=b"second-%d" % i, partition=i % PARTITIONS)
    producer.commit_transaction(60)

    first = [b"first-%d" % i for i in range(30)] if committed else []
    second = [b"second-%d" % i for i in range(6)]
    values = read_committed(cluster, len(first) + len(second))
    assert sorted(values) == sorted(first + second)


def test_a_decided_commit_survives_the_coordinators_kill_9_before_its_markers_land(cluster):
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TXN_ID,
                         "transaction.timeout.ms": 60000, "linger.ms": 5})
    producer.init_transactions(60)
    coordinator = transaction_coordinator(cluster)
    admin = KafkalikeAdmin({"bootstrap.servers": cluster.bootstrap})
    try:
        controller = admin.controller_id()
        # one single-replica topic on a broker that is neither coordinator nor controller
        # (it gets SIGSTOPped), one on a broker that survives
        frozen = next(b.broker_id for b in cluster.brokers if b.broker_id not in (coordinator, controller))
        survivor = next(b.broker_id for b in cluster.brokers if b.broker_id not in (coordinator, frozen))
        admin.create_topics([KafkalikeNewTopic("frozen", replica_assignment={0: [frozen]}),
                             KafkalikeNewTopic("alive", replica_assignment={0: [survivor]})])
    finally:
        admin.close()
    producer.begin_transaction()
    for i in range(10):
        producer.produce("frozen", value=b"f-%d" % i)
        producer.produce("alive", value=b"a-%d" % i)
    assert producer.flush(30) == 0
    frozen_pid = cluster.broker(frozen).pid
    os.kill(frozen_pid, signal.SIGSTOP)
    try:
        producer.commit_transaction(60)          # PrepareCommit is in the log; markers cannot all land
        cluster.broker(coordinator).kill()
    finally:
        os.kill(frozen_pid, signal.SIGCONT)
    values = read_committed(cluster, 20, ("frozen", "alive"), 1)
    assert sorted(values) == sorted([b"f-%d" % i for i in range(10)] + [b"a-%d" % i for i in range(10)])
    # Leadership of the id's partition moves once ZooKeeper expires the killed broker's
    # session, which may come after the markers landed.
    deadline = time.monotonic() + 60
    while transaction_coordinator(cluster) == coordinator:
        assert time.monotonic() < deadline, "the transaction coordinator never moved off the killed broker"
        time.sleep(0.5)


def test_a_decided_commit_reaches_a_partition_whose_leader_dies_before_its_marker(cluster):
    """The commit is decided (PrepareCommit written, the producer told) while the leader of
    the transaction's partition is frozen, so its COMMIT marker cannot land; then that
    leader is killed -9. A follower becomes leader with the transaction's records (they
    were acknowledged by the ISR), the coordinator sends the marker to it, and a
    read_committed consumer sees every record. The producer's next transaction, which
    waits for the first to complete, commits too."""
    coordinator = transaction_coordinator(cluster)
    admin = KafkalikeAdmin({"bootstrap.servers": cluster.bootstrap})
    try:
        controller = admin.controller_id()
        # neither the coordinator nor the controller: both must live to move the marker on
        doomed = next(b.broker_id for b in cluster.brokers if b.broker_id not in (coordinator, controller))
        others = [b.broker_id for b in cluster.brokers if b.broker_id != doomed]
        admin.create_topics([KafkalikeNewTopic("moving", replica_assignment={0: [doomed, *others]})])
    finally:
        admin.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TXN_ID,
                         "transaction.timeout.ms": 60000, "linger.ms": 5})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(10):
        producer.produce("moving", value=b"m-%d" % i)
    assert producer.flush(30) == 0
    doomed_pid = cluster.broker(doomed).pid
    os.kill(doomed_pid, signal.SIGSTOP)
    try:
        producer.commit_transaction(60)          # decided; the marker for moving-0 cannot land
    finally:
        cluster.broker(doomed).kill()            # kill -9, still frozen
    producer.begin_transaction()
    for i in range(5):
        producer.produce("moving", value=b"n-%d" % i)
    producer.commit_transaction(90)
    values = read_committed(cluster, 15, ("moving",), 1)
    assert sorted(values) == sorted([b"m-%d" % i for i in range(10)] + [b"n-%d" % i for i in range(5)])
