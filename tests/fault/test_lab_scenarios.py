"""`kafkalike-lab.sh scenario`: faults under Kafka's verifiable producer and consumer, judged.

One lab (a 3-node ZooKeeper ensemble and 3 broker daemons, in a scratch directory on
free ports) serves every scenario the local backend runs, one netns lab (each node in a network namespace of
its own, made as root) and one docker lab (a container per node, tests/docker_daemon.py
starts dockerd when none runs) the partition scenario. Each scenario runs as a user would run
it, through bin/kafkalike-lab.sh, and the test reads only its printed table: every
record the producer saw acknowledged (acks=all on an RF=3, min.insync.replicas=2 topic)
must have been read back by the consumer, none stored twice or out of order, so the
verdict is PASS with 0 lost, duplicated and reordered. The unclean leader election is
the exception: it loses acknowledged records by construction, and its verdict must say
so (EXPECTED LOSS) rather than FAIL; it must still duplicate and reorder nothing.
Bounces are 2 here (Kafka's 5 is the command's default) to keep the tier short. A scenario heals the lab itself; each lab's finalizer runs `down` and kill -9s anything
left (and deletes the netns lab's namespaces and link).
"""
from __future__ import annotations

import os
import re
import shutil

import pytest

from kafkalike.lab.netns import prefix_for
from tests.docker_daemon import remove_lab_leftovers, running_dockerd
from tests.lab_cli import LabUnderTest

pytestmark = pytest.mark.fault

COLUMNS = ["SCENARIO", "ACKNOWLEDGED", "LOST", "DUPLICATED", "REORDERED", "SEND ERRORS", "DURATION", "VERDICT"]


def _lab_up(backend: str, *args: str):
    lab = LabUnderTest.create(backend)
    try:
        up = lab.up(*args)
        assert up.returncode == 0, up.stdout + up.stderr
        yield lab
    finally:
        lab.teardown()


@pytest.fixture(scope="module")
def lab():
    yield from _lab_up("local", "--zookeeper", "ensemble")


@pytest.fixture(scope="module")
def netns_lab():
    # The real parts must be there: fail (never skip) saying what is missing.
    if os.geteuid() != 0:
        pytest.fail("the netns scenarios need root (network namespaces); run them as root")
    missing = [tool for tool in ("ip", "iptables-restore") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the netns scenarios need {', '.join(missing)}: scripts/setup.sh installs iproute2 and iptables")
    yield from _lab_up("netns")


@pytest.fixture(scope="module")
def docker_lab():
    # A real dockerd: the running one, or one started (and stopped) here; fails saying why.
    with running_dockerd():
        lab = LabUnderTest.create("docker")
        try:
            up = lab.up(timeout=900)          # a first run on a machine builds the images
            assert up.returncode == 0, up.stdout + up.stderr
            yield lab
        finally:
            lab.teardown()
            remove_lab_leftovers(prefix_for(lab.dir))


def summary_row(output: str, name: str) -> dict[str, str]:
    """The scenario's row of the table printed last."""
    header = next(line for line in output.splitlines() if line.startswith("SCENARIO "))
    assert re.split(r"\s{2,}", header.strip()) == COLUMNS, header
    row = next(line for line in output.splitlines() if line.startswith(name + " "))
    return dict(zip(COLUMNS, re.split(r"\s{2,}", row.strip())))


THROUGHPUT = 300          # records per second the scenarios' producer aims at (the command's default)

LOCAL_SCENARIOS = ["leader-clean-shutdown", "leader-kill", "leader-bounce", "controller-clean-shutdown",
                   "controller-kill", "controller-bounce", "zk-leader-kill", "zk-session-expiry", "rolling-restart"]


@pytest.mark.parametrize("scenario", LOCAL_SCENARIOS)
def test_scenario_passes_with_nothing_lost(lab: LabUnderTest, scenario: str):
    output = check_scenario(lab, scenario)
    if scenario.endswith("-bounce"):
        assert "bounce 2/2" in output, output
    if scenario == "zk-leader-kill":
        assert re.search(r"zk-\d leads the ZooKeeper ensemble .*zk-\d leader", output), output
        assert re.search(r"zk-\d back as follower", output), output
    if scenario == "zk-session-expiry":
        assert re.search(r"/brokers/ids/\d gone: ZooKeeper expired the session", output), output
        assert "registered again" in output


def test_every_local_scenario_is_run_here():
    """`scenario all` on a local ensemble lab is exactly this file's local list plus the unclean one."""
    from kafkalike.lab.scenarios import SCENARIOS, runs_on
    assert [n for n, s in SCENARIOS.items() if runs_on(s, "local", "ensemble")] == \
        [n for n in SCENARIOS if n in LOCAL_SCENARIOS or n == "unclean-leader-election"]


def test_unclean_leader_election_shows_its_cost(lab: LabUnderTest):
    """An out-of-sync replica elected once every ISR member died: records acknowledged
    without it are gone, and the verdict says so (EXPECTED LOSS) instead of failing.

    The loss is certain by construction: the follower is killed -9 and the scenario waits
    until the other two have acknowledged 2 x throughput records without it, which its
    log cannot hold; it alone is then elected on every partition, and the others truncate
    to its log when they return. (A few of those acknowledgements may be of records it
    had fetched just before it died, which the leader could not count until the ISR
    shrank: hence LOST >= throughput here, not 2 x.) What was acknowledged before the
    kill is on every replica, so not everything is lost. Nothing may be duplicated or
    reordered: truncating to a prefix loses records but copies and reorders none."""
    result = lab.run("scenario", "unclean-leader-election", "--throughput", str(THROUGHPUT), timeout=300)
    output = result.stdout + result.stderr
    row = summary_row(result.stdout, "unclean-leader-election")
    assert row["VERDICT"] == "EXPECTED LOSS", output
    acknowledged, lost = int(row["ACKNOWLEDGED"]), int(row["LOST"])
    assert THROUGHPUT <= lost < acknowledged, output
    assert row["DUPLICATED"] == "0" and row["REORDERED"] == "0", output
    assert f"{lost} acknowledged records lost: the price of unclean.leader.election.enable=true" in output
    assert "unclean.leader.election.enable=true" in output, output
    assert re.search(r"broker-\d, out of sync, elected leader of every partition", output), output
    assert result.returncode == 0, output
    assert all(node["alive"] for node in lab.status()["nodes"])


def test_partition_leader_on_netns_passes_with_nothing_lost(netns_lab: LabUnderTest):
    """The leader of partition 0 cut off from ZooKeeper and the other brokers (iptables
    DROP in its namespace) while the producer and consumer on this machine keep going."""
    output = check_scenario(netns_lab, "partition-leader")
    assert re.search(r"partition: broker-\d cut off from zk-1, broker-\d, broker-\d \(iptables DROP\)", output)
    assert re.search(r"led by broker-\d \(leader epoch [1-9]", output), output
    assert "registered again" in output and "ISR full again on every partition" in output
    assert netns_lab.status()["partition"] is None


def test_partition_leader_on_docker_passes_with_nothing_lost(docker_lab: LabUnderTest):
    """The same scenario on the docker backend: the leader's container cut off by iptables
    DROP in its network namespace."""
    output = check_scenario(docker_lab, "partition-leader")
    assert re.search(r"partition: broker-\d cut off from zk-1, broker-\d, broker-\d \(iptables DROP\)", output)
    assert re.search(r"led by broker-\d \(leader epoch [1-9]", output), output
    assert "registered again" in output and "ISR full again on every partition" in output
    assert docker_lab.status()["partition"] is None


def check_scenario(lab: LabUnderTest, scenario: str) -> str:
    result = lab.run("scenario", scenario, "--bounces", "2", timeout=300)
    output = result.stdout + result.stderr
    row = summary_row(result.stdout, scenario)
    assert row["VERDICT"] == "PASS", output
    assert row["LOST"] == "0", output
    # The producer sends without retries: any copy or reordering is the brokers' doing.
    assert row["DUPLICATED"] == "0" and row["REORDERED"] == "0", output
    assert int(row["ACKNOWLEDGED"]) > 0, output
    assert result.returncode == 0, output
    # The lab is whole again afterwards: every node alive, nothing under-replicated.
    status = lab.status()
    assert all(node["alive"] for node in status["nodes"]), status
    print(f"\n{scenario}: {row['DURATION']}, {row['ACKNOWLEDGED']} acknowledged, "
          f"{row['DUPLICATED']} duplicated, {row['REORDERED']} reordered, {row['SEND ERRORS']} send errors")
    return output
