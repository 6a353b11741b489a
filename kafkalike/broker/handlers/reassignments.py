"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), answered by the controller.

As in Kafka 2.8 (KIP-455) both go to the controller's event queue; a broker that is not
the controller answers NOT_CONTROLLER for the whole request and the admin client looks
for the controller again. A partition given with a null replica list is a cancellation.
Each partition's error carries Kafka's message (the controller's, or the error's
default), which the admin client and kafka-reassign-partitions print. They need ALTER and
DESCRIBE on the cluster, refused as Kafka's authorizeClusterOperation refuses them.
"""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from kafkalike.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafkalike.zkdata.topic_znodes import TopicPartition


def _alter_response(result) -> AlterPartitionReassignmentsResponse:
    top, partitions = result
    if top.error:
        return AlterPartitionReassignmentsResponse(error_code=int(top.error), error_message=top.message)
    by_topic: dict[str, list] = {}
    for tp, error in partitions.items():
        by_topic.setdefault(tp.topic, []).append(AlterPartitionReassignmentsResponse.ReassignablePartitionResponse(
            partition_index=tp.partition, error_code=int(error.error), error_message=error.message))
    return AlterPartitionReassignmentsResponse(error_code=0, error_message=None, responses=[
        AlterPartitionReassignmentsResponse.ReassignableTopicResponse(name=name, partitions=ps)
        for name, ps in by_topic.items()])


def _alter_error(request, version: int, code: ErrorCode, message: str | None = None):
    """AlterPartitionReassignmentsRequest.getErrorResponse: the error at the top and on each partition."""
    R = AlterPartitionReassignmentsResponse
    return R(error_code=int(code), error_message=message, responses=[
        R.ReassignableTopicResponse(name=t.name, partitions=[R.ReassignablePartitionResponse(
            partition_index=p.partition_index, error_code=int(code), error_message=message) for p in t.partitions])
        for t in (request.topics if request is not None else [])])


@handler(45, error_response=_alter_error)
def handle_alter_partition_reassignments(ctx: RequestContext, request: AlterPartitionReassignmentsRequest):
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.ALTER)) is not None:
        return refused
    wanted: dict[TopicPartition, list[int] | None] = {}
    for topic in request.topics:
        for p in topic.partitions:
            wanted[TopicPartition(topic.name, p.partition_index)] = None if p.replicas is None else list(p.replicas)
    return ctx.controller.alter_partition_reassignments(wanted).addCallback(_alter_response)


def _list_response(result) -> ListPartitionReassignmentsResponse:
    top, found = result
    if top.error:
        return ListPartitionReassignmentsResponse(error_code=int(top.error), error_message=top.message)
    by_topic: dict[str, list] = {}
    for tp, ra in found.items():
        by_topic.setdefault(tp.topic, []).append(ListPartitionReassignmentsResponse.OngoingPartitionReassignment(
            partition_index=tp.partition, replicas=list(ra.replicas), adding_replicas=list(ra.adding_replicas),
            removing_replicas=list(ra.removing_replicas)))
    return ListPartitionReassignmentsResponse(error_code=0, error_message=None, topics=[
        ListPartitionReassignmentsResponse.OngoingTopicReassignment(name=name, partitions=ps)
        for name, ps in by_topic.items()])


def _list_error(request, version: int, code: ErrorCode, message: str | None = None):
    """ListPartitionReassignmentsRequest.getErrorResponse: the error at the top, and each
    asked partition listed with no replicas."""
    R = ListPartitionReassignmentsResponse
    topics = request.topics if request is not None and request.topics is not None else []
    return R(error_code=int(code), error_message=message, topics=[
        R.OngoingTopicReassignment(name=t.name, partitions=[R.OngoingPartitionReassignment(
            partition_index=p, replicas=[], adding_replicas=[], removing_replicas=[]) for p in t.partition_indexes])
        for t in topics])


@handler(46, error_response=_list_error)
def handle_list_partition_reassignments(ctx: RequestContext, request: ListPartitionReassignmentsRequest):
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.DESCRIBE)) is not None:
        return refused
    wanted = None if request.topics is None else [
        TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    return ctx.controller.list_partition_reassignments(wanted).addCallback(_list_response)
