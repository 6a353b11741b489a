"""Real broker processes on loopback, for tests, benchmarks and the demo.

Each broker is `python -m kafkalike.broker.main <its own server.properties>`, started
the way an operator would start it. kill() is kill -9, the fault the fault tests
inject; stop() is SIGTERM, a clean shutdown. Processes die with their parent.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafkalike.lab.zookeeper import death_signal_prefix, free_ports

REPO_ROOT = Path(__file__).resolve().parents[2]


class BrokerStartError(RuntimeError):
    pass


class BrokerProcess:
    def __init__(self, broker_id: int, zk_connect: str, base_dir: Path, port: int | None = None,
                 overrides: dict[str, str] | None = None, host: str = "127.0.0.1"):
        self.broker_id = broker_id
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

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def write_config(self) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"{k}={v}" for k, v in self.overrides.items()]
        self.config_path.write_text("\n".join(lines) + "\n")

    def start(self) -> "BrokerProcess":
        self.write_config()
        self.app_log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, LOG_DIR=str(self.app_log_dir),
                   PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = open(self.app_log_dir / "kafkaServer.out", "ab")
        self.proc = subprocess.Popen(
            death_signal_prefix() + [sys.executable, "-m", "kafkalike.broker.main", str(self.config_path)],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(REPO_ROOT))
        out.close()
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Listening and registered (its 'started' line is written after registration)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BrokerStartError(f"broker {self.broker_id} exited with {self.proc.returncode}:\n"
                                       + self.log_tail())
            if self._started() and self._knows_controller():
                return
            time.sleep(0.1)
        raise BrokerStartError(f"broker {self.broker_id} not ready after {timeout}s:\n" + self.log_tail())

    def _started(self) -> bool:
        try:
            text = (self.app_log_dir / "server.log").read_text(errors="replace")
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
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def kill(self) -> None:
        """kill -9: the crash the fault tests inject."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self, timeout: float = 30.0) -> None:
        self.start()
        self.wait_ready(timeout)

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

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
