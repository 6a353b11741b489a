"""bin/kafkalike-trace.sh against three real brokers: a record's journey, step by step.

On an RF=3 topic with min.insync.replicas=2, acks=all with --consume must show every
step: the producer's (serializer, partitioner, accumulator, request), the leader's append
with the record's offset and its segment file, both followers, the high watermark, the
acknowledgement and the consumer's fetch; client steps in their order, the acks=all
answer after the high watermark covered the record, all times non-negative. acks=1 is
answered once the leader has the record, whatever the high watermark. With the two
followers stopped, acks=all is refused: the answer line carries the leader's
NOT_ENOUGH_REPLICAS, the record fails, the broker steps are not seen, and the tool exits 1.
(The ordering rules themselves are unit-tested: tests/unit/test_cli_trace.py.)
"""
from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

import pytest

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.client.producer import KafkaProducer
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^  (?P<name>.+?)\s{2,}(?P<at>-?\d+\.\d+|-)\s+(?P<delta>[+-]\d+\.\d+)?\s*(?P<detail>.*)$")


def run_trace(bootstrap: str, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    done = subprocess.run([str(REPO / "bin" / "kafkalike-trace.sh"), "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=120)
    rows = []
    for line in done.stdout.splitlines()[2:]:
        match = ROW.match(line)
        if match:
            rows.append(match.groupdict())
    return done, rows


def trace(bootstrap: str, *args: str) -> tuple[str, list[dict]]:
    done, rows = run_trace(bootstrap, *args)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout, rows


def create_topic(bootstrap: str) -> str:
    topic = f"journey-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3,
                                      configs={"min.insync.replicas": "2"})])
    return topic


def test_journey_of_an_acks_all_record(kafka_cluster):
    bootstrap = kafka_cluster.bootstrap
    topic = create_topic(bootstrap)
    with KafkaProducer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for i in range(3):   # the traced record is not the first: offset 3
            producer.send(topic, b"before-%d" % i).get(30)

    out, rows = trace(bootstrap, "--topic", topic, "--key", "k", "--value", "traced", "--acks", "all", "--consume")
    assert out.startswith(f"Journey of one record to {topic}-0 at offset 3 (acks=all"), out
    names = [row["name"] for row in rows]
    at = {row["name"]: float(row["at"]) for row in rows if row["at"] != "-"}
    detail = {row["name"]: row["detail"] for row in rows}
    assert all(t >= 0 for t in at.values()), out
    client = ["send() called", "serializer", "partitioner", "accumulator", "sender: Produce request sent",
              "sender: Produce answer", "acknowledgement (callback)", "consumer: Fetch answer with it",
              "consumer: poll() returned it"]
    assert [n for n in names if n in client] == client, out          # in their order, all there
    assert [at[n] for n in client] == sorted(at[n] for n in client), out
    leader = [n for n in names if n.startswith("leader append")]
    followers = [n for n in names if n.startswith("follower has it")]
    assert len(leader) == 1 and len(followers) == 2, out
    assert "offset 3" in detail[leader[0]] and re.search(r"0{17}\d{3}\.log", detail[leader[0]]), out
    assert detail["acknowledgement (callback)"] == "offset 3"
    assert "batch created for partition 0" in detail["accumulator"]
    for step in leader + followers + ["high watermark covers it"]:
        assert step in at, out                                         # every replica was seen
        assert at["sender: Produce request sent"] <= at[step], out
    # acks=all: the leader and the in-sync followers had it, and the high watermark passed
    # it, no later than the answer.
    assert at[leader[0]] <= at["high watermark covers it"] <= at["sender: Produce answer"], out
    assert "value b'traced'" in detail["consumer: poll() returned it"]

    # acks=1: the answer comes once the leader has appended; the followers and the high
    # watermark are seen by the probes, before or after it.
    out, rows = trace(bootstrap, "--topic", topic, "--value", "once", "--acks", "1")
    assert out.startswith(f"Journey of one record to {topic}-0 at offset 4 (acks=1"), out
    at = {row["name"]: float(row["at"]) for row in rows if row["at"] != "-"}
    detail = {row["name"]: row["detail"] for row in rows}
    leader = next(n for n in at if n.startswith("leader append"))
    assert detail["acknowledgement (callback)"] == "offset 4"
    assert "acks=1" in detail["sender: Produce request sent"]
    assert at[leader] <= at["sender: Produce answer"] <= at["acknowledgement (callback)"], out
    assert "offset 4" in detail[leader]
    assert len([n for n in at if n.startswith("follower has it")]) == 2, out
    # Nothing but a probe can show the high watermark for acks=1 (the answer does not wait for it).
    assert detail["high watermark covers it"].endswith("(seen by a probe)"), out
    assert "consumer: Fetch answer with it" not in detail                  # no --consume

    # A topic that is not there: a message, not a traceback (the tool creates no topics).
    done = subprocess.run([str(REPO / "bin" / "kafkalike-trace.sh"), "--bootstrap-server", bootstrap,
                           "--topic", "no-such-topic"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == "Error: Topic no-such-topic does not exist (kafkalike-trace does not create topics)\n"


def test_acks_all_refused_below_min_insync_replicas(kafka_cluster):
    bootstrap = kafka_cluster.bootstrap
    topic = create_topic(bootstrap)
    with KafkaProducer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        producer.send(topic, b"before").get(30)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        leader = admin.describe_topics([topic])[topic].partitions[0].leader
        # Both followers stop (SIGTERM: a clean shutdown); the ISR is then the leader alone.
        for broker in kafka_cluster.brokers:
            if broker.broker_id != leader:
                broker.stop()
        wait_until(lambda: list(admin.describe_topics([topic])[topic].partitions[0].isr) == [leader],
                   what="the ISR shrunk to the leader")

    done, rows = run_trace(bootstrap, "--topic", topic, "--value", "refused", "--acks", "all")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == "", done.stderr
    out = done.stdout
    assert out.startswith(f"Journey of one record to {topic}-0 at offset unknown (acks=all"), out
    assert f"leader {leader}," in out.splitlines()[0] and f"isr {leader})" in out.splitlines()[0], out
    detail = {row["name"]: row["detail"] for row in rows}
    unseen = {row["name"] for row in rows if row["at"] == "-"}
    # The leader's own refusal, on the answer line; the record failed.
    assert "NOT_ENOUGH_REPLICAS" in detail["sender: Produce answer"], out
    assert detail["acknowledgement (callback)"].startswith("failed: "), out
    broker_steps = {name for name in detail if name.startswith(("leader append", "follower has it"))}
    assert len(broker_steps) == 3 and broker_steps | {"high watermark covers it"} <= unseen, out
    assert all(detail[name] == "not seen" for name in broker_steps | {"high watermark covers it"}), out

