"""Batch reads through spark.read.format("kafkalike"), judged against what confluent-kafka
wrote and reads: Spark's schema, the three ways to name topics, every way to bound a
range (offsets, -2/-1, timestamps), task splitting, data loss, compacted topics, empty
ranges, kafka.* settings, transactions read with each isolation level, and the option
errors that must stop a query on the driver.

Most tests read one module-wide topic (3 partitions: 40 records, 30 records, none)
written once with known keys, values, headers and timestamps.
"""
from __future__ import annotations

import json
import random
import time

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient as KafkalikeAdmin, OffsetSpec
from tests.waiting import wait_until
from tests.interop.spark_support import (FORMAT, HEADERS_TYPE, SPARK_SCHEMA, Rec, consume_all, create_topic,
                                         failure_and_jobs, fails_on_driver, produce, reader, registered, rows,
                                         spark_error_text, unique)

pytestmark = [pytest.mark.interop, pytest.mark.spark]

BASE_TS = 1_700_000_000_000
COUNTS = {0: 40, 1: 30, 2: 0}


def stamp(partition: int, index: int) -> int:
    """Record `index` of `partition` is stamped BASE_TS + index s (+0.5 s on partition 1)."""
    return BASE_TS + index * 1000 + (500 if partition == 1 else 0)


def shared_records() -> list[Rec]:
    rng = random.Random(7)
    out = []
    for p, count in COUNTS.items():
        for i in range(count):
            key = None if i % 7 == 3 else b"k\x00" + bytes([p, i]) + rng.randbytes(rng.randint(0, 6))
            value = None if i % 11 == 5 else rng.randbytes(rng.randint(0, 40)) + b"\xff\x00"
            headers = None
            if i % 3 == 1:
                headers = (("i", str(i).encode()), ("raw", rng.randbytes(3)))
            elif i % 3 == 2:
                headers = (("empty", None), ("dup", b"1"), ("dup", b"2"))
            out.append(Rec(key, value, p, stamp(p, i), headers))
    return out


class Shared:
    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.topic = create_topic(bootstrap, unique("spark-read"), 3)
        self.records = shared_records()
        reports = produce(bootstrap, self.topic, self.records)
        # (key, value, topic, partition, offset, ts, timestampType, headers) as Spark shows them:
        # headers null for a record without any (Spark's rule), else every header in order.
        self.expected = list(
            (r.key, r.value, self.topic, p, off, r.timestamp, 0, tuple(r.headers) if r.headers else None)
            for r, (p, off) in zip(self.records, reports))
        self.expected.sort(key=lambda e: (e[2], e[3], e[4]))
        self.other = create_topic(bootstrap, unique("spark-read-b"), 1)
        produce(bootstrap, self.other, [Rec(b"b%d" % i, b"other %d" % i) for i in range(10)])

    def where(self, predicate) -> list[tuple]:
        return [e for e in self.expected if predicate(e)]

    @staticmethod
    def plain(expected: list[tuple]) -> list[tuple]:
        """Expected rows without the headers column."""
        return [e[:7] for e in expected]


@pytest.fixture(scope="module")
def compacted(broker):
    """A compacted topic whose cleaner has removed older values of each key, leaving offset
    gaps. Made first in the module, so the cleaner (15 s back-off) runs while other tests do."""
    topic = create_topic(broker.bootstrap, unique("spark-compacted"), 1, config={
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "100"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    produced = 0
    for round_ in range(6):
        for k in range(10):
            producer.produce(topic, key=b"key-%d" % k, value=b"v%d-round%d" % (k, round_))
            produced += 1
        assert producer.flush(10) == 0
        time.sleep(0.25)          # older than segment.ms: the next append rolls a new segment
    producer.produce(topic, key=b"tail", value=b"rolls the last full segment")
    assert producer.flush(10) == 0
    return topic, produced + 1


@pytest.fixture(scope="module")
def shared(broker, compacted) -> Shared:
    return Shared(broker.bootstrap)


# -- schema and topics --------------------------------------------------------------------------

def test_schema_is_sparks_kafka_schema(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic).load()
    assert df.schema.simpleString() == SPARK_SCHEMA
    assert all(f.nullable for f in df.schema.fields)
    with_headers = reader(spark, shared.bootstrap, subscribe=shared.topic, includeHeaders="true").load()
    assert with_headers.schema.simpleString() == SPARK_SCHEMA[:-1] + f",headers:{HEADERS_TYPE}>"


def test_subscribe_reads_every_record_byte_for_byte_with_headers(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic, includeHeaders="true").load()
    got = rows(df)
    assert len(got) == 70
    assert got == shared.expected
    # What a user checks first: null keys and tombstones stay null, not empty.
    assert sum(1 for g in got if g[0] is None) == sum(1 for e in shared.expected if e[0] is None) > 0
    assert sum(1 for g in got if g[1] is None) > 0


def test_without_include_headers_the_same_records(spark, shared):
    got = rows(reader(spark, shared.bootstrap, subscribe=shared.topic).load())
    assert got == shared.plain(shared.expected)


def test_subscribe_to_several_topics_and_a_pattern(spark, shared):
    both = rows(reader(spark, shared.bootstrap, subscribe=f"{shared.topic}, {shared.other}").load())
    assert len(both) == 80 and {r[2] for r in both} == {shared.topic, shared.other}
    # subscribePattern matches whole topic names (Java's Pattern.matches), not substrings.
    stem = shared.topic.rsplit("-", 1)[1]
    by_pattern = rows(reader(spark, shared.bootstrap, subscribePattern=f"spark-read-{stem}").load())
    assert by_pattern == shared.plain(shared.expected)
    assert rows(reader(spark, shared.bootstrap, subscribePattern=stem).load()) == []
    assert len(rows(reader(spark, shared.bootstrap, subscribePattern="spark-read(-b)?-[0-9a-f]{8}").load())) >= 80


def test_assign_reads_only_the_named_partitions(spark, shared):
    got = rows(reader(spark, shared.bootstrap, assign=f'{{"{shared.topic}":[1,2]}}').load())
    assert got == shared.plain(shared.where(lambda e: e[3] == 1))


# -- starting and ending offsets ----------------------------------------------------------------------

def test_offsets_json_with_earliest_and_latest_markers(spark, shared):
    t = shared.topic
    df = reader(spark, shared.bootstrap, subscribe=t,
                startingOffsets=f'{{"{t}":{{"0":5,"1":-2,"2":-2}}}}',
                endingOffsets=f'{{"{t}":{{"0":-1,"1":12,"2":-1}}}}').load()
    expected = shared.where(lambda e: (e[3] == 0 and e[4] >= 5) or (e[3] == 1 and e[4] < 12))
    assert rows(df) == shared.plain(expected)


def test_earliest_and_latest_words(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic, startingOffsets="earliest",
                endingOffsets="latest").load()
    assert rows(df) == shared.plain(shared.expected)


def test_ending_offsets_are_fixed_when_planned(spark, shared, broker):
    """The range is the one planned: records produced after planning are not read."""
    topic = create_topic(broker.bootstrap, unique("spark-planned"), 1)
    produce(broker.bootstrap, topic, [Rec(b"%d" % i, b"before") for i in range(5)])
    df = reader(spark, broker.bootstrap, subscribe=topic,
                startingOffsets=f'{{"{topic}":{{"0":-2}}}}', endingOffsets=f'{{"{topic}":{{"0":5}}}}').load()
    produce(broker.bootstrap, topic, [Rec(b"%d" % i, b"after") for i in range(5)])
    assert [r[1] for r in rows(df)] == [b"before"] * 5


def test_starting_and_ending_timestamp_for_every_partition(spark, shared):
    # Partition 2 has no record at or after the starting time: "latest" starts it at its end.
    df = reader(spark, shared.bootstrap, subscribe=shared.topic, startingTimestamp=BASE_TS + 10_000,
                endingTimestamp=BASE_TS + 20_000, startingOffsetsByTimestampStrategy="latest").load()
    got = rows(df)
    # The first offset whose time is at or after each bound: [10, 20) on both partitions.
    assert got == shared.plain(shared.where(lambda e: e[3] in (0, 1) and 10 <= e[4] < 20))
    assert all(BASE_TS + 10_000 <= g[5] < BASE_TS + 20_000 for g in got)


def test_timestamps_per_partition(spark, shared):
    t = shared.topic
    df = reader(spark, shared.bootstrap, subscribe=t,
                startingOffsetsByTimestamp=f'{{"{t}":{{"0":{BASE_TS + 30_000},"1":{BASE_TS},"2":{BASE_TS}}}}}',
                endingOffsetsByTimestamp=f'{{"{t}":{{"0":{BASE_TS + 99_000},"1":{BASE_TS + 2_000},"2":{BASE_TS + 1}}}}}',
                startingOffsetsByTimestampStrategy="latest").load()
    # p0 from offset 30 to its end (nothing that late: the end is latest); p1 offsets 0 and 1
    # (stamped +0.5 s and +1.5 s); p2 empty.
    expected = shared.where(lambda e: (e[3] == 0 and e[4] >= 30) or (e[3] == 1 and e[4] < 2))
    assert rows(df) == shared.plain(expected)


def test_a_timestamp_without_a_record_fails_by_default(spark, shared):
    message = fails_on_driver(spark, lambda: reader(
        spark, shared.bootstrap, subscribe=shared.topic, startingTimestamp=BASE_TS + 10_000).load().collect())
    assert f"{shared.topic}-2" in message
    assert "startingOffsetsByTimestampStrategy" in message


# -- how many tasks ------------------------------------------------------------------------------------

def test_one_spark_partition_per_non_empty_kafka_partition(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic).load()
    assert df.rdd.getNumPartitions() == 2     # partition 2 is empty: no task for it


def test_min_partitions_splits_big_partitions(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic, minPartitions=7).load()
    # Spark's calculator: 40/70*7 = 4 pieces for partition 0, 30/70*7 = 3 for partition 1.
    assert df.rdd.getNumPartitions() == 7
    assert rows(df) == shared.plain(shared.expected)
    per_task = df.rdd.glom().map(len).collect()
    assert per_task == [10] * 7


def test_max_records_per_partition_caps_every_task(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic, maxRecordsPerPartition=8).load()
    assert df.rdd.getNumPartitions() == 5 + 4      # ceil(40/8) + ceil(30/8)
    per_task = df.rdd.glom().map(len).collect()
    assert max(per_task) <= 8 and sum(per_task) == 70
    assert rows(df) == shared.plain(shared.expected)


# -- data loss -----------------------------------------------------------------------------------------

@pytest.fixture
def truncated(broker):
    """A 100-record topic and a way to delete its first 40 records after a read is planned."""
    topic = create_topic(broker.bootstrap, unique("spark-loss"), 1)
    for chunk in range(4):
        produce(broker.bootstrap, topic, [Rec(b"%d" % (chunk * 25 + i), b"v") for i in range(25)])

    def delete_first_40():
        with KafkalikeAdmin({"bootstrap.servers": broker.bootstrap}) as admin:
            assert admin.delete_records({(topic, 0): 40}) == {(topic, 0): 40}
    return topic, delete_first_40


def planned_read(spark, bootstrap, topic, fail_on_data_loss: str):
    return reader(spark, bootstrap, subscribe=topic, failOnDataLoss=fail_on_data_loss,
                  startingOffsets=f'{{"{topic}":{{"0":0}}}}', endingOffsets=f'{{"{topic}":{{"0":100}}}}').load()


def test_fail_on_data_loss_true_fails_when_planned_records_are_gone(spark, broker, truncated):
    topic, delete_first_40 = truncated
    df = planned_read(spark, broker.bootstrap, topic, "true")
    assert df.rdd.getNumPartitions() == 1          # planned: [0, 100)
    delete_first_40()
    with pytest.raises(Exception) as excinfo:
        df.collect()
    message = spark_error_text(excinfo)
    assert "Some data may have been lost" in message
    assert 'failOnDataLoss' in message and f"{topic}-0" in message


def test_fail_on_data_loss_false_reads_what_is_left(spark, broker, truncated):
    topic, delete_first_40 = truncated
    df = planned_read(spark, broker.bootstrap, topic, "false")
    assert df.rdd.getNumPartitions() == 1
    delete_first_40()
    got = rows(df)
    assert [r[4] for r in got] == list(range(40, 100))
    assert [r[0] for r in got] == [b"%d" % i for i in range(40, 100)]


# -- compacted topics and empty ranges -------------------------------------------------------------------

def test_compacted_topic_with_offset_gaps(spark, broker, compacted):
    topic, produced = compacted

    def judged():
        records = consume_all(broker.bootstrap, topic, 1, expected=1, timeout=10)
        return records if len(records) < produced else None
    survivors = wait_until(judged, timeout=60, interval=1, what="the log cleaner to compact the topic")
    expected = [(m.key(), m.value(), m.offset()) for m in survivors]
    offsets = [o for _, _, o in expected]
    assert offsets[-1] + 1 == produced and len(offsets) < produced      # gaps, and the tail is still there
    # The broker's cleaner logged that pass where Kafka's does: log-cleaner.log, not server.log.
    cleaned = f"[{topic}-0] Cleaned offsets"
    assert cleaned in (broker.app_log_dir / "log-cleaner.log").read_text()
    assert cleaned not in (broker.app_log_dir / "server.log").read_text()
    for options in ({}, {"maxRecordsPerPartition": 4}, {"minPartitions": 9}):
        got = rows(reader(spark, broker.bootstrap, subscribe=topic, **options).load())
        assert [(g[0], g[1], g[4]) for g in got] == expected, options


def test_empty_ranges_read_nothing(spark, shared, broker):
    t = shared.topic
    same = f'{{"{t}":{{"0":10,"1":30,"2":0}}}}'
    df = reader(spark, shared.bootstrap, subscribe=t, startingOffsets=same, endingOffsets=same).load()
    assert df.count() == 0
    empty = create_topic(broker.bootstrap, unique("spark-empty"), 2)
    df = reader(spark, broker.bootstrap, subscribe=empty).load()
    assert df.count() == 0 and df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                                              "timestampType"]
    # A subscribed topic that does not exist reads as empty (Spark's consumer finds no partitions).
    assert reader(spark, broker.bootstrap, subscribe=unique("spark-missing")).load().count() == 0


# -- kafka.* settings reach the consumer ------------------------------------------------------------------------

def test_small_fetch_sizes_still_read_everything(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic, includeHeaders="true",
                **{"kafka.max.partition.fetch.bytes": "64", "kafka.fetch.max.bytes": "64",
                   "kafka.client.id": "spark-small-fetches"}).load()
    assert rows(df) == shared.expected


def test_a_bad_kafka_setting_reaches_the_consumer_in_the_tasks(spark, shared):
    df = reader(spark, shared.bootstrap, subscribe=shared.topic,
                **{"kafka.max.partition.fetch.bytes": "lots"}).load()
    message, jobs = failure_and_jobs(spark, df.collect)
    assert "max.partition.fetch.bytes" in message
    # The consumer is made in the tasks: this error comes from a job, which is also what
    # shows that fails_on_driver below would see one.
    assert jobs != []


# -- transactions and kafka.isolation.level ---------------------------------------------------------------------------

TXN_TIMEOUT = 30


class Transactions:
    """A 2-partition topic written by confluent-kafka's transactional producers, in order:
    a committed transaction (10 records), an aborted one (5), 3 plain records, a
    transaction left open (4), then 2 plain records more (on partition 1, past the open
    transaction's first offset). Every record's (value, partition, offset) is kept by kind."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.topic = create_topic(bootstrap, unique("spark-txn"), 2)
        self.placed: dict[str, list[tuple[bytes, int, int]]] = {}
        writer = self._producer("writer")
        self._in_transaction(writer, "committed", 10)
        writer.commit_transaction(TXN_TIMEOUT)
        self._in_transaction(writer, "aborted", 5)
        writer.abort_transaction(TXN_TIMEOUT)
        self._plain("plain", [0, 1, 1])
        self.open_producer = self._producer("open")
        self._in_transaction(self.open_producer, "open", 4)
        self._plain("late", [1, 1])

    def _producer(self, name: str) -> Producer:
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": unique(f"spark-{name}"),
                             "linger.ms": 5, "transaction.timeout.ms": 300_000})
        producer.init_transactions(TXN_TIMEOUT)
        return producer

    def _send(self, producer: Producer, kind: str, partitions: list[int]) -> None:
        placed = self.placed.setdefault(kind, [])

        def done(err, msg):
            assert err is None, err
            placed.append((msg.value(), msg.partition(), msg.offset()))
        for i, partition in enumerate(partitions):
            producer.produce(self.topic, key=b"k%d" % i, value=f"{kind}-{i}".encode(), partition=partition,
                             on_delivery=done)
        assert producer.flush(TXN_TIMEOUT) == 0
        assert len(placed) == len(partitions)

    def _in_transaction(self, producer: Producer, kind: str, n: int) -> None:
        producer.begin_transaction()
        self._send(producer, kind, [i % 2 for i in range(n)])

    def _plain(self, kind: str, partitions: list[int]) -> None:
        plain = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})
        self._send(plain, kind, partitions)

    def expected(self, *kinds: str) -> list[tuple[bytes, int, int]]:
        return sorted((rec for kind in kinds for rec in self.placed[kind]), key=lambda r: (r[1], r[2]))

    def close(self) -> None:
        try:
            self.open_producer.abort_transaction(TXN_TIMEOUT)
        except Exception:  # noqa: BLE001 - committed by the test already
            pass


@pytest.fixture
def transactions(broker):
    txns = Transactions(broker.bootstrap)
    try:
        yield txns
    finally:
        txns.close()


def values_at(df) -> list[tuple[bytes, int, int]]:
    return [(r[1], r[3], r[4]) for r in rows(df)]


def test_read_committed_reads_exactly_the_committed_records_without_waiting(spark, transactions):
    """The driver plans to each partition's last stable offset, as Spark's does, so the
    read ends where the open transaction starts: no wait for the poll timeout and no data
    loss reported. (Planned to the high watermark, the tasks would wait the 5 minutes out
    and then report the records past the last stable offset as lost.)"""
    t = transactions
    # read_uncommitted sees every record, and warms the Spark workers up for the timing below.
    everything = t.expected("committed", "aborted", "plain", "open", "late")
    assert values_at(reader(spark, t.bootstrap, subscribe=t.topic,
                            **{"kafka.isolation.level": "read_uncommitted"}).load()) == everything
    began = time.monotonic()
    got = values_at(reader(spark, t.bootstrap, subscribe=t.topic, **{"kafka.isolation.level": "read_committed",
                                                                     "kafkaConsumer.pollTimeoutMs": "300000"})
                    .load())
    assert got == t.expected("committed", "plain")
    assert time.monotonic() - began < 120


def test_read_uncommitted_is_the_default_and_reads_every_record(spark, transactions):
    t = transactions
    everything = t.expected("committed", "aborted", "plain", "open", "late")
    assert values_at(reader(spark, t.bootstrap, subscribe=t.topic).load()) == everything


def test_read_committed_reads_a_transaction_once_it_commits(spark, transactions):
    t = transactions
    t.open_producer.commit_transaction(TXN_TIMEOUT)
    got = values_at(reader(spark, t.bootstrap, subscribe=t.topic, **{"kafka.isolation.level": "read_committed"})
                    .load())
    assert got == t.expected("committed", "plain", "open", "late")


def test_read_committed_ending_past_an_open_transaction_says_so(spark, transactions):
    """Ending offsets given past the last stable offset: the task cannot read them yet. That
    is a timeout naming the open transaction, not data loss (the records are there)."""
    t = transactions
    with KafkalikeAdmin({"bootstrap.servers": t.bootstrap}) as admin:
        ends = {p: admin.list_offsets({(t.topic, p): OffsetSpec.latest()})[(t.topic, p)].offset for p in (0, 1)}
    df = reader(spark, t.bootstrap, subscribe=t.topic, endingOffsets=json.dumps({t.topic: {str(p): e for p, e in
                                                                                          ends.items()}}),
                **{"kafka.isolation.level": "read_committed", "kafkaConsumer.pollTimeoutMs": "2000"}).load()
    message, jobs = failure_and_jobs(spark, df.collect)
    assert jobs != [] and "a transaction that is still open" in message
    assert "Some data may have been lost" not in message


# -- option errors stop the query on the driver --------------------------------------------------------------------

def bad_options(shared):
    t = shared.topic
    return {
        "no topic option": ({}, "One of the following options must be specified for Kafka source: subscribe, "
                                "subscribepattern, assign"),
        "two topic options": ({"subscribe": t, "assign": f'{{"{t}":[0]}}'},
                              "Only one of the following options can be specified for Kafka source"),
        "latest as batch start": ({"subscribe": t, "startingOffsets": "latest"},
                                  "starting offset can't be latest for batch queries on Kafka"),
        "-1 as batch start": ({"subscribe": t, "startingOffsets": f'{{"{t}":{{"0":-1,"1":-2,"2":-2}}}}'},
                              "can't be latest for batch queries on Kafka"),
        "earliest as batch end": ({"subscribe": t, "endingOffsets": "earliest"},
                                  "ending offset can't be earliest for batch queries on Kafka"),
        "malformed JSON": ({"subscribe": t, "startingOffsets": f'{{"{t}":{{"0":5,}}}}'},
                           'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'),
        "malformed assign": ({"assign": f'{{"{t}":[0, "x"]}}'}, 'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}'),
        "unknown partition in assign": ({"assign": f'{{"{t}":[0,7]}}'}, "'assign'"),
        "offsets not naming every partition": ({"subscribe": t, "startingOffsets": f'{{"{t}":{{"0":1}}}}'},
                                               "you must specify all TopicPartitions"),
        "kafka.auto.offset.reset": ({"subscribe": t, "kafka.auto.offset.reset": "earliest"},
                                    "Kafka option 'auto.offset.reset' is not supported"),
        "kafka.enable.auto.commit": ({"subscribe": t, "kafka.enable.auto.commit": "true"},
                                     "Kafka option 'enable.auto.commit' is not supported"),
        "minPartitions zero": ({"subscribe": t, "minPartitions": "0"}, "minPartitions"),
        "kafka.isolation.level": ({"subscribe": t, "kafka.isolation.level": "committed"},
                                  "Invalid value committed for configuration isolation.level"),
    }


CASES = ["no topic option", "two topic options", "latest as batch start", "-1 as batch start",
         "earliest as batch end", "malformed JSON", "malformed assign", "unknown partition in assign",
         "offsets not naming every partition", "kafka.auto.offset.reset", "kafka.enable.auto.commit",
         "minPartitions zero", "kafka.isolation.level"]


@pytest.mark.parametrize("case", CASES)
def test_wrong_options_fail_on_the_driver_naming_the_option(spark, shared, case):
    options, expected = bad_options(shared)[case]
    message = fails_on_driver(spark, lambda: reader(spark, shared.bootstrap, **options).load().collect())
    assert expected in message
    if case == "unknown partition in assign":
        assert f"{shared.topic}-7" in message


def test_missing_bootstrap_servers_fails_on_the_driver(spark, shared):
    message = fails_on_driver(spark, lambda: registered(spark).read.format(FORMAT)
                              .option("subscribe", shared.topic).load().collect())
    assert "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer" in message
