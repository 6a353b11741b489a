"""A real broker writes Kafka 2.8's log files, read from the log4j.properties KAFKA_LOG4J_OPTS
names: the lines an operator greps for (started, controller election, partition state
changes, log recovery after kill -9, shutting down) in the files and under the logger
names Kafka uses, ISR shrink and expand on a leader whose follower was stopped, and the
file's own choices (here: the controller's file renamed)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import Cluster
from tests.conftest import scratch_dir
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def wait_for(path: Path, text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in read(path):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared in {path}:\n{read(path)[-3000:]}")


def test_brokers_write_kafkas_log_files_from_their_log4j_properties(zk_chroot, kazoo_client, monkeypatch):
    base = scratch_dir("logfiles")
    own = base / "log4j.properties"
    stock = (REPO / "config" / "log4j.properties").read_text()
    own.write_text(stock.replace("${kafka.logs.dir}/controller.log", "${kafka.logs.dir}/my-controller.log"))
    monkeypatch.setenv("KAFKA_LOG4J_OPTS", f"-Dlog4j.configuration=file:{own}")
    # The stopped follower's ZooKeeper session must outlive the leader's ISR check (every
    # 0.75 s here): were it to expire first, the controller would drop the follower from the
    # ISR and the leader would never log its own shrink. 6 s lost that race on a loaded CI.
    cluster = Cluster(zk_chroot, base, 2, {"zookeeper.session.timeout.ms": "15000",
                                           "replica.lag.time.max.ms": "1500"})
    try:
        cluster.start()
        with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_topics([NewTopic("audit", 1, 2)])
            controller_id = admin.controller_id()
        controller = cluster.broker(controller_id)
        wait_for(controller.app_log_dir / "state-change.log",
                 "Changed partition audit-0 from NewPartition to OnlinePartition")
        leader_id = json.loads(kazoo_client.get("/brokers/topics/audit/partitions/0/state")[0])["leader"]
        leader = cluster.broker(leader_id)
        follower = next(b for b in cluster.brokers if b.broker_id != leader_id)

        # ISR shrink and expand, on the leader: a follower stopped while the leader takes a
        # write (a caught-up follower stays in sync however long it is quiet, as in Kafka),
        # then let go.
        os.kill(follower.pid, signal.SIGSTOP)
        try:
            producer = Producer({"bootstrap.servers": leader.bootstrap, "acks": 1})
            producer.produce("audit", value=b"while the follower sleeps", partition=0)
            assert producer.flush(30) == 0
            wait_for(leader.server_log, "Shrinking ISR from ")
        finally:
            os.kill(follower.pid, signal.SIGCONT)
        # The expansion back to both (the shrink logged an "ISR updated to" of its own).
        expanded = rf"ISR updated to ({leader_id},{follower.broker_id}|{follower.broker_id},{leader_id}) "
        wait_until(lambda: re.search(expanded, read(leader.server_log)), 30, "the leader to log the ISR expansion")

        # Log recovery: the follower killed with -9 and started again.
        follower.kill()
        deadline = time.monotonic() + 30           # its registration goes with its session
        while kazoo_client.exists(f"/brokers/ids/{follower.broker_id}") and time.monotonic() < deadline:
            time.sleep(0.2)
        follower.start()
        follower.wait_ready()
        cluster.stop()

        stamp = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] "
        for broker in cluster.brokers:
            server = read(broker.server_log)
            bid = broker.broker_id
            assert re.search(stamp + rf"INFO \[KafkaServer id={bid}\] started \(kafka\.server\.KafkaServer\)$",
                             server, re.M)
            assert re.search(stamp + rf"INFO \[KafkaServer id={bid}\] shutting down \(kafka\.server\.KafkaServer\)$",
                             server, re.M)
            assert f"[KafkaServer id={bid}] shut down completed (kafka.server.KafkaServer)" in server
            assert re.search(r"\(org\.apache\.zookeeper\.\w+\)$", server, re.M)
            assert "(kafkalike." not in server and "(kazoo" not in server
            assert "(kafka.controller.KafkaController)" not in server
            assert not (broker.app_log_dir / "controller.log").exists()
            for name in ("my-controller.log", "state-change.log", "log-cleaner.log", "kafka-request.log",
                         "kafka-authorizer.log"):
                assert (broker.app_log_dir / name).exists(), name

        leader_log = read(leader.server_log)
        f = follower.broker_id
        assert re.search(rf"INFO \[Partition audit-0 broker={leader_id}\] Shrinking ISR from "
                         rf"({leader_id},{f}|{f},{leader_id}) to {leader_id}\. Leader: \(highWatermark: \d+, "
                         rf"endOffset: \d+\)\. Out of sync replicas: \(brokerId: {f}, endOffset: -?\d+\)\. "
                         r"\(kafka\.cluster\.Partition\)$", leader_log, re.M)
        assert re.search(rf"INFO \[Partition audit-0 broker={leader_id}\] ISR updated to "
                         rf"({leader_id},{f}|{f},{leader_id}) and version updated to \[\d+\] "
                         r"\(kafka\.cluster\.Partition\)$", leader_log, re.M)
        # After kill -9: LogManager's recovery and the log's own lines, under Kafka's logger names.
        follower_log = read(follower.server_log)
        assert re.search(r"INFO Attempting recovery for all logs in \S+ since no clean shutdown file was found "
                         r"\(kafka\.log\.LogManager\)$", follower_log, re.M)
        assert re.search(r"Recovering unflushed segment 0 \(kafka\.log\.Log\)$", follower_log, re.M)

        # The controller's lines went to the file this log4j.properties names.
        elected = read(controller.app_log_dir / "my-controller.log")
        assert re.search(stamp + rf"INFO \[Controller id={controller_id}\] {controller_id} successfully elected as "
                         r"the controller\. Epoch incremented to \d+ and epoch zk version is now \d+ "
                         r"\(kafka\.controller\.KafkaController\)$", elected, re.M)
        state = read(controller.app_log_dir / "state-change.log")
        assert re.search(rf"INFO \[Controller id={controller_id} epoch=\d+\] Changed partition audit-0 from "
                         r"NewPartition to OnlinePartition with state LeaderAndIsr\(leader=\d, .*\) "
                         r"\(state\.change\.logger\)$", state, re.M)
        # The broker's side of the same change names the controller's request by its correlation id.
        assert re.search(rf"INFO \[Broker id={controller_id}\] Handled LeaderAndIsr request correlationId \d+ from "
                         rf"controller {controller_id} epoch \d+: audit-0 is now (leader|follower) with leader epoch 0, "
                         r"isr \[\d, \d\] \(state\.change\.logger\)$", state, re.M)
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)
