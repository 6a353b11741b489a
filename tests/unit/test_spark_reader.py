"""A task's read of one offset range (kafkalike/spark/reader.py) against a fake consumer:
Arrow batches bounded by rows and bytes, every offset of the range once and in order,
records outside the range left out, offsets the consumer passes without records
(transaction markers, aborted transactions), and the data-loss paths, which fail the
task with failOnDataLoss=true and skip with a warning with false.

No Spark and no broker: the fake stands in for kafkalike's consumer and hands out
ConsumerRecords as the real one does, a poll at a time.
"""
from __future__ import annotations

import logging
import time

import pytest

from kafkalike.client.errors import OffsetOutOfRangeError
from kafkalike.client.fetcher import ConsumerRecord
from kafkalike.spark import reader as reader_module
from kafkalike.spark.options import DATA_LOSS_HINT
from kafkalike.spark.planner import OffsetRange
from kafkalike.spark.reader import BATCH_BYTES, BATCH_ROWS, ROW_BYTES, DataLossError, RangeReader

TOPIC = "readings-" + "x" * 40   # a long name: its bytes count in every row


def record(offset: int, value: bytes | None, key: bytes | None = b"k", headers=None) -> ConsumerRecord:
    return ConsumerRecord(TOPIC, 0, offset, 1_700_000_000_000 + offset, 0, key, value, headers or [],
                          -1 if key is None else len(key), -1 if value is None else len(value))


class FakeConsumer:
    """One partition's log as a consumer sees it.

    records: offset -> ConsumerRecord (missing offsets are compaction gaps, or records the
    consumer skips: markers, aborted ones). A poll returns up to `per_poll` records from
    the position, starting at the `batch` boundary below it as a real fetch does (so the
    first records may lie before the position), and moves the position past what it read;
    where nothing is left below the visible end it returns nothing. `end` is what
    end_offsets() says (the last stable offset for a read_committed consumer), `visible`
    how far polls go (the default: `end`).
    """

    def __init__(self, records: dict[int, ConsumerRecord], *, start: int = 0, end: int | None = None,
                 visible: int | None = None, per_poll: int = 10_000, batch: int = 1) -> None:
        self.records = records
        self.log_start = start
        self.end = end if end is not None else (max(records) + 1 if records else 0)
        self.visible = self.end if visible is None else visible
        self.per_poll = per_poll
        self.batch = batch
        self.position_ = None
        self.polls = 0
        self.config = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def assign(self, tps):
        assert len(tps) == 1

    def seek(self, tp, offset: int) -> None:
        self.position_ = offset

    def position(self, tp) -> int:
        return self.position_

    def poll(self, timeout: float = 0.0) -> list[ConsumerRecord]:
        self.polls += 1
        if self.position_ < self.log_start:
            raise OffsetOutOfRangeError({(TOPIC, 0): self.position_})
        first = self.position_ - self.position_ % self.batch
        out = []
        offset = first
        while offset < self.visible and len(out) < self.per_poll:
            if offset in self.records:
                out.append(self.records[offset])
            offset += 1
        if not out and self.position_ >= self.visible:
            time.sleep(min(timeout, 0.01))
            return []
        self.position_ = max(self.position_, offset)
        return out

    def end_offsets(self, tps):
        return {tp: self.end for tp in tps}

    def beginning_offsets(self, tps):
        return {tp: self.log_start for tp in tps}


@pytest.fixture
def consumer(monkeypatch):
    """Install a FakeConsumer: call the fixture with its arguments; the reader's config lands in .config."""
    made = []

    def install(records, **kwargs) -> FakeConsumer:
        fake = FakeConsumer(records, **kwargs)
        made.append(fake)
        return fake

    def factory(config):
        fake = made[-1]
        fake.config = dict(config)
        return fake
    monkeypatch.setattr(reader_module, "KafkaConsumer", factory)
    return install


def read(start: int, end: int, *, headers: bool = False, fail_on_data_loss: bool = True,
         poll_timeout_ms: int = 60_000, **config) -> list:
    reader = RangeReader({"bootstrap.servers": "fake:9092", **config}, OffsetRange(TOPIC, 0, start, end),
                         include_headers=headers, fail_on_data_loss=fail_on_data_loss,
                         poll_timeout_ms=poll_timeout_ms)
    return list(reader)


def offsets_of(batches) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def row_bytes(rec: ConsumerRecord, headers: bool) -> int:
    """What the reader counts for a row (reader._record_sizes), from the record's own bytes."""
    size = rec.serialized_key_size + rec.serialized_value_size + ROW_BYTES + len(TOPIC)
    if headers and rec.headers:
        size += sum(len(k) + len(v or b"") + 8 for k, v in rec.headers)
    return size


# -- bounded batches ------------------------------------------------------------------------------

def mixed_log() -> dict[int, ConsumerRecord]:
    """20,000 small records, then 3 MiB values, a 9 MiB one (over BATCH_BYTES alone), and
    small ones again; null keys and values here and there, headers on some."""
    out = {}
    for offset in range(20_000):
        key = None if offset % 97 == 3 else b"sensor-%d" % (offset % 50)
        value = None if offset % 101 == 7 else b"reading %06d" % offset
        headers = [("h", b"%d" % offset), ("empty", None)] if offset % 3 == 0 else None
        out[offset] = record(offset, value, key, headers)
    big = {20_000: 3 << 20, 20_001: 3 << 20, 20_002: 3 << 20, 20_003: 9 << 20, 20_004: 3 << 20}
    for offset, size in big.items():
        out[offset] = record(offset, bytes([offset % 256]) * size)
    for offset in range(20_005, 21_000):
        out[offset] = record(offset, b"tail %d" % offset)
    return out


@pytest.mark.parametrize("headers", [False, True])
def test_batches_are_bounded_by_rows_and_bytes_and_hold_every_offset_once(consumer, headers):
    log = mixed_log()
    consumer(log, per_poll=10_000)
    batches = read(0, 21_000, headers=headers)
    assert offsets_of(batches) == list(range(21_000))
    for i, batch in enumerate(batches):
        assert 0 < batch.num_rows <= BATCH_ROWS
        if batch.num_rows > 1:
            # What the reader counts bounds the batch, and Arrow's own size is below that.
            counted = sum(row_bytes(log[o], headers) for o in batch.column("offset").to_pylist())
            assert counted <= BATCH_BYTES and batch.nbytes <= BATCH_BYTES, (i, batch.num_rows, counted)
        if i < len(batches) - 1:
            # Never cut early: a batch ends full of rows, or where the next record would not fit.
            last = batch.column("offset")[-1].as_py()
            counted = sum(row_bytes(log[o], headers) for o in batch.column("offset").to_pylist())
            assert batch.num_rows == BATCH_ROWS or counted + row_bytes(log[last + 1], headers) > BATCH_BYTES
    # The 9 MiB record is a batch of its own; 3 MiB ones share at most two to a batch.
    alone = [b for b in batches if b.column("offset").to_pylist() == [20_003]]
    assert len(alone) == 1
    assert all(sum(1 for o in b.column("offset").to_pylist() if 20_000 <= o <= 20_004) <= 2 for b in batches)
    # Small records fill BATCH_ROWS-row batches across poll boundaries (10,000 a poll).
    assert [b.num_rows for b in batches[:2]] == [BATCH_ROWS, BATCH_ROWS]


def test_rows_are_the_records_byte_for_byte(consumer):
    log = mixed_log()
    consumer(log, per_poll=777)
    batches = read(19_990, 20_010, headers=True)
    got = [row for b in batches for row in b.to_pylist()]
    assert [r["offset"] for r in got] == list(range(19_990, 20_010))
    for row in got:
        rec = log[row["offset"]]
        assert (row["key"], row["value"], row["topic"], row["partition"], row["timestampType"]) == \
            (rec.key, rec.value, TOPIC, 0, 0)
        assert int(row["timestamp"].timestamp() * 1000) == rec.timestamp
        assert row["headers"] == ([{"key": k, "value": v} for k, v in rec.headers] if rec.headers else None)


def test_records_outside_the_range_are_left_out(consumer):
    # Fetches start at batch boundaries (100 records) and run past the range's end.
    consumer({o: record(o, b"v%d" % o) for o in range(1_000)}, batch=100, per_poll=250)
    assert offsets_of(read(150, 420)) == list(range(150, 420))


def test_compaction_gaps_are_skipped_without_waiting(consumer):
    present = [o for o in range(300) if o % 3 != 1] + [299]
    consumer({o: record(o, b"v") for o in present}, per_poll=40)
    began = time.monotonic()
    assert offsets_of(read(10, 300)) == sorted(o for o in set(present) if 10 <= o < 300)
    assert time.monotonic() - began < 5


def test_offsets_passed_without_records_end_the_range_at_once(consumer):
    """Transaction markers and (read_committed) aborted records: the consumer moves its
    position past them and returns nothing. A range ending in them ends there, with no wait
    for the poll timeout and no data loss."""
    committed = {o: record(o, b"c%d" % o) for o in range(0, 10)}
    committed.update({o: record(o, b"c%d" % o) for o in range(25, 30)})  # 10..24 aborted, 30 a marker
    consumer(committed, end=31, per_poll=4)
    began = time.monotonic()
    batches = read(0, 31, poll_timeout_ms=60_000, **{"isolation.level": "read_committed"})
    assert offsets_of(batches) == list(range(10)) + list(range(25, 30))
    assert time.monotonic() - began < 5


# -- data loss ---------------------------------------------------------------------------------------

def test_records_below_the_log_start_fail_the_task(consumer):
    consumer({o: record(o, b"v") for o in range(50, 100)}, start=50)
    with pytest.raises(DataLossError) as raised:
        read(0, 100)
    message = str(raised.value)
    assert "Cannot fetch offset 0 of " + TOPIC + "-0 (planned range [0, 100)): it is below the log start offset" \
        in message and DATA_LOSS_HINT in message


def test_records_below_the_log_start_are_skipped_with_a_warning(consumer, caplog):
    consumer({o: record(o, b"v") for o in range(50, 100)}, start=50)
    with caplog.at_level(logging.WARNING, logger="kafkalike.spark"):
        assert offsets_of(read(0, 100, fail_on_data_loss=False)) == list(range(50, 100))
    assert any("below the log start offset" in r.getMessage() and "Skipping to offset 50" in r.getMessage()
               for r in caplog.records)


def test_a_range_past_the_log_end_fails_after_the_poll_timeout(consumer):
    consumer({o: record(o, b"v") for o in range(60)})
    began = time.monotonic()
    with pytest.raises(DataLossError, match="Cannot fetch offset 60 .* is past the log end offset 60"):
        read(0, 100, poll_timeout_ms=300)
    assert 0.3 <= time.monotonic() - began < 10


def test_a_range_past_the_log_end_is_cut_with_a_warning(consumer, caplog):
    consumer({o: record(o, b"v") for o in range(60)})
    with caplog.at_level(logging.WARNING, logger="kafkalike.spark"):
        assert offsets_of(read(0, 100, fail_on_data_loss=False, poll_timeout_ms=300)) == list(range(60))
    assert any("past the log end offset 60" in r.getMessage() and "Skipping to offset 100" in r.getMessage()
               for r in caplog.records)


def test_records_that_exist_but_do_not_come_time_out(consumer):
    # The log goes to 100 but polls stop at 60 (a broker that does not answer, say).
    consumer({o: record(o, b"v") for o in range(100)}, visible=60)
    with pytest.raises(TimeoutError, match="Cannot fetch record for offset 60 in 300 milliseconds"):
        read(0, 100, poll_timeout_ms=300, fail_on_data_loss=False)


class StubAdmin:
    def __init__(self, written: int) -> None:
        self.written = written

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def list_offsets(self, specs, isolation_level="read_uncommitted"):
        assert isolation_level == "read_uncommitted"
        return {tp: type("Listed", (), {"offset": self.written})() for tp in specs}


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_read_committed_running_into_an_open_transaction_is_no_data_loss(consumer, monkeypatch,
                                                                         fail_on_data_loss):
    """An explicit ending offset past the last stable offset (60) while records are written
    up to 79: the task times out saying so, rather than reporting records lost."""
    consumer({o: record(o, b"v") for o in range(60)}, end=60)
    seen = []
    monkeypatch.setattr(reader_module, "admin_client", lambda config: seen.append(config) or StubAdmin(80))
    with pytest.raises(TimeoutError, match="last stable offset 60, the start of a transaction that is still open"):
        read(0, 80, poll_timeout_ms=300, fail_on_data_loss=fail_on_data_loss,
             **{"isolation.level": "read_committed"})
    assert seen and seen[0]["bootstrap.servers"] == "fake:9092"


def test_read_committed_past_the_high_watermark_is_still_data_loss(consumer, monkeypatch):
    consumer({o: record(o, b"v") for o in range(60)}, end=60)
    monkeypatch.setattr(reader_module, "admin_client", lambda config: StubAdmin(60))
    with pytest.raises(DataLossError, match="past the log end offset 60"):
        read(0, 80, poll_timeout_ms=300, **{"isolation.level": "read_committed"})


def test_the_task_consumer_reads_from_no_group_and_commits_nothing(consumer):
    fake = consumer({o: record(o, b"v") for o in range(5)})
    read(0, 5, **{"fetch.max.bytes": "1024", "auto.offset.reset": "earliest", "group.id": "spark-user"})
    assert fake.config["fetch.max.bytes"] == "1024"
    assert (fake.config["enable.auto.commit"], fake.config["auto.offset.reset"]) == ("false", "none")
    assert fake.config["group.id"] == "spark-user"
