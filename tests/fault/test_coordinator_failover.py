"""kill -9 of a group's coordinator: a new one takes over and nothing committed is lost.

Three brokers keep __consumer_offsets with replication factor 3. A confluent-kafka
(librdkafka) consumer group commits known offsets synchronously; once those commits
are acknowledged they are on every in-sync replica (the coordinator appends them with
acks=all). Then the coordinator's broker is killed. What a user relies on:

- another broker becomes the group's coordinator (the new leader of the group's
  __consumer_offsets partition) within the ZooKeeper session timeout and a load;
- while it loads, it says so (COORDINATOR_LOAD_IN_PROGRESS) or that it is not the
  coordinator yet, and never answers as if the group had no commits;
- once loaded, the group's offsets are exactly the last ones committed, the live member
  carries on committing through it, and a new member of the group starts reading at
  exactly the committed offsets.
"""
from __future__ import annotations

import io
import shutil
import time
from typing import TypeVar

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafkalike.cli.consumer_groups import main as consumer_groups
from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.client.connection import BrokerConnection, KafkaConnectionError
from kafkalike.coordinator.group_metadata_manager import partition_for
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.messages.offset_fetch import OffsetFetchRequest
from tests.conftest import scratch_dir
from tests.waiting import wait_until as wait_for

pytestmark = pytest.mark.fault

SESSION_TIMEOUT_MS = 6000
OFFSETS_PARTITIONS = 10
PARTITIONS = 3
PER_PARTITION = 20
TOPIC = "payments"
OFFSETS = "__consumer_offsets"
GROUP = "settlement"
BEFORE_KILL = {0: 7, 1: 13, 2: 4}
AFTER_KILL = {0: 9, 1: 13, 2: 11}
# Answers a coordinator may give while it is not ready for a group yet.
NOT_READY = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}
T = TypeVar("T")


@pytest.fixture
def cluster(zk_chroot):
    base = scratch_dir("coordinator-failover")
    c = Cluster(zk_chroot, base, 3, {"offsets.topic.replication.factor": "3",
                                     "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                                     "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    try:
        c.start()
        yield c
    finally:
        c.kill()
        shutil.rmtree(base, ignore_errors=True)


def member_config(cluster, **extra) -> dict:
    return {"bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "latest", **extra}


def join(consumer: Consumer) -> None:
    consumer.subscribe([TOPIC])
    wait_for(lambda: (consumer.poll(0.1), len(consumer.assignment()) == PARTITIONS)[1], 60,
             "the member to own every partition")


def commit_sync(consumer: Consumer, offsets: dict[int, int], timeout: float = 60) -> None:
    """A synchronous commit, tried again while the coordinator moves (as an application would)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
                                     asynchronous=False)
            assert all(tp.error is None for tp in result), result
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            consumer.poll(0.2)          # serve the client's callbacks while it finds the coordinator


def offsets_replica_set(admin: AdminClient) -> tuple[int, ...]:
    """The in-sync replicas of the group's __consumer_offsets partition."""
    described = admin.describe_topics([OFFSETS])[OFFSETS]
    return described.partitions[partition_for(GROUP, OFFSETS_PARTITIONS)].isr


def fetch_offsets(broker) -> tuple[ErrorCode, dict[int, int]]:
    """OffsetFetch v7 straight to one broker: its top-level error and the offsets it claims."""
    conn = BrokerConnection(broker.host, broker.port, client_id="failover-probe", timeout=5)
    try:
        conn.connect()
        answer = conn.send(OffsetFetchRequest(group_id=GROUP, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
            name=TOPIC, partition_indexes=list(range(PARTITIONS)))]), 7)
    finally:
        conn.close()
    return ErrorCode(answer.error_code), {p.partition_index: p.committed_offset
                                          for t in answer.topics for p in t.partitions}


def find_coordinator(broker) -> tuple[int, int]:
    """FindCoordinator to one broker: (error code, node id); a dead connection is (-1, -1)."""
    conn = BrokerConnection(broker.host, broker.port, client_id="failover-probe", timeout=5)
    try:
        conn.connect()
        answer = conn.send(FindCoordinatorRequest(key=GROUP, key_type=0), 3)
    except KafkaConnectionError:
        return -1, -1
    finally:
        conn.close()
    return answer.error_code, answer.node_id


def offsets_leader_seen_by(broker) -> int | None:
    """The leader of the group's __consumer_offsets partition in one broker's metadata."""
    conn = BrokerConnection(broker.host, broker.port, client_id="failover-probe", timeout=5)
    try:
        conn.connect()
        answer = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=OFFSETS)]), 9)
    except KafkaConnectionError:
        return None
    finally:
        conn.close()
    partition = partition_for(GROUP, OFFSETS_PARTITIONS)
    return next((p.leader_id for t in answer.topics for p in t.partitions if p.partition_index == partition), None)


def new_coordinator(survivors, old: int, timeout: float) -> int:
    """The survivors' answer once it names another broker; on time-out, what they said."""
    deadline = time.monotonic() + timeout
    answers = []
    while time.monotonic() < deadline:
        answers = [find_coordinator(b) for b in survivors]
        found = [node for error, node in answers if error == ErrorCode.NONE and node != old]
        if found:
            return found[0]
        time.sleep(0.1)
    leaders = {b.broker_id: offsets_leader_seen_by(b) for b in survivors}
    raise AssertionError(f"no new coordinator {timeout}s after broker {old} died: FindCoordinator answers "
                         f"(error, node) {answers}; leader of {OFFSETS}-{partition_for(GROUP, OFFSETS_PARTITIONS)} "
                         f"in each survivor's metadata {leaders}")


def first_offsets(cluster) -> dict[int, int]:
    """The offset of the first record a brand-new member of the group receives per partition."""
    consumer = Consumer(member_config(cluster))
    consumer.subscribe([TOPIC])
    seen: dict[int, int] = {}
    try:
        wait_for(lambda: _collect(consumer, seen) and len(seen) == PARTITIONS, 60,
                 "records from every partition")
    finally:
        consumer.close()
    return seen


def _collect(consumer: Consumer, seen: dict[int, int]) -> bool:
    msg = consumer.poll(0.1)
    if msg is not None and not msg.error():
        seen.setdefault(msg.partition(), msg.offset())
    return True


def test_a_new_coordinator_serves_the_groups_last_commits_after_kill_9(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(PARTITIONS * PER_PARTITION):
            producer.produce(TOPIC, value=b"payment-%d" % i, partition=i % PARTITIONS)
        assert producer.flush(30) == 0

        live = Consumer(member_config(cluster))
        join(live)
        old = admin.find_coordinator(GROUP).id
        # acks=all covers the ISR: wait until it holds all three brokers before relying on it.
        wait_for(lambda: len(offsets_replica_set(admin)) == 3, 60, "a full ISR for the group's partition")
        commit_sync(live, {0: 2, 1: 2, 2: 2})
        commit_sync(live, BEFORE_KILL)
        assert {tp[1]: o.offset for tp, o in admin.list_group_offsets(GROUP).items()} == BEFORE_KILL

        victim = cluster.brokers[old]
        survivors = [b for b in cluster.brokers if b is not victim]
        victim.kill()

        new = new_coordinator(survivors, old, 3 * SESSION_TIMEOUT_MS / 1000 + 30)
        coordinator = cluster.brokers[new]
        answers: list[ErrorCode] = []

        def loaded() -> dict[int, int] | None:
            error, found = fetch_offsets(coordinator)
            answers.append(error)
            return found if error == ErrorCode.NONE else None
        found = wait_for(loaded, 60, "the new coordinator to load the group")
        # Until it had loaded the partition it said it was not ready, never "no commits".
        assert set(answers[:-1]) <= NOT_READY, answers
        assert found == BEFORE_KILL

        # The tools see the new coordinator and the commits made before the crash.
        out, err = io.StringIO(), io.StringIO()
        assert consumer_groups(["--bootstrap-server", coordinator.bootstrap, "--describe", "--group", GROUP,
                                "--state", "--timeout", "30000"], out=out, err=err) == 0
        assert f"{coordinator.bootstrap} ({new})" in out.getvalue()
        assert {tp[1]: o.offset for tp, o in admin.list_group_offsets(GROUP).items()} == BEFORE_KILL

        # The live member carries on through the new coordinator; then a new member starts
        # exactly where the group's last commit says.
        commit_sync(live, AFTER_KILL)
        live.close()
        assert {tp[1]: o.offset for tp, o in admin.list_group_offsets(GROUP).items()} == AFTER_KILL
        assert first_offsets(cluster) == AFTER_KILL
    finally:
        admin.close()
