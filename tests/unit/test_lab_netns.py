"""The lab's backend seam and the netns backend's plan, without making anything.

The namespaces, links and daemons themselves are tested for real in
tests/integration/test_lab_netns.py; here only the names and addresses each backend
plans, which decide whether two labs can collide.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from kafkalike.lab import netns
from kafkalike.lab.local import Lab, LabSpec, LocalBackend, backend_named
from kafkalike.lab.state import LabError


def test_prefix_is_short_stable_and_per_directory(tmp_path: Path):
    one, other = netns.prefix_for(tmp_path / "a"), netns.prefix_for(tmp_path / "b")
    assert one == netns.prefix_for(tmp_path / "a") and one != other
    assert one.startswith("kl") and len(one) == 8
    assert len(f"{one}-up") <= 15                      # Linux link names
    assert len("v-broker-149") <= 15                   # the hub's bridge ports


def test_plan_skips_subnets_in_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    lab_dir = tmp_path / "lab"
    prefix = netns.prefix_for(lab_dir)
    first = list(netns.SUBNETS.subnets(new_prefix=24))[int(prefix[2:], 16) % 256]
    monkeypatch.setattr(netns, "subnets_in_use", lambda: {first})
    network = netns.NetnsBackend().plan_network(LabSpec(), lab_dir)
    subnet = ipaddress.ip_network(network["subnet"])
    assert subnet != first and subnet.subnet_of(netns.SUBNETS) and subnet.prefixlen == 24
    assert network["machine_address"] == str(subnet[1])
    assert network["hub"] == f"{prefix}-hub" and network["machine_link"] == f"{prefix}-up"

    monkeypatch.setattr(netns, "subnets_in_use", lambda: set(netns.SUBNETS.subnets(new_prefix=24)))
    with pytest.raises(LabError, match="every /24 of 10.200.0.0/16 is in use"):
        netns.NetnsBackend().plan_network(LabSpec(), lab_dir)


def test_netns_places_each_node_on_its_own_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(netns, "subnets_in_use", lambda: set())
    spec = LabSpec(brokers=3, zookeeper="ensemble", backend="netns")
    state = Lab(tmp_path / "lab")._plan(spec, netns.NetnsBackend())
    net = state.network["subnet"].rsplit(".", 1)[0]
    assert [(n.name, n.address, n.peer_ports) for n in state.nodes] == [
        ("zk-1", f"{net}.10:2181", [2888, 3888]), ("zk-2", f"{net}.11:2181", [2888, 3888]),
        ("zk-3", f"{net}.12:2181", [2888, 3888]),
        ("broker-0", f"{net}.100:9092", []), ("broker-1", f"{net}.101:9092", []), ("broker-2", f"{net}.102:9092", [])]
    prefix = state.network["prefix"]
    assert [n.netns for n in state.nodes] == [f"{prefix}-zk-1", f"{prefix}-zk-2", f"{prefix}-zk-3",
                                              f"{prefix}-broker-0", f"{prefix}-broker-1", f"{prefix}-broker-2"]
    assert state.backend == "netns" and state.zookeeper_connect == f"{net}.10:2181,{net}.11:2181,{net}.12:2181"
    backend = netns.NetnsBackend()
    broker = state.broker(1)
    assert backend.broker_properties(broker) == {"advertised.listeners": f"PLAINTEXT://{net}.101:9092"}
    assert backend.launcher(broker)[1:] == ["netns", "exec", f"{prefix}-broker-1"]


def test_local_plan_is_the_loopback_one(tmp_path: Path):
    state = Lab(tmp_path / "lab")._plan(LabSpec.at_base_port(20000, zookeeper="ensemble"), LocalBackend())
    assert [(n.address, n.peer_ports, n.netns) for n in state.nodes] == [
        ("127.0.0.1:20000", [20003, 20006], None), ("127.0.0.1:20001", [20004, 20007], None),
        ("127.0.0.1:20002", [20005, 20008], None),
        ("127.0.0.1:20010", [], None), ("127.0.0.1:20011", [], None), ("127.0.0.1:20012", [], None)]
    assert state.backend == "local" and state.network == {}
    assert LocalBackend().launcher(state.nodes[0]) == [] and LocalBackend().describe(state) is None


def test_backends_by_name_and_what_they_own():
    assert isinstance(backend_named("netns"), netns.NetnsBackend)
    from kafkalike.lab.docker import DockerBackend
    assert isinstance(backend_named("docker"), DockerBackend)     # created without a daemon: checked later
    with pytest.raises(LabError, match="unknown backend 'vagrant'"):
        backend_named("vagrant")
    spec = LabSpec(overrides={"advertised.listeners": "PLAINTEXT://x:1"})
    LocalBackend().validate(spec)                      # the local lab lets you set it
    with pytest.raises(LabError, match="--override advertised.listeners is set by the lab itself"):
        netns.NetnsBackend().validate(spec)
    with pytest.raises(LabError, match="--override advertised.listeners is set by the lab itself"):
        DockerBackend().validate(spec)
    assert not LocalBackend().supports_partitions and netns.NetnsBackend().supports_partitions


def test_every_backend_writes_the_metrics_port_status_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`status` lists http://HOST:METRICS_PORT/metrics for every broker, so the broker's
    server.properties must set that kafkalike.metrics.port on every backend (docker once
    left it out). Both Lab._start and DockerLab._start render through broker_overrides."""
    from kafkalike.lab import docker
    from kafkalike.lab.local import METRICS_PORT, broker_overrides
    monkeypatch.setattr(netns, "subnets_in_use", lambda: set())
    monkeypatch.setattr(docker, "_subnets_in_use", lambda client: set())
    docker_backend = docker.DockerBackend()
    docker_backend._client = object()          # plan_network asks no daemon with the subnets patched
    for backend in (LocalBackend(), netns.NetnsBackend(), docker_backend):
        spec = LabSpec(brokers=3, backend=backend.name)
        state = Lab(tmp_path / backend.name)._plan(spec, backend)
        for node in state.brokers:
            assert node.metrics_port is not None, (backend.name, node)
            assert node.metrics_url == f"http://{node.host}:{node.metrics_port}/metrics"
            assert broker_overrides(spec, backend, node)["kafkalike.metrics.port"] == str(node.metrics_port)
            if backend.name != "local":
                assert node.metrics_port == METRICS_PORT
        if backend.name == "local":
            assert len({n.metrics_port for n in state.brokers}) == 3
