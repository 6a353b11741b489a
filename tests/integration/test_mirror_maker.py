"""bin/kafka-mirror-maker.sh between two real clusters: everything copied once, offsets
committed only for what the target has, a refused record stops it without a commit."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kazoo.client import KazooClient

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import Cluster

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
GROUP = "mirror"


@pytest.fixture(scope="module")
def target(zookeeper):
    """A second cluster (its own chroot and broker) to mirror into."""
    chroot = f"/mm-{uuid.uuid4().hex[:12]}"
    zk = KazooClient(hosts=zookeeper.connect_string)
    zk.start(timeout=15)
    zk.create(chroot)
    base = Path(tempfile.mkdtemp(prefix="kl-mirror-"))
    cluster = Cluster(zookeeper.connect_string + chroot, base, 1, None)
    try:
        cluster.start()
        yield cluster.brokers[0]
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)
        zk.delete(chroot, recursive=True)
        zk.stop()
        zk.close()


def configs(tmp_path: Path, source: str, target: str) -> tuple[Path, Path]:
    consumer = tmp_path / "consumer.properties"
    consumer.write_text(f"bootstrap.servers={source}\ngroup.id={GROUP}\nauto.offset.reset=earliest\n")
    producer = tmp_path / "producer.properties"
    producer.write_text(f"bootstrap.servers={target}\n")
    return consumer, producer


def start_mirror(consumer: Path, producer: Path, whitelist: str) -> subprocess.Popen:
    return subprocess.Popen([str(REPO / "bin" / "kafka-mirror-maker.sh"), "--consumer.config", str(consumer),
                             "--producer.config", str(producer), "--whitelist", whitelist,
                             "--offset.commit.interval.ms", "500"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2,
                         timestamp=1_700_000_000_000 + i, headers=[("n", str(i).encode())])
    assert producer.flush(30) == 0


def read_all(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[tuple]:
    """Every record of the topic, once `expected` have arrived (and a moment for any extra)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[tuple] = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append((message.key(), message.value(), message.timestamp()[1], message.headers()))
            if len(got) >= expected and quiet_until is None:
                quiet_until = time.monotonic() + 2
            if quiet_until is not None and time.monotonic() > quiet_until:
                break
    finally:
        consumer.close()
    return got


def expected_records(count: int) -> list[tuple]:
    return sorted((f"k{i}".encode(), f"v{i}".encode(), 1_700_000_000_000 + i, [("n", str(i).encode())])
                  for i in range(count))


def committed(bootstrap: str, topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        return [tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in (0, 1)], timeout=30)]
    finally:
        consumer.close()


def stop(mirror: subprocess.Popen) -> tuple[int, str]:
    mirror.send_signal(signal.SIGTERM)
    _, err = mirror.communicate(timeout=60)
    return mirror.returncode, err


def test_mirrors_every_record_once_and_resumes_from_committed_offsets(broker, target, tmp_path):
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic("mm-orders", 2, 1), NewTopic("not-mirrored", 1, 1)])
    with AdminClient({"bootstrap.servers": target.bootstrap}) as admin:
        admin.create_topics([NewTopic("mm-orders", 2, 1)])
    produce(broker.bootstrap, "mm-orders", 100)
    produce(broker.bootstrap, "not-mirrored", 4)
    consumer_config, producer_config = configs(tmp_path, broker.bootstrap, target.bootstrap)

    mirror = start_mirror(consumer_config, producer_config, "mm-.*")
    try:
        copied = read_all(target.bootstrap, "mm-orders", 100)
    finally:
        code, err = stop(mirror)
    assert code == 128 + signal.SIGTERM, err
    assert "WARNING: The default partition assignment strategy of the mirror maker will change" in err
    assert sorted(copied) == expected_records(100)
    assert committed(broker.bootstrap, "mm-orders") == [50, 50]
    with AdminClient({"bootstrap.servers": target.bootstrap}) as admin:
        assert "not-mirrored" not in {t.name for t in admin.list_topics()}

    # A second run starts where the first committed: the 40 new records, and no old one again.
    produce(broker.bootstrap, "mm-orders", 40, start=100)
    mirror = start_mirror(consumer_config, producer_config, "mm-orders")
    try:
        copied = read_all(target.bootstrap, "mm-orders", 140)
    finally:
        code, err = stop(mirror)
    assert code == 128 + signal.SIGTERM, err
    assert sorted(copied) == expected_records(140)
    assert committed(broker.bootstrap, "mm-orders") == [70, 70]


def test_a_refused_record_stops_it_without_committing(broker, target, tmp_path):
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic("mm-big", 2, 1)])
    with AdminClient({"bootstrap.servers": target.bootstrap}) as admin:
        admin.create_topics([NewTopic("mm-big", 2, 1, configs={"max.message.bytes": "2000"})])
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("mm-big", value=b"x" * 5000, partition=0)
    assert producer.flush(30) == 0
    consumer_config, producer_config = configs(tmp_path, broker.bootstrap, target.bootstrap)
    mirror = start_mirror(consumer_config, producer_config, "mm-big")
    try:
        _, err = mirror.communicate(timeout=90)
    finally:
        mirror.kill()
    assert mirror.returncode == 255, err
    assert "Error when sending message to topic mm-big with key: null, value: 5000 bytes with error:" in err
    assert "MessageSizeTooLarge" in err or "RecordTooLarge" in err
    assert "Mirror maker thread exited abnormally, stopping the whole mirror maker." in err
    assert committed(broker.bootstrap, "mm-big")[0] < 1    # the refused record's offset was not committed


def test_usage():
    done = subprocess.run([str(REPO / "bin" / "kafka-mirror-maker.sh")], capture_output=True, text=True,
                          timeout=60, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1
    assert done.stderr.startswith("This tool helps to continuously copy data between two Kafka clusters.\n")
    assert "--whitelist <String: Java regex          Whitelist of topics to mirror.\n  (String)>\n" in done.stderr
