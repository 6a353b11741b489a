"""`kafkalike-lab.sh up --spark`: a Spark standalone master and worker as nodes of the lab.

The lab (ZooKeeper and one broker: the Spark part is what is under test) runs in a
scratch directory on free ports; `status` must show the master and its worker alive and
the master must say so itself (its web UI's /json); `down` must leave no Spark process
(daemons, executors) and no directory. The finalizer runs `down` and kill -9s anything
still naming the lab directory.
"""
from __future__ import annotations

import os

from kafkalike.lab.processes import is_alive, processes_mentioning
from kafkalike.lab.spark import master_json
from tests.lab_cli import LabUnderTest, one_line_error


def test_up_spark_starts_a_master_and_worker_shown_in_status_and_stopped_by_down():
    lab = LabUnderTest.create()
    try:
        # Other backends refuse at once, naming the backend, and start nothing.
        refused = lab.run("up", "--backend", "netns", "--spark")
        one_line_error(refused, "--spark runs on the local backend only", "--backend netns", code=2)
        assert not (lab.dir / "lab.json").exists()

        up = lab.up("--brokers", "1", "--spark", timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        assert "Spark master at spark://127.0.0.1:" in up.stdout and "with 1 worker ALIVE" in up.stdout

        status = lab.status()
        spark_nodes = {n["name"]: n for n in status["nodes"] if n["kind"] == "spark"}
        assert set(spark_nodes) == {"spark-master", "spark-worker-1"}, status["nodes"]
        assert all(n["alive"] and n["pid"] for n in spark_nodes.values()), spark_nodes
        assert status["spark"]["master_url"].startswith("spark://127.0.0.1:")
        assert status["spark"]["status"] == "ALIVE" and status["spark"]["workers_alive"] == 1
        # The master's own account: one ALIVE worker at the address status shows.
        answer = master_json(status["spark"]["web_url"])
        assert answer is not None and answer["status"] == "ALIVE"
        workers = [w for w in answer["workers"] if w["state"] == "ALIVE"]
        assert len(workers) == 1 and workers[0]["port"] == int(spark_nodes["spark-worker-1"]["address"].split(":")[1])
        table = lab.run("status").stdout
        assert "spark-master" in table and "spark-worker-1" in table and "1 worker(s) ALIVE" in table

        pids = [n["pid"] for n in spark_nodes.values()]
        down = lab.run("down")
        assert down.returncode == 0, down.stderr
        assert "spark-master" in down.stdout and "spark-worker-1" in down.stdout
        assert not any(is_alive(pid) for pid in pids)
        assert not list(processes_mentioning(str(lab.dir) + os.sep))
        assert not lab.dir.exists()
    finally:
        lab.teardown()
