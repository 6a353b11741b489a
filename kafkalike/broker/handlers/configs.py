"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Topic overrides live in /config/topics/<t>; the admin manager writes a change there with
a change notification, and every broker applies it to its logs when the notification
arrives, so alterations take effect live. Broker configs are static here: they are described,
and a request to change one is refused (Kafka 2.8 would store a dynamic override).
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker import topic_configs
from kafkalike.broker.admin_manager import AdminError
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.resources import ConfigSource, ResourceType
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from kafkalike.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafkalike.protocol.messages.incremental_alter_configs import (IncrementalAlterConfigsRequest,
                                                                   IncrementalAlterConfigsResponse)

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
_Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _check_broker_name(ctx: RequestContext, name: str) -> None:
    if name not in ("", str(ctx.broker_id)):
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}")


@handler(32)
def handle_describe_configs(ctx: RequestContext, request: DescribeConfigsRequest):
    return defer.ensureDeferred(_describe_configs(ctx, request))


async def _describe_configs(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for res in request.resources:
        result = _Result(resource_type=res.resource_type, resource_name=res.resource_name, configs=[])
        try:
            wanted = None if res.configuration_keys is None else set(res.configuration_keys)
            if res.resource_type == ResourceType.TOPIC:
                overrides = await ctx.admin.topic_overrides(res.resource_name)
                effective = ctx.topic_configs.parse(overrides, strict=False)
                entries = [_topic_entry(e, ctx.version, request)
                           for e in topic_configs.describe(ctx.config, overrides, effective)]
            elif res.resource_type == ResourceType.BROKER:
                _check_broker_name(ctx, res.resource_name)
                entries = [_broker_entry(e, ctx.version, request) for e in ctx.config.describe_all()]
            else:
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {res.resource_type}")
            result.configs = [e for e in entries if wanted is None or e.name in wanted]
        except AdminError as exc:
            result.error_code, result.error_message = int(exc.code), exc.message
        results.append(result)
    return DescribeConfigsResponse(results=results)


def _topic_entry(e, version: int, request) -> _Entry:
    entry = _Entry(name=e.name, value=e.value, read_only=False,
                   is_default=e.source is ConfigSource.DEFAULT_CONFIG,
                   config_source=int(e.source), is_sensitive=False, config_type=e.config_type.value)
    if version >= 1 and request.include_synonyms:
        entry.synonyms = [_Synonym(name=n, value=v, source=int(s)) for n, v, s in e.synonyms]
    if version >= 3 and request.include_documentation:
        entry.documentation = e.documentation
    return entry


def _broker_entry(e, version: int, request) -> _Entry:
    entry = _Entry(name=e.name, value=None if e.is_sensitive else e.value, read_only=e.read_only,
                   is_default=e.is_default, config_source=int(e.source), is_sensitive=e.is_sensitive,
                   config_type=e.config_type.value)
    if version >= 1 and request.include_synonyms:
        entry.synonyms = [_Synonym(name=s.name, value=s.value, source=int(s.source)) for s in e.synonyms]
    if version >= 3 and request.include_documentation:
        entry.documentation = e.documentation
    return entry


@handler(33)
def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest):
    changes = [(r.resource_type, r.resource_name, lambda current, r=r: {c.name: c.value for c in r.configs})
               for r in request.resources]
    return defer.ensureDeferred(_alter(ctx, changes, request.validate_only, AlterConfigsResponse))


@handler(44)
def handle_incremental_alter_configs(ctx: RequestContext, request: IncrementalAlterConfigsRequest):
    changes = [(r.resource_type, r.resource_name,
                lambda current, r=r: topic_configs.apply_incremental(
                    current, [(c.name, c.config_operation, c.value) for c in r.configs]))
               for r in request.resources]
    return defer.ensureDeferred(_alter(ctx, changes, request.validate_only, IncrementalAlterConfigsResponse))


async def _alter(ctx: RequestContext, changes, validate_only: bool, response_cls):
    responses = []
    for rtype, name, compute in changes:
        resp = response_cls.AlterConfigsResourceResponse(resource_type=rtype, resource_name=name)
        try:
            if rtype == ResourceType.TOPIC:
                await ctx.admin.alter_topic_config(name, compute, validate_only)
            elif rtype == ResourceType.BROKER:
                _check_broker_name(ctx, name)
                raise AdminError(ErrorCode.INVALID_REQUEST,
                                 "Dynamic broker configs are not supported; set them in server.properties")
            else:
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {rtype}")
        except AdminError as exc:
            resp.error_code, resp.error_message = int(exc.code), exc.message
        responses.append(resp)
    return response_cls(responses=responses)
