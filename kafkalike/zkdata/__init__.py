"""ZooKeeper data layer: every znode Kafka 2.8 uses (path and JSON codec) and KafkaZkClient.

znodes, broker_registration and topic_znodes are the catalogue (pure, no I/O);
client.KafkaZkClient is the facade the broker and controller call, returning Deferreds
that fire on the reactor thread; session and watches are its kazoo plumbing.
"""
from .broker_registration import BrokerIdZNode, BrokerRegistration, EndPoint, SupportedFeature
from .client import BrokerAndEpoch, KafkaZkClient
from .errors import (
    ControllerMovedError,
    EphemeralOwnedByOtherSession,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
    ZooKeeperClientTimeoutError,
)
from .events import (
    BrokerChange,
    ChildrenChanged,
    ConfigChangeNotification,
    ControllerChange,
    DataChanged,
    IsrChangeNotification,
    NewSession,
    PartitionModifications,
    SessionEvent,
    SessionExpired,
    SessionReconnected,
    SessionSuspended,
    TopicChange,
    TopicDeletion,
    ZNodeChange,
    ZNodeEvent,
)
from .ids import generate_cluster_id, new_topic_id, uuid_from_base64, uuid_to_base64
from .kafka_json import ZNodeDecodeError
from .session import ZooKeeperSession
from .topic_znodes import (
    LeaderIsrAndControllerEpoch,
    PartitionAssignment,
    ReplicaAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicZNode,
)
from .watches import ZNodeWatch
from .znodes import (
    MATCH_ANY_VERSION,
    PERSISTENT_ZK_PATHS,
    UNKNOWN_VERSION,
    ClusterIdZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ConfigType,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    FeatureZNodeValue,
    IsrChangeNotificationZNode,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
)

__all__ = [
    "BrokerAndEpoch", "BrokerChange", "BrokerIdZNode", "BrokerRegistration", "ChildrenChanged",
    "ClusterIdZNode", "ConfigChangeNotification", "ConfigEntityChangeNotificationZNode",
    "ConfigEntityZNode", "ConfigType", "ControllerChange", "ControllerEpochZNode", "ControllerMovedError",
    "ControllerZNode", "DataChanged", "DeleteTopicsZNode", "EndPoint", "FeatureZNode", "FeatureZNodeValue", "EphemeralOwnedByOtherSession",
    "IsrChangeNotification", "IsrChangeNotificationZNode", "KafkaZkClient", "LeaderIsrAndControllerEpoch",
    "MATCH_ANY_VERSION", "NewSession", "PERSISTENT_ZK_PATHS", "PartitionAssignment", "PartitionModifications",
    "ProducerIdBlock", "ProducerIdBlockZNode", "ReassignPartitionsZNode", "ReplicaAssignment", "SessionEvent", "SessionExpired",
    "SessionReconnected", "SessionSuspended", "SupportedFeature", "TopicAlreadyMarkedForDeletionError",
    "TopicChange", "TopicDeletion", "TopicExistsError", "TopicPartition", "TopicPartitionStateZNode",
    "TopicZNode", "UNKNOWN_VERSION", "UnknownTopicError", "ZNodeChange", "ZNodeDecodeError", "ZNodeEvent",
    "ZNodeWatch", "ZooKeeperClientTimeoutError", "ZooKeeperSession", "generate_cluster_id", "new_topic_id",
    "uuid_from_base64", "uuid_to_base64",
]
