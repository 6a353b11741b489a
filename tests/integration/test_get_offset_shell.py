"""kafka.tools.GetOffsetShell through bin/kafka-run-class.sh, on a real broker, read as an operator does."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TOPIC = "offsetshell"


def shell(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-run-class.sh"), "kafka.tools.GetOffsetShell", *args],
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def topic(broker):
    """Partition 0 holds records stamped 1000, 2000 and 3000; partition 1 two stamped 1000 and 1500."""
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for partition, stamps in ((0, (1000, 2000, 3000)), (1, (1000, 1500))):
        for stamp in stamps:
            producer.produce(TOPIC, value=b"v", partition=partition, timestamp=stamp)
    assert producer.flush(30) == 0
    return broker


def test_latest_earliest_and_by_time(topic):
    latest = shell("--broker-list", topic.bootstrap, "--topic", TOPIC)
    assert (latest.returncode, latest.stdout) == (0, f"{TOPIC}:0:3\n{TOPIC}:1:2\n"), latest.stderr
    earliest = shell("--broker-list", topic.bootstrap, "--topic", TOPIC, "--time", "-2")
    assert earliest.stdout == f"{TOPIC}:0:0\n{TOPIC}:1:0\n"
    # the first record at or after 2000: offset 1 of partition 0, none in partition 1
    by_time = shell("--broker-list", topic.bootstrap, "--topic", TOPIC, "--time", "2000")
    assert (by_time.returncode, by_time.stdout) == (0, f"{TOPIC}:0:1\n{TOPIC}:1:\n"), by_time.stderr


def test_requested_partitions_and_missing_ones(topic):
    done = shell("--broker-list", topic.bootstrap, "--topic", TOPIC, "--partitions", "1,7")
    assert (done.returncode, done.stdout) == (0, f"{TOPIC}:1:2\n")
    assert done.stderr == "Error: partition 7 does not exist\n"
    none = shell("--broker-list", topic.bootstrap, "--topic", TOPIC, "--partitions", "7")
    assert (none.returncode, none.stdout) == (1, "")
    assert none.stderr == f"Topic {TOPIC} does not have any of the requested partitions 7\n"
    bad = shell("--broker-list", topic.bootstrap, "--topic", TOPIC, "--partitions", "0,x")
    assert bad.returncode == 1
    assert bad.stderr == "--partitions expects a comma separated list of numeric partition ids, but received: 0,x\n"


def test_a_missing_topic_is_reported_and_not_created(topic):
    done = shell("--broker-list", topic.bootstrap, "--topic", "no-such-topic")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "Topic no-such-topic does not exist\n")
    with AdminClient({"bootstrap.servers": topic.bootstrap}) as admin:
        assert "no-such-topic" not in {t.name for t in admin.list_topics()}


def test_command_line_errors_as_kafka_prints_them():
    done = shell()
    assert done.returncode == 1
    assert done.stderr.startswith("An interactive shell for getting topic offsets.\nOption ")
    assert "--broker-list <String:                   REQUIRED: The list of hostname and port\n" in done.stderr
    missing = shell("--broker-list", "localhost:9092")
    assert (missing.returncode, missing.stderr.splitlines()[0]) == (1, 'Missing required argument "[topic]"')
    port = shell("--broker-list", "localhost", "--topic", TOPIC)
    assert (port.returncode, port.stderr.splitlines()[0]) == (1, "Please provide valid host:port like "
                                                                 "host1:9091,host2:9092")
    unknown = shell("--broker-list", "localhost:9092", "--topic", TOPIC, "--tim", "-1")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith('Exception in thread "main" joptsimple.UnrecognizedOptionException: '
                                     "tim is not a recognized option")
