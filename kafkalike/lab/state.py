"""What a lab is made of, kept in its directory so that every command finds it again.

`lab.json` in the lab directory names the backend, each node (zk-1.., broker-0..), its
address (and network namespace), pid, config file, data and log locations, and what the
backend made besides processes (the netns backend's namespaces, links and subnet). `up` writes it as it starts processes (so
even an interrupted `up` leaves something `down` can clean), `kill`/`restart` keep the
pids current, `down` removes it. Writers hold an flock on `lab.lock`, so two commands
from two shells do not overwrite each other's pids.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

STATE_FILE = "lab.json"
LOCK_FILE = "lab.lock"
FORMAT_VERSION = 1


class LabError(Exception):
    """Something the user asked for cannot be done; the message is the one line they see.

    details, when there are any (a failed start's log tail), are printed below that line.
    """

    def __init__(self, message: str, details: str = "", exit_code: int = 1) -> None:
        super().__init__(message)
        self.details = details
        self.exit_code = exit_code


@dataclass
class Node:
    name: str                   # zk-1, zk-2, ... or broker-0, broker-1, ...
    kind: str                   # "zookeeper" or "broker"
    host: str
    port: int                   # ZooKeeper's client port or the broker's listener port
    dir: str                    # everything of this node lives under here
    config: str                 # zoo.cfg or server.properties
    log: str                    # zookeeper.log or server.log
    data_dir: str               # ZooKeeper's dataDir or the broker's log.dirs
    pid: int | None = None
    broker_id: int | None = None
    myid: int | None = None
    peer_ports: list[int] = field(default_factory=list)   # quorum and election port of an ensemble member
    netns: str | None = None    # the network namespace the node runs in (netns backend), None on loopback
    metrics_port: int | None = None   # a broker's kafkalike.metrics.port (Prometheus endpoint), docs/metrics.md

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def metrics_url(self) -> str | None:
        """Where Prometheus (or the dashboard's --metrics-url) scrapes this broker."""
        return None if self.metrics_port is None else f"http://{self.host}:{self.metrics_port}/metrics"


@dataclass
class LabState:
    dir: str
    backend: str
    zookeeper_mode: str          # "standalone" or "ensemble"
    zookeeper_connect: str
    nodes: list[Node]
    # What the backend made besides processes (netns: namespaces, links, subnet, partition);
    # empty for the local backend.
    network: dict[str, Any] = field(default_factory=dict)
    # `up --spark`: the Spark standalone master and worker (urls, each daemon's pid, class,
    # address and log); empty without one.
    spark: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    version: int = FORMAT_VERSION

    # -- looking things up -------------------------------------------------------------

    def node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "broker"]

    @property
    def zookeepers(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "zookeeper"]

    def broker(self, broker_id: int) -> Node | None:
        return next((n for n in self.brokers if n.broker_id == broker_id), None)

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.brokers)

    # -- on disk -----------------------------------------------------------------------

    @staticmethod
    def path(lab_dir: Path) -> Path:
        return Path(lab_dir) / STATE_FILE

    @classmethod
    def exists(cls, lab_dir: Path) -> bool:
        return cls.path(lab_dir).exists()

    @classmethod
    def load(cls, lab_dir: Path) -> LabState:
        path = cls.path(lab_dir)
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            raise LabError(f"there is no lab in {lab_dir} (start one with: kafkalike-lab.sh up)") from None
        except (OSError, ValueError) as error:
            raise LabError(f"cannot read {path}: {error}") from None
        if raw.get("version") != FORMAT_VERSION:
            raise LabError(f"{path} has state format {raw.get('version')}, this lab reads {FORMAT_VERSION}")
        nodes = [Node(**node) for node in raw.pop("nodes")]
        return cls(nodes=nodes, **raw)

    def save(self) -> None:
        path = self.path(Path(self.dir))
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, path)


@contextlib.contextmanager
def locked(lab_dir: Path) -> Iterator[None]:
    """An exclusive lock on the lab's state for one read-modify-write."""
    lab_dir = Path(lab_dir)
    lab_dir.mkdir(parents=True, exist_ok=True)
    with open(lab_dir / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def record_pid(lab_dir: Path, name: str, pid: int | None) -> None:
    """Store one node's new pid (restart) without clobbering another command's changes."""
    with locked(lab_dir):
        state = LabState.load(lab_dir)
        node = state.node(name)
        if node is not None:
            node.pid = pid
            state.save()
