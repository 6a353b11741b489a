"""Structured Streaming through spark.readStream.format("kafkalike") and
writeStream.format("kafkalike"): micro-batches over offsets kept in Spark's checkpoint,
maxOffsetsPerTrigger, a query stopped and restarted from its checkpoint (every record
exactly once in a file sink), partitions added while a query is stopped, Spark's default
of starting a new query at the latest offsets, a topic made again under a query (data
loss, by failOnDataLoss), and the Kafka sink in a stream. Records go
in with confluent-kafka and are judged with it or kcat.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.waiting import wait_until
from tests.interop.spark_support import (FORMAT, Rec, consume_all, create_topic, kcat_consume, produce, registered,
                                         spark_error_text, unique)

pytestmark = [pytest.mark.interop, pytest.mark.spark]

QUERY_TIMEOUT = 120


def stream(spark, bootstrap: str, **options):
    r = registered(spark).readStream.format(FORMAT).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        r = r.option(key, str(value))
    return r.load()


def run_available_now(df, checkpoint: Path, sink: str = "memory", name: str | None = None,
                      path: Path | None = None, **options):
    """Start a query with trigger(availableNow=True), wait for it to finish, return it."""
    w = df.writeStream.format(sink).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    if name:
        w = w.queryName(name)
    for key, value in options.items():
        w = w.option(key, str(value))
    query = w.start(str(path)) if path is not None else w.start()
    finished = query.awaitTermination(QUERY_TIMEOUT)
    if not finished:
        query.stop()
        raise AssertionError(f"availableNow query did not finish in {QUERY_TIMEOUT}s")
    assert query.exception() is None, query.exception()
    return query


def checkpoint_offsets(checkpoint: Path) -> dict[int, dict]:
    """batch id -> the source offset Spark logged for it (the last line of offsets/<id>)."""
    out = {}
    for f in (checkpoint / "offsets").iterdir():
        if f.name.isdigit():
            lines = f.read_text().splitlines()
            assert lines[0] == "v1"
            out[int(f.name)] = json.loads(lines[-1])
    return out


def data_batches(query) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def keyed(n: int, partitions: int, tag: str) -> list[Rec]:
    return [Rec(f"{tag}-{i}".encode(), f"value {tag} {i}".encode(), i % partitions) for i in range(n)]


def test_available_now_with_max_offsets_per_trigger_into_memory(spark, broker, shm_path):
    topic = create_topic(broker.bootstrap, unique("spark-s-rate"), 2)
    records = keyed(60, 2, "r")
    placed = produce(broker.bootstrap, topic, records)
    df = stream(spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=25)
    name = unique("rate").replace("-", "_")
    query = run_available_now(df.selectExpr("key", "value", "partition", "offset"), shm_path / "cp", name=name)
    got = sorted((bytes(r.key), bytes(r.value), r.partition, r.offset) for r in spark.sql(f"SELECT * FROM {name}")
                 .collect())
    assert got == sorted((rec.key, rec.value, p, o) for rec, (p, o) in zip(records, placed))
    # 60 records at most 25 a trigger: at least three micro-batches, none over the limit.
    sizes = data_batches(query)
    assert len(sizes) >= 3 and max(sizes) <= 25 and sum(sizes) == 60, sizes
    # The checkpoint holds Spark's Kafka offsets JSON: {"topic":{"partition":next offset}}.
    logged = checkpoint_offsets(shm_path / "cp")
    assert logged[max(logged)] == {topic: {"0": 30, "1": 30}}
    assert len(logged) == len(sizes)
    ends = [sum(logged[b][topic].values()) for b in sorted(logged)]
    assert ends == sorted(ends) and all(b - a <= 25 for a, b in zip([0] + ends, ends))


def test_max_offsets_per_trigger_below_the_partition_count_still_reads_everything(spark, broker, shm_path):
    """Spark gives each lagging partition at least one offset a trigger ("don't starve small
    partitions"), so a limit smaller than the number of partitions still makes progress."""
    topic = create_topic(broker.bootstrap, unique("spark-s-tiny"), 3)
    produce(broker.bootstrap, topic, keyed(9, 3, "t"))
    df = stream(spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=1)
    name = unique("tiny").replace("-", "_")
    query = run_available_now(df.select("offset", "partition"), shm_path / "cp", name=name)
    assert spark.sql(f"SELECT * FROM {name}").count() == 9
    assert data_batches(query) == [3, 3, 3]


def test_stopped_and_restarted_query_reads_every_record_exactly_once(spark, broker, shm_path):
    topic = create_topic(broker.bootstrap, unique("spark-s-restart"), 2)
    first = keyed(40, 2, "a")
    placed = produce(broker.bootstrap, topic, first)
    out, checkpoint = shm_path / "out", shm_path / "cp"
    df = stream(spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=10)
    rows = df.selectExpr("CAST(key AS STRING) AS key", "partition", "offset")
    running = (rows.writeStream.format("parquet").option("checkpointLocation", str(checkpoint))
               .trigger(processingTime="500 milliseconds").start(str(out)))
    try:
        wait_until(lambda: len(checkpoint_offsets(checkpoint)) >= 2 if (checkpoint / "offsets").exists() else False,
                   timeout=QUERY_TIMEOUT, interval=0.2, what="two micro-batches")
    finally:
        running.stop()
    assert running.exception() is None
    done_before = sum(data_batches(running))
    assert 0 < done_before < 40          # stopped part-way
    second = keyed(20, 2, "b")
    placed += produce(broker.bootstrap, topic, second)
    # The restarted query ignores startingOffsets and resumes from its checkpoint.
    df = stream(spark, broker.bootstrap, subscribe=topic, startingOffsets="latest")
    run_available_now(df.selectExpr("CAST(key AS STRING) AS key", "partition", "offset"), checkpoint,
                      sink="parquet", path=out)
    got = sorted((r.key, r.partition, r.offset) for r in spark.read.parquet(str(out)).collect())
    assert got == sorted((rec.key.decode(), p, o) for rec, (p, o) in zip(first + second, placed))
    assert checkpoint_offsets(checkpoint)[max(checkpoint_offsets(checkpoint))] == {topic: {"0": 30, "1": 30}}


def test_a_new_query_starts_at_the_latest_offsets_by_default(spark, broker, shm_path):
    topic = create_topic(broker.bootstrap, unique("spark-s-latest"), 1)
    produce(broker.bootstrap, topic, keyed(5, 1, "old"))
    out, checkpoint = shm_path / "out", shm_path / "cp"
    df = stream(spark, broker.bootstrap, subscribe=topic)
    run_available_now(df.selectExpr("CAST(value AS STRING) AS value"), checkpoint, sink="parquet", path=out)
    assert spark.read.schema("value string").parquet(str(out)).count() == 0
    assert checkpoint_offsets(checkpoint) in ({}, {0: {topic: {"0": 5}}})
    produce(broker.bootstrap, topic, keyed(3, 1, "new"))
    run_available_now(stream(spark, broker.bootstrap, subscribe=topic).selectExpr("CAST(value AS STRING) AS value"),
                      checkpoint, sink="parquet", path=out)
    assert sorted(r.value for r in spark.read.parquet(str(out)).collect()) == [f"value new {i}" for i in range(3)]


def test_new_partitions_are_picked_up_from_their_start(spark, broker, shm_path):
    topic = create_topic(broker.bootstrap, unique("spark-s-grow"), 1)
    produce(broker.bootstrap, topic, keyed(10, 1, "one"))
    out, checkpoint = shm_path / "out", shm_path / "cp"

    def run():
        df = stream(spark, broker.bootstrap, subscribePattern=topic, startingOffsets="earliest")
        run_available_now(df.selectExpr("CAST(key AS STRING) AS key", "partition", "offset"), checkpoint,
                          sink="parquet", path=out)
        return sorted((r.partition, r.offset, r.key) for r in spark.read.parquet(str(out)).collect())

    assert [(p, o) for p, o, _ in run()] == [(0, i) for i in range(10)]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(20)
    wait_until(lambda: len(admin.list_topics(topic, timeout=5).topics[topic].partitions) == 3, 20,
               what="3 partitions in metadata")
    more = [Rec(f"new-{i}".encode(), b"v", i % 3) for i in range(9)]
    produce(broker.bootstrap, topic, more)
    got = run()
    assert len(got) == 19
    assert [(p, o) for p, o, _ in got if p > 0] == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert checkpoint_offsets(checkpoint)[max(checkpoint_offsets(checkpoint))] == {topic: {"0": 13, "1": 3, "2": 3}}


def make_again(bootstrap: str, topic: str) -> None:
    """Delete `topic` and create it again, empty, under the same name."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic], operation_timeout=30)[topic].result(60)

    def created() -> bool:
        try:
            create_topic(bootstrap, topic, 1)
            return True
        except KafkaException:   # still being deleted
            return False
    wait_until(created, 60, what=f"{topic} made again", interval=0.5)


def test_a_topic_made_again_with_fewer_records_is_data_loss(spark, broker, shm_path):
    """As Spark's Kafka source: a partition whose offsets went back below the checkpoint's
    fails the query with failOnDataLoss=true; with false the batch is let pass with a
    warning and the query reads on from the new end (what the topic held below the old
    offset then is missed, as in Spark)."""
    topic = create_topic(broker.bootstrap, unique("spark-s-again"), 1)
    produce(broker.bootstrap, topic, keyed(30, 1, "old"))
    out, checkpoint = shm_path / "out", shm_path / "cp"

    def run(fail_on_data_loss: str):
        df = stream(spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest",
                    failOnDataLoss=fail_on_data_loss)
        run_available_now(df.selectExpr("CAST(value AS STRING) AS value"), checkpoint, sink="parquet", path=out)
        return sorted(r.value for r in spark.read.parquet(str(out)).collect())

    assert len(run("true")) == 30
    make_again(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, keyed(5, 1, "new"))
    with pytest.raises(Exception) as excinfo:
        run("true")
    message = spark_error_text(excinfo)
    assert f"Partition {topic}-0's offset was changed from 30 to 5" in message
    assert 'set the source option "failOnDataLoss" to "false"' in message
    got = run("false")
    assert len(got) == 30 and not any(v.startswith("value new") for v in got)
    assert checkpoint_offsets(checkpoint)[max(checkpoint_offsets(checkpoint))] == {topic: {"0": 5}}
    produce(broker.bootstrap, topic, keyed(3, 1, "newer"))
    got = run("false")
    assert [v for v in got if not v.startswith("value old")] == [f"value newer {i}" for i in range(3)]


def test_kafka_sink_in_a_stream(spark, broker, shm_path):
    src = create_topic(broker.bootstrap, unique("spark-s-src"), 2)
    dst = create_topic(broker.bootstrap, unique("spark-s-dst"), 1)
    records = [Rec(b"\x00k%d\n" % i if i % 4 else None, bytes(range(i, i + 30)), i % 2,
                   headers=(("h", b"\xff%d" % i),) if i % 2 else None) for i in range(40)]
    produce(broker.bootstrap, src, records)
    df = stream(spark, broker.bootstrap, subscribe=src, startingOffsets="earliest", includeHeaders="true")
    run_available_now(df.select("key", "value", "headers"), shm_path / "cp", sink=FORMAT,
                      **{"kafka.bootstrap.servers": broker.bootstrap, "topic": dst})
    got = kcat_consume(broker.bootstrap, dst)
    assert sorted((g[3] or b"", g[4]) for g in got) == sorted((r.key or b"", r.value) for r in records)
    assert sum(1 for g in got if g[3] is None) == 10
    judged = consume_all(broker.bootstrap, dst, 1, expected=40)
    assert sorted((m.value(), tuple(m.headers() or ())) for m in judged) == \
        sorted((r.value, r.headers or ()) for r in records)


def test_ending_offsets_are_refused_in_a_stream(spark, broker, shm_path):
    topic = create_topic(broker.bootstrap, unique("spark-s-bad"), 1)
    with pytest.raises(Exception) as excinfo:
        df = stream(spark, broker.bootstrap, subscribe=topic, endingOffsets="latest")
        run_available_now(df, shm_path / "cp", name=unique("bad").replace("-", "_"))
    assert "ending offset not valid in streaming queries" in spark_error_text(excinfo)
