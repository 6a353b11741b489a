"""The kafkalike clients' metrics() against a real broker: Java's names, groups and tags,
and values a user can check (records sent, errors, lag after a known backlog, commits).
"""
from __future__ import annotations

import math
import re
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.consumer import KafkaConsumer, TopicPartition
from kafkalike.client.errors import KafkaError
from kafkalike.client.producer import KafkaProducer

pytestmark = pytest.mark.integration


def new_topic(bootstrap: str, partitions: int = 1, config: dict | None = None) -> str:
    name = f"metrics-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1, config=config or {})],
                                      operation_timeout=30).values():
        future.result()
    return name


def value(metrics: dict, name: str, group: str, **tags: str) -> float:
    """A metric by Java's (name, group, tags); fails listing what is there when missing."""
    for metric_name, metric in metrics.items():
        if metric_name.name == name and metric_name.group == group and \
                all(metric_name.tags_dict.get(k) == v for k, v in tags.items()) and \
                set(metric_name.tags_dict) == {"client-id", *tags}:
            return metric.metric_value()
    raise AssertionError(f"{group}:{name}{tags} missing; have "
                         f"{sorted((n.group, n.name) for n in metrics)}")


def test_producer_metrics_count_what_was_sent(broker):
    topic = new_topic(broker.bootstrap, 3)
    producer = KafkaProducer({"bootstrap.servers": broker.bootstrap, "client.id": "metrics-p", "linger.ms": 5,
                              "compression.type": "gzip"})
    try:
        for i in range(300):
            producer.send(topic, b"value-%d" % i * 4, key=b"k%d" % i)
        producer.flush(30)
        metrics = producer.metrics()
        g = "producer-metrics"
        assert all(n.tags_dict["client-id"] == "metrics-p" for n in metrics)
        assert value(metrics, "record-send-total", g) == 300
        assert value(metrics, "record-send-total", "producer-topic-metrics", topic=topic) == 300
        assert value(metrics, "record-send-rate", g) > 0
        assert value(metrics, "record-error-total", g) == 0
        assert value(metrics, "record-retry-total", g) == 0
        assert value(metrics, "request-latency-avg", g) > 0
        assert value(metrics, "request-latency-max", g) >= value(metrics, "request-latency-avg", g)
        assert value(metrics, "batch-size-avg", g) > 0
        assert value(metrics, "record-queue-time-avg", g) >= 0
        assert 0 < value(metrics, "compression-rate-avg", g) < 1  # gzip of repetitive values
        assert value(metrics, "records-per-request-avg", g) >= 1
        assert value(metrics, "outgoing-byte-total", g) > value(metrics, "byte-total", "producer-topic-metrics",
                                                                topic=topic) > 0
        assert value(metrics, "request-total", g) >= 1
        assert value(metrics, "incoming-byte-rate", g) > 0
        assert value(metrics, "buffer-total-bytes", g) == 33554432
        assert value(metrics, "buffer-available-bytes", g) == 33554432  # everything acknowledged
        assert value(metrics, "requests-in-flight", g) == 0
    finally:
        producer.close()


def test_producer_record_errors_are_counted(broker):
    topic = new_topic(broker.bootstrap, 1, {"max.message.bytes": "200"})
    producer = KafkaProducer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    try:
        future = producer.send(topic, b"x" * 1000)
        with pytest.raises(KafkaError):
            future.get(30)
        ok = producer.send(topic, b"small")
        ok.get(30)
        metrics = producer.metrics()
        assert value(metrics, "record-error-total", "producer-metrics") == 1
        assert value(metrics, "record-error-total", "producer-topic-metrics", topic=topic) == 1
        assert value(metrics, "record-send-total", "producer-metrics") == 2
    finally:
        producer.close()


def test_consumer_lag_and_consumed_records(broker):
    topic = new_topic(broker.bootstrap, 1)
    with KafkaProducer({"bootstrap.servers": broker.bootstrap}) as producer:
        for i in range(100):
            producer.send(topic, b"%d" % i)
        producer.flush(30)
    consumer = KafkaConsumer({"bootstrap.servers": broker.bootstrap, "client.id": "metrics-c",
                              "max.poll.records": 10, "auto.offset.reset": "earliest"})
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        got = []
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            got = consumer.poll(0.5)
        assert len(got) == 10
        metrics = consumer.metrics()
        g = "consumer-fetch-manager-metrics"
        assert value(metrics, "records-lag-max", g) == 90
        assert value(metrics, "records-lag", g, topic=topic, partition="0") == 90
        assert value(metrics, "records-lead", g, topic=topic, partition="0") == 10
        assert value(metrics, "records-consumed-total", g) == 10
        assert value(metrics, "records-consumed-total", g, topic=topic) == 10
        assert value(metrics, "bytes-consumed-total", g) > 0
        assert value(metrics, "fetch-latency-avg", g) >= 0
        assert value(metrics, "fetch-total", g) >= 1
        assert value(metrics, "outgoing-byte-total", "consumer-metrics") > 0
        while len(got) < 100 and time.monotonic() < deadline:
            got.extend(consumer.poll(0.5))
        assert len(got) == 100
        assert value(consumer.metrics(), "records-lag", g, topic=topic, partition="0") == 0
        consumer.assign([])
        names = {(n.name, n.tags_dict.get("topic")) for n in consumer.metrics()}
        assert ("records-lag", topic) not in names  # removed with the assignment, as in Java
    finally:
        consumer.close()


def test_consumer_coordinator_metrics(broker):
    topic = new_topic(broker.bootstrap, 2)
    with KafkaProducer({"bootstrap.servers": broker.bootstrap}) as producer:
        producer.send(topic, b"one", partition=0).get(30)
    consumer = KafkaConsumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                              "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        got = []
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            got = consumer.poll(0.5)
        assert got
        consumer.commit_sync()
        metrics = consumer.metrics()
        g = "consumer-coordinator-metrics"
        assert value(metrics, "rebalance-total", g) == 1
        # The first JoinGroup of a dynamic member is answered MEMBER_ID_REQUIRED, which Java's
        # coordinator counts as a failed rebalance too (and so would a COORDINATOR_LOAD_IN_PROGRESS
        # while a new __consumer_offsets partition loads).
        assert value(metrics, "failed-rebalance-total", g) >= 1
        assert value(metrics, "commit-total", g) == 1
        assert value(metrics, "commit-latency-avg", g) > 0
        assert value(metrics, "join-total", g) == 1
        assert value(metrics, "sync-total", g) == 1
        assert value(metrics, "rebalance-latency-max", g) > 0
        assert value(metrics, "assigned-partitions", g) == 2
        assert 0 <= value(metrics, "last-rebalance-seconds-ago", g) < 30
        assert not math.isnan(value(metrics, "records-lag-max", "consumer-fetch-manager-metrics"))
    finally:
        consumer.close()


def test_perf_tools_print_metrics_as_java_does(broker):
    """--print-metrics: ToolsUtils.printMetrics' table, `group:name:{tags}` : value."""
    import subprocess
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    topic = new_topic(broker.bootstrap, 1)
    produced = subprocess.run([str(repo / "bin" / "kafka-producer-perf-test.sh"), "--topic", topic, "--num-records",
                               "500", "--record-size", "100", "--throughput", "-1", "--producer-props",
                               f"bootstrap.servers={broker.bootstrap}", "client.id=perf-p", "--print-metrics"],
                              capture_output=True, text=True, timeout=120)
    assert produced.returncode == 0, produced.stderr
    assert "\nMetric Name" in produced.stdout
    assert re.search(r"^producer-metrics:record-send-total:\{client-id=perf-p\} +: 500\.000$", produced.stdout, re.M)
    consumed = subprocess.run([str(repo / "bin" / "kafka-consumer-perf-test.sh"), "--bootstrap-server",
                               broker.bootstrap, "--topic", topic, "--messages", "500", "--print-metrics"],
                              capture_output=True, text=True, timeout=120)
    assert consumed.returncode == 0, consumed.stderr
    assert re.search(r"^consumer-fetch-manager-metrics:records-consumed-total:\{client-id=[^}]+\} +: 500\.000$",
                     consumed.stdout, re.M), consumed.stdout
