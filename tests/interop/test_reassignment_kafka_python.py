"""kafka-python's admin client judges AlterPartitionReassignments and ListPartitionReassignments.

kafka-python (3.x) speaks both APIs itself, so it checks the wire side of what
kafka-reassign-partitions relies on: a reassignment started, listed while its new
replica's broker is frozen (SIGSTOP, so it cannot catch up), cancelled back, and the
controller's per-partition errors, each mapped by the client to Kafka's error class.
(confluent-kafka-python has no reassignment API to judge with.)
"""
from __future__ import annotations

import json
import os
import shutil
import signal
from typing import Iterator

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import (InvalidReplicationAssignmentError, NoReassignmentInProgressError,
                          UnknownTopicOrPartitionError)
from kazoo.client import KazooClient

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import Cluster
from tests.conftest import scratch_dir
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def cluster(module_zk_chroot: str) -> Iterator[Cluster]:
    base = scratch_dir("interop-reassign")
    c = Cluster(module_zk_chroot, base, 3)
    try:
        c.start()
        yield c
    finally:
        for b in c.brokers:
            if b.proc is not None and b.proc.poll() is None:
                os.kill(b.proc.pid, signal.SIGCONT)
        c.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def zk(module_zk_chroot: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=module_zk_chroot)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def controller_of(zk: KazooClient) -> int:
    return json.loads(zk.get("/controller")[0])["brokerid"]


def replicas_of(zk: KazooClient, topic: str) -> dict:
    value = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
    return {k: value[k] for k in ("partitions", "adding_replicas", "removing_replicas")}


def test_start_list_and_cancel_with_kafka_python(cluster, zk):
    controller = controller_of(zk)
    target = next(b for b in (2, 1, 0) if b != controller)
    origin = [b for b in (0, 1, 2) if b != target]
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as ours:
        ours.create_topics([NewTopic("kp", replica_assignment={0: origin})])
    tp = TopicPartition("kp", 0)
    bootstrap = ",".join(b.bootstrap for b in cluster.brokers if b.broker_id != target)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    # kafka-python finds the controller first: a frozen broker still accepts connections (the
    # kernel answers the handshake), so a metadata request it sent there would wait out its
    # timeout and fail the call.
    assert admin.list_partition_reassignments() == {}
    os.kill(cluster.broker(target).proc.pid, signal.SIGSTOP)
    try:
        assert admin.alter_partition_reassignments({tp: [origin[0], target]}) == {tp: None}
        assert admin.list_partition_reassignments() == {tp: {
            "replicas": [origin[0], target, origin[1]], "adding_replicas": [target],
            "removing_replicas": [origin[1]]}}
        assert admin.list_partition_reassignments([tp, TopicPartition("kp", 9)]) == \
            admin.list_partition_reassignments({"kp": [0]})
        assert replicas_of(zk, "kp") == {"partitions": {"0": [origin[0], target, origin[1]]},
                                         "adding_replicas": {"0": [target]},
                                         "removing_replicas": {"0": [origin[1]]}}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert admin.list_partition_reassignments() == {}
    finally:
        os.kill(cluster.broker(target).proc.pid, signal.SIGCONT)
        admin.close()
    assert replicas_of(zk, "kp") == {"partitions": {"0": origin}, "adding_replicas": {}, "removing_replicas": {}}


def test_errors_reach_kafka_python_as_kafkas_error_classes(cluster, zk):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as ours:
        ours.create_topics([NewTopic("kp-errors", replica_assignment={0: [0, 1]})])
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        tp = TopicPartition("kp-errors", 0)
        results = admin.alter_partition_reassignments({
            tp: [0, 9], TopicPartition("kp-errors", 4): [0, 1], TopicPartition("nope", 0): None})
        assert results == {tp: InvalidReplicationAssignmentError,
                           TopicPartition("kp-errors", 4): UnknownTopicOrPartitionError,
                           TopicPartition("nope", 0): NoReassignmentInProgressError}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
        # A move that completes at once (the target is already in sync) is accepted and done.
        assert admin.alter_partition_reassignments({tp: [1]}) == {tp: None}
        wait_until(lambda: replicas_of(zk, "kp-errors")["partitions"] == {"0": [1]}, 30, "the shrink")
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()


def test_our_admin_client_reports_kafkas_messages(cluster):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic("ours", replica_assignment={0: [0, 1]})])
        results = admin.alter_partition_reassignments({("ours", 0): [1, 1], ("ours", 1): [0], ("", 0): [0],
                                                       ("ours", -1): [0]})
        assert {tp: (e.name, e.message) for tp, e in results.items()} == {
            ("ours", 0): ("INVALID_REPLICA_ASSIGNMENT",
                          "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(1, 1)"),
            ("ours", 1): ("UNKNOWN_TOPIC_OR_PARTITION", "The partition does not exist."),
            ("", 0): ("INVALID_TOPIC_EXCEPTION", "The given topic name '' cannot be represented in a request."),
            ("ours", -1): ("INVALID_TOPIC_EXCEPTION", "The given partition index -1 is not valid."),
        }
        assert admin.alter_partition_reassignments({("ours", 0): [1, 0]}) == {("ours", 0): None}
