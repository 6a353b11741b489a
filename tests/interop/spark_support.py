"""What the Spark connector tests share: topics and records made with third-party clients
(confluent-kafka, kcat), reads through format("kafkalike"), and the checks a user makes.

The judges are never kafkalike's own client: records go in with confluent-kafka or kcat
and come back out with them, so the connector is held to what other Kafka clients see.
"""
from __future__ import annotations

import shutil
import subprocess
import uuid
from dataclasses import dataclass

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalike.spark
from tests.waiting import wait_until

FORMAT = kafkalike.spark.FORMAT
KCAT = shutil.which("kcat")
# Spark's Kafka schema, as Spark itself prints it (every column nullable).
SPARK_SCHEMA = ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
                "timestampType:int>")
HEADERS_TYPE = "array<struct<key:string,value:binary>>"
# Rows as a user compares them: the timestamp as epoch milliseconds, exactly.
ROW_COLUMNS = ["key", "value", "topic", "partition", "offset", "unix_millis(timestamp) AS ts", "timestampType"]


@dataclass(frozen=True)
class Rec:
    """One record as a test produces or expects it."""
    key: bytes | None
    value: bytes | None
    partition: int = 0
    timestamp: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] | None = None


def unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


_REGISTERED: set[int] = set()


def registered(spark):
    """The shared session with format("kafkalike") registered (once per session)."""
    if id(spark) not in _REGISTERED:
        kafkalike.spark.register(spark)
        _REGISTERED.add(id(spark))
    return spark


def create_topic(bootstrap: str, name: str, partitions: int = 1, replication: int = 1,
                 config: dict[str, str] | None = None) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, replication, config=config or {})],
                                      operation_timeout=20).values():
        future.result()
    return name


def produce(bootstrap: str, topic: str, records, **config) -> list[tuple[int, int]]:
    """Produce with confluent-kafka (librdkafka), flush, and return (partition, offset) each."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    reports: list = [None] * len(records)

    def on_delivery(index):
        def done(err, msg):
            reports[index] = err if err is not None else (msg.partition(), msg.offset())
        return done

    for i, rec in enumerate(records):
        producer.produce(topic, key=rec.key, value=rec.value, partition=rec.partition,
                         headers=list(rec.headers) if rec.headers else None,
                         timestamp=rec.timestamp or 0, on_delivery=on_delivery(i))
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0, "confluent-kafka could not deliver every record"
    errors = [r for r in reports if not isinstance(r, tuple)]
    assert not errors, f"delivery failed: {errors[:3]}"
    return reports


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 30) -> list:
    """Every record of the topic as confluent-kafka reads it (assign, from the beginning)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("judge"), "enable.auto.commit": False,
                         "enable.auto.offset.store": False})
    out: list = []
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])

        def fetch_more():
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                out.append(msg)
            return len(out) >= expected
        wait_until(fetch_more, timeout, interval=0, what=f"{expected} records of {topic}")
        assert not consumer.consume(1000, timeout=0.3), "more records than expected"
        return out
    finally:
        consumer.close()


def reader(spark, bootstrap: str, **options):
    """spark.read.format("kafkalike") with kafka.bootstrap.servers and `options`."""
    r = registered(spark).read.format(FORMAT).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        r = r.option(key, str(value))
    return r


def rows(df) -> list[tuple]:
    """(key, value, topic, partition, offset, ts_ms, timestampType[, headers]) sorted by
    (topic, partition, offset); headers as tuples of (key, value) or None."""
    columns = ROW_COLUMNS + (["headers"] if "headers" in df.columns else [])
    out = []
    for row in df.selectExpr(*columns).collect():
        values = list(row)
        values[0] = None if values[0] is None else bytes(values[0])
        values[1] = None if values[1] is None else bytes(values[1])
        if len(values) > 7:
            values[7] = None if values[7] is None else tuple(
                (h["key"], None if h["value"] is None else bytes(h["value"])) for h in values[7])
        out.append(tuple(values))
    return sorted(out, key=lambda r: (r[2], r[3], r[4]))


def spark_error_text(excinfo) -> str:
    """The whole text Spark raised (Python data source errors carry the worker's traceback)."""
    exc = excinfo.value
    parts = [str(exc)]
    for attr in ("getMessage", "desc"):
        value = getattr(exc, attr, None)
        if callable(value):
            try:
                parts.append(str(value()))
            except Exception:  # noqa: BLE001 - best effort, the str() above is the main text
                pass
        elif value:
            parts.append(str(value))
    return "\n".join(parts)


def failure_and_jobs(spark, action) -> tuple[str, list[int]]:
    """Run `action`, which must raise, under a job group of its own: the error text and the
    Spark jobs it started (none when it failed while planning on the driver)."""
    sc = spark.sparkContext
    group = unique("driver-check")
    sc.setJobGroup(group, "must fail")
    try:
        with pytest.raises(Exception) as excinfo:
            action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return spark_error_text(excinfo), list(sc.statusTracker().getJobIdsForGroup(group))


def fails_on_driver(spark, action) -> str:
    """Run `action`, which must raise; assert it raised on the driver, before any Spark job
    (so before any task) started. Returns the error text."""
    message, jobs = failure_and_jobs(spark, action)
    assert jobs == [], f"the error came from a job ({jobs}), not from planning on the driver:\n{message[:2000]}"
    return message


def kcat(*args: str, data: bytes | None = None, timeout: float = 60) -> bytes:
    assert KCAT, "kcat is not installed (apt-get install kcat)"
    proc = subprocess.run([KCAT, *args], input=data, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, \
        f"kcat {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}"
    return proc.stdout


# One line of metadata per record (partition, offset, timestamp, key length, value length),
# then exactly the key's and the value's bytes: binary-exact, as %K/%S say how long each is
# (-1 for null). Headers are left to confluent-kafka: kcat prints them raw, newlines and all.
KCAT_FORMAT = r"%p %o %T %K %S\n%k%s\n"


def kcat_consume(bootstrap: str, topic: str) -> list[tuple[int, int, int, bytes | None, bytes | None]]:
    """(partition, offset, timestamp, key, value) of every record, as kcat reads them."""
    out = kcat("-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", KCAT_FORMAT)
    records, pos = [], 0
    while pos < len(out):
        eol = out.index(b"\n", pos)
        partition, offset, ts, klen, vlen = (int(f) for f in out[pos:eol].split(b" "))
        pos = eol + 1
        key = None if klen < 0 else out[pos:pos + klen]
        pos += max(klen, 0)
        value = None if vlen < 0 else out[pos:pos + vlen]
        pos += max(vlen, 0)
        assert out[pos:pos + 1] == b"\n", f"kcat output out of step at byte {pos}"
        pos += 1
        records.append((partition, offset, ts, key, value))
    return sorted(records)
