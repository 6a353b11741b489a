"""An ex-leader that returns with a divergent tail must truncate before it joins the ISR.

The story, on a topic with replicas [A, B] and min.insync.replicas=1:

1. A leads; B follows and is in the ISR.
2. B is frozen (SIGSTOP) while A takes acks=1 writes: A's log grows a tail B never
   copied. A is killed (kill -9) and B thawed; B, still in the ISR, is elected.
3. B takes acks=all writes, fewer than A's lost tail: these are acknowledged with the
   ISR [B] and must survive anything short of losing every replica.
4. A restarts with replica.fetch.min.bytes at 1 MiB and a long replica.fetch.wait.max.ms,
   so the leader parks its fetches. Its first fetch carries the end of the divergent
   tail as its fetch offset. The moment ZooKeeper shows A back in the ISR, B is killed,
   and A, the only ISR member left, is elected.

Kafka 2.8 admits A only once it has truncated (at the offset where B's epoch began, which
A's log says) and caught up, so A leads with every acknowledged record. Before the fix, A entered the ISR on its first fetch, and its old
tail replaced the acknowledged records at the same offsets.
"""
from __future__ import annotations

import os
import signal
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalike.client.admin import AdminClient, NewTopic
from tests.fault.cluster_view import ZooKeeperView, running_cluster
from tests.waiting import wait_until
from tests.fault.delivery_check import assert_acked_consumed, consume_all, producer_config, value_of

pytestmark = pytest.mark.fault

# B stays frozen while A takes its tail; its session must outlive that by far (the guard
# below allows half of it), 40,000 records taking several seconds on a loaded CI machine.
SESSION_TIMEOUT_MS = 16_000
TOPIC = "diverged"
TAIL_RECORDS = 40_000           # A's unreplicated acks=1 tail
ACKED_SUFFIX = 500              # acks=all records B takes in the new epoch


def produce(bootstrap: str, seqs: range, acks: str) -> dict[int, tuple[int, int]]:
    """Send numbered records to partition 0 and wait for every delivery report."""
    acked: dict[int, tuple[int, int]] = {}
    failed: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is None:
            acked[int(msg.key())] = (msg.partition(), msg.offset())
        else:
            failed.append(str(err))

    producer = Producer(producer_config(bootstrap, acks=acks, **{"message.timeout.ms": 60_000}))
    for seq in seqs:
        while True:
            try:
                producer.produce(TOPIC, key=str(seq).encode(), value=value_of(seq), partition=0,
                                 on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(90) == 0, "records still unsent after 90 s"
    assert not failed, f"{len(failed)} deliveries failed, first: {failed[:3]}"
    return acked


def log_end(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "divergence-probe"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1]
    finally:
        consumer.close()


def test_an_ex_leader_with_a_divergent_tail_joins_the_isr_only_after_truncating(zk_chroot):
    overrides = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)}
    with running_cluster(zk_chroot, 3, overrides) as cluster:
        zk = ZooKeeperView(zk_chroot)
        try:
            controller = zk.controller()
            a, b = [i for i in range(3) if i != controller]
            broker_a, broker_b = cluster.broker(a), cluster.broker(b)
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            admin.create_topics([NewTopic(TOPIC, replica_assignment={0: [a, b]},
                                          configs={"min.insync.replicas": "1"})])
            admin.close()
            wait_until(lambda: zk.partition(TOPIC, 0).isr == (a, b) and zk.partition(TOPIC, 0).leader == a,
                       30, f"{TOPIC}-0 led by {a} with ISR [{a}, {b}]")
            acked = produce(cluster.bootstrap, range(0, 100), acks="all")

            # 2. A's tail that B never sees.
            os.kill(broker_b.proc.pid, signal.SIGSTOP)
            frozen_at = time.monotonic()
            try:
                a_end = max(offset for _, offset in produce(broker_a.bootstrap, range(100, 100 + TAIL_RECORDS),
                                                          acks="1").values()) + 1
                broker_a.kill()
            finally:
                os.kill(broker_b.proc.pid, signal.SIGCONT)
            frozen_s = time.monotonic() - frozen_at
            assert frozen_s < SESSION_TIMEOUT_MS / 2000, f"B was frozen {frozen_s:.1f} s: its session may expire"
            wait_until(lambda: zk.partition(TOPIC, 0).leader == b, 3 * SESSION_TIMEOUT_MS / 1000,
                       f"{b} elected leader of {TOPIC}-0 after {a} died")
            assert zk.partition(TOPIC, 0).isr == (b,)
            b_start = log_end(broker_b.bootstrap)

            # 3. Acknowledged in B's epoch, a shorter run than A's divergent tail.
            first = 100 + TAIL_RECORDS
            acked.update(produce(broker_b.bootstrap, range(first, first + ACKED_SUFFIX), acks="all"))
            assert a_end - b_start > ACKED_SUFFIX, (
                f"A's tail ends at {a_end} and B's epoch starts at {b_start}: not divergent enough to test")

            # 4. A comes back with parked fetches; B dies the moment A is in the ISR.
            broker_a.overrides.update({"replica.fetch.min.bytes": "1048576", "replica.fetch.wait.max.ms": "3000"})
            broker_a.start()
            wait_until(lambda: a in zk.partition(TOPIC, 0).isr, 60, f"{a} back in the ISR", interval=0.01)
            broker_b.kill()
            wait_until(lambda: zk.partition(TOPIC, 0).leader == a, 3 * SESSION_TIMEOUT_MS / 1000,
                       f"{a} elected leader after {b} died")

            broker_b.restart(60)
            wait_until(lambda: len(zk.partition(TOPIC, 0).isr) == 2, 60, "B back in the ISR")
        finally:
            zk.close()

        consumed = consume_all(cluster.bootstrap, TOPIC, 1)
        assert_acked_consumed(acked, consumed)
        assert max(consumed[0]) + 1 == b_start + ACKED_SUFFIX, "A's divergent tail is still in the log"
        # And A cut its tail where B's epoch began, as its log says (not only by the outcome).
        truncations = [line for line in broker_a.server_log.read_text().splitlines()
                       if f"[{TOPIC}-0] Truncating to offset" in line]
        assert truncations and truncations[0].split("Truncating to offset ")[1].split()[0] == str(b_start), \
            truncations
