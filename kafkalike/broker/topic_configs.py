"""Topic configs: the ones this broker applies, and as DescribeConfigs reports them.

A topic's effective value comes from its override in /config/topics/<t> if any, else
from the broker key that is its synonym (a dynamic per-broker or cluster-default value,
server.properties, or Kafka's default, in that order). Kafka's DescribeConfigs reports
that provenance as source and synonyms. Changes are made by the admin manager
(AlterConfigs and IncrementalAlterConfigs, admin_configs.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalike.broker.config import TOPIC_CONFIG_SYNONYMS, ConfigType
from kafkalike.common.resources import ConfigSource
from kafkalike.storage.config import CONFIG_KEYS, KEYS_BY_NAME, LogConfig

if TYPE_CHECKING:
    from kafkalike.broker.config import KafkaConfig


def default_log_config(config: KafkaConfig) -> LogConfig:
    """Topic defaults from broker keys, not marked as topic overrides."""
    values = config.log_config_defaults()
    return LogConfig(**{KEYS_BY_NAME[k].attr: v for k, v in values.items() if k in KEYS_BY_NAME})


class TopicConfigs:
    """The topic configs this broker applies: the broker's defaults overlaid with each
    topic's overrides from /config/topics/<t>, as last read from ZooKeeper.

    One object shared by the log manager, the replica manager, the controller and the
    handlers, so a change notification reaches all of them at once. A topic's effective
    config is parsed once per change of its overrides, since the produce path asks for
    it on every request.
    """

    def __init__(self, defaults: LogConfig) -> None:
        self.defaults = defaults
        self._overrides: dict[str, dict[str, str]] = {}
        self._effective: dict[str, LogConfig] = {}

    def effective(self, topic: str) -> LogConfig:
        config = self._effective.get(topic)
        if config is None:
            props = self._overrides.get(topic)
            config = LogConfig.from_props(props, self.defaults, strict=False) if props else self.defaults
            self._effective[topic] = config
        return config

    def set_defaults(self, defaults: LogConfig) -> None:
        """New broker defaults (a dynamic broker config changed): every topic's effective
        config is made again from them and its own overrides on next use."""
        self.defaults = defaults
        self._effective.clear()

    def loaded(self, topic: str) -> bool:
        """Whether the topic's overrides were read (an empty set counts): a replica of a
        topic not loaded yet must read them before its log is made."""
        return topic in self._overrides

    def overrides(self, topic: str) -> dict[str, str]:
        return self._overrides.get(topic, {})

    def set_overrides(self, topic: str, props: dict[str, str] | None) -> None:
        """None forgets the topic (its last replica here was deleted)."""
        if props is None:
            self._overrides.pop(topic, None)
        else:
            self._overrides[topic] = props
        self._effective.pop(topic, None)

    def parse(self, overrides: dict[str, str], strict: bool = True) -> LogConfig:
        """A topic config from overrides over these defaults; strict raises ValueError on
        a bad value, as a request to set one must be refused."""
        return LogConfig.from_props(overrides, self.defaults, strict=strict)


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
        out.append(TopicConfigEntry(key.name, values[key.name], source, key.type,
                                    doc, tuple(synonyms)))
    return out
