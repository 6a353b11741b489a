"""confluent-kafka (librdkafka 2.x) against one broker with topic auto-creation off.

Producer at every acks and codec, consumer in assign mode (no groups yet), the admin
client's topic and config calls, ListOffsets through offsets_for_times and watermarks,
and the errors a user meets: a topic that does not exist, a message that is too big.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import (OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError,
                             KafkaException, Producer, TopicCollection, TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewPartitions, NewTopic, ResourceType)

from tests.interop.samples import CODEC_IDS, CODECS, binary_samples, stored_as_librdkafka_sends, stored_codecs
from tests.waiting import wait_until

pytestmark = pytest.mark.interop

PER_ACKS = 2000
BASE_TS = 1_650_000_000_000


@pytest.fixture(scope="module")
def admin(strict_broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": strict_broker.bootstrap})


def create_topic(admin: AdminClient, name: str, partitions: int, config: dict | None = None) -> None:
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=15)
    for future in futures.values():
        future.result()


def produce(bootstrap: str, topic: str, samples, **config) -> list:
    """Produce and flush; returns each record's delivery (error, partition, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10, **config})
    reports: list = [None] * len(samples)

    def on_delivery(index):
        return lambda err, msg: reports.__setitem__(index, (err, msg.partition(), msg.offset()))

    for i, s in enumerate(samples):
        producer.produce(topic, key=s.key, value=s.value, headers=s.headers,
                         timestamp=s.timestamp or 0, on_delivery=on_delivery(i))
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    return reports


def consume_all(bootstrap: str, partitions: list[TopicPartition], expected: int, timeout: float = 20):
    """Read from the start of each partition with assign(), until `expected` records."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "assign-only",
                         "enable.auto.commit": False, "enable.auto.offset.store": False})
    try:
        consumer.assign([TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in partitions])
        out = []

        def fetch_more():
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                out.append(msg)
            return len(out) >= expected
        wait_until(fetch_more, timeout, interval=0, what=f"{expected} records")
        extra = consumer.consume(1000, timeout=0.3)
        assert not extra, f"{len(extra)} records more than produced"
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", CODECS)
def test_every_acks_setting_delivers_records_intact(strict_broker, admin, topic_name, codec):
    create_topic(admin, topic_name, 2)
    sent = []
    for n, acks in enumerate(["0", "1", "all"]):
        samples = binary_samples(PER_ACKS, seed=10 * n + CODECS.index(codec),
                                 base_timestamp=BASE_TS + n * 1_000_000, tag=acks.encode())
        reports = produce(strict_broker.bootstrap, topic_name, samples, acks=acks, **{"compression.type": codec})
        assert [r[0] for r in reports] == [None] * PER_ACKS
        if acks != "0":      # acks=0 has no answer, so no offsets to report
            sent += [(s, r) for s, r in zip(samples, reports)]
        else:
            sent += [(s, None) for s in samples]

    records = consume_all(strict_broker.bootstrap, [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)],
                          3 * PER_ACKS)
    by_key = {m.key(): m for m in records}
    assert len(by_key) == 3 * PER_ACKS
    for s, report in sent:
        msg = by_key[s.key]
        assert msg.value() == s.value
        assert (msg.headers() or []) == s.headers
        assert msg.timestamp() == (TIMESTAMP_CREATE_TIME, s.timestamp)
        if report is not None:
            assert (msg.partition(), msg.offset()) == report[1:]
    for p in (0, 1):
        offsets = sorted(m.offset() for m in records if m.partition() == p)
        assert offsets == list(range(len(offsets)))

    assert stored_as_librdkafka_sends(strict_broker.log_dir, topic_name, codec), \
        stored_codecs(strict_broker.log_dir, topic_name)


def describe(admin: AdminClient, topic: str) -> dict:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result()


def test_admin_creates_describes_alters_and_deletes_topics(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 3, {"retention.ms": "3600000", "cleanup.policy": "compact"})
    with pytest.raises(KafkaException) as again:
        create_topic(admin, topic_name, 3)
    assert again.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    listed = admin.list_topics(topic_name, timeout=10).topics[topic_name]
    assert listed.error is None
    assert sorted(listed.partitions) == [0, 1, 2]
    assert all(p.leader == 0 and p.replicas == [0] and p.isrs == [0] for p in listed.partitions.values())
    described = admin.describe_topics(TopicCollection([topic_name]))[topic_name].result()
    assert [p.id for p in described.partitions] == [0, 1, 2]
    assert all(p.leader.id == 0 for p in described.partitions)

    configs = describe(admin, topic_name)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["max.message.bytes"].value == "1048588"

    # IncrementalAlterConfigs: one key set, one removed; the rest stay.
    resource = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("max.message.bytes", "65536", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([resource])[resource].result()
    configs = describe(admin, topic_name)
    assert configs["max.message.bytes"].value == "65536"
    assert configs["retention.ms"].value == "3600000"
    assert configs["cleanup.policy"].value == "delete"
    assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value

    # AlterConfigs replaces the whole set of overrides.
    resource = ConfigResource(ResourceType.TOPIC, topic_name, set_config={"segment.ms": "600000"})
    with pytest.warns(DeprecationWarning):
        futures = admin.alter_configs([resource])
    futures[resource].result()
    configs = describe(admin, topic_name)
    assert configs["segment.ms"].value == "600000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["max.message.bytes"].value == "1048588"

    bad = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as invalid:
        admin.incremental_alter_configs([bad])[bad].result()
    # As Kafka 2.8's ZkAdminManager: a bad value is INVALID_REQUEST naming the key.
    assert invalid.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert "Invalid value soon for configuration retention.ms" in invalid.value.args[0].str()

    admin.create_partitions([NewPartitions(topic_name, 5)])[topic_name].result()
    wait_until(lambda: len(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 5,
               what="5 partitions in metadata")

    admin.delete_topics([topic_name], operation_timeout=15)[topic_name].result()
    assert topic_name not in admin.list_topics(timeout=10).topics
    with pytest.raises(KafkaException) as gone:
        describe(admin, topic_name)
    assert gone.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_list_offsets_by_time_and_watermarks(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 1)
    # Timestamps that go up and down, in gzip batches of many records: the answer is the
    # first offset whose timestamp reaches the target, which may sit mid-batch.
    samples = binary_samples(3000, seed=7, with_headers=False)
    for i, s in enumerate(samples):
        s.timestamp = BASE_TS + (i * 7919) % 3000
    reports = produce(strict_broker.bootstrap, topic_name, samples, acks="all", **{"compression.type": "gzip"})
    assert [r[2] for r in reports] == list(range(3000))

    consumer = Consumer({"bootstrap.servers": strict_broker.bootstrap, "group.id": "assign-only",
                         "enable.auto.commit": False})
    try:
        tp = TopicPartition(topic_name, 0)
        assert consumer.get_watermark_offsets(tp, timeout=10, cached=False) == (0, 3000)
        for target in (BASE_TS - 5, BASE_TS, BASE_TS + 1, BASE_TS + 1234, BASE_TS + 2999):
            expected = next(i for i, s in enumerate(samples) if s.timestamp >= target)
            [found] = consumer.offsets_for_times([TopicPartition(topic_name, 0, target)], timeout=10)
            assert found.error is None and found.offset == expected, target
        [beyond] = consumer.offsets_for_times([TopicPartition(topic_name, 0, BASE_TS + 3000)], timeout=10)
        assert beyond.offset == -1      # the end: nothing that late

        # DeleteRecords moves the low watermark; ListOffsets(earliest) follows it.
        deleted = admin.delete_records([TopicPartition(topic_name, 0, 1200)])
        assert deleted[TopicPartition(topic_name, 0, 1200)].result().low_watermark == 1200
        assert consumer.get_watermark_offsets(tp, timeout=10, cached=False) == (1200, 3000)
        [early] = consumer.offsets_for_times([TopicPartition(topic_name, 0, BASE_TS - 5)], timeout=10)
        assert early.offset == 1200
    finally:
        consumer.close()


def test_unknown_topic_is_refused_when_auto_create_is_off(strict_broker, admin, topic_name):
    producer = Producer({"bootstrap.servers": strict_broker.bootstrap, "message.timeout.ms": 5000,
                         "topic.metadata.propagation.max.ms": 1000})
    reports = []
    producer.produce(topic_name, value=b"nobody home", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(15)
    assert len(reports) == 1 and reports[0] is not None
    assert reports[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    listed = admin.list_topics(topic_name, timeout=10).topics[topic_name]
    assert listed.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert topic_name not in admin.list_topics(timeout=10).topics     # and it was not created


def test_message_over_max_message_bytes_is_refused(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 1, {"max.message.bytes": "2000"})
    # The client's own limit (message.max.bytes, 1 MB) lets it through: the broker judges.
    samples = binary_samples(3, seed=5, with_headers=False)
    samples[1].value = bytes(range(256)) * 40      # 10 KiB
    reports = []
    producer = Producer({"bootstrap.servers": strict_broker.bootstrap, "linger.ms": 0, "acks": "all",
                         "max.in.flight": 1})
    for s in samples:
        producer.produce(topic_name, key=s.key, value=s.value, on_delivery=lambda err, msg: reports.append(err))
        producer.flush(15)
    assert reports[0] is None and reports[2] is None
    assert reports[1] is not None and reports[1].code() == KafkaError.MSG_SIZE_TOO_LARGE

    records = consume_all(strict_broker.bootstrap, [TopicPartition(topic_name, 0)], 2)
    assert [(m.offset(), m.value()) for m in records] == [(0, samples[0].value), (1, samples[2].value)]


def test_admin_refusals_say_why(strict_broker, admin, topic_name):
    def error_of(futures) -> KafkaError:
        [future] = futures.values()
        with pytest.raises(KafkaException) as refused:
            future.result()
        return refused.value.args[0]

    too_many = error_of(admin.create_topics([NewTopic(topic_name, 1, 3)]))
    assert too_many.code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert too_many.str() == "Replication factor: 3 larger than available brokers: 1."
    assert error_of(admin.create_topics([NewTopic(topic_name, 0, 1)])).code() == KafkaError.INVALID_PARTITIONS
    assert error_of(admin.create_topics([NewTopic(topic_name + "!", 1, 1)])).code() == KafkaError.TOPIC_EXCEPTION
    unknown_key = error_of(admin.create_topics([NewTopic(topic_name, 1, 1, config={"no.such.key": "1"})]))
    assert unknown_key.code() == KafkaError.INVALID_CONFIG and "no.such.key" in unknown_key.str()
    bad_value = error_of(admin.create_topics([NewTopic(topic_name, 1, 1, config={"cleanup.policy": "nope"})]))
    assert bad_value.code() == KafkaError.INVALID_CONFIG and "cleanup.policy" in bad_value.str()
    assert error_of(admin.delete_topics([topic_name])).code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert topic_name not in admin.list_topics(timeout=10).topics      # nothing was half-made


def test_log_append_time_topic_stamps_broker_time(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 1, {"message.timestamp.type": "LogAppendTime"})
    samples = binary_samples(500, seed=12, base_timestamp=BASE_TS)      # old create times
    before = int(time.time() * 1000)
    reports = produce(strict_broker.bootstrap, topic_name, samples, acks="1", **{"compression.type": "snappy"})
    after = int(time.time() * 1000)
    assert [r[0] for r in reports] == [None] * 500

    records = consume_all(strict_broker.bootstrap, [TopicPartition(topic_name, 0)], 500)
    assert [(m.key(), m.value()) for m in records] == [(s.key, s.value) for s in samples]
    kinds = {m.timestamp()[0] for m in records}
    assert kinds == {TIMESTAMP_LOG_APPEND_TIME}
    stamps = [m.timestamp()[1] for m in records]
    assert all(before <= t <= after for t in stamps), (before, min(stamps), max(stamps), after)
    assert stamps == sorted(stamps)


def test_topic_compression_type_is_what_is_stored(strict_broker, admin, topic_name):
    create_topic(admin, topic_name, 1, {"compression.type": "zstd"})
    samples = binary_samples(300, seed=13, base_timestamp=BASE_TS)
    reports = produce(strict_broker.bootstrap, topic_name, samples, acks="all", **{"compression.type": "snappy"})
    assert [r[0] for r in reports] == [None] * 300
    records = consume_all(strict_broker.bootstrap, [TopicPartition(topic_name, 0)], 300)
    assert [(m.key(), m.value(), m.headers() or [], m.timestamp()[1]) for m in records] == \
        [(s.key, s.value, s.headers, s.timestamp) for s in samples]
    assert stored_codecs(strict_broker.log_dir, topic_name) == {CODEC_IDS["zstd"]}


def test_authorized_operations_without_an_authorizer_are_everything_the_resource_supports(
        strict_broker, admin, topic_name):
    """Kafka 2.8 without an authorizer: the 8 topic and 7 cluster operations, as librdkafka reports them."""
    from confluent_kafka.admin import AclOperation
    create_topic(admin, topic_name, 1)
    described = admin.describe_topics(TopicCollection([topic_name]),
                                      include_authorized_operations=True)[topic_name].result()
    assert set(described.authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DELETE,
        AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    cluster = admin.describe_cluster(include_authorized_operations=True).result()
    assert set(cluster.authorized_operations) == {
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE}
    # Not asked for: not reported.
    assert not admin.describe_cluster().result().authorized_operations


def test_a_compacted_topic_refuses_records_without_a_key_one_by_one(strict_broker, admin, topic_name):
    """Kafka 2.8 refuses the batch with INVALID_RECORD and names each keyless record (KIP-467)."""
    create_topic(admin, topic_name, 1, {"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": strict_broker.bootstrap, "linger.ms": 1000, "acks": "all"})
    # Metadata first: records produced before librdkafka knows the partition wait in its
    # unassigned queue and can leave it for the partition in more than one batch.
    producer.list_topics(topic_name, timeout=10)
    reports = []
    for key in (b"k1", None, b"k3", None):
        producer.produce(topic_name, key=key, value=b"v",
                         on_delivery=lambda err, msg: reports.append((msg.key() or b"", err and err.code())))
    assert producer.flush(30) == 0
    # librdkafka reads record_errors: the keyless records are INVALID_RECORD, the others
    # failed only for being in their batch.
    assert sorted(reports) == [(b"", KafkaError.INVALID_RECORD), (b"", KafkaError.INVALID_RECORD),
                               (b"k1", KafkaError._INVALID_DIFFERENT_RECORD),
                               (b"k3", KafkaError._INVALID_DIFFERENT_RECORD)], reports
    # Nothing of the refused batch was stored; a keyed record alone goes in at offset 0.
    watermarks = Consumer({"bootstrap.servers": strict_broker.bootstrap, "group.id": "x"}).get_watermark_offsets
    assert watermarks(TopicPartition(topic_name, 0), timeout=10) == (0, 0)
    [(err, partition, offset)] = produce(strict_broker.bootstrap, topic_name, binary_samples(1, 3))
    assert err is None and offset == 0
