"""Hard bounces of partition leaders (and of the controller) under an acks=all producer.

Kafka's ducktape replication test, hard_bounce flavour: three brokers, a topic with
three partitions, replication factor 3 and min.insync.replicas=2. A confluent-kafka
producer (acks=all, retries, no idempotence, one request in flight: see delivery_check)
sends numbered records the whole time, while the test kill -9s the leader of one
partition after another, and twice the controller, restarting each victim once
ZooKeeper has dropped its registration and waiting for the full ISR before the next.

Then: every acknowledged record is read back at its offset with its bytes, in order
within its partition, and the three replicas hold identical bytes below the high
watermark. A short ZooKeeper session timeout keeps the rounds quick; with Kafka's 18 s
default each bounce would wait three times as long for the same outcome.
"""
from __future__ import annotations

import pytest

from tests.fault.cluster_view import ZooKeeperView, create_topic, running_cluster
from tests.waiting import wait_until
from tests.fault.delivery_check import (AckedProducer, assert_acked_consumed, assert_acked_in_order,
                                        consume_all, high_watermarks, wait_replicas_identical)

pytestmark = pytest.mark.fault

SESSION_TIMEOUT_S = 6
TOPIC = "bounced"
PARTITIONS = 3
BOUNCES = 6
CONTROLLER_ROUNDS = {1, 5}   # leader rounds 0, 2, 3, 4 bounce partitions 0, 2, 0, 1


def test_acknowledged_records_survive_leader_bounces(zk_chroot):
    overrides = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_S * 1000)}
    with running_cluster(zk_chroot, 3, overrides) as cluster:
        zk = ZooKeeperView(zk_chroot)
        producer = AckedProducer(cluster.bootstrap, TOPIC, PARTITIONS)
        try:
            create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
            zk.wait_full_isr(TOPIC, PARTITIONS, 3)
            producer.start()
            producer.wait_for_acks(300, timeout=30)
            bounced = []
            for round_no in range(BOUNCES):
                controller = zk.controller()
                before = zk.partitions(TOPIC, PARTITIONS)
                victim = controller if round_no in CONTROLLER_ROUNDS else before[round_no % PARTITIONS].leader
                bounced.append((victim, victim == controller, [p for p, s in before.items() if s.leader == victim]))
                acked = producer.acked_count()
                cluster.broker(victim).kill()

                wait_until(lambda: not zk.registered(victim), 3 * SESSION_TIMEOUT_S,
                           f"broker {victim}'s registration to expire")

                def moved() -> bool:
                    now = zk.partitions(TOPIC, PARTITIONS)
                    return all(now[p].leader not in (victim, -1) and now[p].leader in before[p].isr
                               and victim not in now[p].isr for p in range(PARTITIONS))
                wait_until(moved, 20, f"round {round_no}: leaders of broker {victim}'s partitions "
                                      f"re-elected from the ISR")
                if victim == controller:
                    wait_until(lambda: zk.controller() not in (None, victim), 20, "a new controller")
                # Two replicas are enough for min.insync.replicas=2: writes go on meanwhile.
                producer.wait_for_acks(acked + 150, timeout=30)

                cluster.broker(victim).restart(30)
                zk.wait_full_isr(TOPIC, PARTITIONS, 3, timeout=40)
            producer.wait_for_acks(producer.acked_count() + 150, timeout=30)
            producer.stop()
        finally:
            producer.abandon()
            zk.close()

        assert sum(1 for _, was_controller, _ in bounced if was_controller) >= 2, bounced
        assert sum(1 for _, _, led in bounced if led) >= BOUNCES - 1, bounced
        assert not producer.failed, f"deliveries failed: {list(producer.failed.items())[:5]}"
        assert len(producer.acked) >= 150 * (BOUNCES + 2)

        consumed = consume_all(cluster.bootstrap, TOPIC, PARTITIONS)
        assert_acked_consumed(producer.acked, consumed)
        assert_acked_in_order(producer.acked)
        log_dirs = {b.broker_id: b.log_dir for b in cluster.brokers}
        for p, hw in high_watermarks(cluster.bootstrap, TOPIC, PARTITIONS).items():
            assert hw >= max((o + 1 for q, o in producer.acked.values() if q == p), default=0)
            wait_replicas_identical(log_dirs, TOPIC, p, hw)
