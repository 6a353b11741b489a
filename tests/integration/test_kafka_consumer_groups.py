"""kafka-consumer-groups against a real broker, with groups made by confluent-kafka.

librdkafka is the judge on both ends: its consumers make the groups and commit known
offsets that the tool must report (CURRENT-OFFSET, LOG-END-OFFSET, LAG, members and
their assignments), and after the tool resets or deletes something a fresh librdkafka
consumer in the same group shows what a user would see: where it starts reading.
"""
from __future__ import annotations

import io
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalike.cli.consumer_groups import main
from kafkalike.client.admin import AdminClient, KafkaAdminError, NewTopic
from kafkalike.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 3
PER_PARTITION = 10
MEMBER = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "enable.auto.commit": False,
          "auto.offset.reset": "earliest", "client.id": "judge"}


@dataclass
class Result:
    code: int
    out: str
    err: str


def tool(broker, *argv: str) -> Result:
    """kafka-consumer-groups in this process (the shim is exercised on its own)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["--bootstrap-server", broker.bootstrap, *argv], out=out, err=err)
    return Result(code, out.getvalue(), err.getvalue())


def table(text: str) -> list[list[str]]:
    """The rows of a printed table (header included), split on runs of spaces."""
    return [line.split() for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def admin(broker):
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    yield client
    client.close()


@pytest.fixture
def names():
    suffix = uuid.uuid4().hex[:8]
    return f"orders-{suffix}", f"billing-{suffix}"


@pytest.fixture
def topic(admin, broker, names) -> str:
    """A 3-partition topic with records 0..9 in every partition."""
    name = names[0]
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(PARTITIONS * PER_PARTITION):
        producer.produce(name, value=b"record-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return name


def member(broker, group: str, topic: str, **config) -> Consumer:
    """A live group member that owns every partition once this returns."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, **MEMBER, **config})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < PARTITIONS:
        assert time.monotonic() < deadline, "the member never got its partitions"
        consumer.poll(0.1)
    return consumer


def commit(consumer: Consumer, topic: str, offsets: dict[int, int]) -> None:
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def first_offsets(broker, group: str, topic: str, expect: int) -> dict[int, int]:
    """Where a new member of the group starts in each partition: the offset of the first
    record it receives (auto.offset.reset=latest, so only a commit can put it earlier).
    It polls until `expect` partitions delivered and a little longer, to see any extra."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, **MEMBER,
                         "auto.offset.reset": "latest"})
    consumer.subscribe([topic])
    seen: dict[int, int] = {}
    deadline = time.monotonic() + 30
    settled_at = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                seen.setdefault(msg.partition(), msg.offset())
            if settled_at is None and len(consumer.assignment()) == PARTITIONS and len(seen) >= expect:
                settled_at = time.monotonic()
            if settled_at is not None and time.monotonic() - settled_at > 1.5:
                break
    finally:
        consumer.close()
    return seen


def test_describe_shows_offsets_lag_members_and_state_of_a_live_group(broker, topic, names):
    group = names[1]
    consumer = member(broker, group, topic)
    try:
        commit(consumer, topic, {0: 4, 1: 10})
        offsets = tool(broker, "--describe", "--group", group)
        assert (offsets.code, offsets.err) == (0, "")
        rows = table(offsets.out)
        assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                           "CONSUMER-ID", "HOST", "CLIENT-ID"]
        consumer_id = rows[1][6]
        assert consumer_id.startswith("judge-")
        assert [r[:6] for r in rows[1:]] == [[group, topic, "0", "4", "10", "6"],
                                             [group, topic, "1", "10", "10", "0"],
                                             [group, topic, "2", "-", "10", "-"]]
        assert all(r[6:] == [consumer_id, "/127.0.0.1", "judge"] for r in rows[1:])
        # Kafka's padding: name columns as wide as their longest value (at least 15), the rest fixed.
        gw, tw, cw = max(15, len(group)), max(15, len(topic)), max(15, len(consumer_id))
        assert offsets.out.splitlines()[:2] == ["", f"{'GROUP':<{gw}} {'TOPIC':<{tw}} PARTITION  CURRENT-OFFSET  "
                                                    f"LOG-END-OFFSET  LAG             {'CONSUMER-ID':<{cw}} "
                                                    f"HOST            CLIENT-ID"]
        assert offsets.out.splitlines()[2] == (f"{group:<{gw}} {topic:<{tw}} 0          4               10        "
                                               f"      6               {consumer_id:<{cw}} /127.0.0.1      judge")

        members = tool(broker, "--describe", "--group", group, "--members", "--verbose")
        assert table(members.out) == [
            ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"],
            [group, consumer_id, "/127.0.0.1", "judge", "3", f"{topic}(0,1,2)"]]

        state = tool(broker, "--describe", "--group", group, "--state")
        assert table(state.out) == [["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                                    [group, f"{broker.bootstrap}", "(0)", "range", "Stable", "1"]]

        listed = tool(broker, "--list", "--state", "Stable")
        assert [group, "Stable"] in table(listed.out)
        # An active group's offsets cannot be reset: Kafka's refusal, and nothing changes.
        refused = tool(broker, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute")
        assert f"Error: Assignments can only be reset if the group '{group}' is inactive, but the current state " \
               "is Stable." in refused.out
    finally:
        consumer.close()
    # The commits stand: a new member starts at offset 4 of partition 0, and gets nothing
    # from partition 1 (committed at its end) or 2 (no commit: latest).
    assert first_offsets(broker, group, topic, 1) == {0: 4}


def test_an_empty_group_lists_its_commits_without_consumers(broker, topic, names):
    group = names[1]
    consumer = member(broker, group, topic)
    commit(consumer, topic, {0: 7, 2: 1})
    consumer.close()
    result = tool(broker, "--describe", "--group", group)
    assert result.err == f"\nConsumer group '{group}' has no active members.\n"
    assert table(result.out)[1:] == [[group, topic, "0", "7", "10", "3", "-", "-", "-"],
                                     [group, topic, "2", "1", "10", "9", "-", "-", "-"]]
    listed = tool(broker, "--list")
    assert group in listed.out.split()
    empty = tool(broker, "--list", "--state", "Empty")
    assert [group, "Empty"] in table(empty.out) and table(empty.out)[0] == ["GROUP", "STATE"]


def test_reset_to_earliest_executes_and_the_group_resumes_from_zero(broker, topic, names):
    group = names[1]
    consumer = member(broker, group, topic)
    commit(consumer, topic, {0: 8, 1: 9, 2: 5})
    consumer.close()

    dry = tool(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert dry.err.startswith("WARN: No action will be performed as the --execute option is missing.")
    assert table(dry.out) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                              *([group, topic, str(p), "0"] for p in range(PARTITIONS))]
    assert "8" in table(tool(broker, "--describe", "--group", group).out)[1]     # a dry run changes nothing

    done = tool(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert (done.code, done.err, table(done.out)) == (0, "", table(dry.out))
    assert first_offsets(broker, group, topic, 3) == {0: 0, 1: 0, 2: 0}


def test_reset_scenarios_compute_kafkas_new_offsets(broker, topic, names, admin):
    group = names[1]
    consumer = member(broker, group, topic)
    commit(consumer, topic, {0: 5, 1: 5, 2: 5})
    consumer.close()

    def plan(*how: str) -> dict[int, str]:
        result = tool(broker, "--reset-offsets", "--group", group, "--dry-run", *how)
        assert result.code == 0, result.out + result.err
        return {int(r[2]): r[3] for r in table(result.out)[1:]}

    assert plan("--all-topics", "--shift-by", "-2") == {0: "3", 1: "3", 2: "3"}
    assert plan("--topic", f"{topic}:1,2", "--to-offset", "7") == {1: "7", 2: "7"}
    assert plan("--topic", topic, "--to-latest") == {0: "10", 1: "10", 2: "10"}
    assert plan("--topic", topic, "--to-datetime", "2000-01-01T00:00:00.000") == {0: "0", 1: "0", 2: "0"}
    clamped = tool(broker, "--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--to-offset", "99",
                   "--dry-run")
    assert f"New offset (99) is higher than latest offset for topic partition {topic}-0. Value will be set to 10" \
        in clamped.err
    exported = tool(broker, "--reset-offsets", "--group", group, "--all-topics", "--shift-by", "1", "--dry-run",
                    "--export")
    assert exported.out == f"{topic},0,6\n{topic},1,6\n{topic},2,6\n\n"
    # Dry runs leave the commits alone.
    assert {tp: o.offset for tp, o in admin.list_group_offsets(group).items()} == {
        (topic, 0): 5, (topic, 1): 5, (topic, 2): 5}


def test_delete_refuses_a_live_group_then_deletes_it_once_empty(broker, topic, names):
    group = names[1]
    consumer = member(broker, group, topic)
    commit(consumer, topic, {0: 3})
    refused = tool(broker, "--delete", "--group", group)
    assert refused.out == ("\nError: Deletion of some consumer groups failed:\n"
                           f"* Group '{group}' could not be deleted due to: java.util.concurrent.ExecutionException: "
                           "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.\n")
    consumer.close()
    deleted = tool(broker, "--delete", "--group", group)
    assert (deleted.code, deleted.out) == (0, f"Deletion of requested consumer groups ('{group}') was successful.\n")
    gone = tool(broker, "--describe", "--group", group)
    assert gone.out == f"\nError: Consumer group '{group}' does not exist.\n"
    assert group not in tool(broker, "--list").out.split()
    # Its commits went with it: a new member starts where auto.offset.reset says (the end).
    assert first_offsets(broker, group, topic, 0) == {}


def test_delete_offsets_of_an_empty_group_and_the_refusal_for_a_subscribed_one(broker, topic, names):
    group = names[1]
    consumer = member(broker, group, topic)
    commit(consumer, topic, {0: 2, 1: 2})
    subscribed = tool(broker, "--delete-offsets", "--group", group, "--topic", f"{topic}:0")
    assert "Error: Encounter some partition level error, see the follow-up details:" in subscribed.out
    assert table(subscribed.out)[-1] == [topic, "0", "Error:", "org.apache.kafka.common.errors."
                                         "GroupSubscribedToTopicException:", *("Deleting offsets of a topic is "
                                         "forbidden while the consumer group is actively subscribed to it.").split()]
    consumer.close()
    done = tool(broker, "--delete-offsets", "--group", group, "--topic", f"{topic}:0")
    assert done.out.startswith(f"Request succeed for deleting offsets with topic {topic}:0 group {group}\n")
    assert table(done.out)[-1] == [topic, "0", "Successful"]
    rows = table(tool(broker, "--describe", "--group", group).out)
    assert [r[2:4] for r in rows[1:]] == [["1", "2"]]
    missing = tool(broker, "--delete-offsets", "--group", "no-such-" + group, "--topic", f"{topic}:0")
    assert f"Error: 'no-such-{group}' does not exist." in missing.out


def test_admin_client_offset_changes_need_an_inactive_group(broker, topic, names, admin):
    group = names[1]
    consumer = member(broker, group, topic)
    try:
        with pytest.raises(KafkaAdminError) as refused:
            admin.alter_group_offsets(group, {(topic, 0): 1})
        assert refused.value.code == ErrorCode.UNKNOWN_MEMBER_ID
        [description] = admin.describe_groups([group]).values()
        assert description.state == "Stable" and description.partition_assignor == "range"
        assert description.members[0].assignment == tuple((topic, p) for p in range(PARTITIONS))
        assert description.coordinator.id == 0 == admin.find_coordinator(group).id
    finally:
        consumer.close()
    admin.alter_group_offsets(group, {(topic, 0): 6, (topic, 2): 9})
    assert first_offsets(broker, group, topic, 2) == {0: 6, 2: 9}


def test_the_shell_script_is_the_tool(broker, topic, names):
    group = names[1]
    consumer = member(broker, group, topic)
    commit(consumer, topic, {1: 4})
    consumer.close()
    done = subprocess.run([str(REPO_ROOT / "bin" / "kafka-consumer-groups.sh"), "--bootstrap-server",
                           broker.bootstrap, "--describe", "--group", group], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    assert table(done.stdout)[1] == [group, topic, "1", "4", "10", "6", "-", "-", "-"]
    usage = subprocess.run([str(REPO_ROOT / "bin" / "kafka-consumer-groups.sh")], capture_output=True, text=True,
                           timeout=60)
    assert usage.returncode == 1 and usage.stderr.startswith('Missing required argument "[bootstrap-server]"')
