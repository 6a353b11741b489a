"""What an operator looks at while a cluster is being hurt: ZooKeeper and Metadata.

ZooKeeper is the record the controller writes (who is controller, at which epoch, and
each partition's leader and ISR), read here with kazoo from outside the brokers. A
broker's Metadata answer is what clients see. The fault tests wait on both and assert
on both; neither is read through kafkalike's own ZooKeeper layer.
"""
from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kafkalike.client.connection import BrokerConnection
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.messages.metadata import MetadataRequest
from tests.conftest import scratch_dir
from tests.waiting import wait_until

FAILED_LOGS_ROOT = Path(tempfile.gettempdir()) / "kafkalike-fault-logs"


@dataclass(frozen=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


class ZooKeeperView:
    """A kazoo session on the cluster's chroot, reading the controller's znodes."""

    def __init__(self, connect: str):
        self.zk = KazooClient(hosts=connect)
        self.zk.start(timeout=15)

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()

    def controller(self) -> int | None:
        found = self.zk.exists("/controller")
        if found is None:
            return None
        try:
            data, _ = self.zk.get("/controller")
        except Exception:
            return None
        return json.loads(data)["brokerid"]

    def controller_epoch(self) -> int:
        data, _ = self.zk.get("/controller_epoch")
        return int(data)

    def partition(self, topic: str, partition: int) -> PartitionState:
        data, _ = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        state = json.loads(data)
        return PartitionState(state["leader"], state["leader_epoch"], tuple(state["isr"]))

    def partitions(self, topic: str, count: int) -> dict[int, PartitionState]:
        return {p: self.partition(topic, p) for p in range(count)}

    def registered(self, broker_id: int) -> bool:
        return self.zk.exists(f"/brokers/ids/{broker_id}") is not None

    def wait_full_isr(self, topic: str, count: int, replicas: int, timeout: float = 30.0) -> None:
        wait_until(lambda: all(len(s.isr) == replicas and s.leader >= 0
                               for s in self.partitions(topic, count).values()),
                   timeout, f"a full ISR on every partition of {topic}")


def metadata_leaders(host: str, port: int, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (leader id, error code) as one broker answers Metadata v7."""
    conn = BrokerConnection(host, port, timeout=2)
    try:
        conn.connect()
        md = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                       allow_auto_topic_creation=False), version=7)
    finally:
        conn.close()
    [t] = md.topics
    if t.error_code:
        raise AssertionError(f"Metadata for {topic} from {host}:{port} answered error {t.error_code}")
    return {p.partition_index: (p.leader_id, p.error_code) for p in t.partitions}


@contextlib.contextmanager
def running_cluster(zk_connect: str, size: int = 3,
                    overrides: dict[str, str] | None = None) -> Iterator[Cluster]:
    """Real broker processes in a scratch directory; killed and removed afterwards.

    When the test fails, the brokers' own logs (server.log, controller.log,
    state-change.log) are kept under FAILED_LOGS_ROOT, named in the failure, since they
    are what tells a broker bug from a test bug.
    """
    base = scratch_dir("fault-cluster")
    cluster = Cluster(zk_connect, base, size, overrides)
    try:
        cluster.start()
        yield cluster
    except BaseException as exc:
        kept = FAILED_LOGS_ROOT / base.name
        for b in cluster.brokers:
            shutil.copytree(b.app_log_dir, kept / f"broker-{b.broker_id}", dirs_exist_ok=True)
            if b.is_running() and shutil.which("py-spy"):
                # Where each live broker's threads stand: what a hung broker waits on.
                with open(kept / f"broker-{b.broker_id}" / "py-spy.txt", "w") as out:
                    subprocess.run(["py-spy", "dump", "--pid", str(b.proc.pid)], stdout=out,
                                   stderr=subprocess.STDOUT, timeout=30, check=False)
        exc.add_note(f"broker logs kept in {kept}")
        raise
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int,
                 config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor,
                                  config=config or {})])[topic].result(20)
