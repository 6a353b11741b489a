"""Group membership APIs: FindCoordinator (10), JoinGroup (11), Heartbeat (12),
LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42).

Each decodes, asks the GroupCoordinator and answers in the request's version, as
Kafka 2.8's KafkaApis does. FindCoordinator also creates __consumer_offsets (or, for
key type 1, __transaction_state) the first time anyone asks for such a coordinator.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from twisted.internet import defer

from kafkalike.broker.authorizer.service import GROUP, TRANSACTIONAL_ID, Op
from kafkalike.broker.handlers.transactions import transaction_coordinator
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.coordinator.config import OFFSETS_TOPIC
from kafkalike.coordinator.transaction.config import TRANSACTION_STATE_TOPIC
from kafkalike.coordinator.results import JoinResult, LeaveResult, SyncResult
from kafkalike.protocol.errors import ErrorCode, default_message
from kafkalike.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from kafkalike.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafkalike.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from kafkalike.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from kafkalike.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from kafkalike.protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from kafkalike.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse

log = logging.getLogger("kafka.server.KafkaApis")

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
# Errors.message() for the codes FindCoordinator reports (Kafka fills error_message).
_MESSAGES = {
    ErrorCode.NONE: "NONE",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client "
                               "library or the message was sent to an incompatible broker. See the broker logs "
                               "for more details.",
}


def coordinator_of(ctx: RequestContext):
    """The broker's GroupCoordinator, or None while it does not run."""
    coordinator = ctx.groups
    return coordinator if coordinator is not None and coordinator.active else None


def client_host(ctx: RequestContext) -> str:
    """As Java prints an InetAddress: "/127.0.0.1"."""
    return "/" + ctx.client_host


# -- FindCoordinator ---------------------------------------------------------------------

@handler(10, versions=(0, 3))
def handle_find_coordinator(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    key_type = request.key_type if ctx.version >= 1 else GROUP_KEY_TYPE
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _coordinator_answer(ErrorCode.INVALID_REQUEST)
    if key_type == GROUP_KEY_TYPE and not ctx.authorizer.authorize(ctx, Op.DESCRIBE, GROUP, request.key):
        return _coordinator_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if key_type == TRANSACTION_KEY_TYPE and not ctx.authorizer.authorize(ctx, Op.DESCRIBE, TRANSACTIONAL_ID,
                                                                         request.key):
        return _coordinator_answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if key_type == TRANSACTION_KEY_TYPE:
        coordinator = transaction_coordinator(ctx)
        if coordinator is None:
            return _coordinator_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        config = coordinator.config
        topic = InternalTopic(TRANSACTION_STATE_TOPIC, config.transaction_log_num_partitions,
                              config.transaction_log_replication_factor, coordinator.transaction_topic_configs(),
                              "transaction.state.log.replication.factor", "transactions state topic")
    else:
        coordinator = coordinator_of(ctx)
        if coordinator is None:
            return _coordinator_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        config = coordinator.config
        topic = InternalTopic(OFFSETS_TOPIC, config.offsets_topic_partitions,
                              config.offsets_topic_replication_factor, config.offsets_topic_configs(),
                              "offsets.topic.replication.factor", "offsets topic")
    cache = ctx.metadata
    if not cache.contains(topic.name):
        _create_internal_topic(ctx, topic)
        return _coordinator_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    info = cache.partition(topic.name, coordinator.partition_for(request.key))
    broker = cache.brokers.get(info.leader) if info is not None and info.leader >= 0 else None
    endpoint = broker.endpoint(ctx.listener_name) if broker is not None else None
    if endpoint is None:
        return _coordinator_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return _coordinator_answer(ErrorCode.NONE, info.leader, endpoint.host, endpoint.port)


def _coordinator_answer(error: ErrorCode, node_id: int = -1, host: str = "", port: int = -1):
    return FindCoordinatorResponse(error_code=int(error), error_message=_MESSAGES.get(error) or default_message(error),
                                   node_id=node_id, host=host, port=port)


@dataclass(frozen=True)
class InternalTopic:
    """__consumer_offsets or __transaction_state, as FindCoordinator creates it."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]
    replication_key: str
    description: str


def _create_internal_topic(ctx: RequestContext, topic: InternalTopic) -> None:
    """Fire and forget, as Kafka does: the client keeps asking until a leader is known."""
    alive = len(ctx.metadata.alive_broker_ids())
    if alive < topic.replication_factor:
        log.error("Number of alive brokers '%d' does not meet the required replication factor '%d' for the "
                  "%s (configured via '%s'). This error can be ignored if the cluster is starting up and not "
                  "all brokers are up yet.", alive, topic.replication_factor, topic.description,
                  topic.replication_key)
        return
    d = defer.ensureDeferred(ctx.admin.create_topic(
        topic.name, topic.partitions, topic.replication_factor, configs=topic.configs, timeout_ms=0))

    def report(result) -> None:
        if result.error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.REQUEST_TIMED_OUT):
            log.warning("Creation of %s failed: %s %s", topic.name, result.error.name, result.message or "")
    d.addCallbacks(report, lambda f: log.error("Creation of %s failed: %s", topic.name, f.getTraceback()))


# -- JoinGroup / SyncGroup ---------------------------------------------------------------

@handler(11, versions=(0, 7))
def handle_join_group(ctx: RequestContext, request: JoinGroupRequest):
    version = ctx.version
    if not ctx.authorizer.authorize(ctx, Op.READ, GROUP, request.group_id):
        return _join_answer(version, JoinResult("", ErrorCode.GROUP_AUTHORIZATION_FAILED))
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        return _join_answer(version, JoinResult(request.member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
    instance_id = request.group_instance_id if version >= 5 else None
    # v0 has no rebalance timeout: the session timeout stands in, as in Kafka.
    rebalance_timeout = request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms
    protocols, seen = [], set()
    for p in request.protocols:
        if p.name not in seen:
            seen.add(p.name)
            protocols.append((p.name, bytes(p.metadata)))
    d = coordinator.join_group(
        request.group_id, request.member_id, instance_id,
        version >= 4 and instance_id is None,  # KIP-394: a new dynamic member must rejoin with its id
        ctx.client_id or "", client_host(ctx), rebalance_timeout, request.session_timeout_ms,
        request.protocol_type, protocols)
    return d.addCallback(lambda result: _join_answer(version, result))


def _join_answer(version: int, r: JoinResult) -> JoinGroupResponse:
    members = [JoinGroupResponse.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                         metadata=m.metadata) for m in r.members]
    return JoinGroupResponse(
        error_code=int(r.error), generation_id=r.generation_id, protocol_type=r.protocol_type,
        protocol_name=r.protocol_name if version >= 7 else (r.protocol_name or ""),
        leader=r.leader_id, member_id=r.member_id, members=members)


@handler(14, versions=(0, 5))
def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest):
    if ctx.version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        return _sync_answer(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))   # checked first, as KafkaApis
    if not ctx.authorizer.authorize(ctx, Op.READ, GROUP, request.group_id):
        return _sync_answer(SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        return _sync_answer(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    d = coordinator.sync_group(
        request.group_id, request.generation_id, request.member_id,
        request.protocol_type if ctx.version >= 5 else None,
        request.protocol_name if ctx.version >= 5 else None,
        request.group_instance_id if ctx.version >= 3 else None, assignments)
    return d.addCallback(_sync_answer)


def _sync_answer(r: SyncResult) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=int(r.error), protocol_type=r.protocol_type,
                             protocol_name=r.protocol_name, assignment=r.assignment)


# -- Heartbeat / LeaveGroup --------------------------------------------------------------

@handler(12, versions=(0, 4))
def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not ctx.authorizer.authorize(ctx, Op.READ, GROUP, request.group_id):
        return HeartbeatResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        return HeartbeatResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    error = coordinator.heartbeat(request.group_id, request.member_id,
                                  request.group_instance_id if ctx.version >= 3 else None,
                                  request.generation_id)
    return HeartbeatResponse(error_code=int(error))


@handler(13, versions=(0, 4))
def handle_leave_group(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    if not ctx.authorizer.authorize(ctx, Op.READ, GROUP, request.group_id):
        return LeaveGroupResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    if ctx.version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        result = LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    else:
        result = coordinator.leave_group(request.group_id, members)
    if ctx.version < 3:
        # One member: its error, unless the whole request failed.
        error = result.error
        if error == ErrorCode.NONE:
            error = next((m.error for m in result.members if m.error != ErrorCode.NONE), ErrorCode.NONE)
        return LeaveGroupResponse(error_code=int(error))
    return LeaveGroupResponse(error_code=int(result.error), members=[
        LeaveGroupResponse.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                          error_code=int(m.error)) for m in result.members])


# -- DescribeGroups / ListGroups / DeleteGroups ------------------------------------------

@handler(15, versions=(0, 5))
def handle_describe_groups(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    coordinator = coordinator_of(ctx)
    include_ops = ctx.version >= 3 and request.include_authorized_operations
    out = []
    for group_id in request.groups:
        if not ctx.authorizer.authorize(ctx, Op.DESCRIBE, GROUP, group_id):
            error, summary = ErrorCode.GROUP_AUTHORIZATION_FAILED, None
        elif coordinator is None:
            error, summary = ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        else:
            error, summary = coordinator.describe_group(group_id)
        described = DescribeGroupsResponse.DescribedGroup(error_code=int(error), group_id=group_id)
        if summary is not None:
            described.group_state = summary.state
            described.protocol_type = summary.protocol_type
            described.protocol_data = summary.protocol
            described.members = [DescribeGroupsResponse.DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                for m in summary.members]
        if include_ops and error == ErrorCode.NONE:
            described.authorized_operations = ctx.authorizer.authorized_operations(ctx, GROUP, group_id)
        out.append(described)
    return DescribeGroupsResponse(groups=out)


@handler(16, versions=(0, 4))
def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        return ListGroupsResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    states = set(request.states_filter or []) if ctx.version >= 4 else set()
    error, groups = coordinator.list_groups(states)
    if not ctx.authorizer.authorize_cluster(ctx, Op.DESCRIBE):
        groups = [g for g in groups if ctx.authorizer.authorize(ctx, Op.DESCRIBE, GROUP, g.group_id)]
    return ListGroupsResponse(error_code=int(error), groups=[
        ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state)
        for g in groups])


@handler(42, versions=(0, 2))
def handle_delete_groups(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    names = list(dict.fromkeys(request.groups_names))
    allowed = [g for g in names if g in ctx.authorizer.filter(ctx, Op.DELETE, GROUP, names)]
    errors: dict[str, ErrorCode] = {}
    if allowed:
        # Only authorized groups reach the coordinator, as in KafkaApis; refused ones are
        # GROUP_AUTHORIZATION_FAILED whatever the coordinator's state.
        coordinator = coordinator_of(ctx)
        if coordinator is None:
            errors = {g: ErrorCode.COORDINATOR_NOT_AVAILABLE for g in allowed}
        else:
            errors = coordinator.delete_groups(allowed)
    errors.update((g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in names if g not in allowed)
    return DeleteGroupsResponse(results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(errors[g])) for g in names])
