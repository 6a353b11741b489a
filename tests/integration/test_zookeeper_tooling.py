"""The ZooKeeper tooling a Kafka operator expects, run against real servers.

bin/zookeeper-server-start.sh, -stop.sh and -shell.sh must behave like Kafka's; the
lab helper must start an ensemble that elects a leader and survives losing it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from kafkalike.lab import zookeeper as zookeeper_module
from kafkalike.lab.zookeeper import (
    ZooKeeperEnsemble,
    ZooKeeperNotInstalled,
    ZooKeeperServer,
    four_letter_word,
    free_ports,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = REPO_ROOT / "bin"


def run_shell(connect: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "zookeeper-shell.sh"), connect, *command],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def shell_banner(connect: str) -> list[str]:
    """What Kafka's zookeeper-shell prints before the answer to a one-shot command."""
    return [
        f"Connecting to {connect}",
        "",
        "WATCHER::",
        "",
        "WatchedEvent state:SyncConnected type:None path:null",
    ]


def process_alive(pid: int) -> bool:
    """True while pid runs; a zombie waiting for init to reap it counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def srvr_mode(port: int) -> str | None:
    try:
        answer = four_letter_word("127.0.0.1", port, "srvr", timeout=1.0)
    except OSError:
        return None
    modes = [line.split(": ", 1)[1] for line in answer.splitlines() if line.startswith("Mode: ")]
    return modes[0] if modes else None


def test_session_server_serves_kazoo_create_and_get(zookeeper: ZooKeeperServer) -> None:
    assert zookeeper.mode() == "standalone"
    assert zookeeper.connect_string.startswith("127.0.0.1:")
    assert str(zookeeper.data_dir).startswith("/dev/shm/")
    path = f"/tooling-{uuid.uuid4().hex[:8]}"
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(timeout=15)
    try:
        client.create(path, b"payload", makepath=True)
        data, stat = client.get(path)
        assert data == b"payload"
        assert stat.version == 0
        assert path.lstrip("/") in client.get_children("/")
        client.delete(path)
    finally:
        client.stop()
        client.close()


def test_config_written_from_the_template_has_the_safety_settings(zookeeper: ZooKeeperServer) -> None:
    config = zookeeper.config_path.read_text()
    for line in (
        "clientPortAddress=127.0.0.1",
        "admin.enableServer=false",
        "4lw.commands.whitelist=ruok,srvr,stat,mntr,conf",
        f"clientPort={zookeeper.client_port}",
        f"dataDir={zookeeper.data_dir}",
    ):
        assert line in config.splitlines()
    assert "@" not in config
    # The whitelist is live: conf answers, and the admin server is off in the running config.
    conf = zookeeper.four_letter_word("conf")
    assert f"clientPort={zookeeper.client_port}" in conf


def test_shell_lists_the_root(zookeeper: ZooKeeperServer) -> None:
    result = run_shell(zookeeper.connect_string, "ls", "/")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:5] == shell_banner(zookeeper.connect_string)
    assert lines[5].startswith("[") and lines[5].endswith("]")
    assert "zookeeper" in lines[5].strip("[]").split(", ")
    assert "ERROR" not in result.stderr


def test_shell_creates_and_gets_a_znode(zk_chroot: str, kazoo_client: KazooClient) -> None:
    created = run_shell(zk_chroot, "create", "/x", "data")
    assert created.returncode == 0, created.stderr
    # ZooKeeper 3.5+ (Kafka 2.8 ships 3.5.9) prints "Created" on stderr and nothing else.
    assert created.stdout.splitlines() == shell_banner(zk_chroot)
    assert created.stderr.strip() == "Created /x"

    got = run_shell(zk_chroot, "get", "/x")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == [*shell_banner(zk_chroot), "data"]
    assert kazoo_client.get("/x")[0] == b"data"

    missing = run_shell(zk_chroot, "get", "/nope")
    assert missing.returncode == 1
    assert "Node does not exist: /nope" in missing.stderr


def test_shell_without_arguments_prints_usage() -> None:
    result = subprocess.run([str(BIN / "zookeeper-shell.sh")], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert result.stdout.startswith("USAGE: ")
    assert "zookeeper_host:port[/path]" in result.stdout


def properties_for(tmp_dir: Path, port: int) -> Path:
    """config/zookeeper.properties with only dataDir and clientPort moved out of the way."""
    stock = (REPO_ROOT / "config" / "zookeeper.properties").read_text()
    assert "dataDir=/tmp/zookeeper" in stock and "clientPort=2181" in stock
    text = stock.replace("dataDir=/tmp/zookeeper", f"dataDir={tmp_dir / 'data'}")
    text = text.replace("clientPort=2181", f"clientPort={port}")
    path = tmp_dir / "zookeeper.properties"
    path.write_text(text)
    return path


def test_server_start_daemon_and_stop_scripts(shm_path: Path) -> None:
    port = free_ports(1)[0]
    properties = properties_for(shm_path, port)
    env = {**os.environ, "LOG_DIR": str(shm_path / "logs"), "KAFKA_HEAP_OPTS": "-Xmx128M"}
    pid_file = shm_path / "logs" / "zookeeper.pid"
    started = subprocess.run(
        [str(BIN / "zookeeper-server-start.sh"), "-daemon", str(properties)],
        env=env, capture_output=True, text=True, timeout=60,
    )
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout == ""
        pid = int(pid_file.read_text())
        wait_until(lambda: srvr_mode(port) == "standalone", 30, "the daemon to serve")
        assert "Reading configuration from" in (shm_path / "logs" / "zookeeper.out").read_text()
        assert (shm_path / "data" / "version-2").is_dir()

        again = subprocess.run(
            [str(BIN / "zookeeper-server-start.sh"), "-daemon", str(properties)],
            env=env, capture_output=True, text=True, timeout=60,
        )
        assert again.returncode == 1
        assert f"already running as process {pid}" in again.stderr

        stopped = subprocess.run(
            [str(BIN / "zookeeper-server-stop.sh")], env=env, capture_output=True, text=True, timeout=60
        )
        assert stopped.returncode == 0, stopped.stderr
        assert not process_alive(pid)
        assert not pid_file.exists()
        assert srvr_mode(port) is None

        nothing = subprocess.run(
            [str(BIN / "zookeeper-server-stop.sh")], env=env, capture_output=True, text=True, timeout=60
        )
        assert nothing.returncode == 1
        assert nothing.stdout.strip() == "No zookeeper server to stop"
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def test_server_start_in_foreground_is_stopped_by_the_stop_script(shm_path: Path) -> None:
    port = free_ports(1)[0]
    properties = properties_for(shm_path, port)
    env = {**os.environ, "LOG_DIR": str(shm_path / "logs"), "KAFKA_HEAP_OPTS": "-Xmx128M"}
    output = open(shm_path / "console.txt", "wb")
    server = subprocess.Popen(
        [str(BIN / "zookeeper-server-start.sh"), str(properties)],
        env=env, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: srvr_mode(port) == "standalone", 30, "the foreground server to serve")
        # exec: the script's own pid is the server's.
        assert int((shm_path / "logs" / "zookeeper.pid").read_text()) == server.pid
        stopped = subprocess.run(
            [str(BIN / "zookeeper-server-stop.sh")], env=env, capture_output=True, text=True, timeout=60
        )
        assert stopped.returncode == 0, stopped.stderr
        server.wait(timeout=30)
        assert "Reading configuration from" in (shm_path / "console.txt").read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        output.close()


def test_ensemble_elects_a_leader_and_survives_kill_9_of_it(zookeeper_ensemble: ZooKeeperEnsemble) -> None:
    ensemble = zookeeper_ensemble
    modes = ensemble.modes()
    assert sorted(modes.values()) == ["follower", "follower", "leader"]
    assert len({server.client_port for server in ensemble.servers}) == 3
    for server in ensemble.servers:
        assert (server.data_dir / "myid").read_text().strip() == str(server.myid)
        assert server.config_path.read_text().count("\nserver.") == 3

    client = KazooClient(hosts=ensemble.connect_string, connection_retry=KazooRetry(max_tries=-1, max_delay=0.5))
    client.start(timeout=15)
    try:
        client.create("/before", b"written with all three up")
        old_leader = ensemble.leader()
        old_leader.kill()
        assert not old_leader.is_running()

        new_modes = ensemble.wait_ready(timeout=30)
        assert new_modes[old_leader.myid] is None
        assert sorted(mode for mode in new_modes.values() if mode) == ["follower", "leader"]
        assert ensemble.leader() is not old_leader

        retry = KazooRetry(max_tries=-1, deadline=20, max_delay=0.5)
        assert retry(client.get, "/before")[0] == b"written with all three up"
        retry(client.ensure_path, "/after")
        retry(client.set, "/after", b"written by two")
        assert retry(client.get, "/after")[0] == b"written by two"
    finally:
        client.stop()
        client.close()


def test_missing_zookeeper_is_an_error_not_a_skip(shm_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zookeeper_module, "ZOOKEEPER_JAR", shm_path / "no-such" / "zookeeper.jar")
    server = ZooKeeperServer(shm_path / "zk")
    with pytest.raises(ZooKeeperNotInstalled, match="zk/install.sh"):
        server.start()
    assert not server.is_running()
    assert not (shm_path / "zk").exists()


def test_lab_scripts_start_report_and_stop_a_standalone_server(shm_path: Path) -> None:
    port = free_ports(1)[0]
    directory = shm_path / "zk"
    started = subprocess.run(
        [str(REPO_ROOT / "zk" / "start-standalone.sh"), "--dir", str(directory), "--port", str(port)],
        capture_output=True, text=True, timeout=90,
    )
    server = ZooKeeperServer.attach(directory) if (directory / "zoo.cfg").exists() else None
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.split() == [directory.name, f"127.0.0.1:{port}", f"pid={server.pid}", "standalone"]
        # The server outlives the script that started it.
        assert srvr_mode(port) == "standalone"

        status = subprocess.run(
            [str(REPO_ROOT / "zk" / "status.sh"), "--dir", str(directory)], capture_output=True, text=True, timeout=60
        )
        assert status.returncode == 0 and status.stdout.strip().endswith("standalone")

        stopped = subprocess.run(
            [str(REPO_ROOT / "zk" / "stop.sh"), "--dir", str(directory)], capture_output=True, text=True, timeout=60
        )
        assert stopped.returncode == 0, stopped.stderr
        assert srvr_mode(port) is None
        status = subprocess.run(
            [str(REPO_ROOT / "zk" / "status.sh"), "--dir", str(directory)], capture_output=True, text=True, timeout=60
        )
        assert status.returncode == 1 and status.stdout.strip().endswith("stopped")
    finally:
        if server is not None:
            server.kill()
