"""Consumer groups run by real clients against our group coordinator.

confluent-kafka (librdkafka), kafka-python and aiokafka members split a 6-partition
topic between them (every partition owned by exactly one member), rebalance when
members join, leave or die (kill -9 of a member process: its partitions move after
session.timeout.ms), keep their commits across a broker restart, and kafka-python's
admin client lists, describes and deletes the groups. Clients are the judges: what
each member reports as its assignment is what is checked.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import CommitFailedError, RebalanceInProgressError
from kafka.coordinator.assignors.range import RangePartitionAssignor

from tests.waiting import wait_until

pytestmark = pytest.mark.interop

PARTITIONS = 6
SESSION_MS = 6000
REPO_ROOT = Path(__file__).resolve().parents[2]
# Fast heartbeats: members learn of a rebalance from a heartbeat answer.
CONFLUENT_MEMBER = {"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500,
                    "auto.offset.reset": "earliest", "enable.auto.commit": False}


@pytest.fixture(scope="module")
def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture
def group(topic_name) -> str:
    return "group-" + topic_name


def create_topic(admin: AdminClient, name: str, partitions: int = PARTITIONS) -> None:
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=15).values():
        future.result()


def produce(bootstrap: str, topic: str, count: int, partitions: int = PARTITIONS) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=b"%d" % i, value=b"value-%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


def exactly_once_each(assignments, partitions: int = PARTITIONS) -> bool:
    """Every partition owned by exactly one member, and every member owns some."""
    owned = [p for a in assignments for p in a]
    return sorted(owned) == list(range(partitions)) and all(assignments)


class ConfluentMember:
    """A confluent-kafka group member; what it owns comes from its rebalance callbacks."""

    def __init__(self, bootstrap: str, group: str, topic: str, **config):
        self.owned: set[int] = set()
        self.consumed: list[tuple[int, int]] = []
        self.assigned_calls = 0
        self.cooperative = config.get("partition.assignment.strategy") == "cooperative-sticky"
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **CONFLUENT_MEMBER, **config})
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, consumer, partitions) -> None:
        self.assigned_calls += 1
        if self.cooperative:
            consumer.incremental_assign(partitions)
            self.owned |= {p.partition for p in partitions}
        else:
            consumer.assign(partitions)
            self.owned = {p.partition for p in partitions}

    def _revoked(self, consumer, partitions) -> None:
        if self.cooperative:
            consumer.incremental_unassign(partitions)
        self.owned -= {p.partition for p in partitions}

    def poll(self) -> None:
        msg = self.consumer.poll(0.05)
        if msg is not None and not msg.error():
            self.consumed.append((msg.partition(), msg.offset()))

    def close(self) -> None:
        self.consumer.close()


def drive(members, predicate, timeout: float = 30.0, what: str = "the group to settle"):
    """Poll every member in turn until predicate() holds."""
    def step():
        for m in members:
            m.poll()
        return predicate()
    try:
        return wait_until(step, timeout, interval=0, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; members own {owned(members)}") from None


def owned(members) -> list[list[int]]:
    return [sorted(m.owned) for m in members]


# -- confluent-kafka ---------------------------------------------------------------------

def test_confluent_members_split_the_partitions_and_rebalance_on_join_and_leave(broker, admin, topic_name, group):
    create_topic(admin, topic_name)
    members = [ConfluentMember(broker.bootstrap, group, topic_name, **{"client.id": f"member-{i}"}) for i in range(3)]
    try:
        drive(members, lambda: exactly_once_each(owned(members)))
        produce(broker.bootstrap, topic_name, 60)         # after the group settled: no replays
        drive(members, lambda: sum(len(m.consumed) for m in members) == 60, what="60 records")
        consumed = sorted(c for m in members for c in m.consumed)
        assert consumed == sorted((p, o) for p in range(PARTITIONS) for o in range(10))
        for m in members:
            m.consumer.commit(asynchronous=False)

        members.append(ConfluentMember(broker.bootstrap, group, topic_name))
        drive(members, lambda: len([a for a in owned(members) if a]) == 4 and exactly_once_each(owned(members)),
              what="a fourth member to get partitions")
        assert all(len(a) in (1, 2) for a in owned(members))

        leaving = members.pop(0)
        leaving.close()                                  # LeaveGroup: no session timeout to wait for
        drive(members, lambda: exactly_once_each(owned(members)), what="the three left to take over")
        # Nothing was consumed twice: new owners resumed from the committed offsets.
        assert sum(len(m.consumed) for m in members) + len(leaving.consumed) == 60
        committed = members[0].consumer.committed([TopicPartition(topic_name, p) for p in range(PARTITIONS)],
                                                  timeout=10)
        assert [tp.offset for tp in committed] == [10] * PARTITIONS
    finally:
        for m in members:
            m.close()


MEMBER_SCRIPT = r"""
import json, sys
from confluent_kafka import Consumer
bootstrap, group, topic = sys.argv[1:4]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": %d,
              "heartbeat.interval.ms": 500, "enable.auto.commit": False})
def report(consumer, partitions):
    consumer.assign(partitions)
    print(json.dumps(sorted(p.partition for p in partitions)), flush=True)
def revoked(consumer, partitions):
    print("[]", flush=True)
c.subscribe([topic], on_assign=report, on_revoke=revoked)
while True:
    c.poll(0.1)
""" % SESSION_MS


class MemberProcess:
    """A confluent-kafka member in its own process, reporting its assignment on stdout."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.owned: list[int] = []
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        self.proc = subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, bootstrap, group, topic],
                                     stdout=subprocess.PIPE, text=True, env=env)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.owned = json.loads(line)

    def poll(self) -> None:
        time.sleep(0.01)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def test_killed_member_loses_its_partitions_after_the_session_timeout(broker, admin, topic_name, group):
    create_topic(admin, topic_name)
    processes = [MemberProcess(broker.bootstrap, group, topic_name) for _ in range(2)]
    survivor = ConfluentMember(broker.bootstrap, group, topic_name)
    try:
        everyone = processes + [survivor]
        drive(everyone, lambda: exactly_once_each([sorted(p.owned) for p in everyone]))
        victim, other = processes
        lost = set(victim.owned)
        victim.kill()                                    # kill -9: no LeaveGroup, just silence
        killed_at = time.monotonic()
        alive = [other, survivor]
        drive(alive, lambda: exactly_once_each([sorted(p.owned) for p in alive]), timeout=SESSION_MS / 1000 + 25,
              what="the survivors to take the dead member's partitions")
        assert time.monotonic() - killed_at >= SESSION_MS / 1000 * 0.75   # the session had to run out first
        assert lost <= set(other.owned) | survivor.owned
    finally:
        survivor.close()
        for p in processes:
            p.kill()


def test_cooperative_sticky_members_only_give_up_what_moves(broker, admin, topic_name, group):
    create_topic(admin, topic_name)
    config = {"partition.assignment.strategy": "cooperative-sticky"}
    members = [ConfluentMember(broker.bootstrap, group, topic_name, **config) for _ in range(2)]
    try:
        drive(members, lambda: exactly_once_each(owned(members)))
        before = [set(m.owned) for m in members]
        members.append(ConfluentMember(broker.bootstrap, group, topic_name, **config))
        drive(members, lambda: exactly_once_each(owned(members)) and all(len(a) == 2 for a in owned(members)),
              what="a third cooperative member to get two partitions")
        # Sticky: the first two kept two of their three partitions each and gave one away.
        assert all(set(m.owned) <= was for m, was in zip(members, before))
    finally:
        for m in members:
            m.close()


def test_restarted_static_member_gets_its_partitions_back_without_a_rebalance(broker, admin, topic_name, group):
    create_topic(admin, topic_name)
    static = {"group.instance.id": "instance-1", "session.timeout.ms": 30000}
    members = [ConfluentMember(broker.bootstrap, group, topic_name, **static),
               ConfluentMember(broker.bootstrap, group, topic_name)]
    try:
        drive(members, lambda: exactly_once_each(owned(members)))
        mine, others = set(members[0].owned), set(members[1].owned)
        other_rebalances = members[1].assigned_calls
        members[0].close()                               # a static member leaves no LeaveGroup behind
        members[0] = ConfluentMember(broker.bootstrap, group, topic_name, **static)
        drive(members, lambda: members[0].owned == mine, what="the static member to get its partitions back")
        for _ in range(40):                              # 2 s of heartbeats: no rebalance follows
            for m in members:
                m.poll()
        assert members[1].owned == others and members[1].assigned_calls == other_rebalances
    finally:
        for m in members:
            m.close()


# -- kafka-python and aiokafka ------------------------------------------------------------

class ThreadMember:
    """A kafka-python KafkaConsumer in its own thread, as applications run them."""

    def __init__(self, bootstrap: str, group: str, topic: str, **config):
        self.owned: set[int] = set()
        self.consumed: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._config = dict(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=SESSION_MS,
                            heartbeat_interval_ms=500, auto_offset_reset="earliest", enable_auto_commit=False,
                            **config)
        self._topic = topic
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            # The topic's metadata before the subscription: kafka-python may otherwise join
            # (and, as leader, assign) before its first metadata answer, and then depends on
            # a later metadata refresh to rejoin.
            consumer = KafkaConsumer(**self._config)
            consumer.partitions_for_topic(self._topic)
            consumer.subscribe([self._topic])
            try:
                while not self._stop.is_set():
                    for tp, records in consumer.poll(timeout_ms=100).items():
                        self.consumed.extend((r.partition, r.offset) for r in records)
                    self.owned = {tp.partition for tp in consumer.assignment()}
                    if self.consumed and not self._stop.is_set():
                        try:
                            consumer.commit()
                        except (CommitFailedError, RebalanceInProgressError):
                            pass    # as applications do: poll again (rejoin), commit again
            finally:
                consumer.close()
        except BaseException as exc:      # surfaced by the test through close()
            self.error = exc

    def poll(self) -> None:
        time.sleep(0.02)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(30)
        if self.error is not None:
            raise self.error


def test_kafka_python_members_share_consume_and_commit(broker, admin, topic_name, group):
    create_topic(admin, topic_name)
    members = [ThreadMember(broker.bootstrap, group, topic_name, client_id=f"kp-{i}") for i in range(3)]
    try:
        drive(members, lambda: exactly_once_each(owned(members)))
        produce(broker.bootstrap, topic_name, 60)
        drive(members, lambda: sum(len(m.consumed) for m in members) == 60, what="60 records")
        assert sorted(c for m in members for c in m.consumed) == sorted(
            (p, o) for p in range(PARTITIONS) for o in range(10))
        # Each member commits after the poll that consumed: the group's offsets reach the
        # log ends while the members run (a member stopped right after its last poll, as
        # the test stops them, would not commit that poll's records).
        kp_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            def committed() -> dict[int, int]:
                offsets = kp_admin.list_group_offsets({group: None})[group]
                return {tp.partition: o.offset for tp, o in offsets.items()}
            drive(members, lambda: committed() == {p: 10 for p in range(PARTITIONS)},
                  what="offset 10 committed on every partition")
        finally:
            kp_admin.close()
    finally:
        for m in members:
            m.close()


def test_aiokafka_members_share_the_partitions(broker, admin, topic_name, group):
    from aiokafka import AIOKafkaConsumer
    create_topic(admin, topic_name)

    async def scenario():
        consumers = [AIOKafkaConsumer(topic_name, bootstrap_servers=broker.bootstrap, group_id=group,
                                      session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500,
                                      auto_offset_reset="earliest") for _ in range(2)]
        for c in consumers:
            await c.start()
        seen = []
        produced = None
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                batches = await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))
                seen.extend((r.partition, r.offset) for b in batches for records in b.values() for r in records)
                assignments = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
                if produced is None and exactly_once_each(assignments):
                    # Records only once the group settled, so none is read twice.
                    produced = asyncio.get_running_loop().run_in_executor(
                        None, produce, broker.bootstrap, topic_name, 60)
                if produced is not None and produced.done() and len(seen) == 60:
                    return assignments, seen
            raise AssertionError(f"no settled group: {assignments}, {len(seen)} records")
        finally:
            for c in consumers:
                await c.stop()

    assignments, seen = asyncio.run(scenario())
    assert sorted(seen) == sorted((p, o) for p in range(PARTITIONS) for o in range(10))


def test_confluent_and_kafka_python_members_split_by_range(broker, admin, topic_name, group):
    create_topic(admin, topic_name)
    members = [ConfluentMember(broker.bootstrap, group, topic_name, **{"partition.assignment.strategy": "range"}),
               ThreadMember(broker.bootstrap, group, topic_name,
                            partition_assignment_strategy=[RangePartitionAssignor])]
    try:
        drive(members, lambda: exactly_once_each(owned(members)))
        # range: each member gets a contiguous half of the topic
        assert sorted(owned(members)) == [[0, 1, 2], [3, 4, 5]]
    finally:
        for m in members:
            m.close()


# -- admin and durability ------------------------------------------------------------------

def test_kafka_python_admin_lists_describes_and_deletes_groups(broker, admin, topic_name, group):
    create_topic(admin, topic_name)
    member = ConfluentMember(broker.bootstrap, group, topic_name, **{"client.id": "described-member"})
    kp_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        drive([member], lambda: len(member.owned) == PARTITIONS)
        listed = {g["group_id"]: g for g in kp_admin.list_groups()}
        assert (listed[group]["protocol_type"], listed[group]["group_state"]) == ("consumer", "Stable")
        described = kp_admin.describe_groups([group])[group]
        assert (described["group_state"], described["protocol_type"], described["protocol_data"]) == (
            "Stable", "consumer", "range")
        [m] = described["members"]
        assert (m["client_id"], m["client_host"]) == ("described-member", "/127.0.0.1")
        assert m["member_metadata"]["topics"] == [topic_name]
        assert [(t["topic"], sorted(t["partitions"])) for t in m["member_assignment"]["assigned_partitions"]] == [
            (topic_name, list(range(PARTITIONS)))]
        member.consumer.commit(offsets=[TopicPartition(topic_name, 0, 0)], asynchronous=False)
        member.close()
        wait_until(lambda: kp_admin.describe_groups([group])[group]["group_state"] == "Empty",
                   what="the group to become Empty")
        assert kp_admin.describe_groups([group])[group]["members"] == []
        assert kp_admin.delete_groups([group]) == {group: "OK"}
        assert group not in {g["group_id"] for g in kp_admin.list_groups()}
        assert kp_admin.delete_groups([group]) == {group: "GroupIdNotFoundError"}
    finally:
        kp_admin.close()


def test_committed_offsets_survive_a_broker_restart(fresh_broker, topic_name, group):
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})
    create_topic(admin, topic_name, 2)
    produce(fresh_broker.bootstrap, topic_name, 30, partitions=2)
    first = ConfluentMember(fresh_broker.bootstrap, group, topic_name)
    try:
        drive([first], lambda: len(first.consumed) == 30)
        first.consumer.commit(offsets=[TopicPartition(topic_name, 0, 10), TopicPartition(topic_name, 1, 5)],
                              asynchronous=False)
    finally:
        first.close()
    fresh_broker.stop()
    fresh_broker.restart()
    second = ConfluentMember(fresh_broker.bootstrap, group, topic_name)
    try:
        drive([second], lambda: len(second.consumed) == 15, timeout=60, what="the rest after the commits")
        assert sorted(second.consumed) == [(0, o) for o in range(10, 15)] + [(1, o) for o in range(5, 15)]
        committed = second.consumer.committed([TopicPartition(topic_name, p) for p in (0, 1)], timeout=10)
        assert [tp.offset for tp in committed] == [10, 5]
    finally:
        second.close()
