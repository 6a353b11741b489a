"""The Spark the tests and the lab run on: a local session that reads a Python data
source yielding Arrow batches, and a standalone cluster whose executors run Python."""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

import pytest

from kafkalike.lab.spark import REPO_ROOT, spark_env

pytestmark = [pytest.mark.spark, pytest.mark.integration]

# What a Kafka-shaped source returns; the Arrow types a read() must yield for it follow.
DDL = ("key binary, topic string, partition int, offset long, timestamp timestamp, "
       "headers array<struct<key string, value binary>>")
TIMESTAMP_MS = 1_700_000_000_123


def arrow_batch():
    """Two rows: every column set in the first, nulls and an empty array in the second."""
    import pyarrow as pa

    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    columns = [
        pa.array([b"k\x00\xff", None], pa.binary()),
        pa.array(["t1", "t1"], pa.string()),
        pa.array([0, 2], pa.int32()),
        pa.array([41, 2**40], pa.int64()),
        # TimestampType: microseconds with tz "UTC", exactly (Spark compares the schema).
        pa.array([TIMESTAMP_MS * 1000, None], pa.timestamp("us", tz="UTC")),
        pa.array([[{"key": "h1", "value": b"v1"}, {"key": "h2", "value": None}], []], pa.list_(header)),
    ]
    names = ["key", "topic", "partition", "offset", "timestamp", "headers"]
    return pa.RecordBatch.from_arrays(columns, names=names)


def test_python_data_source_reads_arrow_batches(spark):
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                                   StructType, TimestampType)

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(0), InputPartition(1)]

        def read(self, partition):
            if partition.value == 0:
                yield arrow_batch()

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "kltest"

        def schema(self):
            return DDL

        def reader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    df = spark.read.format("kltest").load()

    header = StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)])
    assert df.schema == StructType([
        StructField("key", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("headers", ArrayType(header, True), True),
    ])
    rows = df.orderBy("offset").collect()
    assert [row.asDict(recursive=True) for row in rows] == [
        {"key": b"k\x00\xff", "topic": "t1", "partition": 0, "offset": 41,
         # collect() gives naive datetimes in the driver's local time zone
         "timestamp": datetime.datetime.fromtimestamp(TIMESTAMP_MS / 1000),
         "headers": [{"key": "h1", "value": b"v1"}, {"key": "h2", "value": None}]},
        {"key": None, "topic": "t1", "partition": 2, "offset": 2**40, "timestamp": None, "headers": []},
    ]
    # The instant itself, free of any time zone: epoch microseconds.
    micros = df.selectExpr("unix_micros(timestamp) AS us").where("us IS NOT NULL").collect()
    assert [row.us for row in micros] == [TIMESTAMP_MS * 1000]
    assert df.selectExpr("CAST(timestamp AS STRING) AS s").where("s IS NOT NULL").first().s == \
        "2023-11-14 22:13:20.123"  # the session time zone is UTC


def test_python_data_source_rejects_other_timestamp_types(spark):
    """Only timestamp[us, tz=UTC] passes for TimestampType: ms, ns or another zone do not."""
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class Reader(DataSourceReader):
        def read(self, partition):
            import pyarrow as pa
            yield pa.RecordBatch.from_arrays([pa.array([TIMESTAMP_MS], pa.timestamp("ms", tz="UTC"))], names=["ts"])

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "kltest_ms"

        def schema(self):
            return "ts timestamp"

        def reader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    with pytest.raises(Exception, match="DATA_SOURCE_RETURN_SCHEMA_MISMATCH"):
        spark.read.format("kltest_ms").load().collect()


# The driver of a job on the standalone cluster: a process of its own, as this one's
# JVM holds the `spark` session. It prints one JSON line after RESULT.
STANDALONE_DRIVER = r"""
import json, os, sys, time
from kafkalike.lab.spark import local_session

spark = local_session(sys.argv[1], app_name="kafkalike-standalone-test")
sc = spark.sparkContext
deadline = time.monotonic() + 120
# The driver counts itself among the block managers: wait for both executors.
while sc._jsc.sc().getExecutorMemoryStatus().size() < 3:
    if time.monotonic() > deadline:
        raise SystemExit("executors did not register")
    time.sleep(0.2)

count = spark.range(0, 1000, numPartitions=4).count()

def where(index, rows):
    import kafkalike
    time.sleep(0.5)  # long enough that both executors take tasks
    yield {"partition": index, "rows": sum(1 for _ in rows), "python": sys.executable,
           "cwd": os.getcwd(), "kafkalike": os.path.dirname(kafkalike.__file__)}

tasks = sc.parallelize(range(80), 8).mapPartitionsWithIndex(where).collect()
squares = spark.range(10).selectExpr("id").rdd.map(lambda row: row.id * row.id).sum()
print("RESULT " + json.dumps({"count": count, "tasks": tasks, "squares": squares}), flush=True)
spark.stop()
"""


def test_standalone_cluster_runs_python_on_executors(spark_standalone):
    env = dict(os.environ, **spark_env())
    proc = subprocess.run([sys.executable, "-c", STANDALONE_DRIVER, spark_standalone.master_url],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"driver exited with {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}\n"
        f"cluster logs:\n{spark_standalone.log_tail(20)}")
    result = json.loads(lines[-1][len("RESULT "):])

    assert result["count"] == 1000
    assert result["squares"] == sum(i * i for i in range(10))
    tasks = sorted(result["tasks"], key=lambda task: task["partition"])
    assert [task["partition"] for task in tasks] == list(range(8))
    assert sum(task["rows"] for task in tasks) == 80
    assert {task["python"] for task in tasks} == {sys.executable}
    assert {task["kafkalike"] for task in tasks} == {str(REPO_ROOT / "kafkalike")}
    # Python ran inside executors, which run in their worker's work dir: both workers worked.
    used = {worker for task in tasks for worker in (1, 2)
            if task["cwd"].startswith(str(spark_standalone.worker_dir(worker) / "work") + os.sep)}
    assert used == {1, 2}, [task["cwd"] for task in tasks]
