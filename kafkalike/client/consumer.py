"""KafkaConsumer: the Java consumer's semantics with a Python face.

    consumer = KafkaConsumer({"bootstrap.servers": "localhost:9092", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("events", 0)])
    for record in consumer.poll(1.0):        # a list of ConsumerRecord, in partition order
        print(record.offset, record.key, record.value)
    consumer.close()

poll() returns a plain list of ConsumerRecord (records of one partition stay in offset
order), like confluent-kafka's consume(): the common case is a loop over records, and
per-partition grouping is one `itertools.groupby` away. Timeouts are seconds (floats),
as everywhere in Python. The consumer is used from one thread; wakeup() is the one call
another thread may make, and makes the blocking call in progress (or the next one)
raise WakeupError.

All network work happens inside the user's calls (poll, position, offsets lookups):
ConsumerNetworkClient queues requests, and whoever polls sends them.
"""
from __future__ import annotations

import functools
import itertools
import logging
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from kafkalike.client.assignors import resolve_assignors
from kafkalike.client.config import consumer_config
from kafkalike.client.coordinator import ConsumerCoordinator, ConsumerRebalanceListener, OffsetAndMetadata
from kafkalike.client.connection import parse_bootstrap_servers
from kafkalike.client.deserializers import resolve_deserializer
from kafkalike.client.errors import (
    ConcurrentModificationError,
    ConfigError,
    IllegalStateError,
    InvalidGroupIdError,
    KafkaTimeoutError,
    NetworkError,
    UnsupportedFeatureError,
    WakeupError,
)
from kafkalike.client.fetcher import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerRecord,
    Fetcher,
    SubscriptionState,
)
from kafkalike.client.metadata import Metadata, PartitionInfo, TopicPartition
from kafkalike.client.network import NetworkClient
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.schema import MessageData

log = logging.getLogger("kafkalike.client.consumer")

_client_ids = itertools.count(1)
_MAX_BLOCK = 0.5  # seconds one network poll may wait before the loop looks around again
_COORDINATOR_ID_BASE = 2**31 - 1  # Java: Integer.MAX_VALUE - coordinator id


class RequestFuture:
    """The answer to one request: `value` or `exception` once `done`."""

    __slots__ = ("done", "value", "exception", "_callbacks")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self.exception: Exception | None = None
        self._callbacks: list[Callable[[Any, Exception | None], None]] = []

    def complete(self, value: Any, exception: Exception | None) -> None:
        if self.done:
            return
        self.done, self.value, self.exception = True, value, exception
        for callback in self._callbacks:
            callback(value, exception)
        self._callbacks.clear()

    def add_callback(self, callback: Callable[[Any, Exception | None], None]) -> "RequestFuture":
        if self.done:
            callback(self.value, self.exception)
        else:
            self._callbacks.append(callback)
        return self


class ConsumerNetworkClient:
    """NetworkClient plus a queue of unsent requests, metadata refreshes and wakeups.

    send() may be called from any thread (the heartbeat thread will); poll() runs under a
    lock, so one thread at a time does network work.
    """

    def __init__(self, client: NetworkClient, metadata: Metadata, *, allow_auto_create: bool = True,
                 log_prefix: str = "") -> None:
        self.client = client
        self.metadata = metadata
        self.allow_auto_create = allow_auto_create
        self.log_prefix = log_prefix
        self.lock = threading.RLock()
        self._unsent: deque[tuple[int, MessageData, RequestFuture, float]] = deque()
        self._metadata_in_flight = False
        self._wakeup_requested = False
        self.all_topics = False  # a pattern subscription needs every topic's metadata

    @property
    def cluster(self):
        return self.metadata.cluster

    def send(self, node_id: int, request: MessageData) -> RequestFuture:
        future = RequestFuture()
        self._unsent.append((node_id, request, future, time.monotonic() + self.client.request_timeout))
        self.client.wakeup()
        return future

    def coordinator_connection(self, node_id: int) -> int:
        """The id under which requests reach the group coordinator `node_id` on a connection of their own."""
        alias = _COORDINATOR_ID_BASE - node_id
        self.client.add_alias(alias, node_id)
        return alias

    def wakeup(self) -> None:
        self._wakeup_requested = True
        self.client.wakeup()

    def poll(self, timeout: float, *, wakeable: bool = True) -> None:
        """One round of network work, waiting at most `timeout` seconds for something to happen."""
        with self.lock:
            if wakeable:
                self._maybe_raise_wakeup()
            now = time.monotonic()
            metadata_wait = self._maybe_update_metadata(now)
            self._send_unsent(now)
            self.client.poll(max(0.0, min(timeout, metadata_wait, _MAX_BLOCK)) if not self._unsent_ready() else 0)
            self._send_unsent(time.monotonic())
            if wakeable:
                self._maybe_raise_wakeup()

    def poll_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Poll until `done()` or `timeout` seconds pass; returns done()."""
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return done()
            self.poll(left)
        return True

    def _maybe_raise_wakeup(self) -> None:
        if self._wakeup_requested:
            self._wakeup_requested = False
            raise WakeupError()

    def _unsent_ready(self) -> bool:
        return any(self.client.is_ready(node) for node, _, _, _ in list(self._unsent))

    def _send_unsent(self, now: float) -> None:
        client = self.client
        waiting: deque = deque()
        while self._unsent:
            node, request, future, deadline = self._unsent.popleft()
            if client.ready(node, now):
                try:
                    client.send(node, request, future.complete, now)
                except (NetworkError, UnsupportedFeatureError) as error:
                    future.complete(None, error)
            elif not client.knows(node) or client.connection_delay(node, now) > 0 \
                    and client.connection_delay(node, now) != float("inf"):
                future.complete(None, NetworkError(f"Connection to node {node} is not available"))
            elif now > deadline:
                future.complete(None, KafkaTimeoutError(f"Request to node {node} timed out before it was sent"))
            else:
                waiting.append((node, request, future, deadline))
        self._unsent.extendleft(reversed(waiting))

    def _maybe_update_metadata(self, now: float) -> float:
        if self._metadata_in_flight:
            return self.client.request_timeout
        wait = self.metadata.time_to_next_update(now)
        if wait > 0:
            return wait
        node = self.client.least_loaded_node(now)
        if node is None:
            return self.client.reconnect_backoff
        if not self.client.ready(node, now):
            return self.client.reconnect_backoff if self.client.connection_delay(node, now) else _MAX_BLOCK
        topics = self.metadata.topics(now)
        version = self.client.version_for(node, MetadataRequest.API_KEY)
        if version < 1 and not topics:
            return _MAX_BLOCK
        request = MetadataRequest(
            topics=None if self.all_topics else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self.allow_auto_create)
        self._metadata_in_flight = True
        self.metadata.attempted(now)
        self.client.send(node, request, self._handle_metadata, now, version=version)
        return self.client.request_timeout

    def _handle_metadata(self, response, error: Exception | None) -> None:
        self._metadata_in_flight = False
        now = time.monotonic()
        if error is not None or response is None:
            self.metadata.failed(now)
            return
        errors = self.metadata.update(response, now)
        if errors:
            log.warning("%sError while fetching metadata: {%s}", self.log_prefix,
                        ", ".join(f"{t}={c.name}" for t, c in errors.items()))
            if any(c in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                   for c in errors.values()):
                self.metadata.request_update()

    def await_metadata(self, timeout: float) -> None:
        version = self.metadata.request_update()
        if not self.poll_until(lambda: self.metadata.version > version, timeout):
            raise KafkaTimeoutError(f"Failed to update metadata after {int(timeout * 1000)} ms.")

    def close(self) -> None:
        with self.lock:
            while self._unsent:
                self._unsent.popleft()[2].complete(None, NetworkError("The consumer was closed"))
            self.client.close()
            self.metadata.close()


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


def _locked(method):
    """One user thread at a time, as Java's acquire(): a second thread gets
    ConcurrentModificationError rather than waiting (only wakeup() is for other threads).
    The call holds the network lock throughout, so responses the heartbeat thread might
    otherwise handle (fetches, commits) never race the user's own changes."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        me = threading.get_ident()
        with self._owner_lock:
            if self._owner not in (None, me):
                raise ConcurrentModificationError(
                    f"KafkaConsumer is not safe for multi-threaded access. currentThread(name: "
                    f"{threading.current_thread().name}, id: {me}) otherThread(id: {self._owner})")
            self._owner = me
            self._owner_depth += 1
        try:
            with self._net.lock:
                return method(self, *args, **kwargs)
        finally:
            with self._owner_lock:
                self._owner_depth -= 1
                if not self._owner_depth:
                    self._owner = None
    return wrapper


def _offsets(offsets: Mapping | None) -> dict[TopicPartition, OffsetAndMetadata] | None:
    if offsets is None:
        return None
    return {TopicPartition(*tp): om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om))
            for tp, om in offsets.items()}


def _topic_partitions(partitions: Iterable) -> list[TopicPartition]:
    out = []
    for tp in partitions:
        topic, partition = tp[0], tp[1]
        if not isinstance(topic, str) or not topic.strip():
            raise ValueError("Topic partitions to assign to cannot have null or empty topic")
        out.append(TopicPartition(topic, int(partition)))
    return out


class KafkaConsumer:
    """A consumer for one thread; see the module docstring. Configs use Kafka's dotted names."""

    def __init__(self, config: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        merged = dict(config or {})
        merged.update({k.replace("_", "."): v for k, v in overrides.items()})
        self._owner_lock = threading.Lock()
        self._owner: int | None = None      # the thread inside a consumer call, if any
        self._owner_depth = 0
        self.config = cfg = consumer_config(merged)
        self.client_id = cfg["client.id"] or f"consumer-{cfg['group.id'] or ''}-{next(_client_ids)}".replace(
            "--", "-")
        self._log_prefix = f"[Consumer clientId={self.client_id}, groupId={cfg['group.id'] or ''}] "
        servers = cfg["bootstrap.servers"]
        try:
            addresses = parse_bootstrap_servers(",".join(servers) if isinstance(servers, list) else servers)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        self._metadata = Metadata(addresses, retry_backoff_ms=cfg["retry.backoff.ms"],
                                  max_age_ms=cfg["metadata.max.age.ms"], max_idle_ms=2**62)
        client = NetworkClient(
            self._metadata, client_id=self.client_id, max_in_flight=100,
            request_timeout_ms=cfg["request.timeout.ms"], reconnect_backoff_ms=cfg["reconnect.backoff.ms"],
            reconnect_backoff_max_ms=cfg["reconnect.backoff.max.ms"],
            connection_setup_timeout_ms=cfg["socket.connection.setup.timeout.ms"],
            send_buffer_bytes=cfg["send.buffer.bytes"], receive_buffer_bytes=cfg["receive.buffer.bytes"],
            log_prefix=self._log_prefix)
        self._net = ConsumerNetworkClient(client, self._metadata, allow_auto_create=cfg["allow.auto.create.topics"],
                                          log_prefix=self._log_prefix)
        self._subscriptions = SubscriptionState(cfg["auto.offset.reset"])
        self._fetcher = Fetcher(
            self._net, self._subscriptions,
            key_deserializer=resolve_deserializer(cfg["key.deserializer"], cfg, True),
            value_deserializer=resolve_deserializer(cfg["value.deserializer"], cfg, False),
            fetch_min_bytes=cfg["fetch.min.bytes"], fetch_max_wait_ms=cfg["fetch.max.wait.ms"],
            fetch_max_bytes=cfg["fetch.max.bytes"], max_partition_fetch_bytes=cfg["max.partition.fetch.bytes"],
            max_poll_records=cfg["max.poll.records"], isolation_level=cfg["isolation.level"],
            check_crcs=cfg["check.crcs"], retry_backoff_ms=cfg["retry.backoff.ms"], client_rack=cfg["client.rack"],
            log_prefix=self._log_prefix)
        self._default_timeout = cfg["default.api.timeout.ms"] / 1000
        self._coordinator: ConsumerCoordinator | None = None
        if cfg["group.id"] is not None:
            self._coordinator = ConsumerCoordinator(
                self._net, self._subscriptions, group_id=cfg["group.id"], group_instance_id=cfg["group.instance.id"],
                assignors=resolve_assignors(cfg["partition.assignment.strategy"]),
                session_timeout_ms=cfg["session.timeout.ms"], rebalance_timeout_ms=cfg["max.poll.interval.ms"],
                heartbeat_interval_ms=cfg["heartbeat.interval.ms"], enable_auto_commit=cfg["enable.auto.commit"],
                auto_commit_interval_ms=cfg["auto.commit.interval.ms"], retry_backoff_ms=cfg["retry.backoff.ms"],
                default_timeout_ms=cfg["default.api.timeout.ms"],
                exclude_internal_topics=cfg["exclude.internal.topics"],
                leave_on_close=cfg["internal.leave.group.on.close"], log_prefix=self._log_prefix)
        self._user_assigned = False
        self._closed = False
        self._closing = False

    def __enter__(self) -> "KafkaConsumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<KafkaConsumer client.id={self.client_id}{' closed' if self._closed else ''}>"

    def _ensure_open(self) -> None:
        if self._closed:
            raise IllegalStateError("This consumer has already been closed.")

    # -- assignment ----------------------------------------------------------------------

    def _group(self) -> ConsumerCoordinator:
        if self._coordinator is None:
            raise InvalidGroupIdError("To use the group management or offset commit APIs, you must provide a valid "
                                      "group.id in the consumer configuration.")
        return self._coordinator

    @_locked
    def subscribe(self, topics: "Iterable[str] | str | re.Pattern", listener: Any = None) -> None:
        """Join the group for these topics (a str is one topic), or for every topic a compiled
        re.Pattern matches in full; `listener` gets the rebalance callbacks."""
        self._ensure_open()
        coordinator = self._group()
        if self._user_assigned:
            raise IllegalStateError("Subscription to topics, partitions and pattern are mutually exclusive")
        if isinstance(topics, re.Pattern):
            coordinator.subscribe(None, topics, listener)
            return
        if isinstance(topics, str):
            topics = [topics]
        topics = list(topics)
        if any(not isinstance(t, str) or not t.strip() for t in topics):
            raise ValueError("Topic collection to subscribe to cannot contain null or empty topic")
        if not topics:
            self.unsubscribe()
            return
        coordinator.subscribe(topics, None, listener)

    def subscription(self) -> set[str]:
        return set(self._coordinator.topics) if self._coordinator is not None else set()

    @_locked
    def assign(self, partitions: Iterable) -> None:
        """Read exactly these partitions (no group management); an empty list unassigns all."""
        self._ensure_open()
        if self._coordinator is not None and self._coordinator.group_managed:
            raise IllegalStateError("Subscription to topics, partitions and pattern are mutually exclusive")
        tps = _topic_partitions(partitions)
        self._user_assigned = bool(tps)
        kept = set(tps)
        for tp in list(self._subscriptions.assignment):
            if tp not in kept:
                self._fetcher.clear_buffer(tp)
        self._subscriptions.assign(tps)
        now = time.monotonic()
        for topic in {tp.topic for tp in tps}:
            self._metadata.add_topic(topic, now)

    def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assignment)

    @_locked
    def unsubscribe(self) -> None:
        self._ensure_open()
        self._fetcher.clear_buffer()
        if self._coordinator is not None:
            self._coordinator.unsubscribe()
        self._subscriptions.assign([])
        self._user_assigned = False

    # -- reading ------------------------------------------------------------------------

    @_locked
    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records fetched since the last call, waiting up to `timeout` seconds for some."""
        self._ensure_open()
        group = self._coordinator
        if not self._subscriptions.assignment and not (group is not None and group.group_managed):
            raise IllegalStateError("Consumer is not subscribed to any topics or assigned any partitions")
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            self._net._maybe_raise_wakeup()
            if group is not None:
                group.poll(max(0.0, deadline - time.monotonic()))
                group.refresh_committed_offsets(self._default_timeout)
            self._fetcher.reset_positions()
            records = self._fetcher.fetched_records(max_records)
            if records:
                # Pipelining: the next fetches travel while the caller works on these.
                self._fetcher.send_fetches()
                self._net.poll(0, wakeable=False)
                return records
            self._fetcher.send_fetches()
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            self._net.poll(left)

    def wakeup(self) -> None:
        """Make the blocking call in progress, or the next one, raise WakeupError (any thread)."""
        self._net.wakeup()

    # -- positions -----------------------------------------------------------------------

    @_locked
    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record poll() returns for `partition` (looked up if unknown)."""
        self._ensure_open()
        tp = TopicPartition(*partition)
        state = self._subscriptions.state(tp)
        timeout = self._default_timeout if timeout is None else timeout

        def known() -> bool:
            if self._coordinator is not None:
                self._coordinator.refresh_committed_offsets(timeout)
            self._fetcher.reset_positions()
            return state.position is not None
        if not self._net.poll_until(known, timeout):
            raise KafkaTimeoutError(f"Timeout of {int(timeout * 1000)}ms expired before the position for "
                                    f"partition {tp} could be determined")
        return state.position

    @_locked
    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read `partition` from `offset` on the next poll()."""
        self._ensure_open()
        if offset < 0:
            raise ValueError("seek offset must not be a negative number")
        tp = TopicPartition(*partition)
        self._subscriptions.seek(tp, offset)
        self._fetcher.clear_buffer(tp)

    def seek_to_beginning(self, partitions: Iterable | None = None) -> None:
        self._seek_to(partitions, "earliest")

    def seek_to_end(self, partitions: Iterable | None = None) -> None:
        self._seek_to(partitions, "latest")

    @_locked
    def _seek_to(self, partitions: Iterable | None, strategy: str) -> None:
        self._ensure_open()
        tps = list(self._subscriptions.assignment) if partitions is None else _topic_partitions(partitions)
        for tp in tps:
            self._subscriptions.request_reset(tp, strategy)
            self._fetcher.clear_buffer(tp)

    @_locked
    def pause(self, partitions: Iterable) -> None:
        """Stop fetching these partitions until resume(); their positions stay."""
        for tp in _topic_partitions(partitions):
            self._subscriptions.state(tp).paused = True
            self._fetcher.clear_buffer(tp)

    @_locked
    def resume(self, partitions: Iterable) -> None:
        for tp in _topic_partitions(partitions):
            self._subscriptions.state(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, s in self._subscriptions.assignment.items() if s.paused}

    # -- offsets lookups -------------------------------------------------------------------

    @_locked
    def _list_offsets(self, timestamps: dict[TopicPartition, int], timeout: float | None):
        self._ensure_open()
        timeout = self._default_timeout if timeout is None else timeout
        now = time.monotonic()
        for tp in timestamps:
            self._metadata.add_topic(tp.topic, now)
        return self._fetcher.list_offsets(timestamps, timeout, lambda t, done: self._net.poll_until(done, t))

    def beginning_offsets(self, partitions: Iterable, timeout: float | None = None) -> dict[TopicPartition, int]:
        found = self._list_offsets({tp: EARLIEST_TIMESTAMP for tp in _topic_partitions(partitions)}, timeout)
        return {tp: value[0] for tp, value in found.items() if value is not None}

    def end_offsets(self, partitions: Iterable, timeout: float | None = None) -> dict[TopicPartition, int]:
        """Each partition's high watermark (the offset the next record written gets)."""
        found = self._list_offsets({tp: LATEST_TIMESTAMP for tp in _topic_partitions(partitions)}, timeout)
        return {tp: value[0] for tp, value in found.items() if value is not None}

    def offsets_for_times(self, timestamps: Mapping, timeout: float | None = None
                          ) -> dict[TopicPartition, "tuple[int, int] | None"]:
        """For each partition, (offset, timestamp) of the first record at or after the time, or None."""
        wanted = {}
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"The target time for partition {tp} is {ts}. The target time cannot be negative.")
            wanted[TopicPartition(*tp)] = ts
        found = self._list_offsets(wanted, timeout)
        return {tp: found.get(tp) for tp in wanted}

    # -- metadata ----------------------------------------------------------------------------

    @_locked
    def partitions_for_topic(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        self._ensure_open()
        timeout = self._default_timeout if timeout is None else timeout
        self._metadata.add_topic(topic, time.monotonic())
        if topic not in self._metadata.cluster.topics:
            self._net.poll_until(lambda: topic in self._metadata.cluster.topics, timeout)
        return self._metadata.cluster.partitions_for_topic(topic)

    # -- offsets in the group ---------------------------------------------------------------

    @_locked
    def commit_sync(self, offsets: Mapping | None = None, timeout: float | None = None) -> None:
        """Commit `offsets` ({tp: offset or OffsetAndMetadata}), by default every position, and wait."""
        self._ensure_open()
        self._group().commit_sync(_offsets(offsets), self._default_timeout if timeout is None else timeout)

    @_locked
    def commit_async(self, offsets: Mapping | None = None,
                     callback: Callable[[dict, Exception | None], None] | None = None) -> None:
        """Commit without waiting; `callback(offsets, exception)` runs in a later poll() or commit."""
        self._ensure_open()
        self._group().commit_async(_offsets(offsets), callback)

    @_locked
    def committed(self, partitions: Iterable, timeout: float | None = None
                  ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offset per partition (None where nothing was committed)."""
        self._ensure_open()
        return self._group().committed(_topic_partitions(partitions),
                                       self._default_timeout if timeout is None else timeout)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """Java's groupMetadata(): the group, generation and member id this consumer has now."""
        self._ensure_open()
        group = self._group()
        with group.lock:
            return ConsumerGroupMetadata(group.group_id, group.generation, group.member_id, group.group_instance_id)

    # -- closing -----------------------------------------------------------------------------

    @_locked
    def close(self, timeout: float | None = None) -> None:
        """Commit (with enable.auto.commit), leave the group, and close the connections."""
        if self._closed or self._closing:
            return
        # Still open while the coordinator leaves: a rebalance listener may commit on
        # revoke during close(), as the Java client allows.
        self._closing = True
        try:
            if self._coordinator is not None:
                self._coordinator.close(30.0 if timeout is None else timeout)
        finally:
            self._closed = True
            self._net.close()


__all__ = ["ConsumerGroupMetadata", "ConsumerNetworkClient", "ConsumerRebalanceListener", "ConsumerRecord", "KafkaConsumer",
           "OffsetAndMetadata", "RequestFuture", "TopicPartition"]
