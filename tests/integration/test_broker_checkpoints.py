"""A running broker writes its checkpoint files on schedule, off the reactor thread.

After kill -9 these files are all a restarted broker has to go on: the high watermark it
may serve from before its followers catch up, and where log recovery starts.
"""
from __future__ import annotations

import shutil
import time

import pytest
from confluent_kafka import Producer

from kafkalike.lab.cluster import Cluster
from tests.conftest import scratch_dir
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def test_a_running_broker_checkpoints_high_watermarks_and_recovery_points(zk_chroot):
    base = scratch_dir("checkpoints")
    cluster = Cluster(zk_chroot, base, 1, {"replica.high.watermark.checkpoint.interval.ms": "200",
                                           "log.flush.offset.checkpoint.interval.ms": "200",
                                           "log.flush.interval.messages": "1"})
    try:
        cluster.start()
        broker = cluster.brokers[0]
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        for i in range(10):
            producer.produce("checkpointed", value=b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        data = broker.log_dir

        def entry(name: str) -> str | None:
            path = data / name
            lines = path.read_text().splitlines() if path.exists() else []
            return next((line for line in lines if line.startswith("checkpointed 0 ")), None)
        started = time.monotonic()
        assert wait_until(lambda: entry("replication-offset-checkpoint") == "checkpointed 0 10", 10,
                          what="the high watermark checkpointed")
        assert wait_until(lambda: entry("recovery-point-offset-checkpoint") == "checkpointed 0 10", 10,
                          what="the recovery point checkpointed")
        assert entry("log-start-offset-checkpoint") == "checkpointed 0 0"
        assert time.monotonic() - started < 10
        assert broker.is_running()
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)
