"""Partition reassignment on real ZooKeeper and broker processes, driven by bin/kafka-reassign-partitions.sh.

A partition with data moves between brokers and arrives whole; the broker that lost its
replica deletes its log; the topic znode ends with the target replicas and no
adding/removing lists; a removed leader hands over; a reassignment held back (its new
replica's broker stopped with SIGSTOP) is listed, verified as in progress and cancelled
back to the original replicas; the legacy /admin/reassign_partitions path (--zookeeper)
works with its throttle configs; the tool's lines and its answers to bad input are Kafka
2.8's, with nothing changed in ZooKeeper. The module's tests share one three-broker
cluster and each uses topics of its own; the controller failover test has its own.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import Cluster
from tests.conftest import scratch_dir
from tests.fault.cluster_view import ZooKeeperView
from tests.waiting import wait_until
from tests.fault.delivery_check import wait_replicas_identical

REPO = Path(__file__).resolve().parents[2]
TOOL = "kafka-reassign-partitions.sh"


def run_tool(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / TOOL), *args], capture_output=True, text=True, timeout=timeout,
                          env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


@contextlib.contextmanager
def cluster_of(zk_connect: str, size: int = 3, per_broker: dict[int, dict[str, str]] | None = None,
               controller: int | None = None) -> Iterator[Cluster]:
    """A cluster of `size` brokers; `controller`, when given, is started (and has won the
    election) before the others start."""
    base = scratch_dir("reassign")
    cluster = Cluster(zk_connect, base, size)
    for broker_id, overrides in (per_broker or {}).items():
        cluster.brokers[broker_id].overrides.update(overrides)
    try:
        if controller is not None:
            cluster.broker(controller).start().wait_ready(60)
            view = ZooKeeperView(zk_connect)
            try:
                wait_until(lambda: view.controller() == controller, 30, f"broker {controller} as controller")
            finally:
                view.close()
        for broker in cluster.brokers:
            if broker.proc is None:
                broker.start()
        for broker in cluster.brokers:
            broker.wait_ready(60)
        yield cluster
    finally:
        for broker in cluster.brokers:
            if broker.proc is not None and broker.proc.poll() is None:
                os.kill(broker.proc.pid, signal.SIGCONT)
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(module_zk_chroot: str) -> Iterator[Cluster]:
    with cluster_of(module_zk_chroot) as c:
        yield c


@pytest.fixture
def view(module_zk_chroot: str) -> Iterator[ZooKeeperView]:
    v = ZooKeeperView(module_zk_chroot)
    try:
        yield v
    finally:
        v.close()


def create_topic(bootstrap: str, topic: str, assignment: list[list[int]], config: dict | None = None) -> None:
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, replica_assignment=dict(enumerate(assignment)), configs=config or {})])


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"value-{i}".encode() * 8, partition=partition)
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, count: int, partition: int = 0, timeout: float = 30
            ) -> list[tuple[bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reassign-check-{topic}",
                        "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count:
            assert time.monotonic() < deadline, f"only {len(out)} of {count} records of {topic} read"
            for msg in consumer.consume(500, 0.5):
                if not msg.error():
                    out.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def topic_znode(view: ZooKeeperView, topic: str) -> dict:
    data, _ = view.zk.get(f"/brokers/topics/{topic}")
    return json.loads(data)


def wait_assignment(view: ZooKeeperView, topic: str, replicas: list[int], timeout: float = 60) -> dict:
    """The topic znode once partition 0 has `replicas` and no reassignment is in flight."""
    def done():
        value = topic_znode(view, topic)
        return value if (value["partitions"]["0"] == replicas and not value["adding_replicas"]
                         and not value["removing_replicas"]) else None
    return wait_until(done, timeout, f"{topic}-0 to be reassigned to {replicas}")


def write_json(path: Path, value) -> str:
    path.write_text(json.dumps(value))
    return str(path)


def move_file(tmp_path: Path, topic: str, replicas: list[int], name: str = "move.json") -> str:
    return write_json(tmp_path / name, {"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": replicas}]})


def bootstrap_without(cluster: Cluster, *brokers: int) -> str:
    return ",".join(b.bootstrap for b in cluster.brokers if b.broker_id not in brokers)


def partition_dirs(cluster: Cluster, broker: int, topic: str) -> list[str]:
    return sorted(p.name for p in cluster.broker(broker).log_dir.glob(f"{topic}-0*"))


def current_text(topic: str, replicas: list[int]) -> str:
    dirs = ",".join('"any"' for _ in replicas)
    return ("Current partition replica assignment\n\n"
            f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":'
            f'[{",".join(map(str, replicas))}],"log_dirs":[{dirs}]}}]}}\n\n'
            "Save this to use as the --reassignment-json-file option during rollback\n")


# -- moving data -------------------------------------------------------------------------------


def test_a_partition_with_data_moves_and_its_removed_leader_hands_over(cluster, view, tmp_path):
    topic = "moved"
    create_topic(cluster.bootstrap, topic, [[0, 1]])
    produce(cluster.bootstrap, topic, 500)
    assert view.partition(topic, 0).leader == 0

    plan = move_file(tmp_path, topic, [1, 2])
    run = run_tool("--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", plan)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == current_text(topic, [0, 1]) + f"Successfully started partition reassignment for {topic}-0\n"

    final = wait_assignment(view, topic, [1, 2])
    assert (final["version"], final["adding_replicas"], final["removing_replicas"]) == (3, {}, {})
    assert "topic_id" in final
    # The removed leader handed over to the first target replica in the ISR.
    wait_until(lambda: view.partition(topic, 0).isr == (1, 2), 30, "the ISR to shrink to the targets")
    assert view.partition(topic, 0).leader == 1

    records = consume(cluster.bootstrap, topic, 500)
    assert records == [(f"k{i}".encode(), f"value-{i}".encode() * 8) for i in range(500)]
    wait_replicas_identical({1: cluster.broker(1).log_dir, 2: cluster.broker(2).log_dir}, topic, 0, 500)
    # Broker 0 stopped its replica and deleted the log (renamed for deletion, as Kafka does).
    wait_until(lambda: all(d.endswith("-delete") for d in partition_dirs(cluster, 0, topic)), 30,
               "broker 0 to delete its replica")

    run = run_tool("--bootstrap-server", cluster.bootstrap, "--verify", "--reassignment-json-file", plan)
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == (f"Status of partition reassignment:\nReassignment of partition {topic}-0 is complete.\n\n"
                          "Clearing broker-level throttles on brokers 0,1,2\n"
                          f"Clearing topic-level throttles on topic {topic}\n")


def test_a_held_back_reassignment_is_listed_verified_and_cancelled(cluster, view, tmp_path):
    topic = "held"
    controller = view.controller()
    target = next(b for b in (2, 1, 0) if b != controller)
    origin = [b for b in (0, 1, 2) if b != target]
    create_topic(cluster.bootstrap, topic, [origin])
    produce(cluster.bootstrap, topic, 50)
    bootstrap = bootstrap_without(cluster, target)
    plan = move_file(tmp_path, topic, [origin[0], target])

    os.kill(cluster.broker(target).proc.pid, signal.SIGSTOP)
    try:
        run = run_tool("--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", plan)
        assert run.returncode == 0, run.stdout + run.stderr
        value = topic_znode(view, topic)
        assert value["partitions"]["0"] == [origin[0], target, origin[1]]
        assert (value["adding_replicas"], value["removing_replicas"]) == ({"0": [target]}, {"0": [origin[1]]})

        run = run_tool("--bootstrap-server", bootstrap, "--list")
        assert run.stdout == (f"Current partition reassignments:\n{topic}-0: replicas: "
                              f"{origin[0]},{target},{origin[1]}. adding: {target}. removing: {origin[1]}.\n")
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            listed = admin.list_partition_reassignments([(topic, 0)])
        assert listed[(topic, 0)].adding_replicas == (target,)
        describe = subprocess.run([str(REPO / "bin" / "kafka-topics.sh"), "--bootstrap-server", bootstrap,
                                   "--describe", "--topic", topic], capture_output=True, text=True, timeout=60,
                                  env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
        assert describe.stdout.splitlines()[1].endswith(
            f"\tReplicas: {origin[0]},{target},{origin[1]}\tIsr: {origin[0]},{origin[1]}"
            f"\tAdding Replicas: {target}\tRemoving Replicas: {origin[1]}"), describe.stdout

        run = run_tool("--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", plan)
        assert run.returncode == 0
        assert run.stdout == (f"Status of partition reassignment:\nReassignment of partition {topic}-0 is still in "
                              "progress.\n\n")

        # A second --execute without --additional is refused; nothing changes.
        run = run_tool("--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", plan)
        assert run.returncode == 1
        assert run.stdout == ("Cannot execute because there is an existing partition assignment.  Use --additional "
                              "to override this and create a new partition assignment in addition to the existing "
                              "one. The --additional flag can also be used to change the throttle by resubmitting "
                              "the current reassignment.\n")

        run = run_tool("--bootstrap-server", bootstrap, "--cancel", "--reassignment-json-file", plan,
                       "--preserve-throttles")
        assert run.returncode == 0, run.stdout + run.stderr
        assert run.stdout == (f"Successfully cancelled partition reassignment for: {topic}-0\n"
                              "None of the specified partition moves are active.\n")
    finally:
        os.kill(cluster.broker(target).proc.pid, signal.SIGCONT)
    # Back to the original replicas (kept in the in-flight order, as Kafka does); the
    # thawed broker deletes the replica it had been asked to create.
    wait_assignment(view, topic, origin)
    assert view.partition(topic, 0).leader == origin[0]
    wait_until(lambda: all(d.endswith("-delete") for d in partition_dirs(cluster, target, topic)), 30,
               "the cancelled replica to be deleted")
    run = run_tool("--bootstrap-server", cluster.bootstrap, "--cancel", "--reassignment-json-file", plan)
    assert run.returncode == 0
    assert run.stdout.startswith("None of the specified partition reassignments are active.\n")
    assert consume(cluster.bootstrap, topic, 50)[-1][0] == b"k49"


def test_the_legacy_znode_with_throttles_through_zookeeper(cluster, view, module_zk_chroot, tmp_path):
    topic = "legacy"
    create_topic(cluster.bootstrap, topic, [[0, 1]])
    produce(cluster.bootstrap, topic, 100)
    plan = move_file(tmp_path, topic, [2, 1])
    run = run_tool("--zookeeper", module_zk_chroot, "--execute", "--reassignment-json-file", plan,
                   "--throttle", "50000000")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == ("Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.\n"
                          + current_text(topic, [0, 1])
                          + "Warning: You must run --verify periodically, until the reassignment completes, to "
                            "ensure the throttle is removed.\n"
                            "The inter-broker throttle limit was set to 50000000 B/s\n"
                            f"Successfully started partition reassignment for {topic}-0\n")
    # Throttles as 2.8's tool stores them: replicas on the topic, rates on every broker involved.
    configs = json.loads(view.zk.get(f"/config/topics/{topic}")[0])["config"]
    assert configs == {"leader.replication.throttled.replicas": "0:0,0:1",
                       "follower.replication.throttled.replicas": "0:2"}
    for broker in (0, 1, 2):
        rates = json.loads(view.zk.get(f"/config/brokers/{broker}")[0])["config"]
        assert rates == {"leader.replication.throttled.rate": "50000000",
                         "follower.replication.throttled.rate": "50000000"}

    wait_assignment(view, topic, [2, 1])
    wait_until(lambda: view.zk.exists("/admin/reassign_partitions") is None, 30,
               "the controller to delete /admin/reassign_partitions")
    assert consume(cluster.bootstrap, topic, 100)[-1][0] == b"k99"

    run = run_tool("--zookeeper", module_zk_chroot, "--verify", "--reassignment-json-file", plan)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == ("Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.\n"
                          "Warning: because you are using the deprecated --zookeeper option, the results may be "
                          "incomplete.  Use --bootstrap-server instead for more accurate results.\n"
                          "Status of partition reassignment:\n"
                          f"Reassignment of partition {topic}-0 is complete.\n"
                          "Clearing broker-level throttles on brokers 0,1,2\n"
                          f"Clearing topic-level throttles on topic {topic}\n")
    assert json.loads(view.zk.get(f"/config/topics/{topic}")[0])["config"] == {}
    for broker in (0, 1, 2):
        assert json.loads(view.zk.get(f"/config/brokers/{broker}")[0])["config"] == {}


def test_generate_proposes_an_assignment_over_the_given_brokers(cluster, view, module_zk_chroot, tmp_path):
    topic = "spread"
    create_topic(cluster.bootstrap, topic, [[0, 1], [1, 2], [2, 0]])
    topics = write_json(tmp_path / "topics.json", {"topics": [{"topic": topic}], "version": 1})
    current = ('{"version":1,"partitions":[{"topic":"spread","partition":0,"replicas":[0,1],"log_dirs":["any","any"]},'
               '{"topic":"spread","partition":1,"replicas":[1,2],"log_dirs":["any","any"]},'
               '{"topic":"spread","partition":2,"replicas":[2,0],"log_dirs":["any","any"]}]}')
    for backend in (["--bootstrap-server", cluster.bootstrap], ["--zookeeper", module_zk_chroot]):
        run = run_tool(*backend, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,2")
        assert run.returncode == 0, run.stdout + run.stderr
        lines = run.stdout.splitlines()
        if backend[0] == "--zookeeper":
            assert lines.pop(0) == "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
        assert lines[:4] == ["Current partition replica assignment", current, "",
                             "Proposed partition reassignment configuration"]
        proposed = json.loads(lines[4])
        assert [(p["topic"], p["partition"]) for p in proposed["partitions"]] == [(topic, 0), (topic, 1), (topic, 2)]
        for p in proposed["partitions"]:
            assert sorted(p["replicas"]) == [1, 2] and p["log_dirs"] == ["any", "any"]
    assert topic_znode(view, topic)["partitions"] == {"0": [0, 1], "1": [1, 2], "2": [2, 0]}


# -- bad input -------------------------------------------------------------------------------


BAD_PLANS = [
    ("not json", "{\"version\":1,", "Error: Unexpected end-of-input"),
    ("empty file", "", "Error: The input string shouldn't be empty"),
    ("unknown broker", {"version": 1, "partitions": [{"topic": "bad", "partition": 0, "replicas": [1, 7]}]},
     "Error: Unknown broker id 7"),
    ("duplicate replicas", {"version": 1, "partitions": [{"topic": "bad", "partition": 0, "replicas": [1, 1]}]},
     "Error: Partition replica lists may not contain duplicate entries: bad-0 contains multiple entries for 1"),
    ("duplicate partitions", {"version": 1, "partitions": [{"topic": "bad", "partition": 0, "replicas": [1, 2]},
                                                           {"topic": "bad", "partition": 0, "replicas": [2, 1]}]},
     "Error: Partition reassignment contains duplicate topic partitions: bad-0"),
    ("empty replicas", {"version": 1, "partitions": [{"topic": "bad", "partition": 0, "replicas": []}]},
     "Error: Partition replica list cannot be empty"),
    ("no partitions", {"version": 1, "partitions": []}, "Error: Partition reassignment list cannot be empty"),
    ("missing field", {"version": 1, "partitions": [{"topic": "bad", "replicas": [1, 2]}]},
     "Error: No such field exists: `partition`"),
    ("bad version", {"version": 2, "partitions": []}, "Error: Not supported version field value 2"),
    ("unknown topic", {"version": 1, "partitions": [{"topic": "nope", "partition": 0, "replicas": [1, 2]}]},
     "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "),
]


@pytest.mark.parametrize("why, plan, first_line", BAD_PLANS, ids=[b[0] for b in BAD_PLANS])
def test_bad_plans_are_refused_and_nothing_changes(cluster, view, tmp_path, why, plan, first_line):
    if not view.zk.exists("/brokers/topics/bad"):
        create_topic(cluster.bootstrap, "bad", [[0, 1]])
    before = topic_znode(view, "bad")
    path = tmp_path / "plan.json"
    path.write_text(plan if isinstance(plan, str) else json.dumps(plan))
    run = run_tool("--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", str(path))
    assert run.returncode == 1
    assert run.stdout.startswith(first_line), run.stdout
    assert topic_znode(view, "bad") == before
    assert view.zk.exists("/admin/reassign_partitions") is None


def test_the_controller_refuses_a_partition_that_does_not_exist(cluster, tmp_path):
    create_topic(cluster.bootstrap, "single", [[0]])
    plan = write_json(tmp_path / "plan.json", {"version": 1, "partitions": [
        {"topic": "single", "partition": 3, "replicas": [1]}]})
    run = run_tool("--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", plan)
    assert run.returncode == 1
    assert run.stdout.endswith("Error reassigning partition(s):\nsingle-3: The partition does not exist.\n")


def test_zookeeper_mode_checks_brokers_and_partitions(cluster, view, module_zk_chroot, tmp_path):
    if not view.zk.exists("/brokers/topics/bad"):
        create_topic(cluster.bootstrap, "bad", [[0, 1]])
    for plan, message in [
        ({"version": 1, "partitions": [{"topic": "bad", "partition": 0, "replicas": [1, 7]}]},
         "Error: The proposed assignment contains non-existent brokerIDs: 7"),
        ({"version": 1, "partitions": [{"topic": "bad", "partition": 5, "replicas": [1, 2]}]},
         "Error: The proposed assignment contains non-existent partitions: List(bad-5)"),
    ]:
        run = run_tool("--zookeeper", module_zk_chroot, "--execute", "--reassignment-json-file",
                       write_json(tmp_path / "plan.json", plan))
        assert run.returncode == 1
        assert run.stdout.splitlines()[1] == message
    assert view.zk.exists("/admin/reassign_partitions") is None


@pytest.mark.parametrize("args, message", [
    ([], "This tool helps to move topic partitions between replicas."),
    (["--bootstrap-server", "x:1"], "Command must include exactly one action: --generate, --execute, --verify, "
                                    "--cancel, --list"),
    (["--execute", "--reassignment-json-file", "f"], "Please specify --bootstrap-server"),
    (["--bootstrap-server", "x:1", "--execute"], 'Missing required argument "[reassignment-json-file]"'),
    (["--bootstrap-server", "x:1", "--verify", "--reassignment-json-file", "f", "--throttle", "1"],
     'Option "[throttle]" can\'t be used with action "[verify]"'),
    (["--bootstrap-server", "x:1", "--generate", "--topics-to-move-json-file", "f"],
     'Missing required argument "[broker-list]"'),
])
def test_command_line_mistakes_print_usage(args, message):
    run = run_tool(*args)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith(message + "\nOption ")


def test_bootstrap_server_only_options_and_unknown_options():
    # --cancel and --list are permitted with --bootstrap-server only; --timeout is an
    # --execute option that needs it too.
    run = run_tool("--zookeeper", "x:1", "--cancel", "--reassignment-json-file", "f")
    assert run.returncode == 1
    assert run.stderr.startswith('Option "[zookeeper]" can\'t be used with action "[cancel]"\n')
    run = run_tool("--zookeeper", "x:1", "--execute", "--reassignment-json-file", "f", "--timeout", "5")
    assert run.returncode == 1
    assert run.stderr == ('Exception in thread "main" java.lang.RuntimeException: You must specify '
                          '--bootstrap-server when using "[timeout]"\n')
    run = run_tool("--bootstrap-server", "x:1", "--list", "--bogus")
    assert run.returncode == 1
    assert run.stderr == 'Exception in thread "main" joptsimple.UnrecognizedOptionException: bogus is not a ' \
                         'recognized option\n'


# -- a new controller resumes the reassignment ------------------------------------------------


def test_a_reassignment_survives_controller_failover_and_a_broker_restart(zk_chroot, tmp_path):
    """The target broker is frozen (SIGSTOP) so the reassignment waits; the controller is
    killed with -9; a new controller resumes from the topic znode once the target thaws.
    The killed broker then comes back and is given the partition again."""
    short, long_ = {"zookeeper.session.timeout.ms": "6000"}, {"zookeeper.session.timeout.ms": "30000"}
    # Broker 0 starts first and becomes controller (killed, its session ends in 6 s); broker 2
    # (the target) outlives a long freeze.
    with cluster_of(zk_chroot, 3, {0: short, 1: short, 2: long_}, controller=0) as c:
        view = ZooKeeperView(zk_chroot)
        try:
            wait_until(lambda: view.controller() is not None, 30, "a controller")
            controller = view.controller()
            target = 2 if controller != 2 else 1
            other = next(b for b in (0, 1, 2) if b not in (controller, target))
            topic = "failover"
            create_topic(c.bootstrap, topic, [[controller, other]], {"min.insync.replicas": "1"})
            produce(c.bootstrap, topic, 300)
            plan = move_file(tmp_path, topic, [other, target])

            os.kill(c.broker(target).proc.pid, signal.SIGSTOP)
            try:
                run = run_tool("--bootstrap-server", bootstrap_without(c, target), "--execute",
                               "--reassignment-json-file", plan)
                assert run.returncode == 0, run.stdout + run.stderr
                assert topic_znode(view, topic)["adding_replicas"] == {"0": [target]}
                c.broker(controller).kill()
                wait_until(lambda: view.controller() not in (None, controller), 30, "a new controller")
            finally:
                os.kill(c.broker(target).proc.pid, signal.SIGCONT)
            assert view.controller() == other
            wait_assignment(view, topic, [other, target])
            assert view.partition(topic, 0).leader == other
            wait_until(lambda: view.partition(topic, 0).isr == (other, target), 30, "the final ISR")
            bootstrap = bootstrap_without(c, controller)
            assert consume(bootstrap, topic, 300)[-1][0] == b"k299"

            # The killed broker restarts and takes a replica back (its old copy of the log
            # is truncated or reused as the leader's history dictates).
            c.broker(controller).restart()
            back = move_file(tmp_path, topic, [other, target, controller], "back.json")
            run = run_tool("--bootstrap-server", c.bootstrap, "--execute", "--reassignment-json-file", back)
            assert run.returncode == 0, run.stdout + run.stderr
            wait_assignment(view, topic, [other, target, controller])
            wait_until(lambda: sorted(view.partition(topic, 0).isr) == sorted([other, target, controller]), 30,
                       "the restarted broker in the ISR")
            wait_replicas_identical({b: c.broker(b).log_dir for b in (other, target, controller)}, topic, 0, 300)

            # A target broker that dies mid-way and starts again gets the reassignment again.
            moved = "restarted"
            create_topic(c.bootstrap, moved, [[other, target]])
            produce(c.bootstrap, moved, 200)
            os.kill(c.broker(controller).proc.pid, signal.SIGSTOP)
            run = run_tool("--bootstrap-server", bootstrap_without(c, controller), "--execute",
                           "--reassignment-json-file", move_file(tmp_path, moved, [controller, other], "r.json"))
            assert run.returncode == 0, run.stdout + run.stderr
            c.broker(controller).kill()
            wait_until(lambda: not view.registered(controller), 30, "the killed target to be noticed")
            assert topic_znode(view, moved)["adding_replicas"] == {"0": [controller]}
            c.broker(controller).restart()
            wait_assignment(view, moved, [controller, other])
            wait_replicas_identical({b: c.broker(b).log_dir for b in (controller, other)}, moved, 0, 200)
        finally:
            view.close()
