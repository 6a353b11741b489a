"""Three real brokers: replicated partitions, the ISR and the high watermark."""
from __future__ import annotations


import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.records.batch import decode_batches
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def describe(admin, topic):
    md = admin.list_topics(topic, timeout=10)
    return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in md.topics[topic].partitions.values()}


def segment_bytes(broker, topic, partition):
    d = broker.log_dir / f"{topic}-{partition}"
    return b"".join(p.read_bytes() for p in sorted(d.glob("*.log")))


def test_rf3_acks_all_reaches_every_replica(kafka_cluster):
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic("rep", num_partitions=3, replication_factor=3,
                                  config={"min.insync.replicas": "2"})])["rep"].result(20)
    wait_until(lambda: all(len(isr) == 3 for _, _, isr in describe(admin, "rep").values()), what="full ISR")
    leaders = sorted(leader for leader, _, _ in describe(admin, "rep").values())
    assert leaders == [0, 1, 2]          # one leader per broker, as Kafka spreads them

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "all", "linger.ms": 5})
    acked = []
    for i in range(3000):
        producer.produce("rep", key=b"%d" % i, value=b"v%d" % i, partition=i % 3,
                         on_delivery=lambda err, msg: acked.append((err, msg.partition(), msg.offset())))
    assert producer.flush(30) == 0
    assert all(err is None for err, _, _ in acked) and len(acked) == 3000

    # Every replica ends up with identical bytes (leader epochs included).
    for p in range(3):
        def same():
            copies = [segment_bytes(b, "rep", p) for b in kafka_cluster.brokers]
            return copies[0] and copies.count(copies[0]) == 3
        wait_until(same, what=f"identical replicas of rep-{p}")
        batches = list(decode_batches(segment_bytes(kafka_cluster.brokers[0], "rep", p)))
        assert sum(len(b.records()) for b in batches) == 1000

    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": "none",
                         "enable.auto.commit": False})
    for p in range(3):
        low, high = consumer.get_watermark_offsets(TopicPartition("rep", p), timeout=10)
        assert (low, high) == (0, 1000)
    consumer.close()


def test_follower_loss_shrinks_the_isr_and_return_rejoins(zk_chroot):
    import shutil

    from kafkalike.lab.cluster import Cluster
    from tests.conftest import scratch_dir
    base = scratch_dir("rep-isr")
    cluster = Cluster(zk_chroot, base, 3, {"replica.lag.time.max.ms": "3000",
                                           "zookeeper.session.timeout.ms": "6000"})
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("isr", num_partitions=1, replication_factor=3)])["isr"].result(20)
        wait_until(lambda: len(describe(admin, "isr")[0][2]) == 3, what="full ISR")
        leader, replicas, _ = describe(admin, "isr")[0]
        follower = next(r for r in replicas if r != leader)
        cluster.broker(follower).kill()
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(100):
            producer.produce("isr", value=b"x%d" % i, partition=0)
        assert producer.flush(30) == 0
        wait_until(lambda: follower not in describe(admin, "isr")[0][2], what="ISR shrink")
        # As with Kafka 2.8, a broker restarted after kill -9 must wait until ZooKeeper has
        # expired its old session (its /brokers/ids znode), or it refuses to start.
        from kazoo.client import KazooClient
        zk = KazooClient(hosts=zk_chroot)
        zk.start(timeout=15)
        try:
            wait_until(lambda: zk.exists(f"/brokers/ids/{follower}") is None, what="old registration gone")
        finally:
            zk.stop()
        cluster.broker(follower).restart()
        wait_until(lambda: sorted(describe(admin, "isr")[0][2]) == sorted(replicas), what="ISR expand")
        wait_until(lambda: segment_bytes(cluster.broker(follower), "isr", 0)
                   == segment_bytes(cluster.broker(leader), "isr", 0), what="follower caught up")
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_controlled_shutdown_moves_leaders_before_the_broker_stops(kafka_cluster):
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    admin.create_topics([NewTopic("cs", num_partitions=3, replication_factor=3)])["cs"].result(20)
    wait_until(lambda: all(len(isr) == 3 for _, _, isr in describe(admin, "cs").values()), what="full ISR")
    victim = describe(admin, "cs")[0][0]
    kafka_cluster.broker(victim).stop()          # SIGTERM: controlled shutdown
    others = AdminClient({"bootstrap.servers": ",".join(
        b.bootstrap for b in kafka_cluster.brokers if b.broker_id != victim)})
    # The survivors' metadata follows the controller's UpdateMetadata, a moment after.
    wait_until(lambda: all(leader not in (victim, -1) and victim not in isr
                           for leader, _, isr in describe(others, "cs").values()), 15,
               "the survivors' metadata to show the leaders moved off the stopped broker")
    log = (kafka_cluster.broker(victim).app_log_dir / "server.log").read_text()
    assert "Controlled shutdown request returned successfully" in log
