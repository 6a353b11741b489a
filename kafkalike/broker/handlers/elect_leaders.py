"""ElectLeaders (43): an admin asks the controller for preferred or unclean elections.

As in Kafka 2.8 a broker that is not the controller answers NOT_CONTROLLER for each
partition (the admin client then finds the controller again). A request without
partitions means all of them, and then partitions that needed no election are left
out of the answer, as KafkaApis does.
"""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.controller.leader_election import ElectionResult, ElectionType
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from kafkalike.zkdata.topic_znodes import TopicPartition


def _requested(request: ElectLeadersRequest) -> list[TopicPartition] | None:
    if request.topic_partitions is None:
        return None
    return [TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partition_id]


def _known_partitions(ctx: RequestContext) -> list[TopicPartition]:
    cache = ctx.metadata
    if cache is None:
        return []
    return [TopicPartition(t, p) for t in cache.topics() for p in sorted(cache.partitions.get(t, {}))]


def _response(results: dict[TopicPartition, ElectionResult], all_partitions: bool) -> ElectLeadersResponse:
    by_topic: dict[str, list] = {}
    for tp in sorted(results):
        result = results[tp]
        if all_partitions and result.error == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        by_topic.setdefault(tp.topic, []).append(ElectLeadersResponse.PartitionResult(
            partition_id=tp.partition, error_code=int(result.error), error_message=result.message))
    return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=[
        ElectLeadersResponse.ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()])


def _error(request, version: int, code: ErrorCode) -> ElectLeadersResponse:
    """Every asked partition answered `code` with no message, and the top level too (v1+)."""
    R = ElectLeadersResponse
    topics = request.topic_partitions if request is not None and request.topic_partitions is not None else []
    return R(throttle_time_ms=0, error_code=int(code), replica_election_results=[
        R.ReplicaElectionResult(topic=t.topic, partition_result=[
            R.PartitionResult(partition_id=p, error_code=int(code), error_message=None) for p in t.partition_id])
        for t in topics])


@handler(43, error_response=_error)
def handle_elect_leaders(ctx: RequestContext, request: ElectLeadersRequest):
    if (refused := ctx.authorizer.require_cluster(ctx, request, Op.ALTER)) is not None:
        return refused
    wanted = _requested(request)
    all_partitions = wanted is None
    election_type = ElectionType(request.election_type) if ctx.version >= 1 else ElectionType.PREFERRED
    controller = ctx.controller
    if not controller.active:
        asked = _known_partitions(ctx) if all_partitions else wanted
        return _response({tp: ElectionResult(ErrorCode.NOT_CONTROLLER) for tp in asked}, all_partitions)
    d = controller.elect_leaders(wanted, election_type)
    return d.addCallback(_response, all_partitions)
