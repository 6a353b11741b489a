"""Moving replicas between a broker's log dirs (KIP-113) on real brokers with two log.dirs each.

A partition with data moves to the broker's other dir while a producer keeps writing
with acks=all, throttled by replica.alter.log.dirs.io.max.bytes.per.second: every
acknowledged record is readable afterwards, the files are in the new dir, the old one
is gone, and kafka-log-dirs.sh showed the future replica meanwhile. A broker killed
with SIGKILL mid-move resumes it after a restart. An unknown dir is LOG_DIR_NOT_FOUND.
kafka-reassign-partitions.sh moves a replica to another broker's named dir and
--verify reports it as 2.8 does.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, ConfigResource, ConfigSource, ResourceType
from kafkalike.client.connection import BrokerConnection
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_replica_log_dirs import AlterReplicaLogDirsRequest
from tests.conftest import scratch_dir
from tests.fault.cluster_view import ZooKeeperView
from tests.waiting import wait_until
from tests.integration.test_reassignment import REPO, consume, create_topic, run_tool, write_json

pytestmark = pytest.mark.integration

RATE = 400_000             # bytes/s, the log dir move throttle
DATA = 1_200_000           # bytes in the partition that moves
# Two one-second quota windows and 64 KiB chunks, as test_replication_throttle does, so
# the throttle shows within seconds; deleted dirs go after a second.
BROKER = {"alter.log.dirs.replication.quota.window.num": "2", "replica.fetch.max.bytes": "65536",
          "log.segment.delete.delay.ms": "1000", "log.segment.bytes": "262144",
          "zookeeper.session.timeout.ms": "6000"}     # a killed broker's registration goes soon
_R = AlterReplicaLogDirsRequest


def dirs_of(cluster: Cluster, broker: int) -> list[Path]:
    b = cluster.broker(broker)
    return [b.log_dir, b.log_dir.parent / "data2"]


@pytest.fixture(scope="module")
def cluster(module_zk_chroot: str) -> Iterator[Cluster]:
    base = scratch_dir("alter-log-dirs")
    c = Cluster(module_zk_chroot, base, 2)
    for b in c.brokers:
        b.overrides.update(BROKER, **{"log.dirs": f"{b.log_dir},{b.log_dir.parent / 'data2'}"})
    try:
        c.start()
        yield c
    finally:
        c.kill()
        shutil.rmtree(base, ignore_errors=True)


def alter(cluster: Cluster, broker: int, moves: dict[tuple[str, int], str]) -> dict[tuple[str, int], int]:
    b = cluster.broker(broker)
    by_dir: dict[str, dict[str, list[int]]] = {}
    for (topic, p), path in moves.items():
        by_dir.setdefault(path, {}).setdefault(topic, []).append(p)
    request = _R(dirs=[_R.AlterReplicaLogDir(path=path, topics=[_R.AlterReplicaLogDirTopic(name=t, partitions=ps)
                                                                 for t, ps in topics.items()])
                       for path, topics in by_dir.items()])
    with BrokerConnection(b.host, b.port, client_id="test") as connection:
        connection.connect()
        response = connection.send(request)
    return {(t.topic_name, p.partition_index): p.error_code for t in response.results for p in t.partitions}


def log_dirs(cluster: Cluster, broker: int, topic: str) -> list[tuple[str, str, bool, int]]:
    """(log dir, partition, isFuture, offsetLag) as kafka-log-dirs.sh prints them."""
    done = subprocess.run([str(REPO / "bin" / "kafka-log-dirs.sh"), "--bootstrap-server", cluster.bootstrap,
                           "--describe", "--topic-list", topic, "--broker-list", str(broker)],
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[2])
    return sorted((d["logDir"], p["partition"], p["isFuture"], p["offsetLag"])
                  for d in answer["brokers"][0]["logDirs"] for p in d["partitions"])


def set_throttle(cluster: Cluster, broker: int, rate: int | None) -> None:
    change = (["--add-config", f"replica.alter.log.dirs.io.max.bytes.per.second={rate}"] if rate is not None
              else ["--delete-config", "replica.alter.log.dirs.io.max.bytes.per.second"])
    done = subprocess.run([str(REPO / "bin" / "kafka-configs.sh"), "--bootstrap-server", cluster.bootstrap,
                           "--entity-type", "brokers", "--entity-name", str(broker), "--alter", *change],
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    # The broker applies the change when ZooKeeper's notification reaches it; its own
    # DescribeConfigs answers from what it applied.
    expected = None if rate is None else str(rate)
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        resource = ConfigResource(ResourceType.BROKER, str(broker))

        def applied() -> bool:
            values = {e.name: e.value for e in admin.describe_configs([resource])[resource]
                      if e.source == ConfigSource.DYNAMIC_BROKER_CONFIG}
            return values.get("replica.alter.log.dirs.io.max.bytes.per.second") == expected
        wait_until(applied, 30, f"broker {broker} to apply the alter-log-dirs throttle {rate}")


def fill(bootstrap: str, topic: str, size: int) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "compression.type": "none",
                         "batch.size": 65536})
    value = bytes(range(256)) * 4
    count = size // len(value)
    failed = []
    for i in range(count):
        producer.produce(topic, key=b"fill-%d" % i, value=value, partition=0,
                         on_delivery=lambda err, _msg: err is not None and failed.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not failed, failed[:3]
    return count


def where(cluster: Cluster, broker: int, name: str) -> tuple[Path, Path]:
    """(the dir holding the partition now, the other one)."""
    first, second = dirs_of(cluster, broker)
    return (first, second) if (first / name).is_dir() else (second, first)


def entries(directory: Path, name: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name == name or p.name.startswith(name + "."))


class KeepProducing(threading.Thread):
    """acks=all writes until stopped; remembers what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
        self.topic = topic
        self.acked: list[bytes] = []
        self.stop = threading.Event()

    def _done(self, err, msg) -> None:
        if err is None:
            self.acked.append(msg.key())

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            self.producer.produce(self.topic, key=b"live-%d" % i, value=b"v" * 200, partition=0, on_delivery=self._done)
            self.producer.poll(0)
            i += 1
            time.sleep(0.002)
        self.producer.flush(30)


def test_a_partition_moves_to_the_other_dir_under_load_at_the_throttled_rate(cluster):
    create_topic(cluster.bootstrap, "mv", [[0, 1]])
    filled = fill(cluster.bootstrap, "mv", DATA)
    source, target = where(cluster, 0, "mv-0")
    set_throttle(cluster, 0, RATE)
    writer = KeepProducing(cluster.bootstrap, "mv")
    writer.start()
    try:
        time.sleep(0.5)
        started = time.monotonic()
        assert alter(cluster, 0, {("mv", 0): str(target)}) == {("mv", 0): ErrorCode.NONE}
        seen_future = []

        def moved():
            described = log_dirs(cluster, 0, "mv")
            seen_future.extend(d for d in described if d[2])
            return described == [(str(target), "mv-0", False, 0)] or None
        wait_until(moved, 60, "mv-0 to be in the other dir only")
        took = time.monotonic() - started
        # What was copied: the fill plus what the producer added until the swap.
        copied = sum(f.stat().st_size for f in (target / "mv-0").glob("*.log"))
    finally:
        writer.stop.set()
        writer.join(60)
    set_throttle(cluster, 0, None)
    print(f"moved {copied} bytes between dirs in {took:.2f} s at {RATE} B/s ({copied / took:,.0f} B/s)")
    # kafka-log-dirs showed the future replica in the target dir, lagging, meanwhile.
    assert seen_future and all(d[0] == str(target) and d[1] == "mv-0" for d in seen_future)
    assert any(d[3] > 0 for d in seen_future)
    # All but the first window's burst at RATE at most (and not much slower).
    assert copied > DATA and took >= (copied - 2 * RATE) / RATE, (copied, took)
    assert copied / took < 2 * RATE, (copied, took)
    # Every acknowledged record is there, read from the moved replica (broker 0 leads).
    assert len(writer.acked) > 100
    keys = {k for k, _ in consume(cluster.broker(0).bootstrap, "mv", filled + len(writer.acked))}
    assert set(writer.acked) <= keys and len(keys) == filled + len(writer.acked)
    # The segments are in the new dir; the old dir's copy is deleted after the delay.
    assert any(p.suffix == ".log" and p.stat().st_size > 0 for p in (target / "mv-0").iterdir())
    assert entries(target, "mv-0") == ["mv-0"]
    wait_until(lambda: entries(source, "mv-0") == [] or None, 30, "the old dir's copy to go")


def test_a_broker_killed_mid_move_resumes_it_after_a_restart(cluster, module_zk_chroot):
    create_topic(cluster.bootstrap, "crash", [[1]])
    filled = fill(cluster.bootstrap, "crash", DATA)
    source, target = where(cluster, 1, "crash-0")
    set_throttle(cluster, 1, 200_000)
    assert alter(cluster, 1, {("crash", 0): str(target)}) == {("crash", 0): ErrorCode.NONE}

    def copying():
        future = [p for p in target.iterdir() if p.name.startswith("crash-0.") and p.name.endswith("-future")]
        return future and sum(f.stat().st_size for f in future[0].glob("*.log")) > 150_000 or None
    wait_until(copying, 30, "the future log to fill")
    broker = cluster.broker(1)
    broker.kill()
    assert entries(source, "crash-0") == ["crash-0"]
    [future] = entries(target, "crash-0")
    assert future.endswith("-future")
    view = ZooKeeperView(module_zk_chroot)
    try:
        wait_until(lambda: view.zk.exists("/brokers/ids/1") is None or None, 30, "broker 1's session to expire")
    finally:
        view.close()
    broker.restart()
    set_throttle(cluster, 1, None)
    wait_until(lambda: log_dirs(cluster, 1, "crash") == [(str(target), "crash-0", False, 0)] or None, 60,
               "the move to complete after the restart")
    assert "Added fetcher to broker 1 for partitions Map(crash-0" in broker.server_log.read_text()
    assert len({k for k, _ in consume(cluster.bootstrap, "crash", filled)}) == filled
    assert entries(target, "crash-0") == ["crash-0"]
    wait_until(lambda: entries(source, "crash-0") == [] or None, 30, "the old dir's copy to go")


def test_unknown_dir_and_partitions_not_hosted(cluster):
    create_topic(cluster.bootstrap, "odd", [[0]])
    answer = alter(cluster, 0, {("odd", 0): "/no/such/dir"})
    assert answer == {("odd", 0): ErrorCode.LOG_DIR_NOT_FOUND}
    # Not hosted on broker 1 (yet): Kafka 2.8's REPLICA_NOT_AVAILABLE; unknown topic.
    answer = alter(cluster, 1, {("odd", 0): str(dirs_of(cluster, 1)[1]), ("nope", 0): str(dirs_of(cluster, 1)[1])})
    assert answer == {("odd", 0): ErrorCode.REPLICA_NOT_AVAILABLE, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_the_reassign_tool_moves_replicas_to_named_dirs_and_verifies(cluster, tmp_path):
    create_topic(cluster.bootstrap, "tool", [[0], [0]])
    for p in (0, 1):
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(50):
            producer.produce("tool", key=b"%d-%d" % (p, i), value=b"x" * 100, partition=p)
        assert producer.flush(30) == 0
    broker0_target = str(where(cluster, 0, "tool-1")[1])
    broker1_target = str(dirs_of(cluster, 1)[1])
    plan = write_json(tmp_path / "dirs.json", {"version": 1, "partitions": [
        {"topic": "tool", "partition": 0, "replicas": [1], "log_dirs": [broker1_target]},
        {"topic": "tool", "partition": 1, "replicas": [0], "log_dirs": [broker0_target]}]})
    done = run_tool("--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", plan, "--execute",
                    "--replica-alter-log-dirs-throttle", "50000000")
    assert done.returncode == 0, done.stderr
    assert "The replica-alter-dir throttle limit was set to 50000000 B/s\n" in done.stdout
    assert "Successfully started partition reassignments for tool-0,tool-1\n" in done.stdout
    started = [r for line in done.stdout.splitlines() if line.startswith("Successfully started log directory move")
               for r in line.split(": ", 1)[1].split(",")]
    assert sorted(started) == ["0-tool-1", "1-tool-0"], done.stdout

    def verified():
        out = run_tool("--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", plan, "--verify")
        assert out.returncode == 0, out.stderr
        return out.stdout if out.stdout.endswith("Clearing topic-level throttles on topic tool\n") else None
    out = wait_until(verified, 60, "--verify to report the reassignments and both moves complete")
    assert out == ("Status of partition reassignment:\n"
                   "Reassignment of partition tool-0 is complete.\n"
                   "Reassignment of partition tool-1 is complete.\n"
                   "Reassignment of replica 0-tool-1 completed successfully.\n"
                   "Reassignment of replica 1-tool-0 completed successfully.\n"
                   "Clearing broker-level throttles on brokers 0,1\n"
                   "Clearing topic-level throttles on topic tool\n"), out
    assert log_dirs(cluster, 0, "tool") == [(broker0_target, "tool-1", False, 0)]
    assert log_dirs(cluster, 1, "tool") == [(broker1_target, "tool-0", False, 0)]
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        resource = ConfigResource(ResourceType.BROKER, "0")
        entries_ = admin.describe_configs([resource])[resource]
    assert not [e for e in entries_ if e.name == "replica.alter.log.dirs.io.max.bytes.per.second"
                and e.source == ConfigSource.DYNAMIC_BROKER_CONFIG]
    assert len(consume(cluster.bootstrap, "tool", 50, partition=1)) == 50


def test_kafka_pythons_admin_client_moves_a_replica_and_sees_it_moved(cluster):
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NoError
    create_topic(cluster.bootstrap, "kp", [[1]])
    produced = fill(cluster.bootstrap, "kp", 100_000)
    _source, target = where(cluster, 1, "kp-0")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        answer = admin.alter_replica_log_dirs({("kp", 0, 1): str(target)})
        assert [(tuple(r), e) for r, e in answer.items()] == [(("kp", 0, 1), NoError)]

        def placed():
            [broker] = admin.describe_log_dirs(topic_partitions={"kp": [0]}, brokers=[1])
            where_ = [(d["log_dir"], p["partition_index"], p["is_future_key"])
                      for d in broker["log_dirs"] for t in d["topics"] if t["name"] == "kp" for p in t["partitions"]]
            return where_ == [(str(target), 0, False)] or None
        wait_until(placed, 30, "kafka-python to describe kp-0 in the other dir only")
    finally:
        admin.close()
    wait_until(lambda: log_dirs(cluster, 1, "kp") == [(str(target), "kp-0", False, 0)] or None, 30, "kp-0 moved")
    assert len(consume(cluster.bootstrap, "kp", produced)) == produced
