"""kafka-verifiable-producer and kafka-verifiable-consumer together, as Kafka's system tests use them.

The tools run as real processes through their bin/ scripts against a real broker, and
the test reads only what they print: the producer's acknowledgements are the truth,
and the consumers' JSON events must show a group that splits the partitions, reads
every acknowledged record exactly once, commits what it read, and hands a stopped
member's partitions (from its committed offsets) to the member that stays.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.fault.cluster_view import create_topic
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = 3
ALL = {0, 1, 2}


def tool_env() -> dict[str, str]:
    return {**os.environ, "PYTHON": sys.executable}


class ToolProcess:
    """A bin/ tool running in the background, its stdout parsed into events as they come."""

    def __init__(self, script: str, *args: str) -> None:
        self.process = subprocess.Popen([str(REPO / "bin" / script), *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=tool_env())
        self.events: list[dict] = []
        self.stderr = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._errors = threading.Thread(target=self._read_errors, daemon=True)
        self._errors.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.events.append(json.loads(line))

    def _read_errors(self) -> None:
        self.stderr = self.process.stderr.read()

    def named(self, name: str) -> list[dict]:
        return [e for e in list(self.events) if e["name"] == name]

    def owned(self) -> set[int] | None:
        """The partitions the last rebalance event left this member with (None before any)."""
        last = next((e for e in reversed(list(self.events))
                     if e["name"] in ("partitions_assigned", "partitions_revoked")), None)
        if last is None or last["name"] == "partitions_revoked":
            return None
        return {p["partition"] for p in last["partitions"]}

    def consumed(self) -> Counter:
        """(partition, offset) of every record the member reported consumed, with multiplicity."""
        seen: Counter = Counter()
        for event in self.named("records_consumed"):
            for summary in event["partitions"]:
                assert summary["count"] == summary["maxOffset"] - summary["minOffset"] + 1
                seen.update((summary["partition"], o) for o in range(summary["minOffset"], summary["maxOffset"] + 1))
        return seen

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        self._reader.join(10)
        self._errors.join(10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def produce(bootstrap: str, topic: str, count: int, prefix: int) -> set[tuple[int, int]]:
    """Runs kafka-verifiable-producer to completion; returns (partition, offset) of every ack.

    Keyed records (keys cycle over 30 values), so the default partitioner spreads them
    over every partition; null keys would stick to one partition per batch.
    """
    run = subprocess.run([str(REPO / "bin" / "kafka-verifiable-producer.sh"), "--bootstrap-server", bootstrap,
                          "--topic", topic, "--max-messages", str(count), "--value-prefix", str(prefix),
                          "--repeating-keys", "30"],
                         capture_output=True, text=True, timeout=120, env=tool_env())
    assert run.returncode == 0, run.stderr
    acked = [json.loads(line) for line in run.stdout.splitlines()]
    acked = [e for e in acked if e["name"] == "producer_send_success"]
    assert len(acked) == count
    return {(e["partition"], e["offset"]) for e in acked}


def start_consumer(bootstrap: str, topic: str, group: str) -> ToolProcess:
    return ToolProcess("kafka-verifiable-consumer.sh", "--bootstrap-server", bootstrap, "--topic", topic,
                       "--group-id", group, "--session-timeout", "10000")


def last_commits(member: ToolProcess) -> dict[int, int]:
    committed: dict[int, int] = {}
    for event in member.named("offsets_committed"):
        assert event["success"] is True and "error" not in event, event
        committed.update({o["partition"]: o["offset"] for o in event["offsets"]})
    return committed


def test_two_consumers_share_the_work_and_one_takes_over(broker):
    topic, group = f"verifiable-{uuid.uuid4().hex[:8]}", f"vgroup-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, PARTITIONS, 1)
    first = start_consumer(broker.bootstrap, topic, group)
    second = None
    try:
        wait_until(lambda: first.owned() == ALL, 60, "the first member to own every partition")
        second = start_consumer(broker.bootstrap, topic, group)
        members = (first, second)

        def split() -> bool:
            owned = [m.owned() for m in members]
            return all(owned) and owned[0] | owned[1] == ALL and not owned[0] & owned[1]
        wait_until(split, 60, "the two members to split the partitions")
        assert first.named("partitions_revoked"), "the first member gave its partitions back before the split"
        shares = [m.owned() for m in members]

        acked = produce(broker.bootstrap, topic, 300, prefix=1)
        assert {p for p, _ in acked} == ALL
        wait_until(lambda: sum((m.consumed() for m in members), Counter()) == Counter(acked), 60,
                   "the members to consume every acknowledged record")
        ends = {p: max(o for q, o in acked if q == p) + 1 for p in ALL}
        for member, share in zip(members, shares):
            assert {p for p, _ in member.consumed()} == share
            # The commit event follows the records_consumed event it belongs to.
            wait_until(lambda: last_commits(member) == {p: ends[p] for p in share}, 30,
                       "each member to commit past its last record")

        assert first.stop() == 0, first.stderr
        names = [e["name"] for e in first.events]
        assert names[0] == "startup_complete" and names[-2:] == ["partitions_revoked", "shutdown_complete"]
        assert {p["partition"] for p in first.events[-2]["partitions"]} == shares[0]

        wait_until(lambda: second.owned() == ALL, 60, "the remaining member to take every partition")
        assert [p["partition"] for p in second.named("partitions_assigned")[-1]["partitions"]] == [0, 1, 2]

        # It reads on from where the stopped member committed: the new records, once each.
        before = second.consumed()
        more = produce(broker.bootstrap, topic, 60, prefix=2)
        wait_until(lambda: second.consumed() - before == Counter(more), 60, "the new records to be consumed")
        assert second.consumed() - before == Counter(more)
        assert second.stop() == 0, second.stderr
        assert second.events[-1]["name"] == "shutdown_complete"
    finally:
        for member in (first, second):
            if member is not None:
                member.kill()


def test_a_tool_piped_into_head_ends_quietly(broker):
    """As a JVM tool's PrintStream does, a reader that went away ends the output, not a traceback.
    (Every tool's entry goes through kafkalike.cli.tool_main.run_tool.)"""
    command = [str(REPO / "bin" / "kafka-verifiable-producer.sh"), "--bootstrap-server", broker.bootstrap,
               "--topic", "piped", "--max-messages", "20000", "--throughput", "-1"]
    shell = f"set -o pipefail; {' '.join(command)} | head -2"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120, env=tool_env())
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
