"""Batch writes through df.write.format("kafkalike"), judged by kcat (keys and values, byte
for byte, and where each record went) and confluent-kafka (headers): Spark's sink columns
(value; key, topic, partition, headers optional), string or binary, the topic option over
the column, a refusal by the broker failing the job with the broker's error, and schema
errors failing before any task.
"""
from __future__ import annotations

import random

import pytest
from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

from tests.interop.spark_support import (FORMAT, consume_all, create_topic, fails_on_driver, kcat_consume,
                                         registered, spark_error_text, unique)

pytestmark = [pytest.mark.interop, pytest.mark.spark]

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def writer(df, bootstrap: str, **options):
    w = df.write.format(FORMAT).mode("append").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        w = w.option(key, str(value))
    return w


def binary_rows(count: int, seed: int) -> list[tuple[bytes, bytes]]:
    """Keys and values over all 256 byte values (newlines and NULs included)."""
    rng = random.Random(seed)
    return [(b"\n" + i.to_bytes(2, "big") + rng.randbytes(rng.randint(0, 10)),
             rng.randbytes(rng.randint(0, 300)) + b"\x00\r\n") for i in range(count)]


def test_value_only_strings_with_the_topic_option(spark, broker):
    topic = create_topic(broker.bootstrap, unique("spark-w-value"), 1)
    values = [f"valeur {i} — ünïcode ✓" for i in range(50)] + [""]
    df = registered(spark).createDataFrame([(v,) for v in values], "value string")
    writer(df.coalesce(1), broker.bootstrap, topic=topic).save()
    got = kcat_consume(broker.bootstrap, topic)
    # Strings go out as their UTF-8 bytes; no key column means a null key (kcat: length -1).
    assert [g[4] for g in got] == [v.encode() for v in values]
    assert all(g[3] is None for g in got)


def test_binary_keys_and_values_byte_for_byte(spark, broker):
    topic = create_topic(broker.bootstrap, unique("spark-w-binary"), 3)
    data = binary_rows(300, seed=1)
    df = registered(spark).createDataFrame([(bytearray(k), bytearray(v)) for k, v in data],
                                           "key binary, value binary")
    writer(df, broker.bootstrap, topic=topic).save()
    got = kcat_consume(broker.bootstrap, topic)
    assert sorted((g[3], g[4]) for g in got) == sorted(data)
    # Keyed records go where Kafka's default partitioner puts them: one key, one partition.
    by_key = {}
    for g in got:
        by_key.setdefault(g[3], set()).add(g[0])
    assert all(len(parts) == 1 for parts in by_key.values())


def test_string_key_binary_value_and_null_values(spark, broker):
    topic = create_topic(broker.bootstrap, unique("spark-w-mixed"), 1)
    rows = [("k1", bytearray(b"\x00\x01")), ("k2", None), (None, bytearray(b"no key"))]
    df = registered(spark).createDataFrame(rows, "key string, value binary")
    writer(df.coalesce(1), broker.bootstrap, topic=topic).save()
    got = kcat_consume(broker.bootstrap, topic)
    assert [(g[3], g[4]) for g in got] == [(b"k1", b"\x00\x01"), (b"k2", None), (None, b"no key")]


def test_topic_column_and_the_topic_option_that_overrides_it(spark, broker):
    a = create_topic(broker.bootstrap, unique("spark-w-a"), 1)
    b = create_topic(broker.bootstrap, unique("spark-w-b"), 1)
    c = create_topic(broker.bootstrap, unique("spark-w-c"), 1)
    df = registered(spark).createDataFrame([(a, "to a 1"), (b, "to b"), (a, "to a 2")], "topic string, value string")
    writer(df.coalesce(1), broker.bootstrap).save()
    assert [g[4] for g in kcat_consume(broker.bootstrap, a)] == [b"to a 1", b"to a 2"]
    assert [g[4] for g in kcat_consume(broker.bootstrap, b)] == [b"to b"]
    # Spark's rule: the topic option wins over a topic column.
    writer(df.coalesce(1), broker.bootstrap, topic=c).save()
    assert [g[4] for g in kcat_consume(broker.bootstrap, c)] == [b"to a 1", b"to b", b"to a 2"]
    assert len(kcat_consume(broker.bootstrap, a)) == 2


def test_partition_column_places_each_record(spark, broker):
    topic = create_topic(broker.bootstrap, unique("spark-w-part"), 4)
    rows = [("same key", f"v{i}", i % 4) for i in range(20)]
    df = registered(spark).createDataFrame(rows, "key string, value string, partition int")
    writer(df.coalesce(1), broker.bootstrap, topic=topic).save()
    got = kcat_consume(broker.bootstrap, topic)
    assert sorted((g[0], g[4]) for g in got) == sorted((p, v.encode()) for _, v, p in rows)


def test_headers_column_is_written_exactly(spark, broker):
    topic = create_topic(broker.bootstrap, unique("spark-w-headers"), 1)
    headers = [[("trace", bytearray(b"\x00\xffid")), ("trace", bytearray(b"again")), ("none", None)],
               None, []]
    schema = StructType([StructField("value", StringType()), StructField("headers", HEADERS)])
    df = registered(spark).createDataFrame([(f"r{i}", h) for i, h in enumerate(headers)], schema)
    writer(df.coalesce(1), broker.bootstrap, topic=topic).save()
    got = consume_all(broker.bootstrap, topic, 1, expected=3)
    assert [m.value() for m in got] == [b"r0", b"r1", b"r2"]
    assert got[0].headers() == [("trace", b"\x00\xffid"), ("trace", b"again"), ("none", None)]
    assert not got[1].headers() and not got[2].headers()


def test_a_record_the_broker_refuses_fails_the_job_with_the_brokers_error(spark, broker):
    topic = create_topic(broker.bootstrap, unique("spark-w-too-big"), 1, config={"max.message.bytes": "1000"})
    df = registered(spark).createDataFrame([(bytearray(b"small"),), (bytearray(b"x" * 5000),)], "value binary")
    with pytest.raises(Exception) as excinfo:
        writer(df.coalesce(1), broker.bootstrap, topic=topic).save()
    message = spark_error_text(excinfo)
    assert "RecordTooLarge" in message
    # The broker's own words for the refusal, carried through the producer to the job.
    assert "exceeds the maximum configured value of 1000" in message
    # Nothing too big got in.
    assert all(len(g[4]) < 1000 for g in kcat_consume(broker.bootstrap, topic))


@pytest.mark.parametrize("ddl, options, expected", [
    ("key string", {"topic": "t"}, "Required attribute 'value' not found"),
    ("value string", {}, "topic option required when no 'topic' attribute is present"),
    ("topic int, value string", {}, "Topic type must be a String"),
    ("key int, value string", {"topic": "t"}, "key attribute type must be a string or binary"),
    ("value double", {"topic": "t"}, "value attribute type must be a string or binary"),
    ("value string, partition string", {"topic": "t"}, "partition attribute type must be an int"),
    ("value string, headers array<string>", {"topic": "t"}, "headers attribute type must be"),
])
def test_schema_errors_fail_before_any_task(spark, broker, ddl, options, expected):
    df = registered(spark).createDataFrame([], ddl)
    message = fails_on_driver(spark, lambda: writer(df, broker.bootstrap, **options).save())
    assert expected in message


def test_serializer_options_and_missing_bootstrap_fail_before_any_task(spark, broker):
    df = registered(spark).createDataFrame([("v",)], "value string")
    message = fails_on_driver(spark, lambda: writer(df, broker.bootstrap, topic="t",
                                                    **{"kafka.value.serializer": "x"}).save())
    assert "Kafka option 'value.serializer' is not supported" in message
    message = fails_on_driver(spark, lambda: df.write.format(FORMAT).mode("append").option("topic", "t").save())
    assert "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer" in message


def test_a_null_topic_in_the_data_fails_the_job(spark, broker):
    df = registered(spark).createDataFrame([(None, "v")], "topic string, value string")
    with pytest.raises(Exception) as excinfo:
        writer(df, broker.bootstrap).save()
    assert "null topic present in the data" in spark_error_text(excinfo)
