"""Topic configs as DescribeConfigs reports them, and validated changes to them.

A topic's effective value comes from its override in /config/topics/<t> if any, else
from the broker key that is its synonym (set in server.properties or left at Kafka's
default). Kafka's DescribeConfigs reports that provenance as source and synonyms.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkalike.broker.config import TOPIC_CONFIG_SYNONYMS, ConfigType
from kafkalike.common.resources import ConfigSource
from kafkalike.storage.config import CONFIG_KEYS, KEYS_BY_NAME, LogConfig

_TYPES = {"int": ConfigType.INT, "long": ConfigType.LONG, "double": ConfigType.DOUBLE,
          "boolean": ConfigType.BOOLEAN, "list": ConfigType.LIST, "string": ConfigType.STRING,
          "short": ConfigType.SHORT}

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@dataclass(frozen=True)
class TopicConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    config_type: ConfigType
    documentation: str | None
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]


def describe(broker_config, overrides: dict[str, str], effective: LogConfig) -> list[TopicConfigEntry]:
    values = effective.to_props()
    out = []
    for key in CONFIG_KEYS:
        synonyms = []
        if key.name in overrides:
            synonyms.append((key.name, overrides[key.name], ConfigSource.TOPIC_CONFIG))
        broker_key = TOPIC_CONFIG_SYNONYMS.get(key.name)
        doc = None
        if broker_key is not None:
            # The broker key's own synonyms, by Kafka's rule: those ranked above the key itself
            # are dropped, so retention.ms reads as a default while server.properties sets
            # only log.retention.hours (and is not listed among a topic's set configs).
            entry = broker_config.describe(broker_key)
            doc = entry.documentation
            synonyms.extend((syn.name, syn.value, syn.source) for syn in entry.synonyms)
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        out.append(TopicConfigEntry(key.name, values[key.name], source, _TYPES.get(key.type, ConfigType.STRING),
                                    doc, tuple(synonyms)))
    return out


def apply_incremental(current: dict[str, str], ops: list[tuple[str, int, str | None]]) -> dict[str, str]:
    """IncrementalAlterConfigs' SET/DELETE/APPEND/SUBTRACT on a topic's overrides."""
    result = dict(current)
    for name, op, value in ops:
        if op == SET:
            result[name] = value
        elif op == DELETE:
            result.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            key = KEYS_BY_NAME.get(name)
            if key is None or key.type != "list":
                raise ValueError(f"Config value append/subtract is not allowed for config key {name}")
            items = [v for v in (result.get(name) or ",".join(getattr(LogConfig(), key.attr))).split(",") if v]
            change = [v for v in (value or "").split(",") if v]
            if op == APPEND:
                items += [v for v in change if v not in items]
            else:
                items = [v for v in items if v not in change]
            result[name] = ",".join(items)
        else:
            raise ValueError(f"Unknown config operation {op}")
    return result

