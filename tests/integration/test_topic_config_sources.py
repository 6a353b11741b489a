"""Where a topic's config values come from, as Kafka 2.8 reports them.

With Kafka's stock server.properties (log.retention.hours=168, log.segment.bytes=1073741824)
`kafka-topics.sh --describe` lists segment.bytes among a new topic's configs but not
retention.ms: Kafka's synonym rule drops log.retention.hours when describing
log.retention.ms, so retention.ms reads as a default.
"""
from __future__ import annotations

import io

from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from kafkalike.cli.topics import main as kafka_topics
from kafkalike.lab.cluster import Cluster


def test_stock_server_properties_show_segment_bytes_but_not_retention_ms(zk_chroot, shm_path):
    cluster = Cluster(zk_chroot, shm_path, 1, {"log.retention.hours": "168", "log.segment.bytes": "1073741824"})
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("stock", 1, 1)])["stock"].result(20)
        out, err = io.StringIO(), io.StringIO()
        assert kafka_topics(["--bootstrap-server", cluster.bootstrap, "--describe", "--topic", "stock"],
                            out=out, err=err) == 0, err.getvalue()
        head = out.getvalue().splitlines()[0]
        assert head.endswith("\tConfigs: segment.bytes=1073741824"), head
        resource = ConfigResource("topic", "stock")
        entries = admin.describe_configs([resource])[resource].result(20)
        assert entries["retention.ms"].value == "604800000"
        assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
        assert entries["segment.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    finally:
        cluster.kill()
