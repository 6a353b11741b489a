"""KafkaProducer: the Java producer's semantics with a Python face.

    producer = KafkaProducer({"bootstrap.servers": "localhost:9092", "acks": "all"})
    future = producer.send("events", b"value", key=b"k", headers=[("h", b"v")])
    metadata = future.get(timeout=10)       # RecordMetadata(topic, partition, offset, ...)
    producer.send("events", b"v2", callback=lambda md, err: ...)
    producer.flush(); producer.close()

send() is thread safe and returns at once with a future; a background thread batches
and sends (see accumulator and sender). What Java reports through the returned future
or the callback when the record never made it into a batch - no metadata for the topic
within max.block.ms, no buffer memory within max.block.ms, a record larger than
max.request.size or buffer.memory, a serializer failure - is raised from send() here
instead, as kafka-python does, so a caller cannot miss it; the callback is then not
called. Everything that happens after the record was accepted reaches the callback
(exactly once, with exactly one of metadata and exception set) and the future.

With transactional.id the producer is transactional, as Java's (the state machine and its
requests live in transaction_manager.py):

    producer.init_transactions()
    producer.begin_transaction()
    producer.send("out", b"v")
    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    producer.commit_transaction()          # or abort_transaction()
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from kafkalike.client.security import ClientSecurity
from kafkalike.client.accumulator import (
    FutureRecordMetadata,
    RecordAccumulator,
    RecordMetadata,
    record_size_upper_bound,
)
from kafkalike.client.config import producer_config
from kafkalike.client.connection import parse_bootstrap_servers
from kafkalike.client.errors import (
    ConfigError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
)
from kafkalike.client.idempotence import IdempotenceManager
from kafkalike.client.metadata import Metadata, PartitionInfo, TopicPartition
from kafkalike.client.metrics import PRODUCER, KafkaMetric, MetricName, Metrics, ProducerMetrics
from kafkalike.client.network import NetworkClient
from kafkalike.client.partitioner import resolve_partitioner
from kafkalike.client.sender import Sender
from kafkalike.client.transaction_manager import TransactionManager
from kafkalike.client.serializers import is_passthrough, load_object, resolve_serializer
from kafkalike.records.compression import codec_by_name
from kafkalike.records.header import HEADER_SIZE
from kafkalike.records.record import MAX_RECORD_OVERHEAD

log = logging.getLogger("kafkalike.client.producer")

_client_ids = itertools.count(1)
_monotonic = time.monotonic
_time = time.time
# A v2 batch header plus the most a record adds beyond its key, value and headers.
_MAX_OVERHEAD = HEADER_SIZE + MAX_RECORD_OVERHEAD

Headers = Sequence[tuple[str, "bytes | None"]]


@dataclass
class ProducerRecord:
    """Java's ProducerRecord; send() also takes these fields as arguments."""

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    headers: Headers | Mapping[str, bytes | None] | None = None
    timestamp: int | None = None


class ProducerInterceptor:
    """Base for interceptor.classes entries (subclassing is optional: duck typing works)."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return record

    def on_acknowledgement(self, metadata: RecordMetadata, exception: Exception | None) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class _Interceptors:
    """Calls every interceptor in order; their exceptions are logged, never raised (as Java)."""

    items: list = field(default_factory=list)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        for interceptor in self.items:
            try:
                intercepted = interceptor.on_send(record)
            except Exception:
                log.warning("Error executing interceptor onSend callback", exc_info=True)
                continue
            if isinstance(intercepted, ProducerRecord):
                record = intercepted
            else:
                log.warning("Interceptor %r returned %r from on_send, not a ProducerRecord; the record goes on "
                            "unchanged", interceptor, intercepted)
        return record

    def on_acknowledgement(self, metadata: RecordMetadata, exception: Exception | None) -> None:
        for interceptor in self.items:
            try:
                interceptor.on_acknowledgement(metadata, exception)
            except Exception:
                log.warning("Error executing interceptor onAcknowledgement callback", exc_info=True)

    def close(self) -> None:
        for interceptor in self.items:
            try:
                close = getattr(interceptor, "close", None)
                if close is not None:
                    close()
            except Exception:
                log.warning("Failed to close producer interceptor", exc_info=True)


def _load_interceptors(specs: Iterable[Any], configs: Mapping[str, Any]) -> _Interceptors:
    items = []
    for spec in specs:
        if isinstance(spec, str):
            try:
                spec = load_object(spec)
            except (ImportError, AttributeError) as error:
                raise ConfigError(f"Invalid value {spec} for configuration interceptor.classes: Class {spec} "
                                  f"could not be found ({error})") from None
        if isinstance(spec, type):
            spec = spec()
            configure = getattr(spec, "configure", None)
            if callable(configure):
                configure(dict(configs))
        items.append(spec)
    return _Interceptors(items)


def _normalize_headers(headers) -> list[tuple[str, bytes | None]]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    try:
        pairs = [tuple(item) for item in items]
    except TypeError:
        raise SerializationError(f"Headers must be a mapping or an iterable of (key, value) pairs, not "
                                 f"{type(headers).__name__}") from None
    for pair in pairs:
        if len(pair) != 2:
            raise SerializationError(f"A header must be a (key, value) pair, not {pair!r}")
        key, value = pair
        if not isinstance(key, str):
            raise SerializationError(f"Header keys must be str, not {type(key).__name__}")
        if value is not None and type(value) is not bytes:
            if isinstance(value, str):
                value = value.encode("utf-8")
            elif isinstance(value, (bytearray, memoryview)):
                value = bytes(value)
            else:
                raise SerializationError(f"Header values must be bytes or None, not {type(value).__name__}")
        out.append((key, value))
    return out


def _serialize(serializer, what: str, topic: str, data: Any) -> bytes | None:
    """Run a user's serializer; anything but bytes or None, or any failure, is a SerializationError
    here in send() rather than a stuck batch on the sender thread."""
    try:
        out = serializer(topic, data)
    except KafkaError:
        raise
    except Exception as error:
        raise SerializationError(f"Can't convert {what} of class {type(data).__name__} with the serializer "
                                 f"specified in {what}.serializer: {error}") from error
    if out is None or type(out) is bytes:
        return out
    if isinstance(out, (bytearray, memoryview)):
        return bytes(out)
    raise SerializationError(f"The serializer specified in {what}.serializer returned {type(out).__name__}; "
                             "a serializer must return bytes or None")


def _group_metadata(group_metadata: Any) -> Any:
    """The consumer's group metadata, checked as Java's throwIfInvalidGroupMetadata."""
    if group_metadata is None:
        raise ValueError("Consumer group metadata could not be null")
    if isinstance(group_metadata, str):
        from kafkalike.client.consumer import ConsumerGroupMetadata
        return ConsumerGroupMetadata(group_metadata, -1, "", None)
    if group_metadata.generation_id > 0 and not group_metadata.member_id:
        raise ValueError(f"Passed in group metadata {group_metadata} has generationId > 0 but member.id ")
    return group_metadata


def _txn_offsets(offsets: Mapping) -> dict[TopicPartition, tuple[int, str | None, int]]:
    """(offset, metadata, leader epoch) per partition, from ints or OffsetAndMetadata values."""
    out = {}
    for tp, value in offsets.items():
        tp = TopicPartition(*tp)
        if isinstance(value, int) and not isinstance(value, bool):
            out[tp] = (value, "", -1)
        else:
            epoch = getattr(value, "leader_epoch", None)
            out[tp] = (value.offset, getattr(value, "metadata", "") or "", -1 if epoch is None else epoch)
    return out


class _TracedPartitioner:
    """The partitioner, reporting its choice to a tracer (KafkaProducer._trace_with)."""

    def __init__(self, partitioner: Any, tracer: Any) -> None:
        self._partitioner = partitioner
        self._tracer = tracer

    def partition(self, topic, key, key_bytes, value, value_bytes, cluster) -> int:
        partition = self._partitioner.partition(topic, key, key_bytes, value, value_bytes, cluster)
        self._tracer.step("partitioner", partition=partition, partitioner=type(self._partitioner).__name__)
        return partition

    def __getattr__(self, name: str) -> Any:   # on_new_batch, close, ...
        return getattr(self._partitioner, name)


class KafkaProducer:
    """A thread-safe producer; see the module docstring. Configs use Kafka's dotted names."""

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        merged = dict(config or {})
        merged.update({k.replace("_", "."): v for k, v in overrides.items()})
        self.config = cfg = producer_config(merged)
        self.client_id = cfg["client.id"] or f"producer-{next(_client_ids)}"
        self._log_prefix = f"[Producer clientId={self.client_id}] "
        servers = cfg["bootstrap.servers"]
        try:
            addresses = parse_bootstrap_servers(",".join(servers) if isinstance(servers, list) else servers)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        self._key_serializer = resolve_serializer(cfg["key.serializer"], cfg, True)
        self._value_serializer = resolve_serializer(cfg["value.serializer"], cfg, False)
        self._key_passthrough = is_passthrough(self._key_serializer)
        self._value_passthrough = is_passthrough(self._value_serializer)
        self._partitioner = resolve_partitioner(cfg["partitioner.class"], cfg)
        self._sticky = callable(getattr(self._partitioner, "on_new_batch", None))
        self._interceptors = _load_interceptors(cfg["interceptor.classes"], cfg)
        # Long.MaxValue, the "never give up" Java users write, is past what a thread can wait.
        self._max_block = min(cfg["max.block.ms"] / 1000, threading.TIMEOUT_MAX)
        self._max_request_size = cfg["max.request.size"]
        self._buffer_memory = cfg["buffer.memory"]
        self._metadata = Metadata(addresses, retry_backoff_ms=cfg["retry.backoff.ms"],
                                  max_age_ms=cfg["metadata.max.age.ms"], max_idle_ms=cfg["metadata.max.idle.ms"])
        self._metrics = Metrics(self.client_id, window_ms=cfg["metrics.sample.window.ms"],
                                samples=cfg["metrics.num.samples"])
        self._accumulator = RecordAccumulator(
            batch_size=cfg["batch.size"], compression=codec_by_name(cfg["compression.type"]),
            linger_ms=cfg["linger.ms"], retry_backoff_ms=cfg["retry.backoff.ms"],
            delivery_timeout_ms=cfg["delivery.timeout.ms"], buffer_memory=cfg["buffer.memory"])
        client = NetworkClient(
            self._metadata, client_id=self.client_id,
            max_in_flight=cfg["max.in.flight.requests.per.connection"],
            request_timeout_ms=cfg["request.timeout.ms"], reconnect_backoff_ms=cfg["reconnect.backoff.ms"],
            reconnect_backoff_max_ms=cfg["reconnect.backoff.max.ms"],
            connection_setup_timeout_ms=cfg["socket.connection.setup.timeout.ms"],
            send_buffer_bytes=cfg["send.buffer.bytes"], receive_buffer_bytes=cfg["receive.buffer.bytes"],
            security=ClientSecurity.from_config(cfg),
            log_prefix=self._log_prefix)
        idempotence = IdempotenceManager() if cfg["enable.idempotence"] else None
        self._transactions = None
        if cfg["transactional.id"] is not None:
            self._transactions = TransactionManager(cfg["transactional.id"], cfg["transaction.timeout.ms"], idempotence,
                                                    retry_backoff_ms=cfg["retry.backoff.ms"],
                                                    log_prefix=self._log_prefix)
        self._sender = Sender(
            client, self._metadata, self._accumulator, acks=int(cfg["acks"]), retries=cfg["retries"],
            request_timeout_ms=cfg["request.timeout.ms"], max_request_size=cfg["max.request.size"],
            guarantee_order=cfg["max.in.flight.requests.per.connection"] == 1 and not cfg["enable.idempotence"],
            log_prefix=self._log_prefix, name=f"kafka-producer-network-thread | {self.client_id}",
            idempotence=idempotence, transactions=self._transactions, sensors=ProducerMetrics(self._metrics))
        self._register_gauges(client)
        self._wakeup = client.wakeup  # cheap when a wakeup is already pending
        # send()'s fast path is for producers whose records need no per-record hooks (no
        # serializer but bytes passthrough, no interceptors, no transaction); _plain_limit
        # keeps records send() must reject (too large) on the general path.
        self._update_plain()
        self._plain_limit = min(self._max_request_size, self._buffer_memory) - _MAX_OVERHEAD
        self._closed = False
        self._close_lock = threading.Lock()
        self._sender.start()

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<KafkaProducer client.id={self.client_id}{' closed' if self._closed else ''}>"

    # -- sending ------------------------------------------------------------------------

    def send(self, topic: str | ProducerRecord, value: Any = None, key: Any = None, partition: int | None = None,
             headers: Headers | Mapping[str, bytes | None] | None = None, timestamp: int | None = None,
             callback: Callable[[RecordMetadata | None, Exception | None], None] | None = None
             ) -> FutureRecordMetadata:
        """Queue one record; returns a future of its RecordMetadata."""
        if self._closed:
            raise IllegalStateError("Cannot perform operation after producer has been closed")
        if (self._plain and type(value) is bytes and partition is None and timestamp is None and not headers
                and type(topic) is str and (key is None or type(key) is bytes)):
            # The fast path: a record that needs no serializer, interceptor, transaction or
            # header work and fits the partition's open batch. The same steps as _send, fewer
            # calls and checks; anything else (a new batch, unknown metadata) takes _send.
            cluster = self._metadata.cluster
            if topic in cluster.topics and len(value) + (0 if key is None else len(key)) <= self._plain_limit:
                partition = self._partitioner.partition(topic, key, key, value, value, cluster)
                future, filled = self._accumulator.append_to_open((topic, partition), int(_time() * 1000), key,
                                                                  value, callback)
                if future is not None:
                    if filled:
                        self._wakeup()
                    return future
                partition = None
        if type(topic) is not str:
            if not isinstance(topic, ProducerRecord):
                raise TypeError(f"topic must be a str or a ProducerRecord, not {type(topic).__name__}")
            record = topic
            topic, value, key, partition = record.topic, record.value, record.key, record.partition
            headers, timestamp = record.headers, record.timestamp
        interceptors = self._interceptors
        if interceptors.items:
            record = interceptors.on_send(ProducerRecord(topic, value, key, partition, headers, timestamp))
            topic, value, key, partition = record.topic, record.value, record.key, record.partition
            headers, timestamp = record.headers, record.timestamp
        try:
            if self._transactions is not None:
                self._transactions.fail_if_not_ready_for_send()
            return self._send(topic, value, key, partition, headers, timestamp, callback)
        except KafkaError as error:
            if interceptors.items:
                interceptors.on_acknowledgement(
                    RecordMetadata(topic, -1 if partition is None else partition, -1, -1, -1, -1), error)
            raise

    def _send(self, topic, value, key, partition, headers, timestamp, callback) -> FutureRecordMetadata:
        if self._key_passthrough and (key is None or type(key) is bytes):
            key_bytes = key
        else:
            key_bytes = _serialize(self._key_serializer, "key", topic, key)
        if self._value_passthrough and (value is None or type(value) is bytes):
            value_bytes = value
        else:
            value_bytes = _serialize(self._value_serializer, "value", topic, value)
        if timestamp is not None:
            if not isinstance(timestamp, int) or isinstance(timestamp, bool):
                raise TypeError(f"timestamp must be an int (epoch ms) or None, not {type(timestamp).__name__}")
            if timestamp < 0:
                raise ValueError(f"Invalid timestamp: {timestamp}. Timestamp should always be non-negative or null.")
        if partition is not None and (not isinstance(partition, int) or isinstance(partition, bool)):
            raise TypeError(f"partition must be an int or None, not {type(partition).__name__}")
        if headers:
            headers = _normalize_headers(headers)
        size = _MAX_OVERHEAD
        if key_bytes is not None:
            size += len(key_bytes)
        if value_bytes is not None:
            size += len(value_bytes)
        if headers:
            size = HEADER_SIZE + record_size_upper_bound(key_bytes, value_bytes, headers)
        if size > self._max_request_size or size > self._buffer_memory:
            self._raise_too_large(size)
        now = _monotonic()
        view = self._metadata.cluster.topics.get(topic)
        if view is None or (partition is not None and partition >= len(view.partitions)):
            cluster = self._wait_on_metadata(topic, partition, now)
            view = cluster.topics[topic]
        else:
            cluster = self._metadata.cluster
            self._metadata.touch(topic, now)
        sticky = False
        if partition is None:
            partition = self._partitioner.partition(topic, key, key_bytes, value, value_bytes, cluster)
            sticky = self._sticky
        elif partition < 0:
            raise KafkaError(f"Invalid partition given with record: {partition} is not in the range "
                             f"[0...{len(view.partitions)}].")
        if timestamp is None:
            timestamp = int(_time() * 1000)
        if callback is not None or self._interceptors.items:
            callback = self._wrap_callback(callback, topic, partition)
        transactions = self._transactions
        # Java's maybeAddPartition, before the record is queued (a partition the sticky
        # partitioner then leaves stays in the transaction, harmlessly, as in Java).
        added = transactions is not None and transactions.maybe_add_partition(TopicPartition(topic, partition))
        deadline = now + self._max_block
        accumulator = self._accumulator
        future, full, new_batch = accumulator.append((topic, partition), timestamp, key_bytes, value_bytes,
                                                     headers, callback, deadline, sticky, now)
        if future is None:
            # The sticky partition needs a new batch: let the partitioner move on first (KIP-480).
            self._partitioner.on_new_batch(topic, cluster, partition)
            previous = partition
            partition = self._partitioner.partition(topic, key, key_bytes, value, value_bytes, cluster)
            if callback is not None and partition != previous:
                callback = self._wrap_callback(callback.user_callback, topic, partition)
            if transactions is not None and partition != previous:
                added = transactions.maybe_add_partition(TopicPartition(topic, partition)) or added
            future, full, new_batch = accumulator.append((topic, partition), timestamp, key_bytes, value_bytes,
                                                         headers, callback, deadline, False, now)
        if full or new_batch or added:  # (a new partition in a transaction: the sender adds it)
            self._wakeup()
        return future

    def _raise_too_large(self, size: int) -> None:
        if size > self._max_request_size:
            raise RecordTooLargeError(f"The message is {size} bytes when serialized which is larger than "
                                      f"{self._max_request_size}, which is the value of the max.request.size "
                                      "configuration.")
        raise RecordTooLargeError(f"The message is {size} bytes when serialized which is larger than the total "
                                  "memory buffer you have configured with the buffer.memory configuration.")

    def _wrap_callback(self, user_callback, topic: str, partition: int):
        interceptors = self._interceptors

        def on_completion(metadata: RecordMetadata | None, exception: Exception | None) -> None:
            if interceptors.items:
                interceptors.on_acknowledgement(
                    metadata if metadata is not None else RecordMetadata(topic, partition, -1, -1, -1, -1), exception)
            if user_callback is not None:
                user_callback(metadata, exception)
        on_completion.user_callback = user_callback  # type: ignore[attr-defined]
        return on_completion

    def _wait_on_metadata(self, topic: str, partition: int | None, start: float):
        """Block until the topic (and partition) are known, up to max.block.ms (Java's waitOnMetadata)."""
        metadata = self._metadata
        max_wait = self._max_block
        count: int | None = None
        while True:
            metadata.add_topic(topic, time.monotonic())
            version = metadata.request_update()
            self._sender.wakeup()
            elapsed = time.monotonic() - start
            try:
                metadata.await_update(version, max(0.0, max_wait - elapsed))
                timed_out = False
            except KafkaTimeoutError:
                timed_out = True
            cluster = metadata.cluster
            count = cluster.partition_count(topic)
            elapsed = time.monotonic() - start
            if count is not None and (partition is None or partition < count):
                return cluster
            if timed_out or elapsed >= max_wait:
                if count is None:
                    raise KafkaTimeoutError(f"Topic {topic} not present in metadata after {int(max_wait * 1000)} ms.")
                raise KafkaTimeoutError(f"Partition {partition} of topic {topic} with partition count {count} is "
                                        f"not present in metadata after {int(max_wait * 1000)} ms.")
            metadata.raise_if_fatal(topic)
            # Java asks again at once; the metadata's retry backoff spaces the requests.

    # -- transactions (Java's KafkaProducer methods of the same names) ----------------------

    def _transaction_manager(self) -> TransactionManager:
        if self._transactions is None:
            raise IllegalStateError("Transactional method invoked on a non-transactional producer.")
        if self._closed:
            raise IllegalStateError("Cannot perform operation after producer has been closed")
        return self._transactions

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get this transactional.id's producer id and epoch, fencing any older instance and
        completing its open transaction; call once, before the first begin_transaction().
        Waits up to `timeout` s (max.block.ms by default); a timed-out call may be repeated."""
        result = self._transaction_manager().initialize_transactions()
        self._sender.wakeup()
        result.wait(self._max_block if timeout is None else timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: the sends until commit or abort belong to it."""
        self._transaction_manager().begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping, group_metadata: Any,
                                    timeout: float | None = None) -> None:
        """Commit a consumer group's offsets as part of the transaction (visible only if it commits).

        `offsets` maps TopicPartition (or (topic, partition)) to the next offset to read, an
        int or an OffsetAndMetadata; `group_metadata` is the consumer's group_metadata()
        (or, as Java's deprecated overload, the group id)."""
        tm = self._transaction_manager()
        group_metadata = _group_metadata(group_metadata)
        result = tm.send_offsets_to_transaction(_txn_offsets(offsets), group_metadata)
        self._sender.wakeup()
        result.wait(self._max_block if timeout is None else timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: every record sent since begin_transaction becomes visible to
        read_committed consumers, with the offsets given to send_offsets_to_transaction.
        Raises the transaction's error if it cannot commit (then abort_transaction, or close
        if the error is fatal, such as ProducerFencedError)."""
        result = self._transaction_manager().begin_commit()
        self._sender.wakeup()
        result.wait(self._max_block if timeout is None else timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: unsent records fail with TransactionAbortedError, sent ones stay hidden from
        read_committed consumers, and the group offsets sent in this transaction are dropped."""
        result = self._transaction_manager().begin_abort()
        self._sender.wakeup()
        result.wait(self._max_block if timeout is None else timeout)

    # -- the rest of the API ---------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Make everything queued sendable now and wait until it is acknowledged or failed."""
        if threading.current_thread() is self._sender:
            raise IllegalStateError("KafkaProducer.flush() invocation inside a callback is not permitted because "
                                    "it may lead to deadlock.")
        self._accumulator.begin_flush()
        self._sender.wakeup()
        try:
            self._accumulator.await_flush_completion(timeout)
        finally:
            self._accumulator.end_flush()

    def partitions_for(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions (waits for metadata up to max.block.ms)."""
        cluster = self._metadata.cluster
        if topic not in cluster.topics:
            cluster = self._wait_on_metadata(topic, None, time.monotonic())
        return cluster.partitions_for_topic(topic)

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued and stop; after `timeout` seconds, fail what is left and stop.

        close(0) fails queued records at once. Called from a callback (the sender thread)
        it cannot wait for itself, so it always behaves as close(0) there, as in Java.
        """
        with self._close_lock:
            if self._closed and not self._sender.is_alive():
                return
            self._closed = True
        if threading.current_thread() is self._sender:
            if timeout is None or timeout > 0:
                log.warning("%sOverriding close timeout to 0 ms to prevent useless blocking wait from the producer "
                            "I/O thread.", self._log_prefix)
            self._sender.force_close()
            return
        if timeout is not None and timeout <= 0:
            self._sender.force_close()
        else:
            self._sender.initiate_close()
        self._sender.join(timeout)
        if self._sender.is_alive():
            self._sender.force_close()
            self._sender.join()
        self._interceptors.close()
        close = getattr(self._partitioner, "close", None)
        if callable(close):
            close()

    def _update_plain(self) -> None:
        """Whether send()'s fast path applies (again after a tracer attaches or detaches)."""
        self._plain = (self._key_passthrough and self._value_passthrough and not self._interceptors.items
                       and self._transactions is None and "_untraced" not in self.__dict__)

    def _trace_with(self, tracer: Any) -> None:
        """kafkalike-trace's hook (kafkalike/cli/trace.py, docs/journey.md): while a tracer is
        attached, the serializers, the partitioner and the accumulator's append are wrapped
        so each reports its step (`tracer.step(name, **info)`), and the sender reports the
        Produce request and its answer (`request_sent`, `response_received`). None detaches
        it and puts the originals back. Nothing in send() checks for a tracer: a producer
        that is not traced runs exactly the code it runs without this method."""
        saved = self.__dict__.pop("_untraced", None)
        if saved is not None:
            (self._key_serializer, self._value_serializer, self._key_passthrough, self._value_passthrough,
             self._partitioner) = saved
            self._accumulator.__dict__.pop("append", None)
        self._sender.tracer = tracer
        if tracer is None:
            self._update_plain()
            return
        self._untraced = (self._key_serializer, self._value_serializer, self._key_passthrough,
                          self._value_passthrough, self._partitioner)
        key_serializer, value_serializer = self._key_serializer, self._value_serializer
        sizes: dict[str, int] = {}

        def traced_key(topic: str, data: Any) -> Any:
            out = key_serializer(topic, data)
            sizes["key"] = -1 if out is None else len(out)
            return out

        def traced_value(topic: str, data: Any) -> Any:
            out = value_serializer(topic, data)
            tracer.step("serializer", key_bytes=sizes.pop("key", -1), value_bytes=-1 if out is None else len(out))
            return out

        self._key_serializer, self._value_serializer = traced_key, traced_value
        self._key_passthrough = self._value_passthrough = False
        self._partitioner = _TracedPartitioner(self._partitioner, tracer)
        append = self._accumulator.append

        def traced_append(tp, *args, **kwargs):
            future, full, new_batch = result = append(tp, *args, **kwargs)
            if future is not None:
                tracer.step("accumulator", partition=tp[1], batch="created" if new_batch else "joined", full=full)
            return result

        self._accumulator.append = traced_append
        self._update_plain()

    def _register_gauges(self, client: NetworkClient) -> None:
        m = self._metrics
        pool = self._accumulator.pool
        client.byte_sensors = self._sender.sensors.network
        m.gauge(m.name("buffer-total-bytes", PRODUCER, "The maximum amount of buffer memory the client can use "
                       "(whether or not it is currently used)."), lambda: pool.total)
        m.gauge(m.name("buffer-available-bytes", PRODUCER, "The total amount of buffer memory that is not being "
                       "used (either unallocated or in the free list)."), lambda: pool.available)
        m.gauge(m.name("waiting-threads", PRODUCER, "The number of user threads blocked waiting for buffer memory "
                       "to enqueue their records"), lambda: pool.waiters)
        m.gauge(m.name("requests-in-flight", PRODUCER, "The current number of in-flight requests awaiting a "
                       "response."), client.in_flight_count)

    def metrics(self) -> dict[MetricName, KafkaMetric]:
        """Java's metrics(): every metric by its MetricName (name, group, tags); read one with
        metric_value(). Names and groups are Java's (producer-metrics, producer-topic-metrics);
        see docs/client.md."""
        return self._metrics.metrics()


__all__ = ["KafkaProducer", "ProducerInterceptor", "ProducerRecord", "RecordMetadata", "FutureRecordMetadata"]
