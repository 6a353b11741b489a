"""`kafkalike-lab.sh scenario`: faults under Kafka's verifiable producer and consumer, judged.

One lab (ZooKeeper and 3 broker daemons, in a scratch directory on free ports) serves
the module. Each scenario runs as a user would run it, through bin/kafkalike-lab.sh,
and the test reads only its printed table: every record the producer saw acknowledged
(acks=all on an RF=3, min.insync.replicas=2 topic) must have been read back by the
consumer, so the verdict is PASS with 0 lost. A scenario heals the lab itself; the
module's finalizer runs `down` and kill -9s anything left.
"""
from __future__ import annotations

import re

import pytest

from tests.lab_cli import LabUnderTest

pytestmark = pytest.mark.fault

COLUMNS = ["SCENARIO", "ACKNOWLEDGED", "LOST", "DUPLICATED", "REORDERED", "SEND ERRORS", "DURATION", "VERDICT"]


@pytest.fixture(scope="module")
def lab():
    lab = LabUnderTest.create()
    try:
        up = lab.run("up", "--base-port", str(lab.base_port))
        assert up.returncode == 0, up.stdout + up.stderr
        yield lab
    finally:
        lab.teardown()


def summary_row(output: str, name: str) -> dict[str, str]:
    """The scenario's row of the table printed last."""
    header = next(line for line in output.splitlines() if line.startswith("SCENARIO "))
    assert re.split(r"\s{2,}", header.strip()) == COLUMNS, header
    row = next(line for line in output.splitlines() if line.startswith(name + " "))
    return dict(zip(COLUMNS, re.split(r"\s{2,}", row.strip())))


@pytest.mark.parametrize("scenario", ["leader-kill", "controller-kill"])
def test_scenario_passes_with_nothing_lost(lab: LabUnderTest, scenario: str):
    result = lab.run("scenario", scenario, timeout=300)
    output = result.stdout + result.stderr
    row = summary_row(result.stdout, scenario)
    assert row["VERDICT"] == "PASS", output
    assert row["LOST"] == "0", output
    assert int(row["ACKNOWLEDGED"]) > 0, output
    assert result.returncode == 0, output
    # The lab is whole again afterwards: every node alive, nothing under-replicated.
    status = lab.status()
    assert all(node["alive"] for node in status["nodes"]), status
    print(f"\n{scenario}: {row['DURATION']}, {row['ACKNOWLEDGED']} acknowledged, "
          f"{row['DUPLICATED']} duplicated, {row['REORDERED']} reordered, {row['SEND ERRORS']} send errors")
