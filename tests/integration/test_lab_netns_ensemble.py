"""bin/kafkalike-lab.sh up --backend netns --zookeeper ensemble: three ZooKeeper hosts.

Real namespaces, a bridge and the lab's daemons, made by the lab as root. The three
ZooKeeper servers each run in a namespace of their own at their own address with the
usual ports; they form a quorum (one leader, two followers, as `srvr` says), the brokers
register through it, confluent-kafka on this machine produces and consumes at replication
factor 3, and `down` leaves no process, namespace, link or directory. The finalizer runs
`down`, kill -9s anything left and deletes whatever is named after the lab.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from kafkalike.lab.observe import zookeeper_mode
from kafkalike.lab.processes import is_alive, processes_mentioning
from tests.lab_cli import LabUnderTest, round_trip_at_rf3, lab_network

pytestmark = pytest.mark.integration


def test_ensemble_in_namespaces_serves_clients_and_down_leaves_nothing():
    if os.geteuid() != 0:
        pytest.fail("the netns lab tests need root (network namespaces); run them as root")
    for tool in ("ip", "iptables", "iptables-restore"):
        if shutil.which(tool) is None:
            pytest.fail(f"the netns lab tests need {tool}: scripts/setup.sh installs iproute2 and iptables")
    lab = LabUnderTest.create("netns")
    try:
        up = lab.up("--zookeeper", "ensemble", timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        assert "ZooKeeper ensemble serving at" in up.stdout, up.stdout

        report = lab.status()
        net = report["network"]["subnet"].rsplit(".", 1)[0]
        zookeepers = [n for n in report["nodes"] if n["kind"] == "zookeeper"]
        assert [n["name"] for n in zookeepers] == ["zk-1", "zk-2", "zk-3"]
        assert [n["address"] for n in zookeepers] == [f"{net}.{10 + i}:2181" for i in range(3)]
        assert report["zookeeper"]["connect"] == ",".join(n["address"] for n in zookeepers)
        assert all(n["alive"] for n in report["nodes"]), report["nodes"]
        assert sorted(n["role"] for n in zookeepers) == ["follower", "follower", "leader"]
        # Each server in its own namespace, answering from this machine at its own address.
        assert len({n["netns"] for n in report["nodes"]}) == 6
        for node in zookeepers:
            pids = subprocess.run(["ip", "netns", "pids", node["netns"]], capture_output=True, text=True).stdout
            assert str(node["pid"]) in pids.split(), (node, pids)
        modes = sorted(zookeeper_mode(f"{net}.{10 + i}", 2181) for i in range(3))
        assert modes == ["follower", "follower", "leader"]
        assert f"zookeeper.connect={report['zookeeper']['connect']}" in \
            (lab.dir / "broker-0" / "server.properties").read_text()

        round_trip_at_rf3(report["bootstrap"], "netns-ensemble")

        pids = {n["pid"] for n in report["nodes"]} | lab.seen_pids
        down = lab.run("down")
        assert down.returncode == 0, down.stderr
        assert f"network removed: 7 namespaces and link {report['network']['machine_link']}" in down.stdout
        assert [pid for pid in pids if is_alive(pid)] == []
        assert list(processes_mentioning(str(lab.dir) + "/")) == []
        assert lab_network(lab.dir) == ([], [])
        assert not lab.dir.exists()
    finally:
        lab.teardown()
