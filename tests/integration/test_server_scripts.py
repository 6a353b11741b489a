"""bin/kafka-server-start.sh -daemon and bin/kafka-server-stop.sh, as an operator runs them.

The stop script stops the brokers of its own LOG_DIR, as bin/zookeeper-server-stop.sh
stops the ZooKeepers of its own: a broker of another installation keeps running.
"""
from __future__ import annotations

import os
import subprocess
import sys

from kafkalike.lab.cluster import REPO_ROOT
from kafkalike.lab.zookeeper import free_ports
from tests.waiting import wait_until as wait_for

BIN = REPO_ROOT / "bin"


def script(name: str, *args: str, log_dir) -> subprocess.CompletedProcess:
    env = {**os.environ, "LOG_DIR": str(log_dir), "PYTHON": sys.executable}
    return subprocess.run([str(BIN / name), *args], env=env, capture_output=True, text=True, timeout=60)


def brokers_running(config) -> list[int]:
    """Pids of broker processes started on this properties file."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"kafkalike.broker.main" in args and str(config).encode() in args:
            found.append(int(entry))
    return found


def test_stop_stops_the_brokers_of_its_log_dir_and_no_other(fresh_broker, zk_chroot, shm_path):
    [port] = free_ports(1)
    data, logs = shm_path / "data", shm_path / "logs"
    config = shm_path / "server.properties"
    config.write_text(f"broker.id=5\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={data}\n"
                      f"zookeeper.connect={zk_chroot}\noffsets.topic.replication.factor=1\n")
    started = script("kafka-server-start.sh", "-daemon", str(config), log_dir=logs)
    assert started.returncode == 0, started.stderr
    server_log = logs / "server.log"
    wait_for(lambda: server_log.exists() and "[KafkaServer id=5] started" in server_log.read_text(), 60,
             "the daemon broker to start")

    stopped = script("kafka-server-stop.sh", log_dir=logs)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    wait_for(lambda: "[KafkaServer id=5] shut down completed" in server_log.read_text(), 60,
             "a clean shutdown of the daemon broker")
    assert (data / ".kafka_cleanshutdown").exists()
    # The broker of another LOG_DIR (the fixture's) was left alone.
    assert fresh_broker.is_running()
    # "shut down completed" is logged just before the process exits; under load it can
    # still be there a moment later, and the script would rightly find it.
    wait_for(lambda: not brokers_running(config), 30, "the daemon broker's process to exit")
    again = script("kafka-server-stop.sh", log_dir=logs)
    assert (again.returncode, again.stdout) == (1, "No kafka server to stop\n")
