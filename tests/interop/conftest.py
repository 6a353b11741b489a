"""Fixtures for the interop tier: brokers that third-party clients talk to.

A module uses either `broker` (from tests/conftest.py, auto-creation on, as Kafka ships)
or `strict_broker` (auto.create.topics.enable=false), never both: they would share the
module's ZooKeeper chroot and both be broker 0.
"""
from __future__ import annotations

import shutil
import uuid
from typing import Iterator

import pytest

from kafkalike.lab.cluster import BrokerProcess, Cluster
from tests.conftest import scratch_dir


@pytest.fixture(scope="module")
def strict_broker(module_zk_chroot: str) -> Iterator[BrokerProcess]:
    """One broker for the module that refuses to create topics on a client's say-so.

    Error paths (UNKNOWN_TOPIC_OR_PARTITION on produce) need it; every test in such a
    module creates its topics explicitly through an admin client, as users of a locked
    down cluster do.
    """
    base = scratch_dir("interop")
    cluster = Cluster(module_zk_chroot, base, 1, {"auto.create.topics.enable": "false"})
    try:
        cluster.start()
        yield cluster.brokers[0]
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test uses: the test's name plus a random suffix."""
    stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in request.node.name)[:150]
    return f"{stem}-{uuid.uuid4().hex[:8]}"
