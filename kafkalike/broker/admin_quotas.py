"""Client quotas in ZooKeeper, the admin manager's part Kafka 2.8 keeps in ZkAdminManager.

Quotas are dynamic configs of users, client ids, (user, client id) pairs and IPs:
/config/users/<user>, /config/clients/<client-id>, /config/users/<user>/clients/<client-id>
and /config/ips/<ip>, names sanitized as Kafka's Sanitizer does and "<default>" for the
default entity. Alterations rewrite the whole znode and leave a change notification,
so kafka-configs.sh and any Kafka broker sharing the ZooKeeper see the same thing.
The validation, the filter semantics and the error sentences are Kafka 2.8's. The
quotas are enforced by client_quotas.py.

Calls take plain values and answer with plain results (an error code and Kafka's
sentence where a request is refused); a ZooKeeper failure is raised, for the caller to
answer as Kafka does. The znode helpers at the bottom are shared with the SCRAM
credentials (admin_scram.py), which live in the same user znodes.
"""
from __future__ import annotations

import ipaddress
import math
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence
from urllib.parse import quote, unquote_plus

from twisted.internet import threads

from kafkalike.broker.config import java_double
from kafkalike.protocol.errors import ErrorCode
from kafkalike.zkdata.znodes import ConfigType

if TYPE_CHECKING:
    from kafkalike.zkdata import KafkaZkClient

USER, CLIENT_ID, IP = "user", "client-id", "ip"
DEFAULT_ENTITY = "<default>"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
UNEXPECTED = "The server experienced an unexpected error when processing the request."

LONG, INT, DOUBLE, PASSWORD = "LONG", "INT", "DOUBLE", "PASSWORD"
CLIENT_QUOTAS = {"producer_byte_rate": LONG, "consumer_byte_rate": LONG,
                 "request_percentage": DOUBLE, "controller_mutation_rate": DOUBLE}
IP_QUOTAS = {"connection_creation_rate": INT}
QUOTA_KEYS = frozenset(CLIENT_QUOTAS) | frozenset(IP_QUOTAS)
SCRAM_KEYS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})
# A user's dynamic configs are its quotas and its SCRAM credentials (Kafka's DynamicConfig.User).
USER_CONFIGS = {**CLIENT_QUOTAS, **{k: PASSWORD for k in SCRAM_KEYS}}
_RANGES = {LONG: (-(1 << 63), (1 << 63) - 1), INT: (-(1 << 31), (1 << 31) - 1)}
_EPSILON = 1e-6

_ABSENT = object()    # the entity has no such part (Kafka's None; a default entity is Some(null))

# An entity as (entity type, name) pairs; a None name is the default entity.
Entity = tuple[tuple[str, "str | None"], ...]


# -- what callers pass and get back ----------------------------------------------------


@dataclass(frozen=True)
class QuotaFilterComponent:
    """One component of a describe filter, as asked: match_type EXACT (with match),
    DEFAULT or SPECIFIED (any named entity of the type)."""

    entity_type: str
    match_type: int
    match: str | None = None


@dataclass(frozen=True)
class QuotaEntry:
    entity: Entity
    values: dict[str, float]


@dataclass(frozen=True)
class QuotaDescription:
    """The quotas a filter matched, or why the filter was refused."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    entries: list[QuotaEntry] = field(default_factory=list)


@dataclass(frozen=True)
class QuotaOp:
    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True)
class QuotaAlteration:
    """Changes to one entity; its parts in the order asked (a repeated type: the last wins)."""

    entity: Entity
    ops: tuple[QuotaOp, ...]


@dataclass(frozen=True)
class QuotaAlterationResult:
    entity: Entity
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


class QuotaError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class _Component:
    entity_type: str
    kind: int            # MATCH_EXACT, MATCH_DEFAULT or MATCH_SPECIFIED
    name: str | None = None

    @property
    def exact(self) -> bool:
        """EXACT and DEFAULT both name one entity; SPECIFIED means any named one."""
        return self.kind != MATCH_SPECIFIED

    @property
    def wanted(self):
        return self.name if self.kind == MATCH_EXACT else None if self.kind == MATCH_DEFAULT else _ABSENT


# -- describe --------------------------------------------------------------------------


async def describe_client_quotas(zk: KafkaZkClient, components: Sequence[QuotaFilterComponent],
                                 strict: bool) -> QuotaDescription:
    try:
        user, client, ip = _parse_filter(components)
        found: dict[Entity, dict[str, float]] = {}
        if ip is None:
            found.update(await _user_client_quotas(zk, user, client, strict))
        if user is None and client is None:
            found.update(await _ip_quotas(zk, ip, strict))
    except QuotaError as exc:
        return QuotaDescription(exc.code, exc.message)
    return QuotaDescription(entries=[QuotaEntry(entity, values) for entity, values in found.items()])


def _parse_filter(components: Sequence[QuotaFilterComponent]) -> tuple[_Component | None, _Component | None,
                                                                      _Component | None]:
    parsed = []
    for c in components:
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED) or (
                c.match_type == MATCH_EXACT and c.match is None):
            raise QuotaError(ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED)
        parsed.append(_Component(c.entity_type, c.match_type, c.match if c.match_type == MATCH_EXACT else None))
    by_type: dict[str, _Component] = {}
    duplicate = {USER: "user", CLIENT_ID: "client", IP: "ip"}
    for c in parsed:
        if c.entity_type in duplicate:
            if c.entity_type in by_type:
                raise QuotaError(ErrorCode.INVALID_REQUEST,
                                 f"Duplicate {duplicate[c.entity_type]} filter component entity type")
            by_type[c.entity_type] = c
        elif c.entity_type == "":
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Unexpected empty filter component entity type")
        else:
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Custom entity type '{c.entity_type}' not supported")
    user, client, ip = by_type.get(USER), by_type.get(CLIENT_ID), by_type.get(IP)
    if (user or client) and ip:
        raise QuotaError(ErrorCode.INVALID_REQUEST,
                         "Invalid entity filter component combination, IP filter component should not be "
                         "used with user or clientId filter component.")
    return user, client, ip


def _sanitized(name) -> str:
    if name is _ABSENT:
        return ""
    return DEFAULT_ENTITY if name is None else sanitize(name)


def _entity_name(znode_name: str) -> str | None:
    return None if znode_name == DEFAULT_ENTITY else desanitize(znode_name)


async def _user_client_quotas(zk: KafkaZkClient, user: _Component | None, client: _Component | None,
                              strict: bool) -> dict[Entity, dict[str, float]]:
    """Kafka's handleDescribeClientQuotas: read only the znodes the filter can match."""
    user_name = user.wanted if user else _ABSENT
    client_name = client.wanted if client else _ABSENT
    exact_user, exact_client = bool(user and user.exact), bool(client and client.exact)
    exclude_user, exclude_client = strict and user is None, strict and client is None

    candidates: dict[tuple, dict[str, str]] = {}
    if exact_user and exclude_client:
        candidates[(user_name, _ABSENT)] = await fetch_entity(zk, ConfigType.USER, _sanitized(user_name))
    elif not exclude_user and not exact_client:
        for name in await zk.get_entity_names(ConfigType.USER):
            candidates[(_entity_name(name), _ABSENT)] = await fetch_entity(zk, ConfigType.USER, name)
    if exclude_user and exact_client:
        candidates[(_ABSENT, client_name)] = await fetch_entity(zk, ConfigType.CLIENT, _sanitized(client_name))
    elif not exact_user and not exclude_client:
        for name in await zk.get_entity_names(ConfigType.CLIENT):
            candidates[(_ABSENT, _entity_name(name))] = await fetch_entity(zk, ConfigType.CLIENT, name)
    if exact_user and exact_client:
        path = f"{_sanitized(user_name)}/clients/{_sanitized(client_name)}"
        candidates[(user_name, client_name)] = await fetch_entity(zk, ConfigType.USER, path)
    elif not exclude_user and not exclude_client:
        for u in await zk.get_entity_names(ConfigType.USER):
            for c in await zk.get_entity_names(f"{ConfigType.USER}/{u}/clients"):
                candidates[(_entity_name(u), _entity_name(c))] = await fetch_entity(
                    zk, ConfigType.USER, f"{u}/clients/{c}")

    def matches(component: _Component | None, name) -> bool:
        if component is None:
            return name is _ABSENT or not strict
        if component.kind == MATCH_SPECIFIED:
            return name is not _ABSENT
        return name is not _ABSENT and name == component.wanted

    found = {}
    for (u, c), props in candidates.items():
        values = {k: v for k, v in props.items() if k in QUOTA_KEYS}
        if values and matches(user, u) and matches(client, c):
            entity = tuple((t, n) for t, n in ((USER, u), (CLIENT_ID, c)) if n is not _ABSENT)
            found[entity] = _as_doubles(values)
    return found


async def _ip_quotas(zk: KafkaZkClient, ip: _Component | None, strict: bool) -> dict[Entity, dict[str, float]]:
    candidates: dict = {}
    if ip is not None and ip.exact:
        candidates[ip.wanted] = await fetch_entity(zk, ConfigType.IP, _sanitized(ip.wanted))
    elif (ip is not None and ip.kind == MATCH_SPECIFIED) or (ip is None and not strict):
        for name in await zk.get_entity_names(ConfigType.IP):
            candidates[_entity_name(name)] = await fetch_entity(zk, ConfigType.IP, name)
    found = {}
    for name, props in candidates.items():
        values = {k: v for k, v in props.items() if k in IP_QUOTAS}
        if values:
            found[((IP, name),)] = _as_doubles(values)
    return found


def _as_doubles(values: dict[str, str]) -> dict[str, float]:
    try:
        return {k: float(v) for k, v in values.items()}
    except ValueError:
        raise QuotaError(ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED) from None


# -- alter -----------------------------------------------------------------------------


async def alter_client_quotas(zk: KafkaZkClient, alterations: Sequence[QuotaAlteration],
                              validate_only: bool) -> list[QuotaAlterationResult]:
    """One result per entity, the last alteration's, in the order of last mention."""
    outcomes: dict[Entity, tuple[ErrorCode, str | None]] = {}
    for alteration in alterations:
        entity: dict[str, str | None] = {}
        for entity_type, name in alteration.entity:
            entity[entity_type] = name
        try:
            await _alter_entity(zk, entity, alteration.ops, validate_only)
            outcome = (ErrorCode.NONE, None)
        except QuotaError as exc:
            outcome = (exc.code, exc.message)
        key = tuple(entity.items())
        outcomes.pop(key, None)
        outcomes[key] = outcome
    return [QuotaAlterationResult(entity, code, message) for entity, (code, message) in outcomes.items()]


async def _alter_entity(zk: KafkaZkClient, entity: dict[str, str | None], ops: Sequence[QuotaOp],
                        validate_only: bool) -> None:
    if not entity:
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    parts = {USER: _ABSENT, CLIENT_ID: _ABSENT, IP: _ABSENT}
    for entity_type, name in entity.items():
        if entity_type not in parts:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}")
        parts[entity_type] = _sanitized(name)
        if name == "":
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported")
    user, client, ip = parts[USER], parts[CLIENT_ID], parts[IP]
    if ip is not _ABSENT:
        if user is not _ABSENT or client is not _ABSENT:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity should "
                                                        "not be used with user/client ID entity.")
        if not await _valid_ip_entity(ip):
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"{ip} is not a valid IP or resolvable host.")
        entity_type, path, keys = ConfigType.IP, ip, IP_QUOTAS
    elif user is not _ABSENT:
        entity_type, keys = ConfigType.USER, USER_CONFIGS
        path = user if client is _ABSENT else f"{user}/clients/{client}"
    else:
        entity_type, path, keys = ConfigType.CLIENT, client, CLIENT_QUOTAS

    props = dict(await fetch_entity(zk, entity_type, path))
    for op in ops:
        if op.remove:
            props.pop(op.key, None)
            continue
        kind = keys.get(op.key)
        if kind is None:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {op.key}")
        if kind == PASSWORD:      # a credential is not a quota; Kafka fails it as unexpected
            raise QuotaError(ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED)
        props[op.key] = java_double(op.value) if kind == DOUBLE else _integral(op.key, kind, op.value)
    if validate_only:
        return
    # Only a named user's znode may also hold credentials; the default user and
    # user/client pairs are checked as clients are.
    named_user = entity_type == ConfigType.USER and path != DEFAULT_ENTITY and "/clients/" not in path
    _check_stored(props, CLIENT_QUOTAS if entity_type != ConfigType.IP else IP_QUOTAS,
                  allow=SCRAM_KEYS if named_user else frozenset())
    await zk.change_entity_config(entity_type, path, props)


def _integral(key: str, kind: str, value: float) -> str:
    """Kafka rounds within 1e-6 (toward zero, as a JVM cast does) and refuses the rest."""
    lo, hi = _RANGES[kind]
    shifted = value + _EPSILON
    whole = 0 if math.isnan(shifted) else lo if shifted <= lo else hi if shifted >= hi else int(shifted)
    if not abs(float(whole) - value) <= _EPSILON:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Configuration {key} must be a {kind} value")
    return str(whole)


def _check_stored(props: dict[str, str], keys: dict[str, str], allow: frozenset) -> None:
    """What Kafka's DynamicConfig.validate refuses before writing: unknown keys, bad values."""
    for k, v in props.items():
        if k in allow:
            continue
        if k not in keys:
            raise QuotaError(ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED)
        try:
            float(v) if keys[k] == DOUBLE else int(v.strip())
        except ValueError:
            raise QuotaError(ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED) from None


async def _valid_ip_entity(name: str) -> bool:
    """The default, an address, or a name that resolves (looked up off the reactor)."""
    if name == DEFAULT_ENTITY:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        await threads.deferToThread(socket.gethostbyname, name)
        return True
    except OSError:
        return False


# -- znodes under /config, shared with the SCRAM credentials ----------------------------


def sanitize(name: str) -> str:
    """Kafka's Sanitizer: URL-encode, then '*' as %2A and space as %20 (safe in JMX names)."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote_plus(name)


async def fetch_entity(zk: KafkaZkClient, entity_type: str, name: str) -> dict[str, str]:
    """The entity's stored configs; none when its znode does not exist."""
    return await zk.get_entity_configs(entity_type, name)
