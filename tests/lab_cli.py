"""Driving bin/kafkalike-lab.sh from tests as a user would, and cleaning up after it.

A test lab lives in a scratch directory under /dev/shm on a block of free ports (never
2181/9092), and is torn down by a finalizer that runs `down` and then kill -9s every pid
the state file named and any process still mentioning the directory, whatever the test
did to the lab in between.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kafkalike.lab.processes import is_alive, port_in_use, processes_mentioning
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import REPO_ROOT, scratch_dir

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


@dataclass
class LabUnderTest:
    scratch: Path                   # a fresh /dev/shm directory; the lab is scratch/lab
    base_port: int
    seen_pids: set[int] = field(default_factory=set)

    @classmethod
    def create(cls) -> LabUnderTest:
        return cls(scratch_dir("lab"), free_port_block())

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
        shutil.rmtree(self.scratch, ignore_errors=True)


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


