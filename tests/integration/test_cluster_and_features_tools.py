"""bin/kafka-cluster.sh and bin/kafka-features.sh against a real broker: the cluster ID
ZooKeeper keeps; KRaft's broker unregistration reported as unsupported by a ZooKeeper-mode
cluster, as 2.8 does; and the features of a cluster that, like 2.8's, supports and
finalizes none."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafkalike.client.admin import AdminClient
from kafkalike.client.admin_types import FeatureUpdate
from kafkalike.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration

BIN = Path(__file__).resolve().parents[2] / "bin"


def run(*args: str, tool: str = "kafka-cluster.sh") -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, timeout=60,
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


def test_features_of_a_cluster_that_finalized_none(broker):
    for action in (["--describe"], ["--describe", "--from-controller"], ["--upgrade-all"],
                   ["--downgrade-all", "--dry-run"], ["--downgrade-all"]):
        done = run(*action, "--bootstrap-server", broker.bootstrap, tool="kafka-features.sh")
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), action
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        meta = admin.describe_features(from_controller=True)
        assert (meta.supported, meta.finalized) == ({}, {})
        refused = admin.update_features({"metadata.version": FeatureUpdate(1)})["metadata.version"]
        assert refused.code == ErrorCode.INVALID_REQUEST
        assert refused.message == ("Could not apply finalized feature update because the provided feature is not "
                                   "supported.")
