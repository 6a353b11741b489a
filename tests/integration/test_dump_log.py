"""bin/kafka-dump-log.sh --offsets-decoder on the __consumer_offsets segment of a real broker.

A librdkafka consumer joins a group, gets its partition and commits an offset with
metadata; the tool then reads the group's partition of __consumer_offsets straight from
the broker's log directory and must show the commit and the group's metadata (protocol,
generation, the member and its assignment) as Kafka 2.8's OffsetsMessageParser prints them.
When the member leaves, the group's next record is the empty group of the next generation.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.coordinator.group_metadata_manager import partition_for

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, Kafka's default, as the lab broker runs it


def dump_offsets_segment(broker, group: str) -> tuple[Path, list[str]]:
    segment = broker.log_dir / f"__consumer_offsets-{partition_for(group, OFFSETS_PARTITIONS)}" / \
        "00000000000000000000.log"
    done = subprocess.run([str(REPO_ROOT / "bin" / "kafka-dump-log.sh"), "--offsets-decoder", "--files",
                           str(segment)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return segment, done.stdout.splitlines()


def data_of(lines: list[str], group: str) -> list[tuple[str, str]]:
    """(key, payload) of each record line about the group."""
    found = []
    for line in lines:
        match = re.search(r" key: (\S+) payload: (.*)$", line)
        if match and (f"::group={group}," in match.group(1) or match.group(1).endswith(f"::group={group}")):
            found.append((match.group(1), match.group(2)))
    return found


def wait_for_lines(broker, group: str, done, what: str) -> list[tuple[str, str]]:
    deadline = time.monotonic() + 30
    while True:
        _, lines = dump_offsets_segment(broker, group)
        records = data_of(lines, group)
        if done(records):
            return records
        assert time.monotonic() < deadline, f"no {what} in the dump; the group's records: {records}"
        time.sleep(0.2)


def test_offsets_decoder_shows_a_librdkafka_groups_commit_and_metadata(broker):
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"dumped-{suffix}", f"dump-group-{suffix}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "dumper",
                         "enable.auto.commit": False, "session.timeout.ms": 6000,
                         "partition.assignment.strategy": "range"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer never got its partition"
            consumer.poll(0.1)
        consumer.commit(offsets=[TopicPartition(topic, 0, 3, metadata="first-batch")], asynchronous=False)
        member_id = consumer.memberid()

        records = wait_for_lines(broker, group, lambda rs: any(k.startswith("offset_commit") for k, _ in rs),
                                 "offset commit")
    finally:
        consumer.close()
    assert member_id.startswith("dumper-")
    commits = [p for k, p in records if k == f"offset_commit::group={group},partition={topic}-0"]
    # confluent-kafka-python hands librdkafka the metadata's C string with its terminating NUL
    # (metadata_size = strlen + 1), so the stored metadata may end in \x00, printed as it is.
    assert [p.rstrip("\x00") for p in commits] == ["offset=3,metadata=first-batch"]
    metadata = [payload for key, payload in records if key == f"group_metadata::group={group}"]
    assert metadata[0] == ('{"protocolType":"consumer","protocol":"range","generationId":1,'
                           f'"assignment":"{{{member_id}=[{topic}-0]}}"}}')
    assert json.loads(metadata[0])["assignment"] == f"{{{member_id}=[{topic}-0]}}"

    # The member left: the group is stored empty, in its next generation, with no protocol.
    records = wait_for_lines(broker, group, lambda rs: sum(k.startswith("group_metadata") for k, _ in rs) >= 2,
                             "empty group")
    assert [p for k, p in records if k.startswith("group_metadata")][-1] == (
        '{"protocolType":"consumer","protocol":null,"generationId":2,"assignment":"{}"}')
