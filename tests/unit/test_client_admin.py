"""AdminClient against fake brokers: routing to the controller, retries, errors, results."""
from __future__ import annotations

import csv
import uuid

import pytest

from kafkalike.client.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    KafkaAdminError,
    NewPartitions,
    NewTopic,
    ResourceType,
    java_exception_name,
)
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.create_partitions import CreatePartitionsResponse
from kafkalike.protocol.messages.create_topics import CreateTopicsResponse
from kafkalike.protocol.messages.delete_topics import DeleteTopicsResponse
from kafkalike.protocol.messages.describe_configs import DescribeConfigsResponse
from kafkalike.protocol.messages.metadata import MetadataResponse
from tests.reference import reference_dir
from tests.unit.test_client_connection import FakeBroker, dead_port, fake  # noqa: F401 - the fake fixture

METADATA, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, CREATE_PARTITIONS = 3, 19, 20, 32, 37
TOPIC_ID = uuid.UUID("7e0c5a43-26a9-4a54-9d5c-0a7b3d2e9f11")

_Broker = MetadataResponse.MetadataResponseBroker
_Topic = MetadataResponse.MetadataResponseTopic
_Part = MetadataResponse.MetadataResponsePartition


class Cluster:
    """What the fake brokers' Metadata answers say: brokers, controller and topics."""

    def __init__(self) -> None:
        self.brokers: dict[int, FakeBroker] = {}
        self.controller = -1
        self.topics: list = []

    def metadata(self, body, version):
        wanted = None if body.topics is None else {t.name for t in body.topics}
        topics = [t for t in self.topics if wanted is None or t.name in wanted]
        for name in sorted((wanted or set()) - {t.name for t in topics}):
            topics.append(_Topic(name=name, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
        return MetadataResponse(
            brokers=[_Broker(node_id=i, host="127.0.0.1", port=b.port) for i, b in self.brokers.items()],
            cluster_id="fake-cluster", controller_id=self.controller, topics=topics)


@pytest.fixture
def cluster(fake):  # noqa: F811 - the fixture imported above
    c = Cluster()
    for node in (1, 2):
        c.brokers[node] = fake(handlers={METADATA: c.metadata})
    c.controller = 1
    return c


def admin_for(broker: FakeBroker, **extra) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.address, "default.api.timeout.ms": 3000, **extra})


def created(name: str, error: ErrorCode = ErrorCode.NONE, message: str | None = None):
    return CreateTopicsResponse.CreatableTopicResult(name=name, error_code=int(error), error_message=message,
                                                     topic_id=TOPIC_ID, num_partitions=3, replication_factor=2)


def test_topic_creation_follows_the_controller_after_not_controller(cluster):
    first, second = cluster.brokers[1], cluster.brokers[2]

    def moved(body, version):
        cluster.controller = 2  # the controller moved just before our request arrived
        return CreateTopicsResponse(topics=[created(t.name, ErrorCode.NOT_CONTROLLER) for t in body.topics])
    first.handlers[CREATE_TOPICS] = moved
    second.handlers[CREATE_TOPICS] = lambda body, v: CreateTopicsResponse(topics=[created(t.name) for t in body.topics])

    with admin_for(first) as admin:
        result = admin.create_topics([NewTopic("orders", 3, 2)])

    assert result["orders"].topic_id == TOPIC_ID
    assert (result["orders"].num_partitions, result["orders"].replication_factor) == (3, 2)
    assert len(first.requests(CREATE_TOPICS)) == 1 and len(second.requests(CREATE_TOPICS)) == 1
    request = second.requests(CREATE_TOPICS)[0].body.topics[0]
    assert (request.name, request.num_partitions, request.replication_factor) == ("orders", 3, 2)


def test_a_manual_assignment_leaves_counts_to_the_broker_and_sends_configs(cluster):
    controller = cluster.brokers[1]
    controller.handlers[CREATE_TOPICS] = lambda body, v: CreateTopicsResponse(
        topics=[created(t.name) for t in body.topics])
    with admin_for(controller) as admin:
        admin.create_topics([NewTopic("t", replica_assignment={0: [1, 2], 1: [2, 1]},
                                      configs={"retention.ms": "1000"})])
    sent = controller.requests(CREATE_TOPICS)[0].body.topics[0]
    assert (sent.num_partitions, sent.replication_factor) == (-1, -1)
    assert [(a.partition_index, a.broker_ids) for a in sent.assignments] == [(0, [1, 2]), (1, [2, 1])]
    assert [(c.name, c.value) for c in sent.configs] == [("retention.ms", "1000")]


def test_creation_errors_carry_kafkas_name_and_the_brokers_message(cluster):
    controller = cluster.brokers[1]
    controller.handlers[CREATE_TOPICS] = lambda body, v: CreateTopicsResponse(
        topics=[created(t.name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
                for t in body.topics])
    with admin_for(controller) as admin, pytest.raises(KafkaAdminError) as failure:
        admin.create_topics([NewTopic("orders", 1, 1)])
    assert failure.value.name == "TOPIC_ALREADY_EXISTS"
    assert str(failure.value) == "Topic 'orders' already exists."
    assert failure.value.java_class == "org.apache.kafka.common.errors.TopicExistsException"


def test_an_error_without_a_message_gets_kafkas_default_text(cluster):
    controller = cluster.brokers[1]
    controller.handlers[CREATE_TOPICS] = lambda body, v: CreateTopicsResponse(
        topics=[created(t.name, ErrorCode.INVALID_REPLICATION_FACTOR) for t in body.topics])
    with admin_for(controller) as admin, pytest.raises(KafkaAdminError) as failure:
        admin.create_topics([NewTopic("orders", 1, 9)])
    assert failure.value.message == ("Replication factor is below 1 or larger than the number of available "
                                     "brokers.")


def test_topics_are_listed_sorted_and_internal_ones_on_request(cluster):
    cluster.topics = [_Topic(name=n, is_internal=n.startswith("__")) for n in ("b", "__consumer_offsets", "a")]
    with admin_for(cluster.brokers[2]) as admin:
        assert [t.name for t in admin.list_topics()] == ["a", "b"]
        assert [t.name for t in admin.list_topics(include_internal=True)] == ["__consumer_offsets", "a", "b"]


def test_descriptions_sort_partitions_and_drop_leaders_that_are_not_live(cluster):
    cluster.topics = [_Topic(name="t", topic_id=TOPIC_ID, partitions=[
        _Part(partition_index=2, leader_id=9, replica_nodes=[9, 1], isr_nodes=[9]),
        _Part(partition_index=0, leader_id=1, replica_nodes=[1, 2], isr_nodes=[1, 2]),
        _Part(partition_index=1, leader_id=-1, replica_nodes=[2], isr_nodes=[], offline_replicas=[2])])]
    with admin_for(cluster.brokers[1]) as admin:
        description = admin.describe_topics(["t"])["t"]
        assert description.topic_id == TOPIC_ID
        assert [(p.partition, p.leader, p.replicas, p.isr, p.offline_replicas) for p in description.partitions] == [
            (0, 1, (1, 2), (1, 2), ()), (1, None, (2,), (), (2,)), (2, None, (9, 1), (9,), ())]
        with pytest.raises(KafkaAdminError) as failure:
            admin.describe_topics(["t", "missing"])
    assert failure.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_broker_configs_go_to_that_broker_and_keep_their_sources(cluster):
    def configs(body, version):
        return DescribeConfigsResponse(results=[DescribeConfigsResponse.DescribeConfigsResult(
            resource_type=r.resource_type, resource_name=r.resource_name, configs=[
                DescribeConfigsResponse.DescribeConfigsResourceResult(name="log.retention.hours", value="168",
                                                                      config_source=4),
                DescribeConfigsResponse.DescribeConfigsResourceResult(name="num.io.threads", value="8",
                                                                      config_source=5)])
            for r in body.resources])
    cluster.brokers[2].handlers[DESCRIBE_CONFIGS] = configs
    resource = ConfigResource(ResourceType.BROKER, "2")
    with admin_for(cluster.brokers[1]) as admin:
        entries = admin.describe_configs([resource])[resource]
    assert [(e.name, e.value, e.source, e.is_default) for e in entries] == [
        ("log.retention.hours", "168", ConfigSource.STATIC_BROKER_CONFIG, False),
        ("num.io.threads", "8", ConfigSource.DEFAULT_CONFIG, True)]
    assert cluster.brokers[1].requests(DESCRIBE_CONFIGS) == []
    assert len(cluster.brokers[2].requests(DESCRIBE_CONFIGS)) == 1


def test_deletion_names_topics_the_way_the_negotiated_version_wants(fake):  # noqa: F811
    for top, uses_topic_states in ((6, True), (5, False)):
        cluster = Cluster()
        broker = fake(handlers={METADATA: cluster.metadata}, versions={18: (0, 3), 3: (0, 11), 20: (0, top)})
        cluster.brokers[1], cluster.controller = broker, 1
        broker.handlers[DELETE_TOPICS] = lambda body, v: DeleteTopicsResponse(responses=[
            DeleteTopicsResponse.DeletableTopicResult(name=n, error_code=0) for n in
            ([t.name for t in body.topics] if v >= 6 else body.topic_names)])
        with admin_for(broker) as admin:
            admin.delete_topics(["a", "b"])
        body = broker.requests(DELETE_TOPICS)[0].body
        names = [t.name for t in body.topics] if uses_topic_states else body.topic_names
        assert names == ["a", "b"]


def test_partition_increases_report_the_brokers_refusal(cluster):
    cluster.brokers[1].handlers[CREATE_PARTITIONS] = lambda body, v: CreatePartitionsResponse(results=[
        CreatePartitionsResponse.CreatePartitionsTopicResult(
            name=t.name, error_code=int(ErrorCode.INVALID_PARTITIONS), error_message="Topic already has 3 partitions.")
        for t in body.topics])
    with admin_for(cluster.brokers[1]) as admin, pytest.raises(KafkaAdminError) as failure:
        admin.create_partitions({"t": NewPartitions(2)})
    assert (failure.value.code, failure.value.message) == (ErrorCode.INVALID_PARTITIONS,
                                                           "Topic already has 3 partitions.")
    sent = cluster.brokers[1].requests(CREATE_PARTITIONS)[0].body.topics[0]
    assert (sent.name, sent.count, sent.assignments) == ("t", 2, None)


def test_no_reachable_broker_fails_within_the_api_timeout():
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{dead_port()}", "default.api.timeout.ms": "200",
                         "retry.backoff.ms": "20"})
    with pytest.raises(KafkaAdminError) as failure:
        admin.list_topics()
    assert failure.value.code == ErrorCode.REQUEST_TIMED_OUT
    assert str(failure.value) == "Timed out waiting for a node assignment. Call: listTopics"
    assert failure.value.java_class == "org.apache.kafka.common.errors.TimeoutException"


def test_config_needs_bootstrap_servers():
    with pytest.raises(ValueError, match='"bootstrap.servers"'):
        AdminClient({})


def test_java_exception_names_match_kafka_2_8_for_every_error_code():
    with open(reference_dir() / "kafka-2.8-error-codes.tsv", newline="") as table:
        rows = [r for r in csv.DictReader(table, delimiter="\t") if r["exception"]]
    assert len(rows) > 90
    mismatches = {r["name"]: (java_exception_name(ErrorCode(int(r["code"]))), r["exception"])
                  for r in rows if java_exception_name(ErrorCode(int(r["code"]))) != r["exception"]}
    assert mismatches == {}
