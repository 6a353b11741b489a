"""bin/kafkalike-trace.sh against three real brokers: a record's journey, step by step.

On an RF=3 topic with min.insync.replicas=2, acks=all with --consume must show every
step: the producer's (serializer, partitioner, accumulator, request), the leader's append
with the record's offset and its segment file, both followers, the high watermark, the
acknowledgement and the consumer's fetch; client steps in their order, the acks=all
answer after the high watermark covered the record, all times non-negative.
"""
from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

import pytest

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.client.producer import KafkaProducer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^  (?P<name>.+?)\s{2,}(?P<at>-?\d+\.\d+|-)\s+(?P<delta>[+-]\d+\.\d+)?\s*(?P<detail>.*)$")


def trace(bootstrap: str, *args: str) -> tuple[str, list[dict]]:
    done = subprocess.run([str(REPO / "bin" / "kafkalike-trace.sh"), "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    rows = []
    for line in done.stdout.splitlines()[2:]:
        match = ROW.match(line)
        if match:
            rows.append(match.groupdict())
    return done.stdout, rows


def test_journey_of_an_acks_all_record(kafka_cluster):
    bootstrap = kafka_cluster.bootstrap
    topic = f"journey-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3,
                                      configs={"min.insync.replicas": "2"})])
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

    # A topic that is not there: a message, not a traceback (the tool creates no topics).
    done = subprocess.run([str(REPO / "bin" / "kafkalike-trace.sh"), "--bootstrap-server", bootstrap,
                           "--topic", "no-such-topic"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == "Error: Topic no-such-topic does not exist (kafkalike-trace does not create topics)\n"
