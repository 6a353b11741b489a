"""Every znode codec against JSON that real Kafka brokers wrote into ZooKeeper.

The literal strings below are znode values as shown by zookeeper-shell on Kafka
clusters (2.8 and later, Scala 2.13 builds, unless a test says otherwise). Encoding
must reproduce them byte for byte; decoding must accept them and older layouts too.
"""
from __future__ import annotations

import json
import re
import uuid

import pytest

from kafkalike.zkdata import (
    PERSISTENT_ZK_PATHS,
    BrokerIdZNode,
    BrokerRegistration,
    ClusterIdZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    EndPoint,
    IsrChangeNotificationZNode,
    LeaderIsrAndControllerEpoch,
    PartitionAssignment,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    ReplicaAssignment,
    SupportedFeature,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicZNode,
    ZNodeDecodeError,
    generate_cluster_id,
    new_topic_id,
    uuid_from_base64,
    uuid_to_base64,
)
from kafkalike.zkdata.kafka_json import java_properties_order
from kafkalike.zkdata.session import split_chroot
from kafkalike.zkdata.znodes import LogDirEventNotificationZNode

PLAINTEXT = EndPoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT")


# -- /brokers/ids/N ------------------------------------------------------------------------


def test_broker_registration_single_listener_is_byte_identical_to_kafka() -> None:
    kafka = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"localhost","version":5,"timestamp":"1724097127252"}'
    )
    registration = BrokerRegistration(0, (PLAINTEXT,), timestamp=1724097127252)
    assert BrokerIdZNode.encode(registration) == kafka
    assert BrokerIdZNode.decode(0, kafka) == registration


def test_broker_registration_two_listeners_is_byte_identical_to_kafka() -> None:
    kafka = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT",'
        b'"PLAINTEXT_HOST":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka-1:9092",'
        b'"PLAINTEXT_HOST://localhost:29092"],"jmx_port":-1,"port":9092,"host":"kafka-1",'
        b'"version":5,"timestamp":"1625336133848"}'
    )
    registration = BrokerRegistration(
        1,
        (
            EndPoint("PLAINTEXT", "kafka-1", 9092, "PLAINTEXT"),
            EndPoint("PLAINTEXT_HOST", "localhost", 29092, "PLAINTEXT"),
        ),
        timestamp=1625336133848,
    )
    assert BrokerIdZNode.encode(registration) == kafka
    assert registration.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT", "PLAINTEXT_HOST": "PLAINTEXT"}


def test_broker_registration_json_types_match_kafka() -> None:
    value = json.loads(BrokerIdZNode.encode(BrokerRegistration(3, (PLAINTEXT,), rack="rack-a", jmx_port=9999)))
    assert value["version"] == 5
    assert isinstance(value["timestamp"], str) and value["timestamp"].isdigit()
    assert value["jmx_port"] == 9999 and value["port"] == 9092
    assert value["rack"] == "rack-a"
    assert value["features"] == {}


def test_broker_without_plaintext_listener_writes_null_host_and_port_minus_one() -> None:
    registration = BrokerRegistration(
        0, (EndPoint("SASL_SSL", "my-broker.host", 9193, "SASL_SSL"), EndPoint("SSL", "my-broker.host", 9093, "SSL"))
    )
    value = json.loads(BrokerIdZNode.encode(registration))
    assert value["host"] is None and value["port"] == -1
    assert value["endpoints"] == ["SASL_SSL://my-broker.host:9193", "SSL://my-broker.host:9093"]


def test_broker_registration_version_4_from_a_scala_2_12_broker_decodes() -> None:
    # Scala 2.12 builds iterate their maps in another order; readers must not care.
    kafka = (
        b'{"listener_security_protocol_map":{"SASL_SSL":"SASL_SSL","SSL":"SSL", "PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["SASL_SSL://my-broker.host:9193","SSL://my-broker.host:9093",'
        b'"PLAINTEXT://my-broker.host:9092"],"rack":"us-east-1d","jmx_port":9999,"host":null,'
        b'"timestamp":"1542127633364","port":-1,"version":4}'
    )
    registration = BrokerIdZNode.decode(0, kafka)
    assert registration.version == 4
    assert registration.rack == "us-east-1d"
    assert registration.jmx_port == 9999
    assert registration.timestamp == 1542127633364
    assert registration.endpoints == (
        EndPoint("SASL_SSL", "my-broker.host", 9193, "SASL_SSL"),
        EndPoint("SSL", "my-broker.host", 9093, "SSL"),
        EndPoint("PLAINTEXT", "my-broker.host", 9092, "PLAINTEXT"),
    )
    assert registration.endpoint("ssl") == EndPoint("SSL", "my-broker.host", 9093, "SSL")


def test_broker_registration_versions_1_and_2_decode() -> None:
    v1 = BrokerIdZNode.decode(7, b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}')
    assert v1.endpoints == (EndPoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),)
    v2 = BrokerIdZNode.decode(
        7,
        b'{"jmx_port":-1,"timestamp":"2","endpoints":["PLAINTEXT://h:9092","SSL://h:9093"],'
        b'"host":"h","version":2,"port":9092}',
    )
    assert [e.security_protocol for e in v2.endpoints] == ["PLAINTEXT", "SSL"]


def test_broker_registration_round_trips_rack_features_ipv6_and_wildcard_host() -> None:
    registration = BrokerRegistration(
        5,
        (EndPoint("INTERNAL", "::1", 9092, "PLAINTEXT"), EndPoint("EXTERNAL", None, 9093, "SASL_SSL")),
        rack="r1",
        jmx_port=9999,
        timestamp=123,
        features={"metadata.version": SupportedFeature(1, 3)},
    )
    data = BrokerIdZNode.encode(registration)
    assert json.loads(data)["endpoints"] == ["INTERNAL://[::1]:9092", "EXTERNAL://:9093"]
    assert json.loads(data)["features"] == {"metadata.version": {"min_version": 1, "max_version": 3}}
    assert BrokerIdZNode.decode(5, data) == registration


def test_broker_registration_version_2_has_no_protocol_map_or_features() -> None:
    value = json.loads(BrokerIdZNode.encode(BrokerRegistration(1, (PLAINTEXT,), rack="r", version=2)))
    assert set(value) == {"version", "host", "port", "endpoints", "jmx_port", "timestamp"}


def test_endpoint_parsing_follows_kafka() -> None:
    assert EndPoint.parse("client://h:1", {"CLIENT": "SSL"}) == EndPoint("CLIENT", "h", 1, "SSL")
    ipv6 = EndPoint.parse("SASL_PLAINTEXT://[fe80::1]:9094")
    assert ipv6 == EndPoint("SASL_PLAINTEXT", "fe80::1", 9094, "SASL_PLAINTEXT")
    with pytest.raises(ValueError):
        EndPoint.parse("CUSTOM://h:9092")  # not a protocol name and not in the map
    with pytest.raises(ValueError):
        EndPoint.parse("PLAINTEXT:/h:9092")


def test_broker_registration_rejects_garbage() -> None:
    for bad in (b"not json", b'{"version":0,"jmx_port":1}', b'{"version":4,"jmx_port":1}', b"[1]"):
        with pytest.raises(ZNodeDecodeError):
            BrokerIdZNode.decode(1, bad)


# -- /brokers/topics/T ---------------------------------------------------------------------


def test_topic_assignment_is_byte_identical_to_kafka() -> None:
    kafka = (
        b'{"partitions":{"0":[2,3,1],"1":[3,1,2],"2":[1,2,3]},"topic_id":"cMr3GpVESX2L3byPGf93lQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    topic_id = uuid_from_base64("cMr3GpVESX2L3byPGf93lQ")
    assignment = PartitionAssignment.of({0: [2, 3, 1], 1: [3, 1, 2], 2: [1, 2, 3]}, topic_id)
    assert TopicZNode.encode(assignment) == kafka
    assert TopicZNode.decode("demo", kafka) == assignment
    assert assignment.replicas() == {0: (2, 3, 1), 1: (3, 1, 2), 2: (1, 2, 3)}


def test_topic_assignment_from_a_scala_2_12_broker_decodes() -> None:
    kafka = (
        b'{"removing_replicas":{},"partitions":{"2":[2,1],"1":[1,3],"0":[3,2]},'
        b'"topic_id":"RSZ--odYRlSOPGRgukKnAQ","adding_replicas":{},"version":3}'
    )
    assignment = TopicZNode.decode("test-topic", kafka)
    assert list(assignment.partitions) == [0, 1, 2]
    assert assignment.partitions[0] == ReplicaAssignment((3, 2))
    assert uuid_to_base64(assignment.topic_id) == "RSZ--odYRlSOPGRgukKnAQ"


def test_topic_assignment_older_versions_and_null_decode() -> None:
    assert TopicZNode.decode("t", b'{"version":1,"partitions":{"0":[1,2]}}') == PartitionAssignment.of({0: [1, 2]})
    assert TopicZNode.decode("t", None) == PartitionAssignment({})


def test_topic_assignment_reassignment_in_flight_round_trips() -> None:
    assignment = PartitionAssignment(
        {0: ReplicaAssignment((1, 2, 3), adding_replicas=(3,), removing_replicas=(1,)), 1: ReplicaAssignment((2, 3))}
    )
    value = json.loads(TopicZNode.encode(assignment))
    assert value["adding_replicas"] == {"0": [3]} and value["removing_replicas"] == {"0": [1]}
    assert "topic_id" not in value and value["version"] == 3
    assert TopicZNode.decode("t", TopicZNode.encode(assignment)) == assignment


def test_topic_assignment_with_many_partitions_keeps_every_partition() -> None:
    assignment = PartitionAssignment.of({p: [p % 3, (p + 1) % 3] for p in range(50)}, new_topic_id())
    assert TopicZNode.decode("__consumer_offsets", TopicZNode.encode(assignment)) == assignment


# -- partition state ----------------------------------------------------------------------


def test_partition_state_is_byte_identical_to_kafka() -> None:
    kafka = b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}'
    state = LeaderIsrAndControllerEpoch(leader=2, leader_epoch=0, isr=(2, 3, 1), controller_epoch=1, zk_version=0)
    assert TopicPartitionStateZNode.encode(state) == kafka
    assert TopicPartitionStateZNode.decode(kafka, zk_version=4) == LeaderIsrAndControllerEpoch(2, 0, (2, 3, 1), 1, 4)
    assert TopicPartitionStateZNode.path(TopicPartition("demo", 0)) == "/brokers/topics/demo/partitions/0/state"


def test_partition_state_with_no_leader() -> None:
    state = LeaderIsrAndControllerEpoch(-1, 7, [], 20)
    expected = b'{"controller_epoch":20,"leader":-1,"version":1,"leader_epoch":7,"isr":[]}'
    assert TopicPartitionStateZNode.encode(state) == expected


# -- controller ------------------------------------------------------------------------------


def test_controller_znode_is_byte_identical_to_kafka() -> None:
    kafka = b'{"version":1,"brokerid":1001,"timestamp":"1551794212551"}'
    assert ControllerZNode.encode(1001, 1551794212551) == kafka
    assert ControllerZNode.decode(kafka) == 1001
    assert ControllerZNode.decode(b'{"version":2,"brokerid":0,"timestamp":"1","kraftControllerEpoch":-1}') == 0
    assert ControllerZNode.decode(None) is None


def test_controller_epoch_is_a_bare_ascii_integer() -> None:
    assert ControllerEpochZNode.encode(0) == b"0"
    assert ControllerEpochZNode.encode(17) == b"17"
    assert ControllerEpochZNode.decode(b"17") == 17
    with pytest.raises(ZNodeDecodeError):
        ControllerEpochZNode.decode(b'{"epoch":1}')


# -- cluster id ---------------------------------------------------------------------------------


def test_cluster_id_znode_is_byte_identical_to_kafka() -> None:
    kafka = b'{"version":"1","id":"eQzK4lYlQ9y8P21IScOl_g"}'
    assert ClusterIdZNode.encode("eQzK4lYlQ9y8P21IScOl_g") == kafka
    assert ClusterIdZNode.decode(kafka) == "eQzK4lYlQ9y8P21IScOl_g"


def test_generated_cluster_id_is_a_base64url_random_uuid() -> None:
    ids = {generate_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    for cluster_id in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cluster_id)
        assert uuid_from_base64(cluster_id).version == 4


def test_topic_ids_use_kafkas_text_form() -> None:
    topic_id = uuid_from_base64("SbJQ_jVrRFOYqlkfIgLwNg")
    assert topic_id.bytes.hex() == "49b250fe356b445398aa591f2202f036"
    assert uuid_to_base64(topic_id) == "SbJQ_jVrRFOYqlkfIgLwNg"
    fresh = new_topic_id()
    assert fresh not in (uuid.UUID(int=0), uuid.UUID(int=1))
    assert len(uuid_to_base64(fresh)) == 22 and not uuid_to_base64(fresh).startswith("-")
    with pytest.raises(ValueError):
        uuid_from_base64("SbJQ_jVrRFOYqlkfIgLwN")


# -- configs ------------------------------------------------------------------------------------


def test_empty_topic_config_is_byte_identical_to_kafka() -> None:
    assert ConfigEntityZNode.encode({}) == b'{"version":1,"config":{}}'
    assert ConfigEntityZNode.path("topics", "orders") == "/config/topics/orders"


def test_topic_config_values_are_strings_in_java_properties_order() -> None:
    config = {"segment.bytes": "104857600", "cleanup.policy": "compact", "compression.type": "producer"}
    data = ConfigEntityZNode.encode(config)
    # The order a Java 9+ Properties (ConcurrentHashMap) iterates these keys in, checked on a JVM.
    assert data == (
        b'{"version":1,"config":{"compression.type":"producer","cleanup.policy":"compact",'
        b'"segment.bytes":"104857600"}}'
    )
    assert ConfigEntityZNode.decode(b'{"version":1,"config":{"flush.messages":"1"}}') == {"flush.messages": "1"}
    assert ConfigEntityZNode.decode(None) == {}


def test_properties_order_matches_the_jvm_after_the_table_grows() -> None:
    keys = [f"k{i}" for i in range(14)]
    # Iteration order of java.util.Properties filled with k0..k13 on OpenJDK 17.
    jvm = ["k0", "k1", "k2", "k3", "k4", "k5", "k11", "k6", "k10", "k7", "k13", "k8", "k12", "k9"]
    assert java_properties_order(keys) == jvm


def test_config_change_notification_is_byte_identical_to_kafka() -> None:
    assert ConfigEntityChangeNotificationZNode.encode("topics/orders") == b'{"version":2,"entity_path":"topics/orders"}'
    assert ConfigEntityChangeNotificationZNode.create_path() == "/config/changes/config_change_"
    assert ConfigEntityChangeNotificationZNode.decode(b'{"version":2,"entity_path":"clients/app"}') == "clients/app"


# -- admin, notifications, producer ids ---------------------------------------------------------


def test_delete_topics_paths() -> None:
    assert DeleteTopicsZNode.topic_path("orders") == "/admin/delete_topics/orders"


def test_isr_change_notification_round_trip() -> None:
    partitions = [TopicPartition("a", 0), TopicPartition("b", 3)]
    data = IsrChangeNotificationZNode.encode(partitions)
    assert data == b'{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"b","partition":3}]}'
    assert IsrChangeNotificationZNode.decode(data) == partitions
    assert IsrChangeNotificationZNode.sequence_number("/isr_change_notification/isr_change_0000000042") == "0000000042"


def test_log_dir_event_notification() -> None:
    assert LogDirEventNotificationZNode.encode(3) == b'{"version":1,"broker":3,"event":1}'
    assert LogDirEventNotificationZNode.decode(b'{"version":1,"broker":3,"event":1}') == 3


def test_producer_id_block_writes_longs_as_strings() -> None:
    block = ProducerIdBlock(broker=1, block_start=1000, block_end=1999)
    data = ProducerIdBlockZNode.encode(block)
    assert data == b'{"version":1,"broker":1,"block_start":"1000","block_end":"1999"}'
    assert ProducerIdBlockZNode.decode(data) == block
    assert ProducerIdBlockZNode.decode(b"") is None


def test_persistent_paths_are_kafkas() -> None:
    assert PERSISTENT_ZK_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    )


# -- zookeeper.connect ----------------------------------------------------------------------------


def test_zookeeper_connect_chroot_is_split_off() -> None:
    assert split_chroot("a:2181,b:2181/kafka/prod") == ("a:2181,b:2181", "/kafka/prod")
    assert split_chroot("a:2181") == ("a:2181", None)
    assert split_chroot("a:2181/") == ("a:2181", None)
    with pytest.raises(ValueError):
        split_chroot("a:2181/kafka/")


def test_feature_znode_as_a_2_8_controller_writes_it():
    from kafkalike.zkdata import FeatureZNode, FeatureZNodeValue
    assert FeatureZNode.encode(FeatureZNodeValue(True, {})) == b'{"version":1,"status":1,"features":{}}'
    value = FeatureZNodeValue(False, {"f": (1, 3)})
    assert FeatureZNode.decode(FeatureZNode.encode(value)) == value
    assert FeatureZNode.decode(b'{"version":1,"status":1,"features":{"f":{"min_version_level":1,'
                               b'"max_version_level":2}}}') == FeatureZNodeValue(True, {"f": (1, 2)})
