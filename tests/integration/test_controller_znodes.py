"""Znodes a Kafka 2.8 controller writes beyond partition states: topic ids and /feature."""
from __future__ import annotations

import io
import json

from kazoo.client import KazooClient

from kafkalike.cli.topics import main as kafka_topics
from kafkalike.zkdata import uuid_from_base64
from tests.integration.test_kafka_topics import eventually

ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def topics(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert kafka_topics(list(argv), out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def test_a_topic_created_through_zookeeper_gets_a_topic_id_from_the_controller(fresh_broker, zk_chroot):
    topics("--zookeeper", zk_chroot, "--create", "--topic", "legacy", "--partitions", "1",
           "--replication-factor", "1")
    zk = KazooClient(hosts=zk_chroot)
    zk.start(timeout=15)
    try:
        def written_id():
            value = json.loads(zk.get("/brokers/topics/legacy")[0])
            return value.get("topic_id")
        topic_id = eventually(written_id)
        assert topic_id and uuid_from_base64(topic_id).int != 0
        assert json.loads(zk.get("/brokers/topics/legacy")[0])["partitions"] == {"0": [0]}
        def described() -> str:
            """The describe output once the broker's metadata carries the id ("" before)."""
            out, err = io.StringIO(), io.StringIO()
            kafka_topics(["--bootstrap-server", fresh_broker.bootstrap, "--describe", "--topic", "legacy"],
                         out=out, err=err)
            return out.getvalue() if out.getvalue().startswith(f"Topic: legacy\tTopicId: {topic_id}") else ""
        described = eventually(described)
        assert described, "brokers never learned the topic id"
        assert ZERO_ID not in described
        # The controller enabled feature versioning, as 2.8's does by default.
        assert zk.get("/feature")[0] == b'{"version":1,"status":1,"features":{}}'
    finally:
        zk.stop()
        zk.close()
