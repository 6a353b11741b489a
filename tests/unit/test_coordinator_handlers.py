"""The group and offset API handlers over an in-memory connection: what each version
of each request is answered with, byte-decoded as a client would read it."""
from __future__ import annotations

import struct

import pytest
from twisted.internet.testing import StringTransport

from kafkalike.broker.admin_manager import TopicResult
from kafkalike.broker.metadata_cache import BrokerInfo, Endpoint, MetadataCache, PartitionInfo
from kafkalike.broker.network import KafkaServerFactory
from kafkalike.broker.registry import load_handlers
from kafkalike.coordinator.config import OFFSETS_TOPIC
from kafkalike.coordinator.records import OffsetKey, decode_offset_value
from kafkalike.protocol.api import decode_response, encode_request
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.delete_groups import DeleteGroupsRequest
from kafkalike.protocol.messages.describe_groups import DescribeGroupsRequest
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from kafkalike.protocol.messages.heartbeat import HeartbeatRequest
from kafkalike.protocol.messages.join_group import JoinGroupRequest
from kafkalike.protocol.messages.leave_group import LeaveGroupRequest
from kafkalike.protocol.messages.list_groups import ListGroupsRequest
from kafkalike.protocol.messages.offset_commit import OffsetCommitRequest
from kafkalike.protocol.messages.offset_delete import OffsetDeleteRequest
from kafkalike.protocol.messages.offset_fetch import OffsetFetchRequest
from kafkalike.protocol.messages.sync_group import SyncGroupRequest
from tests.unit.broker_fakes import services
from tests.unit.test_coordinator_membership import Harness, subscription

load_handlers()


class FakeAdmin:
    def __init__(self):
        self.created = []

    async def create_topic(self, name, num_partitions=-1, replication_factor=-1, assignments=None, configs=None,
                           *, validate_only=False, timeout_ms=30000):
        self.created.append((name, num_partitions, replication_factor, configs))
        return TopicResult()


class FakeServer:
    """Just what the handlers reach: the coordinator, the metadata cache, the admin."""

    def __init__(self, coordinator, partitions: int, offsets_topic: bool = True, brokers: int = 1):
        self.group_coordinator = coordinator
        self.admin = FakeAdmin()
        self.metadata_cache = cache = MetadataCache(0)
        cache.brokers = {b: BrokerInfo(b, (Endpoint("PLAINTEXT", f"broker{b}.example", 9092 + b),))
                         for b in range(brokers)}
        topics = {"t": 2}
        if offsets_topic:
            topics[OFFSETS_TOPIC] = partitions
        for topic, count in topics.items():
            cache.partitions[topic] = {p: PartitionInfo(topic, p, 0, 0, [0], [0]) for p in range(count)}
        self.services = services(groups=coordinator, admin=self.admin, metadata=cache)


class Client:
    def __init__(self, server):
        factory = KafkaServerFactory(server.services, 1 << 20)
        self.conn = factory.buildProtocol(None)
        self.transport = StringTransport()
        self.conn.makeConnection(self.transport)
        self.correlation = 0

    def send(self, api_key: int, version: int, body, client_id: str = "test-client"):
        self.correlation += 1
        data = encode_request(api_key, version, self.correlation, client_id, body)
        self.conn.dataReceived(struct.pack(">i", len(data)) + data)
        return (api_key, version)

    def answers(self) -> list:
        data = self.transport.value()
        self.transport.clear()
        out = []
        while data:
            size = struct.unpack(">i", data[:4])[0]
            out.append(data[4:4 + size])
            data = data[4 + size:]
        return out

    def call(self, api_key: int, version: int, body, **kwargs):
        self.send(api_key, version, body, **kwargs)
        [frame] = self.answers()
        return decode_response(api_key, version, frame)[1]


@pytest.fixture
def h(shm_path) -> Harness:
    harness = Harness(shm_path, partitions=3)
    harness.lead()
    return harness


@pytest.fixture
def client(h) -> Client:
    return Client(FakeServer(h.coordinator, 3))


def join_request(member_id="", **kw):
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("t"))
    return JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=30000, member_id=member_id,
                            protocol_type="consumer", protocols=[protocol], **kw)


# -- FindCoordinator ---------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_names_the_leader_of_the_groups_partition(client, version):
    resp = client.call(10, version, FindCoordinatorRequest(key="my-group", key_type=0))
    assert (resp.error_code, resp.node_id, resp.host, resp.port) == (0, 0, "broker0.example", 9092)
    if version >= 1:
        assert resp.error_message == "NONE"


def test_find_coordinator_for_a_transactional_id_without_a_running_coordinator_or_of_an_unknown_key_type(client):
    """No transaction coordinator running (the broker is starting or stopping):
    COORDINATOR_NOT_AVAILABLE, and no __transaction_state is created. A key type other
    than 0 (group) and 1 (transaction) is INVALID_REQUEST."""
    resp = client.call(10, 3, FindCoordinatorRequest(key="txn", key_type=1))
    assert (resp.error_code, resp.node_id, resp.port) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1)
    assert client.conn.factory.services.admin.created == []
    assert client.call(10, 3, FindCoordinatorRequest(key="x", key_type=7)).error_code == ErrorCode.INVALID_REQUEST


def transactions_server(h, props=None, brokers=3, state_topic_partitions=None):
    """A FakeServer whose services hold a started TransactionCoordinator configured from
    a broker's server.properties (`props` over Kafka 2.8's defaults)."""
    from dataclasses import replace

    from twisted.internet.task import Clock

    from kafkalike.broker.config import KafkaConfig
    from kafkalike.coordinator.transaction.config import TRANSACTION_STATE_TOPIC, TransactionConfig
    from kafkalike.coordinator.transaction.coordinator import TransactionCoordinator
    server = FakeServer(h.coordinator, 3, brokers=brokers)
    config = KafkaConfig({"zookeeper.connect": "localhost:2181", **(props or {})}, hostname="b")
    coordinator = TransactionCoordinator(0, TransactionConfig.from_kafka_config(config), None, None,
                                         server.metadata_cache, "PLAINTEXT", Clock())
    coordinator.startup()
    if state_topic_partitions:
        server.metadata_cache.partitions[TRANSACTION_STATE_TOPIC] = {
            p: PartitionInfo(TRANSACTION_STATE_TOPIC, p, p % brokers, 0, [p % brokers], [p % brokers])
            for p in range(state_topic_partitions)}
    server.services = replace(server.services, transactions=coordinator)
    return server, coordinator


@pytest.mark.parametrize("props,partitions,replicas,configs", [
    ({}, 50, 3, {"min.insync.replicas": "2", "segment.bytes": "104857600"}),        # Kafka 2.8's defaults
    ({"transaction.state.log.num.partitions": "7", "transaction.state.log.replication.factor": "2",
      "transaction.state.log.min.isr": "1", "transaction.state.log.segment.bytes": "1048576"},
     7, 2, {"min.insync.replicas": "1", "segment.bytes": "1048576"}),
], ids=["defaults", "configured"])
def test_first_find_coordinator_for_a_transactional_id_creates_the_transaction_state_topic(h, props, partitions,
                                                                                            replicas, configs):
    """As Kafka 2.8's TransactionStateManager/AutoTopicCreationManager: transaction.state.log.num.partitions
    partitions, transaction.state.log.replication.factor replicas, compacted, uncompressed,
    min.insync.replicas from transaction.state.log.min.isr, segment.bytes from
    transaction.state.log.segment.bytes, unclean election off. The client hears
    COORDINATOR_NOT_AVAILABLE meanwhile and asks again."""
    from kafkalike.coordinator.transaction.config import TRANSACTION_STATE_TOPIC
    server, coordinator = transactions_server(h, props)
    try:
        resp = Client(server).call(10, 3, FindCoordinatorRequest(key="txn", key_type=1))
        assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert server.admin.created == [(TRANSACTION_STATE_TOPIC, partitions, replicas, {
            "cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
            **configs})]
    finally:
        coordinator.shutdown()


def test_the_transaction_state_topic_waits_for_enough_brokers(h):
    server, coordinator = transactions_server(h, brokers=2)          # replication factor 3 by default
    try:
        resp = Client(server).call(10, 3, FindCoordinatorRequest(key="txn", key_type=1))
        assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert server.admin.created == []
    finally:
        coordinator.shutdown()


def test_find_coordinator_for_a_transactional_id_names_the_leader_of_its_state_partition(h):
    """Kafka's partitionFor: Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions."""
    def java_hash(text: str) -> int:
        value = 0
        for ch in text:                  # ASCII keys: one UTF-16 unit each
            value = (31 * value + ord(ch)) & 0xFFFFFFFF
        return value - (1 << 32) if value >= 1 << 31 else value

    server, coordinator = transactions_server(h, state_topic_partitions=50)
    try:
        client = Client(server)
        for key in ("txn", "my-transactional-id", "polygenelubricants"):   # the last hashes to Integer.MIN_VALUE
            code = java_hash(key)
            partition = (0 if code == -(1 << 31) else abs(code)) % 50
            resp = client.call(10, 3, FindCoordinatorRequest(key=key, key_type=1))
            assert (resp.error_code, resp.node_id, resp.port) == (0, partition % 3, 9092 + partition % 3), key
        assert server.admin.created == []
    finally:
        coordinator.shutdown()


def test_first_find_coordinator_creates_the_offsets_topic(h):
    server = FakeServer(h.coordinator, 3, offsets_topic=False)
    resp = Client(server).call(10, 2, FindCoordinatorRequest(key="g"))
    assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert server.admin.created == [(OFFSETS_TOPIC, 3, 1, {"cleanup.policy": "compact", "segment.bytes": "104857600",
                                                             "compression.type": "producer"})]


def test_offsets_topic_waits_for_enough_brokers(shm_path):
    h = Harness(shm_path, partitions=3, offsets_topic_replication_factor=3)
    h.lead()
    server = FakeServer(h.coordinator, 3, offsets_topic=False, brokers=2)
    assert Client(server).call(10, 2, FindCoordinatorRequest(key="g")).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert server.admin.created == []


# -- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ---------------------------------------

def test_join_group_v0_joins_at_once_and_v4_asks_for_a_member_id(h, client):
    client.send(11, 0, join_request())
    assert client.answers() == []                       # waits for the (0 ms) initial delay
    h.tick(0)
    [frame] = client.answers()
    joined = decode_response(11, 0, frame)[1]
    assert joined.error_code == 0 and joined.generation_id == 1 and joined.protocol_name == "range"
    assert joined.member_id.startswith("test-client-") and joined.leader == joined.member_id
    first = client.call(11, 4, join_request())
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id.startswith("test-client-")


def test_join_group_error_answers_in_each_version(client):
    v7 = client.call(11, 7, join_request(member_id="unknown"))
    assert (v7.error_code, v7.protocol_type, v7.protocol_name, v7.generation_id) == (
        ErrorCode.UNKNOWN_MEMBER_ID, None, None, -1)
    v5 = client.call(11, 5, join_request(member_id="unknown"))
    assert (v5.error_code, v5.protocol_name, v5.leader) == (ErrorCode.UNKNOWN_MEMBER_ID, "", "")


def test_sync_group_v5_requires_protocol_type_and_name(client):
    resp = client.call(14, 5, SyncGroupRequest(group_id="g", generation_id=1, member_id="m"))
    assert resp.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_whole_rebalance_over_the_wire(h, client):
    member = client.call(11, 6, join_request()).member_id
    client.send(11, 6, join_request(member_id=member))
    h.tick(0)
    joined = decode_response(11, 6, client.answers()[0])[1]
    assert [m.member_id for m in joined.members] == [member]
    sync = client.call(14, 5, SyncGroupRequest(
        group_id="g", generation_id=joined.generation_id, member_id=member, protocol_type="consumer",
        protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"mine")]))
    assert (sync.error_code, sync.assignment) == (0, b"mine")
    assert (sync.protocol_type, sync.protocol_name) == ("consumer", "range")
    hb = client.call(12, 4, HeartbeatRequest(group_id="g", generation_id=joined.generation_id, member_id=member))
    assert hb.error_code == 0
    described = client.call(15, 5, DescribeGroupsRequest(groups=["g"], include_authorized_operations=True))
    [group] = described.groups
    assert (group.group_state, group.protocol_type, group.protocol_data) == ("Stable", "consumer", "range")
    [m] = group.members
    assert (m.member_id, m.client_id, m.member_assignment) == (member, "test-client", b"mine")
    assert m.client_host == "/192.168.1.1"               # the peer, as Java prints an InetAddress
    assert m.member_metadata == subscription("t")
    assert group.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)   # READ, DELETE, DESCRIBE
    listed = client.call(16, 4, ListGroupsRequest(states_filter=["Stable"]))
    assert [(g.group_id, g.protocol_type, g.group_state) for g in listed.groups] == [("g", "consumer", "Stable")]
    assert client.call(16, 4, ListGroupsRequest(states_filter=["Empty"])).groups == []
    leave = client.call(13, 0, LeaveGroupRequest(group_id="g", member_id=member))
    assert leave.error_code == 0


def test_leave_group_v0_reports_the_members_error_and_v3_each_member(client):
    assert client.call(13, 0, LeaveGroupRequest(group_id="g", member_id="m")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    v3 = client.call(13, 3, LeaveGroupRequest(group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id="m1"),
        LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="i1")]))
    assert v3.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in v3.members] == [
        ("m1", None, ErrorCode.UNKNOWN_MEMBER_ID), ("", "i1", ErrorCode.UNKNOWN_MEMBER_ID)]


def test_describe_of_an_unknown_group_is_dead_and_delete_groups_dedups(client):
    [group] = client.call(15, 0, DescribeGroupsRequest(groups=["nobody"])).groups
    assert (group.error_code, group.group_state, group.members) == (0, "Dead", [])
    resp = client.call(42, 2, DeleteGroupsRequest(groups_names=["nobody", "nobody"]))
    assert [(r.group_id, r.error_code) for r in resp.results] == [("nobody", ErrorCode.GROUP_ID_NOT_FOUND)]


# -- offsets -----------------------------------------------------------------------------

def commit_request(version, partitions, **kw):
    P = OffsetCommitRequest.OffsetCommitRequestPartition
    return OffsetCommitRequest(group_id="g", generation_id=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=[
            P(partition_index=p, committed_offset=o, committed_metadata="meta") for p, o in parts.items()])
        for t, parts in partitions.items()], **kw)


def test_offset_commit_and_fetch_round_trip(h, client):
    resp = client.call(8, 8, commit_request(8, {"t": {0: 10, 1: 11}, "missing": {0: 1}}))
    errors = {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}
    assert errors == {("t", 0): 0, ("t", 1): 0, ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    fetched = client.call(9, 7, OffsetFetchRequest(group_id="g", topics=None, require_stable=True))
    assert fetched.error_code == 0
    assert {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.committed_leader_epoch)
            for t in fetched.topics for p in t.partitions} == {("t", 0): (10, "meta", -1), ("t", 1): (11, "meta", -1)}
    asked = client.call(9, 1, OffsetFetchRequest(group_id="g", topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[1, 5])]))
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in asked.topics[0].partitions] == [
        (1, 11, 0), (5, -1, 0)]


def test_offset_commit_v2_retention_is_written_as_an_expire_timestamp(h, client):
    client.call(8, 2, commit_request(2, {"t": {0: 3}}, retention_time_ms=60_000))
    p = h.coordinator.partition_for("g")
    [(key, value)] = [(k, v) for k, v in h.log_records(p) if isinstance(k, OffsetKey)]
    assert value[:2] == b"\x00\x01"
    assert decode_offset_value(value).expire_timestamp == h.now() + 60_000


def test_offset_fetch_errors_are_per_partition_before_v2_and_top_level_after(h, client):
    h.coordinator.on_resigned(h.coordinator.partition_for("g"))
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
    v1 = client.call(9, 1, OffsetFetchRequest(group_id="g", topics=topics))
    assert [(p.committed_offset, p.error_code) for p in v1.topics[0].partitions] == [(-1, ErrorCode.NOT_COORDINATOR)]
    v3 = client.call(9, 3, OffsetFetchRequest(group_id="g", topics=topics))
    assert (v3.error_code, v3.topics) == (ErrorCode.NOT_COORDINATOR, [])


def test_offset_delete_reports_unknown_partitions_and_group_errors(h, client):
    client.call(8, 8, commit_request(8, {"t": {0: 10, 1: 11}}))
    T, P = OffsetDeleteRequest.OffsetDeleteRequestTopic, OffsetDeleteRequest.OffsetDeleteRequestPartition
    resp = client.call(47, 0, OffsetDeleteRequest(group_id="g", topics=[
        T(name="t", partitions=[P(partition_index=0)]), T(name="missing", partitions=[P(partition_index=0)])]))
    assert resp.error_code == 0
    assert {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions} == {
        ("t", 0): 0, ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    nobody = client.call(47, 0, OffsetDeleteRequest(group_id="nobody",
                                                    topics=[T(name="t", partitions=[P(partition_index=0)])]))
    assert (nobody.error_code, nobody.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])
