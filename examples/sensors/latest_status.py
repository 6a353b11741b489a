"""Each sensor's latest status with its count of critical alerts: a Spark batch job over two topics.

    python examples/sensors/latest_status.py [--bootstrap-server localhost:9092] [--master local[2]]

It loads "sensor-health" and "sensor-alerts" with Spark's Kafka source (the format
"kafkalike", the same options as Spark's format("kafka")), parses the JSON values, keeps
each sensor's latest health event by event time (the Kafka offset breaks a tie),
counts each sensor's critical alerts and joins the two:

    sensor      status        temp C  battery %  updated (UTC)            critical alerts
    sensor-01   ok              24.1         71  2026-11-24 13:40:05.000                2

From other Python code with a SparkSession of your own:

    from latest_status import main
    rows = main(spark, "localhost:9092")      # a list of pyspark Rows, by sensor id
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone

try:
    import kafkalike  # noqa: F401
except ImportError:  # run from a checkout without `pip install -e .`
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

HEALTH_TOPIC = "sensor-health"
ALERTS_TOPIC = "sensor-alerts"
HEALTH_SCHEMA = "sensor_id STRING, temperature DOUBLE, battery INT, status STRING, timestamp LONG"
ALERT_SCHEMA = "sensor_id STRING, level STRING, message STRING, timestamp LONG"
COLUMNS = ("sensor_id", "status", "temperature", "battery", "timestamp", "critical_alerts")


def load(spark, bootstrap: str, topic: str, schema: str):
    """A topic's JSON values as columns, next to the Kafka partition and offset."""
    from pyspark.sql import functions as F
    return (spark.read.format("kafkalike")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .select(F.from_json(F.col("value").cast("string"), schema).alias("event"), "partition", "offset")
            .select("event.*", "partition", "offset"))


def latest_status(spark, bootstrap: str, health_topic: str = HEALTH_TOPIC, alerts_topic: str = ALERTS_TOPIC):
    """The DataFrame: one row per sensor that reported health, ordered by sensor id."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    health = load(spark, bootstrap, health_topic, HEALTH_SCHEMA).where(F.col("sensor_id").isNotNull())
    newest_first = Window.partitionBy("sensor_id").orderBy(F.col("timestamp").desc(), F.col("offset").desc())
    latest = (health.withColumn("rank", F.row_number().over(newest_first))
              .where("rank = 1")
              .select("sensor_id", "status", "temperature", "battery", "timestamp"))
    critical = (load(spark, bootstrap, alerts_topic, ALERT_SCHEMA)
                .where(F.col("level") == "critical")
                .groupBy("sensor_id")
                .agg(F.count("*").alias("critical_alerts")))
    return (latest.join(critical, "sensor_id", "left")
            .select(*COLUMNS[:-1], F.coalesce("critical_alerts", F.lit(0)).alias("critical_alerts"))
            .orderBy("sensor_id"))


def main(spark, bootstrap: str, health_topic: str = HEALTH_TOPIC, alerts_topic: str = ALERTS_TOPIC) -> list:
    """Run the job in `spark` (a SparkSession) and return its rows (fields as COLUMNS)."""
    import kafkalike.spark
    kafkalike.spark.register(spark)
    return latest_status(spark, bootstrap, health_topic, alerts_topic).collect()


def report(rows) -> str:
    """The rows as the table the command line prints."""
    lines = [f"{'sensor':<12}{'status':<14}{'temp C':>7}{'battery %':>11}  {'updated (UTC)':<25}"
             f"{'critical alerts':>15}"]
    for row in rows:
        updated = datetime.fromtimestamp(row.timestamp / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        lines.append(f"{row.sensor_id:<12}{row.status:<14}{row.temperature:>7.1f}{row.battery:>11}  "
                     f"{updated:<25}{row.critical_alerts:>15}")
    if not rows:
        lines.append("(no health events yet: run produce_health.py first)")
    return "\n".join(lines)


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default="localhost:9092", help="default: %(default)s")
    parser.add_argument("--master", default="local[2]", help="Spark master (default: %(default)s)")
    parser.add_argument("--health-topic", default=HEALTH_TOPIC, help="default: %(default)s")
    parser.add_argument("--alerts-topic", default=ALERTS_TOPIC, help="default: %(default)s")
    args = parser.parse_args(argv)

    # A local session whose Python workers run this interpreter (so they import the same
    # kafkalike and pyarrow) and which binds to loopback; see docs/spark.md.
    from kafkalike.lab.spark import local_session
    spark = local_session(args.master, app_name="sensor-latest-status")
    try:
        print(report(main(spark, args.bootstrap_server, args.health_topic, args.alerts_topic)))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(cli())
