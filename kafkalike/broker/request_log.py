"""Kafka's request log: `Completed request:{...}` in kafka-request.log, one line per answer.

Operators turn it on to see what clients actually send (which client, which versions,
which topics, how long each phase took) without a packet capture. Kafka 2.8 (KIP-673)
writes each completed request at DEBUG on `kafka.request.logger` as one JSON object:
the request header with the API's name, the request and the response as Kafka's
generated JSON converters write them (field names in camelCase, only the fields of the
version spoken, tagged fields only when they differ from their default), then the
connection, the times of each phase in milliseconds (microsecond precision), who sent
it on which listener, and the client software named by its ApiVersions request.

What stays out, as in Kafka: record sets are written as their size
(`recordsSizeInBytes`, `recordSetSizeInBytes`), never decoded; config values in
AlterConfigs/IncrementalAlterConfigs that are passwords, or whose type is not known, are
`[hidden]` (KafkaConfig.loggableValue); and the requests of a SASL login (handshake,
tokens, and the ApiVersions before them) are answered by Kafka's authenticator, not
its request handlers, so they are not logged at all. One deliberate difference: Kafka
2.8 writes a few byte fields that are secrets as base64 (SCRAM salted passwords in
AlterUserScramCredentials, delegation token HMACs, SaslAuthenticate bytes that reach
the handlers after a login); here they are `[hidden]` too.

Nothing here runs unless the logger is enabled for DEBUG: the listener checks
`REQUEST_LOGGER.isEnabledFor(DEBUG)` once per request (Python caches that answer until a
level changes) and only then turns the request into JSON, before it is handled (a
handler may consume it), and the response when it is written.
"""
from __future__ import annotations

import base64
import itertools
import json
import logging
import uuid
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from kafkalike.common.resources import ResourceType
from kafkalike.protocol.api import APIS
from kafkalike.protocol.schema import MessageData, _field_default, snake_case

if TYPE_CHECKING:
    from kafkalike.broker.registry import RequestContext

REQUEST_LOGGER = logging.getLogger("kafka.request.logger")
DEBUG = logging.DEBUG
HIDDEN = "[hidden]"                   # Kafka's Password.HIDDEN
UNKNOWN = "unknown"                   # ClientInformation.UNKNOWN_NAME_OR_VERSION
SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18

# Byte fields that are secrets, per message: written as HIDDEN instead of base64.
SECRET_FIELDS: dict[str, frozenset[str]] = {
    "SaslAuthenticateRequest": frozenset({"auth_bytes"}),
    "SaslAuthenticateResponse": frozenset({"auth_bytes"}),
    "AlterUserScramCredentialsRequest": frozenset({"salt", "salted_password"}),
    "CreateDelegationTokenResponse": frozenset({"hmac"}),
    "DescribeDelegationTokenResponse": frozenset({"hmac"}),
    "RenewDelegationTokenRequest": frozenset({"hmac"}),
    "ExpireDelegationTokenRequest": frozenset({"hmac"}),
}
_ALTER_CONFIGS = ("AlterConfigsRequest", "IncrementalAlterConfigsRequest")

_connection_index = itertools.count()


@lru_cache(maxsize=None)
def camel_case(name: str) -> str:
    """A declaration's snake_case field name as Kafka's converters write it
    (`client_software_name` -> `clientSoftwareName`; exact for every 2.8 field)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@lru_cache(maxsize=None)
def api_key_name(api_key: int) -> str:
    """ApiKeys' enum name (`PRODUCE`, `API_VERSIONS`), from the declaration's message name."""
    spec = APIS.get(api_key)
    if spec is None:
        return f"UNKNOWN_{api_key}"
    return snake_case(spec.name).upper()


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def message_json(message: MessageData, version: int) -> dict[str, Any]:
    """`message` at `version` as Kafka's generated <Message>JsonConverter.write(..., false) writes it."""
    return _struct_json(message, version, SECRET_FIELDS.get(type(message).SCHEMA.name, frozenset()))


def _struct_json(obj: Any, version: int, secrets: frozenset[str]) -> dict[str, Any]:
    cls = type(obj)
    node: dict[str, Any] = {}
    for f in cls.FIELDS:
        if not f.present_in(version):
            continue
        value = getattr(obj, f.name)
        if f.tagged_in(version) and value == _field_default(f, cls.TOP.STRUCTS)():
            continue
        name = camel_case(f.name)
        kind = f.element_type
        if value is None:
            node[name] = None
        elif kind == "records":
            # KIP-673: the size, never the records (nor their bytes).
            size = getattr(value, "size_in_bytes", None)
            node[name + "SizeInBytes"] = size if size is not None else len(value)
        elif f.is_array:
            if f.is_struct:
                node[name] = [_struct_json(item, version, secrets) for item in value]
            else:
                node[name] = [_primitive(kind, item, False) for item in value]
        elif f.is_struct:
            node[name] = _struct_json(value, version, secrets)
        else:
            node[name] = _primitive(kind, value, f.name in secrets)
    return node


def _primitive(kind: str, value: Any, secret: bool) -> Any:
    if kind == "bytes":
        return HIDDEN if secret else base64.b64encode(bytes(value)).decode("ascii")
    if kind == "uuid":
        return kafka_uuid(value)
    if kind == "float64":
        return float(value)
    return value


def loggable_value(resource_type: int, name: str, value: str | None) -> str | None:
    """KafkaConfig.loggableValue: a broker key that is a password or unknown, a topic key
    that is unknown, and any key of another resource type (but broker loggers) is hidden."""
    if resource_type == ResourceType.BROKER:
        from kafkalike.broker.dynamic_config import is_sensitive
        sensitive = is_sensitive(name)
    elif resource_type == ResourceType.TOPIC:
        from kafkalike.storage.config import KEYS_BY_NAME
        sensitive = name not in KEYS_BY_NAME
    else:
        sensitive = resource_type != ResourceType.BROKER_LOGGER
    return HIDDEN if sensitive else value


def _hide_config_values(node: dict[str, Any]) -> None:
    for resource in node.get("resources") or ():
        for config in resource.get("configs") or ():
            if "value" in config:
                config["value"] = loggable_value(resource.get("resourceType", 0), config.get("name", ""),
                                                 config["value"])


def header_json(ctx: RequestContext) -> dict[str, Any]:
    """RequestHeaderDataJsonConverter at the header's own version, plus requestApiKeyName."""
    node: dict[str, Any] = {"requestApiKey": ctx.api_key, "requestApiVersion": ctx.version,
                            "correlationId": ctx.correlation_id}
    spec = APIS.get(ctx.api_key)
    if spec is None or spec.request_header_version(ctx.version) >= 1:
        node["clientId"] = ctx.client_id
    node["requestApiKeyName"] = api_key_name(ctx.api_key)
    return node


def connection_id(transport: Any) -> str:
    """Kafka's ConnectionId: `localHost:localPort-remoteHost:remotePort-index`."""
    get_host, get_peer = getattr(transport, "getHost", None), getattr(transport, "getPeer", None)
    local, peer = (get_host() if get_host else None), (get_peer() if get_peer else None)
    return (f"{getattr(local, 'host', '?')}:{getattr(local, 'port', '?')}-"
            f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}-{next(_connection_index)}")


def client_information(request: Any, version: int) -> tuple[str, str] | None:
    """The client software an ApiVersions request names (KIP-511), as Kafka's processor
    registers it for the connection: None when the request is not valid (a v3+ name or
    version outside Kafka's pattern); an empty name or version is "unknown"."""
    if request is None:
        return None
    name = getattr(request, "client_software_name", "") or ""
    software_version = getattr(request, "client_software_version", "") or ""
    if version >= 3:
        from kafkalike.broker.handlers.api_versions import valid_client_software
        if not valid_client_software(name, software_version):
            return None
    return name or UNKNOWN, software_version or UNKNOWN


def request_entry(connection: Any, ctx: RequestContext, request: MessageData | None) -> dict[str, Any] | None:
    """The start of a request's line, made when it is dispatched (only with the logger on);
    None for what Kafka's authenticator answers itself (a SASL login), which it never logs."""
    auth = getattr(connection, "authenticator", None)
    if auth is not None and (not auth.complete or ctx.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE)):
        return None
    try:
        if request is None:
            body: Any = {}       # an ApiVersions of a version we do not know: Kafka reads it as an empty v0
        else:
            body = message_json(request, ctx.version)
            if type(request).SCHEMA.name in _ALTER_CONFIGS:
                _hide_config_values(body)
        return {"isForwarded": False, "requestHeader": header_json(ctx), "request": body}
    except Exception:  # noqa: BLE001 - the log must never fail a request
        REQUEST_LOGGER.warning("Could not write %s v%d as JSON for the request log", api_key_name(ctx.api_key),
                               ctx.version, exc_info=True)
        return None


def millis(seconds: float) -> float:
    """Kafka's nanosToMs: milliseconds with microsecond precision, never negative."""
    return int(max(seconds, 0.0) * 1_000_000) / 1000


def log_completed(connection: Any, entry: dict[str, Any], ctx: RequestContext, response: MessageData | None,
                  version: int, times: tuple[float, float, float, float, float, float], throttle_ms: int) -> None:
    """Write the line: `times` are (received, started, handled, ready, dequeued, sent) in
    seconds; dequeued is when the listener took the answer to write it."""
    try:
        line = _completed_line(connection, entry, ctx, response, version, times, throttle_ms)
    except Exception:  # noqa: BLE001 - the log must never fail an answer
        REQUEST_LOGGER.warning("Could not write the %s answer as JSON for the request log",
                               api_key_name(ctx.api_key), exc_info=True)
        return
    REQUEST_LOGGER.debug("Completed request:%s", line)


def _completed_line(connection: Any, entry: dict[str, Any], ctx: RequestContext, response: MessageData | None,
                    version: int, times: tuple[float, float, float, float, float, float], throttle_ms: int) -> str:
    received, started, handled, ready, dequeued, sent = times
    response_node: Any = "" if response is None else message_json(response, version)
    security = getattr(connection, "security", None)
    factory = getattr(connection, "factory", None)
    software = getattr(connection, "client_information", None) or (UNKNOWN, UNKNOWN)
    entry["response"] = response_node
    entry["connection"] = getattr(connection, "connection_id", "")
    entry["totalTimeMs"] = millis(sent - received)
    entry["requestQueueTimeMs"] = millis(started - received)
    entry["localTimeMs"] = millis(handled - started)
    entry["remoteTimeMs"] = millis(ready - handled)
    entry["throttleTimeMs"] = int(throttle_ms)
    entry["responseQueueTimeMs"] = millis(dequeued - ready)
    entry["sendTimeMs"] = millis(sent - dequeued)
    entry["securityProtocol"] = security.protocol if security is not None else "PLAINTEXT"
    entry["principal"] = ctx.principal
    entry["listener"] = security.name if security is not None else getattr(factory, "listener_name", "PLAINTEXT")
    entry["clientInformation"] = {"softwareName": software[0], "softwareVersion": software[1]}
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False, default=str)
