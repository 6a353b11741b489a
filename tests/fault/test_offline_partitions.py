"""A partition whose only in-sync replica died is offline, not under-replicated.

Kafka keeps the last ISR member in the ISR when it dies (leader -1, Isr: [dead
broker]), so `kafka-topics.sh --describe --unavailable-partitions` lists such a
partition and `--under-replicated-partitions` does not, whether asked through a broker
(Metadata) or through ZooKeeper: both read the same ISR.
"""
from __future__ import annotations

import subprocess

import pytest

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import REPO_ROOT
from tests.fault.cluster_view import ZooKeeperView, running_cluster
from tests.waiting import wait_until

pytestmark = pytest.mark.fault


def topics(*argv: str) -> str:
    done = subprocess.run([str(REPO_ROOT / "bin" / "kafka-topics.sh"), *argv], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_only_isr_member_dying_leaves_the_partition_unavailable_not_under_replicated(zk_chroot):
    with running_cluster(zk_chroot, 2, {"zookeeper.session.timeout.ms": "6000"}) as cluster:
        zk = ZooKeeperView(zk_chroot)
        try:
            victim = 1 if zk.controller() == 0 else 0
            with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
                admin.create_topics([NewTopic("alone", replica_assignment={0: [victim]})])
            wait_until(lambda: zk.partition("alone", 0).leader == victim, 20, "a leader for alone-0")
            cluster.broker(victim).kill()
            wait_until(lambda: zk.partition("alone", 0).leader == -1, 30, "alone-0 to go offline")
            assert zk.partition("alone", 0).isr == (victim,)
            survivor = cluster.broker(1 - victim).bootstrap
            expected = f"\tTopic: alone\tPartition: 0\tLeader: none\tReplicas: {victim}\tIsr: {victim}\n"
            for how in (["--bootstrap-server", survivor], ["--zookeeper", zk_chroot]):
                wait_until(lambda: topics(*how, "--describe", "--unavailable-partitions") == expected, 20,
                           f"--unavailable-partitions through {how[0]} to list alone-0")
                assert topics(*how, "--describe", "--under-replicated-partitions") == ""
        finally:
            zk.close()
