"""Driving bin/kafkalike-lab.sh from tests as a user would, and cleaning up after it.

A test lab lives in a scratch directory under /dev/shm on a block of free ports (never
2181/9092), and is torn down by a finalizer that runs `down` and then kill -9s every pid
the state file named and any process still mentioning the directory, whatever the test
did to the lab in between. A netns lab (`LabUnderTest.create("netns")`) needs no ports of
this machine; its finalizer also deletes every namespace and link named after the lab
(kafkalike.lab.netns.prefix_for), so a failed test leaves no network behind either.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafkalike.lab.netns import prefix_for
from kafkalike.lab.processes import is_alive, port_in_use, processes_mentioning
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import REPO_ROOT, scratch_dir
from tests.waiting import wait_until

LAB = REPO_ROOT / "bin" / "kafkalike-lab.sh"
# ZooKeeper base..base+2, quorum +3.., election +6.., brokers +10..: a block of 16 covers
# a 3-broker lab with either kind of ZooKeeper.
PORT_BLOCK = 16


def free_port_block(size: int = PORT_BLOCK) -> int:
    """A base port with `size` consecutive free ports above it (a kernel-chosen start)."""
    for _ in range(100):
        [base] = free_ports(1)
        if base + size < 65536 and not any(port_in_use("127.0.0.1", p) for p in range(base, base + size)):
            return base
    raise RuntimeError(f"no block of {size} free ports found")


def run_lab(lab_dir: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """bin/kafkalike-lab.sh ARGS --dir LAB_DIR, output captured as text."""
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run([str(LAB), *args, "--dir", str(lab_dir)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO_ROOT)


def state_pids(lab_dir: Path) -> list[int]:
    try:
        state = json.loads((lab_dir / "lab.json").read_text())
    except (OSError, ValueError):
        return []
    return [node["pid"] for node in state["nodes"] if node.get("pid")]


def topics(*args: str) -> str:
    """bin/kafka-topics.sh ARGS from this machine; its stdout."""
    result = subprocess.run([str(REPO_ROOT / "bin" / "kafka-topics.sh"), *args], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHON": sys.executable})
    assert result.returncode == 0, result.stderr
    return result.stdout


def isr_sizes(bootstrap: str, topic: str) -> list[int]:
    """The ISR size of each partition, as kafka-topics.sh --describe prints it."""
    described = topics("--bootstrap-server", bootstrap, "--describe", "--topic", topic)
    return [len(isr.split(",")) for isr in re.findall(r"\tIsr: (\S+)", described)]


def round_trip_at_rf3(bootstrap: str, topic: str, count: int = 200) -> None:
    """What a user checks first on a new lab: a topic of 3 partitions at replication
    factor 3 gets a full ISR, confluent-kafka's acks=all writes all succeed, and a group
    reads every one of them back."""
    from confluent_kafka import Consumer, Producer
    topics("--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, topic) == [3, 3, 3], 30, "a full ISR")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    failures: list = []
    for i in range(count):
        producer.produce(topic, f"value-{i}".encode(), on_delivery=lambda err, msg: err and failures.append(err))
    assert producer.flush(30) == 0 and failures == []
    del producer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ensemble-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    values: set[str] = set()
    try:
        consumer.subscribe([topic])

        def drained() -> bool:
            for message in consumer.consume(100, 0.5):
                if message.error() is None:
                    values.add(message.value().decode())
            return len(values) == count
        wait_until(drained, 60, f"{count} records read back")
    finally:
        consumer.close()
    assert values == {f"value-{i}" for i in range(count)}


def described(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, ISR), as kafka-topics.sh --describe prints them."""
    text = topics("--bootstrap-server", bootstrap, "--describe", "--topic", topic)
    return {int(p): (int(leader), [int(b) for b in isr.split(",")])
            for p, leader, isr in re.findall(r"\tPartition: (\d+)\tLeader: (-?\d+)\t.*\tIsr: (\S+)", text)}


def check_metrics_urls(report: dict) -> list[str]:
    """Every broker's metrics_url in a `status --json` report answers with Prometheus text
    (as prometheus_client parses it) carrying a Kafka metric; returns the URLs."""
    from tests.metrics_scrape import Scrape
    urls = [node["metrics_url"] for node in report["nodes"] if node["kind"] == "broker"]
    assert urls and all(urls), report["nodes"]
    for url in urls:
        scrape = Scrape(url)
        assert scrape.content_type.startswith("text/plain"), (url, scrape.content_type)
        assert "kafka_server_replicamanager_underreplicatedpartitions" in scrape.samples, url
        assert scrape.value("kafka_server_kafkaserver_brokerstate") == 3, url     # RunningAsBroker
    return urls


def one_line_error(result: subprocess.CompletedProcess, *fragments: str, code: int | None = None) -> None:
    """Refused with exactly one line on stderr holding every fragment (and exit `code` if given)."""
    assert result.returncode != 0, result.stdout
    if code is not None:
        assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def lab_network(lab_dir: Path) -> tuple[list[str], list[str]]:
    """The namespaces and the links of this machine named after the lab (its netns prefix)."""
    prefix = prefix_for(lab_dir)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    namespaces = [line.split()[0] for line in listed.splitlines() if line.startswith(prefix + "-")]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    ours = [m.group(1) for m in re.finditer(r"^\d+: ([^:@]+)", links, re.M) if m.group(1).startswith(prefix)]
    return namespaces, ours


@dataclass
class LabUnderTest:
    scratch: Path                   # a fresh /dev/shm directory; the lab is scratch/lab
    base_port: int
    backend: str = "local"
    seen_pids: set[int] = field(default_factory=set)

    @classmethod
    def create(cls, backend: str = "local") -> LabUnderTest:
        # A netns lab's nodes have addresses of their own and the usual ports.
        return cls(scratch_dir("lab"), free_port_block() if backend == "local" else 0, backend)

    def up(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        """`up` on this lab's backend (on its block of ports when local)."""
        where = ["--base-port", str(self.base_port)] if self.backend == "local" else ["--backend", self.backend]
        return self.run("up", *where, *args, timeout=timeout)

    @property
    def dir(self) -> Path:
        return self.scratch / "lab"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.base_port + 10 + i}" for i in range(3))

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        self.seen_pids.update(state_pids(self.dir))
        result = run_lab(self.dir, *args, timeout=timeout)
        self.seen_pids.update(state_pids(self.dir))
        return result

    def status(self) -> dict:
        result = self.run("status", "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def teardown(self) -> None:
        """`down`, then kill -9 whatever is left: pids the state ever named, strays by directory."""
        self.seen_pids.update(state_pids(self.dir))
        try:
            run_lab(self.dir, "down", "--timeout", "10", timeout=120)
        except subprocess.TimeoutExpired:
            pass
        leftovers = {pid for pid in self.seen_pids if is_alive(pid)
                     and any(str(self.dir).encode() in word for word in _cmdline(pid))}
        leftovers |= set(processes_mentioning(str(self.dir) + os.sep))
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if shutil.which("ip") and os.geteuid() == 0:     # any lab may have tried a netns `up`
            self.remove_network()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def remove_network(self) -> None:
        """Whatever `down` left of the lab's network: processes inside its namespaces are
        kill -9ed, the namespaces and this machine's link deleted."""
        namespaces, links = lab_network(self.dir)
        for link in links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for ns in namespaces:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


