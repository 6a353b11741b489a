"""The docker backend: each ZooKeeper server and broker in a container of its own, on a
user-defined bridge network private to the lab, driven through the docker SDK.

For a lab whose prefix is PREFIX ("kl" and 6 hex digits of a hash of the lab directory,
as the netns backend names its namespaces) and whose subnet is 10.201.N.0/24:

    network PREFIX-net        a bridge network, gateway 10.201.N.1 (this machine's side)
    container PREFIX-zk-1     10.201.N.10 (zk-2 .11, zk-3 .12), ZooKeeper on 2181
    container PREFIX-broker-0 10.201.N.100 (broker-1 .101, ...), the broker on 9092 and its
                              Prometheus endpoint (kafkalike.metrics.port) on 9404
    volume PREFIX-broker-0    the broker's log.dirs, so a restarted broker keeps its log

This machine reaches every container's address through the bridge, so `listeners` and
`advertised.listeners` are the container's own address: the answer Metadata gives works
for clients on this machine and for the other brokers alike (no published ports).

Each container runs the same command the local backend runs (the broker's
`python -m kafkalike.broker.main server.properties`, ZooKeeper's java command line) from
the image built from this checkout. The node's directory in the lab (configs rendered by
the same code as the other backends, logs) is bind-mounted at the same path, so the
files are where `logs` and an operator look for them, and the container's main process
is a process on this machine whose command line names its config: `status`, `kill` and
`down` see it by its pid (the container's State.Pid) as they see a local daemon.
`kill NODE [-9]` signals it through the SDK (container.kill).

Partitions: `drop` (the default) puts an iptables chain in the named containers' network
namespaces (entered with nsenter from this machine) that DROPs packets from and to every
other node, as the netns backend does; `link` disconnects the named containers from the
lab's network (they reach nobody, this machine included) and `heal` connects them again
at their own addresses.

`down` removes every container, the network and the volumes (anything labelled with the
lab's prefix, so an interrupted run's leftovers too).

The image: `kafkalike-lab:CHECKSUM`-style tags are avoided; one image `kafkalike-lab:latest`
labelled with a hash of the checkout's tracked files is rebuilt only when that hash
changes. Its base is an image dockerd already has (kafkalike-base:bookworm or
python:3.11-slim-bookworm); else the Dockerfile's public default pulled from a registry;
where no registry answers (within PULL_TIMEOUT), `kafkalike-base:bookworm` is made once
with debootstrap from Debian's packages (docker/build-base.sh) and kept by dockerd.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from kafkalike.lab.cluster import BROKER_MAIN, REPO_ROOT, BrokerProcess, BrokerStartError
from kafkalike.lab.local import (
    Backend,
    Lab,
    LabSpec,
    Progress,
    _config_header,
    broker_overrides,
    free_subnet,
    machine_lock,
)
from kafkalike.lab.netns import CHAIN, prefix_for
from kafkalike.lab.state import LabError, LabState, Node, record_pid
from kafkalike.lab.zookeeper import (
    FAST_ELECTION_OPTIONS,
    Peer,
    ZooKeeperServer,
    render_config,
)

NAME = "docker"
SUBNETS = ipaddress.ip_network("10.201.0.0/16")
ZOOKEEPER_HOST = 10
BROKER_HOST = 100
MAX_BROKERS = 150
IMAGE = "kafkalike-lab"
BASE_IMAGE = "kafkalike-base:bookworm"
PUBLIC_BASE = "python:3.11-slim-bookworm"
LABEL = "io.kafkalike.lab"                 # its value: the lab's prefix
CHECKOUT_LABEL = "io.kafkalike.checkout"    # the image's: the hash of the tracked files
METHODS = ("drop", "link")
MACHINE_LOCK = Path("/run/lock/kafkalike-lab-docker.lock")
DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
BASE_SCRIPT = REPO_ROOT / "docker" / "build-base.sh"
VENV_PYTHON = "/opt/kafkalike/bin/python"
PULL_TIMEOUT = 20.0                       # seconds without a word from dockerd while pulling


def client():
    """A docker SDK client on dockerd's socket, or LabError naming what is missing."""
    try:
        import docker
    except ImportError:
        raise LabError("--backend docker needs the docker Python SDK: pip install docker "
                       "(scripts/setup.sh --test installs it)") from None
    try:
        found = docker.from_env(timeout=300)
        found.ping()
        return found
    except docker.errors.DockerException as error:
        text = str(error)
        if "Permission denied" in text or "PermissionError" in text:
            raise LabError("--backend docker: no permission on dockerd's socket "
                           f"({os.environ.get('DOCKER_HOST', '/var/run/docker.sock')}); run as root or join "
                           "the docker group") from None
        raise LabError("--backend docker: no docker daemon answers at "
                       f"{os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')}; start dockerd "
                       "(apt-get install docker.io; dockerd &)") from None


# -- the image -------------------------------------------------------------------------

def tracked_files() -> list[str]:
    """The checkout as the host runs it: tracked files and new ones git does not ignore."""
    if (REPO_ROOT / ".git").exists() and shutil.which("git"):
        result = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True)
        if result.returncode != 0:
            raise LabError(f"cannot list the checkout's files in {REPO_ROOT}: git ls-files failed")
        names = {name for name in result.stdout.decode().split("\0") if name and (REPO_ROOT / name).is_file()}
    else:       # an unpacked source tree: everything but logs, caches and build output
        skip = {"logs", "__pycache__", ".pytest_cache", "build", "dist", ".git"}
        names = {str(path.relative_to(REPO_ROOT)) for path in REPO_ROOT.rglob("*")
                 if path.is_file() and not skip.intersection(path.relative_to(REPO_ROOT).parts)
                 and not any(part.endswith(".egg-info") for part in path.parts)
                 and path.suffix != ".whl"}
    names.add(str(DOCKERFILE.relative_to(REPO_ROOT)))        # the build needs it, tracked or not yet
    return sorted(names)


def checkout_hash(files: list[str]) -> str:
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (REPO_ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def requirements() -> list[str]:
    """setup.cfg's install_requires: what the image's Python needs besides kafkalike."""
    import configparser
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg")
    return [line.strip() for line in config["options"]["install_requires"].splitlines() if line.strip()]


def wheel_cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kafkalike" / "docker-wheels"


def ensure_wheels(progress: Progress) -> Path:
    """Wheels of the requirements (and setuptools, wheel), made with this machine's pip,
    which reaches PyPI the way this machine is set up to (its proxy, its certificates).
    Made again only when the requirements change."""
    cache = wheel_cache()
    wanted = "\n".join(["setuptools", "wheel", *requirements()]) + "\n"
    marker = cache / "requirements.txt"
    if marker.exists() and marker.read_text() == wanted and any(cache.glob("*.whl")):
        return cache
    began = time.monotonic()
    cache.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "-w", str(cache),
                             *wanted.split()], capture_output=True, text=True)
    if result.returncode != 0:
        raise LabError("pip wheel of the image's requirements failed\n" + (result.stdout + result.stderr)[-3000:])
    marker.write_text(wanted)
    progress(f"wheels of {len(wanted.split())} requirements in {cache} made in {time.monotonic() - began:.0f}s")
    return cache


def _context(files: list[str], wheels: Path) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in files:
            tar.add(str(REPO_ROOT / name), arcname=name, recursive=False)
        for wheel in sorted(wheels.glob("*.whl")):
            tar.add(str(wheel), arcname=f"docker/wheels/{wheel.name}", recursive=False)
    buffer.seek(0)
    return buffer


def _has_image(docker_client, name: str):
    import docker
    try:
        return docker_client.images.get(name)
    except docker.errors.ImageNotFound:
        return None


def debian_mirror() -> str:
    """The Debian mirror this machine's apt uses (deb822 .sources or sources.list)."""
    candidates = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in candidates:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("URIs:"):
                for uri in line.split()[1:]:
                    if uri.rstrip("/").endswith("/debian"):
                        return uri
    try:
        for line in Path("/etc/apt/sources.list").read_text().splitlines():
            words = line.split()
            if len(words) >= 3 and words[0] == "deb" and words[1].rstrip("/").endswith("/debian"):
                return words[1]
    except OSError:
        pass
    return "http://deb.debian.org/debian"


def pull_public_base(docker_client, progress: Progress, timeout: float = PULL_TIMEOUT) -> bool:
    """Pull the Dockerfile's public default from a registry; False (quickly) when none answers.

    The pull streams progress lines, so a `timeout` between two answers of dockerd bounds a
    pull that hangs on an unreachable registry without cutting short a slow but real download.
    """
    import docker
    import requests
    repository, tag = PUBLIC_BASE.split(":")
    began = time.monotonic()
    progress(f"pulling base image {PUBLIC_BASE}")
    saved = docker_client.api.timeout
    docker_client.api.timeout = timeout
    try:
        docker_client.images.pull(repository, tag=tag)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        first = (str(error).splitlines() or [type(error).__name__])[0]
        progress(f"no registry gave {PUBLIC_BASE} ({first[:200]})")
        return False
    finally:
        docker_client.api.timeout = saved
    progress(f"base image {PUBLIC_BASE} pulled in {time.monotonic() - began:.0f}s")
    return True


def ensure_base(docker_client, progress: Progress) -> str:
    """The base image: one already here (ours, or the public default), else the public default
    pulled from a registry, else (no registry reachable) one built with debootstrap."""
    for name in (BASE_IMAGE, PUBLIC_BASE):
        if _has_image(docker_client, name) is not None:
            return name
    if pull_public_base(docker_client, progress):
        return PUBLIC_BASE
    if shutil.which("debootstrap") is None:
        raise LabError(f"--backend docker needs a base image: {PUBLIC_BASE} could not be pulled (no registry "
                       f"answers) and {BASE_IMAGE}, built without a registry by debootstrap, cannot be made: "
                       "debootstrap is not installed (apt-get install debootstrap)")
    began = time.monotonic()
    progress(f"building base image {BASE_IMAGE} with debootstrap from {debian_mirror()} (minutes, once)")
    result = subprocess.run(["bash", str(BASE_SCRIPT), BASE_IMAGE, debian_mirror()], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise LabError(f"building the base image failed (docker/build-base.sh exit {result.returncode})\n"
                       + (result.stdout + result.stderr)[-3000:])
    progress(f"base image {BASE_IMAGE} built in {time.monotonic() - began:.0f}s")
    return BASE_IMAGE


def ensure_image(docker_client, progress: Progress = lambda line: None) -> str:
    """kafkalike-lab:latest for the checkout as it is now; built only when it is missing
    or the tracked files changed since it was built."""
    files = tracked_files()
    wanted = checkout_hash(files)
    tag = f"{IMAGE}:latest"
    image = _has_image(docker_client, tag)
    if image is not None and (image.labels or {}).get(CHECKOUT_LABEL) == wanted:
        return tag
    base = ensure_base(docker_client, progress)
    wheels = ensure_wheels(progress)
    began = time.monotonic()
    progress(f"building image {tag} from {REPO_ROOT} on {base}")
    import docker
    try:
        docker_client.images.build(fileobj=_context(files, wheels), custom_context=True, dockerfile="docker/Dockerfile",
                                   tag=tag, buildargs={"BASE": base}, labels={CHECKOUT_LABEL: wanted},
                                   rm=True, forcerm=True, pull=False)
    except docker.errors.BuildError as error:
        lines = [entry.get("stream", entry.get("error", "")) for entry in error.build_log]
        raise LabError(f"building image {tag} failed: {error.msg}\n" + "".join(lines)[-3000:]) from None
    except docker.errors.APIError as error:
        raise LabError(f"building image {tag} failed: {error.explanation or error}") from None
    progress(f"image {tag} built in {time.monotonic() - began:.0f}s")
    # The image of an earlier checkout lost its tag: remove it (unless a container still uses it).
    with contextlib.suppress(docker.errors.APIError):
        docker_client.images.prune(filters={"dangling": True, "label": CHECKOUT_LABEL})
    return tag


# -- the backend -----------------------------------------------------------------------

def _subnets_in_use(docker_client) -> set[ipaddress.IPv4Network]:
    used = set()
    for network in docker_client.networks.list():
        for config in (network.attrs.get("IPAM") or {}).get("Config") or []:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                used.add(ipaddress.ip_network(config["Subnet"], strict=False))
    text = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout \
        if shutil.which("ip") else ""
    for word in text.split():
        if word.startswith("10.201."):
            with contextlib.suppress(ValueError):
                used.add(ipaddress.ip_network(word, strict=False).supernet(new_prefix=24))
    return used


class DockerBackend(Backend):
    name = NAME
    owned_keys = (*Backend.owned_keys, "advertised.listeners")
    supports_partitions = True

    def __init__(self) -> None:
        self._client = None

    @property
    def docker(self):
        if self._client is None:
            self._client = client()
        return self._client

    def check_usable(self) -> None:
        self.docker  # noqa: B018 - connects, or says what is missing

    def validate(self, spec: LabSpec) -> None:
        super().validate(spec)
        if spec.brokers > MAX_BROKERS:
            raise LabError(f"--backend docker has addresses for {MAX_BROKERS} brokers, not {spec.brokers}")

    def preflight(self, spec: LabSpec, lab_dir: Path) -> None:
        prefix = prefix_for(lab_dir)
        running = self.docker.containers.list(filters={"label": f"{LABEL}={prefix}", "status": "running"})
        if running:
            raise LabError(f"container {running[0].name} of an earlier lab in {lab_dir} still runs; "
                           "stop it with: kafkalike-lab.sh down (or docker rm -f)")
        self._remove_everything(prefix, lambda line: None)

    def reserving(self) -> contextlib.AbstractContextManager[None]:
        return machine_lock(MACHINE_LOCK)

    def plan_network(self, spec: LabSpec, lab_dir: Path) -> dict[str, Any]:
        prefix = prefix_for(lab_dir)
        subnet = free_subnet(SUBNETS, prefix, _subnets_in_use(self.docker), "docker")
        return {"prefix": prefix, "subnet": str(subnet), "gateway": str(subnet[1]), "network": f"{prefix}-net",
                "image": f"{IMAGE}:latest"}

    def place(self, spec: LabSpec, network: dict[str, Any], kind: str,
              index: int) -> tuple[str, int, list[int], str | None]:
        subnet = ipaddress.ip_network(network["subnet"])
        if kind == "zookeeper":
            peers = [spec.quorum_port, spec.election_port] if spec.zookeeper == "ensemble" else []
            return str(subnet[ZOOKEEPER_HOST + index]), spec.zk_port, peers, f"{network['prefix']}-zk-{index + 1}"
        return str(subnet[BROKER_HOST + index]), spec.broker_port, [], f"{network['prefix']}-broker-{index}"

    def provision(self, state: LabState, progress: Progress) -> None:
        import docker
        net = state.network
        ensure_image(self.docker, progress)
        began = time.monotonic()
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=net["subnet"],
                                                                           gateway=net["gateway"])])
        self.docker.networks.create(net["network"], driver="bridge", ipam=ipam, labels={LABEL: net["prefix"]})
        for node in state.brokers:
            self.docker.volumes.create(self.volume(node), labels={LABEL: net["prefix"]})
        progress(f"network {net['network']} ({net['subnet']}, this machine {net['gateway']}) and "
                 f"{len(state.brokers)} volumes made in {time.monotonic() - began:.1f}s")

    @staticmethod
    def volume(node: Node) -> str:
        assert node.netns is not None
        return node.netns            # PREFIX-broker-N, the container's name too

    def broker_properties(self, node: Node) -> dict[str, str]:
        return {"advertised.listeners": f"PLAINTEXT://{node.host}:{node.port}"}

    # -- containers --------------------------------------------------------------------

    def container(self, node: Node):
        import docker
        try:
            return self.docker.containers.get(node.netns)
        except docker.errors.NotFound:
            return None

    def run(self, state: LabState, node: Node, command: list[str], output: str) -> int:
        """Start node's container (a new one, on the node's files and volume) running
        command with its output appended to the file output; the command's host pid."""
        import docker
        command = ["sh", "-c", 'exec "$@" >>"$0" 2>&1', output, *command]
        net = state.network
        old = self.container(node)
        if old is not None:
            old.remove(force=True)
        mounts = [docker.types.Mount(target=node.dir, source=node.dir, type="bind")]
        if node.kind == "broker":
            mounts.append(docker.types.Mount(target=node.data_dir, source=self.volume(node), type="volume"))
        endpoint = self.docker.api.create_endpoint_config(ipv4_address=node.host)
        networking = self.docker.api.create_networking_config({net["network"]: endpoint})
        host_config = self.docker.api.create_host_config(mounts=mounts, cap_add=["NET_ADMIN"])
        created = self.docker.api.create_container(
            net["image"], command=command, name=node.netns, hostname=node.name, working_dir=node.dir,
            environment={"LOG_DIR": str(Path(node.log).parent)}, labels={LABEL: net["prefix"]},
            host_config=host_config, networking_config=networking, detach=True)
        self.docker.api.start(created["Id"])
        found = self.docker.containers.get(created["Id"])
        pid = found.attrs["State"]["Pid"]
        if not pid:
            raise LabError(f"container {node.netns} of {node.name} exited at once: "
                           f"{found.logs(tail=20).decode(errors='replace')}")
        return int(pid)

    def signal(self, node: Node, sig: int) -> None:
        found = self.container(node)
        if found is not None and found.status == "running":
            import docker
            with contextlib.suppress(docker.errors.APIError):
                found.kill(signal=int(sig))

    def check_node(self, state: LabState, node: Node) -> None:
        names = [n.name for n in self.docker.networks.list(names=[state.network["network"]])]
        if state.network["network"] not in names:
            raise LabError(f"the lab's network {state.network['network']} is gone; start the lab again: "
                           "kafkalike-lab.sh down; kafkalike-lab.sh up --backend docker")

    def _remove_everything(self, prefix: str, progress: Progress) -> tuple[int, int, int]:
        import docker
        label = {"label": f"{LABEL}={prefix}"}
        containers = self.docker.containers.list(all=True, filters=label)
        for found in containers:
            with contextlib.suppress(docker.errors.NotFound):
                found.remove(force=True)
        networks = self.docker.networks.list(filters=label)
        for found in networks:
            with contextlib.suppress(docker.errors.NotFound):
                found.remove()
        volumes = self.docker.volumes.list(filters=label)
        for found in volumes:
            with contextlib.suppress(docker.errors.NotFound):
                found.remove(force=True)
        return len(containers), len(networks), len(volumes)

    def release(self, state: LabState, progress: Progress) -> None:
        prefix = state.network.get("prefix") or prefix_for(state.dir)
        containers, networks, volumes = self._remove_everything(prefix, progress)
        if containers or networks or volumes:
            progress(f"removed {containers} containers, {networks} network, {volumes} volumes")

    # -- partitions --------------------------------------------------------------------

    def _nsenter(self, node: Node, *command: str, stdin: str | None = None, check: bool = True):
        found = self.container(node)
        if found is None or found.status != "running":
            raise LabError(f"{node.name} is not running (container {node.netns})")
        pid = found.attrs["State"]["Pid"]
        result = subprocess.run(["nsenter", "-t", str(pid), "-n", *command], input=stdin, capture_output=True,
                                text=True)
        if check and result.returncode != 0:
            raise LabError(f"{' '.join(command)} in {node.name}'s network namespace failed: "
                           f"{result.stderr.strip() or result.returncode}")
        return result

    def partition(self, state: LabState, isolated: list[Node], method: str | None) -> dict[str, Any]:
        method = method or "drop"
        if method not in METHODS:
            raise LabError(f"--method is {' or '.join(METHODS)}, not {method}")
        names = {n.name for n in isolated}
        rest = [n for n in state.nodes if n.name not in names]
        if method == "link":
            network = self.docker.networks.get(state.network["network"])
            for node in isolated:
                network.disconnect(node.netns, force=True)
        else:
            if shutil.which("iptables-restore") is None or shutil.which("nsenter") is None:
                raise LabError("partition --method drop needs iptables and nsenter on this machine "
                               "(apt-get install iptables util-linux); --method link disconnects instead")
            for node in isolated:
                rules = [f"-A {CHAIN} -s {other.host}/32 -j DROP" for other in rest]
                rules += [f"-A {CHAIN} -d {other.host}/32 -j DROP" for other in rest]
                script = "\n".join(["*filter", f":{CHAIN} - [0:0]", f"-I INPUT 1 -j {CHAIN}",
                                    f"-I OUTPUT 1 -j {CHAIN}", *rules, "COMMIT", ""])
                self._nsenter(node, "iptables-restore", "--noflush", stdin=script)
        return {"isolated": [n.name for n in isolated], "from": [n.name for n in rest], "method": method}

    def heal(self, state: LabState) -> None:
        import docker
        network = self.docker.networks.get(state.network["network"])
        for node in state.nodes:
            found = self.container(node)
            if found is None or found.status != "running":
                continue
            if state.network["network"] not in (found.attrs["NetworkSettings"].get("Networks") or {}):
                with contextlib.suppress(docker.errors.APIError):
                    network.connect(found, ipv4_address=node.host)
            if shutil.which("nsenter") and self._nsenter(node, "iptables", "-w", "-S", CHAIN,
                                                         check=False).returncode == 0:
                script = "\n".join(["*filter", f"-D INPUT -j {CHAIN}", f"-D OUTPUT -j {CHAIN}", f"-F {CHAIN}",
                                    f"-X {CHAIN}", "COMMIT", ""])
                self._nsenter(node, "iptables-restore", "--noflush", stdin=script)

    def describe(self, state: LabState) -> dict[str, Any] | None:
        net = state.network
        containers = {}
        for node in state.nodes:
            found = self.container(node)
            containers[node.name] = {"name": node.netns, "id": found.short_id if found else None,
                                     "status": found.status if found else "missing"}
        return {"network": net.get("network"), "subnet": net.get("subnet"), "gateway": net.get("gateway"),
                "image": net.get("image"), "containers": containers,
                "volumes": [self.volume(n) for n in state.brokers]}


class DockerLab(Lab):
    """The lab's operations where nodes are containers: starting goes through the SDK;
    alive/kill/down see each container's main process by its host pid."""

    # -- starting ----------------------------------------------------------------------

    def _zookeeper_command(self, node: Node) -> list[str]:
        options = FAST_ELECTION_OPTIONS if node.myid is not None else ()
        server = ZooKeeperServer.attach(node.dir, die_with_parent=False, jvm_options=options)
        return ["java", *server.command()[1:]]

    @staticmethod
    def _broker_command(node: Node) -> list[str]:
        return [VENV_PYTHON, "-m", BROKER_MAIN, node.config]

    def _write_zookeeper_files(self, state: LabState, node: Node) -> None:
        data = Path(node.data_dir)
        data.mkdir(parents=True, exist_ok=True)
        peers = []
        if node.myid is not None:
            (data / "myid").write_text(f"{node.myid}\n")
            peers = [Peer(n.myid, n.host, n.peer_ports[0], n.peer_ports[1]) for n in state.zookeepers]
        Path(node.config).write_text(render_config(data_dir=data, client_port=node.port, client_address=node.host,
                                                   peers=peers))

    def _start_zookeeper(self, state: LabState, node: Node, backend: DockerBackend) -> None:
        node.pid = backend.run(state, node, self._zookeeper_command(node), node.log)
        Path(node.dir, "zookeeper.pid").write_text(f"{node.pid}\n")

    def _start(self, state: LabState, spec: LabSpec, backend: Backend, timeout: float, progress: Progress) -> None:
        assert isinstance(backend, DockerBackend)
        began = time.monotonic()
        deadline = began + timeout
        for node in state.zookeepers:
            self._write_zookeeper_files(state, node)
            self._start_zookeeper(state, node, backend)
            state.save()
        for node in state.zookeepers:
            ZooKeeperServer.attach(node.dir, die_with_parent=False).wait_ready(max(1.0, deadline - time.monotonic()))
        progress(f"ZooKeeper {spec.zookeeper} serving at {state.zookeeper_connect} "
                 f"after {time.monotonic() - began:.1f}s")
        header = _config_header(spec)
        brokers = []
        for node in state.brokers:
            assert node.broker_id is not None
            broker = BrokerProcess(node.broker_id, state.zookeeper_connect, self.dir, node.port,
                                   overrides=broker_overrides(spec, backend, node),
                                   host=node.host, die_with_parent=False, config_header=header)
            broker.write_config()
            broker.app_log_dir.mkdir(parents=True, exist_ok=True)
            node.pid = backend.run(state, node, self._broker_command(node), str(broker.app_log_dir / "kafkaServer.out"))
            broker._pid = node.pid
            state.save()
            brokers.append(broker)
        self._wait_for_brokers(state, brokers, began, deadline, progress)

    # -- faults ------------------------------------------------------------------------

    def kill(self, node: Node, sig: int = signal.SIGTERM, timeout: float = 60.0) -> float:
        """The signal goes through the SDK (container.kill); then wait for the process to exit."""
        from kafkalike.lab.processes import wait_gone
        if not self.alive(node):
            raise LabError(f"{node.name} is not running")
        began = time.monotonic()
        self.backend(self.state()).signal(node, sig)
        if not wait_gone(node.pid, timeout, self.markers(node)):
            raise LabError(f"{node.name} (container {node.netns}) still runs {timeout:.0f}s after "
                           f"{signal.Signals(sig).name}; try: kill {node.name} -9")
        return time.monotonic() - began

    def restart(self, node: Node, timeout: float = 90.0, progress: Progress = lambda line: None) -> Node:
        state = self.state()
        backend = self.backend(state)
        assert isinstance(backend, DockerBackend)
        backend.check_usable()
        node = state.node(node.name) or node
        backend.check_node(state, node)
        if self.alive(node):
            elapsed = self.kill(node, signal.SIGTERM, timeout)
            progress(f"{node.name} (container {node.netns}) stopped cleanly in {elapsed:.1f}s")
        if node.kind == "zookeeper":
            self._start_zookeeper(state, node, backend)
            record_pid(self.dir, node.name, node.pid)
            ZooKeeperServer.attach(node.dir, die_with_parent=False).wait_ready(timeout)
            return node
        self._wait_deregistered(node, state)
        broker = self._broker(node, state, backend)
        broker.app_log_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            broker._log_offset = broker.server_log.stat().st_size
        node.pid = backend.run(state, node, self._broker_command(node), str(broker.app_log_dir / "kafkaServer.out"))
        broker._pid = node.pid
        record_pid(self.dir, node.name, node.pid)
        try:
            broker.wait_ready(timeout)
        except BrokerStartError as error:
            raise LabError(f"{node.name} did not come back: {error}") from None
        return node

