"""LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6): the controller's orders.

Each is fenced: a request from an older controller epoch gets STALE_CONTROLLER_EPOCH,
and one addressed to an earlier incarnation of this broker gets STALE_BROKER_EPOCH.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from kafkalike.protocol.messages.stop_replica import StopReplicaRequest, StopReplicaResponse
from kafkalike.protocol.messages.update_metadata import UpdateMetadataRequest, UpdateMetadataResponse


def _fence(ctx: RequestContext, request) -> ErrorCode:
    epochs = ctx.epochs
    if request.controller_epoch < epochs.controller_epoch_seen:
        return ErrorCode.STALE_CONTROLLER_EPOCH
    # Only an older broker epoch is stale. A newer one is this broker's own fresh
    # registration: the controller saw /brokers/ids/<id> appear and wrote to us before
    # our registration call returned with the epoch. Rejecting it (as an exact match
    # did) left a restarted broker with no metadata and no replicas, for nobody resends
    # those requests. Kafka's isBrokerEpochStale compares the same way.
    if request.broker_epoch != -1 and request.broker_epoch < epochs.broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH
    epochs.controller_epoch_seen = request.controller_epoch
    return ErrorCode.NONE


def _leader_and_isr_error(request, version: int, code: ErrorCode, message: str | None = None) -> LeaderAndIsrResponse:
    """LeaderAndIsrRequest.getErrorResponse: `code` at the top and for every partition."""
    R = LeaderAndIsrResponse
    if request is None:
        return R(error_code=int(code))
    if version >= 5:
        return R(error_code=int(code), topics=[R.LeaderAndIsrTopicError(topic_id=t.topic_id, partition_errors=[
            R.LeaderAndIsrPartitionError(partition_index=p.partition_index, error_code=int(code))
            for p in t.partition_states]) for t in request.topic_states])
    states = request.ungrouped_partition_states if version < 2 else [
        (t.topic_name, p) for t in request.topic_states for p in t.partition_states]
    pairs = [(p.topic_name, p) for p in states] if version < 2 else states
    return R(error_code=int(code), partition_errors=[
        R.LeaderAndIsrPartitionError(topic_name=topic, partition_index=p.partition_index, error_code=int(code))
        for topic, p in pairs])


def _stop_replica_error(request, version: int, code: ErrorCode, message: str | None = None) -> StopReplicaResponse:
    """StopReplicaRequest.getErrorResponse: `code` at the top and for every partition."""
    R = StopReplicaResponse
    return R(error_code=int(code), partition_errors=[
        R.StopReplicaPartitionError(topic_name=topic, partition_index=p, error_code=int(code))
        for topic, p, _ in (_stop_items(request, version) if request is not None else [])])


def _stop_items(request: StopReplicaRequest, version: int) -> list[tuple[str, int, bool]]:
    if version >= 3:
        return [(t.topic_name, p.partition_index, p.delete_partition)
                for t in request.topic_states for p in t.partition_states]
    if version >= 1:
        return [(t.name, p, request.delete_partitions) for t in request.topics for p in t.partition_indexes]
    return [(p.topic_name, p.partition_index, request.delete_partitions) for p in request.ungrouped_partitions]


def _update_metadata_error(request, version: int, code: ErrorCode, message: str | None = None) -> UpdateMetadataResponse:
    return UpdateMetadataResponse(error_code=int(code))


@handler(4, error_response=_leader_and_isr_error)
def handle_leader_and_isr(ctx: RequestContext, request: LeaderAndIsrRequest):
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.CLUSTER_ACTION)) is not None:
        return refused
    error = _fence(ctx, request)
    if error != ErrorCode.NONE:
        return LeaderAndIsrResponse(error_code=int(error))
    return defer.ensureDeferred(_leader_and_isr(ctx, request))


async def _leader_and_isr(ctx: RequestContext, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    if ctx.version >= 2:
        groups = [(t.topic_name, getattr(t, "topic_id", None), t.partition_states) for t in request.topic_states]
    else:
        groups = [(p.topic_name, None, [p]) for p in request.ungrouped_partition_states]
    leaders = {b.broker_id: (b.host_name, b.port) for b in request.live_leaders}
    outcome = await ctx.replicas.become_leader_or_follower(request.controller_id, request.controller_epoch,
                                                           groups, leaders, ctx.correlation_id)
    results = []
    for topic, topic_id, states in groups:
        for s in states:
            results.append((topic, topic_id, s.partition_index, outcome.get((topic, s.partition_index), ErrorCode.NONE)))
    if ctx.version >= 5:
        by_topic: dict = {}
        for topic, topic_id, p, err in results:
            entry = by_topic.setdefault(topic, LeaderAndIsrResponse.LeaderAndIsrTopicError(
                topic_id=topic_id, partition_errors=[]))
            entry.partition_errors.append(LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                partition_index=p, error_code=int(err)))
        return LeaderAndIsrResponse(error_code=0, topics=list(by_topic.values()))
    return LeaderAndIsrResponse(error_code=0, partition_errors=[
        LeaderAndIsrResponse.LeaderAndIsrPartitionError(topic_name=t, partition_index=p, error_code=int(e))
        for t, _, p, e in results])


@handler(5, error_response=_stop_replica_error)
def handle_stop_replica(ctx: RequestContext, request: StopReplicaRequest) -> StopReplicaResponse:
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.CLUSTER_ACTION)) is not None:
        return refused
    error = _fence(ctx, request)
    if error != ErrorCode.NONE:
        return StopReplicaResponse(error_code=int(error))
    items = _stop_items(request, ctx.version)
    errors = ctx.replicas.stop_replicas(items)
    return StopReplicaResponse(error_code=0, partition_errors=[
        StopReplicaResponse.StopReplicaPartitionError(topic_name=t, partition_index=p,
                                                      error_code=int(errors.get((t, p), ErrorCode.NONE)))
        for t, p, _ in items])


@handler(6, error_response=_update_metadata_error)
def handle_update_metadata(ctx: RequestContext, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.CLUSTER_ACTION)) is not None:
        return refused
    error = _fence(ctx, request)
    if error == ErrorCode.NONE:
        # Kafka's KafkaApis: the cache first, then the groups of deleted topics go, and
        # admin requests waiting for the controller's work are looked at again.
        deleted = ctx.metadata.update(request, ctx.version)
        if deleted:
            ctx.groups.on_topics_deleted(deleted)
        ctx.admin.on_metadata_update()
    return UpdateMetadataResponse(error_code=int(error))
