"""bin/kafka-cluster.sh against a real broker: the cluster ID ZooKeeper keeps, and KRaft's
broker unregistration reported as unsupported by a ZooKeeper-mode cluster, as 2.8 does."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

pytestmark = pytest.mark.integration

TOOL = Path(__file__).resolve().parents[2] / "bin" / "kafka-cluster.sh"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOL), *args], capture_output=True, text=True, timeout=60,
                          env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


def test_cluster_id_is_the_one_in_zookeeper_and_unregister_is_not_offered(broker, module_zk_chroot, tmp_path):
    zk = KazooClient(hosts=module_zk_chroot)
    zk.start(15)
    try:
        stored = json.loads(zk.get("/cluster/id")[0])["id"]
    finally:
        zk.stop()
        zk.close()
    done = run("cluster-id", "--bootstrap-server", broker.bootstrap)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"Cluster ID: {stored}\n"
    config = tmp_path / "admin.properties"
    config.write_text(f"bootstrap.servers={broker.bootstrap}\n")
    done = run("unregister", "--config", str(config), "--id", "0")
    assert (done.returncode, done.stdout) == (0, "The target cluster does not support the broker unregistration "
                                                 "API.\n")
    missing = run("unregister", "-b", broker.bootstrap)
    assert missing.returncode == 1 and "kafka-cluster unregister: error: argument --id/-i is required" in missing.stderr
    assert run("cluster-id").stderr == "Please specify --bootstrap-server.\n"
