"""PySpark connector: Spark's Kafka source and sink as the Python data source "kafkalike".

`register(spark)` once per session, then `spark.read.format("kafkalike")` (and
`readStream`, `write`, `writeStream`) with Spark's Kafka options. docs/spark.md is the guide.
"""
from __future__ import annotations

FORMAT = "kafkalike"


def register(spark) -> None:
    """Make format("kafkalike") available in `spark` (a SparkSession)."""
    from kafkalike.spark.source import KafkaDataSource
    spark.dataSource.register(KafkaDataSource)


__all__ = ["FORMAT", "register"]
