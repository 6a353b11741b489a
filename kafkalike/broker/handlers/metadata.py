"""Metadata (3): brokers, controller and partition leaders, from the metadata cache."""
from __future__ import annotations

from kafkalike.broker.authorizer.service import TOPIC, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.topics import INTERNAL_TOPICS, InvalidTopicName, validate
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.metadata import MetadataRequest, MetadataResponse

_Broker = MetadataResponse.MetadataResponseBroker
_Topic = MetadataResponse.MetadataResponseTopic
_Part = MetadataResponse.MetadataResponsePartition


@handler(3)
def handle_metadata(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    cache = ctx.metadata
    listener = ctx.listener_name
    if request.topics is None or (ctx.version == 0 and not request.topics):
        names = cache.topics()          # all topics (v0 used an empty list for that)
        auto_create = False
    else:
        names = [t.name for t in request.topics]
        auto_create = request.allow_auto_topic_creation if ctx.version >= 4 else True
    topics = []
    refused = _refused(ctx, names, auto_create and request.topics is not None, listed=request.topics is not None
                       and not (ctx.version == 0 and not request.topics))
    for name in names:
        if name in refused:
            if refused[name]:    # unauthorized topics of an all-topics request are left out
                topics.append(_Topic(name=name, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                     is_internal=refused[name] == "create" and name in INTERNAL_TOPICS))
        else:
            topics.append(_describe(ctx, name, listener, auto_create))
    brokers = [_Broker(node_id=bid, host=ep.host, port=ep.port, rack=rack)
               for bid, ep, rack in cache.broker_endpoints(listener)]
    if ctx.version >= 8 and request.include_topic_authorized_operations:
        for topic in topics:
            if topic.name not in refused:
                topic.topic_authorized_operations = ctx.authorizer.authorized_operations(ctx, TOPIC, topic.name)
    response = MetadataResponse(brokers=brokers, cluster_id=ctx.cluster_id,
                                controller_id=cache.controller_id, topics=topics)
    if 8 <= ctx.version <= 10 and request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = (ctx.authorizer.cluster_operations(ctx)
                                                  if ctx.authorizer.authorize_cluster(ctx, Op.DESCRIBE) else 0)
    return response


def _refused(ctx: RequestContext, names, may_create: bool, listed: bool) -> dict[str, str | None]:
    """Topics not described, as KafkaApis.handleTopicMetadataRequest: without DESCRIBE
    ("describe"; None when all topics were asked for: those are left out), or missing
    ones that would be auto-created without CREATE on the cluster or the topic ("create")."""
    authz = ctx.authorizer
    if not authz.enabled:
        return {}
    allowed = authz.filter(ctx, Op.DESCRIBE, TOPIC, names, log_denied=listed)   # all topics: denials not logged
    refused: dict[str, str | None] = {n: "describe" if listed else None for n in names if n not in allowed}
    missing = [n for n in allowed if not ctx.metadata.contains(n)]
    if may_create and missing and ctx.config.get("auto.create.topics.enable") and not authz.authorize_cluster(
            ctx, Op.CREATE, log_denied=False):
        creatable = authz.filter(ctx, Op.CREATE, TOPIC, missing)
        refused.update((n, "create") for n in missing if n not in creatable)
    return refused


def _describe(ctx: RequestContext, name: str, listener: str, auto_create: bool) -> _Topic:
    cache, version = ctx.metadata, ctx.version
    if not cache.contains(name):
        try:
            validate(name)
        except InvalidTopicName:
            return _Topic(name=name, error_code=int(ErrorCode.INVALID_TOPIC_EXCEPTION))
        if auto_create and ctx.config.get("auto.create.topics.enable"):
            ctx.admin.auto_create_topic(name)
            return _Topic(name=name, error_code=int(ErrorCode.LEADER_NOT_AVAILABLE))
        return _Topic(name=name, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    parts = []
    for index in sorted(cache.partitions[name]):
        info = cache.partitions[name][index]
        error = cache.partition_error(info, listener)
        live = [r for r in info.replicas if r in cache.brokers]
        in_sync = [r for r in info.isr if r in cache.brokers]
        if error == ErrorCode.NONE and version == 0 and len(live) < len(info.replicas):
            error = ErrorCode.REPLICA_NOT_AVAILABLE    # v0 clients were told this
        # v1+ lists replicas and ISR as the controller wrote them, dead brokers included (a
        # dead last ISR member stays: the partition is offline, not under-replicated).
        parts.append(_Part(error_code=int(error), partition_index=index, leader_id=info.leader,
                           leader_epoch=info.leader_epoch,
                           replica_nodes=info.replicas if version > 0 else live,
                           isr_nodes=info.isr if version > 0 else in_sync,
                           offline_replicas=info.offline_replicas))
    topic_id = cache.topic_ids.get(name)
    topic = _Topic(name=name, is_internal=name in INTERNAL_TOPICS, partitions=parts)
    if topic_id is not None:
        topic.topic_id = topic_id
    return topic
