"""listeners changed live (a per-broker dynamic config, as Kafka 2.8's DynamicListenerConfig):
a new listener opens and is registered, every broker's metadata learns it through the
controller, kcat produces and consumes through it; removed, its port closes."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from kazoo.client import KazooClient

from kafkalike.client.admin import (AdminClient, AlterConfigOp, AlterConfigOpType, ConfigResource, NewTopic,
                                    ResourceType)
from kafkalike.client.connection import BrokerConnection
from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from kafkalike.protocol.messages.metadata import MetadataRequest
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT"


@pytest.fixture(scope="module")
def cluster(module_zk_chroot: str) -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="kl-listeners-", dir="/dev/shm"))
    c = Cluster(module_zk_chroot, base, 2, {"listener.security.protocol.map": PROTOCOL_MAP})
    try:
        c.start()
        yield c
    finally:
        c.kill()
        shutil.rmtree(base, ignore_errors=True)


def registered(zk_connect: str, broker_id: int) -> list[str]:
    zk = KazooClient(hosts=zk_connect)
    zk.start(15)
    try:
        return json.loads(zk.get(f"/brokers/ids/{broker_id}")[0])["endpoints"]
    finally:
        zk.stop()
        zk.close()


def metadata_brokers(port: int) -> dict[int, int]:
    """Broker id -> port as a client connected to `port` is told (its listener's addresses)."""
    with BrokerConnection("127.0.0.1", port) as conn:
        conn.connect()
        return {b.node_id: b.port for b in conn.send(MetadataRequest(topics=[])).brokers}


def refuses(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def set_listeners(cluster: Cluster, broker_id: int, value: str) -> None:
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.incremental_alter_configs({ConfigResource(ResourceType.BROKER, str(broker_id)): [
            AlterConfigOp("listeners", value, AlterConfigOpType.SET)]})


def test_a_listener_added_and_removed_live(cluster, module_zk_chroot):
    broker = cluster.broker(1)
    extra = free_ports(1)[0]
    plain = f"PLAINTEXT://127.0.0.1:{broker.port}"
    set_listeners(cluster, 1, f"{plain},EXTRA://127.0.0.1:{extra}")
    wait_until(lambda: f"EXTRA://127.0.0.1:{extra}" in registered(module_zk_chroot, 1), what="the new registration")
    # Every broker's metadata has it: through EXTRA, broker 1 is told at its EXTRA port (the
    # controller sent UpdateMetadata); broker 0, without an EXTRA listener, is not listed.
    assert wait_until(lambda: metadata_brokers(extra) == {1: extra} or None, what="metadata through EXTRA")
    assert metadata_brokers(broker.port) == {0: cluster.broker(0).port, 1: broker.port}

    topic = "through-extra"
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, replica_assignment={0: [1]})])
    address = f"127.0.0.1:{extra}"
    done = subprocess.run(["kcat", "-b", address, "-t", topic, "-P", "-p", "0"], input=b"via extra\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    read = subprocess.run(["kcat", "-b", address, "-t", topic, "-C", "-p", "0", "-o", "beginning", "-e", "-q"],
                          capture_output=True, timeout=60)
    assert read.stdout == b"via extra\n", read.stderr

    set_listeners(cluster, 1, plain)
    wait_until(lambda: refuses(extra), what="the EXTRA port to close")
    wait_until(lambda: registered(module_zk_chroot, 1) == [plain], what="the registration without EXTRA")
    assert metadata_brokers(broker.port) == {0: cluster.broker(0).port, 1: broker.port}
