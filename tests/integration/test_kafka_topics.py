"""kafka-topics against a real ZooKeeper and real brokers.

--zookeeper mode is checked znode by znode: what the tool writes is what Kafka 2.8's
AdminZkClient writes, byte for byte, and what it prints is what TopicCommand prints.
No broker is needed for that; brokers are registered the way a broker registers.
--bootstrap-server mode runs against broker processes, and confluent-kafka (librdkafka)
judges that the topics the tool makes are real.
"""
from __future__ import annotations

import io
import json
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

import pytest
from kazoo.client import KazooClient

from kafkalike.cli.topics import main
from kafkalike.zkdata.broker_registration import BrokerIdZNode, BrokerRegistration, EndPoint
from kafkalike.zkdata.ids import uuid_from_base64, uuid_to_base64
from kafkalike.zkdata.topic_znodes import (
    LeaderIsrAndControllerEpoch,
    PartitionAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicZNode,
)

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
TOPIC_ID = uuid.UUID("5a9f0c3e-8d41-4b6e-9f20-3c1d7e6a4b85")


@dataclass
class Result:
    code: int
    out: str
    err: str


def topics(*argv: str) -> Result:
    """kafka-topics in this process (fast); the shim is exercised separately."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return Result(code, out.getvalue(), err.getvalue())


def eventually(check: Callable[[], T], timeout: float = 20.0) -> T:
    """The check's first truthy answer; metadata reaches brokers asynchronously."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def register_brokers(zk: KazooClient, racks: dict[int, str | None]) -> None:
    for broker_id, rack in racks.items():
        registration = BrokerRegistration(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + broker_id,
                                                               "PLAINTEXT"),), rack=rack)
        zk.create(f"/brokers/ids/{broker_id}", BrokerIdZNode.encode(registration), makepath=True)


def write_state(zk: KazooClient, topic: str, partition: int, leader: int, isr: tuple[int, ...]) -> None:
    """What the controller writes once a partition is online."""
    state = LeaderIsrAndControllerEpoch(leader=leader, leader_epoch=0, isr=isr, controller_epoch=1)
    zk.create(TopicPartitionStateZNode.path(TopicPartition(topic, partition)),
              TopicPartitionStateZNode.encode(state), makepath=True)


def assignment_of(zk: KazooClient, topic: str) -> PartitionAssignment:
    return TopicZNode.decode(topic, zk.get(TopicZNode.path(topic))[0])


# -- --zookeeper ---------------------------------------------------------------------------------


@pytest.fixture
def zk(kazoo_client: KazooClient) -> KazooClient:
    """This test's chroot, with brokers 1, 2 and 3 registered (no broker processes)."""
    register_brokers(kazoo_client, {1: None, 2: None, 3: None})
    return kazoo_client


def test_create_writes_the_config_then_the_assignment_as_kafka_does(zk, zk_chroot):
    result = topics("--zookeeper", zk_chroot, "--create", "--topic", "orders",
                    "--replica-assignment", "1:2,2:3", "--config", "retention.ms=1000")
    assert (result.code, result.out, result.err) == (0, "Created topic orders.\n", "")
    assert zk.get("/config/topics/orders")[0] == b'{"version":1,"config":{"retention.ms":"1000"}}'
    # No topic id: a tool leaves that to the controller, and the partitions are its job too.
    assert zk.get("/brokers/topics/orders")[0] == (
        b'{"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{},"removing_replicas":{},"version":3}')
    assert zk.get_children("/brokers/topics/orders") == []
    assert zk.get("/brokers/topics")[0] is None  # a missing parent is created as a null znode


def test_created_partitions_spread_leaders_and_followers_over_the_brokers(zk, zk_chroot):
    result = topics("--zookeeper", zk_chroot, "--create", "--topic", "spread",
                    "--partitions", "6", "--replication-factor", "2")
    assert (result.code, result.out) == (0, "Created topic spread.\n")
    replicas = assignment_of(zk, "spread").replicas()
    assert sorted(replicas) == list(range(6))
    assert all(len(set(r)) == 2 and set(r) <= {1, 2, 3} for r in replicas.values())
    leaders = [r[0] for r in replicas.values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    assert zk.get("/config/topics/spread")[0] == b'{"version":1,"config":{}}'


def test_too_many_replicas_is_refused_and_nothing_is_written(zk, zk_chroot):
    result = topics("--zookeeper", zk_chroot, "--create", "--topic", "big",
                    "--partitions", "1", "--replication-factor", "4")
    assert result.code == 1
    assert result.out == ("Error while executing topic command : Replication factor: 4 larger than available "
                          "brokers: 3.\n")
    assert "] ERROR org.apache.kafka.common.errors.InvalidReplicationFactorException: Replication factor: 4" \
        in result.err
    assert result.err.endswith(" (kafka.admin.TopicCommand$)\n")
    assert zk.exists("/brokers/topics/big") is None and zk.exists("/config/topics/big") is None


def test_an_existing_topic_is_an_error_unless_if_not_exists(zk, zk_chroot):
    create = ["--zookeeper", zk_chroot, "--create", "--topic", "twice", "--partitions", "1",
              "--replication-factor", "1"]
    assert topics(*create).code == 0
    again = topics(*create)
    assert (again.code, again.out) == (1, "Error while executing topic command : Topic 'twice' already exists.\n")
    quiet = topics(*create, "--if-not-exists")
    assert (quiet.code, quiet.out) == (0, "")


def test_colliding_names_get_the_metric_warning_and_are_refused(zk, zk_chroot):
    topics("--zookeeper", zk_chroot, "--create", "--topic", "a.b", "--partitions", "1",
           "--replication-factor", "1")
    result = topics("--zookeeper", zk_chroot, "--create", "--topic", "a_b", "--partitions", "1",
                    "--replication-factor", "1")
    assert result.code == 1
    assert result.out == (
        "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
        "collide. To avoid issues it is best to use either, but not both.\n"
        "Error while executing topic command : Topic 'a_b' collides with existing topics: a.b\n")


def test_rack_awareness_needs_every_broker_to_have_a_rack(kazoo_client, zk_chroot):
    register_brokers(kazoo_client, {1: "r1", 2: None})
    create = ["--zookeeper", zk_chroot, "--create", "--topic", "racks", "--partitions", "2",
              "--replication-factor", "2"]
    refused = topics(*create)
    assert refused.out == ("Error while executing topic command : Not all brokers have rack information. Add "
                           "--disable-rack-aware in command line to make replica assignment without rack "
                           "information.\n")
    assert topics(*create, "--disable-rack-aware").out == "Created topic racks.\n"


def test_list_is_sorted_filtered_and_shows_pending_deletions(zk, zk_chroot):
    for name in ("zeta", "alpha", "__consumer_offsets"):
        zk.create(f"/brokers/topics/{name}", TopicZNode.encode(PartitionAssignment.of({0: [1]})), makepath=True)
    zk.create("/admin/delete_topics/zeta", makepath=True)
    listed = topics("--zookeeper", zk_chroot, "--list")
    assert (listed.code, listed.out) == (0, "__consumer_offsets\nalpha\nzeta - marked for deletion\n")
    assert topics("--zookeeper", zk_chroot, "--list", "--exclude-internal").out == (
        "alpha\nzeta - marked for deletion\n")
    assert topics("--zookeeper", zk_chroot, "--list", "--topic", "a.*").out == "alpha\n"


def test_describe_prints_the_assignment_and_the_controllers_state(zk, zk_chroot):
    zk.create("/brokers/topics/orders", TopicZNode.encode(PartitionAssignment.of(
        {0: [1, 2], 1: [2, 4], 2: [3, 1]}, topic_id=TOPIC_ID)), makepath=True)
    zk.create("/config/topics/orders", b'{"version":1,"config":{"cleanup.policy":"compact"}}', makepath=True)
    write_state(zk, "orders", 0, 1, (1, 2))
    write_state(zk, "orders", 1, 4, (4,))        # broker 4 is not registered: the leader is gone
    tid = uuid_to_base64(TOPIC_ID)
    result = topics("--zookeeper", zk_chroot, "--describe", "--topic", "orders")
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        f"Topic: orders\tTopicId: {tid}\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: cleanup.policy=compact\n"
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
        "\tTopic: orders\tPartition: 1\tLeader: 4\tReplicas: 2,4\tIsr: 4\n"
        "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1\tIsr: \n")
    assert topics("--zookeeper", zk_chroot, "--describe", "--under-replicated-partitions").out == (
        "\tTopic: orders\tPartition: 1\tLeader: 4\tReplicas: 2,4\tIsr: 4\n"
        "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1\tIsr: \n")
    assert topics("--zookeeper", zk_chroot, "--describe", "--unavailable-partitions").out == (
        "\tTopic: orders\tPartition: 1\tLeader: 4\tReplicas: 2,4\tIsr: 4\n"
        "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1\tIsr: \n")
    assert topics("--zookeeper", zk_chroot, "--describe", "--topics-with-overrides").out == (
        f"Topic: orders\tTopicId: {tid}\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: cleanup.policy=compact\n")


def test_describe_marks_topics_being_deleted(zk, zk_chroot):
    topics("--zookeeper", zk_chroot, "--create", "--topic", "going", "--replica-assignment", "2")
    zk.create("/admin/delete_topics/going", makepath=True)
    assert topics("--zookeeper", zk_chroot, "--describe", "--topic", "going").out == (
        "Topic: going\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \tMarkedForDeletion: true\n"
        "\tTopic: going\tPartition: 0\tLeader: none\tReplicas: 2\tIsr: \tMarkedForDeletion: true\n")


def test_describing_a_missing_topic_fails_unless_if_exists(zk, zk_chroot):
    missing = topics("--zookeeper", zk_chroot, "--describe", "--topic", "nope")
    assert (missing.code, missing.out) == (1, "Error while executing topic command : Topic 'nope' does not exist "
                                              "as expected\n")
    assert "ERROR java.lang.IllegalArgumentException: Topic 'nope' does not exist as expected" in missing.err
    quiet = topics("--zookeeper", zk_chroot, "--describe", "--topic", "nope", "--if-exists")
    assert (quiet.code, quiet.out) == (0, "")


def test_alter_adds_partitions_and_keeps_the_rest_of_the_assignment(zk, zk_chroot):
    zk.create("/brokers/topics/grow", TopicZNode.encode(PartitionAssignment.of(
        {0: [2, 3], 1: [3, 1]}, topic_id=TOPIC_ID)), makepath=True)
    result = topics("--zookeeper", zk_chroot, "--alter", "--topic", "grow", "--partitions", "5")
    assert (result.code, result.err) == (0, "")
    assert result.out == ("WARNING: If partitions are increased for a topic that has a key, the partition logic or "
                          "ordering of the messages will be affected\nAdding partitions succeeded!\n")
    grown = assignment_of(zk, "grow")
    assert grown.topic_id == TOPIC_ID
    replicas = grown.replicas()
    assert (replicas[0], replicas[1]) == ((2, 3), (3, 1))
    assert sorted(replicas) == [0, 1, 2, 3, 4]
    assert all(len(set(r)) == 2 and set(r) <= {1, 2, 3} for r in replicas.values())
    fewer = topics("--zookeeper", zk_chroot, "--alter", "--topic", "grow", "--partitions", "2")
    assert fewer.out.endswith("Error while executing topic command : The number of partitions for a topic can "
                              "only be increased. Topic grow currently has 5 partitions, 2 would not be an "
                              "increase.\n")


def test_alter_places_new_partitions_where_the_assignment_says(zk, zk_chroot):
    topics("--zookeeper", zk_chroot, "--create", "--topic", "placed", "--replica-assignment", "1:2")
    result = topics("--zookeeper", zk_chroot, "--alter", "--topic", "placed", "--partitions", "3",
                    "--replica-assignment", "1:2,3:1,2:3")
    assert result.code == 0
    assert assignment_of(zk, "placed").replicas() == {0: (1, 2), 1: (3, 1), 2: (2, 3)}


def test_alter_config_rewrites_the_overrides_and_notifies_the_brokers(zk, zk_chroot):
    topics("--zookeeper", zk_chroot, "--create", "--topic", "tuned", "--replica-assignment", "1",
           "--config", "segment.bytes=1000000")
    result = topics("--zookeeper", zk_chroot, "--alter", "--topic", "tuned",
                    "--config", "cleanup.policy=compact", "--delete-config", "segment.bytes")
    assert (result.code, result.err) == (0, "")
    assert result.out == ("WARNING: Altering topic configuration from this script has been deprecated and may be "
                          "removed in future releases.\n"
                          "         Going forward, please use kafka-configs.sh for this functionality\n"
                          "Updated config for topic tuned.\n")
    assert zk.get("/config/topics/tuned")[0] == b'{"version":1,"config":{"cleanup.policy":"compact"}}'
    (change,) = zk.get_children("/config/changes")
    assert change.startswith("config_change_") and len(change) == len("config_change_") + 10
    assert json.loads(zk.get(f"/config/changes/{change}")[0]) == {"version": 2, "entity_path": "topics/tuned"}


def test_delete_marks_topics_for_the_controller(zk, zk_chroot):
    topics("--zookeeper", zk_chroot, "--create", "--topic", "doomed", "--replica-assignment", "1")
    result = topics("--zookeeper", zk_chroot, "--delete", "--topic", "doomed")
    assert (result.code, result.out) == (0, "Topic doomed is marked for deletion.\n"
                                            "Note: This will have no impact if delete.topic.enable is not set to "
                                            "true.\n")
    assert zk.get("/admin/delete_topics/doomed")[0] is None
    again = topics("--zookeeper", zk_chroot, "--delete", "--topic", "doomed")
    assert (again.code, again.out) == (0, "Topic doomed is already marked for deletion.\n")


def test_internal_topics_cannot_be_deleted(zk, zk_chroot):
    zk.create("/brokers/topics/__consumer_offsets", TopicZNode.encode(PartitionAssignment.of({0: [1]})),
              makepath=True)
    result = topics("--zookeeper", zk_chroot, "--delete", "--topic", "__consumer_offsets")
    assert result.code == 1
    assert result.out == ("Error while executing topic command : Topic __consumer_offsets is a kafka internal "
                          "topic and is not allowed to be marked for deletion.\n")
    assert zk.exists("/admin/delete_topics/__consumer_offsets") is None


def test_the_bin_script_runs_the_tool(zk, zk_chroot):
    def shim(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(REPO_ROOT / "bin" / "kafka-topics.sh"), *argv], capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)
    created = shim("--zookeeper", zk_chroot, "--create", "--topic", "shimmed", "--partitions", "2",
                   "--replication-factor", "3")
    assert (created.returncode, created.stdout, created.stderr) == (0, "Created topic shimmed.\n", "")
    listed = shim("--zookeeper", zk_chroot, "--list")
    assert (listed.returncode, listed.stdout) == (0, "shimmed\n")
    failed = shim("--zookeeper", zk_chroot, "--delete", "--topic", "absent")
    assert failed.returncode == 1
    assert failed.stdout == "Error while executing topic command : Topic 'absent' does not exist as expected\n"


# -- --bootstrap-server ---------------------------------------------------------------------------


def topic_id_in_zookeeper(zk_connect: str, topic: str) -> uuid.UUID | None:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    try:
        return eventually(lambda: assignment_of(client, topic).topic_id)
    finally:
        client.stop()
        client.close()


def test_bootstrap_create_describe_alter_delete(broker):
    server = ["--bootstrap-server", broker.bootstrap]
    created = topics(*server, "--create", "--topic", "bs-orders", "--partitions", "2", "--replication-factor", "1",
                     "--config", "retention.ms=5000")
    assert (created.code, created.out, created.err) == (0, "Created topic bs-orders.\n", "")
    assert "bs-orders" in topics(*server, "--list").out.splitlines()

    tid = uuid_to_base64(topic_id_in_zookeeper(broker.zk_connect, "bs-orders"))
    expected = (f"Topic: bs-orders\tTopicId: {tid}\tPartitionCount: 2\tReplicationFactor: 1\t"
                "Configs: retention.ms=5000\n"
                "\tTopic: bs-orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\n"
                "\tTopic: bs-orders\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\n")
    described = eventually(lambda: topics(*server, "--describe", "--topic", "bs-orders").out == expected)
    assert described, topics(*server, "--describe", "--topic", "bs-orders").out

    altered = topics(*server, "--alter", "--topic", "bs-orders", "--partitions", "3")
    assert (altered.code, altered.out) == (0, "")  # with --bootstrap-server, 2.8 prints nothing here
    assert eventually(lambda: "PartitionCount: 3" in topics(*server, "--describe", "--topic", "bs-orders").out)

    deleted = topics(*server, "--delete", "--topic", "bs-orders")
    assert (deleted.code, deleted.out) == (0, "")
    assert eventually(lambda: "bs-orders" not in topics(*server, "--list").out.splitlines())


def test_bootstrap_errors_come_from_the_broker(broker):
    server = ["--bootstrap-server", broker.bootstrap]
    assert topics(*server, "--create", "--topic", "bs-dup", "--partitions", "1").code == 0
    again = topics(*server, "--create", "--topic", "bs-dup", "--partitions", "1")
    assert (again.code, again.out) == (1, "Error while executing topic command : Topic 'bs-dup' already exists.\n")
    assert "ERROR org.apache.kafka.common.errors.TopicExistsException: Topic 'bs-dup' already exists." in again.err
    quiet = topics(*server, "--create", "--topic", "bs-dup", "--partitions", "1", "--if-not-exists")
    assert (quiet.code, quiet.out) == (0, "")
    too_many = topics(*server, "--create", "--topic", "bs-wide", "--replication-factor", "3")
    assert too_many.code == 1 and too_many.out.startswith("Error while executing topic command : ")
    missing = topics(*server, "--alter", "--topic", "bs-nope", "--partitions", "4")
    assert missing.out == "Error while executing topic command : Topic 'bs-nope' does not exist as expected\n"


def test_librdkafka_sees_the_tools_topics_and_the_tool_sees_librdkafkas(broker):
    from confluent_kafka.admin import AdminClient as RdAdmin, NewTopic as RdNewTopic

    server = ["--bootstrap-server", broker.bootstrap]
    assert topics(*server, "--create", "--topic", "bs-ours", "--partitions", "4").code == 0
    rd = RdAdmin({"bootstrap.servers": broker.bootstrap})
    seen = eventually(lambda: rd.list_topics(timeout=10).topics.get("bs-ours"))
    assert seen is not None and sorted(seen.partitions) == [0, 1, 2, 3]

    for future in rd.create_topics([RdNewTopic("bs-theirs", 3, 1)]).values():
        future.result(timeout=30)
    described = eventually(lambda: topics(*server, "--describe", "--topic", "bs-theirs").out.count("Leader: 0") == 3)
    assert described
    first_line = topics(*server, "--describe", "--topic", "bs-theirs").out.splitlines()[0]
    assert first_line.startswith("Topic: bs-theirs\tTopicId: ")
    assert "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: " in first_line
    uuid_from_base64(first_line.split("\t")[1].removeprefix("TopicId: "))


def test_topic_changes_reach_the_controller_from_any_broker(kafka_cluster):
    client = KazooClient(hosts=kafka_cluster.brokers[0].zk_connect)
    client.start(timeout=15)
    try:
        controller = json.loads(client.get("/controller")[0])["brokerid"]
    finally:
        client.stop()
        client.close()
    other = next(b for b in kafka_cluster.brokers if b.broker_id != controller)
    server = ["--bootstrap-server", other.bootstrap]
    created = topics(*server, "--create", "--topic", "everywhere", "--partitions", "2", "--replication-factor", "3")
    assert (created.code, created.out) == (0, "Created topic everywhere.\n")
    described = eventually(lambda: topics(*server, "--describe", "--topic", "everywhere").out.count("Isr: ") == 2
                           and "Leader: none" not in topics(*server, "--describe", "--topic", "everywhere").out)
    assert described
    out = topics(*server, "--describe", "--topic", "everywhere").out
    assert "\tPartitionCount: 2\tReplicationFactor: 3\t" in out
    for line in out.splitlines()[1:]:
        replicas = line.split("\tReplicas: ")[1].split("\t")[0]
        assert sorted(replicas.split(",")) == ["0", "1", "2"]
