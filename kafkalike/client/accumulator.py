"""RecordAccumulator: per-partition queues of open batches between send() and the sender thread.

This is the Java client's design, because its guarantees are what users rely on:
records of one partition are sent and acknowledged in the order they were appended;
a batch leaves when it is full, when linger.ms has passed, when memory runs short, or
when someone flushes or closes; buffer.memory bounds what is queued, and send() blocks
for at most max.block.ms waiting for room; a batch that cannot be delivered within
delivery.timeout.ms fails with a time-out instead of waiting forever.

send() pays for the encoding of each record here, in try_append, so that loop is
written for speed: the record's pieces are appended to the batch's list as they are
(joined once, when the batch is built for sending) and small varints come from a
table. Most records take append_to_open, the same encoding inlined for a record without
headers joining the partition's open batch (send()'s fast path); a new batch goes
through append. A batch is built (joined, compressed, CRC'd) only by the sender thread.

All times are time.monotonic() seconds, passed in, so tests drive the clock.
"""
from __future__ import annotations

import logging
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable

from crc32c import crc32c

from kafkalike.client.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from kafkalike.client.idempotence import insert_in_sequence_order
from kafkalike.client.metadata import Cluster, TopicPartition
from kafkalike.records import compression as codecs
from kafkalike.records.batch import decode_batches
from kafkalike.records.header import HEADER_SIZE, LOG_OVERHEAD, TRANSACTIONAL_MASK
from kafkalike.records.record import MAX_RECORD_OVERHEAD, encode_headers
from kafkalike.records.varint import encode_varint

log = logging.getLogger("kafkalike.client.producer")
_allocate_lock = threading.Lock

_PREFIX = struct.Struct(">qiibI")      # base offset, batch length, leader epoch, magic, crc
_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes ... records count
_SMALL = 1 << 14
_VARINT = tuple(encode_varint(i) for i in range(_SMALL))
_NULL = encode_varint(-1)
_ZERO = b"\x00"

# Java's CompressionRatioEstimator: start at 1.0, creep down as batches compress well,
# jump up as soon as one compresses worse than expected.
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05
RATIO_IMPROVING_STEP = 0.005
RATIO_DETERIORATE_STEP = 0.05

Callback = Callable[["RecordMetadata | None", "Exception | None"], None]


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a record was written; offset is -1 with acks=0 (the broker does not say)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int


class ProduceRequestResult:
    """The outcome of one batch, shared by the futures of all its records.

    Completion is a one-shot latch: a lock held from creation and released once by done(),
    which every waiter takes and gives back in turn. A threading.Event (a Condition over a
    lock, built in Python) cost about as much to create as the rest of a batch, once per
    batch on the thread that calls send()."""

    __slots__ = ("tp", "base_offset", "log_append_time", "error", "_latch", "_done", "successors")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.base_offset = -1
        self.log_append_time = -1
        self.error: Exception | None = None
        self._done = False
        self._latch = _allocate_lock()
        self._latch.acquire()
        # After a split: the futures that took over this batch's records, by relative offset.
        self.successors: list[FutureRecordMetadata] | None = None

    def set(self, base_offset: int, log_append_time: int, error: Exception | None) -> None:
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.error = error

    def done(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            self._latch.release()
        except RuntimeError:  # released by a concurrent done()
            pass

    @property
    def completed(self) -> bool:
        return self._done

    def wait(self, timeout: float | None = None) -> bool:
        if self._done:
            return True
        latch = self._latch
        if timeout is None:
            got = latch.acquire()
        elif timeout <= 0:
            got = latch.acquire(False)
        else:
            got = latch.acquire(True, min(timeout, threading.TIMEOUT_MAX))
        if got:
            latch.release()
        return got or self._done


class FutureRecordMetadata:
    """What send() returns: get(timeout) gives the RecordMetadata or raises the record's error."""

    __slots__ = ("_result", "_relative_offset", "timestamp", "serialized_key_size", "serialized_value_size")

    def __init__(self, result: ProduceRequestResult, relative_offset: int, timestamp: int, key_size: int,
                 value_size: int) -> None:
        self._result = result
        self._relative_offset = relative_offset
        self.timestamp = timestamp
        self.serialized_key_size = key_size
        self.serialized_value_size = value_size

    def __repr__(self) -> str:
        state = "pending" if not self.done() else ("failed" if self.failed() else "succeeded")
        return f"<FutureRecordMetadata {self._result.tp} {state}>"

    def _successor(self) -> FutureRecordMetadata | None:
        successors = self._result.successors
        return None if successors is None else successors[self._relative_offset]

    def done(self) -> bool:
        if not self._result.completed:
            return False
        successor = self._successor()
        return True if successor is None else successor.done()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Block until the record is acknowledged or failed; KafkaTimeoutError after `timeout` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._result.wait(timeout):
            raise KafkaTimeoutError(f"Timeout after waiting for {int(timeout * 1000)} ms.")
        successor = self._successor()
        if successor is not None:
            return successor.get(None if deadline is None else max(0.0, deadline - time.monotonic()))
        error = self._result.error
        if error is not None:
            raise error
        return self.metadata()

    result = get  # the concurrent.futures spelling

    def exception(self, timeout: float | None = None) -> Exception | None:
        try:
            self.get(timeout)
        except KafkaTimeoutError:
            if not self.done():
                raise
            return self._final().error
        except Exception as error:  # the record's own failure
            return error
        return None

    def succeeded(self) -> bool:
        return self.done() and self._final().error is None

    def failed(self) -> bool:
        return self.done() and self._final().error is not None

    def _final(self) -> ProduceRequestResult:
        future = self
        while (successor := future._successor()) is not None:
            future = successor
        return future._result

    def metadata(self) -> RecordMetadata:
        """RecordMetadata of a completed record (offsets are -1 with acks=0)."""
        result = self._result
        base = result.base_offset
        return RecordMetadata(result.tp.topic, result.tp.partition,
                              -1 if base < 0 else base + self._relative_offset,
                              self.timestamp if result.log_append_time < 0 else result.log_append_time,
                              self.serialized_key_size, self.serialized_value_size)


class ProducerBatch:
    """An open (then closed, then sent) record batch for one partition."""

    __slots__ = ("tp", "created", "last_attempt", "attempts", "drained", "count", "base_ts", "max_ts", "thunks",
                 "result", "allocated", "compression", "_parts", "_size", "_limit", "_closed", "_built",
                 "_uncompressed_size", "finished", "_factor", "producer_id", "producer_epoch", "base_sequence",
                 "resequenced", "transactional")

    def __init__(self, tp: TopicPartition, now: float, compression: int, write_limit: int, allocated: int,
                 ratio: float = 1.0, transactional: bool = False) -> None:
        self.tp = tp
        self.created = now
        self.last_attempt = now
        self.attempts = 0
        self.drained = 0.0
        self.count = 0
        self.base_ts: int | None = None
        self.max_ts = -1
        self.thunks: list[tuple[Callback, FutureRecordMetadata]] = []
        self.result = ProduceRequestResult(tp)
        self.allocated = allocated
        self.compression = compression
        self._parts: list[bytes] = []
        self._size = 0  # uncompressed records bytes
        # Records may fill this many uncompressed bytes: batch.size less the header, scaled
        # by the expected compression ratio (Java's estimatedBytesWritten).
        factor = 1.0 if not compression else ratio * COMPRESSION_RATE_ESTIMATION_FACTOR
        self._factor = factor
        self._limit = (write_limit - HEADER_SIZE) / factor
        self._closed = False
        self._built: bytes | None = None
        self._uncompressed_size = 0
        self.finished = False
        self.producer_id = -1       # set by an idempotent producer when the batch is first drained
        self.producer_epoch = -1
        self.base_sequence = -1
        self.resequenced = False    # renumbered (new epoch) since it was last sent
        self.transactional = transactional  # a transactional producer's batch: the attribute bit is set

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp}, count={self.count}, attempts={self.attempts})"

    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None, headers,
                   callback: Callback | None) -> FutureRecordMetadata | None:
        """Encode and add one record; None if it does not fit (the first record always fits)."""
        if self._closed:
            return None
        count = self.count
        base = self.base_ts
        if base is None:
            base = timestamp
        small = _VARINT
        d = timestamp - base
        tsd = small[d] if 0 <= d < _SMALL else encode_varint(d)
        od = small[count] if count < _SMALL else encode_varint(count)
        if key is None:
            kl = _NULL
            key = b""
            klen = 0
            key_size = -1
        else:
            key_size = klen = len(key)
            kl = small[klen] if klen < _SMALL else encode_varint(klen)
        if value is None:
            vl = _NULL
            value = b""
            vlen = 0
            value_size = -1
        else:
            value_size = vlen = len(value)
            vl = small[vlen] if vlen < _SMALL else encode_varint(vlen)
        hdr = encode_headers(headers) if headers else _ZERO
        body = 1 + len(tsd) + len(od) + len(kl) + klen + len(vl) + vlen + len(hdr)
        length = small[body] if body < _SMALL else encode_varint(body)
        size = len(length) + body
        if count and self._size + size > self._limit:
            return None
        self._parts.extend((length, _ZERO, tsd, od, kl, key, vl, value, hdr))
        self._size += size
        self.count = count + 1
        self.base_ts = base
        if timestamp > self.max_ts:
            self.max_ts = timestamp
        future = FutureRecordMetadata(self.result, count, timestamp, key_size, value_size)
        if callback is not None:
            self.thunks.append((callback, future))
        return future

    def is_full(self) -> bool:
        return self._closed or self._size >= self._limit

    def close(self) -> None:
        """No more appends (the batch is being sent, or is expiring)."""
        self._closed = True

    @property
    def estimated_size(self) -> int:
        if self._built is not None:
            return len(self._built)
        return HEADER_SIZE + int(self._size * self._factor)

    @property
    def uncompressed_size(self) -> int:
        return HEADER_SIZE + (self._size if self._built is None else self._uncompressed_size)

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Stamp an idempotent producer's id and sequence; must come before build()."""
        if self._built is not None:
            raise RuntimeError("the batch is already built; its producer state cannot change")
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, producer_epoch, base_sequence

    def renumber(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """New producer fields for a batch that may be built already: only its header is
        re-stamped and re-checksummed; the records (and compression) stay as they are."""
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, producer_epoch, base_sequence
        self.resequenced = True
        built = self._built
        if built is not None:
            payload = memoryview(built)[HEADER_SIZE:]
            after_crc = _AFTER_CRC.pack(self._attributes(), self.count - 1, self.base_ts, self.max_ts,
                                        producer_id, producer_epoch, base_sequence, self.count)
            crc = crc32c(payload, crc32c(after_crc))
            crc_at = _PREFIX.size - 4
            self._built = b"".join((built[:crc_at], crc.to_bytes(4, "big"), after_crc, payload))

    def _attributes(self) -> int:
        return self.compression | TRANSACTIONAL_MASK if self.transactional else self.compression

    def build(self) -> bytes:
        """The v2 batch bytes (base offset 0, producer fields as stamped), made once."""
        if self._built is None:
            self._closed = True
            records = b"".join(self._parts)
            payload = codecs.compress(self.compression, records) if self.compression else records
            after_crc = _AFTER_CRC.pack(self._attributes(), self.count - 1, self.base_ts, self.max_ts,
                                        self.producer_id, self.producer_epoch, self.base_sequence, self.count)
            crc = crc32c(payload, crc32c(after_crc))
            prefix = _PREFIX.pack(0, HEADER_SIZE - LOG_OVERHEAD + len(payload), -1, 2, crc)
            self._built = b"".join((prefix, after_crc, payload))
            self._uncompressed_size = len(records)
            self._parts = []
        return self._built

    def done(self, base_offset: int, log_append_time: int, error: Exception | None) -> bool:
        """Complete every record: callbacks first, then waiters. False if already completed."""
        if self.finished:
            return False
        self.finished = True
        self._closed = True
        result = self.result
        result.set(base_offset, log_append_time, error)
        for callback, future in self.thunks:
            try:
                if error is None:
                    callback(future.metadata(), None)
                else:
                    callback(None, error)
            except Exception:  # a user's callback must not take the sender thread down
                log.exception(
                    "Error executing user-provided callback on message for topic-partition '%s'", self.tp)
        result.done()
        return True

    def split(self, batch_size: int) -> list["ProducerBatch"]:
        """Re-cut this batch into smaller ones (after MESSAGE_TOO_LARGE).

        Each piece holds at most batch_size bytes and at most half of this batch, so
        repeated splits always end (in single records, which then fail if still too
        large). The records' callbacks move to the new batches and their futures follow through
        `result.successors`; this batch is then finished without firing anything.
        """
        built = self.build()
        batch_size = min(batch_size, max(HEADER_SIZE + 1, (len(built) if not self.compression
                                                               else self.uncompressed_size) // 2))
        batch = next(decode_batches(built))
        thunks = {future._relative_offset: (callback, future) for callback, future in self.thunks}
        pieces: list[ProducerBatch] = []
        successors: list[FutureRecordMetadata] = []
        current: ProducerBatch | None = None
        for offset, record in enumerate(batch.records()):
            callback = thunks[offset][0] if offset in thunks else None
            future = None if current is None else current.try_append(
                record.timestamp, record.key, record.value, record.headers, callback)
            if future is None:
                current = ProducerBatch(self.tp, self.created, self.compression, batch_size, 0,
                                        transactional=self.transactional)
                current.attempts = self.attempts
                current.last_attempt = self.last_attempt
                pieces.append(current)
                future = current.try_append(record.timestamp, record.key, record.value, record.headers, callback)
            successors.append(future)
        self.finished = True
        self.thunks = []
        self.result.successors = successors
        self.result.done()
        return pieces


class BufferPool:
    """buffer.memory as a budget: batches take from it when created and give back when done.

    The lock is taken directly on the paths that do not wait (threading.Condition's own
    enter and exit are Python calls), and a deallocation notifies only when someone waits,
    as Java's BufferPool signals only a waiting thread: the sender gives memory back once
    per batch."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.available = total
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self.waiters = 0
        self.closed = False

    def allocate(self, size: int, max_block: float) -> None:
        if size > self.total:
            raise KafkaError(f"Attempt to allocate {size} bytes, but there is a hard limit of {self.total} on "
                             "memory allocations.")
        with self._lock:
            if self.available >= size:
                self.available -= size
                return
            deadline = time.monotonic() + max_block
            self.waiters += 1
            try:
                while self.available < size:
                    if self.closed:
                        raise KafkaError("Producer closed while allocating memory")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise KafkaTimeoutError("Failed to allocate memory within the configured max blocking "
                                                f"time {int(round(max_block * 1000))} ms.")
                    self._cond.wait(remaining)
                self.available -= size
            finally:
                self.waiters -= 1

    def deallocate(self, size: int) -> None:
        with self._lock:
            self.available += size
            if self.waiters:
                self._cond.notify_all()

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._cond.notify_all()


@dataclass
class ReadyCheck:
    nodes: set[int]
    next_delay: float  # seconds until some batch may become sendable
    unknown_leader_topics: set[str]


class RecordAccumulator:
    """Per-partition batch queues, shared by user threads (append) and the sender (ready/drain)."""

    def __init__(self, *, batch_size: int = 16384, compression: int = 0, linger_ms: int = 0,
                 retry_backoff_ms: int = 100, delivery_timeout_ms: int = 120000,
                 buffer_memory: int = 33554432) -> None:
        self.batch_size = batch_size
        self.compression = compression
        self.linger = linger_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.pool = BufferPool(buffer_memory)
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._lock = threading.Lock()
        self._incomplete: set[ProducerBatch] = set()
        self._incomplete_lock = threading.Lock()
        self._flushes = 0
        self._closed = False
        self._muted: set[TopicPartition] = set()
        # An idempotent producer's IdempotenceManager: says which head batches may go and
        # numbers them as they are drained.
        self.idempotence = None
        # A transactional producer's TransactionManager: a partition's batches wait until the
        # partition is in the transaction; every batch carries the transactional bit.
        self.transactions = None
        self.completing = False  # a commit or abort is waiting for every batch: send all now
        self._drain_index: dict[int, int] = {}
        self._ratios: dict[str, float] = {}

    # -- user threads -------------------------------------------------------------------

    def append(self, tp: tuple[str, int], timestamp: int, key: bytes | None, value: bytes | None, headers,
               callback: Callback | None, deadline: float, abort_on_new_batch: bool, now: float
               ) -> tuple[FutureRecordMetadata | None, bool, bool]:
        """Add a record; returns (future, batch now full, new batch created).

        `tp` may be a plain (topic, partition) tuple. `deadline` (monotonic seconds) bounds
        the wait for buffer memory. With abort_on_new_batch the future is None when the
        record would need a new batch: the caller lets a sticky partitioner move on and
        appends again.
        """
        with self._lock:
            if self._closed:
                raise IllegalStateError("Producer closed while send in progress")
            dq = self._batches.get(tp)
            if dq:
                last = dq[-1]
                future = last.try_append(timestamp, key, value, headers, callback)
                if future is not None:
                    return future, len(dq) > 1 or last._size >= last._limit, False
        if abort_on_new_batch:
            return None, False, False
        size = max(self.batch_size, HEADER_SIZE + record_size_upper_bound(key, value, headers))
        self.pool.allocate(size, max(0.0, deadline - time.monotonic()))
        created = False
        try:
            with self._lock:
                if self._closed:
                    raise IllegalStateError("Producer closed while send in progress")
                dq = self._batches.get(tp)
                if dq is None:
                    tp = TopicPartition(*tp)
                    dq = self._batches[tp] = deque()
                elif dq:  # another thread may have opened a batch meanwhile
                    last = dq[-1]
                    future = last.try_append(timestamp, key, value, headers, callback)
                    if future is not None:
                        return future, len(dq) > 1 or last.is_full(), False
                batch = ProducerBatch(TopicPartition(*tp), now, self.compression, self.batch_size, size,
                                      self._ratios.get(tp[0], 1.0), self.transactions is not None)
                future = batch.try_append(timestamp, key, value, headers, callback)
                dq.append(batch)
                created = True
                with self._incomplete_lock:
                    self._incomplete.add(batch)
                return future, len(dq) > 1 or batch.is_full(), True
        finally:
            if not created:
                self.pool.deallocate(size)

    def append_to_open(self, tp: tuple[str, int], timestamp: int, key: bytes | None, value: bytes,
                       callback: Callback | None) -> tuple[FutureRecordMetadata | None, bool]:
        """send()'s fast path: add a record without headers to the partition's open batch, if
        it has one with room; (None, False) otherwise (then append() makes a new batch).

        The same bytes and bookkeeping as ProducerBatch.try_append, inlined: at 100-byte
        records the calls and branches of the general path were most of send()'s cost. The
        flag is True only when this record filled the batch (the sender is woken once per
        full batch; a new batch behind a full one wakes it through append())."""
        with self._lock:
            dq = self._batches.get(tp)
            if not dq or self._closed:
                return None, False
            batch = dq[-1]
            if batch._closed:
                return None, False
            count = batch.count
            base = batch.base_ts
            if base is None:
                return None, False
            d = timestamp - base
            vlen = len(value)
            small = _VARINT
            if key is None:
                if 0 <= d < _SMALL and count < _SMALL and vlen < _SMALL:
                    tsd, od, vl = small[d], small[count], small[vlen]
                else:
                    tsd, od, vl = encode_varint(d), encode_varint(count), encode_varint(vlen)
                body = 3 + len(tsd) + len(od) + len(vl) + vlen
                kl = _NULL
                key = b""
                key_size = -1
            else:
                key_size = klen = len(key)
                if 0 <= d < _SMALL and count < _SMALL and vlen < _SMALL and klen < _SMALL:
                    tsd, od, vl, kl = small[d], small[count], small[vlen], small[klen]
                else:
                    tsd, od, vl, kl = encode_varint(d), encode_varint(count), encode_varint(vlen), encode_varint(klen)
                body = 2 + len(tsd) + len(od) + len(kl) + klen + len(vl) + vlen
            length = small[body] if body < _SMALL else encode_varint(body)
            size = len(length) + body
            total = batch._size + size
            if total > batch._limit:
                return None, False
            batch._parts.extend((length, _ZERO, tsd, od, kl, key, vl, value, _ZERO))
            batch._size = total
            batch.count = count + 1
            if timestamp > batch.max_ts:
                batch.max_ts = timestamp
            future = FutureRecordMetadata(batch.result, count, timestamp, key_size, vlen)
            if callback is not None:
                batch.thunks.append((callback, future))
            return future, total >= batch._limit

    def begin_flush(self) -> None:
        with self._lock:
            self._flushes += 1

    def end_flush(self) -> None:
        with self._lock:
            self._flushes -= 1

    def await_flush_completion(self, timeout: float | None) -> None:
        with self._incomplete_lock:
            pending = [b.result for b in self._incomplete]
        deadline = None if timeout is None else time.monotonic() + timeout
        while pending:
            result = pending.pop()
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not result.wait(remaining):
                raise KafkaTimeoutError(f"Failed to flush accumulated records within {int(timeout * 1000)} ms.")
            if result.successors:  # a split batch: its records now live in other batches
                pending.extend({id(f._result): f._result for f in result.successors}.values())

    # -- the sender -----------------------------------------------------------------------

    def ready(self, cluster: Cluster, now: float) -> ReadyCheck:
        """Which leaders have something to send now, and how long until someone might."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_delay = float("inf")
        exhausted = self.pool.waiters > 0
        retry_backoff, linger = self.retry_backoff, self.linger
        with self._lock:
            urgent = exhausted or self._closed or self._flushes > 0 or self.completing
            transactions = self.transactions
            for tp, dq in self._batches.items():
                if not dq:
                    continue
                leader = cluster.leader_for(tp.topic, tp.partition)
                if leader is None:
                    unknown.add(tp.topic)
                    continue
                if leader in nodes or tp in self._muted:
                    continue
                batch = dq[0]
                if transactions is not None and not transactions.is_send_to_partition_allowed(tp):
                    continue
                if self.idempotence is not None and not self.idempotence.may_drain(batch):
                    continue
                waited = now - batch.last_attempt
                backing_off = batch.attempts > 0 and waited < retry_backoff
                time_to_wait = retry_backoff if backing_off else linger
                full = len(dq) > 1 or batch.is_full()
                if (full or waited >= time_to_wait or urgent) and not backing_off:
                    nodes.add(leader)
                else:
                    next_delay = min(next_delay, max(time_to_wait - waited, 0.0))
        return ReadyCheck(nodes, next_delay, unknown)

    def drain(self, cluster: Cluster, nodes: Iterable[int], max_size: int, now: float
              ) -> dict[int, list[ProducerBatch]]:
        """At most one batch per partition for each node, up to max_size bytes per node."""
        out: dict[int, list[ProducerBatch]] = {}
        with self._lock:
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp, dq in self._batches.items():
                if dq:
                    leader = cluster.leader_for(tp.topic, tp.partition)
                    if leader is not None:
                        by_leader.setdefault(leader, []).append(tp)
            for node in nodes:
                tps = by_leader.get(node)
                if not tps:
                    continue
                ready: list[ProducerBatch] = []
                size = 0
                start = self._drain_index.get(node, 0) % len(tps)
                for i in range(len(tps)):
                    tp = tps[(start + i) % len(tps)]
                    if tp in self._muted:
                        continue
                    dq = self._batches[tp]
                    first = dq[0]
                    if first.attempts > 0 and now - first.last_attempt < self.retry_backoff:
                        continue
                    if self.transactions is not None and not self.transactions.is_send_to_partition_allowed(tp):
                        continue
                    if self.idempotence is not None and not self.idempotence.may_drain(first):
                        continue
                    estimate = first.estimated_size
                    if ready and size + estimate > max_size:
                        break
                    dq.popleft()
                    if self.idempotence is not None:
                        self.idempotence.assign(first)
                    first.close()
                    first.drained = now
                    size += estimate
                    ready.append(first)
                    self._drain_index[node] = start + i + 1
                if ready:
                    out[node] = ready
        return out

    def expired_batches(self, now: float) -> list[ProducerBatch]:
        """Queued batches older than delivery.timeout.ms, taken out of their queues."""
        expired: list[ProducerBatch] = []
        timeout = self.delivery_timeout
        with self._lock:
            for dq in self._batches.values():
                while dq and now - dq[0].created >= timeout:
                    batch = dq.popleft()
                    batch.close()
                    expired.append(batch)
        return expired

    def next_expiry(self) -> float:
        with self._lock:
            firsts = [dq[0].created for dq in self._batches.values() if dq]
        return min(firsts) + self.delivery_timeout if firsts else float("inf")

    def reenqueue(self, batch: ProducerBatch, now: float) -> None:
        batch.attempts += 1
        batch.last_attempt = now
        with self._lock:
            dq = self._batches.setdefault(batch.tp, deque())
            if batch.base_sequence >= 0:
                insert_in_sequence_order(dq, batch)
            else:
                dq.appendleft(batch)

    def split_and_reenqueue(self, batch: ProducerBatch, now: float) -> list[ProducerBatch]:
        pieces = batch.split(self.batch_size)
        with self._lock:
            dq = self._batches.setdefault(batch.tp, deque())
            for piece in reversed(pieces):
                piece.attempts += 1
                piece.last_attempt = now
                dq.appendleft(piece)
            with self._incomplete_lock:
                self._incomplete.discard(batch)
                self._incomplete.update(pieces)
        return pieces

    def record_compression(self, batch: ProducerBatch) -> None:
        """Update the topic's compression ratio estimate from a built batch."""
        if not batch.compression or not batch.uncompressed_size:
            return
        observed = len(batch.build()) / batch.uncompressed_size
        current = self._ratios.get(batch.tp.topic, 1.0)
        if observed > current:
            self._ratios[batch.tp.topic] = max(current + RATIO_DETERIORATE_STEP, observed)
        elif observed < current:
            self._ratios[batch.tp.topic] = max(current - RATIO_IMPROVING_STEP, observed)

    def deallocate(self, batch: ProducerBatch) -> None:
        with self._incomplete_lock:
            self._incomplete.discard(batch)
        if batch.allocated:
            self.pool.deallocate(batch.allocated)
            batch.allocated = 0

    def mute(self, tp: TopicPartition) -> None:
        self._muted.add(tp)

    def unmute(self, tp: TopicPartition) -> None:
        self._muted.discard(tp)

    def has_undrained(self) -> bool:
        with self._lock:
            return any(self._batches.values())

    def has_incomplete(self) -> bool:
        with self._incomplete_lock:
            return bool(self._incomplete)

    def queued_partitions(self) -> list[TopicPartition]:
        with self._lock:
            return [tp for tp, dq in self._batches.items() if dq]

    def close(self) -> None:
        """Stop accepting records; everything queued becomes sendable at once."""
        with self._lock:
            self._closed = True

    def abort_undrained(self, error: Exception) -> None:
        """Fail the batches never sent (no sequence yet): their transaction is being aborted or
        has failed, so they must not reach the log (Java's abortUndrainedBatches)."""
        aborted: list[ProducerBatch] = []
        with self._lock:
            for dq in self._batches.values():
                keep = [b for b in dq if b.base_sequence >= 0]
                if len(keep) != len(dq):
                    aborted.extend(b for b in dq if b.base_sequence < 0)
                    dq.clear()
                    dq.extend(keep)
        for batch in aborted:
            batch.close()
            batch.done(-1, -1, error)
            self.deallocate(batch)

    def abort_incomplete(self, error: Exception) -> None:
        """Fail every batch not yet acknowledged (a forced close)."""
        with self._lock:
            for dq in self._batches.values():
                dq.clear()
        with self._incomplete_lock:
            batches = list(self._incomplete)
            self._incomplete.clear()
        for batch in batches:
            batch.done(-1, -1, error)
            if batch.allocated:
                self.pool.deallocate(batch.allocated)
                batch.allocated = 0
        self.pool.close()


def record_size_upper_bound(key: bytes | None, value: bytes | None, headers) -> int:
    """Bytes one record can take in a v2 batch (Java's DefaultRecord.recordSizeUpperBound)."""
    size = MAX_RECORD_OVERHEAD
    if key is not None:
        size += len(key)
    if value is not None:
        size += len(value)
    if headers:
        size += len(encode_headers(headers))
    return size


__all__ = ["BufferPool", "FutureRecordMetadata", "ProduceRequestResult", "ProducerBatch", "ReadyCheck",
           "RecordAccumulator", "RecordMetadata", "record_size_upper_bound"]
