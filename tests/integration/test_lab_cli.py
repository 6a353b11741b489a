"""bin/kafkalike-lab.sh as a user drives it: real ZooKeeper and broker daemons, judged from outside.

The lab runs in a scratch directory under /dev/shm on a block of free ports. Its brokers
are daemons that outlive each command, so every check here goes through another command
(status, kill, restart, down) or through bin/kafka-topics.sh, exactly what a user in
another shell would see. The walk-through also addresses nodes by what they are rather
than by name (`kill controller`, `kill leader:TOPIC:PARTITION`) and stops and restarts
ZooKeeper (`kill zk-1`, `restart zk-1`). A finalizer runs `down` and kill -9s anything left.
"""
from __future__ import annotations

import re
import time

import pytest

from kafkalike.lab.processes import is_alive, processes_mentioning
from tests.waiting import wait_until
from tests.lab_cli import LabUnderTest, check_metrics_urls, described, isr_sizes, one_line_error, run_lab, topics

pytestmark = pytest.mark.integration

TOPIC = "lab-cli"


@pytest.fixture
def lab():
    lab = LabUnderTest.create()
    try:
        yield lab
    finally:
        lab.teardown()


def test_up_status_kill_restart_down(lab: LabUnderTest):
    began = time.monotonic()
    up = lab.run("up", "--base-port", str(lab.base_port))
    assert up.returncode == 0, up.stdout + up.stderr
    up_seconds = time.monotonic() - began
    assert "lab up in" in up.stdout and "controller: broker-" in up.stdout

    # The daemons outlived `up`: another command sees 3 brokers and one controller.
    status = lab.status()
    roles = {n["name"]: n["role"] for n in status["nodes"]}
    assert [n["alive"] for n in status["nodes"]] == [True] * 4
    assert roles["zk-1"] == "standalone"
    assert sorted(roles[f"broker-{i}"] for i in range(3)) == ["broker", "broker", "controller"]
    assert status["controller"] == next(name for name, role in roles.items() if role == "controller")
    plain = lab.run("status")
    assert plain.returncode == 0 and re.search(r"^broker-0 +127\.0\.0\.1:\d+ +\d+ +alive", plain.stdout, re.M)
    # Each broker serves Prometheus on a port of its own, listed by status.
    urls = [n["metrics_url"] for n in status["nodes"] if n["kind"] == "broker"]
    assert len(set(urls)) == 3 and all(re.fullmatch(r"http://127\.0\.0\.1:\d+/metrics", u) for u in urls), urls
    assert f"metrics (Prometheus): broker-0 {urls[0]}, broker-1 {urls[1]}, broker-2 {urls[2]}" in plain.stdout
    assert check_metrics_urls(status) == urls

    # A full ISR on a new RF=3 topic.
    bootstrap = status["bootstrap"]
    topics("--bootstrap-server", bootstrap, "--create", "--topic", TOPIC, "--partitions", "3",
           "--replication-factor", "3")
    wait_until(lambda: isr_sizes(bootstrap, TOPIC) == [3, 3, 3], 30, "a full ISR")
    full_isr_seconds = time.monotonic() - began

    # kill -9 one broker: dead in status, then (once ZooKeeper expires its session,
    # 6 s in the lab) its partitions are under-replicated.
    victim = "broker-2"
    killed = lab.run("kill", victim, "-9")
    assert killed.returncode == 0, killed.stderr
    assert "killed with SIGKILL" in killed.stdout
    status = lab.status()
    assert not next(n for n in status["nodes"] if n["name"] == victim)["alive"]
    # The controller shrinks each partition's ISR in turn: wait for all three of the topic's.
    degraded = wait_until(lambda: (s := lab.status())["under_replicated"] >= 3 and s, 30,
                          "the topic's 3 partitions under-replicated after the kill")
    assert degraded["under_replicated"] >= 3
    assert re.search(r"under-replicated: [1-9]", lab.run("status").stdout)

    restarted = lab.run("restart", victim)
    assert restarted.returncode == 0, restarted.stderr
    assert f"{victim} serving again" in restarted.stdout
    wait_until(lambda: isr_sizes(bootstrap, TOPIC) == [3, 3, 3], 30, "the ISR to be full again")
    wait_until(lambda: lab.status()["under_replicated"] == 0, 30, "no under-replicated partition")

    # `kill controller`: the lab resolves and stops the active controller (SIGTERM, a
    # controlled shutdown, which closes its session at once); another broker takes over.
    controller = lab.status()["controller"]
    killed = lab.run("kill", "controller")
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout.startswith(f"{controller} (pid ") and "stopped with SIGTERM" in killed.stdout, killed.stdout
    status = wait_until(lambda: (s := lab.status())["controller"] not in (None, controller) and s, 30,
                        f"a controller other than {controller}")
    assert not next(n for n in status["nodes"] if n["name"] == controller)["alive"]
    assert lab.run("restart", controller).returncode == 0

    # `kill leader:TOPIC:PARTITION`: the broker that leads it now, as kafka-topics.sh names it.
    wait_until(lambda: isr_sizes(bootstrap, TOPIC) == [3, 3, 3], 30, "the ISR to be full again")
    leader = f"broker-{described(bootstrap, TOPIC)[0][0]}"
    killed = lab.run("kill", f"leader:{TOPIC}:0")
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout.startswith(f"{leader} (pid "), (leader, killed.stdout)
    assert not next(n for n in lab.status()["nodes"] if n["name"] == leader)["alive"]
    assert lab.run("restart", leader).returncode == 0

    # `kill zk-1` and `restart zk-1`: ZooKeeper down (status still answers, from Metadata),
    # then back as standalone, with every broker registered again.
    killed = lab.run("kill", "zk-1")
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout.startswith("zk-1 (pid ") and "stopped with SIGTERM" in killed.stdout
    status = lab.status()
    zk = next(n for n in status["nodes"] if n["name"] == "zk-1")
    assert not zk["alive"] and zk["role"] == "-" and not status["zookeeper"]["reachable"]
    restarted = lab.run("restart", "zk-1")
    assert restarted.returncode == 0, restarted.stderr
    assert "zk-1 serving again" in restarted.stdout

    def registered() -> dict | None:
        s = lab.status()
        roles = sorted(n["role"] for n in s["nodes"])
        return s if roles == ["broker", "broker", "controller", "standalone"] else None
    status = wait_until(registered, 30, "ZooKeeper standalone again with every broker registered")
    assert all(n["alive"] for n in status["nodes"]) and status["zookeeper"]["reachable"]

    logs = lab.run("logs", victim, "-n", "5")
    assert logs.returncode == 0 and len(logs.stdout.splitlines()) == 5

    pids = set(lab.seen_pids)
    assert len(pids) >= 8          # 1 ZooKeeper, 3 brokers, and the 4 restarted nodes
    down = lab.run("down")
    assert down.returncode == 0, down.stderr
    assert [pid for pid in pids if is_alive(pid)] == []
    assert list(processes_mentioning(str(lab.dir) + "/")) == []
    assert not lab.dir.exists()
    again = lab.run("down")
    one_line_error(again, "there is no lab")
    print(f"\nup: {up_seconds:.1f}s; up + topic with a full ISR: {full_isr_seconds:.1f}s")


def test_bad_input_is_one_line_and_starts_nothing(lab: LabUnderTest):
    one_line_error(lab.run("frobnicate"), "invalid choice")
    one_line_error(lab.run("status"), "there is no lab")
    one_line_error(lab.run("kill", "broker-0"), "there is no lab")
    one_line_error(lab.run("up", "--brokers", "0"), "at least 1")
    one_line_error(lab.run("up", "--override", "nokey"), "KEY=VALUE")
    one_line_error(lab.run("up", "--override", "listeners=PLAINTEXT://:1"), "set by the lab")
    assert not lab.dir.exists()

    up = lab.run("up", "--base-port", str(lab.base_port), "--brokers", "1")
    assert up.returncode == 0, up.stdout + up.stderr
    pids = set(lab.seen_pids)

    # A second up on a running lab, nodes that do not exist, a malformed target.
    one_line_error(lab.run("up", "--base-port", str(lab.base_port), "--brokers", "1"), "already running")
    one_line_error(lab.run("kill", "broker-7"), "no node broker-7")
    one_line_error(lab.run("kill", "zk-2", "-9"), "no node zk-2")
    one_line_error(lab.run("restart", "nobody"), "no node nobody")
    one_line_error(lab.run("logs", "broker-3"), "no node broker-3")
    one_line_error(lab.run("kill", "leader:no-such-topic:0"), "no partition no-such-topic-0")
    one_line_error(lab.run("scenario", "leader-kill"), "at least 3 brokers")
    one_line_error(lab.run("scenario", "no-such-scenario"), "no scenario no-such-scenario")
    assert set(lab.seen_pids) == pids and all(is_alive(pid) for pid in pids)

    # Ports in use (this lab's): refused before anything starts, nothing left behind.
    other = lab.scratch / "other"
    busy = run_lab(other, "up", "--base-port", str(lab.base_port), "--brokers", "1")
    one_line_error(busy, "already in use")
    assert not other.exists()
    assert list(processes_mentioning(str(other) + "/")) == []

    # A killed node cannot be killed again.
    assert lab.run("kill", "broker-0").returncode == 0
    one_line_error(lab.run("kill", "broker-0", "-9"), "broker-0 is not running")


def test_up_failing_halfway_stops_everything(lab: LabUnderTest):
    # ZooKeeper starts on its port, then every broker rejects its config: up must stop
    # ZooKeeper again, forget the lab and free its ports for the next `up`.
    result = lab.run("up", "--base-port", str(lab.base_port), "--brokers", "2",
                     "--override", "num.network.threads=many", timeout=180)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("kafkalike-lab.sh: error: up failed, everything stopped again"), result.stderr
    assert "ZooKeeper standalone serving" in result.stdout
    # (lab.json named the pids and is gone: the daemons are found by their directory.)
    assert list(processes_mentioning(str(lab.dir) + "/")) == []
    assert not (lab.dir / "lab.json").exists()
    one_line_error(lab.run("status"), "there is no lab")
    # Nothing holds the lab's ports: the same `up` without the bad key serves.
    up = lab.run("up", "--base-port", str(lab.base_port), "--brokers", "1")
    assert up.returncode == 0, up.stdout + up.stderr
