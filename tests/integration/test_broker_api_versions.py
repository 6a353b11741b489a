"""bin/kafka-broker-api-versions.sh against a real broker: Kafka 2.8's NodeApiVersions layout."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reference import reference_dir

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-broker-api-versions.sh"), *args], capture_output=True,
                          text=True, timeout=60, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


def client_max_versions() -> dict[int, tuple[str, int]]:
    """Kafka 2.8's Java client: the max version of each request in Kafka's JSON definitions."""
    out = {}
    for path in (reference_dir() / "kafka-2.8-messages").glob("*Request.json"):
        text = path.read_text()
        key = int(re.search(r'"apiKey":\s*(\d+)', text).group(1))
        name = re.search(r'"name":\s*"(\w+)Request"', text).group(1)
        versions = re.search(r'"validVersions":\s*"([\d-]+)"', text).group(1)
        out[key] = (name, int(versions.split("-")[-1]))
    return out


def test_each_api_with_its_range_and_the_usable_version(broker):
    done = run("--bootstrap-server", broker.bootstrap)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    host, port = broker.bootstrap.split(":")
    assert lines[0] == f"{host}:{port} (id: 0 rack: null) -> ("
    assert lines[-1] == ")"
    assert lines[1] == "\tProduce(0): 0 to 9 [usable: 9],"
    assert "\tMetadata(3): 0 to 11 [usable: 11]," in lines
    assert "\tAlterPartitionReassignments(45): 0 [usable: 0]," in lines
    assert not lines[-2].endswith(",")
    client = client_max_versions()
    keys = []
    for line in lines[1:-1]:
        match = re.fullmatch(r"\t(\w+)\((\d+)\): (\d+)(?: to (\d+))? \[usable: (\d+)\],?", line)
        assert match, line
        name, key, low, high, usable = match.groups()
        key = int(key)
        keys.append(key)
        assert name == client[key][0]
        assert int(usable) == min(client[key][1], int(high or low))
    assert keys == sorted(keys) and 18 in keys


def test_missing_bootstrap_server(broker):
    done = run("--command-config", "/dev/null")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith('Missing required argument "[bootstrap-server]"\nOption')


def test_help(broker):
    done = run("--help")
    assert done.returncode == 1
    assert done.stderr.startswith("This tool helps to retrieve broker version information.\nOption")
