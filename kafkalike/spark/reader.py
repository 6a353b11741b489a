"""The task's half of a Kafka read: one offset range in, Arrow record batches out.

A task opens an assign-mode consumer (no group, nothing committed), seeks to the range's
start and reads until its position passes the end. Rows leave in Arrow batches of
bounded size, so a task's memory does not grow with the partition; the only Python
object per record is the one decoding makes. Offsets missing below `end` are normal on
compacted topics; records deleted below the log start are data loss, which fails the
task or is skipped with a warning as failOnDataLoss says. Transaction markers (and, with
isolation.level=read_committed, aborted records) move the position on without records; a
read_committed range that runs into a transaction still open is not data loss either
(the driver plans such reads to the last stable offset, so only explicit ending offsets
meet one). Records go into the columns a poll's slice at a time, and the cycle collector
is off while a batch is read (see RangeReader.__iter__): both cut the per-record cost to
about the consumer's own (docs/benchmarks.md, "Spark load").
"""
from __future__ import annotations

import gc
import logging
import time
from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add, attrgetter
from typing import Iterator, Mapping

import pyarrow as pa

from kafkalike.client.consumer import KafkaConsumer
from kafkalike.client.errors import OffsetOutOfRangeError
from kafkalike.client.groups import OffsetSpec
from kafkalike.spark.options import DATA_LOSS_HINT
from kafkalike.spark.planner import OffsetRange, admin_client

log = logging.getLogger("kafkalike.spark")

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
# Spark's TimestampType is microseconds since the epoch in UTC.
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
TIMESTAMP_MS = pa.timestamp("ms", tz="UTC")
# A batch holds at most BATCH_ROWS rows and at most BATCH_BYTES (as _record_sizes counts
# them), unless one record alone is bigger.
BATCH_ROWS = 8192
BATCH_BYTES = 8 << 20
# What a row costs besides its key, value and topic name (offset, timestamp, type, Arrow
# offsets and validity), rounded up; the 2 more make up for the -1 size of a null.
ROW_BYTES = 66
# The client settings a task fixes, whatever the user passed: Spark owns positions.
TASK_CONSUMER = {"group.id": "", "enable.auto.commit": "false", "auto.offset.reset": "none"}
TASK_DEFAULTS = {"max.poll.records": "10000", "client.id": "kafkalike-spark-reader"}

_KEY, _VALUE, _OFFSET = attrgetter("key"), attrgetter("value"), attrgetter("offset")
_TIMESTAMP, _TIMESTAMP_TYPE = attrgetter("timestamp"), attrgetter("timestamp_type")
_KEY_SIZE, _VALUE_SIZE = attrgetter("serialized_key_size"), attrgetter("serialized_value_size")


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
              pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
              pa.field("timestamp", TIMESTAMP_TYPE), pa.field("timestampType", pa.int32())]
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


class DataLossError(RuntimeError):
    """Records of a planned range are gone from the cluster (failOnDataLoss=true)."""


def _header_bytes(record) -> int:
    return sum(len(k) + (len(v) if v is not None else 0) + 8 for k, v in record.headers) if record.headers else 0


def _record_sizes(records: list, row_bytes: int, include_headers: bool) -> list[int]:
    """The running total of what each record adds to a batch: key, value, headers when
    they are read, and `row_bytes`. Counted without a Python call per record unless
    headers are read (which make a Python object per header anyway)."""
    sizes = map(add, map(add, map(_KEY_SIZE, records), map(_VALUE_SIZE, records)), repeat(row_bytes))
    if include_headers:
        sizes = map(add, sizes, map(_header_bytes, records))
    return list(accumulate(sizes))


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
        self.read_committed = str(self.config.get("isolation.level", "")).strip().lower() == "read_committed"
        self.schema = arrow_schema(include_headers)
        self.row_bytes = ROW_BYTES + len(offset_range.topic.encode())
        self.rows = 0

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        r = self.range
        if r.size <= 0:
            return
        tp = (r.topic, r.partition)
        columns = _Columns(self.include_headers)
        with KafkaConsumer(self.config) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, r.start)
            batches = self._batches(consumer, tp, columns)
            while True:
                # Reading makes no reference cycles, yet every record it decodes is a
                # tracked object, and the cycle collector's passes over the worker's
                # whole heap cost about a third of the read; so it is off while a batch is
                # read, and as it was whenever the caller has control.
                collect = gc.isenabled()
                gc.disable()
                try:
                    batch = next(batches, None)
                finally:
                    if collect:
                        gc.enable()
                if batch is None:
                    break
                yield batch
        self.rows = columns.rows_total

    def _batches(self, consumer: KafkaConsumer, tp, columns: "_Columns") -> Iterator[pa.RecordBatch]:
        r = self.range
        position = r.start
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
                if records[0].offset < position or records[-1].offset >= r.end:
                    # One partition's records come in offset order; keep those inside the range.
                    records = [rec for rec in records if position <= rec.offset < r.end]
                yield from self._fill(records, columns)
                position = max(position, min(consumer.position(tp), r.end))
                continue
            # No records, yet the position may move: past control records (transaction
            # markers) and, with read_committed, aborted transactions' records.
            moved = consumer.position(tp)
            if moved > position:
                position = moved
                last_progress = time.monotonic()
            if position >= r.end:
                break
            if time.monotonic() - last_progress >= self.poll_timeout_s:
                end = consumer.end_offsets([tp])[tp]
                if end <= position:
                    if self.read_committed:
                        self._check_open_transaction(tp, position, end)
                    # The log ends before the range does: records were truncated away.
                    self._skip_lost(consumer, tp, position, f"is past the log end offset {end}", to=r.end)
                    break
                raise TimeoutError(f"Cannot fetch record for offset {position} in "
                                   f"{int(self.poll_timeout_s * 1000)} milliseconds")
        if columns.rows:
            yield columns.flush(self.schema)

    def _fill(self, records: list, columns: "_Columns") -> Iterator[pa.RecordBatch]:
        """Put one poll's records into the columns, yielding each batch that fills up.

        The records go in a slice at a time (no Python call per record): each slice as
        long as the batch has room for by rows, and, once that would pass BATCH_BYTES, as
        long as it has room for by bytes, found from the poll's running totals; a record
        bigger than BATCH_BYTES goes in a batch alone. Small records fill a batch's rows
        first, so the totals are only made for polls of large ones."""
        sizes = None
        taken, n = 0, len(records)
        while taken < n:
            stop = min(n, taken + BATCH_ROWS - columns.rows)
            if sizes is None:
                piece = records[taken:stop]
                nbytes = self._bytes_of(piece)
                if columns.bytes + nbytes <= BATCH_BYTES:
                    columns.add_all(piece, nbytes)
                    taken = stop
                    if columns.rows >= BATCH_ROWS or columns.bytes >= BATCH_BYTES:
                        yield columns.flush(self.schema)
                    continue
                sizes = _record_sizes(records, self.row_bytes, self.include_headers)
            before = sizes[taken - 1] if taken else 0
            fit = bisect_right(sizes, before + BATCH_BYTES - columns.bytes, taken, stop)
            if fit == taken:
                if columns.rows:
                    yield columns.flush(self.schema)
                    continue
                fit = taken + 1
            columns.add_all(records[taken:fit], sizes[fit - 1] - before)
            taken = fit
            if columns.rows >= BATCH_ROWS or columns.bytes >= BATCH_BYTES:
                yield columns.flush(self.schema)

    def _bytes_of(self, records: list) -> int:
        """What `records` add to a batch, as _record_sizes counts it, without the running totals."""
        nbytes = sum(map(_KEY_SIZE, records)) + sum(map(_VALUE_SIZE, records)) + self.row_bytes * len(records)
        if self.include_headers:
            nbytes += sum(map(_header_bytes, records))
        return nbytes

    def _check_open_transaction(self, tp, position: int, stable: int) -> None:
        """A read_committed consumer sees the log end at the last stable offset. When
        records are written past it (the high watermark is further on), the range runs
        into a transaction that is still open: not data loss, the records are there and
        become readable (or are skipped, if aborted) once it ends. Planned ends are the
        last stable offset, so only explicit ending offsets get here."""
        with admin_client(self.config) as admin:
            written = admin.list_offsets({tp: OffsetSpec.latest()})[tp].offset
        if written > position:
            raise TimeoutError(
                f"Cannot fetch record for offset {position} of {tp[0]}-{tp[1]} in "
                f"{int(self.poll_timeout_s * 1000)} milliseconds: with isolation.level=read_committed the "
                f"partition ends at its last stable offset {stable}, the start of a transaction that is still "
                f"open (records are written up to offset {written - 1}); the planned range ends at "
                f"{self.range.end}")

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
    """Column lists for one Arrow batch, filled a poll's slice at a time."""

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

    def add_all(self, records: list, nbytes: int) -> None:
        """Records of one topic-partition, all inside the range, that count `nbytes`."""
        if not records:
            return
        self.topic, self.partition = records[0].topic, records[0].partition
        self.keys += map(_KEY, records)
        self.values += map(_VALUE, records)
        self.offsets += map(_OFFSET, records)
        self.stamps += map(_TIMESTAMP, records)
        self.types += map(_TIMESTAMP_TYPE, records)
        if self.include_headers:
            # Spark's KafkaRecordToRowConverter: null, not an empty array, for a record without headers.
            self.headers += [[{"key": k, "value": v} for k, v in record.headers] if record.headers else None
                             for record in records]
        self.rows += len(records)
        self.bytes += nbytes

    def flush(self, schema: pa.Schema) -> pa.RecordBatch:
        n = self.rows
        # Record timestamps are epoch milliseconds: Arrow scales them to Spark's microseconds.
        stamps = pa.array(self.stamps, pa.int64()).cast(TIMESTAMP_MS).cast(TIMESTAMP_TYPE)
        arrays = [pa.array(self.keys, pa.binary()), pa.array(self.values, pa.binary()),
                  pa.repeat(pa.scalar(self.topic, pa.string()), n),
                  pa.repeat(pa.scalar(self.partition, pa.int32()), n),
                  pa.array(self.offsets, pa.int64()), stamps, pa.array(self.types, pa.int32())]
        if self.include_headers:
            arrays.append(pa.array(self.headers, HEADER_TYPE))
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        self.rows_total += n
        self._reset()
        return batch
