"""A Spark read that outlives its partitions' leader.

Three brokers, a topic with 3 replicas. A batch read is planned (40 tasks of at most 50
offsets), and once a few tasks have finished the broker leading both partitions is killed
(kill -9). The remaining tasks must find the new leaders through metadata and read their
ranges there: the job completes on local[2] (where a failed task fails the job, no
retries), with every planned record exactly once and intact.
"""
from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark import InheritableThread

from tests.fault.cluster_view import ZooKeeperView, running_cluster
from tests.waiting import wait_until
from tests.interop.spark_support import Rec, produce, reader, rows, unique

pytestmark = [pytest.mark.interop, pytest.mark.spark]

SESSION_TIMEOUT_S = 6
PER_PARTITION = 1000
MAX_RECORDS = 50          # 40 tasks


@pytest.fixture
def cluster(zk_chroot):
    """Three brokers whose ZooKeeper sessions expire 6 s after a kill -9, so a new leader
    is elected within seconds."""
    with running_cluster(zk_chroot, 3, {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_S * 1000)}) as c:
        yield c


def completed_tasks(spark, group: str) -> int:
    tracker = spark.sparkContext.statusTracker()
    done = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else []):
            stage = tracker.getStageInfo(stage_id)
            done += stage.numCompletedTasks if stage else 0
    return done


def test_read_completes_when_the_leader_is_killed_mid_read(spark, cluster, zk_chroot):
    topic = unique("spark-failover")
    zk = ZooKeeperView(zk_chroot)
    try:
        # Broker 0 is the preferred leader of both partitions: one kill moves every range's leader.
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        new = NewTopic(topic, num_partitions=2, replication_factor=-1, replica_assignment=[[0, 1, 2], [0, 2, 1]],
                       config={"min.insync.replicas": "2"})
        admin.create_topics([new])[topic].result(20)
        zk.wait_full_isr(topic, 2, 3)
        records = [Rec(b"%d-%d" % (p, i), b"value %d of %d " % (i, p) * 8, p)
                   for p in range(2) for i in range(PER_PARTITION)]
        placed = produce(cluster.bootstrap, topic, records, acks="all")
        victim = 0
        assert {s.leader for s in zk.partitions(topic, 2).values()} == {victim}

        df = reader(spark, cluster.bootstrap, subscribe=topic, maxRecordsPerPartition=MAX_RECORDS).load()
        assert df.rdd.getNumPartitions() == 2 * PER_PARTITION // MAX_RECORDS

        group = unique("failover")
        outcome: dict = {}

        def collect():
            spark.sparkContext.setJobGroup(group, "read through a leader's death")
            try:
                outcome["rows"] = rows(df)
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread below
                outcome["error"] = exc

        worker = InheritableThread(target=collect, name="spark-collect")
        worker.start()
        wait_until(lambda: completed_tasks(spark, group) >= 3 or not worker.is_alive(), 120,
                   "the read to finish a few tasks")
        assert worker.is_alive(), f"the read ended before the kill: {outcome}"
        killed_at = completed_tasks(spark, group)
        cluster.broker(victim).kill()
        wait_until(lambda: all(s.leader not in (victim, -1) for s in zk.partitions(topic, 2).values()),
                   4 * SESSION_TIMEOUT_S, "new leaders for both partitions")
        worker.join(180)
        assert not worker.is_alive(), "the read did not finish within 3 minutes of the kill"
        assert "error" not in outcome, f"the read failed: {outcome.get('error')}"
        assert killed_at < 2 * PER_PARTITION // MAX_RECORDS, "every task had finished before the kill"

        got = outcome["rows"]
        assert len(got) == 2 * PER_PARTITION
        expected = sorted((r.key, r.value, p, o) for r, (p, o) in zip(records, placed))
        assert sorted((g[0], g[1], g[3], g[4]) for g in got) == expected
    finally:
        zk.close()
