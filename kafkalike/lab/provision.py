"""One node of a lab on a host of its own: the files it needs and the systemd unit that runs it.

The local and netns backends start processes themselves; a VM (vagrant/provision.sh) or
any Debian host an operator prepares by hand gets its node from this module instead:

    python3 -m kafkalike.lab.provision zookeeper --id 2 --servers 10.0.0.1,10.0.0.2,10.0.0.3
    python3 -m kafkalike.lab.provision broker --id 1 --address 10.0.0.21 --zookeeper 10.0.0.1:2181,...
    python3 -m kafkalike.lab.provision spark-master --address 10.0.0.31
    python3 -m kafkalike.lab.provision spark-worker --address 10.0.0.31 --master spark://10.0.0.31:7077

Configs are rendered by the same code the other backends use (zk/zoo.cfg.template through
kafkalike.lab.zookeeper, the lab's broker keys from LabSpec), so a broker on a VM runs
with the settings a broker of `kafkalike-lab.sh up` runs with. Units restart their
daemon on failure and start on boot once enabled. `--root DIR` writes the tree under DIR
instead of /, which is how the tests run a provisioned node without systemd.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from kafkalike.lab.local import METRICS_PORT, LabSpec
from kafkalike.lab.state import LabError
from kafkalike.lab.spark import MASTER_CLASS, WORKER_CLASS, java_home, spark_env, spark_home
from kafkalike.lab.zookeeper import (
    LOG_OPTIONS, MAIN_CLASS, Peer, java_executable, render_config, zookeeper_classpath,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
ETC = Path("etc/kafkalike")
UNITS = Path("etc/systemd/system")
STATE = Path("var/lib/kafkalike")
LOGS = Path("var/log/kafkalike")
QUORUM_PORT, ELECTION_PORT = 2888, 3888


@dataclass
class Unit:
    """A systemd service: what runs, with which environment, and when it restarts."""

    name: str
    description: str
    command: list[str]
    environment: dict[str, str] = field(default_factory=dict)
    after: tuple[str, ...] = ("network-online.target",)
    stop_timeout_s: int = 60

    def text(self) -> str:
        env = "".join(f'Environment="{key}={value}"\n' for key, value in sorted(self.environment.items()))
        after = " ".join(self.after)
        return (
            f"# Written by python3 -m kafkalike.lab.provision; run it again rather than editing.\n"
            f"[Unit]\nDescription={self.description}\nWants=network-online.target\nAfter={after}\n\n"
            f"[Service]\nType=simple\n{env}ExecStart={_command_line(self.command)}\n"
            f"Restart=on-failure\nRestartSec=5\nTimeoutStopSec={self.stop_timeout_s}\nLimitNOFILE=100000\n\n"
            f"[Install]\nWantedBy=multi-user.target\n"
        )


def _command_line(command: Sequence[str]) -> str:
    """systemd splits ExecStart on spaces and honours double quotes."""
    return " ".join(f'"{arg}"' if (" " in arg or not arg) else arg for arg in command)


def _write(root: Path, relative: Path, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def zookeeper_node(root: Path, myid: int, servers: Sequence[str], client_port: int = 2181,
                   heap: str = "512m") -> Unit:
    """zoo.cfg (and myid in an ensemble) for server `myid` of `servers` (addresses, 1-based)."""
    if not 1 <= myid <= len(servers):
        raise ValueError(f"--id {myid} is not one of the {len(servers)} servers (1..{len(servers)})")
    data_dir = root / STATE / "zookeeper"
    peers = [Peer(i, host, QUORUM_PORT, ELECTION_PORT) for i, host in enumerate(servers, start=1)]
    config = render_config(data_dir=data_dir, client_port=client_port, client_address=servers[myid - 1],
                           peers=peers if len(servers) > 1 else ())
    config_path = _write(root, ETC / "zoo.cfg", config)
    data_dir.mkdir(parents=True, exist_ok=True)
    if len(servers) > 1:
        _write(root, STATE / "zookeeper" / "myid", f"{myid}\n")
    command = [java_executable(), f"-Xmx{heap}", "-XX:+UseSerialGC", *LOG_OPTIONS,
               "-cp", zookeeper_classpath(), MAIN_CLASS, str(config_path)]
    return Unit("kafkalike-zookeeper", f"ZooKeeper server {myid} of the kafkalike lab", command)


def broker_node(root: Path, broker_id: int, address: str, zookeeper: str, brokers: int,
                port: int = 9092, overrides: dict[str, str] | None = None,
                metrics_port: int = METRICS_PORT) -> Unit:
    """server.properties for broker `broker_id` of a `brokers`-broker cluster listening on
    address:port, with its Prometheus endpoint on address:metrics_port (the port the docker
    lab's brokers use; -1 serves none)."""
    spec = LabSpec(brokers=brokers, overrides=dict(overrides or {}))
    spec.validate()
    props = {
        "broker.id": str(broker_id),
        "listeners": f"PLAINTEXT://{address}:{port}",
        "log.dirs": str(root / STATE / "kafka-logs"),
        "zookeeper.connect": zookeeper,
        "kafkalike.metrics.host": address,
        "kafkalike.metrics.port": str(metrics_port),
        **spec.broker_properties(),
    }
    header = (f"# Broker {broker_id} of {brokers}: written by python3 -m kafkalike.lab.provision broker.\n"
              f"# Kafka 2.8's keys; the lab's settings as `kafkalike-lab.sh up` uses them.\n")
    config_path = _write(root, ETC / "server.properties", header + "".join(f"{k}={v}\n" for k, v in props.items()))
    (root / STATE / "kafka-logs").mkdir(parents=True, exist_ok=True)
    command = [str(REPO_ROOT / "bin" / "kafka-server-start.sh"), str(config_path)]
    env = {"LOG_DIR": str(root / LOGS), "PYTHON": sys.executable}
    return Unit("kafkalike-broker", f"kafkalike broker {broker_id}", command, env,
                after=("network-online.target", "kafkalike-zookeeper.service"))


def _spark_environment(address: str) -> dict[str, str]:
    if java_home() is None:
        raise ValueError("no java on PATH and no $JAVA_HOME: Spark needs Java 17 (zk/install.sh installs it)")
    return {**spark_env(), "SPARK_LOCAL_IP": address}


def spark_master(root: Path, address: str, port: int = 7077, webui_port: int = 8080) -> Unit:
    command = [str(spark_home() / "bin" / "spark-class"), MASTER_CLASS, "--host", address,
               "--port", str(port), "--webui-port", str(webui_port)]
    env = {**_spark_environment(address), "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    return Unit("kafkalike-spark-master", "Spark standalone master of the kafkalike lab", command, env)


def spark_worker(root: Path, address: str, master: str, cores: int = 2, memory: str = "2g",
                 port: int = 7078, webui_port: int = 8081) -> Unit:
    work = root / STATE / "spark-worker"
    (work / "local").mkdir(parents=True, exist_ok=True)
    command = [str(spark_home() / "bin" / "spark-class"), WORKER_CLASS, master, "--cores", str(cores),
               "--memory", memory, "--host", address, "--port", str(port), "--webui-port", str(webui_port),
               "--work-dir", str(work / "work")]
    env = {**_spark_environment(address), "SPARK_LOCAL_DIRS": str(work / "local")}
    return Unit("kafkalike-spark-worker", "Spark standalone worker of the kafkalike lab", command, env,
                after=("network-online.target", "kafkalike-spark-master.service"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m kafkalike.lab.provision",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--root", default="/", help="write the files under this directory (default /)")
    roles = parser.add_subparsers(dest="role", required=True, metavar="ROLE")
    zk = roles.add_parser("zookeeper", help="a ZooKeeper server (standalone with one --servers entry)")
    zk.add_argument("--id", type=int, required=True, help="this server's myid, 1-based")
    zk.add_argument("--servers", required=True, help="every server's address, comma separated, in myid order")
    zk.add_argument("--client-port", type=int, default=2181)
    broker = roles.add_parser("broker", help="a broker")
    broker.add_argument("--id", type=int, required=True, help="broker.id")
    broker.add_argument("--address", required=True, help="the address it listens on and advertises")
    broker.add_argument("--port", type=int, default=9092)
    broker.add_argument("--zookeeper", required=True, help="zookeeper.connect")
    broker.add_argument("--brokers", type=int, default=3, help="the cluster's size (replication factor, min ISR)")
    broker.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    broker.add_argument("--metrics-port", type=int, default=METRICS_PORT,
                        help=f"kafkalike.metrics.port, the Prometheus endpoint (default {METRICS_PORT}; -1 for none)")
    master = roles.add_parser("spark-master", help="a Spark standalone master")
    master.add_argument("--address", required=True)
    master.add_argument("--port", type=int, default=7077)
    worker = roles.add_parser("spark-worker", help="a Spark standalone worker")
    worker.add_argument("--address", required=True)
    worker.add_argument("--master", required=True, help="spark://HOST:PORT")
    worker.add_argument("--cores", type=int, default=2)
    worker.add_argument("--memory", default="2g")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root = Path(args.root).absolute()
    try:
        if args.role == "zookeeper":
            unit = zookeeper_node(root, args.id, [s for s in args.servers.split(",") if s], args.client_port)
        elif args.role == "broker":
            bad = [item for item in args.override if "=" not in item]
            if bad:
                raise ValueError(f"--override {bad[0]} is not KEY=VALUE")
            overrides = dict(item.split("=", 1) for item in args.override)
            unit = broker_node(root, args.id, args.address, args.zookeeper, args.brokers, args.port, overrides,
                               args.metrics_port)
        elif args.role == "spark-master":
            unit = spark_master(root, args.address, args.port)
        else:
            unit = spark_worker(root, args.address, args.master, args.cores, args.memory)
    except (LabError, OSError, RuntimeError, ValueError) as exc:   # one line, as the lab's other commands
        print(f"provision {args.role}: {exc}", file=sys.stderr)
        return 1
    path = _write(root, UNITS / f"{unit.name}.service", unit.text())
    print(f"{unit.name}: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
