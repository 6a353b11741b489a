"""Leadership back to preferred replicas, by hand (kafka-leader-election, the deprecated
kafka-preferred-replica-election) and by the controller's auto rebalance; and
kafka-verifiable-producer's report checked against what a confluent-kafka consumer reads.

Leadership is moved off a preferred replica the way it happens in production: that
broker stops cleanly (controlled shutdown moves its leaders away) and comes back as a
follower. ZooKeeper, read with kazoo, is the judge of who leads.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from tests.fault.cluster_view import ZooKeeperView, create_topic, running_cluster
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
TOPIC = "elect"
PARTITIONS = 3


def run_tool(script: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / script), *args], capture_output=True, text=True, timeout=timeout,
                          env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


def assignment(view: ZooKeeperView, topic: str) -> dict[int, list[int]]:
    data, _ = view.zk.get(f"/brokers/topics/{topic}")
    return {int(p): replicas for p, replicas in json.loads(data)["partitions"].items()}


def leaders(view: ZooKeeperView, topic: str) -> dict[int, int]:
    return {p: s.leader for p, s in view.partitions(topic, PARTITIONS).items()}


def bounce_preferred_leader(cluster, view: ZooKeeperView) -> tuple[int, list[int]]:
    """Stop and restart a non-controller broker; returns it and the partitions it prefers."""
    controller = view.controller()
    broker = next(b for b in range(3) if b != controller)
    preferred = sorted(p for p, rs in assignment(view, TOPIC).items() if rs[0] == broker)
    assert preferred, "every broker heads one partition's assignment"
    cluster.broker(broker).stop()
    wait_until(lambda: all(leaders(view, TOPIC)[p] != broker for p in preferred), 30,
               "leadership to move off the stopped broker")
    cluster.broker(broker).restart()
    view.wait_full_isr(TOPIC, PARTITIONS, 3)
    return broker, preferred


def test_kafka_leader_election_restores_preferred_leaders(kafka_cluster, zk_chroot):
    view = ZooKeeperView(zk_chroot)
    try:
        create_topic(kafka_cluster.bootstrap, TOPIC, PARTITIONS, 3)
        view.wait_full_isr(TOPIC, PARTITIONS, 3)
        broker, preferred = bounce_preferred_leader(kafka_cluster, view)
        assert all(leaders(view, TOPIC)[p] != broker for p in preferred)

        before = {p: view.partition(TOPIC, p).leader_epoch for p in preferred}
        run = run_tool("kafka-leader-election.sh", "--bootstrap-server", kafka_cluster.bootstrap,
                       "--election-type", "PREFERRED", "--all-topic-partitions")
        assert run.returncode == 0, run.stderr
        moved = ", ".join(f"{TOPIC}-{p}" for p in preferred)
        assert run.stdout == f"Successfully completed leader election (PREFERRED) for partitions {moved}\n"
        heads = {p: rs[0] for p, rs in assignment(view, TOPIC).items()}
        assert leaders(view, TOPIC) == heads
        assert all(view.partition(TOPIC, p).leader_epoch == before[p] + 1 for p in preferred)

        run = run_tool("kafka-leader-election.sh", "--bootstrap-server", kafka_cluster.bootstrap,
                       "--election-type", "preferred", "--topic", TOPIC, "--partition", "0")
        assert (run.returncode, run.stdout) == (0, f"Valid replica already elected for partitions {TOPIC}-0\n")

        run = run_tool("kafka-leader-election.sh", "--bootstrap-server", kafka_cluster.bootstrap,
                       "--election-type", "UNCLEAN", "--topic", "missing", "--partition", "0")
        assert run.returncode == 1
        assert run.stdout == ("Error completing leader election (UNCLEAN) for partition: missing-0: "
                              "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                              "The partition does not exist.\n")
        assert run.stderr.startswith('Exception in thread "main" kafka.common.AdminCommandFailedException: '
                                     "1 replica(s) could not be elected")

        run = run_tool("kafka-leader-election.sh", "--bootstrap-server", kafka_cluster.bootstrap,
                       "--election-type", "preferred")
        assert run.returncode == 1
        assert "One and only one of the following options is required: topic, all-topic-partitions, " \
               "path-to-json-file" in run.stderr
    finally:
        view.close()


def test_deprecated_preferred_replica_election_tool_both_ways(kafka_cluster, zk_chroot, tmp_path):
    view = ZooKeeperView(zk_chroot)
    try:
        create_topic(kafka_cluster.bootstrap, TOPIC, PARTITIONS, 3)
        view.wait_full_isr(TOPIC, PARTITIONS, 3)
        heads = {p: rs[0] for p, rs in assignment(view, TOPIC).items()}

        broker, preferred = bounce_preferred_leader(kafka_cluster, view)
        election = tmp_path / "election.json"
        election.write_text(json.dumps({"partitions": [{"topic": TOPIC, "partition": p} for p in preferred]}))
        run = run_tool("kafka-preferred-replica-election.sh", "--bootstrap-server", kafka_cluster.bootstrap,
                       "--path-to-json-file", str(election))
        assert run.returncode == 0, run.stderr
        moved = ", ".join(f"{TOPIC}-{p}" for p in preferred)
        assert run.stdout == ("This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: "
                              f"KAFKA-8405\nSuccessfully completed preferred leader election for partitions {moved}\n")
        assert leaders(view, TOPIC) == heads

        broker, preferred = bounce_preferred_leader(kafka_cluster, view)
        run = run_tool("kafka-preferred-replica-election.sh", "--zookeeper", zk_chroot)
        assert run.returncode == 0, run.stderr
        names = [f"{TOPIC}-{p}" for p in range(PARTITIONS)]
        assert run.stdout.splitlines() == [
            "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: KAFKA-8405",
            "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
            "Use --bootstrap-server instead to specify a broker to connect to.",
            f"Created preferred replica election path with {','.join(names)}",
            f"Successfully started preferred replica election for partitions Set({', '.join(names)})",
        ]
        # The controller runs it and removes the znode, as Kafka 2.8's does.
        wait_until(lambda: leaders(view, TOPIC) == heads, 30, "the znode-triggered preferred election")
        wait_until(lambda: view.zk.exists("/admin/preferred_replica_election") is None, 30,
                   "the controller to delete /admin/preferred_replica_election")
    finally:
        view.close()


def test_auto_leader_rebalance_restores_preferred_leaders(zk_chroot):
    with running_cluster(zk_chroot, 3, {"leader.imbalance.check.interval.seconds": "2"}) as cluster:
        view = ZooKeeperView(zk_chroot)
        try:
            create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3)
            view.wait_full_isr(TOPIC, PARTITIONS, 3)
            heads = {p: rs[0] for p, rs in assignment(view, TOPIC).items()}
            broker, preferred = bounce_preferred_leader(cluster, view)
            wait_until(lambda: leaders(view, TOPIC) == heads, 30, "the auto rebalance to restore leaders")
        finally:
            view.close()


def test_verifiable_producer_reports_what_a_consumer_reads(kafka_cluster):
    create_topic(kafka_cluster.bootstrap, "verify", 2, 3)
    run = run_tool("kafka-verifiable-producer.sh", "--bootstrap-server", kafka_cluster.bootstrap,
                   "--topic", "verify", "--max-messages", "40", "--acks", "-1", "--value-prefix", "7",
                   "--repeating-keys", "5", "--throughput", "1000")
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    names = [e["name"] for e in events]
    assert names[0] == "startup_complete"
    assert names[-2:] == ["shutdown_complete", "tool_data"]
    sent = [e for e in events if e["name"] == "producer_send_success"]
    assert len(sent) == 40 and "producer_send_error" not in names
    assert sorted(int(e["value"].split(".")[1]) for e in sent) == list(range(40))
    assert all(e["value"].startswith("7.") and e["topic"] == "verify" and isinstance(e["timestamp"], int)
               for e in sent)
    summary = events[-1]
    assert (summary["sent"], summary["acked"], summary["target_throughput"]) == (40, 40, 1000)
    assert summary["avg_throughput"] > 0

    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": "verify-check",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("verify", p, 0) for p in range(2)])
        seen = {}
        deadline_polls = 200
        while len(seen) < 40 and deadline_polls:
            deadline_polls -= 1
            message = consumer.poll(0.2)
            if message is None or message.error():
                continue
            seen[(message.partition(), message.offset())] = (message.key().decode(), message.value().decode())
    finally:
        consumer.close()
    assert seen == {(e["partition"], e["offset"]): (e["key"], e["value"]) for e in sent}
    # Keys cycle 0..4, in send order.
    in_order = sorted(sent, key=lambda e: int(e["value"].split(".")[1]))
    assert [e["key"] for e in in_order] == [str(i % 5) for i in range(40)]


def test_confluent_kafka_elect_leaders_is_answered_per_partition(kafka_cluster, zk_chroot):
    from confluent_kafka import ElectionType, KafkaError
    from confluent_kafka.admin import AdminClient
    view = ZooKeeperView(zk_chroot)
    try:
        create_topic(kafka_cluster.bootstrap, TOPIC, PARTITIONS, 3)
        view.wait_full_isr(TOPIC, PARTITIONS, 3)
        heads = {p: rs[0] for p, rs in assignment(view, TOPIC).items()}
        broker, preferred = bounce_preferred_leader(kafka_cluster, view)
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
        asked = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)] + [TopicPartition("missing", 0)]
        results = admin.elect_leaders(ElectionType.PREFERRED, asked).result(30)
        errors = {(tp.topic, tp.partition): (err.code() if err is not None else None) for tp, err in results.items()}
        assert errors == {**{(TOPIC, p): (None if p in preferred else KafkaError.ELECTION_NOT_NEEDED)
                             for p in range(PARTITIONS)},
                          ("missing", 0): KafkaError.UNKNOWN_TOPIC_OR_PART}
        assert leaders(view, TOPIC) == heads
    finally:
        view.close()
