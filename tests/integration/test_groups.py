"""The group coordinator in real brokers: __consumer_offsets is created on the first
FindCoordinator, commits are replicated before they are acknowledged, a new leader of
the group's partition takes over the group from the log after the coordinator is
killed, and v0 offsets go to ZooKeeper as in Kafka 2.8.

Requests are spoken directly with kafkalike's blocking connection, so each answer's
error code is visible exactly as the broker sent it.
"""
from __future__ import annotations

import json
import shutil
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.connection import BrokerConnection, KafkaConnectionError
from kafkalike.coordinator.group_metadata_manager import partition_for
from kafkalike.coordinator.records import offset_key
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.consumer_protocol import ConsumerProtocolSubscription
from kafkalike.protocol.messages.describe_groups import DescribeGroupsRequest
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from kafkalike.protocol.messages.heartbeat import HeartbeatRequest
from kafkalike.protocol.messages.join_group import JoinGroupRequest
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.messages.offset_commit import OffsetCommitRequest
from kafkalike.protocol.messages.offset_fetch import OffsetFetchRequest
from kafkalike.protocol.messages.sync_group import SyncGroupRequest
from tests.conftest import scratch_dir

pytestmark = pytest.mark.integration

OFFSETS = "__consumer_offsets"
OFFSETS_PARTITIONS = 6


def wait_for(fetch, done, timeout: float = 30.0, what: str = "an answer"):
    """Ask again until `done(answer)`; connection errors (a broker dying) count as not yet."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fetch()
            if done(last):
                return last
        except KafkaConnectionError as exc:
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last: {last}")


@pytest.fixture
def cluster(zk_chroot):
    base = scratch_dir("groups")
    c = Cluster(zk_chroot, base, 3, {"offsets.topic.replication.factor": "3",
                                     "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)})
    try:
        c.start()
        yield c
    finally:
        c.kill()
        shutil.rmtree(base, ignore_errors=True)


def connect(broker) -> BrokerConnection:
    return BrokerConnection(broker.host, broker.port, client_id="groups-test", timeout=30).connect()


def find_coordinator(conn: BrokerConnection, group: str):
    return wait_for(lambda: conn.send(FindCoordinatorRequest(key=group, key_type=0), 3),
                    lambda r: r.error_code == ErrorCode.NONE, what=f"a coordinator for {group}")


def subscription(topic: str) -> bytes:
    return b"\x00\x00" + ConsumerProtocolSubscription(topics=[topic], user_data=None).encode(0)


def join_and_sync(conn: BrokerConnection, group: str, topic: str) -> tuple[str, int]:
    def join(member_id: str):
        return conn.send(JoinGroupRequest(
            group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription(topic))]), 7)
    first = join("")
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    joined = join(first.member_id)
    assert joined.error_code == ErrorCode.NONE and joined.leader == joined.member_id
    synced = conn.send(SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"all")]), 5)
    assert synced.error_code == ErrorCode.NONE and synced.assignment == b"all"
    return joined.member_id, joined.generation_id


def commit(conn, group, member_id, generation, topic, offsets: dict[int, int], version: int = 8):
    P = OffsetCommitRequest.OffsetCommitRequestPartition
    resp = conn.send(OffsetCommitRequest(group_id=group, generation_id=generation, member_id=member_id, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            P(partition_index=p, committed_offset=o, committed_metadata="m") for p, o in offsets.items()])]), version)
    return {p.partition_index: p.error_code for t in resp.topics for p in t.partitions}


def fetch_offsets(conn, group, topic, partitions, version: int = 7):
    resp = conn.send(OffsetFetchRequest(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=list(partitions))]), version)
    return resp


def create_topic(cluster, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(20)


def test_first_find_coordinator_creates_a_replicated_compacted_offsets_topic(cluster, kazoo_client):
    conn = connect(cluster.brokers[0])
    try:
        first = conn.send(FindCoordinatorRequest(key="g", key_type=0), 3)
        assert first.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE      # being created
        found = find_coordinator(conn, "g")
        md = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=OFFSETS)]), 9)
        [topic] = md.topics
        assert topic.is_internal and len(topic.partitions) == OFFSETS_PARTITIONS
        assert all(len(p.replica_nodes) == 3 for p in topic.partitions)
        leader = {p.partition_index: p.leader_id for p in topic.partitions}[partition_for("g", OFFSETS_PARTITIONS)]
        broker = cluster.brokers[leader]
        assert (found.node_id, found.host, found.port) == (leader, broker.host, broker.port)
        data, _ = kazoo_client.get(f"/config/topics/{OFFSETS}")
        assert json.loads(data)["config"] == {"cleanup.policy": "compact", "segment.bytes": "104857600",
                                              "compression.type": "producer"}
    finally:
        conn.close()


def test_the_group_survives_the_death_of_its_coordinator(cluster):
    group, topic = "survivor", "events"
    create_topic(cluster, topic, 2)
    conn = connect(cluster.brokers[0])
    found = find_coordinator(conn, group)
    conn.close()
    coordinator = cluster.brokers[found.node_id]
    others = [b for b in cluster.brokers if b is not coordinator]
    elsewhere = connect(others[0])
    joined = elsewhere.send(JoinGroupRequest(group_id=group, session_timeout_ms=30000, member_id="",
                                             protocol_type="consumer", protocols=[]), 7)
    assert joined.error_code == ErrorCode.NOT_COORDINATOR      # only the partition leader coordinates

    conn = connect(coordinator)
    member, generation = join_and_sync(conn, group, topic)
    assert commit(conn, group, member, generation, topic, {0: 17, 1: 4}) == {0: 0, 1: 0}
    conn.close()
    # acks=all: every replica of the group's partition has the commit once it is acknowledged.
    p = partition_for(group, OFFSETS_PARTITIONS)
    key = offset_key(group, topic, 0)
    for broker in cluster.brokers:
        logs = b"".join(f.read_bytes() for f in sorted((broker.log_dir / f"{OFFSETS}-{p}").glob("*.log")))
        assert key in logs, f"broker {broker.broker_id} lacks the commit"

    coordinator.kill()
    new = wait_for(lambda: elsewhere.send(FindCoordinatorRequest(key=group, key_type=0), 3),
                   lambda r: r.error_code == ErrorCode.NONE and r.node_id != coordinator.broker_id,
                   what="a new coordinator")
    conn = connect(cluster.brokers[new.node_id])
    try:
        fetched = wait_for(lambda: fetch_offsets(conn, group, topic, [0, 1]),
                           lambda r: r.error_code == ErrorCode.NONE, what="the loaded offsets")
        assert [(p.partition_index, p.committed_offset, p.metadata) for p in fetched.topics[0].partitions] == [
            (0, 17, "m"), (1, 4, "m")]
        [described] = conn.send(DescribeGroupsRequest(groups=[group]), 5).groups
        assert (described.group_state, [m.member_id for m in described.members]) == ("Stable", [member])
        assert described.members[0].member_assignment == b"all"
        # The member carries on with the generation it had.
        beat = conn.send(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member), 4)
        assert beat.error_code == ErrorCode.NONE
        assert commit(conn, group, member, generation, topic, {0: 18}) == {0: 0}
    finally:
        conn.close()
        elsewhere.close()


def test_offset_commit_v0_uses_zookeeper_like_kafka_2_8(cluster, kazoo_client):
    create_topic(cluster, "old-client-topic", 1)
    conn = connect(cluster.brokers[0])
    try:
        # CreateTopics answers once the broker that served it knows the topic; broker 0
        # may learn of it an UpdateMetadata later (UNKNOWN_TOPIC_OR_PARTITION meanwhile).
        assert wait_for(lambda: commit(conn, "old-group", "", -1, "old-client-topic", {0: 42}, version=0),
                        lambda r: r != {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}) == {0: 0}
        data, _ = kazoo_client.get("/consumers/old-group/offsets/old-client-topic/0")
        assert data == b"42"
        v0 = fetch_offsets(conn, "old-group", "old-client-topic", [0], version=0)
        assert [(p.committed_offset, p.error_code) for p in v0.topics[0].partitions] == [(42, 0)]
        missing = fetch_offsets(conn, "old-group", "old-client-topic", [5], version=0)
        assert missing.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Kafka-stored offsets are a different place: v1+ does not see it.
        find_coordinator(conn, "old-group")
        coordinator = connect(cluster.brokers[find_coordinator(conn, "old-group").node_id])
        try:
            v1 = wait_for(lambda: fetch_offsets(coordinator, "old-group", "old-client-topic", [0], version=1),
                          lambda r: r.topics[0].partitions[0].error_code == ErrorCode.NONE)
            assert v1.topics[0].partitions[0].committed_offset == -1
        finally:
            coordinator.close()
    finally:
        conn.close()


def test_no_offsets_topic_while_fewer_brokers_live_than_its_replication_factor(zk_chroot):
    base = scratch_dir("groups-rf")
    small = Cluster(zk_chroot, base, 1, {"offsets.topic.replication.factor": "3"})
    try:
        small.start()
        conn = connect(small.brokers[0])
        for _ in range(5):
            answer = conn.send(FindCoordinatorRequest(key="g", key_type=0), 3)
            assert (answer.error_code, answer.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
            time.sleep(0.2)
        md = conn.send(MetadataRequest(topics=None), 9)
        assert OFFSETS not in {t.name for t in md.topics}
        conn.close()
    finally:
        small.kill()
        shutil.rmtree(base, ignore_errors=True)
