"""Clients from before record batch v2 against one broker: Produce v0-2, Fetch v0-3, magic 0 and 1.

kafka-python pinned to an old broker version speaks that version's protocol:
api_version=(0, 9) is Produce v1 / Fetch v1 with magic 0 message sets, (0, 10) Produce
v2 / Fetch v2 and (0, 10, 1) Produce v2 / Fetch v3 with magic 1. librdkafka
(confluent-kafka, kcat) with api.version.request=false and broker.version.fallback=0.9.0
speaks 0.9's (magic 0). Kafka 2.8 serves them all, converting on the way in and out;
records cross between old and new clients with keys, values and offsets intact, and
timestamps wherever the older side's format has them. kafka-python's own legacy record
code judges the bytes the broker writes for them.

Topics whose message.format.version predates 0.11 (last test, three brokers) hold magic 1
or magic 0 entries in their logs, as Kafka 2.8's do: on every replica, after a follower's
crash and recovery, and as kafka-dump-log shows them.
"""
from __future__ import annotations

import subprocess
import time

import pytest
from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, TIMESTAMP_NOT_AVAILABLE, Consumer,
                             Producer, TopicPartition as CKTopicPartition)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.memory_records import MemoryRecords

from kafkalike.records import GZIP, LZ4, NONE, SNAPPY, Record, decode_batches, encode_batch
from kafkalike.records.legacy import encode_legacy_records
from kafkalike.records.message_format import down_convert
from tests.interop.samples import batches_on_disk, binary_samples
from tests.waiting import wait_until

pytestmark = pytest.mark.interop

BASE_TS = 1_650_000_000_000
COUNT = 300
LEGACY_CODECS = ["none", "gzip", "snappy", "lz4"]
# librdkafka before KIP-35: no ApiVersions, the 0.9 protocol (Produce v1, Fetch v1, magic 0).
LIBRDKAFKA_09 = {"api.version.request": False, "broker.version.fallback": "0.9.0"}
KCAT_09 = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"]


@pytest.fixture(scope="module")
def admin(strict_broker):
    client = KafkaAdminClient(bootstrap_servers=strict_broker.bootstrap)
    yield client
    client.close()


def create_topic(admin, name: str, partitions: int = 1) -> None:
    admin.create_topics([NewTopic(name, partitions, 1)])


def has_timestamps(api_version) -> bool:
    return api_version >= (0, 10)


def old_producer(bootstrap: str, api_version, **config) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version, linger_ms=10, **config)


def read_kafka_python(bootstrap: str, topic: str, count: int, **config) -> list:
    """(offset, timestamp, key, value, headers) of `count` records, from the beginning of partition 0."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)
    out: list = []
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        wait_until(lambda: out.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers))
                                      for rs in c.poll(timeout_ms=200).values() for r in rs)
                   or len(out) >= count, timeout=30, what=f"{count} records of {topic}")
    finally:
        c.close()
    return out


def read_librdkafka(bootstrap: str, topic: str, count: int, **config) -> list:
    """(offset, (timestamp type, timestamp), key, value) of `count` records from partition 0."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "assign-only", "enable.auto.commit": False,
                  **config})
    out: list = []
    try:
        c.assign([CKTopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            assert m.error() is None, m.error()
            out.append((m.offset(), m.timestamp(), m.key(), m.value()))
    finally:
        c.close()
    assert len(out) == count, f"read {len(out)} of {count} records of {topic}"
    return out


def samples(seed: int):
    # Old formats have no headers.
    return binary_samples(COUNT, seed=seed, base_timestamp=BASE_TS, with_headers=False)


def test_the_pinned_versions_speak_the_old_protocol():
    # What kafka-python sends for each api_version (Produce key 0, Fetch key 1): the
    # old versions this module is about, never v3+ / v4+.
    assert (BROKER_API_VERSIONS[(0, 9)][0], BROKER_API_VERSIONS[(0, 9)][1]) == ((0, 1), (0, 1))
    assert (BROKER_API_VERSIONS[(0, 10, 0)][0], BROKER_API_VERSIONS[(0, 10, 0)][1]) == ((0, 2), (0, 2))
    assert (BROKER_API_VERSIONS[(0, 10, 1)][0], BROKER_API_VERSIONS[(0, 10, 1)][1]) == ((0, 2), (0, 3))


@pytest.mark.parametrize("api_version,codec", [((0, 9), c) for c in LEGACY_CODECS]
                         + [((0, 10, 1), c) for c in LEGACY_CODECS] + [((0, 10), "gzip")])
def test_kafka_python_old_producer_and_consumer(strict_broker, admin, topic_name, api_version, codec):
    create_topic(admin, topic_name)
    sent = samples(seed=len(topic_name))
    p = old_producer(strict_broker.bootstrap, api_version, compression_type=None if codec == "none" else codec)
    futures = [p.send(topic_name, key=s.key, value=s.value, timestamp_ms=s.timestamp) for s in sent]
    p.flush(30)
    offsets = [f.get(timeout=30).offset for f in futures]
    p.close()
    assert offsets == list(range(COUNT))
    ts = has_timestamps(api_version)

    # Stored as record batch v2 in the producer's codec; magic 0 carried no timestamps.
    stored = batches_on_disk(strict_broker.log_dir, topic_name)
    assert {(b.magic, b.compression_type) for b in stored} == {(2, LEGACY_CODECS.index(codec))}
    assert [r.timestamp for b in stored for r in b] == [s.timestamp if ts else -1 for s in sent]

    # The old consumer reads what the old producer wrote.
    old = read_kafka_python(strict_broker.bootstrap, topic_name, COUNT, api_version=api_version)
    assert [(o, k, v) for o, _, k, v, _ in old] == [(i, s.key, s.value) for i, s in enumerate(sent)]
    assert [t for _, t, *_ in old] == ([s.timestamp for s in sent] if ts else [None] * COUNT)
    # ...and so does a current client, through Fetch v4+.
    new = read_kafka_python(strict_broker.bootstrap, topic_name, COUNT)
    assert [(o, t, k, v) for o, t, k, v, _ in new] == \
        [(i, s.timestamp if ts else -1, s.key, s.value) for i, s in enumerate(sent)]


def test_current_producers_records_reach_old_consumers(strict_broker, admin, topic_name):
    """Idempotent, with headers, in several batches and codecs: old consumers get keys,
    values and offsets, timestamps where their format has them, and no headers."""
    create_topic(admin, topic_name)
    sent = binary_samples(COUNT, seed=5, base_timestamp=BASE_TS)
    for i, codec in enumerate(["lz4", None, "gzip"]):
        p = KafkaProducer(bootstrap_servers=strict_broker.bootstrap, compression_type=codec, linger_ms=5)
        for s in sent[i * 100:(i + 1) * 100]:
            p.send(topic_name, key=s.key, value=s.value, headers=s.headers, timestamp_ms=s.timestamp)
        p.flush(30)
        p.close()
    expected = [(i, s.timestamp, s.key, s.value) for i, s in enumerate(sent)]
    for api_version in [(0, 9), (0, 10), (0, 10, 1)]:
        got = read_kafka_python(strict_broker.bootstrap, topic_name, COUNT, api_version=api_version)
        ts = has_timestamps(api_version)
        assert [(o, t, k, v) for o, t, k, v, _ in got] == \
            [(o, t if ts else None, k, v) for o, t, k, v in expected], api_version
        assert all(h == [] for *_, h in got)
    got = read_librdkafka(strict_broker.bootstrap, topic_name, COUNT, **LIBRDKAFKA_09)
    assert got == [(o, (TIMESTAMP_NOT_AVAILABLE, 0), k, v) for o, _, k, v in expected]


def test_kafka_python_old_consumer_group(strict_broker, admin, topic_name):
    """A 0.10.1 consumer in a group (JoinGroup, SyncGroup, OffsetCommit of that era) reads
    two partitions of converted data and commits where it stopped."""
    create_topic(admin, topic_name, partitions=2)
    p = old_producer(strict_broker.bootstrap, (0, 10, 1))
    for s in samples(seed=7):
        p.send(topic_name, key=s.key, value=s.value, timestamp_ms=s.timestamp)
    p.flush(30)
    p.close()
    group = f"old-{topic_name}"[:200]
    c = KafkaConsumer(topic_name, bootstrap_servers=strict_broker.bootstrap, api_version=(0, 10, 1),
                      group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    seen: list = []
    try:
        wait_until(lambda: seen.extend(r for rs in c.poll(timeout_ms=200).values() for r in rs)
                   or len(seen) >= COUNT, timeout=60, what="the group's records")
        c.commit()
        committed = {tp: c.committed(TopicPartition(topic_name, tp)) for tp in (0, 1)}
    finally:
        c.close()
    assert len(seen) == COUNT and {r.key for r in seen} == {s.key for s in samples(seed=7)}
    assert committed == {tp: sum(1 for r in seen if r.partition == tp) for tp in (0, 1)}


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_librdkafka_09_producer_and_consumer(strict_broker, admin, topic_name, codec):
    create_topic(admin, topic_name)
    sent = samples(seed=11)
    producer = Producer({"bootstrap.servers": strict_broker.bootstrap, "linger.ms": 10,
                         "compression.codec": codec, **LIBRDKAFKA_09})
    reports: list = []
    for s in sent:
        producer.produce(topic_name, key=s.key, value=s.value, timestamp=s.timestamp,
                         on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert producer.flush(30) == 0
    assert sorted(reports) == [(None, i) for i in range(COUNT)]
    # Magic 0: the broker kept no timestamps (which also shows the old format was used).
    stored = batches_on_disk(strict_broker.log_dir, topic_name)
    assert {r.timestamp for b in stored for r in b} == {-1}
    expected = [(i, s.key, s.value) for i, s in enumerate(sent)]
    old = read_librdkafka(strict_broker.bootstrap, topic_name, COUNT, **LIBRDKAFKA_09)
    assert [(o, k, v) for o, _, k, v in old] == expected
    assert {t for _, t, _, _ in old} == {(TIMESTAMP_NOT_AVAILABLE, 0)}
    new = read_librdkafka(strict_broker.bootstrap, topic_name, COUNT)
    assert [(o, k, v) for o, _, k, v in new] == expected
    assert {t for _, t, _, _ in new} == {(TIMESTAMP_CREATE_TIME, -1)}


def test_kcat_09_produces_and_consumes_with_a_current_client(strict_broker, admin, topic_name):
    create_topic(admin, topic_name)
    lines = [b"key%d:value%d" % (i, i) for i in range(50)]
    subprocess.run(["kcat", "-b", strict_broker.bootstrap, "-P", "-t", topic_name, "-K", ":", "-z", "snappy",
                    *KCAT_09], input=b"\n".join(lines) + b"\n", check=True, timeout=60, capture_output=True)
    # A current client adds records with headers and timestamps after kcat's.
    p = Producer({"bootstrap.servers": strict_broker.bootstrap, "linger.ms": 5})
    for i in range(50, 60):
        p.produce(topic_name, key=b"key%d" % i, value=b"value%d" % i, headers=[("h", b"x")],
                  timestamp=BASE_TS + i)
    assert p.flush(30) == 0
    out = subprocess.run(["kcat", "-b", strict_broker.bootstrap, "-C", "-t", topic_name, "-o", "beginning",
                          "-e", "-q", "-f", "%o %k %s\n", *KCAT_09], check=True, timeout=60,
                         capture_output=True).stdout
    assert out.splitlines() == [b"%d key%d value%d" % (i, i, i) for i in range(60)]
    new = read_kafka_python(strict_broker.bootstrap, topic_name, 60)
    assert [(o, k, v) for o, _, k, v, _ in new] == [(i, b"key%d" % i, b"value%d" % i) for i in range(60)]
    assert [t for _, t, *_ in new] == [-1] * 50 + [BASE_TS + i for i in range(50, 60)]


# --------------------------------------------------- the bytes, judged by kafka-python's legacy code


def kafka_python_reads(buf: bytes) -> list:
    records = MemoryRecords(buf)
    out = []
    while records.has_next():
        batch = records.next_batch()
        assert isinstance(batch, LegacyRecordBatch) and batch.validate_crc()
        out.extend((r.offset, r.timestamp, r.key, r.value) for r in batch)
    return out


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4])
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_reads_our_legacy_sets(magic, codec):
    records = [Record(40 + i, BASE_TS + i, b"k%d" % i if i % 2 else None, b"v" * i) for i in range(30)]
    buf = encode_legacy_records(records, magic=magic, compression=codec)
    assert kafka_python_reads(buf) == [(r.offset, r.timestamp if magic else None, r.key, r.value)
                                       for r in records]
    converted = down_convert(encode_batch([(r.key, r.value, None, r.timestamp) for r in records],
                                          base_offset=40, compression=codec), magic, 40)
    assert kafka_python_reads(converted) == kafka_python_reads(buf)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
@pytest.mark.parametrize("magic", [0, 1])
def test_we_read_kafka_pythons_legacy_sets(magic, codec):
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=LEGACY_CODECS.index(codec), batch_size=1 << 20)
    for i in range(30):
        builder.append(i, timestamp=BASE_TS + i, key=b"k%d" % i, value=b"v%d" % i)
    buf = bytes(builder.build())
    (batch,) = decode_batches(buf)
    assert batch.magic == magic and batch.compression == LEGACY_CODECS.index(codec)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == \
        [(i, BASE_TS + i if magic else -1, b"k%d" % i, b"v%d" % i) for i in range(30)]


# ------------------------------------------- topics of an old message format, replicated


def _leader(bootstrap: str, topic: str) -> int:
    meta = Producer({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return meta.topics[topic].partitions[0].leader


def _isr(bootstrap: str, topic: str) -> list[int]:
    meta = Producer({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return sorted(meta.topics[topic].partitions[0].isrs)


def _segment(broker, topic: str):
    return sorted((broker.log_dir / f"{topic}-0").glob("*.log"))[0]


def _dump_log(segment) -> list[str]:
    out = subprocess.run(["bin/kafka-dump-log.sh", "--files", str(segment), "--deep-iteration", "--print-data-log"],
                         check=True, timeout=60, capture_output=True, text=True).stdout
    return out.splitlines()


def _read_kafkalike(bootstrap: str, topic: str, count: int) -> list:
    """(offset, timestamp, timestamp type, key, value) of `count` records, read by kafkalike's consumer."""
    from kafkalike.client.consumer import KafkaConsumer as OwnConsumer
    from kafkalike.client.metadata import TopicPartition as OwnTopicPartition
    out: list = []
    with OwnConsumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False}) as c:
        tp = OwnTopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning([tp])
        wait_until(lambda: out.extend((r.offset, r.timestamp, r.timestamp_type, r.key, r.value)
                                      for r in c.poll(0.2)) or len(out) >= count,
                   timeout=30, what=f"{count} records of {topic} through kafkalike's consumer")
    return out


def test_old_format_topics_store_magic_0_and_1_on_every_replica(kafka_cluster):
    """message.format.version 0.10.2 and 0.9.0: the log holds magic 1 / magic 0 entries, as
    Kafka 2.8's does, whoever produces (confluent-kafka's v2 batches are converted, kafka-python
    0.10's magic 1 sets kept in their format); followers copy them byte for byte, a follower
    killed with a torn tail recovers and catches up, and every client reads the same records."""
    bootstrap = kafka_cluster.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    topics = {1: "fmt-0-10", 0: "fmt-0-9"}
    admin.create_topics([NewTopic(topics[1], 1, 3, topic_configs={"message.format.version": "0.10.2"}),
                         NewTopic(topics[0], 1, 2, topic_configs={"message.format.version": "0.9.0"})])
    admin.close()
    brokers = {b.broker_id: b for b in kafka_cluster.brokers}
    sent = {magic: [] for magic in topics}

    def produce_both(first: int, count: int) -> None:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.codec": "gzip", "acks": "all"})
        kp = old_producer(bootstrap, (0, 10), acks="all", compression_type="snappy")
        half = first + count // 2
        for magic, topic in topics.items():    # confluent-kafka's half first, then kafka-python's
            for i in range(first, first + count):
                key, value, ts = b"k%d" % i, b"v%d" % i * 3, BASE_TS + i
                if i == half:
                    assert p.flush(30) == 0
                if i < half:
                    p.produce(topic, key=key, value=value, timestamp=ts)
                else:
                    kp.send(topic, key=key, value=value, timestamp_ms=ts)
                sent[magic].append((key, value, ts))
            kp.flush(30)
        kp.close()

    produce_both(0, 40)
    # A follower of the magic 0 topic dies; more records come; a torn entry is left at its tail.
    leader0 = _leader(bootstrap, topics[0])
    follower = next(b for b in brokers.values() if b.broker_id != leader0 and (b.log_dir / f"{topics[0]}-0").exists())
    follower.kill()
    produce_both(40, 20)
    with open(_segment(follower, topics[0]), "ab") as f:
        f.write(_segment(brokers[leader0], topics[0]).read_bytes()[-30:])
    follower.start()
    follower.wait_ready()
    wait_until(lambda: _isr(bootstrap, topics[0]) == sorted([leader0, follower.broker_id]), timeout=30,
               what="the restarted follower back in the ISR")
    assert f"[{topics[0]}-0] Corruption found in segment 0" in follower.server_log.read_text()

    for magic, topic in topics.items():
        leader = brokers[_leader(bootstrap, topic)]
        stored = batches_on_disk(leader.log_dir, topic)    # kafka-python's legacy reader checks each CRC
        assert {b.magic for b in stored} == {magic}
        assert [(r.key, r.value) for b in stored for r in b] == [(k, v) for k, v, _ in sent[magic]]
        # Every replica holds the leader's bytes.
        leader_bytes = _segment(leader, topic).read_bytes()
        replicas = [b for b in brokers.values() if (b.log_dir / f"{topic}-0").exists()]
        wait_until(lambda: all(_segment(b, topic).read_bytes() == leader_bytes for b in replicas), timeout=30,
                   what=f"every replica of {topic} equal to the leader's")
        dump = _dump_log(_segment(leader, topic))
        entries = [line for line in dump if line.startswith("offset: ")]
        assert entries and all(f"magic: {magic}" in line for line in entries)
        assert any("compresscodec: GZIP" in line for line in entries)
        assert any("compresscodec: SNAPPY" in line for line in entries)
        assert all("partitionLeaderEpoch: -1" in line for line in dump if "| offset:" in line)
        assert any(f"key: k7 payload: {'v7' * 3}" in line for line in dump)

        count = len(sent[magic])
        expected = [(i, k, v) for i, (k, v, _) in enumerate(sent[magic])]
        ts = [t for *_, t in sent[magic]]
        new_ck = read_librdkafka(bootstrap, topic, count)
        assert [(o, k, v) for o, _, k, v in new_ck] == expected
        assert [t for _, t, _, _ in new_ck] == ([(TIMESTAMP_CREATE_TIME, t) for t in ts] if magic
                                                else [(TIMESTAMP_NOT_AVAILABLE, 0)] * count)
        for api_version in (None, (0, 10), (0, 9)):
            extra = {} if api_version is None else {"api_version": api_version}
            got = read_kafka_python(bootstrap, topic, count, **extra)
            assert [(o, k, v) for o, _, k, v, _ in got] == expected, api_version
            with_ts = magic == 1 and api_version != (0, 9)
            assert [t for _, t, *_ in got] == (ts if with_ts else [None] * count), api_version
        own = _read_kafkalike(bootstrap, topic, count)   # the client Spark and the console consumer use
        assert own == [(o, t if magic else -1, 0 if magic else -1, k, v) for (o, k, v), t in zip(expected, ts)]
        assert {t for _, _, t, _, _ in own} == {0 if magic else -1}
        out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                              "-f", "%o %k %s\n"], check=True, timeout=60, capture_output=True).stdout
        assert out.splitlines() == [b"%d %s %s" % e for e in expected]
