"""The Vagrant lab's nodes, provisioned as the VMs provision them and run as systemd would run them.

VMs cannot boot here, so each node gets its own root directory (its "VM"), its own
loopback address and the files `python3 -m kafkalike.lab.provision` writes; then the
unit's ExecStart runs with the unit's Environment, as systemd starts it. A 3-node
ZooKeeper ensemble and a broker built that way must form a cluster a client can use,
and a Spark master and worker must find each other. `vagrant validate` checks the
Vagrantfile that wires these roles to VMs.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kafkalike.broker.config import KafkaConfig
from kafkalike.lab.processes import send_signal
from kafkalike.lab.zookeeper import death_signal_prefix, four_letter_word
from tests.conftest import scratch_dir
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PROVISION = [sys.executable, "-m", "kafkalike.lab.provision"]
# Addresses of their own on loopback, so the nodes keep the VMs' fixed ports (2181, 2888,
# 3888, 9092, 7077, 8080) without meeting the lab or other tests on 127.0.0.1.
ZK_ADDRESSES = ["127.77.0.1", "127.77.0.2", "127.77.0.3"]
BROKER_ADDRESS = "127.77.0.21"
SPARK_ADDRESS = "127.77.0.31"


def provision(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PROVISION, "--root", str(root), *args], capture_output=True, text=True, timeout=60)


def read_unit(path: Path) -> tuple[list[str], dict[str, str]]:
    """ExecStart and Environment of a unit file, as systemd reads them."""
    command: list[str] = []
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart":
            command = shlex.split(value)
        elif key == "Environment":
            name, _, setting = shlex.split(value)[0].partition("=")
            env[name] = setting
    return command, env


class Node:
    """One provisioned host: its root, its unit and, once started, its daemon."""

    def __init__(self, base: Path, name: str, role: str, *args: str) -> None:
        self.root = base / name
        self.name = name
        done = provision(self.root, role, *args)
        assert done.returncode == 0, f"provision {role} failed: {done.stderr}"
        self.unit = self.root / "etc/systemd/system" / f"kafkalike-{role}.service"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        command, env = read_unit(self.unit)
        self.output = self.root / "journal.log"
        with open(self.output, "ab") as out:
            self.proc = subprocess.Popen(death_signal_prefix() + command, env={**os.environ, **env},
                                         stdout=out, stderr=subprocess.STDOUT, cwd="/")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def journal(self) -> str:
        return self.output.read_text(errors="replace")[-3000:] if self.output.exists() else ""

    def stop(self) -> None:
        if self.running():
            send_signal(self.proc.pid, 9)
            self.proc.wait(30)


@pytest.fixture
def nodes():
    base = scratch_dir("provision")
    started: list[Node] = []
    try:
        yield base, started
    finally:
        for node in started:
            node.stop()
        shutil.rmtree(base, ignore_errors=True)


def _free(address: str, port: int) -> None:
    with socket.socket() as s:
        try:
            s.bind((address, port))
        except OSError as exc:
            pytest.fail(f"{address}:{port} is taken ({exc}); the provisioning test needs it")


def test_the_vagrantfile_defines_the_lab_and_validates():
    vagrant = shutil.which("vagrant")
    assert vagrant, "vagrant is not installed (scripts/setup.sh --test installs it)"
    done = subprocess.run([vagrant, "validate", "--ignore-provider"], cwd=REPO / "vagrant",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Vagrantfile validated successfully" in done.stdout
    machines = [line.split()[1].rstrip(":") for line in done.stdout.splitlines() if line.startswith("==> ")]
    assert machines == ["zk1", "zk2", "zk3", "broker1", "broker2", "broker3", "spark"]


def test_an_ensemble_and_a_broker_provisioned_as_vms_serve_clients(nodes):
    base, started = nodes
    for address, port in [(a, p) for a in ZK_ADDRESSES for p in (2181, 2888, 3888)] + [(BROKER_ADDRESS, 9092),
                                                                                       (BROKER_ADDRESS, 9404)]:
        _free(address, port)
    servers = ",".join(ZK_ADDRESSES)
    zookeepers = [Node(base, f"zk{i}", "zookeeper", "--id", str(i), "--servers", servers) for i in (1, 2, 3)]
    connect = ",".join(f"{a}:2181" for a in ZK_ADDRESSES)
    broker = Node(base, "broker1", "broker", "--id", "1", "--address", BROKER_ADDRESS,
                  "--zookeeper", connect, "--brokers", "1")
    # What the broker VM was given is a config our broker accepts, with the lab's settings.
    properties = broker.root / "etc/kafkalike/server.properties"
    config = KafkaConfig.load(properties)
    assert config.get("zookeeper.connect") == connect and config.get("broker.id") == 1
    assert config.get("kafkalike.metrics.port") == 9404         # the docker lab's brokers' port
    assert (zookeepers[1].root / "var/lib/kafkalike/zookeeper/myid").read_text() == "2\n"

    for node in zookeepers:
        node.start()
        started.append(node)
    modes = wait_until(lambda: (lambda m: m if all(m) else None)(
        [_mode(address) for address in ZK_ADDRESSES]), 90, interval=0.5, what="the ensemble's quorum")
    assert sorted(modes) == ["follower", "follower", "leader"]
    broker.start()
    started.append(broker)
    log = broker.root / "var/log/kafkalike/server.log"
    wait_until(lambda: not broker.running() or (log.exists() and "started (kafka.server.KafkaServer)" in log.read_text()),
               60, interval=0.25, what="the provisioned broker to start")
    assert broker.running(), f"the broker exited; its output:\n{broker.journal()}"

    from confluent_kafka import Consumer, Producer
    bootstrap = f"{BROKER_ADDRESS}:9092"
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("provisioned", key=b"k", value=b"from a provisioned node")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "provisioned", "auto.offset.reset": "earliest"})
    consumer.subscribe(["provisioned"])
    try:
        msg = wait_until(lambda: (lambda m: m if m is not None and not m.error() else None)(consumer.poll(0.5)),
                         60, interval=0, what="the record back")
        assert msg.value() == b"from a provisioned node"
        # The controller (the only broker) advertises the address it was provisioned with.
        brokers = consumer.list_topics(timeout=10).brokers
        assert [(b.id, b.host, b.port) for b in brokers.values()] == [(1, BROKER_ADDRESS, 9092)]
    finally:
        consumer.close()
    # Prometheus scrapes the VM's broker where the other labs' brokers are scraped.
    with urllib.request.urlopen(f"http://{BROKER_ADDRESS}:9404/metrics", timeout=10) as answer:
        scraped = answer.read().decode()
    assert 'kafka_server_brokertopicmetrics_messagesin_total{topic="provisioned"}' in scraped, scraped[:2000]


def _mode(address: str) -> str | None:
    try:
        for line in four_letter_word(address, 2181, "srvr").splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def test_a_spark_node_provisioned_as_a_vm_runs_a_master_and_a_worker(nodes):
    base, started = nodes
    for port in (7077, 7078, 8080, 8081):
        _free(SPARK_ADDRESS, port)
    master = Node(base, "spark", "spark-master", "--address", SPARK_ADDRESS)
    worker = Node(base, "spark", "spark-worker", "--address", SPARK_ADDRESS,
                  "--master", f"spark://{SPARK_ADDRESS}:7077", "--cores", "1", "--memory", "512m")
    for node in (master, worker):
        node.start()
        started.append(node)

    def alive_workers():
        assert master.running() and worker.running(), f"{master.journal()}\n{worker.journal()}"
        try:
            with urllib.request.urlopen(f"http://{SPARK_ADDRESS}:8080/json/", timeout=2) as answer:
                state = json.load(answer)
        except (OSError, ValueError):
            return None
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"] or None
    [alive] = wait_until(alive_workers, 120, interval=0.5, what="the worker to register with the master")
    assert alive["host"] == SPARK_ADDRESS and alive["cores"] == 1


def test_provisioning_refuses_bad_input_in_one_line(tmp_path):
    done = provision(tmp_path, "zookeeper", "--id", "4", "--servers", "10.0.0.1,10.0.0.2,10.0.0.3")
    assert done.returncode == 1
    assert done.stderr == "provision zookeeper: --id 4 is not one of the 3 servers (1..3)\n"
    done = provision(tmp_path, "broker", "--id", "1", "--address", "10.0.0.21", "--zookeeper", "z:2181",
                     "--override", "broker.id=7")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "broker.id" in done.stderr
    assert not (tmp_path / "etc/systemd/system").exists()
