"""bin/kafka-producer-perf-test.sh against a real broker, judged by confluent-kafka's reads and watermarks."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafkalike.client.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
WINDOW = re.compile(r"\d+ records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec\), \d+\.\d ms avg latency, "
                    r"\d+\.\d ms max latency\.")
TOTAL = re.compile(r"(\d+) records sent, \d+\.\d{6} records/sec \(\d+\.\d\d MB/sec\), \d+\.\d\d ms avg latency, "
                   r"\d+\.\d\d ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.")


def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-producer-perf-test.sh"), *args], capture_output=True,
                          text=True, timeout=timeout, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def cluster(broker):
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic("perf-a", 1, 1), NewTopic("perf-b", 1, 1)])
    return broker


def read_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"judge-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        for _ in range(200):
            for message in consumer.consume(1000, 0.5):
                if not message.error():
                    values.append(message.value())
            if len(values) >= count:
                break
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, count)
        return values
    finally:
        consumer.close()


def test_window_and_total_lines_and_the_records_on_the_broker(cluster, tmp_path):
    histogram = tmp_path / "latency.png"
    done = run("--topic", "perf-a", "--num-records", "600", "--record-size", "100", "--throughput", "100",
               "--producer-props", f"bootstrap.servers={cluster.bootstrap}", "acks=1", "--histogram", str(histogram))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines and all(WINDOW.fullmatch(line) for line in lines[:-1]) and len(lines) >= 2, lines
    total = TOTAL.fullmatch(lines[-1])
    assert total, lines[-1]
    count, p50, p95, p99, p999 = map(int, total.groups())
    assert count == 600 and p50 <= p95 <= p99 <= p999
    assert sum(int(line.split()[0]) for line in lines[:-1]) <= 600
    values = read_all(cluster.bootstrap, "perf-a", 600)
    assert len(values) == 600 and set(values) == {values[0]}
    assert len(values[0]) == 100 and re.fullmatch(rb"[A-Z]{100}", values[0])
    assert histogram.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Latency histogram of 600 sampled records written to" in done.stderr


def test_payload_file_and_producer_config(cluster, tmp_path):
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha\nbeta\ngamma\n")
    config = tmp_path / "producer.properties"
    config.write_text(f"bootstrap.servers={cluster.bootstrap}\n")
    done = run("--topic", "perf-b", "--num-records", "50", "--payload-file", str(payloads), "--throughput", "-1",
               "--producer.config", str(config))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Reading payloads from: {payloads}"
    assert lines[1] == "Number of messages read: 3"
    assert TOTAL.fullmatch(lines[-1]).group(1) == "50"
    assert set(read_all(cluster.bootstrap, "perf-b", 50)) <= {b"alpha", b"beta", b"gamma"}


def test_transactions_commit_every_transaction_duration(cluster):
    """--transaction-duration-ms 250: a transactional producer (--transactional-id) that
    commits every 250 ms, as 2.8's ProducerPerformance; a read_committed consumer reads
    every record, and each commit left its marker in the log."""
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic("perf-txn", 1, 1)])
    done = run("--topic", "perf-txn", "--num-records", "400", "--record-size", "20", "--throughput", "200",
               "--producer-props", f"bootstrap.servers={cluster.bootstrap}", "--transactional-id", "perf-txn-id",
               "--transaction-duration-ms", "250")
    assert done.returncode == 0, done.stderr
    assert TOTAL.fullmatch(done.stdout.splitlines()[-1]).group(1) == "400"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "judge-perf-txn",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition("perf-txn", 0, 0)])
        values: list[bytes] = []
        for _ in range(100):
            values += [m.value() for m in consumer.consume(1000, 0.5) if not m.error()]
            if len(values) >= 400:
                break
        low, high = consumer.get_watermark_offsets(TopicPartition("perf-txn", 0), timeout=10)
    finally:
        consumer.close()
    assert len(values) == 400 and re.fullmatch(rb"[A-Z]{20}", values[0])
    # 400 records at 200/s is two seconds: about 8 transactions, each ended by one commit marker.
    markers = high - low - 400
    assert 4 <= markers <= 20, markers
    # The last one was committed too (read_committed reads up to the last stable offset).
    assert high == low + 400 + markers


def test_bad_command_lines(cluster):
    done = run("--topic", "perf-a", "--num-records", "5", "--record-size", "10")
    assert done.returncode == 1
    assert done.stderr.endswith("producer-performance: error: argument --throughput is required\n")
    done = run("--topic", "perf-a", "--record-size", "10")          # two missing: argparse4j names the first
    assert done.returncode == 1
    assert done.stderr.endswith("producer-performance: error: argument --num-records is required\n")
    done = run("--topic", "perf-a", "--num-records", "5", "--record-size", "10", "--throughput", "-1")
    assert done.returncode == 1
    assert done.stderr.endswith("producer-performance: error: Either --producer-props or --producer.config must be "
                                "specified.\n")
    done = run("--topic", "perf-a", "--num-records", "x", "--record-size", "10", "--throughput", "-1")
    assert done.returncode == 1
    assert "argument --num-records: could not convert 'x' to Long" in done.stderr
    done = run()
    assert done.returncode == 0 and done.stdout.startswith("usage: producer-performance")
