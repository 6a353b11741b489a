"""Real ZooKeeper servers for tests and the lab: one standalone server or an ensemble on one host.

The server is Debian's zookeeper package run straight from its jars, with no init
script and no service, so whoever starts it owns the whole process: it can wait until
the server really serves, kill -9 one member of an ensemble, restart it on the same
data, and remove every file it made. Configs are rendered from zk/zoo.cfg.template so
the shell scripts in zk/, the Vagrant lab and the tests all run the same settings.

Command line (used by zk/start-standalone.sh, zk/start-ensemble.sh and zk/stop.sh):

    python -m kafkalike.lab.zookeeper start --dir DIR [--nodes 3] [--port 2181] [--address 127.0.0.1]
    python -m kafkalike.lab.zookeeper status --dir DIR
    python -m kafkalike.lab.zookeeper stop --dir DIR
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from kafkalike.lab.processes import is_alive

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# The jar's manifest names all its dependencies except a logging backend; without one
# slf4j falls back to "no operation" and the server prints nothing at all.
SLF4J_BINDING_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
TEMPLATE_PATH = Path(__file__).resolve().parents[2] / "zk" / "zoo.cfg.template"

SERVING_MODES = frozenset({"standalone", "leader", "follower", "observer"})
INSTALL_HINT = "install it with zk/install.sh (or ./scripts/test.sh, which runs it)"

# Time stamps on slf4j-simple lines, in the layout Kafka's log4j files use.
LOG_OPTIONS = (
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
)
# Election notifications back off from 200 ms up to 60 s by default. Members of a test
# ensemble start seconds apart, so a long back-off only delays the first quorum.
FAST_ELECTION_OPTIONS = ("-Dzookeeper.fastleader.maxNotificationInterval=1000",)


class ZooKeeperNotInstalled(RuntimeError):
    """Java or Debian's ZooKeeper jars are missing; tests must fail on this, not skip."""


class ZooKeeperStartError(RuntimeError):
    """The server process exited or never began to serve; the message carries its log tail."""


@dataclass(frozen=True)
class Peer:
    """One ensemble member as every member's config names it."""

    myid: int
    host: str
    quorum_port: int
    election_port: int

    def server_line(self) -> str:
        return f"server.{self.myid}={self.host}:{self.quorum_port}:{self.election_port}"


def java_executable() -> str:
    """The java binary, preferring $JAVA_HOME as Kafka's scripts do."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise ZooKeeperNotInstalled(f"no java on PATH and no $JAVA_HOME: {INSTALL_HINT}")
    return found


def zookeeper_classpath() -> str:
    """The classpath that runs Debian's server and shell, or ZooKeeperNotInstalled."""
    missing = [str(jar) for jar in (ZOOKEEPER_JAR, SLF4J_BINDING_JAR) if not jar.exists()]
    if missing:
        raise ZooKeeperNotInstalled(f"ZooKeeper is not installed (missing {', '.join(missing)}): {INSTALL_HINT}")
    return os.pathsep.join(str(jar) for jar in (ZOOKEEPER_JAR, SLF4J_BINDING_JAR))


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports the kernel calls free right now; all are held at once so none repeats."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter admin word (srvr, ruok, mntr, ...) and return the whole answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def render_config(
    *,
    data_dir: Path,
    client_port: int,
    client_address: str = "127.0.0.1",
    peers: Sequence[Peer] = (),
    force_sync: bool = True,
    tick_time: int = 2000,
    template: Path = TEMPLATE_PATH,
) -> str:
    """Fill zk/zoo.cfg.template; an empty peer list gives a standalone server."""
    text = template.read_text()
    values = {
        "TICK_TIME": str(tick_time),
        "DATA_DIR": str(data_dir),
        "CLIENT_PORT": str(client_port),
        "CLIENT_ADDRESS": client_address,
        "FORCE_SYNC": "yes" if force_sync else "no",
        "SERVERS": "\n".join(peer.server_line() for peer in peers),
    }
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    leftover = re.findall(r"@[A-Z_]+@", text)
    if leftover:
        raise ValueError(f"{template} has placeholders nobody fills: {sorted(set(leftover))}")
    return text


def read_properties(path: Path) -> dict[str, str]:
    """key=value lines of a zoo.cfg; enough to find a running server's address again."""
    result = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            result[key.strip()] = value.strip()
    return result


def death_signal_prefix() -> list[str]:
    """Command prefix that makes the kernel kill the JVM when its parent dies.

    A test run that is itself killed then leaves no ZooKeeper behind holding ports.
    util-linux's setpriv sets PR_SET_PDEATHSIG and execs, so nothing runs between fork
    and exec in the (threaded) test process, as a preexec_fn would.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


class ZooKeeperServer:
    """One ZooKeeper server process with its own directory.

    Layout under base_dir: zoo.cfg, zookeeper.log (stdout and stderr of the JVM),
    zookeeper.pid and data/ (snapshots, transaction logs, myid in an ensemble).
    """

    def __init__(
        self,
        base_dir: Path | str,
        client_port: int | None = None,
        *,
        host: str = "127.0.0.1",
        myid: int | None = None,
        peers: Sequence[Peer] = (),
        force_sync: bool = True,
        tick_time: int = 2000,
        heap: str = "256m",
        jvm_options: Iterable[str] = (),
        die_with_parent: bool = True,
        launcher: Sequence[str] = (),
    ) -> None:
        if peers and myid is None:
            raise ValueError("an ensemble member needs its myid")
        self.base_dir = Path(base_dir).absolute()
        self.host = host
        self.client_port = client_port if client_port else free_ports(1, host)[0]
        self.myid = myid
        self.peers = tuple(peers)
        self.force_sync = force_sync
        self.tick_time = tick_time
        self.heap = heap
        self.jvm_options = tuple(jvm_options)
        self.die_with_parent = die_with_parent
        # Words run before the java command, e.g. `ip netns exec NS` (the lab's netns
        # backend). They must exec it, so that the pid started is the server's.
        self.launcher = tuple(launcher)
        self._process: subprocess.Popen[bytes] | None = None
        self._writes_config = True

    @classmethod
    def attach(cls, base_dir: Path | str, *, die_with_parent: bool = True,
               jvm_options: Iterable[str] = (), launcher: Sequence[str] = ()) -> ZooKeeperServer:
        """A handle on a server that an earlier process started in base_dir (for stop/status,
        or a restart on its own zoo.cfg and data)."""
        base = Path(base_dir).absolute()
        props = read_properties(base / "zoo.cfg")
        server = cls(base, int(props["clientPort"]), host=props.get("clientPortAddress", "127.0.0.1"),
                     die_with_parent=die_with_parent, jvm_options=jvm_options, launcher=launcher)
        server._writes_config = False
        return server

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def config_path(self) -> Path:
        return self.base_dir / "zoo.cfg"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "zookeeper.log"

    @property
    def pid_path(self) -> Path:
        return self.base_dir / "zookeeper.pid"

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.client_port}"

    @property
    def pid(self) -> int | None:
        if self._process is not None:
            return self._process.pid
        try:
            return int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None

    def config_text(self) -> str:
        return render_config(
            data_dir=self.data_dir,
            client_port=self.client_port,
            client_address=self.host,
            peers=self.peers,
            force_sync=self.force_sync,
            tick_time=self.tick_time,
        )

    def command(self) -> list[str]:
        """The java command line; the config path in it identifies the process later."""
        return [
            java_executable(),
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            *LOG_OPTIONS,
            *self.jvm_options,
            "-cp",
            zookeeper_classpath(),
            MAIN_CLASS,
            str(self.config_path),
        ]

    def start(self) -> None:
        """Launch the JVM and return at once; call wait_ready() before using the server."""
        if self.is_running():
            raise ZooKeeperStartError(f"ZooKeeper in {self.base_dir} is already running (pid {self.pid})")
        command = [*self.launcher, *self.command()]
        if self.die_with_parent:
            command = [*death_signal_prefix(), *command]
        config = self.config_text() if self._writes_config else None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.myid is not None:
            (self.data_dir / "myid").write_text(f"{self.myid}\n")
        if config is not None:
            self.config_path.write_text(config)
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                command,
                cwd=self.base_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid_path.write_text(f"{self._process.pid}\n")

    def is_running(self) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        return is_alive(self.pid, (MAIN_CLASS, str(self.config_path)))

    def four_letter_word(self, word: str, timeout: float = 2.0) -> str:
        return four_letter_word(self.host, self.client_port, word, timeout)

    def mode(self) -> str | None:
        """standalone, leader, follower or observer while serving; None otherwise."""
        try:
            answer = self.four_letter_word("srvr", timeout=1.0)
        except OSError:
            return None
        match = re.search(r"^Mode: (\S+)", answer, re.MULTILINE)
        return match.group(1) if match else None

    def wait_ready(self, timeout: float = 30.0) -> str:
        """Block until srvr reports a serving Mode (ruok answers earlier, before it serves)."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.is_running():
                raise ZooKeeperStartError(
                    f"ZooKeeper in {self.base_dir} exited before serving; last log lines:\n{self.log_tail()}"
                )
            mode = self.mode()
            if mode in SERVING_MODES:
                return mode
            if time.monotonic() >= deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper at {self.connect_string} not serving after {timeout:.0f}s; "
                    f"last log lines:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (a clean shutdown, as bin/zookeeper-server-stop.sh does), SIGKILL if it hangs."""
        if self._signal(signal.SIGTERM) and not self._wait_exit(timeout):
            self._signal(signal.SIGKILL)
            self._wait_exit(timeout)
        self._forget_pid()

    def kill(self) -> None:
        """kill -9: the crash a fault test wants. The data dir stays for a restart."""
        if self._signal(signal.SIGKILL):
            self._wait_exit(15.0)
        self._forget_pid()

    def remove(self) -> None:
        """Kill the server if it still runs and delete base_dir with everything in it."""
        self.kill()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _signal(self, sig: int) -> bool:
        pid = self.pid
        if pid is None or not self.is_running():
            return False
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def _wait_exit(self, timeout: float) -> bool:
        if self._process is not None:
            try:
                self._process.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while self.is_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _forget_pid(self) -> None:
        if not self.is_running():
            self.pid_path.unlink(missing_ok=True)

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        self.wait_ready()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ZooKeeperServer({self.connect_string}, myid={self.myid}, dir={self.base_dir})"


class ZooKeeperEnsemble:
    """N servers on one host, each with its own client, quorum and election port and data dir."""

    def __init__(
        self,
        base_dir: Path | str,
        size: int = 3,
        *,
        host: str = "127.0.0.1",
        hosts: Sequence[str] | None = None,
        launchers: Sequence[Sequence[str]] | None = None,
        client_ports: Sequence[int] | None = None,
        quorum_ports: Sequence[int] | None = None,
        election_ports: Sequence[int] | None = None,
        force_sync: bool = True,
        tick_time: int = 2000,
        heap: str = "256m",
        jvm_options: Iterable[str] = (),
        die_with_parent: bool = True,
    ) -> None:
        if size < 1:
            raise ValueError("an ensemble needs at least one server")
        self.base_dir = Path(base_dir).absolute()
        # Each member on a host of its own (the lab's netns backend), or all on `host`.
        hosts = list(hosts or [host] * size)
        launchers = list(launchers or [()] * size)
        if not len(hosts) == len(launchers) == size:
            raise ValueError(f"need {size} hosts and launchers")
        if not (client_ports and quorum_ports and election_ports):
            spare = iter(free_ports(3 * size, host))
        client_ports = list(client_ports or [next(spare) for _ in range(size)])
        quorum_ports = list(quorum_ports or [next(spare) for _ in range(size)])
        election_ports = list(election_ports or [next(spare) for _ in range(size)])
        if not len(client_ports) == len(quorum_ports) == len(election_ports) == size:
            raise ValueError(f"need {size} client, quorum and election ports each")
        self.peers = tuple(
            Peer(myid, hosts[i], quorum_ports[i], election_ports[i]) for i, myid in enumerate(range(1, size + 1))
        )
        options = (*FAST_ELECTION_OPTIONS, *jvm_options)
        self.servers = [
            ZooKeeperServer(
                self.base_dir / f"zk{peer.myid}",
                client_ports[i],
                host=peer.host,
                myid=peer.myid,
                peers=self.peers,
                force_sync=force_sync,
                tick_time=tick_time,
                heap=heap,
                jvm_options=options,
                die_with_parent=die_with_parent,
                launcher=launchers[i],
            )
            for i, peer in enumerate(self.peers)
        ]

    @property
    def connect_string(self) -> str:
        return ",".join(server.connect_string for server in self.servers)

    @property
    def data_dirs(self) -> list[Path]:
        return [server.data_dir for server in self.servers]

    @property
    def quorum_size(self) -> int:
        return len(self.servers) // 2 + 1

    def server(self, myid: int) -> ZooKeeperServer:
        return self.servers[myid - 1]

    def start(self) -> None:
        for server in self.servers:
            if not server.is_running():
                server.start()

    def modes(self) -> dict[int, str | None]:
        """myid -> srvr Mode of every member (None: down, or up without a quorum)."""
        return {server.myid: server.mode() for server in self.servers}  # type: ignore[misc]

    def leader(self) -> ZooKeeperServer:
        for server in self.servers:
            if server.mode() == "leader":
                return server
        raise LookupError(f"no leader in the ensemble right now: {self.modes()}")

    def wait_ready(self, timeout: float = 60.0) -> dict[int, str | None]:
        """Block until every running member serves under exactly one leader, with a quorum up."""
        deadline = time.monotonic() + timeout
        while True:
            running = [server for server in self.servers if server.is_running()]
            modes = {server.myid: server.mode() for server in running}
            serving = [mode for mode in modes.values() if mode in SERVING_MODES]
            if (
                len(serving) == len(running) >= self.quorum_size
                and serving.count("leader") == 1
            ):
                return self.modes()
            if time.monotonic() >= deadline:
                tails = "\n".join(f"--- zk{s.myid}:\n{s.log_tail(15)}" for s in self.servers)
                raise ZooKeeperStartError(
                    f"ensemble has no quorum after {timeout:.0f}s: modes {modes}\n{tails}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def kill(self) -> None:
        for server in self.servers:
            server.kill()

    def remove(self) -> None:
        for server in self.servers:
            server.kill()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> ZooKeeperEnsemble:
        self.start()
        self.wait_ready()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ZooKeeperEnsemble({self.connect_string}, dir={self.base_dir})"


def _servers_in(directory: Path) -> list[ZooKeeperServer]:
    """Servers the CLI started in directory: itself (standalone) or its zkN/ subdirectories."""
    configs = [directory / "zoo.cfg"] if (directory / "zoo.cfg").exists() else sorted(directory.glob("zk*/zoo.cfg"))
    return [ZooKeeperServer.attach(config.parent) for config in configs]


def _cli_start(args: argparse.Namespace) -> int:
    directory = Path(args.dir).absolute()
    existing = _servers_in(directory)
    if existing and all(server.is_running() for server in existing):
        print(f"ZooKeeper already running in {directory}")
        return _cli_status(args)
    if existing and any(server.is_running() for server in existing):
        print(f"some ZooKeeper servers in {directory} run and some do not; stop them first", file=sys.stderr)
        return 1
    common = dict(host=args.address, force_sync=not args.no_force_sync, die_with_parent=False)
    if args.nodes == 1:
        server = ZooKeeperServer(directory, args.port, **common)  # type: ignore[arg-type]
        server.start()
        server.wait_ready(args.timeout)
    else:
        count = args.nodes
        ensemble = ZooKeeperEnsemble(
            directory,
            count,
            client_ports=[args.port + i for i in range(count)],
            quorum_ports=[args.quorum_port + i for i in range(count)],
            election_ports=[args.election_port + i for i in range(count)],
            **common,  # type: ignore[arg-type]
        )
        ensemble.start()
        ensemble.wait_ready(args.timeout)
    return _cli_status(args)


def _cli_status(args: argparse.Namespace) -> int:
    servers = _servers_in(Path(args.dir).absolute())
    if not servers:
        print(f"no ZooKeeper config under {args.dir}", file=sys.stderr)
        return 1
    healthy = True
    for server in servers:
        mode = server.mode() if server.is_running() else None
        healthy = healthy and mode in SERVING_MODES
        state = mode or ("not serving" if server.is_running() else "stopped")
        print(f"{server.base_dir.name} {server.connect_string} pid={server.pid if server.is_running() else '-'} {state}")
    return 0 if healthy else 1


def _cli_stop(args: argparse.Namespace) -> int:
    servers = [server for server in _servers_in(Path(args.dir).absolute()) if server.is_running()]
    if not servers:
        print("No zookeeper server to stop")
        return 1
    for server in servers:
        server.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalike.lab.zookeeper", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="start a standalone server or an ensemble in the background")
    start.add_argument("--dir", required=True, help="directory for configs, logs and data")
    start.add_argument("--nodes", type=int, default=1, help="1 for standalone, 3 for an ensemble")
    start.add_argument("--port", type=int, default=2181, help="client port of the first node; others follow")
    start.add_argument("--quorum-port", type=int, default=2888)
    start.add_argument("--election-port", type=int, default=3888)
    start.add_argument("--address", default="127.0.0.1", help="clientPortAddress and peer host")
    start.add_argument("--no-force-sync", action="store_true", help="forceSync=no: throwaway test data only")
    start.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the server(s) to serve")
    for name, text in (("status", "show each server's mode"), ("stop", "SIGTERM the servers")):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--dir", required=True)
    args = parser.parse_args(argv)
    handlers = {"start": _cli_start, "status": _cli_status, "stop": _cli_stop}
    try:
        return handlers[args.command](args)
    except (ZooKeeperNotInstalled, ZooKeeperStartError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
