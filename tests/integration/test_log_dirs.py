"""bin/kafka-log-dirs.sh against a real broker: the replicas' sizes match what confluent-kafka wrote.

The size the tool reports for a partition is the bytes of its segment files in the
broker's log directory, which the test reads from the disk itself.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, KafkaAdminError, NewTopic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-log-dirs.sh"), *args], capture_output=True, text=True,
                          timeout=60, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def topics(broker):
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic("ld-a", 2, 1), NewTopic("ld-b", 1, 1)])
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce("ld-a", value=b"x" * 100, partition=i % 2)
    producer.produce("ld-b", value=b"y", partition=0)
    assert producer.flush(30) == 0
    return broker


def segment_bytes(broker, partition: str) -> int:
    return sum(f.stat().st_size for f in (broker.log_dir / partition).glob("*.log"))


def test_describe_prints_kafkas_three_lines_with_the_sizes_on_disk(topics):
    broker = topics
    done = run("--bootstrap-server", broker.bootstrap, "--describe", "--topic-list", "ld-a,ld-b")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["Querying brokers for log directories information",
                         "Received log directory information from brokers 0"]
    assert len(lines) == 3
    answer = json.loads(lines[2])
    assert list(answer) == ["version", "brokers"] and answer["version"] == 1
    [described] = answer["brokers"]
    assert list(described) == ["broker", "logDirs"] and described["broker"] == 0
    [log_dir] = described["logDirs"]
    assert list(log_dir) == ["logDir", "error", "partitions"]
    assert log_dir["logDir"] == str(broker.log_dir) and log_dir["error"] is None
    partitions = {p["partition"]: p for p in log_dir["partitions"]}
    assert sorted(partitions) == ["ld-a-0", "ld-a-1", "ld-b-0"]
    for name, p in partitions.items():
        assert list(p) == ["partition", "size", "offsetLag", "isFuture"]
        assert p["size"] == segment_bytes(broker, name) > 0
        assert (p["offsetLag"], p["isFuture"]) == (0, False)
    assert '"error":null' in lines[2] and ", " not in lines[2]


def test_topic_list_filters_and_broker_list_names_the_brokers(topics):
    done = run("--bootstrap-server", topics.bootstrap, "--describe", "--topic-list", "ld-b", "--broker-list", "0")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[2])
    assert [p["partition"] for p in answer["brokers"][0]["logDirs"][0]["partitions"]] == ["ld-b-0"]


def test_missing_describe_prints_kafkas_message_and_usage(topics):
    done = run("--bootstrap-server", topics.bootstrap)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith('Missing required argument "[describe]"\nOption')
    assert "--topic-list <String: Topic list>" in done.stderr


def test_no_arguments_print_the_help(topics):
    done = run()
    assert done.returncode == 1
    assert done.stderr.startswith("This tool helps to query log directory usage on the specified brokers.\n")


def test_unknown_broker_in_the_list(topics):
    done = run("--bootstrap-server", topics.bootstrap, "--describe", "--broker-list", "0,7")
    assert done.returncode == 1
    assert done.stdout == "Querying brokers for log directories information\n"
    assert done.stderr.startswith('Exception in thread "main" java.util.concurrent.ExecutionException: '
                                  "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node "
                                  "assignment. Call: describeLogDirs\n")


def test_three_brokers_each_report_their_own_replicas(kafka_cluster):
    with AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic("ld-rf", 3, 2)])
        deadline = time.monotonic() + 30
        while True:   # every broker learns of the topic, and makes its replicas' logs, a moment later
            try:
                described = admin.describe_topics(["ld-rf"])["ld-rf"]
                break
            except KafkaAdminError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
    hosted = {b: sorted(f"ld-rf-{p.partition}" for p in described.partitions if b in p.replicas) for b in range(3)}
    while True:
        done = run("--bootstrap-server", kafka_cluster.bootstrap, "--describe", "--topic-list", "ld-rf",
                   "--broker-list", "2,0,1")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        answer = json.loads(lines[2])
        if sum(len(b["logDirs"][0]["partitions"]) for b in answer["brokers"]) == 6 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert lines[1] == "Received log directory information from brokers 2,0,1"
    assert [b["broker"] for b in answer["brokers"]] == [0, 1, 2]
    for b in answer["brokers"]:
        [log_dir] = b["logDirs"]
        assert log_dir["logDir"] == str(kafka_cluster.brokers[b["broker"]].log_dir)
        assert sorted(p["partition"] for p in log_dir["partitions"]) == hosted[b["broker"]]
    versions = subprocess.run([str(REPO / "bin" / "kafka-broker-api-versions.sh"), "--bootstrap-server",
                               kafka_cluster.bootstrap], capture_output=True, text=True, timeout=60,
                              env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    assert versions.returncode == 0, versions.stderr
    heads = [line for line in versions.stdout.splitlines() if line.endswith("-> (")]
    assert heads == [f"{b.bootstrap} (id: {i} rack: null) -> (" for i, b in enumerate(kafka_cluster.brokers)]
