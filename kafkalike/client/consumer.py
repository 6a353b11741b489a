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
ConsumerNetworkClient (consumer_network.py) queues requests, and whoever polls sends them.
"""
from __future__ import annotations

import functools
import itertools
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from kafkalike.client.security import ClientSecurity
from kafkalike.client.assignors import resolve_assignors
from kafkalike.client.config import consumer_config
from kafkalike.client.consumer_network import ConsumerNetworkClient, RequestFuture
from kafkalike.client.coordinator import ConsumerCoordinator, ConsumerRebalanceListener, OffsetAndMetadata
from kafkalike.client.connection import parse_bootstrap_servers
from kafkalike.client.deserializers import resolve_deserializer
from kafkalike.client.errors import (
    ConcurrentModificationError,
    ConfigError,
    IllegalStateError,
    InvalidGroupIdError,
    KafkaTimeoutError,
)
from kafkalike.client.metrics import (
    CONSUMER,
    CoordinatorMetrics,
    FetchMetrics,
    KafkaMetric,
    MetricName,
    Metrics,
    network_sensors,
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

log = logging.getLogger("kafkalike.client.consumer")

_client_ids = itertools.count(1)


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
        # KafkaConsumer's default: "consumer-" + (groupId + "-" when there is one) + sequence.
        group_part = f"{cfg['group.id']}-" if cfg["group.id"] else ""
        self.client_id = cfg["client.id"] or f"consumer-{group_part}{next(_client_ids)}"
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
            security=ClientSecurity.from_config(cfg),
            log_prefix=self._log_prefix)
        self._net = ConsumerNetworkClient(client, self._metadata, allow_auto_create=cfg["allow.auto.create.topics"],
                                          log_prefix=self._log_prefix)
        self._subscriptions = SubscriptionState(cfg["auto.offset.reset"])
        self._metrics = Metrics(self.client_id, window_ms=cfg["metrics.sample.window.ms"],
                                samples=cfg["metrics.num.samples"])
        client.byte_sensors = network_sensors(self._metrics, CONSUMER)
        self._fetcher = Fetcher(
            self._net, self._subscriptions,
            key_deserializer=resolve_deserializer(cfg["key.deserializer"], cfg, True),
            value_deserializer=resolve_deserializer(cfg["value.deserializer"], cfg, False),
            fetch_min_bytes=cfg["fetch.min.bytes"], fetch_max_wait_ms=cfg["fetch.max.wait.ms"],
            fetch_max_bytes=cfg["fetch.max.bytes"], max_partition_fetch_bytes=cfg["max.partition.fetch.bytes"],
            max_poll_records=cfg["max.poll.records"], isolation_level=cfg["isolation.level"],
            check_crcs=cfg["check.crcs"], retry_backoff_ms=cfg["retry.backoff.ms"], client_rack=cfg["client.rack"],
            log_prefix=self._log_prefix, sensors=FetchMetrics(self._metrics))
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
                leave_on_close=cfg["internal.leave.group.on.close"], log_prefix=self._log_prefix,
                sensors=CoordinatorMetrics(self._metrics, lambda: len(self._subscriptions.assignment)))
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

    @_locked
    def list_topics(self, timeout: float | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic of the cluster, internal ones included, with its partitions (Java's
        listTopics): one Metadata request for all topics, which never creates a topic, where
        partitions_for_topic would ask for the one topic and may have it auto-created."""
        self._ensure_open()
        timeout = self._default_timeout if timeout is None else timeout
        asked_all = self._net.all_topics
        self._net.all_topics = True
        try:
            version = self._metadata.request_update()
            if not self._net.poll_until(lambda: self._metadata.version > version, timeout):
                raise KafkaTimeoutError("Timeout expired while fetching topic metadata")
        finally:
            self._net.all_topics = asked_all
        cluster = self._metadata.cluster
        return {topic: cluster.partitions_for_topic(topic) for topic in sorted(cluster.topics)}

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

    def metrics(self) -> dict[MetricName, KafkaMetric]:
        """Java's metrics(): every metric by its MetricName (name, group, tags); read one with
        metric_value(). Groups are Java's: consumer-fetch-manager-metrics (with per-topic and
        per-partition lag), consumer-coordinator-metrics, consumer-metrics; see docs/client.md.
        A partition's lag metrics go when it is no longer assigned, as in Java."""
        self._fetcher.sensors.keep_partitions(self._subscriptions.assignment)
        return self._metrics.metrics()

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
