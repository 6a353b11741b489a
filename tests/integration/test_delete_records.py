"""bin/kafka-delete-records.sh against a real broker, judged by confluent-kafka's watermarks and reads."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalike.client.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-delete-records.sh"), *args], capture_output=True, text=True,
                          timeout=60, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def topic(broker):
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic("dr", 2, 1)])
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("dr", value=str(i).encode(), partition=0)
        producer.produce("dr", value=str(i).encode(), partition=1)
    assert producer.flush(30) == 0
    return broker


def offsets_file(tmp_path: Path, entries, version=1) -> str:
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"partitions": [{"topic": t, "partition": p, "offset": o} for t, p, o in entries],
                                "version": version}))
    return str(path)


def watermarks(bootstrap: str, partition: int) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dr-judge"})
    try:
        return consumer.get_watermark_offsets(TopicPartition("dr", partition), timeout=10)
    finally:
        consumer.close()


def test_delete_moves_the_low_watermark_and_reports_errors_per_partition(topic, tmp_path):
    done = run("--bootstrap-server", topic.bootstrap, "--offset-json-file",
               offsets_file(tmp_path, [("dr", 0, 5), ("dr", 1, -1), ("dr", 7, 1), ("nope", 0, 1)]))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        "partition: dr-0\tlow_watermark: 5",
        "partition: dr-1\tlow_watermark: 10",
        "partition: dr-7\terror: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server "
        "does not host this topic-partition.",
        "partition: nope-0\terror: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server "
        "does not host this topic-partition.",
    ]
    assert watermarks(topic.bootstrap, 0) == (5, 10)
    assert watermarks(topic.bootstrap, 1) == (10, 10)
    consumer = Consumer({"bootstrap.servers": topic.bootstrap, "group.id": "dr-read", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition("dr", 0, 0)])
        first = None
        for _ in range(50):
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                first = message
                break
        assert first is not None and first.offset() == 5 and first.value() == b"5"
    finally:
        consumer.close()


def test_an_offset_past_the_end_is_kafkas_offset_out_of_range(topic, tmp_path):
    done = run("--bootstrap-server", topic.bootstrap, "--offset-json-file", offsets_file(tmp_path, [("dr", 0, 99)]))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2] == (
        "partition: dr-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset "
        "is not within the range of offsets maintained by the server.")


def test_malformed_json_and_missing_file(topic, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{partitions")
    done = run("--bootstrap-server", topic.bootstrap, "--offset-json-file", str(bad))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == 'Exception in thread "main" kafka.admin.AdminOperationException: The input string is ' \
                          'not a valid JSON\n'
    done = run("--bootstrap-server", topic.bootstrap, "--offset-json-file", str(tmp_path / "absent.json"))
    assert done.returncode == 1
    assert done.stderr == f'Exception in thread "main" java.nio.file.NoSuchFileException: {tmp_path}/absent.json\n'


def test_missing_required_option(topic):
    done = run("--offset-json-file", "x.json")
    assert done.returncode == 1
    assert done.stderr.startswith('Missing required argument "[bootstrap-server]"\nOption')
