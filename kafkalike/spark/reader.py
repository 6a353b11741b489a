"""The task's half of a Kafka read: one offset range in, Arrow record batches out.

A task opens an assign-mode consumer (no group, nothing committed), seeks to the
range's start and reads until its position passes the end. Rows leave in Arrow batches
of bounded size, so a task's memory does not grow with the partition; the only Python
object per record is the one decoding makes. Offsets missing below `end` are normal on
compacted topics; records deleted below the log start are data loss, which fails the
task or is skipped with a warning as failOnDataLoss says.
"""
from __future__ import annotations

import logging
import time
from typing import Iterator, Mapping

import pyarrow as pa

from kafkalike.client.consumer import KafkaConsumer
from kafkalike.client.errors import OffsetOutOfRangeError
from kafkalike.spark.options import DATA_LOSS_HINT
from kafkalike.spark.planner import OffsetRange

log = logging.getLogger("kafkalike.spark")

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
# Spark's TimestampType is microseconds since the epoch in UTC.
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
BATCH_ROWS = 8192
BATCH_BYTES = 8 << 20
# The client settings a task fixes, whatever the user passed: Spark owns positions.
TASK_CONSUMER = {"group.id": "", "enable.auto.commit": "false", "auto.offset.reset": "none"}
TASK_DEFAULTS = {"max.poll.records": "10000", "client.id": "kafkalike-spark-reader"}


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
              pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
              pa.field("timestamp", TIMESTAMP_TYPE), pa.field("timestampType", pa.int32())]
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


class DataLossError(RuntimeError):
    """Records of a planned range are gone from the cluster (failOnDataLoss=true)."""


class RangeReader:
    """Reads one OffsetRange; iterate it for Arrow record batches."""

    def __init__(self, client_config: Mapping[str, str], offset_range: OffsetRange, *, include_headers: bool,
                 fail_on_data_loss: bool = True, poll_timeout_ms: int = 120_000) -> None:
        self.config = {**TASK_DEFAULTS, **{k: v for k, v in client_config.items() if k != "group.id"},
                       **TASK_CONSUMER}
        if "group.id" in client_config:
            # Spark lets a user name the group its consumers identify as; nothing is committed.
            self.config["group.id"] = client_config["group.id"]
        self.range = offset_range
        self.include_headers = include_headers
        self.fail_on_data_loss = fail_on_data_loss
        self.poll_timeout_s = poll_timeout_ms / 1000
        self.schema = arrow_schema(include_headers)
        self.rows = 0

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        r = self.range
        if r.size <= 0:
            return
        tp = (r.topic, r.partition)
        with KafkaConsumer(self.config) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, r.start)
            position = r.start
            columns = _Columns(self.include_headers)
            last_progress = time.monotonic()
            while position < r.end:
                try:
                    records = consumer.poll(0.5)
                except OffsetOutOfRangeError:
                    position = self._skip_lost(consumer, tp, position, "is below the log start offset")
                    if position >= r.end:
                        break
                    consumer.seek(tp, position)
                    continue
                if records:
                    last_progress = time.monotonic()
                    for record in records:
                        if record.offset >= r.end:
                            break
                        if record.offset >= position:
                            columns.add(record)
                    position = max(position, min(consumer.position(tp), r.end))
                    if columns.rows >= BATCH_ROWS or columns.bytes >= BATCH_BYTES:
                        yield columns.flush(self.schema)
                    continue
                position = max(position, consumer.position(tp))
                if position >= r.end:
                    break
                if time.monotonic() - last_progress >= self.poll_timeout_s:
                    end = consumer.end_offsets([tp])[tp]
                    if end <= position:
                        # The log ends before the range does: records were truncated away.
                        position = self._skip_lost(consumer, tp, position, f"is past the log end offset {end}",
                                                   to=r.end)
                        break
                    raise TimeoutError(f"Cannot fetch record for offset {position} in "
                                       f"{int(self.poll_timeout_s * 1000)} milliseconds")
            if columns.rows:
                yield columns.flush(self.schema)
        self.rows = columns.rows_total

    def _skip_lost(self, consumer: KafkaConsumer, tp, position: int, why: str, to: int | None = None) -> int:
        topic, partition = tp
        if to is None:
            to = consumer.beginning_offsets([tp])[tp]
        message = (f"Cannot fetch offset {position} of {topic}-{partition} (planned range "
                   f"[{self.range.start}, {self.range.end})): it {why}. ")
        if self.fail_on_data_loss:
            raise DataLossError(message + DATA_LOSS_HINT)
        log.warning("%sSkipping to offset %d; failOnDataLoss is false.", message, to)
        return max(position, to)


class _Columns:
    """Column lists for one Arrow batch, filled record by record."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.rows_total = 0
        self._reset()

    def _reset(self) -> None:
        self.keys, self.values, self.offsets, self.stamps, self.types = [], [], [], [], []
        self.headers = []
        self.topic = None
        self.partition = None
        self.rows = 0
        self.bytes = 0

    def add(self, record) -> None:
        self.topic, self.partition = record.topic, record.partition
        self.keys.append(record.key)
        self.values.append(record.value)
        self.offsets.append(record.offset)
        self.stamps.append(record.timestamp * 1000)
        self.types.append(record.timestamp_type)
        if self.include_headers:
            self.headers.append([{"key": k, "value": v} for k, v in record.headers])
        self.rows += 1
        self.bytes += max(record.serialized_key_size, 0) + max(record.serialized_value_size, 0) + 64

    def flush(self, schema: pa.Schema) -> pa.RecordBatch:
        n = self.rows
        arrays = [pa.array(self.keys, pa.binary()), pa.array(self.values, pa.binary()),
                  pa.array([self.topic] * n, pa.string()), pa.array([self.partition] * n, pa.int32()),
                  pa.array(self.offsets, pa.int64()), pa.array(self.stamps, pa.int64()).cast(TIMESTAMP_TYPE),
                  pa.array(self.types, pa.int32())]
        if self.include_headers:
            arrays.append(pa.array(self.headers, HEADER_TYPE))
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self.rows_total += n
        self._reset()
        return batch
