"""kill -9 of the controller: another broker takes over, and keeps the cluster running.

The controller is whichever broker holds the ephemeral /controller znode. Killed
hard, it cannot resign: the others learn of it only when ZooKeeper expires its
session, so the takeover must come within that session timeout (plus ZooKeeper's
expiry granularity of one tick), with /controller_epoch one higher so that the dead
controller's epoch is fenced. The new controller must then do a controller's work: it
removes the dead broker from ISRs, and when a leader is lost later it elects new
leaders for that broker's partitions from their ISRs.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from tests.fault.cluster_view import ZooKeeperView, create_topic, running_cluster
from tests.waiting import wait_until
from tests.fault.delivery_check import producer_config

pytestmark = pytest.mark.fault

SESSION_TIMEOUT_S = 6
ZK_TICK_S = 2          # kafkalike.lab.zookeeper's tickTime: sessions expire on tick boundaries
TOPIC = "ctl"
PARTITIONS = 3


def produce_acked(bootstrap: str, count: int) -> None:
    """acks=all writes to every partition succeed: each partition has a working leader and ISR."""
    producer = Producer(producer_config(bootstrap, **{"message.timeout.ms": 30000}))
    errors = []
    for i in range(count):
        producer.produce(TOPIC, value=b"after-failover-%d" % i, partition=i % PARTITIONS,
                         on_delivery=lambda err, msg: err and errors.append(err))
    assert producer.flush(40) == 0
    assert not errors, errors[:5]


def test_controller_kill_elects_a_new_controller_that_handles_broker_loss(zk_chroot):
    overrides = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_S * 1000)}
    with running_cluster(zk_chroot, 3, overrides) as cluster:
        zk = ZooKeeperView(zk_chroot)
        try:
            create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
            zk.wait_full_isr(TOPIC, PARTITIONS, 3)
            old = zk.controller()
            old_epoch = zk.controller_epoch()
            before = zk.partitions(TOPIC, PARTITIONS)

            killed_at = time.monotonic()
            cluster.broker(old).kill()
            wait_until(lambda: zk.controller() not in (None, old), 3 * SESSION_TIMEOUT_S,
                       "another broker to become controller")
            took = time.monotonic() - killed_at
            new = zk.controller()
            # Taken over at the session's expiry (plus the election), not at some later event.
            assert took < SESSION_TIMEOUT_S + ZK_TICK_S + 5.0, f"controller took over after {took:.1f}s"
            assert zk.controller_epoch() == old_epoch + 1

            # The new controller elected leaders for the dead one's partitions from their
            # ISRs and took it out of every ISR.
            def recovered() -> bool:
                now = zk.partitions(TOPIC, PARTITIONS)
                return all(s.leader not in (old, -1) and s.leader in before[p].isr and old not in s.isr
                           for p, s in now.items())
            wait_until(recovered, 15, f"partitions to leave broker {old}")
            produce_acked(cluster.bootstrap, 30)

            # The old controller comes back as an ordinary broker and rejoins every ISR.
            cluster.broker(old).restart(30)
            zk.wait_full_isr(TOPIC, PARTITIONS, 3, timeout=30)
            assert zk.controller() == new

            # A later broker loss is handled by the new controller: kill a leader that
            # is not the controller.
            now = zk.partitions(TOPIC, PARTITIONS)
            # (Each broker led one partition at creation, so the third broker still leads
            # the partition it started with.)
            victim = next((s.leader for s in now.values() if s.leader != new), None)
            assert victim is not None, f"the controller leads every partition: {now}"
            led = [p for p, s in now.items() if s.leader == victim]
            cluster.broker(victim).kill()

            def reelected() -> bool:
                after = zk.partitions(TOPIC, PARTITIONS)
                return all(after[p].leader not in (victim, -1) and after[p].leader in now[p].isr
                           and after[p].leader_epoch > now[p].leader_epoch for p in led) \
                    and all(victim not in s.isr for s in after.values())
            wait_until(reelected, 3 * SESSION_TIMEOUT_S, f"new leaders for broker {victim}'s partitions {led}")
            assert zk.controller() == new and zk.controller_epoch() == old_epoch + 1
            produce_acked(cluster.bootstrap, 30)
        finally:
            zk.close()
