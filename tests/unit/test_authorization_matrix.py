"""Every API the broker serves, at every version, sent by a principal no ACL lets in.

The broker has Kafka's AclAuthorizer with no ACLs at all, allow.everyone.if.no.acl.found
false and one super user (User:admin); the client is User:alice. Each request goes
through the listener over an in-memory connection and its answer is decoded from bytes,
then compared in full with what Kafka 2.8's KafkaApis answers (the error code where the
request is refused as a whole, per topic, partition, group or config resource where it
is refused piece by piece, the messages and the placeholder values that come with them).
The broker's managers (replica manager, logs, coordinators, controller, admin manager,
ZooKeeper) are tripwires: a refused request must not reach any of them. The same
requests from the super user must get past every check (no *_AUTHORIZATION_FAILED in the
answer), so each refusal is the authorizer's decision and not a hard-coded answer.

`test_every_api_is_in_the_matrix` keeps it complete: an API added to the registry
without a case here fails it.
"""
from __future__ import annotations

import dataclasses
import logging
import struct
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import pytest
from twisted.internet.testing import StringTransport

from kafkalike.broker.authorizer.acl_authorizer import AclAuthorizer
from kafkalike.broker.config import KafkaConfig
from kafkalike.broker.metadata_cache import MetadataCache, PartitionInfo
from kafkalike.broker.network import KafkaServerFactory
from kafkalike.broker.registry import HANDLERS, load_handlers
from kafkalike.protocol.api import APIS, decode_response, encode_request
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from kafkalike.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from kafkalike.protocol.messages.alter_client_quotas import AlterClientQuotasRequest, AlterClientQuotasResponse
from kafkalike.protocol.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from kafkalike.protocol.messages.alter_isr import AlterIsrRequest, AlterIsrResponse
from kafkalike.protocol.messages.alter_partition_reassignments import (AlterPartitionReassignmentsRequest,
                                                                       AlterPartitionReassignmentsResponse)
from kafkalike.protocol.messages.alter_replica_log_dirs import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse
from kafkalike.protocol.messages.alter_user_scram_credentials import (AlterUserScramCredentialsRequest,
                                                                      AlterUserScramCredentialsResponse)
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from kafkalike.protocol.messages.create_acls import CreateAclsRequest, CreateAclsResponse
from kafkalike.protocol.messages.create_delegation_token import (CreateDelegationTokenRequest,
                                                                 CreateDelegationTokenResponse)
from kafkalike.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
from kafkalike.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from kafkalike.protocol.messages.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from kafkalike.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from kafkalike.protocol.messages.delete_records import DeleteRecordsRequest, DeleteRecordsResponse
from kafkalike.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from kafkalike.protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from kafkalike.protocol.messages.describe_client_quotas import (DescribeClientQuotasRequest,
                                                                DescribeClientQuotasResponse)
from kafkalike.protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from kafkalike.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafkalike.protocol.messages.describe_delegation_token import (DescribeDelegationTokenRequest,
                                                                   DescribeDelegationTokenResponse)
from kafkalike.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafkalike.protocol.messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from kafkalike.protocol.messages.describe_producers import DescribeProducersRequest, DescribeProducersResponse
from kafkalike.protocol.messages.describe_user_scram_credentials import (DescribeUserScramCredentialsRequest,
                                                                         DescribeUserScramCredentialsResponse)
from kafkalike.protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from kafkalike.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from kafkalike.protocol.messages.expire_delegation_token import (ExpireDelegationTokenRequest,
                                                                 ExpireDelegationTokenResponse)
from kafkalike.protocol.messages.fetch import FetchRequest, FetchResponse
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkalike.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from kafkalike.protocol.messages.incremental_alter_configs import (IncrementalAlterConfigsRequest,
                                                                   IncrementalAlterConfigsResponse)
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from kafkalike.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from kafkalike.protocol.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from kafkalike.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from kafkalike.protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafkalike.protocol.messages.list_partition_reassignments import (ListPartitionReassignmentsRequest,
                                                                      ListPartitionReassignmentsResponse)
from kafkalike.protocol.messages.metadata import MetadataRequest, MetadataResponse
from kafkalike.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kafkalike.protocol.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from kafkalike.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from kafkalike.protocol.messages.offset_for_leader_epoch import (OffsetForLeaderEpochRequest,
                                                                 OffsetForLeaderEpochResponse)
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
from kafkalike.protocol.messages.renew_delegation_token import (RenewDelegationTokenRequest,
                                                                RenewDelegationTokenResponse)
from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from kafkalike.protocol.messages.stop_replica import StopReplicaRequest, StopReplicaResponse
from kafkalike.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from kafkalike.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafkalike.protocol.messages.update_features import UpdateFeaturesRequest, UpdateFeaturesResponse
from kafkalike.protocol.messages.update_metadata import UpdateMetadataRequest, UpdateMetadataResponse
from kafkalike.protocol.messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from kafkalike.records.batch import encode_batch
from tests.unit.broker_fakes import services

load_handlers()

E = ErrorCode
ALICE, ADMIN = "User:alice", "User:admin"
TOPIC, GROUP, TXN = "secret", "team", "payments-tx"
CLUSTER_ID = "kl-matrix-cluster-id"
TOPIC_ID = uuid.UUID("2b4e3fd1-9a47-4a5e-8f36-2f5a3b0c1d2e")
PEER = "10.1.2.3"
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = (E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED,
                                                          E.CLUSTER_AUTHORIZATION_FAILED,
                                                          E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
AUTHZ_CODES = {int(c) for c in ErrorCode if c.name.endswith("_AUTHORIZATION_FAILED")}
NO_MESSAGE = None
INT_MIN = -2147483648       # the schemas' default of the authorized-operations fields (KIP-430: omitted)


@dataclass(frozen=True)
class Sent:
    """What Kafka's refusal of a request may name: its size and the connection's id."""
    size: int
    connection_id: str


def cluster_refusal(sent: Sent, buffer_kept: bool = False) -> str:
    """The message of the ClusterAuthorizationException that Kafka's authorizeClusterOperation
    throws ("Request <RequestChannel.Request> is not authorized."), for this test's connection.
    Forwardable requests keep their buffer until answered; the others print it as null."""
    buffer = f"java.nio.HeapByteBuffer[pos={sent.size} lim={sent.size} cap={sent.size}]" if buffer_kept else "null"
    return (f"Request Request(processor=0, connectionId={sent.connection_id}, "
            f"session=Session({ALICE},/{PEER}), listenerName=ListenerName(PLAINTEXT), "
            f"securityProtocol=PLAINTEXT, buffer={buffer}, envelope=None) is not authorized.")


# -- the broker: an authorizer that allows nobody but the super user, tripwire managers ----


class Tripwire:
    """A manager a refused request must not reach: any attribute but the ones given
    (what KafkaApis reads before it authorizes, like the controller's isActive) is noted
    and fails."""

    def __init__(self, name: str, touched: list[str], **allowed: Any) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_touched", touched)
        for key, value in allowed.items():
            object.__setattr__(self, key, value)

    def __getattr__(self, attr: str):
        self._touched.append(f"{self._name}.{attr}")
        raise AssertionError(f"{self._name}.{attr} reached")


@dataclass
class _Group:
    group_id: str
    protocol_type: str = "consumer"
    state: str = "Stable"


class Broker:
    def __init__(self) -> None:
        self.touched: list[str] = []
        t = self.touched
        cache = MetadataCache(0)
        cache.partitions[TOPIC] = {p: PartitionInfo(TOPIC, p, 0, 0, [0], [0]) for p in range(2)}
        cache.topic_ids[TOPIC] = TOPIC_ID
        config = KafkaConfig({"zookeeper.connect": "zk:2181", "broker.id": "0", "log.dirs": "/nonexistent/kl"})
        self.authorizer = AclAuthorizer(super_users={ADMIN}, allow_everyone_if_no_acl_found=False)
        # ListGroups asks the coordinator first and filters what it lists, as KafkaApis does.
        groups = Tripwire("groups", t, active=True, list_groups=lambda states: (E.NONE, [_Group(GROUP)]))
        self.services = services(
            cluster_id=CLUSTER_ID, config=config, metadata=cache, authorizer=self.authorizer, groups=groups,
            zk=Tripwire("zk", t), replicas=Tripwire("replicas", t), logs=Tripwire("logs", t),
            topic_configs=Tripwire("topic_configs", t), admin=Tripwire("admin", t),
            controller=Tripwire("controller", t, active=True), producer_ids=Tripwire("producer_ids", t),
            transactions=Tripwire("transactions", t, active=True), alter_log_dirs=Tripwire("alter_log_dirs", t))

    def connect(self, principal: str) -> Connection:
        return Connection(self, principal)


class Connection:
    def __init__(self, broker: Broker, principal: str) -> None:
        factory = KafkaServerFactory(broker.services, 1 << 20)
        self.conn = factory.buildProtocol(None)
        self.transport = StringTransport(hostAddress=_address("127.0.0.1", 9092), peerAddress=_address(PEER, 54321))
        self.conn.makeConnection(self.transport)
        self.conn.principal = principal
        self.correlation = 0

    def ask(self, api_key: int, version: int, body):
        self.correlation += 1
        data = encode_request(api_key, version, self.correlation, "matrix", body)
        self.conn.dataReceived(struct.pack(">i", len(data)) + data)
        out = self.transport.value()
        self.transport.clear()
        assert out, f"no answer to {APIS[api_key].name} v{version} (connection closed: {self.transport.disconnecting})"
        size = struct.unpack(">i", out[:4])[0]
        assert len(out) == 4 + size, "exactly one answer"
        correlation, response = decode_response(api_key, version, out[4:])
        assert correlation == self.correlation
        return response, Sent(len(data), self.conn.connection_id)


def _address(host: str, port: int):
    from twisted.internet.address import IPv4Address
    return IPv4Address("TCP", host, port)


def normalized(api_key: int, version: int, response):
    """`response` as a client reads it at `version` (fields the version lacks dropped)."""
    from kafkalike.protocol.api import encode_response
    frame = b"".join(bytes(c) for c in encode_response(api_key, version, 7, response))
    return decode_response(api_key, version, frame)[1]


# -- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    api_key: int
    request: Callable[[int], Any]
    denied: Callable[..., Any]          # (version[, Sent]) -> Kafka 2.8's answer to alice
    versions: tuple[int, int] | None = None     # default: every version the broker serves
    logged: bool = True                 # Kafka logs the denial (kafka.authorizer.logger, INFO)

    def all_versions(self) -> list[int]:
        lo, hi = self.versions or (HANDLERS[self.api_key].min_version, HANDLERS[self.api_key].max_version)
        return list(range(lo, hi + 1))


CASES: list[Case] = []


def case(name: str, api_key: int, versions: tuple[int, int] | None = None, logged: bool = True):
    def register(fn):
        request, denied = fn()
        CASES.append(Case(name, api_key, request, denied, versions, logged))
        return fn
    return register


def batch(transactional: bool = False) -> bytes:
    return encode_batch([(b"k", b"v")], producer_id=7 if transactional else -1, producer_epoch=0 if transactional else -1,
                        base_sequence=0 if transactional else -1, is_transactional=transactional)


# Produce (0): WRITE on each topic; a transactional batch first needs WRITE on its transactional id.
@case("produce", 0)
def _produce():
    P = ProduceRequest
    R = ProduceResponse

    def request(v):
        return P(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
            P.TopicProduceData(name=TOPIC, partition_data=[P.PartitionProduceData(index=0, records=batch())])])

    def denied(v):
        return R(responses=[R.TopicProduceResponse(name=TOPIC, partition_responses=[R.PartitionProduceResponse(
            index=0, error_code=TOPIC_DENIED, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
            record_errors=[], error_message=None)])])
    return request, denied


@case("produce-transactional", 0, versions=(3, 9))
def _produce_transactional():
    P = ProduceRequest
    R = ProduceResponse

    def request(v):
        return P(transactional_id=TXN, acks=-1, timeout_ms=1000, topic_data=[
            P.TopicProduceData(name=TOPIC, partition_data=[P.PartitionProduceData(index=1, records=batch(True))])])

    def denied(v):
        return R(responses=[R.TopicProduceResponse(name=TOPIC, partition_responses=[R.PartitionProduceResponse(
            index=1, error_code=TXN_DENIED, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
            record_errors=[], error_message=None)])])
    return request, denied


def _fetch(replica_id: int):
    P = FetchRequest
    R = FetchResponse

    def request(v):
        return P(replica_id=replica_id, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                 session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                     P.FetchTopic(topic=TOPIC, partitions=[P.FetchPartition(
                         partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                         log_start_offset=-1, partition_max_bytes=1 << 20)])])

    def denied(v):
        return R(error_code=0, session_id=0, responses=[R.FetchableTopicResponse(topic=TOPIC, partition_responses=[
            R.FetchablePartitionResponse(partition=0, error_code=TOPIC_DENIED, high_watermark=-1,
                                         last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                                         preferred_read_replica=-1, record_set=b"")])])
    return request, denied


# Fetch (1): a consumer needs READ on each topic, a follower CLUSTER_ACTION; both are answered per partition.
case("fetch-consumer", 1)(lambda: _fetch(-1))
case("fetch-follower", 1)(lambda: _fetch(1))


# ListOffsets (2): DESCRIBE on each topic.
@case("list-offsets", 2)
def _list_offsets():
    P = ListOffsetsRequest
    R = ListOffsetsResponse

    def request(v):
        return P(replica_id=-1, isolation_level=0, topics=[P.ListOffsetsTopic(name=TOPIC, partitions=[
            P.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1, max_num_offsets=1)])])

    def denied(v):
        part = R.ListOffsetsPartitionResponse(partition_index=0, error_code=TOPIC_DENIED)
        if v == 0:
            part.old_style_offsets = []
        else:
            part.timestamp, part.offset, part.leader_epoch = -1, -1, -1
        return R(topics=[R.ListOffsetsTopicResponse(name=TOPIC, partitions=[part])])
    return request, denied


# Metadata (3): DESCRIBE on each listed topic, told TOPIC_AUTHORIZATION_FAILED without saying whether
# it exists (an auto-creatable missing one too, for the same reason); an all-topics request leaves
# them out; the cluster's authorized operations are 0 without DESCRIBE on the cluster.
@case("metadata-listed", 3)
def _metadata_listed():
    P = MetadataRequest
    R = MetadataResponse

    def request(v):
        return P(topics=[P.MetadataRequestTopic(name=TOPIC), P.MetadataRequestTopic(name="not-yet")],
                 allow_auto_topic_creation=True, include_cluster_authorized_operations=True,
                 include_topic_authorized_operations=True)

    def denied(v):
        refused = [R.MetadataResponseTopic(error_code=TOPIC_DENIED, name=n, is_internal=False, partitions=[],
                                           topic_authorized_operations=INT_MIN) for n in (TOPIC, "not-yet")]
        return R(brokers=[], cluster_id=CLUSTER_ID, controller_id=-1, topics=refused,
                 cluster_authorized_operations=0 if 8 <= v <= 10 else INT_MIN)
    return request, denied


@case("metadata-all-topics", 3, logged=False)     # an all-topics request logs no denial
def _metadata_all():
    P = MetadataRequest
    R = MetadataResponse

    def request(v):
        return P(topics=[] if v == 0 else None, allow_auto_topic_creation=True,
                 include_cluster_authorized_operations=False, include_topic_authorized_operations=False)

    def denied(v):
        return R(brokers=[], cluster_id=CLUSTER_ID, controller_id=-1, topics=[], cluster_authorized_operations=INT_MIN)
    return request, denied


# LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6), ControlledShutdown (7): CLUSTER_ACTION, refused
# through the request's getErrorResponse.
@case("leader-and-isr", 4)
def _leader_and_isr():
    P = LeaderAndIsrRequest
    R = LeaderAndIsrResponse

    def state(v):
        return P.LeaderAndIsrPartitionState(topic_name=TOPIC if v < 2 else None, partition_index=1,
                                            controller_epoch=1, leader=0, leader_epoch=3, isr=[0],
                                            zk_version=1, replicas=[0])

    def request(v):
        return P(controller_id=1, controller_epoch=1, broker_epoch=5, type=0, live_leaders=[],
                 ungrouped_partition_states=[state(v)] if v < 2 else [],
                 topic_states=[] if v < 2 else [P.LeaderAndIsrTopicState(topic_name=TOPIC, topic_id=TOPIC_ID,
                                                                         partition_states=[state(v)])])

    def denied(v):
        if v < 5:
            return R(error_code=CLUSTER_DENIED, partition_errors=[R.LeaderAndIsrPartitionError(
                topic_name=TOPIC, partition_index=1, error_code=CLUSTER_DENIED)])
        return R(error_code=CLUSTER_DENIED, topics=[R.LeaderAndIsrTopicError(topic_id=TOPIC_ID, partition_errors=[
            R.LeaderAndIsrPartitionError(partition_index=1, error_code=CLUSTER_DENIED)])])
    return request, denied


@case("stop-replica", 5)
def _stop_replica():
    P = StopReplicaRequest
    R = StopReplicaResponse

    def request(v):
        return P(controller_id=1, controller_epoch=1, broker_epoch=5, delete_partitions=True,
                 ungrouped_partitions=[P.StopReplicaPartitionV0(topic_name=TOPIC, partition_index=1)],
                 topics=[P.StopReplicaTopicV1(name=TOPIC, partition_indexes=[1])],
                 topic_states=[P.StopReplicaTopicState(topic_name=TOPIC, partition_states=[
                     P.StopReplicaPartitionState(partition_index=1, leader_epoch=3, delete_partition=True)])])

    def denied(v):
        return R(error_code=CLUSTER_DENIED, partition_errors=[R.StopReplicaPartitionError(
            topic_name=TOPIC, partition_index=1, error_code=CLUSTER_DENIED)])
    return request, denied


@case("update-metadata", 6)
def _update_metadata():
    P = UpdateMetadataRequest

    def request(v):
        state = P.UpdateMetadataPartitionState(topic_name=TOPIC if v < 5 else None, partition_index=0,
                                               controller_epoch=1, leader=-1, leader_epoch=9, isr=[],
                                               zk_version=9, replicas=[0], offline_replicas=[])
        return P(controller_id=1, controller_epoch=1, broker_epoch=5, live_brokers=[],
                 ungrouped_partition_states=[state] if v < 5 else [],
                 topic_states=[] if v < 5 else [P.UpdateMetadataTopicState(topic_name=TOPIC, topic_id=TOPIC_ID,
                                                                           partition_states=[state])])
    return request, lambda v: UpdateMetadataResponse(error_code=CLUSTER_DENIED)


@case("controlled-shutdown", 7)
def _controlled_shutdown():
    return (lambda v: ControlledShutdownRequest(broker_id=0, broker_epoch=5),
            lambda v: ControlledShutdownResponse(error_code=CLUSTER_DENIED, remaining_partitions=[]))


# OffsetCommit (8): READ on the group, else every partition GROUP_AUTHORIZATION_FAILED.
@case("offset-commit", 8)
def _offset_commit():
    P = OffsetCommitRequest
    R = OffsetCommitResponse

    def request(v):
        return P(group_id=GROUP, generation_id=1, member_id="m", group_instance_id=None, retention_time_ms=-1,
                 topics=[P.OffsetCommitRequestTopic(name=TOPIC, partitions=[P.OffsetCommitRequestPartition(
                     partition_index=0, committed_offset=10, committed_leader_epoch=-1, commit_timestamp=-1,
                     committed_metadata="")])])

    def denied(v):
        return R(topics=[R.OffsetCommitResponseTopic(name=TOPIC, partitions=[R.OffsetCommitResponsePartition(
            partition_index=0, error_code=GROUP_DENIED)])])
    return request, denied


# OffsetFetch (9): DESCRIBE on the group (OffsetFetchRequest.getErrorResponse: v0-1 per partition,
# v2+ at the top with no partitions).
@case("offset-fetch", 9)
def _offset_fetch():
    P = OffsetFetchRequest
    R = OffsetFetchResponse

    def request(v):
        return P(group_id=GROUP, require_stable=False,
                 topics=[P.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])])

    def denied(v):
        if v >= 2:
            return R(error_code=GROUP_DENIED, topics=[])
        return R(topics=[R.OffsetFetchResponseTopic(name=TOPIC, partitions=[R.OffsetFetchResponsePartition(
            partition_index=0, committed_offset=-1, committed_leader_epoch=-1, metadata="",
            error_code=GROUP_DENIED)])])
    return request, denied


# FindCoordinator (10): DESCRIBE on the group or the transactional id; FindCoordinatorResponse
# .prepareResponse(error, Node.noNode()) carries the error's message.
@case("find-group-coordinator", 10)
def _find_group_coordinator():
    return (lambda v: FindCoordinatorRequest(key=GROUP, key_type=0),
            lambda v: FindCoordinatorResponse(error_code=GROUP_DENIED, error_message="Group authorization failed.",
                                              node_id=-1, host="", port=-1))


@case("find-transaction-coordinator", 10, versions=(1, 3))
def _find_txn_coordinator():
    return (lambda v: FindCoordinatorRequest(key=TXN, key_type=1),
            lambda v: FindCoordinatorResponse(error_code=TXN_DENIED,
                                              error_message="Transactional Id authorization failed.",
                                              node_id=-1, host="", port=-1))


# JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14): READ on the group.
@case("join-group", 11)
def _join_group():
    P = JoinGroupRequest
    R = JoinGroupResponse

    def request(v):
        return P(group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                 group_instance_id=None, protocol_type="consumer",
                 protocols=[P.JoinGroupRequestProtocol(name="range", metadata=b"")])

    def denied(v):
        return R(error_code=GROUP_DENIED, generation_id=-1, protocol_type=None,
                 protocol_name=None if v >= 7 else "", leader="", member_id="", members=[])
    return request, denied


@case("heartbeat", 12)
def _heartbeat():
    return (lambda v: HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m", group_instance_id=None),
            lambda v: HeartbeatResponse(error_code=GROUP_DENIED))


@case("leave-group", 13)
def _leave_group():
    P = LeaveGroupRequest
    return (lambda v: P(group_id=GROUP, member_id="m",
                        members=[P.MemberIdentity(member_id="m", group_instance_id=None)]),
            lambda v: LeaveGroupResponse(error_code=GROUP_DENIED, members=[]))


@case("sync-group", 14)
def _sync_group():
    P = SyncGroupRequest
    return (lambda v: P(group_id=GROUP, generation_id=1, member_id="m", group_instance_id=None,
                        protocol_type="consumer", protocol_name="range",
                        assignments=[P.SyncGroupRequestAssignment(member_id="m", assignment=b"")]),
            lambda v: SyncGroupResponse(error_code=GROUP_DENIED, protocol_type=None, protocol_name=None,
                                        assignment=b""))


# DescribeGroups (15): DESCRIBE on each group (DescribeGroupsResponse.forError).
@case("describe-groups", 15)
def _describe_groups():
    R = DescribeGroupsResponse
    return (lambda v: DescribeGroupsRequest(groups=[GROUP], include_authorized_operations=True),
            lambda v: R(groups=[R.DescribedGroup(error_code=GROUP_DENIED, group_id=GROUP, group_state="",
                                                 protocol_type="", protocol_data="", members=[],
                                                 authorized_operations=INT_MIN)]))


# ListGroups (16): DESCRIBE on the cluster lists every group, else only those it may DESCRIBE.
@case("list-groups", 16)
def _list_groups():
    return (lambda v: ListGroupsRequest(states_filter=[]),
            lambda v: ListGroupsResponse(error_code=0, groups=[]))


# SaslHandshake (17), ApiVersions (18), SaslAuthenticate (36): no authorization; on a PLAINTEXT
# listener the SASL ones are an illegal state.
@case("sasl-handshake", 17)
def _sasl_handshake():
    return (lambda v: SaslHandshakeRequest(mechanism="PLAIN"),
            lambda v: SaslHandshakeResponse(error_code=E.ILLEGAL_SASL_STATE, mechanisms=[]))


@case("api-versions", 18)
def _api_versions():
    def denied(v):
        # Nothing to refuse: the answer is the registry's, as ApiVersions answers anyone.
        from kafkalike.broker.handlers.api_versions import handle_api_versions
        from kafkalike.broker.registry import RequestContext
        ctx = RequestContext(18, v, 0, "matrix", PEER, Broker().services)
        return handle_api_versions(ctx, ApiVersionsRequest(client_software_name="matrix",
                                                           client_software_version="1"))
    return (lambda v: ApiVersionsRequest(client_software_name="matrix", client_software_version="1"), denied)


# CreateTopics (19): CREATE on the cluster or the topic; without DESCRIBE_CONFIGS (v5+) the configs'
# error too.
@case("create-topics", 19)
def _create_topics():
    P = CreateTopicsRequest
    R = CreateTopicsResponse

    def request(v):
        return P(timeout_ms=1000, validate_only=False, topics=[P.CreatableTopic(
            name="new-topic", num_partitions=1, replication_factor=1, assignments=[], configs=[])])

    def denied(v):
        return R(topics=[R.CreatableTopicResult(name="new-topic", error_code=TOPIC_DENIED,
                                                error_message="Authorization failed.",
                                                topic_config_error_code=TOPIC_DENIED, num_partitions=-1,
                                                replication_factor=-1, configs=[])])
    return request, denied


# DeleteTopics (20): DELETE on the topic; by topic id (v6) the name is not told without DESCRIBE.
@case("delete-topics", 20)
def _delete_topics():
    P = DeleteTopicsRequest
    R = DeleteTopicsResponse

    def request(v):
        return P(timeout_ms=1000, topic_names=[TOPIC], topics=[P.DeleteTopicState(name=TOPIC)])

    def denied(v):
        return R(responses=[R.DeletableTopicResult(name=TOPIC, error_code=TOPIC_DENIED, error_message=None)])
    return request, denied


@case("delete-topics-by-id", 20, versions=(6, 6))
def _delete_topics_by_id():
    P = DeleteTopicsRequest
    R = DeleteTopicsResponse
    return (lambda v: P(timeout_ms=1000, topics=[P.DeleteTopicState(name=None, topic_id=TOPIC_ID)]),
            lambda v: R(responses=[R.DeletableTopicResult(name=None, topic_id=TOPIC_ID, error_code=TOPIC_DENIED,
                                                          error_message=None)]))


# DeleteRecords (21): DELETE on the topic.
@case("delete-records", 21)
def _delete_records():
    P = DeleteRecordsRequest
    R = DeleteRecordsResponse
    return (lambda v: P(timeout_ms=1000, topics=[P.DeleteRecordsTopic(name=TOPIC, partitions=[
                P.DeleteRecordsPartition(partition_index=0, offset=-1)])]),
            lambda v: R(topics=[R.DeleteRecordsTopicResult(name=TOPIC, partitions=[
                R.DeleteRecordsPartitionResult(partition_index=0, low_watermark=-1, error_code=TOPIC_DENIED)])]))


# InitProducerId (22): WRITE on the transactional id; without one IDEMPOTENT_WRITE on the cluster or
# WRITE on some topic (KIP-679).
@case("init-producer-id-transactional", 22)
def _init_pid_txn():
    return (lambda v: InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60000,
                                            producer_id=-1, producer_epoch=-1),
            lambda v: InitProducerIdResponse(error_code=TXN_DENIED, producer_id=-1, producer_epoch=-1))


@case("init-producer-id-idempotent", 22)
def _init_pid_idempotent():
    return (lambda v: InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000,
                                            producer_id=-1, producer_epoch=-1),
            lambda v: InitProducerIdResponse(error_code=CLUSTER_DENIED, producer_id=-1, producer_epoch=-1))


# OffsetForLeaderEpoch (23): CLUSTER_ACTION, or DESCRIBE on the topic (KIP-320).
def _offset_for_leader_epoch(replica_id: int):
    P = OffsetForLeaderEpochRequest
    R = OffsetForLeaderEpochResponse

    def request(v):
        return P(replica_id=replica_id, topics=[P.OffsetForLeaderTopic(topic=TOPIC, partitions=[
            P.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=2)])])

    def denied(v):
        return R(topics=[R.OffsetForLeaderTopicResult(topic=TOPIC, partitions=[
            R.EpochEndOffset(error_code=TOPIC_DENIED, partition=0, leader_epoch=-1, end_offset=-1)])])
    return request, denied


case("offset-for-leader-epoch", 23)(lambda: _offset_for_leader_epoch(-2))
case("offset-for-leader-epoch-follower", 23, versions=(3, 4))(lambda: _offset_for_leader_epoch(1))


# AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), TxnOffsetCommit (28): WRITE on the
# transactional id first.
@case("add-partitions-to-txn", 24)
def _add_partitions():
    P = AddPartitionsToTxnRequest
    R = AddPartitionsToTxnResponse
    return (lambda v: P(transactional_id=TXN, producer_id=7, producer_epoch=0,
                        topics=[P.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0, 1])]),
            lambda v: R(results=[R.AddPartitionsToTxnTopicResult(name=TOPIC, results=[
                R.AddPartitionsToTxnPartitionResult(partition_index=p, error_code=TXN_DENIED) for p in (0, 1)])]))


@case("add-offsets-to-txn", 25)
def _add_offsets():
    return (lambda v: AddOffsetsToTxnRequest(transactional_id=TXN, producer_id=7, producer_epoch=0, group_id=GROUP),
            lambda v: AddOffsetsToTxnResponse(error_code=TXN_DENIED))


@case("end-txn", 26)
def _end_txn():
    return (lambda v: EndTxnRequest(transactional_id=TXN, producer_id=7, producer_epoch=0, committed=True),
            lambda v: EndTxnResponse(error_code=TXN_DENIED))


# WriteTxnMarkers (27): CLUSTER_ACTION; WriteTxnMarkersRequest.getErrorResponse per marker and partition.
@case("write-txn-markers", 27)
def _write_txn_markers():
    P = WriteTxnMarkersRequest
    R = WriteTxnMarkersResponse
    return (lambda v: P(markers=[P.WritableTxnMarker(producer_id=7, producer_epoch=0, transaction_result=True,
                                                     coordinator_epoch=0, topics=[
                                                         P.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])])]),
            lambda v: R(markers=[R.WritableTxnMarkerResult(producer_id=7, topics=[R.WritableTxnMarkerTopicResult(
                name=TOPIC, partitions=[R.WritableTxnMarkerPartitionResult(partition_index=0,
                                                                            error_code=CLUSTER_DENIED)])])]))


@case("txn-offset-commit", 28)
def _txn_offset_commit():
    P = TxnOffsetCommitRequest
    R = TxnOffsetCommitResponse
    return (lambda v: P(transactional_id=TXN, group_id=GROUP, producer_id=7, producer_epoch=0, generation_id=-1,
                        member_id="", group_instance_id=None, topics=[P.TxnOffsetCommitRequestTopic(
                            name=TOPIC, partitions=[P.TxnOffsetCommitRequestPartition(
                                partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                                committed_metadata="")])]),
            lambda v: R(topics=[R.TxnOffsetCommitResponseTopic(name=TOPIC, partitions=[
                R.TxnOffsetCommitResponsePartition(partition_index=0, error_code=TXN_DENIED)])]))


# DescribeAcls (29): DESCRIBE on the cluster; CreateAcls (30), DeleteAcls (31): ALTER on the cluster.
# Refused through authorizeClusterOperation, whose exception names the request.
@case("describe-acls", 29)
def _describe_acls():
    return (lambda v: DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                          principal_filter=None, host_filter=None, operation=1, permission_type=1),
            lambda v, sent: DescribeAclsResponse(error_code=CLUSTER_DENIED, error_message=cluster_refusal(sent),
                                           resources=[]))


@case("create-acls", 30)
def _create_acls():
    P = CreateAclsRequest
    R = CreateAclsResponse
    creation = P.AclCreation(resource_type=2, resource_name=TOPIC, resource_pattern_type=3, principal=ALICE,
                             host="*", operation=2, permission_type=3)
    return (lambda v: P(creations=[creation, creation]),
            lambda v, sent: R(results=[R.AclCreationResult(error_code=CLUSTER_DENIED,
                                                           error_message=cluster_refusal(sent, True))] * 2))


@case("delete-acls", 31)
def _delete_acls():
    P = DeleteAclsRequest
    R = DeleteAclsResponse
    f = P.DeleteAclsFilter(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                           principal_filter=None, host_filter=None, operation=1, permission_type=1)
    return (lambda v: P(filters=[f]),
            lambda v, sent: R(filter_results=[R.DeleteAclsFilterResult(
                error_code=CLUSTER_DENIED, error_message=cluster_refusal(sent, True), matching_acls=[])]))


# DescribeConfigs (32): DESCRIBE_CONFIGS on the topic, or on the cluster for brokers and broker loggers,
# per resource with the error's message; AlterConfigs (33) and IncrementalAlterConfigs (44): ALTER_CONFIGS,
# per resource without a message.
TOPIC_RESOURCE, BROKER_RESOURCE, LOGGER_RESOURCE = 2, 4, 8


@case("describe-configs", 32)
def _describe_configs():
    P = DescribeConfigsRequest
    R = DescribeConfigsResponse
    resources = [(TOPIC_RESOURCE, TOPIC), (BROKER_RESOURCE, "0"), (LOGGER_RESOURCE, "0")]

    def request(v):
        return P(include_synonyms=False, include_documentation=False, resources=[
            P.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=None)
            for t, n in resources])

    def denied(v):
        return R(results=[R.DescribeConfigsResult(
            error_code=code, error_message=message, resource_type=t, resource_name=n, configs=[])
            for (t, n), (code, message) in zip(resources, [(TOPIC_DENIED, "Topic authorization failed."),
                                                            (CLUSTER_DENIED, "Cluster authorization failed."),
                                                            (CLUSTER_DENIED, "Cluster authorization failed.")])])
    return request, denied


@case("alter-configs", 33)
def _alter_configs():
    P = AlterConfigsRequest
    R = AlterConfigsResponse
    resources = [(TOPIC_RESOURCE, TOPIC, TOPIC_DENIED), (BROKER_RESOURCE, "0", CLUSTER_DENIED)]
    return (lambda v: P(validate_only=False, resources=[P.AlterConfigsResource(
                resource_type=t, resource_name=n, configs=[P.AlterableConfig(name="retention.ms", value="1")])
                for t, n, _ in resources]),
            lambda v: R(responses=[R.AlterConfigsResourceResponse(error_code=code, error_message=None,
                                                                  resource_type=t, resource_name=n)
                                   for t, n, code in resources]))


@case("incremental-alter-configs", 44)
def _incremental_alter_configs():
    P = IncrementalAlterConfigsRequest
    R = IncrementalAlterConfigsResponse
    resources = [(TOPIC_RESOURCE, TOPIC, TOPIC_DENIED), (BROKER_RESOURCE, "0", CLUSTER_DENIED),
                 (LOGGER_RESOURCE, "0", CLUSTER_DENIED)]
    return (lambda v: P(validate_only=False, resources=[P.AlterConfigsResource(
                resource_type=t, resource_name=n,
                configs=[P.AlterableConfig(name="retention.ms", config_operation=0, value="1")])
                for t, n, _ in resources]),
            lambda v: R(responses=[R.AlterConfigsResourceResponse(error_code=code, error_message=None,
                                                                  resource_type=t, resource_name=n)
                                   for t, n, code in resources]))


# AlterReplicaLogDirs (34): ALTER on the cluster, per partition.
@case("alter-replica-log-dirs", 34)
def _alter_replica_log_dirs():
    P = AlterReplicaLogDirsRequest
    R = AlterReplicaLogDirsResponse
    return (lambda v: P(dirs=[P.AlterReplicaLogDir(path="/nonexistent/kl", topics=[
                P.AlterReplicaLogDirTopic(name=TOPIC, partitions=[0, 1])])]),
            lambda v: R(results=[R.AlterReplicaLogDirTopicResult(topic_name=TOPIC, partitions=[
                R.AlterReplicaLogDirPartitionResult(partition_index=p, error_code=CLUSTER_DENIED) for p in (0, 1)])]))


# DescribeLogDirs (35): DESCRIBE on the cluster, else no log dirs at all (no error field before v3).
@case("describe-log-dirs", 35)
def _describe_log_dirs():
    return (lambda v: DescribeLogDirsRequest(topics=None), lambda v: DescribeLogDirsResponse(results=[]))


@case("sasl-authenticate", 36)
def _sasl_authenticate():
    return (lambda v: SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00secret"),
            lambda v: SaslAuthenticateResponse(
                error_code=E.ILLEGAL_SASL_STATE,
                error_message="SaslAuthenticate request received after successful authentication",
                auth_bytes=b"", session_lifetime_ms=0))


# CreatePartitions (37): ALTER on the topic.
@case("create-partitions", 37)
def _create_partitions():
    P = CreatePartitionsRequest
    R = CreatePartitionsResponse
    return (lambda v: P(timeout_ms=1000, validate_only=False,
                        topics=[P.CreatePartitionsTopic(name=TOPIC, count=4, assignments=None)]),
            lambda v: R(results=[R.CreatePartitionsTopicResult(
                name=TOPIC, error_code=TOPIC_DENIED, error_message="The topic authorization is failed.")]))


# Delegation tokens (38-41): a broker without delegation.token.master.key; over PLAINTEXT the requests
# are not allowed at all, before any authorization (the failed create names the caller as owner).
@case("create-delegation-token", 38)
def _create_token():
    return (lambda v: CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1),
            lambda v: CreateDelegationTokenResponse(
                error_code=E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, principal_type="User", principal_name="alice",
                issue_timestamp_ms=-1, expiry_timestamp_ms=-1, max_timestamp_ms=-1, token_id="", hmac=b""))


@case("renew-delegation-token", 39)
def _renew_token():
    return (lambda v: RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1000),
            lambda v: RenewDelegationTokenResponse(error_code=E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                                   expiry_timestamp_ms=-1))


@case("expire-delegation-token", 40)
def _expire_token():
    return (lambda v: ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=-1),
            lambda v: ExpireDelegationTokenResponse(error_code=E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                                    expiry_timestamp_ms=-1))


@case("describe-delegation-token", 41)
def _describe_token():
    return (lambda v: DescribeDelegationTokenRequest(owners=None),
            lambda v: DescribeDelegationTokenResponse(error_code=E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens=[]))


# DeleteGroups (42): DELETE on each group.
@case("delete-groups", 42)
def _delete_groups():
    R = DeleteGroupsResponse
    return (lambda v: DeleteGroupsRequest(groups_names=[GROUP]),
            lambda v: R(results=[R.DeletableGroupResult(group_id=GROUP, error_code=GROUP_DENIED)]))


# ElectLeaders (43): ALTER on the cluster; every asked partition and (v1+) the top level refused.
@case("elect-leaders", 43)
def _elect_leaders():
    P = ElectLeadersRequest
    R = ElectLeadersResponse
    return (lambda v: P(election_type=0, timeout_ms=1000,
                        topic_partitions=[P.TopicPartitions(topic=TOPIC, partition_id=[0])]),
            lambda v: R(error_code=CLUSTER_DENIED, replica_election_results=[R.ReplicaElectionResult(
                topic=TOPIC, partition_result=[R.PartitionResult(partition_id=0, error_code=CLUSTER_DENIED,
                                                                 error_message=None)])]))


@case("elect-leaders-all-partitions", 43)
def _elect_leaders_all():
    return (lambda v: ElectLeadersRequest(election_type=0, timeout_ms=1000, topic_partitions=None),
            lambda v: ElectLeadersResponse(error_code=CLUSTER_DENIED, replica_election_results=[]))


# AlterPartitionReassignments (45): ALTER on the cluster; ListPartitionReassignments (46): DESCRIBE.
@case("alter-partition-reassignments", 45)
def _alter_reassignments():
    P = AlterPartitionReassignmentsRequest
    R = AlterPartitionReassignmentsResponse
    return (lambda v: P(timeout_ms=1000, topics=[P.ReassignableTopic(name=TOPIC, partitions=[
                P.ReassignablePartition(partition_index=0, replicas=[0, 1])])]),
            lambda v, sent: R(error_code=CLUSTER_DENIED, error_message=cluster_refusal(sent, True), responses=[
                R.ReassignableTopicResponse(name=TOPIC, partitions=[R.ReassignablePartitionResponse(
                    partition_index=0, error_code=CLUSTER_DENIED, error_message=cluster_refusal(sent, True))])]))


@case("list-partition-reassignments", 46)
def _list_reassignments():
    P = ListPartitionReassignmentsRequest
    R = ListPartitionReassignmentsResponse
    return (lambda v: P(timeout_ms=1000, topics=[P.ListPartitionReassignmentsTopics(name=TOPIC,
                                                                                     partition_indexes=[0])]),
            lambda v, sent: R(error_code=CLUSTER_DENIED, error_message=cluster_refusal(sent), topics=[
                R.OngoingTopicReassignment(name=TOPIC, partitions=[R.OngoingPartitionReassignment(
                    partition_index=0, replicas=[], adding_replicas=[], removing_replicas=[])])]))


# OffsetDelete (47): DELETE on the group, refused at the top.
@case("offset-delete", 47)
def _offset_delete():
    P = OffsetDeleteRequest
    return (lambda v: P(group_id=GROUP, topics=[P.OffsetDeleteRequestTopic(name=TOPIC, partitions=[
                P.OffsetDeleteRequestPartition(partition_index=0)])]),
            lambda v: OffsetDeleteResponse(error_code=GROUP_DENIED, topics=[]))


# DescribeClientQuotas (48) / AlterClientQuotas (49): DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster.
@case("describe-client-quotas", 48)
def _describe_quotas():
    P = DescribeClientQuotasRequest
    return (lambda v: P(strict=False, components=[P.ComponentData(entity_type="user", match_type=1, match=None)]),
            lambda v: DescribeClientQuotasResponse(error_code=CLUSTER_DENIED, error_message=None, entries=None))


@case("alter-client-quotas", 49)
def _alter_quotas():
    P = AlterClientQuotasRequest
    R = AlterClientQuotasResponse
    return (lambda v: P(validate_only=False, entries=[P.EntryData(
                entity=[P.EntityData(entity_type="user", entity_name="alice")],
                ops=[P.OpData(key="producer_byte_rate", value=1024.0, remove=False)])]),
            lambda v: R(entries=[R.EntryData(error_code=CLUSTER_DENIED, error_message="Cluster authorization failed.",
                                             entity=[R.EntityData(entity_type="user", entity_name="alice")])]))


# DescribeUserScramCredentials (50): DESCRIBE on the cluster; AlterUserScramCredentials (51): ALTER.
@case("describe-user-scram-credentials", 50)
def _describe_scram():
    P = DescribeUserScramCredentialsRequest
    return (lambda v: P(users=[P.UserName(name="alice")]),
            lambda v: DescribeUserScramCredentialsResponse(error_code=CLUSTER_DENIED, error_message=None,
                                                           results=[]))


@case("alter-user-scram-credentials", 51)
def _alter_scram():
    P = AlterUserScramCredentialsRequest
    R = AlterUserScramCredentialsResponse
    return (lambda v: P(deletions=[P.ScramCredentialDeletion(name="bob", mechanism=1)],
                        upsertions=[P.ScramCredentialUpsertion(name="alice", mechanism=2, iterations=8192,
                                                               salt=b"salt", salted_password=b"x" * 64)]),
            lambda v: R(results=[R.AlterUserScramCredentialsResult(user=u, error_code=CLUSTER_DENIED,
                                                                   error_message=None) for u in ("alice", "bob")]))


# AlterIsr (56): CLUSTER_ACTION.
@case("alter-isr", 56)
def _alter_isr():
    P = AlterIsrRequest
    return (lambda v: P(broker_id=0, broker_epoch=5, topics=[P.TopicData(name=TOPIC, partitions=[
                P.PartitionData(partition_index=0, leader_epoch=3, new_isr=[0], current_isr_version=1)])]),
            lambda v: AlterIsrResponse(error_code=CLUSTER_DENIED, topics=[]))


# UpdateFeatures (57): ALTER on the cluster (ApiError(CLUSTER_AUTHORIZATION_FAILED): with its message).
@case("update-features", 57)
def _update_features():
    P = UpdateFeaturesRequest
    return (lambda v: P(timeout_ms=1000, feature_updates=[P.FeatureUpdateKey(feature="f", max_version_level=1,
                                                                              allow_downgrade=False)]),
            lambda v: UpdateFeaturesResponse(error_code=CLUSTER_DENIED, error_message="Cluster authorization failed.",
                                             results=[]))


# DescribeCluster (60): served to anyone; the cluster's authorized operations 0 without DESCRIBE on it.
@case("describe-cluster", 60)
def _describe_cluster():
    return (lambda v: DescribeClusterRequest(include_cluster_authorized_operations=True),
            lambda v: DescribeClusterResponse(error_code=0, error_message=None, cluster_id=CLUSTER_ID, controller_id=-1,
                                              brokers=[], cluster_authorized_operations=0))


# DescribeProducers (61): READ on the topic.
@case("describe-producers", 61)
def _describe_producers():
    P = DescribeProducersRequest
    R = DescribeProducersResponse
    return (lambda v: P(topics=[P.TopicRequest(name=TOPIC, partition_indexes=[0])]),
            lambda v: R(topics=[R.TopicResponse(name=TOPIC, partitions=[R.PartitionResponse(
                partition_index=0, error_code=TOPIC_DENIED, error_message=None, active_producers=[])])]))


# -- the tests ------------------------------------------------------------------------------

PARAMS = [pytest.param(c, v, id=f"{c.name}-v{v}") for c in CASES for v in c.all_versions()]
NO_AUTHORIZATION = {17, 18, 36, 38, 39, 40, 41}      # SASL, ApiVersions, disabled delegation tokens


def test_every_api_is_in_the_matrix():
    assert {c.api_key for c in CASES} == set(HANDLERS)


@pytest.mark.parametrize("case_, version", PARAMS)
def test_a_principal_without_acls_gets_kafkas_refusal(case_: Case, version: int, caplog):
    broker = Broker()
    caplog.set_level(logging.INFO, logger="kafka.authorizer.logger")
    response, sent = broker.connect(ALICE).ask(case_.api_key, version, case_.request(version))
    expected = case_.denied(version, sent) if case_.denied.__code__.co_argcount == 2 else case_.denied(version)
    assert response == normalized(case_.api_key, version, expected)
    assert broker.touched == [], f"a refused request reached {broker.touched}"
    if case_.logged and case_.api_key not in NO_AUTHORIZATION:
        denials = [r.getMessage() for r in caplog.records if r.name == "kafka.authorizer.logger"]
        assert any(f"{ALICE} is Denied" in line for line in denials), denials


@pytest.mark.parametrize("case_, version", [p for p in PARAMS if p.values[0].api_key not in NO_AUTHORIZATION])
def test_the_super_user_gets_past_every_check(case_: Case, version: int):
    broker = Broker()
    response, _ = broker.connect(ADMIN).ask(case_.api_key, version, case_.request(version))
    found = _codes(response)
    assert not found & AUTHZ_CODES, f"{case_.name} v{version} refused the super user: {response}"


def _codes(obj) -> set[int]:
    """Every error code anywhere in a response."""
    found: set[int] = set()
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.name.endswith("error_code") and isinstance(value, int):
                found.add(value)
            else:
                found |= _codes(value)
    elif isinstance(obj, list):
        for item in obj:
            found |= _codes(item)
    return found
