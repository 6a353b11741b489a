"""Partitions with data move to other brokers while an acks=all producer keeps writing.

confluent-kafka (librdkafka) produces numbered records without pause to both partitions
of a topic with replication factor 2 and min.insync.replicas 2. Meanwhile
kafka-reassign-partitions moves partition 0 from [0, 1] to [1, 2] (its leader, 0, is
removed, so leadership moves) and partition 1 from [1, 0] to [2, 0] (a follower is
replaced). While a reassignment is in flight the leader counts the new replica as soon
as it joins the ISR, the leader hands over only to an in-sync target replica, and the
removed replica leaves the ISR before its log is deleted: so every record the producer
saw acknowledged must be read back at its offset, in order, and the new replicas must
hold the same bytes.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalike.client.admin import AdminClient, NewTopic
from tests.fault.cluster_view import ZooKeeperView, running_cluster
from tests.waiting import wait_until
from tests.fault.delivery_check import (AckedProducer, assert_acked_consumed, assert_acked_in_order,
                                        consume_all, high_watermarks, wait_replicas_identical)

pytestmark = pytest.mark.fault

REPO = Path(__file__).resolve().parents[2]
TOPIC = "moving"
PARTITIONS = 2
TARGETS = {0: [1, 2], 1: [2, 0]}


def reassign(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-reassign-partitions.sh"), *args], capture_output=True,
                          text=True, timeout=120, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


def assignment(view: ZooKeeperView) -> dict:
    return json.loads(view.zk.get(f"/brokers/topics/{TOPIC}")[0])


def test_moving_partitions_under_acks_all_load_loses_no_acknowledged_record(zk_chroot, tmp_path):
    with running_cluster(zk_chroot, 3) as cluster:
        view = ZooKeeperView(zk_chroot)
        producer = None
        try:
            with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
                admin.create_topics([NewTopic(TOPIC, replica_assignment={0: [0, 1], 1: [1, 0]},
                                              configs={"min.insync.replicas": "2"})])
            view.wait_full_isr(TOPIC, PARTITIONS, 2)
            producer = AckedProducer(cluster.bootstrap, TOPIC, PARTITIONS).start()
            producer.wait_for_acks(10000, 90)

            plan = tmp_path / "plan.json"
            plan.write_text(json.dumps({"version": 1, "partitions": [
                {"topic": TOPIC, "partition": p, "replicas": r} for p, r in TARGETS.items()]}))
            run = reassign("--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file",
                           str(plan))
            assert run.returncode == 0, run.stdout + run.stderr
            assert run.stdout.endswith(f"Successfully started partition reassignments for {TOPIC}-0,{TOPIC}-1\n")

            def done():
                value = assignment(view)
                return (value["partitions"] == {str(p): r for p, r in TARGETS.items()}
                        and not value["adding_replicas"] and not value["removing_replicas"])
            wait_until(done, 90, "both reassignments to complete")
            acked_at_completion = producer.acked_count()
            producer.wait_for_acks(acked_at_completion + 2000, 60)    # the new leaders take writes
            producer.stop()
            assert not producer.failed, f"{len(producer.failed)} records failed: {list(producer.failed.items())[:3]}"

            run = reassign("--bootstrap-server", cluster.bootstrap, "--verify", "--reassignment-json-file", str(plan))
            assert run.returncode == 0, run.stdout + run.stderr
            assert run.stdout.startswith("Status of partition reassignment:\n"
                                         f"Reassignment of partition {TOPIC}-0 is complete.\n"
                                         f"Reassignment of partition {TOPIC}-1 is complete.\n")

            assert view.partition(TOPIC, 0).leader in TARGETS[0]
            consumed = consume_all(cluster.bootstrap, TOPIC, PARTITIONS)
            assert_acked_consumed(producer.acked, consumed)
            assert_acked_in_order(producer.acked)
            marks = high_watermarks(cluster.bootstrap, TOPIC, PARTITIONS)
            for p, replicas in TARGETS.items():
                wait_replicas_identical({b: cluster.broker(b).log_dir for b in replicas}, TOPIC, p, marks[p])
            # The replicas that were moved away are gone from their old brokers.
            for p, removed in ((0, 0), (1, 1)):
                wait_until(lambda: not (cluster.broker(removed).log_dir / f"{TOPIC}-{p}").exists(), 30,
                           f"broker {removed} to delete {TOPIC}-{p}")
        except BaseException:
            if producer is not None:
                producer.abandon()
            raise
        finally:
            view.close()
