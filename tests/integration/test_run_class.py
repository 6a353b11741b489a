"""bin/kafka-run-class.sh: Kafka's class names run the tools behind bin/, on a real broker."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-run-class.sh"), *args], capture_output=True, text=True,
                          timeout=60, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


def test_classes_run_their_tools(broker):
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic("runclass", 1, 1)])
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("runclass", value=b"hello")
    assert producer.flush(30) == 0
    done = run("kafka.admin.TopicCommand", "--bootstrap-server", broker.bootstrap, "--list")
    assert (done.returncode, done.stdout) == (0, "runclass\n"), done.stderr
    segment = broker.log_dir / "runclass-0" / "00000000000000000000.log"
    done = run("kafka.tools.DumpLogSegments", "--files", str(segment))
    assert done.returncode == 0 and done.stdout.startswith(f"Dumping {segment}\n"), done.stderr
    assert "baseOffset: 0 lastOffset: 0 count: 1" in done.stdout
    done = run("kafka.admin.LogDirsCommand", "--bootstrap-server", broker.bootstrap, "--describe")
    assert done.returncode == 0 and '"partition":"runclass-0"' in done.stdout
    done = run("kafka.admin.BrokerApiVersionsCommand", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0 and "\tProduce(0): 0 to 9 [usable: 9],\n" in done.stdout
    done = run("kafka.tools.ClusterTool", "cluster-id", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0 and done.stdout.startswith("Cluster ID: "), done.stderr
    done = run("kafka.admin.FeatureCommand", "--describe", "--bootstrap-server", broker.bootstrap)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    done = run("kafka.admin.ZkSecurityMigrator", "--zookeeper.acl", "secure")
    assert done.returncode == 1 and done.stderr.startswith("ERROR: No JAAS configuration file has been specified")


def test_unknown_class_fails_as_the_jvm_does():
    done = run("kafka.tools.NoSuchTool", "--help")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("Error: Could not find or load main class kafka.tools.NoSuchTool\n"
                           "Caused by: java.lang.ClassNotFoundException: kafka.tools.NoSuchTool\n")


def test_no_class_prints_the_usage():
    done = run()
    assert done.returncode == 1
    assert done.stdout.endswith("kafka-run-class.sh [-daemon] [-name servicename] [-loggc] classname [opts]\n")


def test_version_through_a_class_name():
    done = run("-name", "x", "-loggc", "kafka.admin.DeleteRecordsCommand", "--version")
    assert (done.returncode, done.stdout.split(" ")[0]) == (0, "2.8.0")
