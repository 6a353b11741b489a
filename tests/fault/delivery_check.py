"""A producer that remembers every acknowledgement, and the checks run on what it saw.

The producer is confluent-kafka (librdkafka), a client nobody here wrote, configured
as an application that wants no loss would configure it: acks=all, retries on. It
runs in a thread, producing numbered records (key = sequence number, value derived
from it) round-robin over the partitions, and keeps (partition, offset) of every
record whose delivery report came back without error.

Choice of max.in.flight.requests.per.connection = 1: idempotence is off (the test asks
what the replication protocol guarantees without producer ids), and without it a
retried request can land behind a later one when more than one is in flight, which
reorders records the client itself acknowledged. With one in flight the client keeps
order across retries, so any order violation the check finds is the broker's doing.

The checks then hold the brokers to what acks=all promises: every acknowledged record
is read back at its acknowledged offset with its exact bytes, acknowledged records of
a partition sit in the order they were sent, and every replica holds the same bytes
(leader-epoch stamps included) up to the high watermark.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafkalike.records.batch import decode_batches

VALUE_SIZE = 64


def value_of(seq: int) -> bytes:
    head = f"rec-{seq:08d}|".encode()
    return head + bytes((seq * 7 + i) % 251 for i in range(VALUE_SIZE - len(head)))


def producer_config(bootstrap: str, **extra) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": False,
        "max.in.flight.requests.per.connection": 1,
        "retries": 1_000_000,
        "retry.backoff.ms": 100,
        "message.timeout.ms": 90_000,       # longer than any failover in these tests
        "linger.ms": 5,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
        **extra,
    }


@dataclass
class AckedProducer:
    """Produces records 0, 1, 2, ... until stopped, keeping every delivery report."""

    bootstrap: str
    topic: str
    partitions: int
    max_outstanding: int = 300
    pause_s: float = 0.01
    acked: dict[int, tuple[int, int]] = field(default_factory=dict)   # seq -> (partition, offset)
    failed: dict[int, str] = field(default_factory=dict)
    sent: int = 0
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def start(self) -> "AckedProducer":
        self._thread = threading.Thread(target=self._run, name="acked-producer", daemon=True)
        self._thread.start()
        return self

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def wait_for_acks(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.acked_count() < count:
            if self.error is not None:
                raise AssertionError(f"producer thread died: {self.error!r}")
            if time.monotonic() > deadline:
                raise AssertionError(f"only {self.acked_count()} of {count} records acknowledged "
                                     f"after {timeout}s ({len(self.failed)} failed)")
            time.sleep(0.02)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop producing and wait until every record sent has a delivery report."""
        self._stop.set()
        if self._thread is None:
            return
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "producer did not drain its queue"
        if self.error is not None:
            raise AssertionError(f"producer thread died: {self.error!r}")

    def abandon(self) -> None:
        """On a failed test: end the thread without judging it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _on_delivery(self, err, msg) -> None:
        seq = int(msg.key())
        with self._lock:
            if err is None:
                self.acked[seq] = (msg.partition(), msg.offset())
            else:
                self.failed[seq] = f"{err.name()}: {err.str()}"

    def _outstanding(self) -> int:
        with self._lock:
            return self.sent - len(self.acked) - len(self.failed)

    def _run(self) -> None:
        producer = Producer(producer_config(self.bootstrap))
        try:
            while not self._stop.is_set():
                if self._outstanding() < self.max_outstanding:
                    for _ in range(10):
                        seq = self.sent
                        producer.produce(self.topic, key=str(seq).encode(), value=value_of(seq),
                                         partition=seq % self.partitions, on_delivery=self._on_delivery)
                        self.sent += 1
                producer.poll(self.pause_s)
            remaining = producer.flush(60)
            if remaining:
                raise RuntimeError(f"{remaining} records neither delivered nor failed")
        except BaseException as exc:  # handed to the test thread
            self.error = exc


def consume_all(bootstrap: str, topic: str, partitions: int,
                timeout: float = 60.0) -> dict[int, dict[int, tuple[bytes, bytes]]]:
    """partition -> {offset: (key, value)} for everything below each high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-verifier",
                         "enable.auto.commit": False, "check.crcs": True,
                         "enable.partition.eof": True})
    try:
        highs = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                 for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: dict[int, dict[int, tuple[bytes, bytes]]] = {p: {} for p in range(partitions)}
        done = {p for p, high in highs.items() if high == 0}
        errors = []
        deadline = time.monotonic() + timeout
        while len(done) < partitions:
            assert time.monotonic() < deadline, (
                f"could not read {topic} to its high watermarks {highs} in {timeout}s; "
                f"got {[len(v) for v in out.values()]} records, errors {errors[:5]}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if msg.offset() >= highs[msg.partition()]:
                        done.add(msg.partition())
                else:
                    errors.append(msg.error())
                continue
            out[msg.partition()][msg.offset()] = (msg.key(), msg.value())
            if msg.offset() >= highs[msg.partition()] - 1:
                done.add(msg.partition())
        assert not errors, f"the verifier's consumer got errors: {errors[:5]}"
        return out
    finally:
        consumer.close()


def assert_acked_consumed(acked: dict[int, tuple[int, int]],
                          consumed: dict[int, dict[int, tuple[bytes, bytes]]]) -> None:
    """Each acknowledged record is read back at its acknowledged offset, byte for byte."""
    wrong = []
    for seq, (p, offset) in sorted(acked.items()):
        got = consumed.get(p, {}).get(offset)
        if got != (str(seq).encode(), value_of(seq)):
            wrong.append((seq, p, offset, None if got is None else got[0]))
    assert not wrong, (f"{len(wrong)} of {len(acked)} acknowledged records are missing or changed "
                       f"(seq, partition, offset, key found), first: {wrong[:5]}")


def assert_acked_in_order(acked: dict[int, tuple[int, int]]) -> None:
    """Within a partition, acknowledged records sit in the order they were produced."""
    last: dict[int, tuple[int, int]] = {}
    for seq, (p, offset) in sorted(acked.items()):
        if p in last:
            prev_seq, prev_offset = last[p]
            assert offset > prev_offset, (f"partition {p}: record {seq} acknowledged at offset "
                                          f"{offset}, not after record {prev_seq} at {prev_offset}")
        last[p] = (seq, offset)


def segment_batches(log_dir: Path, topic: str, partition: int, below: int) -> list[bytes]:
    """The raw bytes of each batch a replica stores below offset `below`, from its files."""
    d = Path(log_dir) / f"{topic}-{partition}"
    out = []
    for path in sorted(d.glob("*.log")):
        for batch in decode_batches(path.read_bytes()):
            if batch.base_offset < below:
                out.append(batch.to_bytes())
    return out


def assert_replicas_identical(log_dirs: dict[int, Path], topic: str, partition: int,
                              high_watermark: int) -> None:
    """Every replica stores the same batches, byte for byte, up to the high watermark.

    The partition leader epoch each leader stamped into its batches is part of the
    bytes compared (it sits outside the CRC, so only this comparison catches a follower
    that re-stamped or kept a batch from a deposed leader); the stamps must also never
    go down along the log.
    """
    copies = {b: segment_batches(d, topic, partition, high_watermark) for b, d in log_dirs.items()}
    for b, batches in copies.items():
        decoded = [next(decode_batches(raw)) for raw in batches]
        end = decoded[-1].last_offset + 1 if decoded else 0
        assert end >= high_watermark, (f"{topic}-{partition}: broker {b} holds offsets up to {end}, "
                                       f"below the high watermark {high_watermark}")
        epochs = [x.partition_leader_epoch for x in decoded]
        assert epochs == sorted(epochs), f"{topic}-{partition}: broker {b} has epochs going down: {epochs}"
        offsets = [(x.base_offset, x.last_offset) for x in decoded]
        assert all(a[1] + 1 == n[0] for a, n in zip(offsets, offsets[1:])), (
            f"{topic}-{partition}: broker {b} has a gap or overlap in {offsets}")
    reference_broker = min(copies)
    reference = copies[reference_broker]
    for b, batches in copies.items():
        if batches != reference:
            first = next((i for i, (x, y) in enumerate(zip(batches, reference)) if x != y),
                         min(len(batches), len(reference)))
            raise AssertionError(
                f"{topic}-{partition}: broker {b} differs from broker {reference_broker} below the high "
                f"watermark {high_watermark}, from batch #{first} "
                f"({_describe(batches, first)} vs {_describe(reference, first)})")


def _describe(batches: list[bytes], i: int) -> str:
    if i >= len(batches):
        return "nothing"
    b = next(decode_batches(batches[i]))
    return f"offsets {b.base_offset}-{b.last_offset} epoch {b.partition_leader_epoch} crc {b.crc}"


def wait_replicas_identical(log_dirs: dict[int, Path], topic: str, partition: int,
                            high_watermark: int, timeout: float = 20.0) -> None:
    """assert_replicas_identical, given followers `timeout` seconds to fetch the last batches."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            assert_replicas_identical(log_dirs, topic, partition, high_watermark)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's high watermark, as its leader answers ListOffsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-watermarks"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
    finally:
        consumer.close()
