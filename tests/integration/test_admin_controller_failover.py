"""An admin call to the controller survives the controller's death, as Java's AdminClient.

A call that goes to the controller (topic creation, reassignments, elections) and finds it
gone asks for metadata again on its next try, so it reaches the new controller once
ZooKeeper has expired the old one's session, rather than knocking on the dead one until
the call's timeout (60 s).
"""
from __future__ import annotations

import shutil
import time

import pytest

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import Cluster
from tests.conftest import scratch_dir
from tests.fault.cluster_view import ZooKeeperView
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 6000


def test_a_controller_call_follows_the_controller_after_kill_9(zk_chroot):
    base = scratch_dir("admin-failover")
    cluster = Cluster(zk_chroot, base, 3, {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    zk = None
    try:
        cluster.start()
        zk = ZooKeeperView(zk_chroot)
        old = zk.controller()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        assert admin.list_partition_reassignments() == {}     # knows the controller now
        cluster.broker(old).kill()
        began = time.monotonic()
        admin.create_topics([NewTopic("after-failover", 3, 2)])
        took = time.monotonic() - began
        assert zk.controller() not in (None, old)
        assert took < SESSION_TIMEOUT_MS / 1000 + 15, f"the call took {took:.1f} s"
        wait_until(lambda: "after-failover" in [t.name for t in admin.list_topics()], 30, "the topic created")
        admin.close()
    finally:
        if zk is not None:
            zk.close()
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)
