"""Spark's Kafka source and sink as a PySpark Python data source named "kafkalike".

    import kafkalike.spark
    kafkalike.spark.register(spark)
    df = (spark.read.format("kafkalike")
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "events").load())

Spark keeps the name "kafka" for its JVM connector, so the format name is the one
difference from Spark's Kafka source; options, schema and semantics are Spark's (see
docs/spark.md). The driver plans with metadata and ListOffsets (planner.py); each
task reads one offset range (reader.py) or writes its rows (writer.py).
"""
from __future__ import annotations

import logging
import math
from typing import Iterator, Sequence

from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, DataSourceStreamArrowWriter,
                                    DataSourceStreamReader, InputPartition, WriterCommitMessage)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from kafkalike.spark.options import (DATA_LOSS_HINT, DATA_LOSS_WARNING, OffsetLimit, SourceOptions, sink_options,
                                     source_options)
from kafkalike.spark.planner import (OffsetRange, admin_client, batch_ranges, resolve_limit, resolve_partitions,
                                     split_ranges)
from kafkalike.spark.reader import DataLossError, RangeReader
from kafkalike.spark import FORMAT
from kafkalike.spark.writer import check_sink_schema, write_batches

log = logging.getLogger("kafkalike.spark")

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int")
HEADERS_COLUMN = ", headers array<struct<key: string, value: binary>>"


class KafkaRangePartition(InputPartition):
    """One task's work: an OffsetRange (pickled to the executor)."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.range = offset_range


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        include_headers = str(_option(self.options, "includeHeaders", "false")).strip().lower() == "true"
        return SCHEMA + (HEADERS_COLUMN if include_headers else "")

    def reader(self, schema: StructType) -> "KafkaBatchReader":
        return KafkaBatchReader(source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> "KafkaStreamReader":
        return KafkaStreamReader(source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> "KafkaWriter":
        # Spark's Kafka sink takes Overwrite as Append (it truncates nothing); so do we.
        options = sink_options(self.options)
        check_sink_schema(schema, options.topic)
        return KafkaWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> "KafkaStreamWriter":
        options = sink_options(self.options)
        check_sink_schema(schema, options.topic)
        return KafkaStreamWriter(options)


def _option(options, name: str, default: str) -> str:
    lowered = {str(k).lower(): v for k, v in options.items()}
    return lowered.get(name.lower(), default)


def read_range(options: SourceOptions, partition: KafkaRangePartition):
    if not isinstance(partition, KafkaRangePartition):
        # Nothing to read: PySpark runs one task with InputPartition(None) when partitions() is empty.
        return iter(())
    return iter(RangeReader(options.client_config, partition.range, include_headers=options.include_headers,
                            fail_on_data_loss=options.fail_on_data_loss, poll_timeout_ms=options.poll_timeout_ms))


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        # Planned here, on the driver, so a bad option fails before any task runs.
        self.ranges = batch_ranges(options)

    def partitions(self) -> Sequence[InputPartition]:
        return [KafkaRangePartition(r) for r in self.ranges]

    def read(self, partition: KafkaRangePartition):
        return read_range(self.options, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over offsets kept in Spark's checkpoint as {"topic": {"partition": offset}},
    the JSON Spark's Kafka source writes there."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._available_now: dict[str, dict[str, int]] | None = None

    def initialOffset(self) -> dict:
        with admin_client(self.options.client_config) as admin:
            partitions = resolve_partitions(admin, self.options.subscription)
            offsets = resolve_limit(admin, partitions, self.options.starting, is_start=True,
                                    option="startingOffsets", by_timestamp_strategy=self.options.by_timestamp_strategy,
                                    isolation_level=self.options.isolation_level)
        return _to_json(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._latest()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        latest = self._available_now if self._available_now is not None else self._latest()
        start_offsets = _from_json(start)
        # New partitions (or topics) start at their earliest offset, as in Spark.
        new = [tp for tp in _from_json(latest) if tp not in start_offsets]
        if new:
            with admin_client(self.options.client_config) as admin:
                start_offsets.update(resolve_limit(admin, new, OffsetLimit("earliest"), is_start=True,
                                                   option="startingOffsets"))
        # As Spark's: an end below its start (a topic deleted and made again, records
        # truncated away), or a partition missing from the end, is left for partitions() to
        # report as data loss; it is not raised to the start, which would skip the records
        # the partition gets next up to the old offset without a word.
        end = _from_json(latest)
        if isinstance(limit, ReadMaxRows):
            end = _rate_limit(start_offsets, end, limit.max_rows)
        return _to_json(end)

    def reportLatestOffset(self) -> dict:
        return self._latest()

    def _latest(self) -> dict:
        with admin_client(self.options.client_config) as admin:
            partitions = resolve_partitions(admin, self.options.subscription)
            return _to_json(resolve_limit(admin, partitions, OffsetLimit("latest"), is_start=False,
                                          option="endingOffsets", isolation_level=self.options.isolation_level))

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """Spark's getOffsetRangesFromResolvedOffsets: a partition gone since the last batch,
        or one whose end is below its start, is data loss, which fails the query or (with
        failOnDataLoss=false) is logged while the rest is read."""
        starts, ends = _from_json(start), _from_json(end)
        gone = sorted(tp for tp in starts if tp not in ends)
        if gone:
            self._report_data_loss(f"Partitions {_names(gone)} are gone. Some data may have been missed.")
        ranges = []
        for tp, stop in sorted(ends.items()):
            begin = starts.get(tp, 0)
            if stop < begin:
                self._report_data_loss(f"Partition {tp[0]}-{tp[1]}'s offset was changed from {begin} to {stop}, "
                                       "some data may have been missed.")
                continue
            ranges.append(OffsetRange(tp[0], tp[1], begin, stop))
        return [KafkaRangePartition(r) for r in split_ranges(ranges, self.options.min_partitions,
                                                                  self.options.max_records_per_partition)]

    def read(self, partition: KafkaRangePartition):
        return read_range(self.options, partition)

    def commit(self, end: dict) -> None:
        pass

    def _report_data_loss(self, message: str) -> None:
        """Spark's KafkaMicroBatchStream.reportDataLoss."""
        if self.options.fail_on_data_loss:
            raise DataLossError(f"{message} {DATA_LOSS_HINT}")
        log.warning("%s %s", message, DATA_LOSS_WARNING)


def _names(tps) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps)


def _to_json(offsets: dict) -> dict:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def _from_json(offsets: dict) -> dict:
    return {(topic, int(p)): int(off) for topic, parts in offsets.items() for p, off in parts.items()}


def _rate_limit(start: dict, end: dict, max_rows: int) -> dict:
    """Spark's maxOffsetsPerTrigger: the limit shared out in proportion to each partition's lag."""
    lag = {tp: end[tp] - start[tp] for tp in end if tp in start and end[tp] > start[tp]}
    total = sum(lag.values())
    if total <= max_rows:
        return end
    out = dict(end)
    for tp, size in lag.items():
        share = max_rows * size / total
        # As Spark's KafkaMicroBatchStream.rateLimit: a share below one offset is rounded up
        # so no lagging partition starves (and a limit below the partition count still
        # moves every partition on); larger shares are rounded down.
        out[tp] = min(end[tp], start[tp] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out


class KafkaWriter(DataSourceArrowWriter):
    def __init__(self, options) -> None:
        self.options = options

    def write(self, iterator: Iterator) -> WriterCommitMessage:
        return KafkaCommitMessage(write_batches(self.options, iterator).records)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options) -> None:
        self.options = options

    def write(self, iterator: Iterator) -> WriterCommitMessage:
        return KafkaCommitMessage(write_batches(self.options, iterator).records)

    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        pass


class KafkaCommitMessage(WriterCommitMessage):
    def __init__(self, records: int) -> None:
        self.records = records
