"""The resource types and config sources of Kafka's config APIs, with their wire codes.

DescribeConfigs, AlterConfigs and IncrementalAlterConfigs name a resource by type
code and name, and DescribeConfigs says where each value came from (its source and
synonyms); the broker answers with these and the admin client reads them back, so both
take them from here.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    BROKER_LOGGER = 8


class AlterConfigOpType(IntEnum):
    """IncrementalAlterConfigs' operation on one key, with its wire code."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigSource(IntEnum):
    """Where a value came from, with DescribeConfigs' wire codes.

    Code 1 has two names in Kafka: the Java admin client's ConfigEntry says
    DYNAMIC_TOPIC_CONFIG, the broker's DescribeConfigsResponse says TOPIC_CONFIG. Both
    are here and are the same member (the admin client's name is the one it prints).
    """

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


@dataclass(frozen=True)
class ConfigSynonym:
    """One place a config's value could come from, most important first in a describe answer."""

    name: str
    value: str | None
    source: ConfigSource
