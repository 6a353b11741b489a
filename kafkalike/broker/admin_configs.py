"""Topic, broker and broker-logger configs, the admin manager's part Kafka 2.8 keeps in
ZkAdminManager (alterConfigs, incrementalAlterConfigs, prepareIncrementalConfigs) and
ConfigHelper (describeConfigs).

What callers pass and get back: an alteration is a list of (name, value) pairs, an
incremental one a list of (name, operation, value) triples; each resource is answered
with a ConfigResult (an error code and Kafka's sentence), a description with a
ConfigDescription whose entries are DescribedConfig, everything the wire's entry says
before the request's version and flags choose what is sent. The AdminManager's methods
(admin_manager.py) do the ZooKeeper reads and writes; the checks and the computation of
the new values are here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from kafkalike.broker.admin_errors import AdminError
from kafkalike.broker.config import BROKER_CONFIG, ConfigType
from kafkalike.common.resources import AlterConfigOpType, ConfigSource, ResourceType
from kafkalike.protocol.errors import ErrorCode
from kafkalike.storage.config import KEYS_BY_NAME as TOPIC_KEYS

SET, DELETE, APPEND, SUBTRACT = (AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND,
                                 AlterConfigOpType.SUBTRACT)
OP_NAMES = {op: op.name for op in AlterConfigOpType}
UNEXPECTED = "The server experienced an unexpected error when processing the request."

# An incremental alteration: (config name, AlterConfigOpType code, value or None).
IncrementalOp = tuple[str, int, "str | None"]
# A key's (type, default), or None for a key the resource does not define.
KeyType = Callable[[str], "tuple[ConfigType, object] | None"]


@dataclass(frozen=True)
class ConfigResult:
    """One resource's answer to AlterConfigs or IncrementalAlterConfigs."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class DescribedConfig:
    """One key of a described resource, as ConfigHelper's createResponseConfig has it."""

    name: str
    value: str | None
    read_only: bool
    is_default: bool
    source: ConfigSource
    is_sensitive: bool
    config_type: int = 0                      # ConfigType's wire code; 0 is UNKNOWN
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()
    documentation: str | None = ""


@dataclass
class ConfigDescription:
    """One resource's answer to DescribeConfigs: its keys, or why it was refused."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    entries: list[DescribedConfig] = field(default_factory=list)


def refused(exc: AdminError) -> ConfigResult:
    return ConfigResult(exc.code, exc.message)


# -- DescribeConfigs ------------------------------------------------------------------------


def described_broker_is_default(broker_id: int, name: str) -> bool:
    """ConfigHelper's check of a described broker: True for the default (""), False for
    this broker; anything else is refused."""
    if not name:
        return True
    try:
        named = int(name)
    except ValueError:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if named != broker_id:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {broker_id} or empty string, but received {name}")
    return False


def topic_entry(e) -> DescribedConfig:
    """A topic key (topic_configs.describe): never read-only nor sensitive."""
    return DescribedConfig(name=e.name, value=e.value, read_only=False, is_default=e.source is ConfigSource.DEFAULT_CONFIG,
                           source=e.source, is_sensitive=False, config_type=e.config_type.value,
                           synonyms=tuple(e.synonyms), documentation=e.documentation)


def broker_entry(e) -> DescribedConfig:
    """A broker key (dynamic_config.describe_*_entries): a sensitive value is not told."""
    return DescribedConfig(name=e.name, value=None if e.is_sensitive else e.value, read_only=e.read_only,
                           is_default=e.is_default, source=e.source, is_sensitive=e.is_sensitive,
                           config_type=0 if e.config_type is None else e.config_type.value,
                           synonyms=tuple((s.name, s.value, s.source) for s in e.synonyms),
                           documentation=e.documentation)


def logger_entry(name: str, level: str) -> DescribedConfig:
    """A broker logger: no type, synonyms or documentation, as Kafka answers them."""
    return DescribedConfig(name=name, value=level, read_only=False, is_default=False,
                           source=ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, is_sensitive=False)


# -- AlterConfigs and IncrementalAlterConfigs ------------------------------------------------


def check_no_nulls(configs: Sequence[tuple[str, str | None]]) -> dict[str, str]:
    """ZkAdminManager.alterConfigs: a null value is refused, naming every such key."""
    nulls = [name for name, value in configs if value is None]
    if nulls:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {','.join(nulls)}")
    return dict(configs)


def check_incremental(ops: Sequence[IncrementalOp]) -> None:
    """ZkAdminManager.incrementalAlterConfigs: a key named twice is refused, and so is a
    null value of any operation but DELETE."""
    names = [name for name, _, _ in ops]
    duplicates = list(dict.fromkeys(n for n in names if names.count(n) > 1))
    if duplicates:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys : {','.join(duplicates)}")
    nulls = [f"{OP_NAMES.get(op, op)}:{name}" for name, op, value in ops if value is None and op != DELETE]
    if nulls:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {','.join(nulls)}")


def unsupported_alteration(resource_type: int) -> AdminError:
    return AdminError(ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, "
                                                 f"but resource type is {_type_name(resource_type)}")


def _type_name(code: int) -> str:
    try:
        return ResourceType(code).name
    except ValueError:
        return "UNKNOWN"


def topic_key_type(name: str):
    key = TOPIC_KEYS.get(name)
    return None if key is None else (key.type, key.default)


def broker_key_type(name: str):
    key = BROKER_CONFIG.get(name)
    return None if key is None else (key.type, key.default)


def prepare_incremental(ops: Sequence[IncrementalOp], current: dict[str, str], key_type: KeyType) -> dict[str, str]:
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
