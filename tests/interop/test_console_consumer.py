"""bin/kafka-console-consumer.sh as a user runs it, reading what confluent-kafka wrote.

The printed lines are compared with what Kafka 2.8's ConsoleConsumer prints for the same
records and properties, and the closing "Processed a total of N messages" on stderr.
"""
from __future__ import annotations

import subprocess
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.interop

TOOL = str(REPO_ROOT / "bin" / "kafka-console-consumer.sh")


def topic_with(bootstrap: str, partitions: int, rows: list[tuple]) -> str:
    name = f"console-consumer-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=15).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, key, value, ts in rows:
        producer.produce(name, key=key, value=value, partition=partition, timestamp=ts)
    assert producer.flush(15) == 0
    return name


def run_tool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([TOOL, *args], capture_output=True, timeout=timeout, text=True)


def test_from_beginning_prints_values_and_the_total(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"v%d" % i, 1_600_000_000_000 + i) for i in range(5)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
                      "--max-messages", "5")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "".join(f"v{i}\n" for i in range(5))
    assert result.stderr.endswith("Processed a total of 5 messages\n")


def test_print_properties_match_kafka_formatting(broker):
    rows = [(1, b"k1", b"one", 1_600_000_000_000), (1, None, b"two", 1_600_000_000_001)]
    topic = topic_with(broker.bootstrap, 2, rows)
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "1",
                      "--offset", "earliest", "--max-messages", "2",
                      "--property", "print.key=true", "--property", "print.timestamp=true",
                      "--property", "print.partition=true", "--property", "print.offset=true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "CreateTime:1600000000000\tPartition:1\tOffset:0\tk1\tone",
        "CreateTime:1600000000001\tPartition:1\tOffset:1\tnull\ttwo",
    ]


def test_offset_and_key_separator_and_timeout(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, b"k%d" % i, b"v%d" % i, 1_600_000_000_000) for i in range(4)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "0",
                      "--offset", "2", "--timeout-ms", "1500", "--property", "print.key=true",
                      "--property", "key.separator=::")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "k2::v2\nk3::v3\n"
    assert "org.apache.kafka.common.errors.TimeoutException" in result.stderr
    assert result.stderr.endswith("Processed a total of 2 messages\n")


def test_offset_without_partition_is_refused(broker):
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", "x", "--offset", "3")
    assert result.returncode == 1
    assert "The partition is required when offset is specified." in result.stderr


def test_group_mode_commits_so_a_second_run_continues(broker):
    topic = topic_with(broker.bootstrap, 2, [(i % 2, None, b"v%d" % i, 1_600_000_000_000 + i) for i in range(6)])
    group = f"console-{uuid.uuid4().hex[:8]}"
    first = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group,
                     "--from-beginning", "--max-messages", "6")
    assert first.returncode == 0, first.stderr
    assert sorted(first.stdout.splitlines()) == [f"v{i}" for i in range(6)]
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"late", partition=0)
    producer.flush(10)
    second = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group,
                      "--from-beginning", "--timeout-ms", "4000")
    assert second.stdout == "late\n"
    assert second.stderr.endswith("Processed a total of 1 messages\n")


def test_whitelist_without_group_reads_every_matching_topic(broker):
    a = topic_with(broker.bootstrap, 1, [(0, None, b"from-a", 1_600_000_000_000)])
    b = topic_with(broker.bootstrap, 1, [(0, None, b"from-b", 1_600_000_000_000)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--whitelist", f"{a}|{b}", "--from-beginning",
                      "--max-messages", "2")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["from-a", "from-b"]


def test_consumer_config_file_and_header_printing(broker, tmp_path):
    topic = f"console-consumer-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"v", key=b"k", headers=[("h1", b"a"), ("h2", b"b")])
    producer.produce(topic, value=b"w")
    producer.flush(15)
    config = tmp_path / "consumer.properties"
    config.write_text("# as in config/consumer.properties\nauto.offset.reset=earliest\ngroup.id: from-file\n")
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--consumer.config", str(config),
                      "--max-messages", "2", "--property", "print.headers=true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["h1:a,h2:b\tv", "NO_HEADERS\tw"]
