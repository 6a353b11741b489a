"""bin/kafka-log-dirs.sh against a real broker: the replicas' sizes match what confluent-kafka wrote.

The size the tool reports for a partition is the bytes of its segment files in the
broker's log directory, which the test reads from the disk itself.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, NewTopic

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
