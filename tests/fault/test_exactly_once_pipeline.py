"""Exactly once through crashes: a consume-transform-produce pipeline (confluent-kafka's
transactional producer and read_committed consumer, tests/fault/eos_pipeline_app.py)
copies 3,000 keyed input records, written while it runs by an idempotent producer, to an
output topic on three brokers while, one after the other, these are killed with kill -9:

1. the broker that is the app's transaction coordinator (FindCoordinator key type 1),
2. the broker that leads a partition of the output topic,
3. the app itself, inside a transaction whose records are already in the output's log;
   it is started again with the same transactional.id, so init_transactions fences the
   dead instance and aborts its open transaction, and the new instance resumes from the
   group's committed offsets.

Killed brokers are started again while the pipeline runs. __transaction_state and
__consumer_offsets are replicated three times with min.insync.replicas 2, so one dead
broker stops nothing for longer than its ZooKeeper session takes to expire.

What a user relies on: a read_committed reader of the output then sees every input
record exactly once (by its sequence number, with its key), nothing twice, nothing
missing, and the group's committed offsets cover the whole input.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalike.client.connection import BrokerConnection, KafkaConnectionError
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from tests.fault.cluster_view import create_topic, metadata_leaders, running_cluster
from tests.waiting import wait_until

pytestmark = pytest.mark.fault

REPO = Path(__file__).resolve().parents[2]
RECORDS = 3000
SEED, PACED, RATE = 600, 2100, 80   # input written at the start, then paced at RATE records/s
TAIL = RECORDS - SEED - PACED       # and written only once the app has been told to hold
PARTITIONS = 3
PER_TRANSACTION = 40          # input records per transaction at most: many transactions, each short
INPUT, OUTPUT, GROUP, TXN_ID = "orders", "orders-enriched", "enricher", "enricher-1"
OVERRIDES = {
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "5",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "5",
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "replica.lag.time.max.ms": "3000",
    "zookeeper.session.timeout.ms": "6000",
}


class PipelineApp:
    """The app as a subprocess of its own process group, its stdout followed by a thread."""

    def __init__(self, bootstrap: str, committed: dict[int, int]):
        self.stderr = tempfile.TemporaryFile()   # librdkafka's complaints while brokers are down
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fault.eos_pipeline_app", bootstrap, INPUT, OUTPUT, GROUP, TXN_ID,
             str(PER_TRANSACTION)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=self.stderr, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        self.lines: list[str] = []
        # input partition -> next offset, as the apps committed them (shared with a predecessor)
        self.committed = committed
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._follow, daemon=True)
        self._reader.start()

    def _follow(self) -> None:
        for raw in self.process.stdout:
            line = raw.decode().rstrip("\n")
            with self._lock:
                self.lines.append(line)
                if line.startswith("committed "):
                    for partition, offset in json.loads(line.split(" ", 1)[1]).items():
                        self.committed[int(partition)] = max(offset, self.committed.get(int(partition), 0))

    def count(self, prefix: str) -> int:
        with self._lock:
            return sum(1 for line in self.lines if line.startswith(prefix))

    def progress(self) -> int:
        """Input records whose transformed records the apps have committed (the input was
        written without transactions, so its offsets have no gaps)."""
        with self._lock:
            return sum(self.committed.values())

    def alive(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the app exited with {self.process.returncode}:\n{self.report()}")
        return True

    def report(self) -> str:
        with self._lock:
            lines = "\n".join(self.lines[-15:])
        self.stderr.seek(0)
        err = self.stderr.read().decode(errors="replace")[-3000:]
        return f"last lines:\n{lines}\nstderr:\n{err}"

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self._reader.join(10)
        self.process.stdout.close()
        self.stderr.close()


def transaction_coordinator(cluster) -> int:
    """The broker the cluster names as TXN_ID's coordinator (FindCoordinator key type 1)."""
    def ask() -> int | None:
        for broker in cluster.brokers:
            if not broker.is_running():
                continue
            conn = BrokerConnection(broker.host, broker.port, client_id="eos-probe", timeout=5)
            try:
                conn.connect()
                answer = conn.send(FindCoordinatorRequest(key=TXN_ID, key_type=1), 3)
            except (KafkaConnectionError, OSError):   # a broker going down as it is asked
                continue
            finally:
                conn.close()
            if answer.error_code == ErrorCode.NONE:
                return answer.node_id
        return None
    # node 0 is a coordinator too: wait for a non-empty list, not a truthy id
    return wait_until(lambda: [node for node in [ask()] if node is not None], 30,
                      "a transaction coordinator for " + TXN_ID)[0]


def output_leaders(cluster) -> dict[int, int]:
    """partition -> leader as the first live broker answers Metadata."""
    for broker in cluster.brokers:
        if broker.is_running():
            try:
                return {p: leader for p, (leader, _) in metadata_leaders(broker.host, broker.port, OUTPUT).items()}
            except (KafkaConnectionError, OSError):
                continue
    raise AssertionError("no live broker answered Metadata")


def output_leader(cluster, avoid: set[int]) -> tuple[int, int]:
    """(partition, leader) of the output whose leader is not in `avoid`, preferring one
    that is not the controller (a controller failover on top only makes the test longer)."""
    controller = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=30).controller_id
    leaders = sorted((p, leader) for p, leader in output_leaders(cluster).items() if leader >= 0)
    candidates = [pl for pl in leaders if pl[1] not in avoid] or leaders
    return ([pl for pl in candidates if pl[1] != controller] or candidates)[0]


class InputFeeder(threading.Thread):
    """Writes the input while the pipeline runs, as a live source would: SEED records at
    once, then PACED at about RATE a second, and the last TAIL only once released (after
    the app is told to hold), so the app cannot finish before its own kill however fast
    the machine is, and always has input for the transaction it is killed in. The
    producer is idempotent with acks=all: the input itself survives the broker kills."""

    def __init__(self, bootstrap: str):
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
        self.release = threading.Event()
        self.errors: list[str] = []
        self.undelivered = -1

    def _produce(self, seqs: range) -> None:
        for seq in seqs:
            self.producer.produce(INPUT, value=b"%06d" % seq, key=b"customer-%d" % (seq % 97),
                                  on_delivery=lambda err, _msg: err and self.errors.append(str(err)))
        self.producer.poll(0)

    def seed(self) -> None:
        self._produce(range(SEED))
        assert self.producer.flush(60) == 0, "the input's first records were not delivered"

    def run(self) -> None:
        step = RATE // 10
        for start in range(SEED, SEED + PACED, step):
            if self.release.wait(0.1):      # pacing: the rest goes at once once released
                break
            self._produce(range(start, min(start + step, SEED + PACED)))
        else:
            start = SEED + PACED
        self.release.wait()
        self._produce(range(start, RECORDS))
        self.undelivered = self.producer.flush(120)


def read_output(bootstrap: str, isolation: str, expected: int, timeout: float = 60) -> list[tuple[bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"audit-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(OUTPUT, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen: list[tuple[bytes, bytes]] = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            for m in consumer.consume(500, 0.3):
                if not m.error():
                    seen.append((m.key(), m.value()))
            if len(seen) >= expected:
                quiet_until = quiet_until or time.monotonic() + 2    # anything more would be a duplicate
                if time.monotonic() > quiet_until:
                    break
    finally:
        consumer.close()
    return seen


def wait_progress(app: PipelineApp, at_least: int, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while app.alive() and app.progress() < at_least:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: committed {app.progress()} "
                                 f"of {RECORDS}, wanted {at_least}; {app.report()}")
        time.sleep(0.2)


def wait_line(app: PipelineApp, prefix: str, more_than: int, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while app.alive() and app.count(prefix) <= more_than:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; {app.report()}")
        time.sleep(0.05)


def test_a_pipeline_keeps_exactly_once_through_kill_9_of_coordinator_leader_and_app(zk_chroot):
    with running_cluster(zk_chroot, 3, OVERRIDES) as cluster:
        create_topic(cluster.bootstrap, INPUT, PARTITIONS, 3)
        create_topic(cluster.bootstrap, OUTPUT, PARTITIONS, 3)
        feeder = InputFeeder(cluster.bootstrap)
        feeder.seed()

        committed: dict[int, int] = {}
        app = PipelineApp(cluster.bootstrap, committed)
        feeder.start()
        try:
            wait_progress(app, SEED // 2, "the first commits")

            # 1. The transaction coordinator's broker; started again once another broker
            #    coordinates the id (an operator restarts a crashed broker; a client waiting
            #    on the dead one, as librdkafka's send_offsets_to_transaction may, goes on).
            coordinator = transaction_coordinator(cluster)
            cluster.broker(coordinator).kill()
            mark = app.progress()
            wait_until(lambda: transaction_coordinator(cluster) != coordinator, 60,
                       "another broker coordinating " + TXN_ID)
            cluster.broker(coordinator).restart(60)
            # librdkafka may wait out a dead coordinator well past its call's timeout on a
            # loaded machine (docs/operations.md), hence the longer wait here.
            wait_progress(app, min(mark + 2 * PER_TRANSACTION, SEED + PACED), "commits through the new coordinator",
                          timeout=150)

            # 2. The leader of an output partition (not the coordinator now), the same way.
            partition, leader = output_leader(cluster, {transaction_coordinator(cluster)})
            cluster.broker(leader).kill()
            mark = app.progress()
            wait_until(lambda: output_leaders(cluster).get(partition, leader) not in (leader, -1), 60,
                       f"a new leader of {OUTPUT}-{partition}")
            cluster.broker(leader).restart(60)
            wait_progress(app, min(mark + 2 * PER_TRANSACTION, SEED + PACED), "commits after the output leader's kill",
                          timeout=150)

            # 3. The app itself, inside a transaction whose records are in the output's log.
            os.kill(app.process.pid, signal.SIGUSR1)
            feeder.release.set()
            wait_line(app, "held", 0, "the app held inside a transaction", 30)
            app.kill()
            app = PipelineApp(cluster.bootstrap, committed)   # same transactional.id: fences the dead one
            wait_line(app, "ready", 0, "init_transactions of the new instance")
            wait_progress(app, RECORDS, "the whole input committed", timeout=90)
            assert app.progress() == RECORDS, app.report()
            assert app.count("fatal") == 0, app.report()
        finally:
            feeder.release.set()
            app.kill()
        feeder.join(150)
        assert feeder.undelivered == 0 and not feeder.errors, (feeder.undelivered, feeder.errors[:3])

        output = read_output(cluster.bootstrap, "read_committed", RECORDS)
        sequences = Counter(int(value.removeprefix(b"out-")) for _, value in output)
        duplicated = sorted(seq for seq, n in sequences.items() if n > 1)
        missing = sorted(set(range(RECORDS)) - set(sequences))
        assert not duplicated and not missing, (
            f"{len(output)} committed output records for {RECORDS} inputs; duplicated {duplicated[:20]}, "
            f"missing {missing[:20]}")
        assert all(key == b"customer-%d" % (int(value.removeprefix(b"out-")) % 97) for key, value in output)
        # The killed instance's open transaction reached the log and was aborted: a
        # read_uncommitted reader sees more than the input.
        assert len(read_output(cluster.bootstrap, "read_uncommitted", RECORDS + 1, timeout=20)) > RECORDS
