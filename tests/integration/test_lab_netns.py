"""bin/kafkalike-lab.sh up --backend netns: each node on a network-namespace host of its own.

Real namespaces, veth links, a bridge and iptables, made by the lab as root; real
ZooKeeper and broker daemons inside them. One lab (ZooKeeper standalone and three
brokers) serves the module's tests in order: status shows each host's address, clients
on this machine produce and consume at replication factor 3, a broker is killed with
kill -9 and restarted, a partition shrinks the ISR and heal restores it, and `down`
leaves no process, namespace or link. Each test leaves the lab whole for the next. The
module's finalizer runs `down`, kill -9s anything left and deletes any namespace or link
named after the lab, whatever happened.

The refusals (no root, no `ip`, an unknown backend, partition on the local backend, an
`up` that fails halfway) have tests of their own below.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafkalike.lab.processes import is_alive, processes_mentioning
from tests.waiting import wait_until
from tests.lab_cli import (
    LabUnderTest, check_metrics_urls, described, isr_sizes, lab_network, one_line_error, run_lab, topics,
)

pytestmark = pytest.mark.integration


def _require_root_and_ip() -> None:
    """The netns backend's real parts: fail (never skip) saying what is missing."""
    if os.geteuid() != 0:
        pytest.fail("the netns lab tests need root (network namespaces); run them as root")
    for tool in ("ip", "iptables", "iptables-restore"):
        if shutil.which(tool) is None:
            pytest.fail(f"the netns lab tests need {tool}: scripts/setup.sh installs iproute2 and iptables")


@pytest.fixture(scope="module")
def lab():
    _require_root_and_ip()
    lab = LabUnderTest.create("netns")
    try:
        up = lab.up()
        assert up.returncode == 0, up.stdout + up.stderr
        yield lab
    finally:
        lab.teardown()


def status_of(lab: LabUnderTest) -> tuple[dict, dict[str, dict]]:
    report = lab.status()
    return report, {node["name"]: node for node in report["nodes"]}


def bootstrap_without(report: dict, name: str) -> str:
    """The brokers' addresses except one (a cut-off broker answers Metadata from its stale view)."""
    return ",".join(n["address"] for n in report["nodes"] if n["kind"] == "broker" and n["name"] != name)


def view_while_partitioned(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    """kafka-topics.sh --describe's leaders and ISRs, or {} when the tool failed this time:
    the admin client sends DescribeConfigs to any broker it knows, and the cut-off one is
    known (this machine reaches it) but cannot answer (it cannot reach ZooKeeper)."""
    try:
        return described(bootstrap, topic)
    except AssertionError:
        return {}


def test_status_shows_each_node_on_its_own_host(lab: LabUnderTest):
    report, nodes = status_of(lab)
    assert report["backend"] == "netns"
    network = report["network"]
    subnet = network["subnet"]
    assert subnet.startswith("10.200.") and subnet.endswith(".0/24"), network
    net = subnet.rsplit(".", 1)[0]
    assert network["machine_address"] == f"{net}.1"
    # One address per node on the lab's subnet, the usual port on each, a namespace each.
    assert nodes["zk-1"]["address"] == f"{net}.10:2181"
    for i in range(3):
        assert nodes[f"broker-{i}"]["address"] == f"{net}.{100 + i}:9092"
    assert len({n["netns"] for n in nodes.values()}) == 4
    assert all(n["alive"] for n in nodes.values())
    assert nodes["zk-1"]["role"] == "standalone"
    assert sorted(nodes[f"broker-{i}"]["role"] for i in range(3)) == ["broker", "broker", "controller"]
    assert report["partition"] is None
    namespaces, links = lab_network(lab.dir)
    assert sorted(namespaces) == sorted([*(n["netns"] for n in nodes.values()), network["hub"]])
    assert links == [network["machine_link"]]

    # Each daemon really lives in its namespace: `ip netns pids` names its pid.
    for node in nodes.values():
        pids = subprocess.run(["ip", "netns", "pids", node["netns"]], capture_output=True, text=True).stdout.split()
        assert str(node["pid"]) in pids, (node, pids)

    # The brokers advertise their own host's address; the table shows them.
    properties = (lab.dir / "broker-1" / "server.properties").read_text()
    assert f"advertised.listeners=PLAINTEXT://{net}.101:9092" in properties
    assert f"zookeeper.connect={net}.10:2181" in properties
    assert "kafkalike.metrics.port=9404" in properties
    table = lab.run("status").stdout
    assert f"network: {subnet} on bridge br0 in namespace {network['hub']}" in table
    assert f"broker-2  {nodes['broker-2']['netns']}  {net}.102:9092" in table
    assert "partition: none" in table

    # Every metrics endpoint status lists serves Prometheus text from inside its namespace.
    urls = check_metrics_urls(report)
    assert urls == [f"http://{net}.{100 + i}:9404/metrics" for i in range(3)]
    assert f"metrics (Prometheus): broker-0 {urls[0]}, broker-1 {urls[1]}, broker-2 {urls[2]}" in table


def test_clients_on_this_machine_produce_and_consume_at_rf3(lab: LabUnderTest):
    from confluent_kafka import Consumer, Producer

    report, _ = status_of(lab)
    bootstrap = report["bootstrap"]
    topic = "netns-clients"
    topics("--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 30, "a full ISR")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    delivered: list = []
    for i in range(300):
        producer.produce(topic, partition=i % 3, value=f"record-{i}".encode(),
                         on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(60) == 0
    assert [err for err, _ in delivered if err is not None] == []
    assert {msg.partition() for _, msg in delivered} == {0, 1, 2}

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"netns-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values = set()
    try:
        wait_until(lambda: _drain(consumer, values) >= 300, 60, "300 records back")
    finally:
        consumer.close()
    assert values == {f"record-{i}" for i in range(300)}


def _drain(consumer, values: set) -> int:
    for message in consumer.consume(100, 0.5):
        if message.error() is None:
            values.add(message.value().decode())
    return len(values)


def test_kill_9_and_restart_a_broker(lab: LabUnderTest):
    report, nodes = status_of(lab)
    bootstrap = report["bootstrap"]
    topic = "netns-kill"
    topics("--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 30, "a full ISR")
    victim = "broker-1"
    old_pid = nodes[victim]["pid"]
    killed = lab.run("kill", victim, "-9")
    assert killed.returncode == 0, killed.stderr
    assert f"{victim} (pid {old_pid}) killed with SIGKILL" in killed.stdout
    assert not is_alive(old_pid)
    # Once ZooKeeper expires its session (6 s), its replicas leave the ISR.
    others = bootstrap_without(report, victim)
    wait_until(lambda: isr_sizes(others, topic) == [2, 2, 2], 40, "the ISR to shrink to 2")

    restarted = lab.run("restart", victim)
    assert restarted.returncode == 0, restarted.stderr
    _, nodes = status_of(lab)
    assert nodes[victim]["alive"] and nodes[victim]["pid"] != old_pid
    pids = subprocess.run(["ip", "netns", "pids", nodes[victim]["netns"]], capture_output=True, text=True).stdout
    assert str(nodes[victim]["pid"]) in pids.split()      # back in its own namespace
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 60, "the ISR to be full again")


def test_partition_shrinks_the_isr_and_heal_restores_it(lab: LabUnderTest):
    report, nodes = status_of(lab)
    bootstrap = report["bootstrap"]
    topic = "netns-partition"
    topics("--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 30, "a full ISR")
    leader = described(bootstrap, topic)[0][0]
    victim = f"broker-{leader}"
    victim_address = nodes[victim]["address"]
    cut = lab.run("partition", f"leader:{topic}:0")
    assert cut.returncode == 0, cut.stderr
    assert f"partition: {victim} cut off from zk-1, " in cut.stdout

    # From this machine the victim still answers; between the nodes, packets are dropped.
    host, port = victim_address.split(":")
    socket.create_connection((host, int(port)), timeout=5).close()
    others = bootstrap_without(report, victim)
    wait_until(lambda: (view := view_while_partitioned(others, topic)) and
               all(leader_ != leader and leader not in isr and len(isr) == 2 for leader_, isr in view.values()),
               60, f"{victim} out of every ISR and no longer a leader")
    report, nodes = status_of(lab)
    assert report["partition"]["isolated"] == [victim] and report["partition"]["method"] == "drop"
    assert nodes[victim]["alive"] and nodes[victim]["role"] == "unregistered"   # its session expired
    assert f"partition: {victim} cut off from" in lab.run("status").stdout
    one_line_error(lab.run("partition", "broker-0"), "already partitioned")

    healed = lab.run("heal")
    assert healed.returncode == 0, healed.stderr
    assert f"healed: {victim} reach" in healed.stdout
    wait_until(lambda: [len(isr) for _, isr in view_while_partitioned(bootstrap, topic).values()] == [3, 3, 3], 90,
               "the ISR to be full again after heal")
    report, nodes = status_of(lab)
    assert report["partition"] is None and nodes[victim]["role"] in ("broker", "controller")
    assert "no partition to heal" in lab.run("heal").stdout

    # --method link: the bridge port goes down, so even this machine cannot reach it.
    cut = lab.run("partition", victim, "--method", "link")
    assert cut.returncode == 0, cut.stderr
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()
    assert lab.run("heal").returncode == 0
    socket.create_connection((host, int(port)), timeout=5).close()
    wait_until(lambda: lab.status()["under_replicated"] == 0, 90, "no under-replicated partition")


def test_down_leaves_no_process_namespace_or_link(lab: LabUnderTest):
    report, nodes = status_of(lab)
    pids = {n["pid"] for n in nodes.values()} | lab.seen_pids
    namespaces, links = lab_network(lab.dir)
    assert namespaces and links
    down = lab.run("down")
    assert down.returncode == 0, down.stderr
    assert f"network removed: 5 namespaces and link {report['network']['machine_link']}" in down.stdout
    assert [pid for pid in pids if is_alive(pid)] == []
    assert list(processes_mentioning(str(lab.dir) + "/")) == []
    assert lab_network(lab.dir) == ([], [])
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in listed for ns in namespaces)
    assert report["network"]["machine_link"] not in subprocess.run(["ip", "link"], capture_output=True,
                                                                    text=True).stdout
    assert not lab.dir.exists()


# -- refusals ------------------------------------------------------------------------------


@pytest.fixture
def scratch_lab():
    lab = LabUnderTest.create("netns")
    try:
        yield lab
    finally:
        lab.teardown()


def test_netns_without_root_is_one_line_and_makes_nothing(scratch_lab: LabUnderTest):
    _require_root_and_ip()
    # A process that is not root: `unshare --user` gives it a user namespace in which it
    # is uid 65534 (nobody) with no power over this machine's network. (setpriv to
    # nobody would do as well, but nobody cannot read this interpreter's packages.)
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(["unshare", "--user", str(Path("bin/kafkalike-lab.sh").absolute()), "up",
                             "--backend", "netns", "--dir", str(scratch_lab.dir)],
                            capture_output=True, text=True, env=env, timeout=60)
    one_line_error(result, "--backend netns needs root", code=1)
    assert not scratch_lab.dir.exists()
    assert lab_network(scratch_lab.dir) == ([], [])


def test_netns_without_ip_is_one_line_and_makes_nothing(scratch_lab: LabUnderTest, tmp_path: Path):
    _require_root_and_ip()
    # A PATH with what bin/kafkalike-lab.sh needs (bash, dirname, readlink) and no `ip`.
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "dirname", "readlink"):
        (tools / tool).symlink_to(shutil.which(tool))
    env = {**os.environ, "PYTHON": sys.executable, "PATH": str(tools)}
    result = subprocess.run([str(Path("bin/kafkalike-lab.sh").absolute()), "up", "--backend", "netns",
                             "--dir", str(scratch_lab.dir)], capture_output=True, text=True, env=env, timeout=60)
    one_line_error(result, "needs the ip command (iproute2)", code=1)
    assert not scratch_lab.dir.exists()


def test_unknown_backend_is_one_line(scratch_lab: LabUnderTest):
    one_line_error(scratch_lab.run("up", "--backend", "vmware"), "invalid choice: 'vmware'", code=2)
    assert not scratch_lab.dir.exists()


def test_up_failing_halfway_removes_the_network(scratch_lab: LabUnderTest):
    _require_root_and_ip()
    # ZooKeeper starts in its namespace, then every broker rejects its config: up must
    # stop ZooKeeper and delete every namespace and link it made.
    result = scratch_lab.up("--brokers", "1", "--override", "num.network.threads=many", timeout=180)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("kafkalike-lab.sh: error: up failed, everything stopped again"), result.stderr
    assert "network namespaces" in result.stdout and "ZooKeeper standalone serving" in result.stdout
    assert lab_network(scratch_lab.dir) == ([], [])
    assert list(processes_mentioning(str(scratch_lab.dir) + "/")) == []
    assert not (scratch_lab.dir / "lab.json").exists()


def test_partition_on_the_local_backend_says_it_needs_netns():
    lab = LabUnderTest.create("local")
    try:
        up = lab.up("--brokers", "1")
        assert up.returncode == 0, up.stdout + up.stderr
        one_line_error(lab.run("partition", "broker-0"), "partition needs --backend netns or docker", code=2)
        one_line_error(lab.run("heal"), "heal needs --backend netns or docker", code=2)
        one_line_error(lab.run("scenario", "partition-leader"), "needs a lab on --backend netns", code=1)
        status = json.loads(lab.run("status", "--json").stdout)
        assert status["network"] is None and status["partition"] is None
        assert "NAMESPACE" not in lab.run("status").stdout
    finally:
        lab.teardown()
    one_line_error(run_lab(lab.dir, "heal"), "there is no lab", code=1)
    assert not lab.dir.exists()
