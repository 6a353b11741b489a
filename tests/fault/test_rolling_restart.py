"""A clean rolling restart never leaves a partition without a leader.

Each broker in turn gets SIGTERM (controlled shutdown: the controller moves its
leaderships away and takes it out of the ISRs before it stops), is started again, and
the test waits for the full ISR before the next. An acks=all producer runs throughout.
A watcher asks a broker that is up for Metadata about every 100 ms; at no moment may a
partition be reported without a leader, nor led by a broker that has stopped. Then every
acknowledged record must still be there.
"""
from __future__ import annotations

import threading
import time

import pytest

from tests.fault.cluster_view import ZooKeeperView, create_topic, metadata_leaders, running_cluster
from tests.fault.delivery_check import (AckedProducer, assert_acked_consumed, assert_acked_in_order,
                                        consume_all)

pytestmark = pytest.mark.fault

TOPIC = "rolling"
PARTITIONS = 3


class LeaderWatcher:
    """Polls Metadata from brokers that are up, recording every answer with no leader."""

    def __init__(self, cluster, topic: str):
        self.cluster = cluster
        self.topic = topic
        self.down: set[int] = set()          # brokers the test is stopping or starting
        self.stopped: set[int] = set()       # brokers whose process has exited
        self.lock = threading.Lock()
        self.violations: list[str] = []
        self.polls = 0
        self.polls_while_down: dict[int, int] = {}   # broker -> answers got while it restarted
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-watcher", daemon=True)

    def start(self) -> "LeaderWatcher":
        self._thread.start()
        return self

    def mark_down(self, broker_id: int) -> None:
        with self.lock:
            self.down.add(broker_id)

    def mark_stopped(self, broker_id: int) -> None:
        with self.lock:
            self.stopped.add(broker_id)

    def mark_up(self, broker_id: int) -> None:
        with self.lock:
            self.down.discard(broker_id)
            self.stopped.discard(broker_id)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        turn = 0
        while not self._stop.wait(0.1):
            with self.lock:
                down, stopped = set(self.down), set(self.stopped)
                up = [b for b in self.cluster.brokers if b.broker_id not in down]
            if not up:
                continue
            broker = up[turn % len(up)]
            turn += 1
            try:
                leaders = metadata_leaders(broker.host, broker.port, self.topic)
            except Exception:
                continue             # a timeout on a busy machine says nothing about leaders
            self.polls += 1
            for b in down:
                self.polls_while_down[b] = self.polls_while_down.get(b, 0) + 1
            for p, (leader, error) in sorted(leaders.items()):
                if leader == -1 or error != 0 or leader in stopped:
                    self.violations.append(f"{time.strftime('%X')} broker {broker.broker_id} said "
                                           f"{self.topic}-{p} has leader {leader} (error {error}) "
                                           f"while {sorted(down)} restarted ({sorted(stopped)} stopped)")


def test_rolling_restart_keeps_every_partition_led(zk_chroot):
    with running_cluster(zk_chroot, 3) as cluster:
        zk = ZooKeeperView(zk_chroot)
        producer = AckedProducer(cluster.bootstrap, TOPIC, PARTITIONS)
        watcher = LeaderWatcher(cluster, TOPIC)
        try:
            create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
            zk.wait_full_isr(TOPIC, PARTITIONS, 3)
            producer.start()
            producer.wait_for_acks(300, timeout=30)
            watcher.start()
            for broker in cluster.brokers:
                acked = producer.acked_count()
                watcher.mark_down(broker.broker_id)
                assert broker.stop() == 0, broker.log_tail()
                watcher.mark_stopped(broker.broker_id)
                server_log = (broker.app_log_dir / "server.log").read_text(errors="replace")
                assert "Controlled shutdown request returned successfully" in server_log, broker.log_tail()
                # With min.insync.replicas=2 the two others keep taking acks=all writes.
                producer.wait_for_acks(acked + 150, timeout=30)
                broker.restart(30)
                zk.wait_full_isr(TOPIC, PARTITIONS, 3, timeout=40)
                watcher.mark_up(broker.broker_id)
            producer.wait_for_acks(producer.acked_count() + 150, timeout=30)
            producer.stop()
        finally:
            watcher.stop()
            producer.abandon()
            zk.close()

        # The watcher saw each restart: every broker's down time spans several answers.
        assert all(watcher.polls_while_down.get(b.broker_id, 0) >= 3 for b in cluster.brokers), \
            f"Metadata answers while each broker restarted: {watcher.polls_while_down}"
        assert not watcher.violations, "\n".join(watcher.violations[:10])
        assert not producer.failed, f"deliveries failed: {list(producer.failed.items())[:5]}"
        consumed = consume_all(cluster.bootstrap, TOPIC, PARTITIONS)
        assert_acked_consumed(producer.acked, consumed)
        assert_acked_in_order(producer.acked)
