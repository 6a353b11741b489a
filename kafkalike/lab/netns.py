"""The netns backend: each ZooKeeper server and broker on a host of its own, made of a
network namespace, on a bridge private to this machine.

For a lab whose prefix is PREFIX ("kl" and 6 hex digits of a hash of the lab directory,
so two labs never share a name) and whose subnet is 10.200.N.0/24 (N free on this
machine, picked under a machine-wide lock):

    namespace PREFIX-hub        bridge br0; a veth port per node (v-zk-1, v-broker-0, ...) and `uplink`
    namespace PREFIX-zk-1       eth0 10.200.N.10 (zk-2 .11, zk-3 .12), lo
    namespace PREFIX-broker-0   eth0 10.200.N.100 (broker-1 .101, ...), lo
    this machine                link PREFIX-up 10.200.N.1/24, the veth whose peer is the hub's `uplink`

So every node has its own address with the usual ports (ZooKeeper 2181, quorum 2888,
election 3888, every broker 9092, its `listeners` and `advertised.listeners`), and this
machine's shell (tools, the scenarios' verifiable producer and consumer, `status`)
reaches all of them through PREFIX-up. The daemons start with `ip netns exec NS ...`,
which execs them, so the pid kept in lab.json is the daemon's, as on loopback.

Partitions: `partition A B...` cuts the named nodes off from the other nodes, in both
directions. The default method, `drop`, adds an iptables chain in each named node's
namespace that DROPs packets from and to every other node's address: connections stall
as on a real partition, the named nodes still reach each other, and this machine still
reaches everyone. `link` takes the named nodes' bridge ports down instead (a pulled
cable: they reach nobody, this machine included). `heal` undoes both.

`down` deletes every namespace (with them the bridge and every veth) and PREFIX-up,
and any namespace whose name starts with PREFIX- that an interrupted run left behind.
Everything here needs root.
"""
from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from kafkalike.lab.local import Backend, LabSpec, Progress, free_subnet, machine_lock
from kafkalike.lab.processes import send_signal, wait_gone
from kafkalike.lab.state import LabError, LabState, Node

NAME = "netns"
SUBNETS = ipaddress.ip_network("10.200.0.0/16")       # one /24 of it per lab
MACHINE_HOST = 1                                       # this machine: 10.200.N.1
ZOOKEEPER_HOST = 10                                    # zk-1 .10, zk-2 .11, zk-3 .12
BROKER_HOST = 100                                      # broker-0 .100, broker-1 .101, ...
MAX_BROKERS = 150
BRIDGE = "br0"                                         # inside the hub namespace
NODE_LINK = "eth0"                                     # inside each node's namespace
HUB_UPLINK = "uplink"                                  # the hub's end of this machine's veth
CHAIN = "KAFKALIKE-PARTITION"                          # iptables chain of the drop method
METHODS = ("drop", "link")
# Held while a lab picks its subnet and makes its uplink: two `up`s at once on this
# machine never pick the same subnet.
MACHINE_LOCK = Path("/run/lock/kafkalike-lab-netns.lock")


def prefix_for(lab_dir: Path | str) -> str:
    """kl + 6 hex digits of the lab directory's path: the lab's names on this machine.
    PREFIX-up (10 characters) stays within Linux's 15-character link names."""
    return "kl" + hashlib.sha1(str(Path(lab_dir).absolute()).encode()).hexdigest()[:6]


def ip_command() -> str:
    found = shutil.which("ip")
    if found is None:
        raise LabError("--backend netns needs the ip command (iproute2), which is not on PATH; "
                       "install it: apt-get install iproute2")
    return found


def ip(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`ip ARGS`; LabError with ip's own message when check and it fails."""
    result = subprocess.run([ip_command(), *args], input=stdin, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise LabError(f"ip {' '.join(args)} failed: {result.stderr.strip() or f'exit {result.returncode}'}")
    return result


def namespaces() -> list[str]:
    """Every network namespace `ip netns` knows on this machine."""
    return [line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line.strip()]


def link_exists(name: str) -> bool:
    return ip("link", "show", "dev", name, check=False).returncode == 0


def in_namespace(ns: str, *command: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([ip_command(), "netns", "exec", ns, *command], input=stdin, capture_output=True,
                            text=True)
    if check and result.returncode != 0:
        raise LabError(f"{' '.join(command)} in namespace {ns} failed: "
                       f"{result.stderr.strip() or f'exit {result.returncode}'}")
    return result


def subnets_in_use() -> set[ipaddress.IPv4Network]:
    """The /24s of 10.200.0.0/16 that this machine's addresses or routes already touch."""
    text = ip("-4", "-o", "addr", "show").stdout + ip("-4", "route", "show", "table", "all").stdout
    used = set()
    for match in re.finditer(r"\b10\.200\.(\d{1,3})\.\d{1,3}", text):
        used.add(ipaddress.ip_network(f"10.200.{match.group(1)}.0/24"))
    return used


class NetnsBackend(Backend):
    name = NAME
    owned_keys = (*Backend.owned_keys, "advertised.listeners")
    supports_partitions = True

    # -- before anything ---------------------------------------------------------------

    def check_usable(self) -> None:
        if os.geteuid() != 0:
            raise LabError("--backend netns needs root (it makes network namespaces, links and firewall "
                           "rules); run it as root, or use --backend local")
        ip_command()

    def validate(self, spec: LabSpec) -> None:
        super().validate(spec)
        if spec.brokers > MAX_BROKERS:
            raise LabError(f"--backend netns has addresses for {MAX_BROKERS} brokers, not {spec.brokers}")

    def preflight(self, spec: LabSpec, lab_dir: Path) -> None:
        """Namespaces of an earlier lab in this directory that nothing records (an interrupted
        run whose state is gone) are removed; ones with processes inside are refused."""
        prefix = prefix_for(lab_dir)
        stale = [ns for ns in namespaces() if ns.startswith(prefix + "-")]
        busy = [ns for ns in stale if self._pids_in(ns)]
        if busy:
            raise LabError(f"namespace {busy[0]} of an earlier lab in {lab_dir} still has processes "
                           f"({', '.join(map(str, self._pids_in(busy[0])))}); stop them, or run "
                           f"ip netns pids {busy[0]} to see them")
        for ns in stale:
            ip("netns", "del", ns, check=False)
        if link_exists(f"{prefix}-up"):
            ip("link", "del", f"{prefix}-up", check=False)

    def reserving(self) -> contextlib.AbstractContextManager[None]:
        return machine_lock(MACHINE_LOCK)

    # -- the plan ----------------------------------------------------------------------

    def plan_network(self, spec: LabSpec, lab_dir: Path) -> dict[str, Any]:
        prefix = prefix_for(lab_dir)
        subnet = free_subnet(SUBNETS, prefix, subnets_in_use(), "netns")
        return {
            "prefix": prefix,
            "subnet": str(subnet),
            "machine_address": str(subnet[MACHINE_HOST]),
            "machine_link": f"{prefix}-up",
            "hub": f"{prefix}-hub",
            "bridge": BRIDGE,
        }

    def place(self, spec: LabSpec, network: dict[str, Any], kind: str,
              index: int) -> tuple[str, int, list[int], str | None]:
        subnet = ipaddress.ip_network(network["subnet"])
        if kind == "zookeeper":
            host = str(subnet[ZOOKEEPER_HOST + index])
            peers = [spec.quorum_port, spec.election_port] if spec.zookeeper == "ensemble" else []
            return host, spec.zk_port, peers, f"{network['prefix']}-zk-{index + 1}"
        return str(subnet[BROKER_HOST + index]), spec.broker_port, [], f"{network['prefix']}-broker-{index}"

    # -- making and removing it --------------------------------------------------------

    def provision(self, state: LabState, progress: Progress) -> None:
        began = time.monotonic()
        net = state.network
        hub, bridge, uplink = net["hub"], net["bridge"], net["machine_link"]
        length = ipaddress.ip_network(net["subnet"]).prefixlen
        ip("netns", "add", hub)
        ip("-n", hub, "link", "set", "lo", "up")
        ip("-n", hub, "link", "add", bridge, "type", "bridge")
        ip("-n", hub, "link", "set", bridge, "up")
        # This machine's leg: a veth from the root namespace into the hub's bridge.
        ip("link", "add", uplink, "type", "veth", "peer", "name", HUB_UPLINK, "netns", hub)
        ip("-n", hub, "link", "set", HUB_UPLINK, "master", bridge, "up")
        ip("addr", "add", f"{net['machine_address']}/{length}", "dev", uplink)
        ip("link", "set", uplink, "up")
        for node in state.nodes:
            assert node.netns is not None
            ip("netns", "add", node.netns)
            ip("-n", node.netns, "link", "set", "lo", "up")
            port = self._bridge_port(node)
            ip("link", "add", "name", NODE_LINK, "netns", node.netns, "type", "veth",
               "peer", "name", port, "netns", hub)
            ip("-n", hub, "link", "set", port, "master", bridge, "up")
            ip("-n", node.netns, "addr", "add", f"{node.host}/{length}", "dev", NODE_LINK)
            ip("-n", node.netns, "link", "set", NODE_LINK, "up")
        progress(f"{len(state.nodes)} network namespaces {net['prefix']}-* on bridge {bridge} in {hub}, "
                 f"subnet {net['subnet']} (this machine {net['machine_address']} on {uplink}), "
                 f"made in {time.monotonic() - began:.1f}s")

    @staticmethod
    def _bridge_port(node: Node) -> str:
        return f"v-{node.name}"             # in the hub; v-broker-NNNNN fits in 15 characters

    def launcher(self, node: Node) -> list[str]:
        assert node.netns is not None, f"{node.name} has no namespace in lab.json"
        return [ip_command(), "netns", "exec", node.netns]

    def broker_properties(self, node: Node) -> dict[str, str]:
        # listeners is BrokerProcess's (the host's address); clients and the other brokers
        # are told the same address, which every namespace and this machine can reach.
        return {"advertised.listeners": f"PLAINTEXT://{node.host}:{node.port}"}

    def check_node(self, state: LabState, node: Node) -> None:
        if node.netns not in namespaces():
            raise LabError(f"{node.name}'s namespace {node.netns} is gone (after a reboot?); start the lab "
                           "again: kafkalike-lab.sh down; kafkalike-lab.sh up --backend netns")

    @staticmethod
    def _pids_in(ns: str) -> list[int]:
        result = ip("netns", "pids", ns, check=False)
        return [int(word) for word in result.stdout.split() if word.isdigit()]

    def release(self, state: LabState, progress: Progress) -> None:
        net = state.network
        prefix = net.get("prefix") or prefix_for(state.dir)
        planned = [n.netns for n in state.nodes if n.netns] + ([net["hub"]] if net.get("hub") else [])
        present = namespaces()
        mine = [ns for ns in planned if ns in present]
        mine += [ns for ns in present if ns.startswith(prefix + "-") and ns not in mine]
        removed_link = False
        uplink = net.get("machine_link") or f"{prefix}-up"
        if link_exists(uplink):
            ip("link", "del", uplink)
            removed_link = True
        for ns in mine:
            # The nodes are stopped by now; anything else still inside (a tool someone ran
            # with ip netns exec) would keep the namespace alive unseen.
            for pid in self._pids_in(ns):
                send_signal(pid, signal.SIGKILL)
                wait_gone(pid, 10)
                progress(f"process {pid} left in namespace {ns} killed")
            ip("netns", "del", ns)
        if mine or removed_link:
            progress(f"network removed: {len(mine)} namespaces"
                     + (f" and link {uplink}" if removed_link else ""))

    # -- partitions --------------------------------------------------------------------

    def partition(self, state: LabState, isolated: list[Node], method: str | None) -> dict[str, Any]:
        method = method or "drop"
        if method not in METHODS:
            raise LabError(f"--method is {' or '.join(METHODS)}, not {method}")
        for node in isolated:
            self.check_node(state, node)
        names = {n.name for n in isolated}
        rest = [n for n in state.nodes if n.name not in names]
        if method == "link":
            for node in isolated:
                ip("-n", state.network["hub"], "link", "set", self._bridge_port(node), "down")
        else:
            self._require_iptables()
            for node in isolated:
                rules = [f"-A {CHAIN} -s {other.host}/32 -j DROP" for other in rest]
                rules += [f"-A {CHAIN} -d {other.host}/32 -j DROP" for other in rest]
                script = "\n".join(["*filter", f":{CHAIN} - [0:0]", f"-I INPUT 1 -j {CHAIN}",
                                    f"-I OUTPUT 1 -j {CHAIN}", *rules, "COMMIT", ""])
                in_namespace(node.netns, "iptables-restore", "--noflush", stdin=script)
        return {"isolated": [n.name for n in isolated], "from": [n.name for n in rest], "method": method}

    def heal(self, state: LabState) -> None:
        """Every bridge port up and the drop chain gone from every node's namespace,
        whatever the state recorded (so heal also mends a half-made partition)."""
        present = namespaces()
        hub = state.network["hub"]
        nodes = [n for n in state.nodes if n.netns in present]
        if hub in present:
            for node in nodes:
                ip("-n", hub, "link", "set", self._bridge_port(node), "up")
        if shutil.which("iptables") is None:
            if (state.network.get("partition") or {}).get("method") == "drop":
                self._require_iptables()
            return
        for node in nodes:
            if in_namespace(node.netns, "iptables", "-w", "-S", CHAIN, check=False).returncode != 0:
                continue            # no chain: never cut off, or already healed
            script = "\n".join(["*filter", f"-D INPUT -j {CHAIN}", f"-D OUTPUT -j {CHAIN}", f"-F {CHAIN}",
                                f"-X {CHAIN}", "COMMIT", ""])
            in_namespace(node.netns, "iptables-restore", "--noflush", stdin=script)

    @staticmethod
    def _require_iptables() -> None:
        if shutil.which("iptables-restore") is None or shutil.which("iptables") is None:
            raise LabError("partition --method drop needs iptables, which is not installed (apt-get install "
                           "iptables, or scripts/setup.sh); --method link cuts the nodes' links instead")

    # -- status ------------------------------------------------------------------------

    def describe(self, state: LabState) -> dict[str, Any] | None:
        net = state.network
        return {"subnet": net.get("subnet"), "machine_address": net.get("machine_address"),
                "machine_link": net.get("machine_link"), "hub": net.get("hub"), "bridge": net.get("bridge"),
                "namespaces": [n.netns for n in state.nodes]}
