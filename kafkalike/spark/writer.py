"""The Kafka sink: DataFrame rows in, records out through kafkalike's producer.

Spark's Kafka sink columns and rules: `value` is required; `key`, `topic`,
`partition` and `headers` are optional; a `topic` option overrides the column. Each
task produces its rows with acks=all and idempotence unless the user's kafka.* options
say otherwise, flushes, and fails with the broker's error if any record was refused:
a job either reports success for every row or fails. As with Spark's own sink, a task
that is retried after a partial failure may write its earlier rows again
(at-least-once).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

import pyarrow as pa

from kafkalike.client.producer import KafkaProducer
from kafkalike.spark.options import KafkaOptionError, SinkOptions

PRODUCER_DEFAULTS = {"acks": "all", "enable.idempotence": "true", "linger.ms": "5",
                     "client.id": "kafkalike-spark-writer"}


def check_sink_schema(schema, topic_option: str | None) -> None:
    """Spark's KafkaWriter.validateQuery, on the Spark schema, before any task runs."""
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if topic_option is None:
        if "topic" not in fields:
            raise KafkaOptionError("topic option required when no 'topic' attribute is present. Use the topic "
                                   "option for setting a topic.")
        if not isinstance(fields["topic"], StringType):
            raise KafkaOptionError(f"Topic type must be a String, found {fields['topic'].simpleString()}")
    if "value" not in fields:
        raise KafkaOptionError("Required attribute 'value' not found")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], (StringType, BinaryType)):
            raise KafkaOptionError(f"{name} attribute type must be a string or binary")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise KafkaOptionError("partition attribute type must be an int")
    if "headers" in fields:
        h = fields["headers"]
        ok = (isinstance(h, ArrayType) and isinstance(h.elementType, StructType)
              and [f.name for f in h.elementType.fields] == ["key", "value"]
              and isinstance(h.elementType.fields[0].dataType, StringType)
              and isinstance(h.elementType.fields[1].dataType, BinaryType))
        if not ok:
            raise KafkaOptionError("headers attribute type must be an array<struct<key:string,value:binary>>")


@dataclass
class WriteResult:
    records: int


def producer_config(client_config: Mapping[str, str]) -> dict[str, str]:
    """The sink's producer settings: PRODUCER_DEFAULTS under the user's kafka.* options.

    Idempotence is a default as in Java 3's producer (KIP-679), so it gives way as it does
    there: settings that cannot go with it (acks other than all, retries=0, more than 5
    requests in flight) turn it off unless enable.idempotence is set too."""
    config = {**PRODUCER_DEFAULTS, **client_config}
    if "enable.idempotence" not in client_config and _conflicts_with_idempotence(client_config):
        config["enable.idempotence"] = "false"
    return config


def _conflicts_with_idempotence(client_config: Mapping[str, str]) -> bool:
    acks = str(client_config.get("acks", "all")).strip().lower()
    try:
        retries = int(str(client_config.get("retries", "1")).strip())
        in_flight = int(str(client_config.get("max.in.flight.requests.per.connection", "5")).strip())
    except ValueError:
        return False   # the producer refuses the value itself, naming the key
    return acks not in ("all", "-1") or retries == 0 or in_flight > 5


def write_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> WriteResult:
    """Produce every row of `batches`; raise the first refusal after flushing the rest."""
    failures: list[Exception] = []

    def on_delivery(metadata, exception) -> None:
        if exception is not None:
            failures.append(exception)

    count = 0
    producer = KafkaProducer(producer_config(options.client_config))
    try:
        for batch in batches:
            columns = {name.lower(): batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
            n = batch.num_rows
            topics = [options.topic] * n if options.topic is not None else columns["topic"]
            keys = columns.get("key", [None] * n)
            values = columns["value"]
            partitions = columns.get("partition", [None] * n)
            headers = columns.get("headers", [None] * n)
            for i in range(n):
                if failures:
                    break
                if topics[i] is None:
                    raise KafkaOptionError("null topic present in the data. Use the topic option for setting a "
                                           "topic.")
                hdrs = [(h["key"], h["value"]) for h in headers[i]] if headers[i] else None
                producer.send(topics[i], _bytes(values[i]), key=_bytes(keys[i]), partition=partitions[i],
                              headers=hdrs, callback=on_delivery)
                count += 1
            if failures:
                break
        producer.flush()
    finally:
        producer.close()
    if failures:
        raise failures[0]
    return WriteResult(count)


def _bytes(value) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return value.encode("utf-8")
