"""Real broker processes on loopback, for tests, benchmarks and the demo.

Each broker is `python -m kafkalike.broker.main <its own server.properties>`, started
the way an operator would start it. kill() is kill -9, the fault the fault tests
inject; stop() is SIGTERM, a clean shutdown. Test processes die with their parent;
the lab's (die_with_parent=False) run in a session of their own and outlive it, and a
later command takes them over by pid with BrokerProcess.attach().
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from kafkalike.lab.processes import is_alive, send_signal, wait_gone
from kafkalike.lab.zookeeper import death_signal_prefix, free_ports

REPO_ROOT = Path(__file__).resolve().parents[2]
BROKER_MAIN = "kafkalike.broker.main"


class BrokerStartError(RuntimeError):
    pass


class BrokerProcess:
    def __init__(self, broker_id: int, zk_connect: str, base_dir: Path, port: int | None = None,
                 overrides: dict[str, str] | None = None, host: str = "127.0.0.1",
                 die_with_parent: bool = True, config_header: str = "", launcher: Sequence[str] = ()):
        self.broker_id = broker_id
        # Words run before the broker's command, e.g. `ip netns exec NS` (the lab's netns
        # backend). They must exec it, so that the pid started is the broker's.
        self.launcher = list(launcher)
        self.die_with_parent = die_with_parent
        self.config_header = config_header     # comment lines on top of server.properties
        self.zk_connect = zk_connect
        self.base_dir = Path(base_dir)
        self.host = host
        self.port = port or free_ports(1)[0]
        self.log_dir = self.base_dir / f"broker-{broker_id}" / "data"
        self.app_log_dir = self.base_dir / f"broker-{broker_id}" / "logs"
        self.config_path = self.base_dir / f"broker-{broker_id}" / "server.properties"
        self.overrides = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://{host}:{self.port}",
            "log.dirs": str(self.log_dir),
            "zookeeper.connect": zk_connect,
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
            **(overrides or {}),
        }
        self.proc: subprocess.Popen | None = None
        self._pid: int | None = None          # of a broker another process started (attach)
        self._writes_config = True
        self._log_offset = 0                   # server.log's size when this run started

    @classmethod
    def attach(cls, broker_id: int, zk_connect: str, base_dir: Path, port: int, pid: int | None,
               host: str = "127.0.0.1", launcher: Sequence[str] = ()) -> "BrokerProcess":
        """A handle on a lab broker started by an earlier command; start() then reuses its
        server.properties as it is on disk (an operator may have edited it)."""
        broker = cls(broker_id, zk_connect, base_dir, port, host=host, die_with_parent=False, launcher=launcher)
        broker._pid = pid
        broker._writes_config = False
        return broker

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else self._pid

    @property
    def server_log(self) -> Path:
        return self.app_log_dir / "server.log"

    def write_config(self) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"{k}={v}" for k, v in self.overrides.items()]
        self.config_path.write_text(self.config_header + "\n".join(lines) + "\n")

    def start(self) -> "BrokerProcess":
        if self._writes_config:
            self.write_config()
        self.app_log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._log_offset = self.server_log.stat().st_size
        except FileNotFoundError:
            self._log_offset = 0
        env = dict(os.environ, LOG_DIR=str(self.app_log_dir),
                   PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        command = [*self.launcher, sys.executable, "-m", BROKER_MAIN, str(self.config_path)]
        out = open(self.app_log_dir / "kafkaServer.out", "ab")
        if self.die_with_parent:
            self.proc = subprocess.Popen(death_signal_prefix() + command, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, cwd=str(REPO_ROOT))
        else:
            # A daemon: its own session (no terminal's SIGHUP reaches it), nothing on stdin.
            self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, cwd=str(REPO_ROOT), start_new_session=True)
        out.close()
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Listening and registered (its 'started' line is written after registration)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BrokerStartError(f"broker {self.broker_id} exited with {self.proc.returncode}:\n"
                                       + self.log_tail())
            if self.proc is None and not self.is_running():
                raise BrokerStartError(f"broker {self.broker_id} is not running:\n" + self.log_tail())
            if self._started() and self._knows_controller():
                return
            time.sleep(0.1)
        raise BrokerStartError(f"broker {self.broker_id} not ready after {timeout}s:\n" + self.log_tail())

    def _started(self) -> bool:
        try:
            with open(self.server_log, "rb") as log:
                # Only this run's lines count (a rolled-over log starts again from 0).
                log.seek(self._log_offset if os.fstat(log.fileno()).st_size >= self._log_offset else 0)
                text = log.read().decode(errors="replace")
        except FileNotFoundError:
            return False
        marker = f"[KafkaServer id={self.broker_id}] started"
        return text.rfind(marker) > text.rfind(f"[KafkaServer id={self.broker_id}] shut")

    def _knows_controller(self) -> bool:
        """Serving metadata that names a controller: the controller has spoken to it."""
        from kafkalike.client.connection import BrokerConnection
        from kafkalike.protocol.messages.metadata import MetadataRequest
        conn = BrokerConnection(self.host, self.port, timeout=2)
        try:
            conn.connect()
            md = conn.send(MetadataRequest(topics=[]), version=1)
            return md.controller_id >= 0 and any(b.node_id == self.broker_id for b in md.brokers)
        except Exception:
            return False
        finally:
            conn.close()

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM: the broker shuts down cleanly (controlled shutdown, clean-shutdown marker)."""
        if self.proc is None:
            self._stop_attached(timeout)
            return None
        if self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def kill(self) -> None:
        """kill -9: the crash the fault tests inject."""
        if self.proc is None:
            if self.is_running() and send_signal(self._pid, signal.SIGKILL):
                wait_gone(self._pid, 10)
            return
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def _stop_attached(self, timeout: float) -> None:
        if not self.is_running() or not send_signal(self._pid, signal.SIGTERM):
            return
        if not wait_gone(self._pid, timeout) and send_signal(self._pid, signal.SIGKILL):
            wait_gone(self._pid, 10)

    def restart(self, timeout: float = 30.0) -> None:
        self.start()
        self.wait_ready(timeout)

    def is_running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return is_alive(self._pid, (BROKER_MAIN, str(self.config_path)))

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = (self.app_log_dir / "kafkaServer.out").read_text(errors="replace")
        except FileNotFoundError:
            return "(no output)"
        return "\n".join(text.splitlines()[-lines:])


class Cluster:
    """N brokers sharing one ZooKeeper connect string (usually with a chroot)."""

    def __init__(self, zk_connect: str, base_dir: Path, size: int = 1,
                 overrides: dict[str, str] | None = None):
        ports = free_ports(size)
        self.brokers = [BrokerProcess(i, zk_connect, base_dir, ports[i], overrides) for i in range(size)]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self, timeout: float = 60.0) -> "Cluster":
        for b in self.brokers:
            b.start()
        for b in self.brokers:
            b.wait_ready(timeout)
        return self

    def stop(self) -> None:
        for b in self.brokers:
            b.stop()

    def kill(self) -> None:
        for b in self.brokers:
            b.kill()

    def broker(self, broker_id: int) -> BrokerProcess:
        return self.brokers[broker_id]
