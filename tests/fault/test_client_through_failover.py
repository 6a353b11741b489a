"""Real clients ride through a leader's kill -9 on their own.

A confluent-kafka producer (acks=all, retries) keeps producing while the leader of its
partition is killed: it must find the new leader through metadata and retry what
failed, so that no delivery report carries an error. A kcat consumer started with
`-o beginning` before the failure keeps reading, follows the partition to its new
leader, and in the end has printed every acknowledged record at its offset.
"""
from __future__ import annotations

import subprocess
import threading

import pytest

from tests.fault.cluster_view import ZooKeeperView, create_topic, running_cluster
from tests.waiting import wait_until
from tests.fault.delivery_check import AckedProducer, value_of

pytestmark = pytest.mark.fault

SESSION_TIMEOUT_S = 6
TOPIC = "failover"


class KcatReader:
    """`kcat -C -u -o beginning` as a subprocess (-u: unbuffered, so each record is seen
    as kcat prints it); each line is "offset key value-size".

    Values are binary (they may hold newlines), so kcat prints their size (%S) and the
    key, which is the record's sequence number, names the record.
    """

    def __init__(self, bootstrap: str, topic: str):
        self.proc = subprocess.Popen(
            ["kcat", "-C", "-u", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
             "-f", "%o %k %S\n", "-X", "topic.metadata.refresh.interval.ms=1000",
             "-X", "reconnect.backoff.max.ms=500"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.seen: dict[int, tuple[bytes, int]] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name="kcat-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            offset, key, size = line.split()
            with self._lock:
                self.seen[int(offset)] = (key, int(size))

    def snapshot(self) -> dict[int, tuple[bytes, int]]:
        with self._lock:
            return dict(self.seen)

    def close(self) -> str:
        self.proc.kill()
        self.proc.wait(10)
        self._thread.join(10)
        return self.proc.stderr.read().decode(errors="replace")


def test_producer_and_kcat_follow_a_new_leader(zk_chroot):
    overrides = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_S * 1000)}
    with running_cluster(zk_chroot, 3, overrides) as cluster:
        zk = ZooKeeperView(zk_chroot)
        producer = AckedProducer(cluster.bootstrap, TOPIC, 1)
        reader = None
        try:
            create_topic(cluster.bootstrap, TOPIC, 1, 3, {"min.insync.replicas": "2"})
            zk.wait_full_isr(TOPIC, 1, 3)
            reader = KcatReader(cluster.bootstrap, TOPIC)
            producer.start()
            producer.wait_for_acks(500, timeout=30)
            wait_until(lambda: len(reader.snapshot()) >= 200, 30, "kcat to read the first records")

            before = zk.partition(TOPIC, 0)
            cluster.broker(before.leader).kill()
            wait_until(lambda: zk.partition(TOPIC, 0).leader not in (before.leader, -1), 3 * SESSION_TIMEOUT_S,
                       "a new leader")
            after = zk.partition(TOPIC, 0)
            assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
            producer.wait_for_acks(producer.acked_count() + 500, timeout=30)
            producer.stop()

            assert not producer.failed, f"deliveries failed: {list(producer.failed.items())[:5]}"
            wanted = {offset: (str(seq).encode(), len(value_of(seq))) for seq, (_, offset) in producer.acked.items()}
            try:
                wait_until(lambda: set(wanted) <= set(reader.snapshot()), 30,
                           f"kcat to print all {len(wanted)} acknowledged records")
            except AssertionError as exc:
                seen = reader.snapshot()
                missing = sorted(set(wanted) - set(seen))
                exc.add_note(f"kcat printed {len(seen)} records up to offset {max(seen, default=-1)}; "
                             f"missing {len(missing)} from offset {missing[0]}; kcat said:\n"
                             + reader.close()[-3000:])
                raise
            assert reader.proc.poll() is None, "kcat gave up instead of following the new leader"
            seen = reader.snapshot()
            wrong = [(o, seen[o][0]) for o, kv in sorted(wanted.items()) if seen[o] != kv]
            assert not wrong, f"kcat printed other records at acknowledged offsets: {wrong[:5]}"
        finally:
            producer.abandon()
            if reader is not None:
                reader.close()
            zk.close()
