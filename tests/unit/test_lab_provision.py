"""What the Vagrant VMs are given, without a VM: the systemd units kafkalike.lab.provision
renders for every role the Vagrantfile uses, and the script that installs them.

The issue asks for ZooKeeper and brokers "as systemd units that start on boot and
restart on failure": Restart=on-failure and WantedBy=multi-user.target (which
`systemctl enable` turns into a start on boot) are checked in every unit, with an
ExecStart that runs the role's daemon on the files provisioning wrote. Java, ZooKeeper's
jars and Spark are stood in for, so this runs anywhere; the daemons themselves run from
these units' ExecStart in tests/integration/test_lab_provision.py.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from kafkalike.lab import provision
from kafkalike.lab.spark import MASTER_CLASS, WORKER_CLASS
from kafkalike.lab.zookeeper import MAIN_CLASS as ZOOKEEPER_MAIN

REPO = Path(__file__).resolve().parents[2]
VAGRANT = REPO / "vagrant"
ZK = "10.0.0.11,10.0.0.12,10.0.0.13"
ROLES = {
    "zookeeper": ["--id", "2", "--servers", ZK],
    "broker": ["--id", "1", "--address", "10.0.0.21", "--zookeeper", "10.0.0.11:2181,10.0.0.12:2181",
               "--brokers", "3"],
    "spark-master": ["--address", "10.0.0.31"],
    "spark-worker": ["--address", "10.0.0.31", "--master", "spark://10.0.0.31:7077", "--cores", "2"],
}


@pytest.fixture
def fake_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand-ins for java, ZooKeeper's jars and the pyspark distribution."""
    spark = tmp_path / "pyspark"
    (spark / "bin").mkdir(parents=True)
    monkeypatch.setattr(provision, "java_executable", lambda: "/usr/lib/jvm/java-17/bin/java")
    monkeypatch.setattr(provision, "zookeeper_classpath", lambda: "/usr/share/java/zookeeper.jar")
    monkeypatch.setattr(provision, "java_home", lambda: "/usr/lib/jvm/java-17")
    monkeypatch.setattr(provision, "spark_home", lambda: spark)
    monkeypatch.setattr(provision, "spark_env", lambda: {"JAVA_HOME": "/usr/lib/jvm/java-17",
                                                         "SPARK_HOME": str(spark)})
    return spark


def render(root: Path, role: str) -> dict[str, list[tuple[str, str]]]:
    """Provision `role` under root; its unit file as sections of (key, value) lines."""
    assert provision.main(["--root", str(root), role, *ROLES[role]]) == 0
    # The name vagrant/provision.sh enables: kafkalike-${role}.service.
    unit = root / "etc/systemd/system" / f"kafkalike-{role}.service"
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in unit.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
            continue
        key, sep, value = line.partition("=")
        assert sep and current is not None, f"{unit}: {line!r}"
        current.append((key, value))
    return sections


def single(section: list[tuple[str, str]], key: str) -> str:
    values = [value for k, value in section if k == key]
    assert len(values) == 1, (key, section)
    return values[0]


@pytest.mark.parametrize("role", list(ROLES))
def test_every_unit_restarts_on_failure_and_starts_on_boot(tmp_path: Path, fake_runtime: Path, role: str):
    unit = render(tmp_path, role)
    assert set(unit) == {"Unit", "Service", "Install"}
    service = unit["Service"]
    assert single(service, "Restart") == "on-failure"
    assert int(single(service, "RestartSec")) > 0
    assert single(unit["Install"], "WantedBy") == "multi-user.target"
    assert "network-online.target" in single(unit["Unit"], "After").split()
    assert single(unit["Unit"], "Wants") == "network-online.target"
    command = shlex.split(single(service, "ExecStart"))
    assert Path(command[0]).is_absolute(), command       # systemd runs no PATH lookup for it


def test_zookeeper_unit_runs_the_server_on_the_config_it_wrote(tmp_path: Path, fake_runtime: Path):
    command = shlex.split(single(render(tmp_path, "zookeeper")["Service"], "ExecStart"))
    config = tmp_path / "etc/kafkalike/zoo.cfg"
    assert command[0] == "/usr/lib/jvm/java-17/bin/java"
    assert command[-2:] == [ZOOKEEPER_MAIN, str(config)]
    assert command[command.index("-cp") + 1] == "/usr/share/java/zookeeper.jar"
    assert "server.2=10.0.0.12:2888:3888" in config.read_text()
    assert (tmp_path / "var/lib/kafkalike/zookeeper/myid").read_text() == "2\n"


def test_broker_unit_runs_the_broker_on_its_config_after_the_network(tmp_path: Path, fake_runtime: Path):
    unit = render(tmp_path, "broker")
    command = shlex.split(single(unit["Service"], "ExecStart"))
    config = tmp_path / "etc/kafkalike/server.properties"
    assert command == [str(REPO / "bin/kafka-server-start.sh"), str(config)]
    assert Path(command[0]).exists()
    env = dict(shlex.split(value)[0].split("=", 1) for key, value in unit["Service"] if key == "Environment")
    assert env["LOG_DIR"] == str(tmp_path / "var/log/kafkalike")
    assert single(unit["Unit"], "After").split() == ["network-online.target", "kafkalike-zookeeper.service"]
    properties = config.read_text()
    assert "listeners=PLAINTEXT://10.0.0.21:9092" in properties and "broker.id=1" in properties
    assert "min.insync.replicas=2" in properties and "unclean.leader.election.enable=false" in properties


@pytest.mark.parametrize("role,main_class", [("spark-master", MASTER_CLASS), ("spark-worker", WORKER_CLASS)])
def test_spark_units_run_spark_class(tmp_path: Path, fake_runtime: Path, role: str, main_class: str):
    command = shlex.split(single(render(tmp_path, role)["Service"], "ExecStart"))
    assert command[:2] == [str(fake_runtime / "bin/spark-class"), main_class]


def test_the_vagrantfile_provisions_only_roles_provision_knows():
    text = (VAGRANT / "Vagrantfile").read_text()
    used = set(re.findall(r'provision\(node\.vm, "([a-z-]+)"', text))
    assert used == set(ROLES), used
    assert "docs/vagrant.md" in text                     # its header points at the walk-through


def test_provision_sh_parses_and_enables_the_unit_provision_writes():
    script = VAGRANT / "provision.sh"
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    # The Vagrantfile runs it by path (inline "REPO/vagrant/provision.sh ..."), so it must be executable.
    assert os.access(script, os.X_OK), f"{script} is not executable"
    text = script.read_text()
    assert 'python3 -m kafkalike.lab.provision "$role" "$@"' in text
    assert 'systemctl enable --now "kafkalike-${role}.service"' in text
