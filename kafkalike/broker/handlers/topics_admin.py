"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37): only the controller takes them.

As in Kafka 2.8's ZooKeeper mode, a broker that is not the controller answers
NOT_CONTROLLER so the client refreshes metadata and retries there. Each topic's change
takes the request's controller mutation quota (KIP-599, controller_mutation_quota.py)
once it has been validated, and the answer carries its throttle time.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker import topic_configs
from kafkalike.broker.authorizer.service import TOPIC, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
from kafkalike.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from kafkalike.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse


def _duplicates(names: list[str]) -> set[str]:
    seen, dup = set(), set()
    for n in names:
        (dup if n in seen else seen).add(n)
    return dup


@handler(19)
def handle_create_topics(ctx: RequestContext, request: CreateTopicsRequest):
    return defer.ensureDeferred(_create_topics(ctx, request))


async def _create_topics(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    dup = _duplicates([t.name for t in request.topics])
    results = []
    jobs = []
    authz = ctx.authorizer
    active = ctx.controller.active
    names = [t.name for t in request.topics]
    creatable = describable = set()
    quota = _mutation_quota(ctx)
    if active:
        creatable = (set(names) if authz.authorize_cluster(ctx, Op.CREATE, log_denied=False)
                     else authz.filter(ctx, Op.CREATE, TOPIC, names))
        describable = authz.filter(ctx, Op.DESCRIBE_CONFIGS, TOPIC, names, log_denied=False)
    for t in request.topics:
        res = CreateTopicsResponse.CreatableTopicResult(name=t.name)
        results.append(res)
        if active and t.name not in describable:
            # Kafka: whatever becomes of the creation, configs the caller may not describe are not shown.
            res.topic_config_error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if not active:
            res.error_code, res.error_message = int(ErrorCode.NOT_CONTROLLER), "This is not the correct controller for this cluster."
        elif t.name in dup:
            res.error_code, res.error_message = int(ErrorCode.INVALID_REQUEST), "Found multiple entries for this topic."
        elif t.name not in creatable:
            res.error_code, res.error_message = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), "Authorization failed."
        else:
            assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            configs = {c.name: c.value for c in t.configs}
            jobs.append((res, t, defer.ensureDeferred(ctx.admin.create_topic(
                t.name, t.num_partitions, t.replication_factor, assignments, configs,
                validate_only=request.validate_only, timeout_ms=request.timeout_ms, quota=quota))))
    for res, t, job in jobs:
        r = await job
        res.error_code = int(r.error)
        res.error_message = r.message
        if r.error == ErrorCode.NONE:
            res.num_partitions, res.replication_factor = r.num_partitions, r.replication_factor
            if r.topic_id is not None:
                res.topic_id = r.topic_id
            if ctx.version >= 5 and t.name in describable:
                res.configs = _config_entries(ctx, {c.name: c.value for c in t.configs})
        else:
            res.topic_config_error_code = 0      # a failed creation tells no configs' error (KafkaApis resets it)
    _throttle(ctx, quota)
    return CreateTopicsResponse(topics=results)


def _mutation_quota(ctx: RequestContext):
    quotas = ctx.services.quotas
    return quotas.mutation_quota(ctx) if quotas is not None else None


def _throttle(ctx: RequestContext, quota) -> None:
    if quota is not None:
        ctx.services.quotas.throttle_mutations(ctx, quota)


def _config_entries(ctx: RequestContext, overrides: dict[str, str | None]) -> list:
    """CreateTopics v5+ echoes the new topic's effective configs."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    effective = ctx.topic_configs.parse(clean, strict=False)
    return [CreateTopicsResponse.CreatableTopicConfigs(
        name=e.name, value=e.value, read_only=False, config_source=int(e.source), is_sensitive=False)
        for e in topic_configs.describe(ctx.config, clean, effective)]


@handler(20)
def handle_delete_topics(ctx: RequestContext, request: DeleteTopicsRequest):
    return defer.ensureDeferred(_delete_topics(ctx, request))


async def _delete_topics(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    if ctx.version >= 6:
        names = []
        for t in request.topics:
            if t.name is None and t.topic_id.int:
                name = next((n for n, i in ctx.metadata.topic_ids.items() if i == t.topic_id), None)
                names.append((name, t.topic_id))
            else:
                names.append((t.name, t.topic_id))
    else:
        names = [(n, None) for n in request.topic_names]
    out = []
    jobs = []
    deletable = ctx.authorizer.filter(ctx, Op.DELETE, TOPIC, (n for n, _ in names if n is not None))
    quota = _mutation_quota(ctx)
    for name, topic_id in names:
        res = DeleteTopicsResponse.DeletableTopicResult(name=name)
        if topic_id is not None:
            res.topic_id = topic_id
        out.append(res)
        if not ctx.controller.active:
            res.error_code = int(ErrorCode.NOT_CONTROLLER)
        elif name is None:
            res.error_code = int(ErrorCode.UNKNOWN_TOPIC_ID)
        elif name not in deletable:
            res.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if topic_id is not None and topic_id.int and not ctx.authorizer.authorize(ctx, Op.DESCRIBE, TOPIC, name):
                res.name = None          # no DESCRIBE: the name a topic id stands for is not disclosed
        else:
            jobs.append((res, defer.ensureDeferred(ctx.admin.delete_topic(name, request.timeout_ms, quota))))
    for res, job in jobs:
        r = await job
        res.error_code, res.error_message = int(r.error), r.message
    _throttle(ctx, quota)
    return DeleteTopicsResponse(responses=out)


@handler(37)
def handle_create_partitions(ctx: RequestContext, request: CreatePartitionsRequest):
    return defer.ensureDeferred(_create_partitions(ctx, request))


async def _create_partitions(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    dup = _duplicates([t.name for t in request.topics])
    results = []
    quota = _mutation_quota(ctx)
    for t in request.topics:
        res = CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name)
        results.append(res)
        if not ctx.controller.active:
            res.error_code = int(ErrorCode.NOT_CONTROLLER)
            continue
        if t.name in dup:
            res.error_code, res.error_message = int(ErrorCode.INVALID_REQUEST), "Duplicate topic in request."
            continue
        if not ctx.authorizer.authorize(ctx, Op.ALTER, TOPIC, t.name):
            res.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            res.error_message = "The topic authorization is failed."
            continue
        assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        r = await ctx.admin.create_partitions(t.name, t.count, assignments,
                                              request.validate_only, request.timeout_ms, quota)
        res.error_code, res.error_message = int(r.error), r.message
    _throttle(ctx, quota)
    return CreatePartitionsResponse(results=results)
