"""KafkaConsumer (assign mode) against a real broker, judged by a producer nobody here wrote.

Records written by confluent-kafka (librdkafka) in every codec must come back from our
consumer exactly: keys, values, headers, timestamps and offsets; the offset lookups
must agree with what was written.
"""
from __future__ import annotations

import random
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.consumer import KafkaConsumer, TopicPartition
from kafkalike.client.errors import NoOffsetForPartitionError, WakeupError

pytestmark = pytest.mark.integration

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
BASE_TS = 1_600_000_000_000


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"consumer-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30).values():
        future.result()
    return name


def produce(bootstrap: str, topic: str, partitions: int, count: int, codec: str = "none", seed: int = 0) -> dict:
    """Write `count` records with confluent-kafka; returns {(partition, offset): (key, value, headers, ts)}."""
    rng = random.Random(seed)
    written: dict = {}
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5})

    def delivered(err, msg, row):
        assert err is None, err
        written[(msg.partition(), msg.offset())] = row

    for i in range(count):
        key = None if i % 7 == 0 else b"k%d-" % i + rng.randbytes(rng.randint(0, 6))
        value = b"" if i % 13 == 0 else rng.randbytes(rng.randint(1, 30)) * rng.randint(1, 5)
        headers = [("i", str(i).encode()), ("raw", rng.randbytes(2))][: i % 3]
        row = (key, value, headers, BASE_TS + i * 3)
        producer.produce(topic, value=value, key=key, partition=i % partitions, headers=headers or None,
                         timestamp=row[3], on_delivery=lambda err, msg, row=row: delivered(err, msg, row))
    producer.flush(30)
    assert len(written) == count
    return written


def consume_all(consumer: KafkaConsumer, expected: int, timeout: float = 30) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_reads_back_exactly_what_confluent_kafka_wrote(broker, codec):
    topic = new_topic(broker.bootstrap, 3)
    written = produce(broker.bootstrap, topic, 3, 400, codec, seed=CODECS.index(codec))
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest",
                        "max.poll.records": 37}) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(3)])
        got = consume_all(consumer, len(written))
        assert consumer.poll(0.3) == []
    assert len(got) == len(written)
    for record in got:
        key, value, headers, ts = written[(record.partition, record.offset)]
        assert (record.topic, record.key, record.value, record.timestamp) == (topic, key, value, ts)
        assert record.headers == headers
        assert record.timestamp_type == 0
        assert record.serialized_value_size == len(value)
    for p in range(3):
        offsets = [r.offset for r in got if r.partition == p]
        assert offsets == list(range(len(offsets)))


def test_positions_seeks_and_offset_lookups(broker):
    topic = new_topic(broker.bootstrap, 2)
    produce(broker.bootstrap, topic, 2, 100)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap}) as consumer:
        consumer.assign([tp0, tp1])
        assert consumer.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
        assert consumer.end_offsets([tp0, tp1]) == {tp0: 50, tp1: 50}
        # Record i went to partition i % 2 with timestamp BASE_TS + 3i: offset 5 of p0 is record 10.
        found = consumer.offsets_for_times({tp0: BASE_TS + 29, tp1: BASE_TS + 10**9})
        assert found[tp0] == (5, BASE_TS + 30)
        assert found[tp1] is None
        assert consumer.position(tp0) == 50  # auto.offset.reset=latest
        consumer.seek(tp0, 45)
        got = consume_all(consumer, 5)
        assert [(r.partition, r.offset) for r in got] == [(0, o) for o in range(45, 50)]
        consumer.seek_to_beginning([tp1])
        consumer.pause([tp0])
        consumer.seek(tp0, 0)
        got = consume_all(consumer, 50)
        assert {r.partition for r in got} == {1} and len(got) == 50
        assert consumer.position(tp0) == 0
        consumer.resume([tp0])
        assert len(consume_all(consumer, 50)) == 50
        consumer.seek_to_end()
        assert consumer.position(tp1) == 50


def test_out_of_range_position_is_reset_by_policy(broker):
    topic = new_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, 1, 10)
    tp = TopicPartition(topic, 0)
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        got = consume_all(consumer, 10)
        assert [r.offset for r in got] == list(range(10))


def test_no_reset_policy_raises(broker):
    topic = new_topic(broker.bootstrap, 1)
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "none"}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(NoOffsetForPartitionError):
            consumer.poll(1)


def test_deserializers_and_wakeup(broker):
    topic = new_topic(broker.bootstrap, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, key=(7).to_bytes(4, "big"), value="héllo".encode())
    producer.flush(10)
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest",
                        "key.deserializer": "org.apache.kafka.common.serialization.IntegerDeserializer",
                        "value.deserializer": "str"}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        [record] = consume_all(consumer, 1)
        assert (record.key, record.value) == (7, "héllo")
        consumer.wakeup()
        with pytest.raises(WakeupError):
            consumer.poll(5)
        assert consumer.poll(0.1) == []


# -- group membership ---------------------------------------------------------------------------

class Recorder:
    def __init__(self):
        self.events = []

    def on_partitions_revoked(self, partitions):
        self.events.append(("revoked", sorted(partitions)))

    def on_partitions_assigned(self, partitions):
        self.events.append(("assigned", sorted(partitions)))

    def on_partitions_lost(self, partitions):
        self.events.append(("lost", sorted(partitions)))


def poll_until(consumers, predicate, timeout=40):
    """Poll every consumer in turn (our KafkaConsumer or confluent-kafka's) until predicate() holds."""
    got = {id(c): [] for c in consumers}
    deadline = time.monotonic() + timeout
    while not predicate(got) and time.monotonic() < deadline:
        for c in consumers:
            if isinstance(c, KafkaConsumer):
                got[id(c)].extend(c.poll(0.1))
            else:
                for msg in c.consume(100, timeout=0.1):
                    assert not msg.error(), msg.error()
                    got[id(c)].append(msg)
    return got


def group_config(bootstrap, group, **extra):
    config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    config.update({k.replace("_", "."): v for k, v in extra.items()})
    return config


def test_two_members_split_a_topic_and_read_each_record_once(broker):
    topic = new_topic(broker.bootstrap, 4)
    written = produce(broker.bootstrap, topic, 4, 200)
    group = f"g-{uuid.uuid4().hex[:8]}"
    a, b = Recorder(), Recorder()
    c1 = KafkaConsumer(group_config(broker.bootstrap, group, enable_auto_commit=False))
    c2 = KafkaConsumer(group_config(broker.bootstrap, group, enable_auto_commit=False))
    try:
        c1.subscribe([topic], listener=a)
        c1.poll(0)  # c1 joins alone first, then c2's join rebalances both
        c2.subscribe([topic], listener=b)
        # Done when both hold two partitions and have read each of them to its end (offset 50).
        got = poll_until([c1, c2], lambda g: len(c1.assignment()) == 2 and len(c2.assignment()) == 2
                         and all(c.position(tp) == 50 for c in (c1, c2) for tp in c.assignment()))
        assert c1.assignment() | c2.assignment() == {TopicPartition(topic, p) for p in range(4)}
        assert not c1.assignment() & c2.assignment()
        records = [r for rs in got.values() for r in rs]
        seen = {}
        for r in records:  # after the rebalance a partition may be re-read from its start, never skipped
            seen.setdefault((r.partition, r.offset), r)
        assert set(seen) == set(written)
        c1.commit_sync()
        c2.commit_sync()
        committed = c1.committed([TopicPartition(topic, p) for p in range(4)])
        assert {tp: om.offset for tp, om in committed.items()} == {TopicPartition(topic, p): 50 for p in range(4)}
        for recorder, consumer in ((a, c1), (b, c2)):
            # Eager rebalances: assigned, then (if c1 joined first) revoked everything and assigned again.
            assert recorder.events[-1] == ("assigned", sorted(consumer.assignment()))
            kinds = [kind for kind, _ in recorder.events]
            assert kinds == ["assigned", "revoked"] * (len(kinds) // 2) + ["assigned"]
    finally:
        c1.close()
        c2.close()


def test_mixed_group_with_confluent_kafka_members_uses_range(broker):
    from confluent_kafka import Consumer

    topic = new_topic(broker.bootstrap, 4)
    produce(broker.bootstrap, topic, 4, 40)
    group = f"mixed-{uuid.uuid4().hex[:8]}"
    ours = KafkaConsumer(group_config(broker.bootstrap, group))
    theirs = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                       "partition.assignment.strategy": "range", "session.timeout.ms": 10000})
    try:
        ours.subscribe([topic])
        theirs.subscribe([topic])

        def split(_):
            return len(ours.assignment()) == 2 and len(theirs.assignment()) == 2

        got = poll_until([ours, theirs], lambda g: split(g) and sum(map(len, g.values())) >= 40)
        assert split(got)
        mine = {tp.partition for tp in ours.assignment()}
        others = {tp.partition for tp in theirs.assignment()}
        assert mine | others == {0, 1, 2, 3} and not mine & others
        assert sorted(mine) in ([0, 1], [2, 3])  # range hands out consecutive partitions
        assert {r.partition for r in got[id(ours)]} <= mine | others
    finally:
        ours.close()
        theirs.close()


def test_close_commits_and_the_next_member_resumes_there(broker):
    topic = new_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, 1, 30)
    group = f"resume-{uuid.uuid4().hex[:8]}"
    with KafkaConsumer(group_config(broker.bootstrap, group, max_poll_records=10)) as first:
        first.subscribe([topic])
        got = poll_until([first], lambda g: sum(map(len, g.values())) >= 10)
        assert [r.offset for r in got[id(first)]][:10] == list(range(10))
        read = len(got[id(first)])
    produce(broker.bootstrap, topic, 1, 5, seed=9)
    with KafkaConsumer(group_config(broker.bootstrap, group)) as second:
        second.subscribe([topic])
        got = poll_until([second], lambda g: sum(map(len, g.values())) >= 35 - read)
        assert [r.offset for r in got[id(second)]] == list(range(read, 35))


def test_cooperative_sticky_moves_only_what_it_must(broker):
    topic = new_topic(broker.bootstrap, 4)
    group = f"coop-{uuid.uuid4().hex[:8]}"
    a = Recorder()
    c1 = KafkaConsumer(group_config(broker.bootstrap, group, partition_assignment_strategy="cooperative-sticky"))
    c2 = KafkaConsumer(group_config(broker.bootstrap, group, partition_assignment_strategy="cooperative-sticky"))
    try:
        c1.subscribe([topic], listener=a)
        poll_until([c1], lambda g: len(c1.assignment()) == 4)
        before = c1.assignment()
        c2.subscribe([topic])
        poll_until([c1, c2], lambda g: len(c1.assignment()) == 2 and len(c2.assignment()) == 2)
        assert len(c1.assignment()) == 2 and len(c2.assignment()) == 2
        assert c1.assignment() <= before
        revoked = [e for e in a.events if e[0] == "revoked"]
        assert revoked and all(len(e[1]) == 2 for e in revoked)  # never everything, as eager would
    finally:
        c1.close()
        c2.close()


def test_pattern_subscription_finds_matching_topics(broker):
    import re

    stem = f"pat-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(f"{stem}-a", 1, 1), NewTopic(f"{stem}-b", 1, 1)],
                                      operation_timeout=30).values():
        future.result()
    with KafkaConsumer(group_config(broker.bootstrap, f"g-{stem}")) as consumer:
        consumer.subscribe(re.compile(re.escape(stem) + r"-.*"))
        poll_until([consumer], lambda g: len(consumer.assignment()) == 2)
        assert {tp.topic for tp in consumer.assignment()} == {f"{stem}-a", f"{stem}-b"}


def test_commit_async_reports_through_its_callback(broker):
    topic = new_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, 1, 5)
    tp = TopicPartition(topic, 0)
    outcomes = []
    with KafkaConsumer(group_config(broker.bootstrap, f"async-{uuid.uuid4().hex[:8]}",
                                    enable_auto_commit=False)) as consumer:
        consumer.assign([tp])
        assert len(consume_all(consumer, 5)) == 5
        consumer.commit_async({tp: 3}, callback=lambda offsets, error: outcomes.append((offsets, error)))
        deadline = time.monotonic() + 10
        while not outcomes and time.monotonic() < deadline:
            consumer.poll(0.1)
        [(offsets, error)] = outcomes
        assert error is None and offsets[tp].offset == 3
        assert consumer.committed([tp])[tp].offset == 3


def test_a_member_that_stops_polling_leaves_and_loses_its_partitions(broker):
    topic = new_topic(broker.bootstrap, 2)
    group = f"slow-{uuid.uuid4().hex[:8]}"
    slow_listener = Recorder()
    slow = KafkaConsumer(group_config(broker.bootstrap, group, max_poll_interval_ms=1500,
                                      session_timeout_ms=6000, heartbeat_interval_ms=500))
    other = KafkaConsumer(group_config(broker.bootstrap, group))
    try:
        slow.subscribe([topic], listener=slow_listener)
        poll_until([slow], lambda g: len(slow.assignment()) == 2)
        other.subscribe([topic])
        time.sleep(2.5)  # longer than max.poll.interval.ms: the heartbeat thread leaves the group
        poll_until([other], lambda g: len(other.assignment()) == 2, timeout=20)
        assert len(other.assignment()) == 2
        slow.poll(0.5)
        assert ("lost", [TopicPartition(topic, 0), TopicPartition(topic, 1)]) in slow_listener.events
    finally:
        slow.close()
        other.close()


def test_static_member_gets_its_partitions_back_without_a_rebalance(broker):
    topic = new_topic(broker.bootstrap, 2)
    group = f"static-{uuid.uuid4().hex[:8]}"
    config = group_config(broker.bootstrap, group, group_instance_id="instance-1", session_timeout_ms=30000)
    first = KafkaConsumer(config)
    first.subscribe([topic])
    poll_until([first], lambda g: len(first.assignment()) == 2)
    generation = first.group_metadata().generation_id
    first.close()  # a static member does not leave the group
    second = KafkaConsumer(config)
    try:
        second.subscribe([topic])
        poll_until([second], lambda g: len(second.assignment()) == 2)
        assert second.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert second.group_metadata().generation_id == generation
    finally:
        second.close()


def test_reading_follows_the_leader_when_it_is_killed(kafka_cluster):
    bootstrap = kafka_cluster.bootstrap
    name = f"consumer-failover-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "2"})],
                                      operation_timeout=30).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(100):
        producer.produce(name, value=b"%d" % i)
    assert producer.flush(30) == 0
    tp = TopicPartition(name, 0)
    with KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                        "max.poll.records": 50, "request.timeout.ms": 5000}) as consumer:
        consumer.assign([tp])
        got = consume_all(consumer, 50)
        leader = consumer.partitions_for_topic(name)[0].leader
        kafka_cluster.broker(leader).kill()
        for i in range(100, 150):
            producer.produce(name, value=b"%d" % i)
        assert producer.flush(60) == 0
        got += consume_all(consumer, 100, timeout=60)
    assert [int(r.value) for r in got] == list(range(150))
    assert [r.offset for r in got] == list(range(150))


def test_a_commit_does_not_wait_behind_a_parked_fetch(broker):
    """Commits go to the coordinator on a connection of their own (as Java's do), so a fetch
    the broker holds for fetch.max.wait.ms does not delay them."""
    topic = new_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, 1, 5)
    tp = TopicPartition(topic, 0)
    config = group_config(broker.bootstrap, f"parked-{uuid.uuid4().hex[:8]}", enable_auto_commit=False,
                          fetch_max_wait_ms=6000, fetch_min_bytes=1 << 20)
    with KafkaConsumer(config) as consumer:
        consumer.assign([tp])
        assert len(consume_all(consumer, 5)) == 5
        consumer.commit_sync({tp: 1})  # the coordinator is found and connected
        consumer.poll(0.2)  # a fetch now waits on the broker for bytes that will not come
        started = time.monotonic()
        consumer.commit_sync({tp: 5})
        took = time.monotonic() - started
        assert took < 3, f"the commit took {took:.1f}s, as if queued behind the 6 s fetch"
        assert consumer.committed([tp])[tp].offset == 5


def test_the_leader_rejoins_when_a_subscribed_topic_gains_partitions(broker):
    from confluent_kafka.admin import NewPartitions

    topic = new_topic(broker.bootstrap, 2)
    group = f"grow-{uuid.uuid4().hex[:8]}"
    with KafkaConsumer(group_config(broker.bootstrap, group, metadata_max_age_ms=500)) as leader, \
            KafkaConsumer(group_config(broker.bootstrap, group, metadata_max_age_ms=500)) as other:
        leader.subscribe([topic])
        leader.poll(0)  # joins first, so it leads
        other.subscribe([topic])
        poll_until([leader, other], lambda g: len(leader.assignment()) == 1 and len(other.assignment()) == 1)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_partitions([NewPartitions(topic, 4)], operation_timeout=30).values():
            future.result()
        poll_until([leader, other], lambda g: len(leader.assignment()) == 2 and len(other.assignment()) == 2)
        assert leader.assignment() | other.assignment() == {TopicPartition(topic, p) for p in range(4)}


def test_commit_async_right_before_close_still_lands(broker):
    topic = new_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, 1, 5)
    tp = TopicPartition(topic, 0)
    group = f"late-{uuid.uuid4().hex[:8]}"
    outcomes = []
    consumer = KafkaConsumer(group_config(broker.bootstrap, group, enable_auto_commit=False))
    consumer.assign([tp])
    assert len(consume_all(consumer, 5)) == 5
    consumer.commit_async({tp: 4}, callback=lambda offsets, error: outcomes.append(error))
    consumer.close()
    assert outcomes == [None]  # the callback ran, inside close()
    with KafkaConsumer(group_config(broker.bootstrap, group)) as check:
        assert check.committed([tp])[tp].offset == 4


def test_a_static_member_replaced_by_another_with_its_instance_id_is_fenced(broker):
    from kafkalike.client.errors import FencedInstanceIdError

    topic = new_topic(broker.bootstrap, 2)
    group = f"fence-{uuid.uuid4().hex[:8]}"
    static = dict(group_instance_id="instance-a", heartbeat_interval_ms=200, session_timeout_ms=10000)
    first = KafkaConsumer(group_config(broker.bootstrap, group, **static))
    second = KafkaConsumer(group_config(broker.bootstrap, group, **static))
    try:
        first.subscribe([topic])
        poll_until([first], lambda g: len(first.assignment()) == 2)
        second.subscribe([topic])
        poll_until([second], lambda g: len(second.assignment()) == 2)
        deadline = time.monotonic() + 10
        with pytest.raises(FencedInstanceIdError, match="instance-a"):
            while time.monotonic() < deadline:  # the first learns at its next heartbeat
                first.poll(0.1)
        with pytest.raises(FencedInstanceIdError):
            first.poll(0)  # and stays fenced
        second.poll(0.5)
        assert len(second.assignment()) == 2
    finally:
        first.close()
        second.close()


def test_a_batch_over_the_fetch_limits_is_still_returned_and_a_seek_may_land_inside_one(broker):
    """KIP-74: a record batch bigger than max.partition.fetch.bytes and fetch.max.bytes still
    comes back (or the consumer would be stuck); a position inside a compressed batch
    yields the records from there on, not the whole batch."""
    topic = new_topic(broker.bootstrap, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "gzip", "linger.ms": 50,
                         "batch.size": 1_000_000})
    for i in range(100):
        producer.produce(topic, value=b"%03d" % i + random.Random(i).randbytes(997), partition=0)  # incompressible
    producer.flush(10)
    tp = TopicPartition(topic, 0)
    with KafkaConsumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest",
                        "max.partition.fetch.bytes": 1024, "fetch.max.bytes": 1024}) as consumer:
        consumer.assign([tp])
        got = consume_all(consumer, 100)
        assert [r.value[:3] for r in got] == [b"%03d" % i for i in range(100)]
        consumer.seek(tp, 57)
        got = consume_all(consumer, 43)
        assert [r.offset for r in got] == list(range(57, 100))
