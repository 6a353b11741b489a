"""kafka-python (3.0.12, pure Python) against one broker with topic auto-creation off.

Producer at every acks and codec, consumer in assign mode with seek_to_beginning and
seek, the admin client's topic and config calls, and the errors a user meets.

Every producer here sets enable_idempotence=False so that acks 0 and 1 can be tested:
kafka-python 3 follows KIP-679 and is idempotent with acks=all by default. Idempotent
kafka-python producers are judged in tests/interop/test_idempotent_producers.py.
"""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import (InvalidRequestError, KafkaTimeoutError, MessageSizeTooLargeError,
                          NotEnoughReplicasError, TopicAlreadyExistsError, UnknownTopicOrPartitionError)

from tests.interop.samples import CODEC_IDS, CODECS, binary_samples, stored_codecs
from tests.waiting import wait_until

pytestmark = pytest.mark.interop

PER_ACKS = 1000
BASE_TS = 1_650_000_000_000


@pytest.fixture(scope="module")
def admin(strict_broker):
    client = KafkaAdminClient(bootstrap_servers=strict_broker.bootstrap)
    yield client
    client.close()


def create_topic(admin, name: str, partitions: int, configs: dict | None = None) -> None:
    admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1,
                                "configs": configs or {}}})


def producer(bootstrap: str, **config) -> KafkaProducer:
    return KafkaProducer(**{"bootstrap_servers": bootstrap, "enable_idempotence": False, "linger_ms": 10,
                            **config})


def consumer(bootstrap: str, **config) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)


@pytest.mark.parametrize("codec", CODECS)
def test_every_acks_setting_delivers_records_intact(strict_broker, admin, topic_name, codec):
    create_topic(admin, topic_name, 2)
    sent = []
    for n, acks in enumerate([0, 1, "all"]):
        samples = binary_samples(PER_ACKS, seed=20 + 10 * n + CODECS.index(codec),
                                 base_timestamp=BASE_TS + n * 1_000_000, tag=str(acks).encode())
        p = producer(strict_broker.bootstrap, acks=acks, compression_type=None if codec == "none" else codec)
        futures = [p.send(topic_name, key=s.key, value=s.value, headers=s.headers, timestamp_ms=s.timestamp)
                   for s in samples]
        p.flush(30)
        reports = [f.get(timeout=30) for f in futures]
        p.close()
        # acks=0 gets no answer, so its reported offsets are the client's guesses.
        sent += [(s, None if acks == 0 else (r.partition, r.offset)) for s, r in zip(samples, reports)]

    # The brief's scenario: assign two partitions, seek_to_beginning, iterate with a
    # consumer timeout. It must see everything.
    c = consumer(strict_broker.bootstrap, consumer_timeout_ms=3000)
    try:
        c.assign([TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)])
        c.seek_to_beginning()
        records = []
        for record in c:
            records.append(record)
            if len(records) == len(sent):
                break
    finally:
        c.close()
    by_key = {r.key: r for r in records}
    assert len(records) == len(by_key) == len(sent)
    for s, report in sent:
        r = by_key[s.key]
        assert (r.value, list(r.headers), r.timestamp, r.timestamp_type) == (s.value, s.headers, s.timestamp, 0)
        if report is not None:
            assert (r.partition, r.offset) == report
    # kafka-python, like librdkafka, sends a batch uncompressed when compressing would not
    # make it smaller (snappy on a batch of one or two random binary records, as timing may
    # cut them); the broker stores what it was sent.
    stored = stored_codecs(strict_broker.log_dir, topic_name)
    assert CODEC_IDS[codec] in stored and stored <= {0, CODEC_IDS[codec]}, stored


def test_consumer_seeks_and_lists_offsets(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 1)
    samples = binary_samples(200, seed=3, base_timestamp=BASE_TS)
    p = producer(strict_broker.bootstrap, acks=1, compression_type="zstd")
    for s in samples:
        p.send(topic_name, key=s.key, value=s.value, headers=s.headers, timestamp_ms=s.timestamp)
    p.flush(30)
    p.close()

    tp = TopicPartition(topic_name, 0)
    c = consumer(strict_broker.bootstrap)
    try:
        c.assign([tp])
        assert c.beginning_offsets([tp]) == {tp: 0} and c.end_offsets([tp]) == {tp: 200}
        found = c.offsets_for_times({tp: BASE_TS + 123})[tp]
        assert (found.offset, found.timestamp) == (123, BASE_TS + 123)
        assert c.offsets_for_times({tp: BASE_TS + 200})[tp] is None

        def read(count):
            out = []
            wait_until(lambda: out.extend(r for rs in c.poll(timeout_ms=200).values() for r in rs)
                       or len(out) >= count, what=f"{count} records")
            return out

        c.seek(tp, 150)
        assert [(r.offset, r.key, r.value) for r in read(50)] == \
            [(150 + i, s.key, s.value) for i, s in enumerate(samples[150:])]
        c.seek_to_beginning(tp)
        assert [r.value for r in read(200)] == [s.value for s in samples]
        c.seek_to_end(tp)
        assert c.position(tp) == 200
        assert c.poll(timeout_ms=300) == {}
        c.seek(tp, 250)      # past the end: the reset policy (latest) brings it back
        assert c.poll(timeout_ms=500) == {} and c.position(tp) == 200
    finally:
        c.close()


def test_admin_creates_describes_alters_and_deletes_topics(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 3, {"retention.ms": "3600000", "cleanup.policy": "compact"})
    with pytest.raises(TopicAlreadyExistsError):
        create_topic(admin, topic_name, 3)
    assert topic_name in admin.list_topics()
    [described] = admin.describe_topics([topic_name])
    assert described["error_code"] == 0 and not described["is_internal"]
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in sorted(described["partitions"], key=lambda p: p["partition_index"])] == \
        [(i, 0, [0], [0]) for i in range(3)]

    def configs(filter_="modified"):
        answer = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name)],
                                        config_filter=filter_)
        return {k: (v["value"], v["config_source"]) for k, v in answer["topic"][topic_name].items()}

    assert configs() == {"retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG"),
                         "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG")}
    everything = configs("all")
    assert everything["segment.bytes"] == ("1073741824", "DEFAULT_CONFIG")
    assert everything["min.insync.replicas"] == ("1", "DEFAULT_CONFIG")

    # alter_configs (IncrementalAlterConfigs underneath) changes one key, and a describe
    # straight afterwards sees it.
    answer = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name,
                                                 {"max.message.bytes": "65536"})])
    assert answer == {"topic": {topic_name: "OK"}}
    assert configs() == {"retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG"),
                         "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG"),
                         "max.message.bytes": ("65536", "DYNAMIC_TOPIC_CONFIG")}
    admin.reset_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, ["cleanup.policy"])])
    assert configs() == {"retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG"),
                         "max.message.bytes": ("65536", "DYNAMIC_TOPIC_CONFIG")}
    answer = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, {"retention.ms": "soon"})])
    # Kafka 2.8 answers a bad value with INVALID_REQUEST, naming the resource and the key.
    assert str(answer["topic"][topic_name]) == (
        f"[Error {InvalidRequestError.errno}] InvalidRequestError: Invalid config value for resource "
        f"ConfigResource(type=TOPIC, name='{topic_name}'): Invalid value soon for configuration retention.ms: "
        "Not a number of type LONG")

    admin.create_partitions({topic_name: 5})
    wait_until(lambda: len(admin.describe_topics([topic_name])[0]["partitions"]) == 5,
               what="5 partitions in metadata")

    admin.delete_topics([topic_name])
    assert topic_name not in admin.list_topics()
    assert admin.describe_topics([topic_name])[0]["error_code"] == UnknownTopicOrPartitionError.errno


def test_unknown_topic_is_refused_when_auto_create_is_off(strict_broker, admin, topic_name, caplog):
    # kafka-python, like the Java producer, keeps asking for metadata until max_block_ms
    # and then gives up with a timeout; the broker's reason is in its log and in what
    # the admin client sees.
    p = producer(strict_broker.bootstrap, acks=1, max_block_ms=2000)
    try:
        with pytest.raises(KafkaTimeoutError, match="Failed to update metadata"):
            p.send(topic_name, value=b"nobody home").get(timeout=10)
    finally:
        p.close()
    assert f"Topic {topic_name} not found in cluster metadata" in caplog.text
    [described] = admin.describe_topics([topic_name])
    assert described["error_code"] == UnknownTopicOrPartitionError.errno
    assert topic_name not in admin.list_topics()


def test_message_over_max_message_bytes_is_refused(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 1, {"max.message.bytes": "2000"})
    p = producer(strict_broker.bootstrap, acks=1, linger_ms=0)
    try:
        assert p.send(topic_name, value=b"small").get(timeout=10).offset == 0
        # Under the client's own limit (max_request_size, 1 MB): the broker judges.
        with pytest.raises(MessageSizeTooLargeError):
            p.send(topic_name, value=bytes(range(256)) * 40).get(timeout=10)
        assert p.send(topic_name, value=b"small again").get(timeout=10).offset == 1

        # Raising the limit takes effect without a restart (once the broker has read the
        # change notification, so the first tries may still be refused).
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name, {"max.message.bytes": "20000"})])

        def big_one_accepted():
            try:
                return p.send(topic_name, value=bytes(range(256)) * 40).get(timeout=10)
            except MessageSizeTooLargeError:
                return None
        assert wait_until(big_one_accepted, what="the raised limit").offset == 2
    finally:
        p.close()


def test_acks_all_needs_min_insync_replicas(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 1, {"min.insync.replicas": "2"})
    p = producer(strict_broker.bootstrap, acks="all", retries=0)
    try:
        with pytest.raises(NotEnoughReplicasError, match="min.isr requirement of 2"):
            p.send(topic_name, value=b"x").get(timeout=10)
    finally:
        p.close()
    p = producer(strict_broker.bootstrap, acks=1)
    try:
        assert p.send(topic_name, value=b"x").get(timeout=10).offset == 0    # acks=1 asks no more
    finally:
        p.close()

