"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Topic overrides live in /config/topics/<t>, dynamic broker configs in /config/brokers/<id>
(resource BROKER named by the broker id) and /config/brokers/<default> (resource BROKER
named ""); the admin manager validates and writes them with a change notification, and
every broker applies them when the notification arrives, so changes take effect live.

Describing a broker lists every key with its value and where it came from, synonyms in
Kafka's order (dynamic per-broker, dynamic default, static, default); describing the
cluster default lists only the keys set there. Errors are answered as Kafka 2.8's
ZkAdminManager and ConfigHelper answer them (see dynamic_config.py for the broker rules).
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker import broker_loggers, topic_configs
from kafkalike.broker.admin_manager import AdminError
from kafkalike.broker.config import BROKER_CONFIG, ConfigType
from kafkalike.broker.dynamic_config import describe_broker_entries, describe_default_entries
from kafkalike.broker.authorizer.service import TOPIC, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.resources import AlterConfigOpType, ConfigSource, ResourceType
from kafkalike.protocol.errors import ErrorCode, default_message
from kafkalike.protocol.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from kafkalike.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafkalike.protocol.messages.incremental_alter_configs import (IncrementalAlterConfigsRequest,
                                                                   IncrementalAlterConfigsResponse)
from kafkalike.storage.config import KEYS_BY_NAME as TOPIC_KEYS

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
_Synonym = DescribeConfigsResponse.DescribeConfigsSynonym

SET, DELETE, APPEND, SUBTRACT = (AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND,
                                 AlterConfigOpType.SUBTRACT)
OP_NAMES = {op: op.name for op in AlterConfigOpType}
UNEXPECTED = "The server experienced an unexpected error when processing the request."


def _broker_resource(ctx: RequestContext, name: str) -> bool:
    """ConfigHelper's check of a described broker: True for the default (""), False for
    this broker; anything else is refused."""
    if not name:
        return True
    try:
        broker_id = int(name)
    except ValueError:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != ctx.broker_id:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}")
    return False


def _authorize(ctx: RequestContext, resource_type: int, name: str, operation: Op) -> None:
    """Kafka's per-resource check: a topic's configs need the operation on the topic,
    a broker's or a broker logger's on the cluster."""
    if resource_type == ResourceType.TOPIC:
        allowed, code = ctx.authorizer.authorize(ctx, operation, TOPIC, name), ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif resource_type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        allowed, code = ctx.authorizer.authorize_cluster(ctx, operation), ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    else:
        return
    if not allowed:
        raise AdminError(code, default_message(code))


@handler(32)
def handle_describe_configs(ctx: RequestContext, request: DescribeConfigsRequest):
    return defer.ensureDeferred(_describe_configs(ctx, request))


async def _describe_configs(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for res in request.resources:
        result = _Result(resource_type=res.resource_type, resource_name=res.resource_name, configs=[])
        try:
            _authorize(ctx, res.resource_type, res.resource_name, Op.DESCRIBE_CONFIGS)
            # Kafka: a null or empty key list asks for every key.
            wanted = set(res.configuration_keys) if res.configuration_keys else None
            if res.resource_type == ResourceType.TOPIC:
                overrides = await ctx.admin.topic_overrides(res.resource_name)
                effective = ctx.topic_configs.parse(overrides, strict=False)
                entries = [_topic_entry(e, ctx.version, request)
                           for e in topic_configs.describe(ctx.config, overrides, effective)]
            elif res.resource_type == ResourceType.BROKER:
                default = _broker_resource(ctx, res.resource_name)
                described = describe_default_entries(ctx.config) if default else describe_broker_entries(ctx.config)
                entries = [_broker_entry(e, ctx.version, request) for e in described]
            elif res.resource_type == ResourceType.BROKER_LOGGER:
                entries = [_Entry(name=name, value=level, read_only=False, is_default=False,
                                  config_source=int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG), is_sensitive=False)
                           for name, level in broker_loggers.describe(ctx.broker_id, res.resource_name, wanted)]
            else:
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {res.resource_type}")
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
                   config_type=0 if e.config_type is None else e.config_type.value)
    if version >= 1 and request.include_synonyms:
        entry.synonyms = [_Synonym(name=s.name, value=s.value, source=int(s.source)) for s in e.synonyms]
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
            nulls = [c.name for c in r.configs if c.value is None]
            if nulls:
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {','.join(nulls)}")
            props = {c.name: c.value for c in r.configs}
            if r.resource_type == ResourceType.TOPIC:
                await ctx.admin.alter_topic_config(r.resource_name, lambda current: props, request.validate_only)
            elif r.resource_type == ResourceType.BROKER:
                await ctx.admin.alter_broker_config(r.resource_name, lambda current: props, request.validate_only,
                                                    incremental=False)
            else:
                raise AdminError(ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, "
                                                            f"but resource type is {_type_name(r.resource_type)}")
        except AdminError as exc:
            resp.error_code, resp.error_message = int(exc.code), exc.message
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
            ops = [(c.name, c.config_operation, c.value) for c in r.configs]
            names = [name for name, _, _ in ops]
            duplicates = list(dict.fromkeys(n for n in names if names.count(n) > 1))
            if duplicates:
                raise AdminError(ErrorCode.INVALID_REQUEST,
                                 f"Error due to duplicate config keys : {','.join(duplicates)}")
            nulls = [f"{OP_NAMES.get(op, op)}:{name}" for name, op, value in ops if value is None and op != DELETE]
            if nulls:
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {','.join(nulls)}")
            if r.resource_type == ResourceType.TOPIC:
                await ctx.admin.alter_topic_config(
                    r.resource_name, lambda current: prepare_incremental(ops, current, _topic_key_type),
                    request.validate_only)
            elif r.resource_type == ResourceType.BROKER:
                await ctx.admin.alter_broker_config(
                    r.resource_name, lambda current: prepare_incremental(ops, current, _broker_key_type),
                    request.validate_only, incremental=True)
            elif r.resource_type == ResourceType.BROKER_LOGGER:
                broker_loggers.alter(ctx.broker_id, r.resource_name, ops, request.validate_only)
            else:
                raise AdminError(ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, "
                                                            f"but resource type is {_type_name(r.resource_type)}")
        except AdminError as exc:
            resp.error_code, resp.error_message = int(exc.code), exc.message
        responses.append(resp)
    return IncrementalAlterConfigsResponse(responses=responses)


def _type_name(code: int) -> str:
    try:
        return ResourceType(code).name
    except ValueError:
        return "UNKNOWN"


def _topic_key_type(name: str):
    key = TOPIC_KEYS.get(name)
    return None if key is None else (key.type, key.default)


def _broker_key_type(name: str):
    key = BROKER_CONFIG.get(name)
    return None if key is None else (key.type, key.default)


def prepare_incremental(ops, current: dict[str, str], key_type) -> dict[str, str]:
    """ZkAdminManager.prepareIncrementalConfigs: SET and DELETE a key; APPEND and SUBTRACT
    items of a LIST key (starting from its default when it is not set)."""
    props = dict(current)
    for name, op, value in ops:
        if op == SET:
            props[name] = value
        elif op == DELETE:
            props.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            found = key_type(name)
            if found is None:        # Kafka's configKeys(name) fails on an unknown key
                raise AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED)
            kind, default = found
            if kind is not ConfigType.LIST:
                word = "append" if op == APPEND else "subtract"
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Config value {word} is not allowed for config key: {name}")
            old = props.get(name)
            if old is None:
                old = ",".join(default) if isinstance(default, (list, tuple)) else (default or "")
            items = [v for v in old.split(",") if v]
            change = [v for v in value.split(",") if v]
            if op == APPEND:
                items += change
            else:
                for v in change:       # Scala's List.diff: one occurrence per item
                    if v in items:
                        items.remove(v)
            props[name] = ",".join(items)
        else:
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
    return props
