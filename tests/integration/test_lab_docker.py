"""bin/kafkalike-lab.sh up --backend docker: each node in a container of its own.

A real dockerd (the one running, or one the module starts: tests/docker_daemon.py), the
lab's image built from this checkout (once, and again only when the checkout changes), a
bridge network, a container per node and a volume per broker. One lab (ZooKeeper
standalone and three brokers) serves the module's tests in order: status shows each
node's container and address and every broker's metrics endpoint serves Prometheus text, confluent-kafka on this machine produces and consumes at
replication factor 3, a broker killed with kill -9 and restarted comes back on its
volume's log, a partition shrinks the ISR and heal restores it, and `down` leaves no
container, network or volume (asked of the SDK). The module's finalizer runs `down` and
removes anything labelled with the lab's prefix, whatever happened.
"""
from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from kafkalike.lab.netns import prefix_for
from kafkalike.lab.processes import processes_mentioning
from tests.docker_daemon import lab_leftovers, remove_lab_leftovers, running_dockerd
from tests.waiting import wait_until
from tests.lab_cli import LabUnderTest, check_metrics_urls, described, isr_sizes, one_line_error, topics

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dockerd():
    with running_dockerd():
        yield


@pytest.fixture(scope="module")
def lab(dockerd):
    lab = LabUnderTest.create("docker")
    try:
        up = lab.up(timeout=900)          # a first run on a machine builds the images
        assert up.returncode == 0, up.stdout + up.stderr
        yield lab
    finally:
        lab.teardown()
        remove_lab_leftovers(prefix_for(lab.dir))


def status_of(lab: LabUnderTest) -> tuple[dict, dict[str, dict]]:
    report = lab.status()
    return report, {node["name"]: node for node in report["nodes"]}


def _client():
    import docker
    return docker.from_env(timeout=60)


def test_status_shows_each_node_in_its_container(lab: LabUnderTest):
    report, nodes = status_of(lab)
    assert report["backend"] == "docker"
    network = report["network"]
    prefix = prefix_for(lab.dir)
    assert network["network"] == f"{prefix}-net"
    assert sorted(network["containers"]) == ["broker-0", "broker-1", "broker-2", "zk-1"]
    assert all(c["status"] == "running" for c in network["containers"].values())
    subnet = network["subnet"].rsplit(".", 1)[0]
    assert nodes["zk-1"]["address"] == f"{subnet}.10:2181"
    assert [nodes[f"broker-{i}"]["address"] for i in range(3)] == [f"{subnet}.{100 + i}:9092" for i in range(3)]
    assert all(n["alive"] for n in nodes.values())
    assert sorted(n["role"] for n in nodes.values() if n["kind"] == "broker") == ["broker", "broker", "controller"]
    client = _client()
    try:
        for name, node in nodes.items():
            container = client.containers.get(f"{prefix}-{name}")
            # The node's main process is the container's: the pid status shows is its State.Pid.
            assert container.attrs["State"]["Pid"] == node["pid"]
            address = container.attrs["NetworkSettings"]["Networks"][network["network"]]["IPAddress"]
            assert address == node["address"].split(":")[0]
        volumes = [v.name for v in client.volumes.list(filters={"label": f"io.kafkalike.lab={prefix}"})]
        assert sorted(volumes) == [f"{prefix}-broker-{i}" for i in range(3)]
    finally:
        client.close()
    table = lab.run("status").stdout
    assert f"broker-2  {prefix}-broker-2  {subnet}.102:9092" in table
    assert f"network: {prefix}-net {network['subnet']}" in table

    # Every metrics endpoint status lists is served, from inside the broker's container.
    assert "kafkalike.metrics.port=9404" in (lab.dir / "broker-1" / "server.properties").read_text()
    urls = check_metrics_urls(report)
    assert urls == [f"http://{subnet}.{100 + i}:9404/metrics" for i in range(3)]
    assert f"metrics (Prometheus): broker-0 {urls[0]}, broker-1 {urls[1]}, broker-2 {urls[2]}" in table


def test_clients_on_this_machine_produce_and_consume_at_rf3(lab: LabUnderTest):
    from confluent_kafka import Consumer, Producer
    report, _ = status_of(lab)
    bootstrap = report["bootstrap"]
    topic = "docker-clients"
    topics("--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 30, "a full ISR")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    failures = []
    for i in range(300):
        producer.produce(topic, f"value-{i}".encode(), on_delivery=lambda err, msg: err and failures.append(err))
    assert producer.flush(30) == 0 and failures == []
    del producer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"docker-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        values: set[str] = set()
        wait_until(lambda: _drain(consumer, values) == 300, 60, "300 records read back")
    finally:
        consumer.close()


def _drain(consumer, values: set) -> int:
    for message in consumer.consume(100, 0.5):
        if message.error() is None:
            values.add(message.value().decode())
    return len(values)


def _segments(volume: str) -> dict[str, int]:
    """partition dir -> size of its .log files, read from the volume's mountpoint."""
    client = _client()
    try:
        root = Path(client.volumes.get(volume).attrs["Mountpoint"])
    finally:
        client.close()
    sizes: dict[str, int] = {}
    for log in root.glob("docker-kill-*/*.log"):
        sizes[log.parent.name] = sizes.get(log.parent.name, 0) + log.stat().st_size
    return sizes


def test_kill_9_and_restart_a_broker_keeps_its_log(lab: LabUnderTest):
    from confluent_kafka import Producer
    report, nodes = status_of(lab)
    bootstrap = report["bootstrap"]
    topic = "docker-kill"
    topics("--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 30, "a full ISR")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce(topic, f"kept-{i}".encode(), partition=i % 3)     # records in every partition
    assert producer.flush(30) == 0
    del producer
    victim = "broker-1"
    volume = f"{prefix_for(lab.dir)}-{victim}"
    wait_until(lambda: len(_segments(volume)) == 3 and all(_segments(volume).values()), 30,
               "broker-1's replicas on its volume")
    before = _segments(volume)
    old_pid = nodes[victim]["pid"]
    killed = lab.run("kill", victim, "-9")
    assert killed.returncode == 0, killed.stderr
    assert f"{victim} (pid {old_pid}) killed with SIGKILL" in killed.stdout
    client = _client()
    try:
        assert client.containers.get(volume).status == "exited"
    finally:
        client.close()
    assert _segments(volume) == before           # the log outlives the container
    restarted = lab.run("restart", victim)
    assert restarted.returncode == 0, restarted.stderr
    _, nodes = status_of(lab)
    assert nodes[victim]["alive"] and nodes[victim]["pid"] != old_pid
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 60, "the ISR to be full again")
    after = _segments(volume)
    assert set(after) == set(before) and all(after[p] >= before[p] for p in before)
    log = lab.run("logs", victim, "-n", "200").stdout
    # It recovered the log it had (an unclean shutdown: no clean-shutdown marker).
    assert "[KafkaServer id=1] started" in log


def view_while_partitioned(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    try:
        return described(bootstrap, topic)
    except AssertionError:
        return {}


def test_partition_shrinks_the_isr_and_heal_restores_it(lab: LabUnderTest):
    report, nodes = status_of(lab)
    bootstrap = report["bootstrap"]
    topic = "docker-partition"
    topics("--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 30, "a full ISR")
    leader = described(bootstrap, topic)[0][0]
    victim = f"broker-{leader}"
    cut = lab.run("partition", f"leader:{topic}:0")
    assert cut.returncode == 0, cut.stderr
    assert f"partition: {victim} cut off from zk-1, " in cut.stdout
    others = ",".join(n["address"] for n in report["nodes"] if n["kind"] == "broker" and n["name"] != victim)
    wait_until(lambda: (view := view_while_partitioned(others, topic)) and
               all(leader_ != leader and leader not in isr and len(isr) == 2 for leader_, isr in view.values()),
               60, f"{victim} out of every ISR and no longer a leader")
    report, nodes = status_of(lab)
    assert report["partition"]["isolated"] == [victim] and report["partition"]["method"] == "drop"
    assert nodes[victim]["alive"]
    healed = lab.run("heal")
    assert healed.returncode == 0, healed.stderr
    wait_until(lambda: [len(isr) for _, isr in view_while_partitioned(bootstrap, topic).values()] == [3, 3, 3], 120,
               "the ISR to be full again after heal")

    # --method link: the container leaves the network; heal puts it back at its address.
    cut = lab.run("partition", victim, "--method", "link")
    assert cut.returncode == 0, cut.stderr
    client = _client()
    try:
        container = client.containers.get(f"{prefix_for(lab.dir)}-{victim}")
        assert report["network"]["network"] not in container.attrs["NetworkSettings"]["Networks"]
        assert lab.run("heal").returncode == 0
        container.reload()
        assert container.attrs["NetworkSettings"]["Networks"][report["network"]["network"]]["IPAddress"] == \
            nodes[victim]["address"].split(":")[0]
    finally:
        client.close()
    wait_until(lambda: lab.status()["under_replicated"] == 0, 120, "no under-replicated partition")


def test_down_leaves_no_container_network_or_volume(lab: LabUnderTest):
    prefix = prefix_for(lab.dir)
    containers, networks, volumes = lab_leftovers(prefix)
    assert len(containers) == 4 and networks == [f"{prefix}-net"] and len(volumes) == 3
    down = lab.run("down")
    assert down.returncode == 0, down.stderr
    assert "removed 4 containers, 1 network, 3 volumes" in down.stdout
    assert lab_leftovers(prefix) == ([], [], [])
    assert not lab.dir.exists()


# -- refusals ------------------------------------------------------------------------------

def test_no_docker_daemon_is_one_line_and_makes_nothing(tmp_path: Path):
    lab_dir = tmp_path / "lab"
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"}
    result = subprocess.run([str(Path("bin/kafkalike-lab.sh").absolute()), "up", "--backend", "docker",
                             "--dir", str(lab_dir)], capture_output=True, text=True, env=env, timeout=60)
    one_line_error(result, "--backend docker: no docker daemon answers at", "no-such.sock", code=1)
    assert not lab_dir.exists()


def test_up_failing_halfway_leaves_no_container_network_or_volume(dockerd):
    # ZooKeeper's container starts, then the broker rejects its config and its container's
    # process exits: up must remove every container, the network and the volume it made.
    lab = LabUnderTest.create("docker")
    prefix = prefix_for(lab.dir)
    try:
        result = lab.up("--brokers", "1", "--override", "num.network.threads=many", timeout=600)
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stderr.startswith("kafkalike-lab.sh: error: up failed, everything stopped again"), \
            result.stderr
        assert "ZooKeeper standalone serving" in result.stdout
        assert lab_leftovers(prefix) == ([], [], [])
        assert list(processes_mentioning(str(lab.dir) + "/")) == []
        assert not (lab.dir / "lab.json").exists()
    finally:
        lab.teardown()
        remove_lab_leftovers(prefix)
