"""Consumers may read a follower replica with Fetch v11+ (KIP-392), as Kafka 2.8 serves
them: up to the follower's high watermark, the leader epoch checked, and a fetch that
waits on the follower answered as soon as replication moves its high watermark."""
from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from typing import Iterator

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient
from kafkalike.client.connection import BrokerConnection
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.records.batch import iter_records
from tests.integration.test_reassignment import REPO, cluster_of, create_topic

pytestmark = pytest.mark.integration

TOPIC = "follower-reads"


@pytest.fixture(scope="module")
def cluster(module_zk_chroot: str) -> Iterator[Cluster]:
    with cluster_of(module_zk_chroot, 2) as c:
        create_topic(c.bootstrap, TOPIC, [[0, 1]])
        yield c


def produce(bootstrap: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        producer.produce(TOPIC, value=value, partition=0)
    assert producer.flush(30) == 0


def fetch(broker, offset: int, version: int, replica_id: int = -1, epoch: int = -1, wait_ms: int = 0):
    with BrokerConnection("127.0.0.1", broker.port) as conn:
        conn.connect()
        response = conn.send(FetchRequest(
            replica_id=replica_id, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
            topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20, current_leader_epoch=epoch)])]),
            version=version)
    return response.responses[0].partition_responses[0]


def test_a_follower_serves_v11_consumers_and_refuses_older_ones(cluster):
    produce(cluster.bootstrap, [b"a", b"b", b"c"])
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        info = admin.describe_topics([TOPIC])[TOPIC].partitions[0]
    follower = cluster.broker(1 - info.leader)
    deadline = time.monotonic() + 15
    while (answer := fetch(follower, 0, 12)).high_watermark < 3:   # the follower learns the HW a fetch later
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)
    assert answer.error_code == ErrorCode.NONE
    assert [r.value for r in iter_records(bytes(answer.record_set))] == [b"a", b"b", b"c"]
    assert fetch(follower, 0, 10).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch(follower, 0, 12, epoch=info.leader_epoch + 1).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    # The debugging consumer id (-2) of kafka-replica-verification reads a follower the same way.
    assert fetch(follower, 0, 12, replica_id=-2).error_code == ErrorCode.NONE


def test_a_fetch_waiting_on_a_follower_ends_when_its_high_watermark_moves(cluster):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        info = admin.describe_topics([TOPIC])[TOPIC].partitions[0]
    follower = cluster.broker(1 - info.leader)
    end = fetch(follower, 0, 12).high_watermark
    threading.Timer(0.5, produce, (cluster.bootstrap, [b"late"])).start()
    started = time.monotonic()
    answer = fetch(follower, end, 12, wait_ms=10_000)
    waited = time.monotonic() - started
    assert [r.value for r in iter_records(bytes(answer.record_set))] == [b"late"]
    assert waited < 5, waited      # answered by the follower's new high watermark, not the 10 s wait


def test_replica_verification_finds_the_replicas_equal(cluster):
    """kafka-replica-verification reads both replicas from the start and reports no lag."""
    produce(cluster.bootstrap, [b"x%d" % i for i in range(50)])
    end = fetch(cluster.broker(0), 0, 12).high_watermark
    tool = subprocess.Popen([str(REPO / "bin" / "kafka-replica-verification.sh"), "--broker-list", cluster.bootstrap,
                             "--topic-white-list", TOPIC, "--time", "-2", "--report-interval-ms", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    lines = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = tool.stdout.readline()
            assert line, tool.stderr.read()
            lines.append(line.rstrip("\n"))
            if re.search(rf": max lag is 0 for partition {TOPIC}-0 at offset \d+ among 1 partitions$", line):
                break
        else:
            pytest.fail(f"no zero-lag report: {lines}")
    finally:
        tool.terminate()
        tool.wait(10)
    assert lines[0].endswith(": verification process is started.")
    assert int(lines[-1].split(" at offset ")[1].split()[0]) >= end
    assert not any("doesn't match" in line or "unmatched checksum" in line for line in lines)
