"""bin/kafkalike-lab.sh up --backend docker --zookeeper ensemble: three ZooKeeper containers.

A real dockerd (the running one, or one started here: tests/docker_daemon.py) and the
lab's image from this checkout. The lab's three ZooKeeper servers each run in a container
of their own on the lab's network, with their own address and the usual ports; they form
a quorum (one leader, two followers, as `srvr` says), the brokers register through it,
confluent-kafka on this machine produces and consumes at replication factor 3, and `down`
leaves no container, network, volume or directory. The finalizer runs `down` and removes
anything labelled with the lab's prefix, whatever happened.
"""
from __future__ import annotations


import pytest

from kafkalike.lab.netns import prefix_for
from kafkalike.lab.observe import zookeeper_mode
from tests.docker_daemon import lab_leftovers, remove_lab_leftovers, running_dockerd
from tests.lab_cli import LabUnderTest, round_trip_at_rf3

pytestmark = pytest.mark.integration


def test_ensemble_in_containers_serves_clients_and_down_leaves_nothing():
    with running_dockerd():
        lab = LabUnderTest.create("docker")
        try:
            up = lab.up("--zookeeper", "ensemble", timeout=900)      # a first run builds the images
            assert up.returncode == 0, up.stdout + up.stderr
            assert "ZooKeeper ensemble serving at" in up.stdout, up.stdout

            report = lab.status()
            prefix = prefix_for(lab.dir)
            zookeepers = [n for n in report["nodes"] if n["kind"] == "zookeeper"]
            assert [n["name"] for n in zookeepers] == ["zk-1", "zk-2", "zk-3"]
            assert all(n["alive"] for n in report["nodes"]), report["nodes"]
            assert sorted(n["role"] for n in zookeepers) == ["follower", "follower", "leader"]
            assert len({n["address"] for n in zookeepers}) == 3
            assert all(n["address"].endswith(":2181") for n in zookeepers)
            assert report["zookeeper"]["connect"] == ",".join(n["address"] for n in zookeepers)
            containers = report["network"]["containers"]
            assert sorted(containers) == ["broker-0", "broker-1", "broker-2", "zk-1", "zk-2", "zk-3"]
            assert all(c["status"] == "running" for c in containers.values())
            # Each server's own answer, from this machine, to its container's address.
            addresses = [n["address"].rsplit(":", 1) for n in zookeepers]
            modes = sorted(zookeeper_mode(host, int(port)) for host, port in addresses)
            assert modes == ["follower", "follower", "leader"]

            round_trip_at_rf3(report["bootstrap"], "docker-ensemble")

            down = lab.run("down")
            assert down.returncode == 0, down.stderr
            assert "removed 6 containers, 1 network, 3 volumes" in down.stdout, down.stdout
            assert lab_leftovers(prefix) == ([], [], [])
            assert not lab.dir.exists()
        finally:
            lab.teardown()
            remove_lab_leftovers(prefix_for(lab.dir))
