"""A broker whose ZooKeeper session expires for real, and what its users see afterwards.

The session is expired the way it happens in production: the broker stops answering
(here SIGSTOP, as a long GC pause or a frozen VM would) for longer than
zookeeper.session.timeout.ms, ZooKeeper gives up on it and deletes its ephemeral
znodes, and then the broker wakes up (SIGCONT). It must notice that its session is
gone, open a new one, register under /brokers/ids again, win the controller election
again, and go on serving producers and consumers with its data intact.

ZooKeeper is looked at from outside with kazoo, the clients are confluent-kafka's.
"""
from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkalike.lab.cluster import BrokerProcess
from tests.waiting import wait_until

pytestmark = pytest.mark.fault

SESSION_TIMEOUT_MS = 6000
TOPIC = "expiry"
BATCH = 200


@dataclass(frozen=True)
class Registration:
    """/brokers/ids/0 and /controller as ZooKeeper holds them at one moment."""

    broker_czxid: int
    session_id: int
    controller_id: int | None
    controller_owner: int | None
    controller_epoch: int


def read_registration(zk: KazooClient) -> Registration | None:
    broker = zk.exists("/brokers/ids/0")
    if broker is None:
        return None
    try:
        data, stat = zk.get("/controller")
        controller_id, controller_owner = json.loads(data)["brokerid"], stat.ephemeralOwner
    except Exception:  # noqa: BLE001 - no controller at this moment
        controller_id = controller_owner = None
    epoch = int(zk.get("/controller_epoch")[0])
    return Registration(broker.czxid, broker.ephemeralOwner, controller_id, controller_owner, epoch)


def expire_session(broker: BrokerProcess, zk: KazooClient) -> None:
    """Freeze the broker until ZooKeeper has expired its session, then let it run on."""
    os.kill(broker.proc.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: zk.exists("/brokers/ids/0") is None, SESSION_TIMEOUT_MS / 1000 * 3,
                   "ZooKeeper to expire the frozen broker's session")
    finally:
        os.kill(broker.proc.pid, signal.SIGCONT)


def wait_reregistered(zk: KazooClient, before: Registration) -> Registration:
    """The broker back in /brokers/ids and controller again, under a new session."""
    def settled() -> Registration | None:
        now = read_registration(zk)
        if now is None or now.controller_owner != now.session_id or now.controller_epoch <= before.controller_epoch:
            return None
        return now
    return wait_until(settled, 30, "the broker to register and become controller again")


class Stream:
    """Numbered records with recognisable values, and where the broker put each."""

    def __init__(self) -> None:
        self.next_seq = 0
        self.offsets: dict[int, int] = {}

    @staticmethod
    def value_of(seq: int) -> bytes:
        return f"expiry-record-{seq:06d}".encode() * 4

    def produce(self, producer: Producer, count: int) -> None:
        errors: list[str] = []

        def report(err, msg) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                self.offsets[int(msg.key())] = msg.offset()

        for _ in range(count):
            seq = self.next_seq
            self.next_seq += 1
            producer.produce(TOPIC, key=str(seq).encode(), value=self.value_of(seq), partition=0,
                             on_delivery=report)
        remaining = producer.flush(30)
        assert remaining == 0, f"{remaining} records still undelivered after 30s"
        assert not errors, f"delivery failed: {errors[:5]}"


def new_producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                     "enable.idempotence": False})


def read_all(bootstrap: str) -> dict[int, tuple[bytes, bytes]]:
    """offset -> (key, value) for the whole partition, read by a fresh consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "expiry-reader",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "check.crcs": True})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        found: dict[int, tuple[bytes, bytes]] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF and msg.offset() >= high:
                    break
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                continue
            found[msg.offset()] = (msg.key(), msg.value())
        assert sorted(found) == list(range(high)), "the partition does not read back from 0 to its end"
        return found
    finally:
        consumer.close()


def leader_and_controller(bootstrap: str) -> tuple[int, int]:
    """What `kafka-topics.sh --describe` and a client's metadata say: (leader, controller)."""
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10)
    return md.topics[TOPIC].partitions[0].leader, md.controller_id


def listener_connections_from(pid: int, port: int) -> int:
    """Established TCP connections that process pid holds open *to* 127.0.0.1:port."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    with open(f"/proc/{pid}/net/tcp") as table:
        next(table)
        for line in table:
            cols = line.split()
            remote_port = int(cols[2].split(":")[1], 16)
            if remote_port == port and cols[3] == "01" and cols[9] in inodes:
                count += 1
    return count


@pytest.fixture
def expiring_broker(zk_chroot: str, shm_path: Path) -> Iterator[BrokerProcess]:
    """A broker with a short ZooKeeper session, so a freeze of a few seconds expires it."""
    broker = BrokerProcess(0, zk_chroot, shm_path,
                           overrides={"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    broker.start()
    try:
        broker.wait_ready(30)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[TOPIC].result(15)
        yield broker
    finally:
        if broker.is_running():
            os.kill(broker.proc.pid, signal.SIGCONT)
        broker.kill()


@pytest.fixture
def zk_view(zk_chroot: str) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=zk_chroot)
    zk.start(timeout=15)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def test_broker_recovers_from_session_expiry_and_keeps_serving(expiring_broker: BrokerProcess,
                                                                zk_view: KazooClient):
    broker = expiring_broker
    stream = Stream()
    producer = new_producer(broker.bootstrap)
    stream.produce(producer, BATCH)
    before = wait_until(lambda: read_registration(zk_view), 10, "the first registration")
    assert before.controller_id == 0 and before.controller_owner == before.session_id

    for round_no in range(2):
        expire_session(broker, zk_view)
        after = wait_reregistered(zk_view, before)
        assert after.session_id != before.session_id, "the broker came back under its expired session"
        assert after.broker_czxid > before.broker_czxid, "the broker epoch did not move on"
        assert after.controller_id == 0
        assert broker.is_running()
        assert wait_until(lambda: leader_and_controller(broker.bootstrap) == (0, 0), 30,
                          "metadata naming broker 0 leader and controller")

        # The producer that lived through the expiry and a brand-new one both work.
        stream.produce(producer, BATCH)
        stream.produce(new_producer(broker.bootstrap), BATCH)
        stored = read_all(broker.bootstrap)
        for seq, offset in stream.offsets.items():
            assert stored[offset] == (str(seq).encode(), stream.value_of(seq)), \
                f"round {round_no}: record {seq} at offset {offset} changed or vanished"
        before = after

    server_log = (broker.app_log_dir / "server.log").read_text(errors="replace")
    assert server_log.count("registering broker 0 again") == 2, \
        "the broker's log should say once per expiry that it registered again"


def test_repeated_expiry_leaves_one_controller_connection(expiring_broker: BrokerProcess,
                                                          zk_view: KazooClient):
    """The controller keeps one channel per live broker (here: to itself) whatever happens.

    A controller that re-wins the election after an expiry must first let go of what it
    held as the previous controller (watches, channels); otherwise each expiry leaves
    one more connection open and one more copy of every watch firing.
    """
    broker = expiring_broker
    stream = Stream()
    stream.produce(new_producer(broker.bootstrap), 10)
    registration = wait_until(lambda: read_registration(zk_view), 10, "the first registration")
    wait_until(lambda: listener_connections_from(broker.proc.pid, broker.port) == 1, 10,
               "the controller's channel to its own broker")
    for _ in range(2):
        expire_session(broker, zk_view)
        registration = wait_reregistered(zk_view, registration)
        stream.produce(new_producer(broker.bootstrap), 10)  # the new controller has spoken to us
        time.sleep(1)  # let any channel the old controller still holds show itself
        held = listener_connections_from(broker.proc.pid, broker.port)
        assert held == 1, f"after expiry the broker holds {held} controller connections to itself"


def test_a_broker_back_from_expiry_deletes_its_copies_of_topics_deleted_meanwhile(zk_chroot: str, shm_path: Path):
    """Broker 1 is frozen past its session while a topic it holds replicas of is deleted:
    the controller deletes the topic without it, and once it runs again it finds its copies
    orphaned and deletes them, rather than leading, fetching and shrinking the ISR of a
    partition nobody else knows."""
    from kafkalike.client import admin as ours
    from kafkalike.lab.cluster import Cluster

    cluster = Cluster(zk_chroot, shm_path, 2, {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    zk = KazooClient(hosts=zk_chroot)
    try:
        cluster.start()
        zk.start(timeout=15)
        with ours.AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_topics([ours.NewTopic("gone", replica_assignment={0: [1, 0], 1: [0, 1]}),
                                 ours.NewTopic("kept", replica_assignment={0: [1, 0]})])
        frozen = cluster.broker(1)
        copies = [frozen.log_dir / "gone-0", frozen.log_dir / "gone-1", frozen.log_dir / "kept-0"]
        wait_until(lambda: all(d.is_dir() for d in copies), 15, "broker 1's replicas")
        os.kill(frozen.proc.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: zk.exists("/brokers/ids/1") is None, SESSION_TIMEOUT_MS / 1000 * 3,
                       "ZooKeeper to expire the frozen broker's session")
            deleting = AdminClient({"bootstrap.servers": cluster.bootstrap})
            deleting.delete_topics(["gone"])["gone"].result(15)
            wait_until(lambda: zk.exists("/brokers/topics/gone") is None, 15, "the deletion to complete")
            assert copies[0].is_dir()                 # it did not hear of it
        finally:
            os.kill(frozen.proc.pid, signal.SIGCONT)
        wait_until(lambda: zk.exists("/brokers/ids/1") is not None, 30, "broker 1 to register again")
        wait_until(lambda: not copies[0].exists() and not copies[1].exists(), 30,
                   "broker 1 to delete its copies of the deleted topic")
        assert copies[2].is_dir()                     # what still exists stays
        assert "Deleting 2 partitions of topics deleted while this broker was away: gone-0, gone-1" \
            in frozen.server_log.read_text()
        # And it follows the topic that stayed, back in its ISR.
        wait_until(lambda: json.loads(zk.get("/brokers/topics/kept/partitions/0/state")[0])["isr"] in ([0, 1], [1, 0]),
                   60, "broker 1 back in the ISR of kept-0")
    finally:
        zk.stop()
        zk.close()
        cluster.kill()
