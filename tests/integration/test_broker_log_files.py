"""A real broker writes Kafka 2.8's log files, read from the log4j.properties KAFKA_LOG4J_OPTS
names: the lines an operator greps for (started, controller election, partition state
changes, log recovery after kill -9, shutting down) in the files and under the logger
names Kafka uses, and the file's own choices (here: the controller's file renamed)."""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import Cluster
from tests.conftest import scratch_dir

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


def test_a_broker_writes_kafkas_log_files_from_its_log4j_properties(zk_chroot, kazoo_client, monkeypatch):
    base = scratch_dir("logfiles")
    own = base / "log4j.properties"
    stock = (REPO / "config" / "log4j.properties").read_text()
    own.write_text(stock.replace("${kafka.logs.dir}/controller.log", "${kafka.logs.dir}/my-controller.log"))
    monkeypatch.setenv("KAFKA_LOG4J_OPTS", f"-Dlog4j.configuration=file:{own}")
    cluster = Cluster(zk_chroot, base, 1, {"zookeeper.session.timeout.ms": "6000"})
    broker = cluster.brokers[0]
    logs = broker.app_log_dir
    try:
        cluster.start()
        with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_topics([NewTopic("audit", 1, 1)])
        wait_for(logs / "state-change.log", "Changed partition audit-0 from NewPartition to OnlinePartition")
        broker.kill()
        deadline = time.monotonic() + 30           # its registration goes with its session
        while kazoo_client.exists("/brokers/ids/0") and time.monotonic() < deadline:
            time.sleep(0.2)
        broker.start()
        broker.wait_ready()
        broker.stop()

        server = read(logs / "server.log")
        stamp = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] "
        assert re.search(stamp + r"INFO \[KafkaServer id=0\] started \(kafka\.server\.KafkaServer\)$", server, re.M)
        assert re.search(stamp + r"INFO \[KafkaServer id=0\] shutting down \(kafka\.server\.KafkaServer\)$", server,
                         re.M)
        assert "[KafkaServer id=0] shut down completed (kafka.server.KafkaServer)" in server
        # After kill -9: LogManager's recovery and the log's own lines, under Kafka's logger names.
        assert re.search(r"INFO Attempting recovery for all logs in \S+ since no clean shutdown file was found "
                         r"\(kafka\.log\.LogManager\)$", server, re.M)
        assert re.search(r"Recovering unflushed segment 0 \(kafka\.log\.Log\)$", server, re.M)
        assert re.search(r"\(org\.apache\.zookeeper\.\w+\)$", server, re.M)
        assert "(kafkalike." not in server and "(kazoo" not in server
        # The controller's lines went to the file this log4j.properties names, and nowhere else.
        assert not (logs / "controller.log").exists()
        controller = read(logs / "my-controller.log")
        assert re.search(stamp + r"INFO \[Controller id=0\] 0 successfully elected as the controller\. Epoch "
                         r"incremented to \d+ and epoch zk version is now \d+ \(kafka\.controller\.KafkaController\)$",
                         controller, re.M)
        assert "(kafka.controller.KafkaController)" not in server
        state = read(logs / "state-change.log")
        assert re.search(r"INFO \[Controller id=0 epoch=\d+\] Changed partition audit-0 from NewPartition to "
                         r"OnlinePartition with state LeaderAndIsr\(leader=0, .*\) \(state\.change\.logger\)$",
                         state, re.M)
        for name in ("log-cleaner.log", "kafka-request.log", "kafka-authorizer.log"):
            assert (logs / name).exists(), name
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)
