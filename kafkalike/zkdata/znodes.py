"""The cluster-wide znodes other than broker registrations and topics: their paths and values.

One class per znode, each with path() and, where the znode holds data, encode/decode,
mirroring Kafka 2.8's ZkData so a reader can put the two side by side. Small Scala maps
keep insertion order, so most of these values have a fixed key order.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .kafka_json import (
    ZNodeDecodeError,
    decode_json,
    decode_json_object,
    encode_json,
    java_properties_order,
    ordered,
)
from .broker_registration import BROKER_IDS_PATH
from .topic_znodes import TOPICS_PATH, TopicPartition

MATCH_ANY_VERSION = -1  # a conditional write with this version matches any version
UNKNOWN_VERSION = -2  # Kafka's marker for "no znode, so no version"

INITIAL_CONTROLLER_EPOCH = 0
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0


def now_ms() -> int:
    return int(time.time() * 1000)


class ControllerZNode:
    """/controller: the ephemeral znode whose creator is the controller."""

    PATH = "/controller"

    @staticmethod
    def path() -> str:
        return ControllerZNode.PATH

    @staticmethod
    def encode(broker_id: int, timestamp: int | None = None) -> bytes:
        stamp = now_ms() if timestamp is None else timestamp
        return encode_json({"version": 1, "brokerid": broker_id, "timestamp": str(stamp)})

    @staticmethod
    def decode(data: bytes | None) -> int | None:
        """The controller's broker id; None for an empty znode (Kafka reads it the same way)."""
        value = decode_json(data)
        if value is None:
            return None
        try:
            return int(value["brokerid"])
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad /controller value: {data!r}") from error


class ControllerEpochZNode:
    """/controller_epoch: a bare ASCII integer, not JSON; bumped by every election."""

    PATH = "/controller_epoch"

    @staticmethod
    def path() -> str:
        return ControllerEpochZNode.PATH

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode("ascii")

    @staticmethod
    def decode(data: bytes) -> int:
        try:
            return int(data.decode("ascii"))
        except (AttributeError, UnicodeDecodeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad /controller_epoch value: {data!r}") from error


class ClusterIdZNode:
    """/cluster/id: the id every broker of the cluster reports; note "version" is a string."""

    PATH = "/cluster/id"

    @staticmethod
    def path() -> str:
        return ClusterIdZNode.PATH

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return encode_json({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes) -> str:
        value = decode_json_object(data, ClusterIdZNode.PATH)
        cluster_id = value.get("id")
        if not isinstance(cluster_id, str):
            raise ZNodeDecodeError(f"bad /cluster/id value: {data!r}")
        return cluster_id


@dataclass(frozen=True)
class FeatureZNodeValue:
    """/feature's value: whether feature versioning is on, and the finalized features."""

    enabled: bool
    features: Mapping[str, tuple[int, int]] = ()    # name -> (min_version_level, max_version_level)


class FeatureZNode:
    """/feature (KIP-584): written by a 2.7+ controller; a 2.8 cluster finalizes no feature.

    status 1 is Enabled, 0 Disabled; the key order is Kafka's (version, status, features).
    """

    PATH = "/feature"

    @staticmethod
    def path() -> str:
        return FeatureZNode.PATH

    @staticmethod
    def encode(value: FeatureZNodeValue) -> bytes:
        features = {name: {"min_version_level": lo, "max_version_level": hi}
                    for name, (lo, hi) in dict(value.features).items()}
        return encode_json({"version": 1, "status": 1 if value.enabled else 0, "features": features})

    @staticmethod
    def decode(data: bytes) -> FeatureZNodeValue:
        value = decode_json_object(data, FeatureZNode.PATH)
        status = value.get("status")
        features = value.get("features") or {}
        if status not in (0, 1) or not isinstance(features, dict):
            raise ZNodeDecodeError(f"bad /feature value: {data!r}")
        try:
            parsed = {name: (int(f["min_version_level"]), int(f["max_version_level"])) for name, f in features.items()}
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad /feature value: {data!r}") from error
        return FeatureZNodeValue(status == 1, parsed)


class BrokerSequenceIdZNode:
    """/brokers/seqid: empty; its data version is the counter behind generated broker ids."""

    PATH = "/brokers/seqid"

    @staticmethod
    def path() -> str:
        return BrokerSequenceIdZNode.PATH


class ConfigType:
    """Entity types under /config (Kafka's ConfigType.all)."""

    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    IP = "ips"
    ALL = (TOPIC, CLIENT, USER, BROKER, IP)


class ConfigEntityName:
    """The name of an entity type's default: /config/brokers/<default>, /config/users/<default>, ..."""

    DEFAULT = "<default>"


class ConfigEntityTypeZNode:
    @staticmethod
    def path(entity_type: str) -> str:
        return f"/config/{entity_type}"


class ConfigEntityZNode:
    """/config/<type>/<name>: dynamic config overrides of one topic, client, user, broker or ip."""

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        return f"{ConfigEntityTypeZNode.path(entity_type)}/{entity_name}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        entries = {str(k): str(v) for k, v in config.items()}
        return encode_json({"version": 1, "config": ordered(entries, java_properties_order(list(entries)))})

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        """The overrides; an absent or null znode means none."""
        value = decode_json(data)
        if value is None:
            return {}
        config = value.get("config") if isinstance(value, dict) else None
        if not isinstance(config, dict):
            raise ZNodeDecodeError(f"bad config znode value: {data!r}")
        if not all(isinstance(v, str) for v in config.values()):
            raise ZNodeDecodeError(f"config values must be strings: {data!r}")
        return dict(config)


class ConfigEntityChangeNotificationZNode:
    """/config/changes/config_change_NNNNNNNNNN: tells every broker to reload one entity's config."""

    PATH = "/config/changes"
    SEQUENCE_PREFIX = "config_change_"

    @staticmethod
    def path() -> str:
        return ConfigEntityChangeNotificationZNode.PATH

    @staticmethod
    def create_path() -> str:
        """The prefix ZooKeeper appends the 10-digit sequence number to."""
        return f"{ConfigEntityChangeNotificationZNode.PATH}/{ConfigEntityChangeNotificationZNode.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(entity_path: str) -> bytes:
        """entity_path is "<type>/<sanitized name>", e.g. "topics/orders"."""
        return encode_json({"version": 2, "entity_path": entity_path})

    @staticmethod
    def sequence_number(name: str) -> int:
        """config_change_0000000042 -> 42 (the order brokers process notifications in)."""
        return int(name[len(ConfigEntityChangeNotificationZNode.SEQUENCE_PREFIX):])

    @staticmethod
    def decode(data: bytes) -> str:
        value = decode_json_object(data, "config change notification")
        if value.get("version") != 2 or not isinstance(value.get("entity_path"), str):
            raise ZNodeDecodeError(f"unsupported config change notification: {data!r}")
        return value["entity_path"]


class DeleteTopicsZNode:
    """/admin/delete_topics/<topic>: a null znode asking the controller to delete a topic."""

    PATH = "/admin/delete_topics"

    @staticmethod
    def path() -> str:
        return DeleteTopicsZNode.PATH

    @staticmethod
    def topic_path(topic: str) -> str:
        return f"{DeleteTopicsZNode.PATH}/{topic}"


class IsrChangeNotificationZNode:
    """/isr_change_notification/isr_change_NNNNNNNNNN: partitions whose ISR a leader changed.

    Kafka writes the partitions from a Scala set, in whatever order its hashing gives;
    we write them in the caller's order, which every reader accepts.
    """

    PATH = "/isr_change_notification"
    SEQUENCE_PREFIX = "isr_change_"

    @staticmethod
    def path() -> str:
        return IsrChangeNotificationZNode.PATH

    @staticmethod
    def create_path() -> str:
        return f"{IsrChangeNotificationZNode.PATH}/{IsrChangeNotificationZNode.SEQUENCE_PREFIX}"

    @staticmethod
    def sequence_path(sequence_number: str) -> str:
        return f"{IsrChangeNotificationZNode.create_path()}{sequence_number}"

    @staticmethod
    def sequence_number(path: str) -> str:
        """The 10-digit suffix of a notification's name or path."""
        prefix = IsrChangeNotificationZNode.SEQUENCE_PREFIX
        return path[path.rindex(prefix) + len(prefix):]

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        listed = [{"topic": topic, "partition": partition} for topic, partition in partitions]
        return encode_json({"version": 1, "partitions": listed})

    @staticmethod
    def decode(data: bytes) -> list[TopicPartition]:
        value = decode_json_object(data, "ISR change notification")
        try:
            return [TopicPartition(str(p["topic"]), int(p["partition"])) for p in value["partitions"]]
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad ISR change notification: {data!r}") from error


class LogDirEventNotificationZNode:
    """/log_dir_event_notification/log_dir_event_NNNNNNNNNN: a broker lost a log directory."""

    PATH = "/log_dir_event_notification"
    SEQUENCE_PREFIX = "log_dir_event_"
    LOG_DIR_FAILURE_EVENT = 1

    @staticmethod
    def path() -> str:
        return LogDirEventNotificationZNode.PATH

    @staticmethod
    def create_path() -> str:
        return f"{LogDirEventNotificationZNode.PATH}/{LogDirEventNotificationZNode.SEQUENCE_PREFIX}"

    @staticmethod
    def encode(broker_id: int) -> bytes:
        event = LogDirEventNotificationZNode.LOG_DIR_FAILURE_EVENT
        return encode_json({"version": 1, "broker": broker_id, "event": event})

    @staticmethod
    def decode(data: bytes) -> int:
        value = decode_json_object(data, "log dir event notification")
        try:
            return int(value["broker"])
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad log dir event notification: {data!r}") from error


@dataclass(frozen=True)
class ProducerIdBlock:
    """The latest block of producer ids a broker claimed: [block_start, block_end]."""

    broker: int
    block_start: int
    block_end: int


class ProducerIdBlockZNode:
    """/latest_producer_id_block: claimed with a conditional write by the transaction coordinator."""

    PATH = "/latest_producer_id_block"

    @staticmethod
    def path() -> str:
        return ProducerIdBlockZNode.PATH

    @staticmethod
    def encode(block: ProducerIdBlock) -> bytes:
        value: dict[str, Any] = {
            "version": 1,
            "broker": block.broker,
            "block_start": str(block.block_start),
            "block_end": str(block.block_end),
        }
        return encode_json(value)

    @staticmethod
    def decode(data: bytes | None) -> ProducerIdBlock | None:
        """The block, or None while the znode is still empty (no block claimed yet)."""
        value = decode_json(data)
        if value is None:
            return None
        try:
            return ProducerIdBlock(int(value["broker"]), int(value["block_start"]), int(value["block_end"]))
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad producer id block: {data!r}") from error


CONSUMERS_PATH = "/consumers"  # the old Scala consumer's tree; still created at startup


class ConsumerOffset:
    """/consumers/<group>/offsets/<topic>/<partition>: an OffsetCommit v0 offset, as a decimal string.

    v0 predates Kafka-stored offsets; Kafka 2.8 still keeps those commits here, apart
    from __consumer_offsets."""

    @staticmethod
    def path(group: str, topic: str, partition: int) -> str:
        return f"{CONSUMERS_PATH}/{group}/offsets/{topic}/{partition}"

    @staticmethod
    def encode(offset: int) -> bytes:
        return str(offset).encode("ascii")

    @staticmethod
    def decode(data: bytes | None) -> int | None:
        return int(data.decode("ascii")) if data else None


class PreferredReplicaElectionZNode:
    """/admin/preferred_replica_election: partitions whose preferred replica should lead
    (written by the legacy kafka-preferred-replica-election tool; the controller deletes it when done)."""

    PATH = "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return encode_json({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition}
                                                         for tp in partitions]})

    @staticmethod
    def decode(data: bytes | None) -> list[TopicPartition]:
        """The partitions, each once, in the order written; ZNodeDecodeError if unreadable."""
        value = decode_json(data)
        if value is None:
            return []
        try:
            found = [TopicPartition(str(p["topic"]), int(p["partition"])) for p in value["partitions"]]
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad preferred replica election znode: {data!r}") from error
        return list(dict.fromkeys(found))

class ReassignPartitionsZNode:
    """/admin/reassign_partitions: the legacy way to start reassignments (tools with
    --zookeeper write it; the controller starts what it lists, removes each partition when
    its reassignment completes, and deletes the znode when none is left)."""

    PATH = "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignments: Mapping[TopicPartition, Iterable[int]]) -> bytes:
        return encode_json({"version": 1, "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "replicas": [int(r) for r in replicas]}
            for tp, replicas in reassignments.items()]})

    @staticmethod
    def decode(data: bytes | None) -> dict[TopicPartition, tuple[int, ...]]:
        """Partition -> target replicas (the last entry wins for a partition listed twice,
        as Kafka's map does); ZNodeDecodeError if unreadable."""
        value = decode_json(data)
        if value is None:
            raise ZNodeDecodeError("reassign partitions znode is empty")
        try:
            out: dict[TopicPartition, tuple[int, ...]] = {}
            for p in value["partitions"]:
                replicas = p["replicas"]
                if not isinstance(replicas, list) or isinstance(p["partition"], bool):
                    raise TypeError(replicas)
                out[TopicPartition(_string(p["topic"]), int(p["partition"]))] = tuple(_int(r) for r in replicas)
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad reassign partitions znode: {data!r}") from error
        return out


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(value)
    return value


# Created (empty) by every broker at startup, in Kafka's order (ZkData.PersistentZkPaths).
PERSISTENT_ZK_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    ConfigEntityChangeNotificationZNode.PATH,
    DeleteTopicsZNode.PATH,
    BrokerSequenceIdZNode.PATH,
    IsrChangeNotificationZNode.PATH,
    ProducerIdBlockZNode.PATH,
    LogDirEventNotificationZNode.PATH,
) + tuple(ConfigEntityTypeZNode.path(t) for t in ConfigType.ALL)

# The roots whose trees zookeeper-security-migration.sh sets ACLs on (ZkData.SecureRootPaths):
# Kafka's own, and the AclAuthorizer's stores and their change notifications.
SECURE_ROOT_PATHS: tuple[str, ...] = (
    "/admin", "/brokers", "/cluster", "/config", ControllerZNode.PATH, ControllerEpochZNode.PATH,
    IsrChangeNotificationZNode.PATH, ProducerIdBlockZNode.PATH, LogDirEventNotificationZNode.PATH,
    "/delegation_token", "/kafka-acl-extended", FeatureZNode.PATH,
    "/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended-changes")
