"""The admin client's value types: what a user passes to AdminClient and gets back.

Plain dataclasses and enums, kept apart from the client so tools and tests can build
and read them without loading the client itself; `kafkalike.client.admin` exports all
of them, so `from kafkalike.client.admin import NewTopic` keeps working.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from kafkalike.common.resources import AlterConfigOpType, ConfigSource, ConfigSynonym, ResourceType


@dataclass(frozen=True)
class ConfigResource:
    type: ResourceType
    name: str


@dataclass(frozen=True)
class AlterConfigOp:
    name: str
    value: str | None
    op: AlterConfigOpType = AlterConfigOpType.SET


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()

    @property
    def is_default(self) -> bool:
        """As Java's ConfigEntry.isDefault: only a value from Kafka's built-in defaults counts."""
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass
class NewTopic:
    """num_partitions / replication_factor of -1 ask for the broker's defaults (CreateTopics v4+)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass
class NewPartitions:
    total_count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True)
class TopicListing:
    name: str
    topic_id: uuid.UUID
    is_internal: bool


@dataclass(frozen=True)
class PartitionInfo:
    """leader is None when there is none or it is not a live broker (Java's null leader)."""

    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    leader_epoch: int = -1


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True)
class BrokerNode:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerNode, ...]


@dataclass(frozen=True)
class FeatureMetadata:
    """Java's FeatureMetadata (KIP-584): a broker's supported feature ranges, the finalized
    ones the cluster agreed on, and their epoch (None: not known)."""
    supported: Mapping[str, tuple[int, int]]          # name -> (min version, max version)
    finalized: Mapping[str, tuple[int, int]]          # name -> (min level, max level)
    finalized_epoch: int | None


@dataclass(frozen=True)
class FeatureUpdate:
    """Java's FeatureUpdate: a new max version level; deleting a feature is level < 1 with
    allow_downgrade."""
    max_version_level: int
    allow_downgrade: bool = False


@dataclass(frozen=True)
class CreatedTopic:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int


@dataclass(frozen=True)
class PartitionReassignment:
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


__all__ = ["AlterConfigOp", "AlterConfigOpType", "BrokerNode", "ClusterDescription", "ConfigEntry", "ConfigResource",
           "ConfigSource", "ConfigSynonym", "CreatedTopic", "NewPartitions", "NewTopic", "PartitionInfo",
           "PartitionReassignment", "ResourceType", "TopicDescription", "TopicListing"]
