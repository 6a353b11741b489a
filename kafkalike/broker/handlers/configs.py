"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Topic overrides live in /config/topics/<t>, dynamic broker configs in /config/brokers/<id>
(resource BROKER named by the broker id) and /config/brokers/<default> (resource BROKER
named ""); the admin manager validates and writes them with a change notification, and
every broker applies them when the notification arrives, so changes take effect live.

Describing a broker lists every key with its value and where it came from, synonyms in
Kafka's order (dynamic per-broker, dynamic default, static, default); describing the
cluster default lists only the keys set there. Errors are answered as Kafka 2.8's
ZkAdminManager and ConfigHelper answer them (see dynamic_config.py for the broker rules).

These handlers authorize each resource as KafkaApis does, then hand it to the admin
manager (admin_manager.py, admin_configs.py) and put its result on the wire.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.admin_configs import ConfigResult, DescribedConfig
from kafkalike.broker.admin_errors import AdminError
from kafkalike.broker.authorizer.service import TOPIC, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.resources import ResourceType
from kafkalike.protocol.errors import ErrorCode, default_message
from kafkalike.protocol.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from kafkalike.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafkalike.protocol.messages.incremental_alter_configs import (IncrementalAlterConfigsRequest,
                                                                   IncrementalAlterConfigsResponse)

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
_Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _authorize(ctx: RequestContext, resource_type: int, name: str, operation: Op) -> None:
    """Kafka's per-resource check: a topic's configs need the operation on the topic,
    a broker's or a broker logger's on the cluster. DescribeConfigs tells the error's
    message; the alterations answer ApiError(error, null), with none."""
    if resource_type == ResourceType.TOPIC:
        allowed, code = ctx.authorizer.authorize(ctx, operation, TOPIC, name), ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif resource_type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        allowed, code = ctx.authorizer.authorize_cluster(ctx, operation), ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    else:
        return
    if not allowed:
        raise AdminError(code, default_message(code) if operation == Op.DESCRIBE_CONFIGS else None)


@handler(32)
def handle_describe_configs(ctx: RequestContext, request: DescribeConfigsRequest):
    return defer.ensureDeferred(_describe_configs(ctx, request))


async def _describe_configs(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for res in request.resources:
        result = _Result(resource_type=res.resource_type, resource_name=res.resource_name, configs=[])
        try:
            _authorize(ctx, res.resource_type, res.resource_name, Op.DESCRIBE_CONFIGS)
        except AdminError as exc:
            result.error_code, result.error_message = int(exc.code), exc.message
        else:
            described = await ctx.admin.describe_configs(res.resource_type, res.resource_name,
                                                         res.configuration_keys)
            if described.error != ErrorCode.NONE:
                result.error_code, result.error_message = int(described.error), described.message
            else:
                result.configs = [_entry(e, ctx.version, request) for e in described.entries]
        results.append(result)
    return DescribeConfigsResponse(results=results)


def _entry(e: DescribedConfig, version: int, request) -> _Entry:
    entry = _Entry(name=e.name, value=e.value, read_only=e.read_only, is_default=e.is_default,
                   config_source=int(e.source), is_sensitive=e.is_sensitive, config_type=e.config_type)
    if version >= 1 and request.include_synonyms:
        entry.synonyms = [_Synonym(name=n, value=v, source=int(s)) for n, v, s in e.synonyms]
    if version >= 3 and request.include_documentation:
        entry.documentation = e.documentation
    return entry


# -- AlterConfigs and IncrementalAlterConfigs ------------------------------------------------


@handler(33)
def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest):
    return defer.ensureDeferred(_alter_configs(ctx, request))


async def _alter_configs(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    for r in request.resources:
        resp = AlterConfigsResponse.AlterConfigsResourceResponse(resource_type=r.resource_type,
                                                                 resource_name=r.resource_name)
        try:
            _authorize(ctx, r.resource_type, r.resource_name, Op.ALTER_CONFIGS)
        except AdminError as exc:
            resp.error_code, resp.error_message = int(exc.code), exc.message
        else:
            _set_result(resp, await ctx.admin.alter_configs(
                r.resource_type, r.resource_name, [(c.name, c.value) for c in r.configs], request.validate_only))
        responses.append(resp)
    return AlterConfigsResponse(responses=responses)


@handler(44)
def handle_incremental_alter_configs(ctx: RequestContext, request: IncrementalAlterConfigsRequest):
    return defer.ensureDeferred(_incremental_alter_configs(ctx, request))


async def _incremental_alter_configs(ctx: RequestContext, request: IncrementalAlterConfigsRequest
                                     ) -> IncrementalAlterConfigsResponse:
    responses = []
    for r in request.resources:
        resp = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(resource_type=r.resource_type,
                                                                            resource_name=r.resource_name)
        try:
            _authorize(ctx, r.resource_type, r.resource_name, Op.ALTER_CONFIGS)
        except AdminError as exc:
            resp.error_code, resp.error_message = int(exc.code), exc.message
        else:
            ops = [(c.name, c.config_operation, c.value) for c in r.configs]
            _set_result(resp, await ctx.admin.incremental_alter_configs(r.resource_type, r.resource_name, ops,
                                                                        request.validate_only))
        responses.append(resp)
    return IncrementalAlterConfigsResponse(responses=responses)


def _set_result(resp, result: ConfigResult) -> None:
    """A refused resource carries the error and Kafka's sentence; an accepted one the defaults."""
    if result.error != ErrorCode.NONE:
        resp.error_code, resp.error_message = int(result.error), result.message
