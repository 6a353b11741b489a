"""A lab's life cycle, shared by every backend, and the local backend (loopback ports).

ZooKeeper (one standalone server, or a 3-node ensemble) and N brokers, each with its
own config, data and logs under the lab directory:

    LAB_DIR/lab.json                    the state every command reads (kafkalike.lab.state)
    LAB_DIR/zookeeper/zkN/              zoo.cfg, zookeeper.log, zookeeper.pid, data/ (myid)
    LAB_DIR/broker-N/server.properties  Kafka's keys; edit it and `restart broker-N`
    LAB_DIR/broker-N/data/              log.dirs
    LAB_DIR/broker-N/logs/              server.log, controller.log, state-change.log, ...

The processes run in sessions of their own and outlive the command that started them;
later commands know them by the pids in lab.json (checked against each process's
command line, so a reused pid is never signalled).

`Lab` does what every backend shares: the plan (names, configs, data and log dirs), the
start order (ZooKeeper, then the brokers), the readiness waits, status, kill, restart,
down and the files. A `Backend` decides only where each node lives and how its process
is launched: `LocalBackend` puts every node on 127.0.0.1 with ports of its own;
`kafkalike.lab.netns.NetnsBackend` puts each node in a network namespace of its own
with its own address, and can cut nodes off from each other (`partition`/`heal`).
"""
from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from kafkalike.lab.cluster import BROKER_MAIN, REPO_ROOT, BrokerProcess, BrokerStartError
from kafkalike.lab.observe import ZooKeeperView, read_metadata, wait_for, zookeeper_mode
from kafkalike.lab.processes import (
    free_ports,
    group_alive,
    is_alive,
    port_in_use,
    processes_mentioning,
    send_signal,
    wait_gone,
)
from kafkalike.lab.state import LabError, LabState, Node, STATE_FILE, LOCK_FILE, locked, record_pid
from kafkalike.lab.zookeeper import (
    FAST_ELECTION_OPTIONS,
    MAIN_CLASS as ZOOKEEPER_MAIN,
    ZooKeeperEnsemble,
    ZooKeeperNotInstalled,
    ZooKeeperServer,
    ZooKeeperStartError,
    read_properties,
)

BACKEND = "local"
BACKENDS = ("local", "netns", "docker")
ENSEMBLE_SIZE = 3
# Short enough that a kill -9'd broker leaves /brokers/ids (and the controller acts on
# its death) within seconds; ZooKeeper's floor is 2 ticks = 4 s with the lab's tickTime.
SESSION_TIMEOUT_MS = 6000
# Keys whose values the lab itself must know (its state names the ports and dirs).
LAB_OWNED_KEYS = ("broker.id", "listeners", "log.dirs", "zookeeper.connect", "kafkalike.metrics.port")
# A broker's metrics port where it has an address of its own (netns, docker): the port
# Prometheus's JMX exporter is usually given. On loopback each broker gets a free port.
METRICS_PORT = 9404
SCENARIOS_DIR = "scenarios"       # the verifiable tools' events, kept per scenario run
SPARK_DIR = "spark"               # up --spark: master.log, worker-1.log, worker-1/work
SPARK_MARK = "-Dkafkalike.lab.dir="   # on the Spark daemons' java command lines, then LAB_DIR/

Progress = Callable[[str], None]


def default_lab_dir() -> Path:
    """$LOG_DIR/lab, or logs/lab in the checkout, as the bin/ scripts place their logs."""
    log_dir = os.environ.get("LOG_DIR")
    return (Path(log_dir) if log_dir else REPO_ROOT / "logs") / "lab"


@dataclass
class LabSpec:
    """What `up` is asked for."""

    brokers: int = 3
    zookeeper: str = "standalone"           # or "ensemble"
    backend: str = BACKEND                  # or "netns"
    host: str = "127.0.0.1"
    zk_port: int = 2181                     # an ensemble uses zk_port .. zk_port+2
    quorum_port: int = 2888
    election_port: int = 3888
    broker_port: int = 9092                 # broker N listens on broker_port + N
    overrides: dict[str, str] = field(default_factory=dict)
    spark: bool = False                     # a Spark standalone master and one worker

    @classmethod
    def at_base_port(cls, base: int, **kwargs) -> LabSpec:
        """The whole lab in one block of ports: ZooKeeper base (..+2), quorum base+3 (..+5),
        election base+6 (..+8), brokers from base+10."""
        return cls(zk_port=base, quorum_port=base + 3, election_port=base + 6, broker_port=base + 10, **kwargs)

    @property
    def zookeeper_count(self) -> int:
        return ENSEMBLE_SIZE if self.zookeeper == "ensemble" else 1

    def ports(self) -> list[tuple[str, int]]:
        wanted = [(f"zk-{i + 1} client", self.zk_port + i) for i in range(self.zookeeper_count)]
        if self.zookeeper == "ensemble":
            wanted += [(f"zk-{i + 1} quorum", self.quorum_port + i) for i in range(ENSEMBLE_SIZE)]
            wanted += [(f"zk-{i + 1} election", self.election_port + i) for i in range(ENSEMBLE_SIZE)]
        wanted += [(f"broker-{i}", self.broker_port + i) for i in range(self.brokers)]
        return wanted

    def validate(self) -> None:
        if self.brokers < 1:
            raise LabError(f"--brokers must be at least 1, not {self.brokers}")
        if self.zookeeper not in ("standalone", "ensemble"):
            raise LabError(f"--zookeeper is standalone or ensemble, not {self.zookeeper}")
        if self.spark and self.backend != BACKEND:
            raise LabError(f"--spark runs on the local backend only, not --backend {self.backend} (its Spark "
                           "master and worker bind loopback); the Vagrant lab has a Spark node: docs/vagrant.md",
                           exit_code=2)
        seen: dict[int, str] = {}
        for what, port in self.ports():
            if not 0 < port < 65536:
                raise LabError(f"port {port} ({what}) is out of range")
            if port in seen:
                raise LabError(f"port {port} is planned twice ({seen[port]} and {what}); move --base-port")
            seen[port] = what
        owned = [key for key in self.overrides if key in LAB_OWNED_KEYS]
        if owned:
            raise LabError(f"--override {owned[0]} is set by the lab itself (ports and dirs are in lab.json)")

    @property
    def replication_factor(self) -> int:
        return min(3, self.brokers)

    @property
    def min_insync_replicas(self) -> int:
        return 2 if self.brokers >= 3 else 1

    def broker_properties(self) -> dict[str, str]:
        """The lab's keys on top of BrokerProcess's (broker.id, listeners, log.dirs, zookeeper.connect)."""
        rf, min_isr = str(self.replication_factor), str(self.min_insync_replicas)
        return {
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "num.partitions": "3",
            "default.replication.factor": rf,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "unclean.leader.election.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
            # The last broker of a lab has nowhere to move its leaderships; its controlled
            # shutdown retries (3 times) after this pause rather than Kafka's 5 s.
            "controlled.shutdown.retry.backoff.ms": "1000",
            **self.overrides,
        }


def _config_header(spec: LabSpec) -> str:
    return (
        f"# Written by `kafkalike-lab.sh up` (the {spec.backend} backend). Kafka 2.8's keys.\n"
        f"# {spec.brokers} broker(s): replication factor {spec.replication_factor}, min.insync.replicas "
        f"{spec.min_insync_replicas};\n"
        f"# zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS} so that a killed broker is noticed within seconds;\n"
        "# controlled.shutdown.retry.backoff.ms=1000 so that stopping the last broker takes seconds, not 15.\n"
        "# Edit and `kafkalike-lab.sh restart broker-N` to try another setting.\n"
    )


def _metrics_properties(node: Node) -> dict[str, str]:
    """The broker's Prometheus endpoint (docs/metrics.md), on the port the plan gave it."""
    return {} if node.metrics_port is None else {"kafkalike.metrics.port": str(node.metrics_port)}


def broker_overrides(spec: LabSpec, backend: Backend, node: Node) -> dict[str, str]:
    """Every key of one broker's server.properties beyond BrokerProcess's own, on every
    backend: the lab's settings, where the broker lives, and its metrics port (which
    `status` lists as metrics_url, so every backend must write it)."""
    return {**spec.broker_properties(), **backend.broker_properties(node), **_metrics_properties(node)}


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _session_timeout_s(node: Node) -> float:
    try:
        props = read_properties(Path(node.config))
        return int(props.get("zookeeper.session.timeout.ms", "18000")) / 1000.0
    except (OSError, ValueError):
        return 18.0


@contextlib.contextmanager
def machine_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path`, shared by every lab of one backend on this machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def free_subnet(pool: ipaddress.IPv4Network, prefix: str, used: set, backend: str) -> ipaddress.IPv4Network:
    """A /24 of `pool` not in `used`, starting where the lab's prefix points, so that a lab
    tends to get the same subnet each time."""
    subnets = list(pool.subnets(new_prefix=24))
    first = int(prefix[2:], 16) % len(subnets)
    for step in range(len(subnets)):
        subnet = subnets[(first + step) % len(subnets)]
        if subnet not in used:
            return subnet
    raise LabError(f"every /24 of {pool} is in use on this machine; take down another {backend} lab")


class Backend:
    """Where a lab's nodes live and how their processes start; the rest is `Lab`'s.

    The base class is the local backend's behaviour where there is nothing to do
    (no network to make or remove); each hook says when `Lab` calls it.
    """

    name = BACKEND
    owned_keys: tuple[str, ...] = LAB_OWNED_KEYS

    def check_usable(self) -> None:
        """Before a command changes anything: can this backend run here (root, tools)?"""

    def validate(self, spec: LabSpec) -> None:
        owned = [key for key in spec.overrides if key in self.owned_keys]
        if owned:
            raise LabError(f"--override {owned[0]} is set by the lab itself (addresses, ports and dirs are in lab.json)")

    def preflight(self, spec: LabSpec, lab_dir: Path) -> None:
        """Under the lab's lock, before the plan: is what the plan needs free?"""

    @contextlib.contextmanager
    def reserving(self) -> Iterator[None]:
        """Held from planning until provision() has made the network (so that two labs
        starting at once do not pick the same addresses)."""
        yield

    def plan_network(self, spec: LabSpec, lab_dir: Path) -> dict[str, Any]:
        """What the backend will make, kept in the state's `network` (saved before it is made)."""
        return {}

    def place(self, spec: LabSpec, network: dict[str, Any], kind: str, index: int) -> tuple[str, int, list[int], str | None]:
        """(host, port, [quorum, election] ports, namespace) of ZooKeeper server index+1 or broker index."""
        if kind == "zookeeper":
            peers = [spec.quorum_port + index, spec.election_port + index] if spec.zookeeper == "ensemble" else []
            return spec.host, spec.zk_port + index, peers, None
        return spec.host, spec.broker_port + index, [], None

    def provision(self, state: LabState, progress: Progress) -> None:
        """Make the network the state's plan names (nothing for loopback)."""

    def launcher(self, node: Node) -> list[str]:
        """Words before a node's command (the netns backend: `ip netns exec NS`)."""
        return []

    def broker_properties(self, node: Node) -> dict[str, str]:
        """Keys of one broker's server.properties that depend on where it lives."""
        return {}

    def metrics_ports(self, spec: LabSpec, hosts: list[str]) -> list[int]:
        """Each broker's kafkalike.metrics.port: the same port on every broker, as each has
        an address of its own (the local backend overrides this)."""
        return [METRICS_PORT] * len(hosts)

    def check_node(self, state: LabState, node: Node) -> None:
        """Before a restart: can the node's process start where it lived?"""

    def release(self, state: LabState, progress: Progress) -> None:
        """After every process is gone: remove what provision() made (and leftovers of it)."""

    # Network partitions need a network of the lab's own; loopback has none to cut.
    supports_partitions = False

    def partition(self, state: LabState, isolated: list[Node], method: str | None) -> dict[str, Any]:
        """Cut `isolated` off from the other nodes; returns what to keep in the state until heal()."""
        raise NotImplementedError

    def heal(self, state: LabState) -> None:
        """Undo every partition (whatever the state says was done)."""
        raise NotImplementedError

    def describe(self, state: LabState) -> dict[str, Any] | None:
        """The backend's part of `status` (None: nothing to add)."""
        return None


class LocalBackend(Backend):
    """Every node on spec.host (127.0.0.1) with ports of its own."""

    def metrics_ports(self, spec: LabSpec, hosts: list[str]) -> list[int]:
        """Free ports on the shared address, none of them one the lab plans for a node."""
        planned = {port for _, port in spec.ports()}
        return free_ports(spec.host, len(hosts), avoid=planned)

    def preflight(self, spec: LabSpec, lab_dir: Path) -> None:
        busy = [(what, port) for what, port in spec.ports() if port_in_use(spec.host, port)]
        if busy:
            what, port = busy[0]
            more = f" (and {len(busy) - 1} more)" if len(busy) > 1 else ""
            raise LabError(f"port {port} on {spec.host} ({what}) is already in use{more}; "
                           "choose others with --base-port")


def backend_named(name: str) -> Backend:
    if name == "local":
        return LocalBackend()
    if name == "netns":
        from kafkalike.lab.netns import NetnsBackend
        return NetnsBackend()
    if name == "docker":
        from kafkalike.lab.docker import DockerBackend
        return DockerBackend()
    raise LabError(f"unknown backend {name!r} (backends: {', '.join(BACKENDS)})")


class Lab:
    """Operations on the lab in one directory; every method re-reads lab.json."""

    def __init__(self, lab_dir: Path | str) -> None:
        self.dir = Path(lab_dir).absolute()

    # -- nodes -------------------------------------------------------------------------

    def state(self) -> LabState:
        return LabState.load(self.dir)

    @staticmethod
    def backend(state: LabState) -> Backend:
        return backend_named(state.backend)

    @staticmethod
    def markers(node: Node) -> tuple[str, str]:
        return (BROKER_MAIN if node.kind == "broker" else ZOOKEEPER_MAIN, node.config)

    def alive(self, node: Node) -> bool:
        return is_alive(node.pid, self.markers(node))

    def _zookeeper(self, node: Node, backend: Backend) -> ZooKeeperServer:
        options = FAST_ELECTION_OPTIONS if node.myid is not None else ()
        return ZooKeeperServer.attach(node.dir, die_with_parent=False, jvm_options=options,
                                      launcher=backend.launcher(node))

    def _broker(self, node: Node, state: LabState, backend: Backend) -> BrokerProcess:
        assert node.broker_id is not None
        return BrokerProcess.attach(node.broker_id, state.zookeeper_connect, self.dir, node.port, node.pid,
                                    host=node.host, launcher=backend.launcher(node))

    def _stray_pids(self) -> set[int]:
        """Lab daemons found by the lab directory in their command line (the safety net)."""
        prefix = str(self.dir) + os.sep
        return (set(processes_mentioning(prefix, (BROKER_MAIN,))) | set(processes_mentioning(prefix, (ZOOKEEPER_MAIN,)))
                | set(processes_mentioning(f"{SPARK_MARK}{self.dir}{os.sep}")))

    def resolve(self, name: str, state: LabState | None = None) -> Node:
        """broker-N, zk-N, controller, or leader:TOPIC:PARTITION -> the node it names now."""
        state = state or self.state()
        node = state.node(name)
        if node is not None:
            return node
        if name == "controller":
            controller = self.controller_id(state)
            if controller is None:
                raise LabError("there is no controller right now")
            return self._broker_or_fail(state, controller, "the controller")
        if name.startswith("leader:"):
            topic, _, partition = name[len("leader:"):].rpartition(":")
            if not topic or not partition.isdigit():
                raise LabError(f"{name}: write leader:TOPIC:PARTITION, e.g. leader:orders:0")
            with ZooKeeperView(state.zookeeper_connect) as zk:
                found = zk.partition(topic, int(partition))
            if found is None:
                raise LabError(f"there is no partition {topic}-{partition}")
            if found.leader < 0:
                raise LabError(f"{topic}-{partition} has no leader right now (ISR {list(found.isr)})")
            return self._broker_or_fail(state, found.leader, f"the leader of {topic}-{partition}")
        known = ", ".join(n.name for n in state.nodes)
        raise LabError(f"no node {name} in the lab (nodes: {known}, controller, leader:TOPIC:PARTITION)")

    @staticmethod
    def _broker_or_fail(state: LabState, broker_id: int, what: str) -> Node:
        node = state.broker(broker_id)
        if node is None:
            raise LabError(f"{what} is broker {broker_id}, which is not one of this lab's")
        return node

    def controller_id(self, state: LabState) -> int | None:
        """The controller as /controller names it; Metadata's answer if ZooKeeper is down."""
        try:
            with ZooKeeperView(state.zookeeper_connect, timeout=3.0) as zk:
                return zk.controller()
        except LabError:
            view = read_metadata((n.host, n.port) for n in state.brokers if self.alive(n))
            return view.controller_id if view is not None and view.controller_id >= 0 else None

    # -- up ----------------------------------------------------------------------------

    def up(self, spec: LabSpec, timeout: float = 120.0, progress: Progress = lambda line: None) -> LabState:
        spec.validate()
        backend = backend_named(spec.backend)
        backend.check_usable()
        backend.validate(spec)
        made_dir = not self.dir.exists()
        with locked(self.dir):
            try:
                self._refuse_if_running()
                backend.preflight(spec, self.dir)
            except LabError:
                self._forget_lock(made_dir)
                raise
            state: LabState | None = None
            try:
                with backend.reserving():
                    state = self._plan(spec, backend)
                    state.save()
                    backend.provision(state, progress)
                self._start(state, spec, backend, timeout, progress)
                if spec.spark:
                    self._start_spark(state, timeout, progress)
            except BaseException as error:
                if state is None:           # nothing made yet: the plan itself failed
                    self._forget_lock(made_dir)
                    raise
                self._teardown(state, keep_logs=True, term_timeout=0)
                if isinstance(error, (LabError, BrokerStartError, ZooKeeperStartError, ZooKeeperNotInstalled)):
                    first, _, rest = str(error).partition("\n")
                    tail = "\n".join(rest.splitlines()[-15:])
                    raise LabError(f"up failed, everything stopped again (logs kept in {self.dir}): {first}",
                                   tail) from None
                raise
            return state

    def _forget_lock(self, made_dir: bool) -> None:
        """A refused `up` leaves nothing: no lock file, and no directory it created."""
        if not LabState.exists(self.dir):
            (self.dir / LOCK_FILE).unlink(missing_ok=True)
            if made_dir:
                try:
                    self.dir.rmdir()
                except OSError:
                    pass

    def _refuse_if_running(self) -> None:
        if LabState.exists(self.dir):
            try:
                old = LabState.load(self.dir)
            except LabError:
                old = None
            running = [n.name for n in (old.nodes if old else []) if self.alive(n)]
            if running:
                raise LabError(f"a lab is already running in {self.dir} ({', '.join(running)}); "
                               "stop it first with: kafkalike-lab.sh down")
            if old is not None:
                self._teardown(old, keep_logs=True, term_timeout=0)
        strays = self._stray_pids()
        if strays:
            raise LabError(f"processes of an earlier lab in {self.dir} still run (pids "
                           f"{', '.join(map(str, sorted(strays)))}); stop them with: kafkalike-lab.sh down")

    def _plan(self, spec: LabSpec, backend: Backend) -> LabState:
        network = backend.plan_network(spec, self.dir)
        zk_dir = self.dir / "zookeeper"
        nodes: list[Node] = []
        for i in range(spec.zookeeper_count):
            base = zk_dir / f"zk{i + 1}"
            ensemble = spec.zookeeper == "ensemble"
            host, port, peer_ports, netns = backend.place(spec, network, "zookeeper", i)
            nodes.append(Node(
                name=f"zk-{i + 1}", kind="zookeeper", host=host, port=port, dir=str(base),
                config=str(base / "zoo.cfg"), log=str(base / "zookeeper.log"), data_dir=str(base / "data"),
                myid=i + 1 if ensemble else None, peer_ports=peer_ports, netns=netns))
        places = [backend.place(spec, network, "broker", broker_id) for broker_id in range(spec.brokers)]
        metrics_ports = backend.metrics_ports(spec, [host for host, _, _, _ in places])
        for broker_id, ((host, port, _, netns), metrics_port) in enumerate(zip(places, metrics_ports)):
            base = self.dir / f"broker-{broker_id}"
            nodes.append(Node(
                name=f"broker-{broker_id}", kind="broker", host=host, port=port,
                dir=str(base), config=str(base / "server.properties"), log=str(base / "logs" / "server.log"),
                data_dir=str(base / "data"), broker_id=broker_id, netns=netns, metrics_port=metrics_port))
        connect = ",".join(n.address for n in nodes if n.kind == "zookeeper")
        return LabState(dir=str(self.dir), backend=backend.name, zookeeper_mode=spec.zookeeper,
                        zookeeper_connect=connect, nodes=nodes, network=network,
                        created=datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def _start(self, state: LabState, spec: LabSpec, backend: Backend, timeout: float, progress: Progress) -> None:
        began = time.monotonic()
        deadline = began + timeout
        zk_nodes = state.zookeepers
        if spec.zookeeper == "ensemble":
            ensemble = ZooKeeperEnsemble(
                self.dir / "zookeeper", ENSEMBLE_SIZE, host=spec.host, hosts=[n.host for n in zk_nodes],
                launchers=[backend.launcher(n) for n in zk_nodes],
                client_ports=[n.port for n in zk_nodes], quorum_ports=[n.peer_ports[0] for n in zk_nodes],
                election_ports=[n.peer_ports[1] for n in zk_nodes], die_with_parent=False)
            for node, server in zip(zk_nodes, ensemble.servers):
                server.start()
                node.pid = server.pid
                state.save()
            modes = ensemble.wait_ready(max(1.0, deadline - time.monotonic()))
            described = ", ".join(f"zk-{myid} {mode}" for myid, mode in sorted(modes.items()))
            progress(f"ZooKeeper ensemble serving at {state.zookeeper_connect} ({described}) "
                     f"after {time.monotonic() - began:.1f}s")
        else:
            [node] = zk_nodes
            server = ZooKeeperServer(node.dir, node.port, host=node.host, die_with_parent=False,
                                     launcher=backend.launcher(node))
            server.start()
            node.pid = server.pid
            state.save()
            server.wait_ready(max(1.0, deadline - time.monotonic()))
            progress(f"ZooKeeper standalone serving at {state.zookeeper_connect} after {time.monotonic() - began:.1f}s")

        header = _config_header(spec)
        brokers = []
        for node in state.brokers:
            assert node.broker_id is not None
            broker = BrokerProcess(node.broker_id, state.zookeeper_connect, self.dir, node.port,
                                   overrides=broker_overrides(spec, backend, node),
                                   host=node.host, die_with_parent=False, config_header=header,
                                   launcher=backend.launcher(node))
            broker.start()
            node.pid = broker.pid
            state.save()
            brokers.append(broker)
        self._wait_for_brokers(state, brokers, began, deadline, progress)

    @staticmethod
    def _wait_for_brokers(state: LabState, brokers: list[BrokerProcess], began: float, deadline: float,
                          progress: Progress) -> None:
        """Every broker serving and registered, and a controller elected (any backend)."""
        for broker in brokers:
            broker.wait_ready(max(1.0, deadline - time.monotonic()))
        wanted = {n.broker_id for n in state.brokers}

        def elected() -> tuple[int] | None:
            controller = zk.controller()
            return (controller,) if controller is not None and zk.registered() >= wanted else None
        with ZooKeeperView(state.zookeeper_connect) as zk:
            [controller] = wait_for(elected, max(1.0, deadline - time.monotonic()),
                                    "every broker to register and a controller to be elected")
        progress(f"{len(brokers)} brokers registered, controller broker-{controller}, "
                 f"after {time.monotonic() - began:.1f}s")

    # -- Spark (up --spark) -------------------------------------------------------------

    def _start_spark(self, state: LabState, timeout: float, progress: Progress) -> None:
        """A Spark standalone master and one worker on loopback, as daemons of the lab:
        their pids in lab.json, their logs under LAB_DIR/spark, stopped by `down`."""
        from kafkalike.lab.spark import MASTER_CLASS, WORKER_CLASS, SparkNotInstalled, SparkStandalone, SparkStartError
        began = time.monotonic()
        cluster = SparkStandalone(self.dir / SPARK_DIR, workers=1, cores=1, memory="1g", daemon_memory="512m",
                                  die_with_parent=False, java_options=f"{SPARK_MARK}{self.dir}{os.sep}")
        try:
            cluster.start()
        except SparkNotInstalled as error:
            raise LabError(f"--spark: {error}") from None
        master, worker = cluster.daemons
        assert master.proc is not None and worker.proc is not None
        host = cluster.host
        state.spark = {
            "master_url": cluster.master_url, "web_url": cluster.web_url,
            "daemons": [
                {"name": "spark-master", "class": MASTER_CLASS, "pid": master.proc.pid,
                 "address": f"{host}:{cluster.port}", "log": str(master.log_path)},
                {"name": "spark-worker-1", "class": WORKER_CLASS, "pid": worker.proc.pid,
                 "address": f"{host}:{cluster.worker_ports[0][0]}", "log": str(worker.log_path)},
            ]}
        state.save()
        try:
            cluster.wait_ready(timeout)
        except SparkStartError as error:
            first, _, rest = str(error).partition("\n")
            raise LabError(f"Spark did not start: {first}", rest) from None
        progress(f"Spark master at {cluster.master_url} (web UI {cluster.web_url}) with 1 worker ALIVE "
                 f"after {time.monotonic() - began:.1f}s")

    @staticmethod
    def spark_alive(daemon: dict[str, Any]) -> bool:
        return is_alive(daemon.get("pid"), (daemon["class"],))

    def _stop_spark(self, state: LabState, term_timeout: float, progress: Progress) -> None:
        """Each daemon's process group (its executors and Python workers with it): SIGTERM,
        then SIGKILL for what is left."""
        for daemon in reversed(state.spark.get("daemons", [])):
            pid = daemon["pid"]
            if not self.spark_alive(daemon):
                continue
            began = time.monotonic()
            if term_timeout > 0:
                _signal_group(pid, signal.SIGTERM)
                wait_gone(pid, min(term_timeout, 15.0), (daemon["class"],))
            _signal_group(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while group_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            progress(f"{daemon['name']} (pid {pid}) stopped in {time.monotonic() - began:.1f}s")

    # -- down --------------------------------------------------------------------------

    def down(self, timeout: float = 30.0, keep_logs: bool = False, progress: Progress = lambda line: None) -> None:
        self.backend(self.state()).check_usable()   # "there is no lab in DIR" before anything is created there
        with locked(self.dir):
            state = self.state()
            self._teardown(state, keep_logs=keep_logs, term_timeout=timeout, progress=progress)

    def _teardown(self, state: LabState, keep_logs: bool, term_timeout: float,
                  progress: Progress = lambda line: None) -> None:
        """Brokers first (a clean shutdown needs ZooKeeper), then ZooKeeper, then strays; files last.

        Brokers stop one at a time, the controller last: a broker's controlled shutdown
        asks the controller to move its leaderships, and with every broker stopping at
        once that request keeps meeting a controller that is itself going away.
        """
        self._stop_spark(state, term_timeout, progress)
        brokers = [n for n in state.brokers if self.alive(n)]
        if term_timeout > 0 and len(brokers) > 1:
            controller = self.controller_id(state)
            brokers.sort(key=lambda n: n.broker_id == controller)
        for node in brokers:
            self._stop_node(node, term_timeout, progress)
        zookeepers = [n for n in state.zookeepers if self.alive(n)]
        if term_timeout > 0:
            for node in zookeepers:
                send_signal(node.pid, signal.SIGTERM)
        for node in zookeepers:
            self._stop_node(node, term_timeout, progress)
        for pid in self._stray_pids():
            send_signal(pid, signal.SIGKILL)
            wait_gone(pid, 10)
            progress(f"stray lab process {pid} killed")
        self.backend(state).release(state, progress)
        self._remove_files(state, keep_logs)

    def _stop_node(self, node: Node, term_timeout: float, progress: Progress) -> None:
        """SIGTERM and up to term_timeout for a clean exit (none when 0), then SIGKILL."""
        began = time.monotonic()
        if term_timeout > 0:
            send_signal(node.pid, signal.SIGTERM)
            if wait_gone(node.pid, term_timeout, self.markers(node)):
                progress(f"{node.name} (pid {node.pid}) stopped in {time.monotonic() - began:.1f}s")
                return
        send_signal(node.pid, signal.SIGKILL)
        wait_gone(node.pid, 10, self.markers(node))
        if term_timeout > 0:
            progress(f"{node.name} (pid {node.pid}) killed: still running {term_timeout:.0f}s after SIGTERM")

    def _remove_files(self, state: LabState, keep_logs: bool) -> None:
        """Only what the lab made: a --dir that held other things keeps them."""
        for node in state.nodes:
            node_dir = Path(node.dir)
            if keep_logs:
                shutil.rmtree(node.data_dir, ignore_errors=True)
            else:
                shutil.rmtree(node_dir, ignore_errors=True)
        if not keep_logs:
            shutil.rmtree(self.dir / "zookeeper", ignore_errors=True)
            shutil.rmtree(self.dir / SCENARIOS_DIR, ignore_errors=True)
            shutil.rmtree(self.dir / SPARK_DIR, ignore_errors=True)
        (self.dir / STATE_FILE).unlink(missing_ok=True)
        if not keep_logs:
            (self.dir / LOCK_FILE).unlink(missing_ok=True)
            try:
                self.dir.rmdir()
            except OSError:
                pass

    # -- faults ------------------------------------------------------------------------

    def kill(self, node: Node, sig: int = signal.SIGTERM, timeout: float = 60.0) -> float:
        """Signal one node and wait for it to exit; returns how long that took."""
        if not self.alive(node):
            raise LabError(f"{node.name} is not running")
        began = time.monotonic()
        send_signal(node.pid, sig)
        if not wait_gone(node.pid, timeout, self.markers(node)):
            raise LabError(f"{node.name} (pid {node.pid}) still runs {timeout:.0f}s after "
                           f"{signal.Signals(sig).name}; try: kill {node.name} -9")
        return time.monotonic() - began

    def restart(self, node: Node, timeout: float = 90.0, progress: Progress = lambda line: None) -> Node:
        """Stop the node cleanly if it runs, start it again on its own config and data, and
        wait until it serves (a broker: registered and told of the controller)."""
        state = self.state()
        backend = self.backend(state)
        backend.check_usable()
        node = state.node(node.name) or node
        backend.check_node(state, node)
        if self.alive(node):
            elapsed = self.kill(node, signal.SIGTERM, timeout)
            progress(f"{node.name} (pid {node.pid}) stopped cleanly in {elapsed:.1f}s")
        if node.kind == "zookeeper":
            server = self._zookeeper(node, backend)
            server.start()
            node.pid = server.pid
            record_pid(self.dir, node.name, node.pid)
            server.wait_ready(timeout)
            return node
        self._wait_deregistered(node, state)
        broker = self._broker(node, state, backend)
        broker.start()
        node.pid = broker.pid
        record_pid(self.dir, node.name, node.pid)
        try:
            broker.wait_ready(timeout)
        except BrokerStartError as error:
            raise LabError(f"{node.name} did not come back: {error}") from None
        return node

    def _wait_deregistered(self, node: Node, state: LabState) -> None:
        """After kill -9 the broker's /brokers/ids/N lives until ZooKeeper expires its
        session, and a broker started before that refuses to (NodeExistsException)."""
        limit = _session_timeout_s(node) + 10.0
        with ZooKeeperView(state.zookeeper_connect) as zk:
            wait_for(lambda: node.broker_id not in zk.registered(), limit,
                     f"the old session of {node.name} to expire (/brokers/ids/{node.broker_id})")

    # -- status ------------------------------------------------------------------------

    def status(self) -> dict:
        state = self.state()
        alive = {n.name: self.alive(n) for n in state.nodes}
        controller: int | None = None
        registered: set[int] | None = None
        zookeeper_reachable = True
        try:
            with ZooKeeperView(state.zookeeper_connect, timeout=3.0) as zk:
                controller = zk.controller()
                registered = zk.registered()
        except LabError:
            zookeeper_reachable = False
        live_brokers = [n for n in state.brokers if alive[n.name]]
        # The controller's metadata is the freshest; any live broker will do otherwise.
        live_brokers.sort(key=lambda n: n.broker_id != controller)
        metadata = read_metadata((n.host, n.port) for n in live_brokers)
        if controller is None and not zookeeper_reachable and metadata is not None and metadata.controller_id >= 0:
            controller = metadata.controller_id
        nodes = []
        for node in state.nodes:
            if node.kind == "zookeeper":
                mode = zookeeper_mode(node.host, node.port) if alive[node.name] else None
                role = mode or ("not serving" if alive[node.name] else "-")
            elif alive[node.name]:
                if registered is not None and node.broker_id not in registered:
                    role = "unregistered"
                else:
                    role = "controller" if node.broker_id == controller else "broker"
            else:
                role = "still registered" if registered and node.broker_id in registered else "-"
            nodes.append({"name": node.name, "kind": node.kind, "address": node.address, "netns": node.netns,
                          "pid": node.pid if alive[node.name] else None, "alive": alive[node.name], "role": role,
                          "metrics_url": node.metrics_url})
        spark = None
        if state.spark:
            from kafkalike.lab.spark import master_json
            answer = master_json(state.spark["web_url"])
            workers = sum(1 for w in (answer or {}).get("workers", []) if w.get("state") == "ALIVE")
            spark = {"master_url": state.spark["master_url"], "web_url": state.spark["web_url"],
                     "status": (answer or {}).get("status"), "workers_alive": workers}
            for daemon in state.spark["daemons"]:
                alive = self.spark_alive(daemon)
                if daemon["name"] == "spark-master":
                    role = f"spark master, {spark['status'] or 'not answering'}" if alive else "-"
                else:
                    role = "spark worker" if alive else "-"
                nodes.append({"name": daemon["name"], "kind": "spark", "address": daemon["address"], "netns": None,
                              "pid": daemon["pid"] if alive else None, "alive": alive, "role": role})
        controller_node = state.broker(controller) if controller is not None else None
        return {
            "dir": str(self.dir),
            "backend": state.backend,
            "zookeeper": {"mode": state.zookeeper_mode, "connect": state.zookeeper_connect,
                          "reachable": zookeeper_reachable},
            "bootstrap": state.bootstrap,
            "nodes": nodes,
            "controller": controller_node.name if controller_node else None,
            "metadata_from": metadata.answered_by if metadata else None,
            "partitions": metadata.partitions if metadata else None,
            "under_replicated": len(metadata.under_replicated) if metadata else None,
            "under_replicated_partitions": [f"{t}-{p}" for t, p in metadata.under_replicated] if metadata else [],
            "offline": len(metadata.offline) if metadata else None,
            "network": self.backend(state).describe(state),
            "partition": state.network.get("partition"),
            "spark": spark,
        }

    # -- partitions (backends with a network of their own) ---------------------------------

    def partition(self, names: list[str], method: str | None = None) -> dict[str, Any]:
        """Cut the named nodes off from the rest of the lab (they still reach each other);
        returns what was done, as the state keeps it until heal()."""
        self.state()        # "there is no lab in DIR" before anything is created there
        with locked(self.dir):
            state = self.state()
            backend = self.backend(state)
            self._require_partitions(backend, "partition")
            backend.check_usable()
            current = state.network.get("partition")
            if current:
                raise LabError(f"the lab is already partitioned ({', '.join(current['isolated'])} cut off); "
                               "kafkalike-lab.sh heal first")
            isolated: list[Node] = []
            for name in names:
                node = self.resolve(name, state)
                if node not in isolated:
                    isolated.append(node)
            if len(isolated) == len(state.nodes):
                raise LabError("that names every node of the lab; there is no rest to cut them off from")
            record = backend.partition(state, isolated, method)
            record["since"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            state.network["partition"] = record
            state.save()
            return record

    def heal(self) -> dict[str, Any] | None:
        """Undo partition(); returns the partition that was healed (None: there was none)."""
        self.state()
        with locked(self.dir):
            state = self.state()
            backend = self.backend(state)
            self._require_partitions(backend, "heal")
            backend.check_usable()
            backend.heal(state)
            healed = state.network.pop("partition", None)
            state.save()
            return healed


    @staticmethod
    def _require_partitions(backend: Backend, command: str) -> None:
        if not backend.supports_partitions:
            raise LabError(f"{command} needs --backend netns or docker (this lab runs on the {backend.name} "
                           "backend, whose nodes share loopback)", exit_code=2)


def open_lab(lab_dir: Path | str, backend: str | None = None) -> Lab:
    """The Lab for a directory: the docker backend's nodes are containers (DockerLab);
    backend None reads it from the lab's state (local when there is none)."""
    if backend is None:
        try:
            backend = LabState.load(Path(lab_dir)).backend if LabState.exists(Path(lab_dir)) else BACKEND
        except LabError:
            backend = BACKEND
    if backend == "docker":
        from kafkalike.lab.docker import DockerLab
        return DockerLab(lab_dir)
    return Lab(lab_dir)


# The name the lab's first (local-only) version had; scenarios and tests still use it.
LocalLab = Lab
