"""What the broker's hot paths count, in the shape Kafka 2.8 counts it.

Each owner module holds one of these objects and calls it in one line where Kafka marks
its meters: the replica manager on appends and fetch answers (Kafka's
ReplicaManager.appendToLocalLog / readFromLocalLog and BrokerTopicStats), the listener
when a response is written (RequestChannel's request metrics), the controller when an
event is handled (ControllerEventManager's per-state timers). A call is a few integer
additions on slotted objects; rates, percentiles and totals are worked out at scrape
time by `readings()`, or by Prometheus itself.

Error codes are plain ints here (this floor imports nothing of kafkalike); they are the
Kafka protocol's codes.
"""
from __future__ import annotations

import threading
from bisect import bisect_left
from collections import defaultdict
from typing import Callable, Iterable, Iterator, Mapping

from kafkalike.metrics.core import (
    LATENCY_BUCKETS_MS,
    Histogram,
    HistogramValue,
    Item,
    Kind,
    MetricName,
    Reading,
    SummaryValue,
    Table,
)

# -- BrokerTopicStats ----------------------------------------------------------------

_TOPIC_METERS = (
    # attribute,        Kafka's meter name
    ("messages_in", "MessagesInPerSec"),
    ("bytes_in", "BytesInPerSec"),
    ("bytes_out", "BytesOutPerSec"),
    ("bytes_rejected", "BytesRejectedPerSec"),
    ("total_produce", "TotalProduceRequestsPerSec"),
    ("total_fetch", "TotalFetchRequestsPerSec"),
    ("failed_produce", "FailedProduceRequestsPerSec"),
    ("failed_fetch", "FailedFetchRequestsPerSec"),
)

# Errors Kafka 2.8's appendToLocalLog answers without marking FailedProduceRequestsPerSec
# (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE,
# RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE, KAFKA_STORAGE_ERROR): the client's or the
# cluster's state, not a failure of this broker. Every other error marks it.
PRODUCE_ERRORS_NOT_FAILURES = frozenset({3, 6, 10, 18, 2, 56})
# Oversized records are also counted in BytesRejectedPerSec.
PRODUCE_ERRORS_REJECTING_BYTES = frozenset({10, 18})
# readFromLocalLog's expected errors (OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION,
# NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH,
# UNKNOWN_LEADER_EPOCH); others mark FailedFetchRequestsPerSec.
FETCH_ERRORS_NOT_FAILURES = frozenset({0, 1, 3, 6, 9, 56, 74, 75})

_BTM = "BrokerTopicMetrics"
_TOPIC_METER_NAMES = tuple(MetricName("kafka.server", _BTM, meter) for _, meter in _TOPIC_METERS)


class TopicMeters:
    """One topic's BrokerTopicMetrics meters (counts only)."""

    __slots__ = tuple(attr for attr, _ in _TOPIC_METERS)

    def __init__(self) -> None:
        for attr, _ in _TOPIC_METERS:
            setattr(self, attr, 0)

    def add(self, other: "TopicMeters") -> None:
        for attr, _ in _TOPIC_METERS:
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))


class ReplicaStats:
    """The replica manager's counts: BrokerTopicStats per topic and in total, the
    replication byte meters, and the ReplicaManager's ISR change meters.

    Only per-topic counts are kept on the hot path; the all-topics meters are their sum
    at scrape time plus what topics deleted since (`forget_topic`) had counted, so a
    total never goes down and an append pays for one topic, not two.
    """

    def __init__(self) -> None:
        self.topics: dict[str, TopicMeters] = {}
        self.retired = TopicMeters()          # counts of topics forgotten since start
        self.replication_bytes_in = 0
        self.replication_bytes_out = 0
        self.isr_expands = 0
        self.isr_shrinks = 0
        self.failed_isr_updates = 0

    def topic(self, topic: str) -> TopicMeters:
        meters = self.topics.get(topic)
        if meters is None:
            meters = self.topics[topic] = TopicMeters()
        return meters

    # -- marks (hot path) ---------------------------------------------------------------

    def appended(self, topic: str, records: int, size: int) -> None:
        """A produce to one partition succeeded: `records` records in `size` bytes."""
        meters = self.topics.get(topic) or self.topic(topic)
        meters.total_produce += 1
        meters.messages_in += records
        meters.bytes_in += size

    def append_failed(self, topic: str, error_code: int, size: int) -> None:
        """A produce to one partition failed with `error_code`."""
        meters = self.topics.get(topic) or self.topic(topic)
        meters.total_produce += 1
        if error_code not in PRODUCE_ERRORS_NOT_FAILURES:
            meters.failed_produce += 1
        elif error_code in PRODUCE_ERRORS_REJECTING_BYTES:
            meters.bytes_rejected += size

    def fetched(self, replica_id: int, results: Mapping) -> None:
        """A fetch answer: results maps (topic, partition) to something with `error`
        and `records` (anything with a length, or None). Consumers' bytes are BytesOut,
        followers' ReplicationBytesOut, as Kafka's updateBytesOut splits them."""
        follower = replica_id >= 0
        for tp, result in results.items():
            meters = self.topics.get(tp[0]) or self.topic(tp[0])
            meters.total_fetch += 1
            if result.error not in FETCH_ERRORS_NOT_FAILURES:
                meters.failed_fetch += 1
            records = result.records
            if records:
                if follower:
                    self.replication_bytes_out += len(records)
                else:
                    meters.bytes_out += len(records)

    def replicated_in(self, size: int) -> None:
        """A follower appended `size` bytes it fetched from its leader."""
        self.replication_bytes_in += size

    def isr_changed(self, old_size: int, new_size: int) -> None:
        """The controller accepted an ISR change this leader proposed."""
        if new_size > old_size:
            self.isr_expands += 1
        elif new_size < old_size:
            self.isr_shrinks += 1

    def isr_update_failed(self) -> None:
        """The controller refused an ISR change this leader proposed (Kafka's
        FailedIsrUpdatesPerSec, marked when AlterIsr answers a partition with an error)."""
        self.failed_isr_updates += 1

    def forget_topic(self, topic: str) -> None:
        """The topic's last replica here was deleted: drop its series (Kafka removes
        them), keeping its counts in the all-topics totals."""
        meters = self.topics.pop(topic, None)
        if meters is not None:
            self.retired.add(meters)

    # -- scrape ---------------------------------------------------------------------------

    def readings(self) -> Iterator[Item]:
        topics = list(self.topics.items())
        total = TopicMeters()
        total.add(self.retired)
        for _topic, meters in topics:
            total.add(meters)
        for attr, meter in _TOPIC_METERS:
            yield Reading(MetricName("kafka.server", _BTM, meter), Kind.METER, getattr(total, attr))
        yield Reading(MetricName("kafka.server", _BTM, "ReplicationBytesInPerSec"), Kind.METER,
                      self.replication_bytes_in)
        yield Reading(MetricName("kafka.server", _BTM, "ReplicationBytesOutPerSec"), Kind.METER,
                      self.replication_bytes_out)
        yield Table(_TOPIC_METER_NAMES, Kind.METER, ("topic",),
                    [(topic, *(getattr(meters, attr) for attr, _ in _TOPIC_METERS)) for topic, meters in topics])
        for meter, count in (("IsrExpandsPerSec", self.isr_expands), ("IsrShrinksPerSec", self.isr_shrinks),
                             ("FailedIsrUpdatesPerSec", self.failed_isr_updates)):
            yield Reading(MetricName("kafka.server", "ReplicaManager", meter), Kind.METER, count)


# -- RequestMetrics ------------------------------------------------------------------

_MAX_VERSION = 64
FETCH_API_KEY = 1
# TotalTimeMs's bucket bounds in seconds, so recording needs no unit conversion.
_BOUNDS_S = tuple(ms / 1000.0 for ms in LATENCY_BUCKETS_MS)


class ApiRequestMetrics:
    """One request name's RequestMetrics: RequestsPerSec per version, TotalTimeMs as a
    histogram, and the parts of the total (queue, local, remote, send) as sums. Kept in
    seconds as the listener's clock gives them; milliseconds at scrape time."""

    __slots__ = ("requests", "buckets", "total_s", "queue_s", "local_s", "remote_s", "send_s", "errors")

    def __init__(self) -> None:
        self.requests = [0] * _MAX_VERSION
        self.buckets = [0] * (len(_BOUNDS_S) + 1)
        self.total_s = self.queue_s = self.local_s = self.remote_s = self.send_s = 0.0
        self.errors: defaultdict[int, int] = defaultdict(int)    # error code -> count (ErrorsPerSec)

    def observe(self, version: int, received: float, started: float, handled: float, ready: float,
                sent: float) -> None:
        total = sent - received
        self.requests[version] += 1
        self.buckets[bisect_left(_BOUNDS_S, total)] += 1
        self.total_s += total
        self.queue_s += started - received
        self.local_s += handled - started
        self.remote_s += ready - handled
        self.send_s += sent - ready

    @property
    def count(self) -> int:
        return sum(self.buckets)

    def total_ms(self) -> HistogramValue:
        return HistogramValue(LATENCY_BUCKETS_MS, tuple(self.buckets), self.total_s * 1000.0)


class RequestMetrics:
    """kafka.network:type=RequestMetrics for every API the listener answers.

    Times (seconds from a monotonic clock) are taken by the listener: when the frame
    arrived, when its handling started, when the handler returned, when the response
    was ready, when it was written. Fetches are counted under Fetch and under
    FetchConsumer or FetchFollower, as Kafka's request metrics split them.

    ErrorsPerSec counts the error codes of each response (NONE included, as Kafka's
    errorCounts() does), under the request's name only (a fetch under Fetch). What a
    response's codes are is the protocol's knowledge, not this floor's: the owner gives
    `error_counter`, which makes for a response class a function adding its codes to a
    defaultdict(int); without one, no errors are counted. A request answered with nothing (acks=0)
    counts none, as in Kafka.
    """

    def __init__(self, api_names: Mapping[int, str] | None = None, error_names: Mapping[int, str] | None = None,
                 error_counter: Callable[[type], Callable[[object, dict], None]] | None = None):
        self.api_names = dict(api_names or {})
        self.error_names = dict(error_names or {})
        self._error_counter = error_counter
        self._counters: dict[type, Callable[[object, dict], None]] = {}
        self._by_key: dict[int, ApiRequestMetrics] = {}
        self.fetch_consumer = ApiRequestMetrics()
        self.fetch_follower = ApiRequestMetrics()

    def record(self, api_key: int, version: int, follower: bool, received: float, started: float,
               handled: float, ready: float, sent: float, response: object = None) -> None:
        """One answered request (observe() inlined: this runs once per request)."""
        metrics = self._by_key.get(api_key)
        if metrics is None:
            metrics = self._by_key[api_key] = ApiRequestMetrics()
        total = sent - received
        try:
            metrics.requests[version] += 1
        except IndexError:          # no API has versions this high; kept, not lost
            metrics.requests[-1] += 1
        metrics.buckets[bisect_left(_BOUNDS_S, total)] += 1
        metrics.total_s += total
        metrics.queue_s += started - received
        metrics.local_s += handled - started
        metrics.remote_s += ready - handled
        metrics.send_s += sent - ready
        if response is not None:
            count = self._counters.get(type(response))
            if count is None:
                count = self._counter_of(type(response))
            count(response, metrics.errors)
        if api_key == FETCH_API_KEY:
            (self.fetch_follower if follower else self.fetch_consumer).observe(
                min(version, _MAX_VERSION - 1), received, started, handled, ready, sent)

    def _counter_of(self, response_class: type) -> Callable[[object, dict], None]:
        made = self._error_counter
        count = made(response_class) if made is not None else _count_nothing
        self._counters[response_class] = count
        return count

    def name_of(self, api_key: int) -> str:
        return self.api_names.get(api_key, f"ApiKey{api_key}")

    def error_name(self, code: int) -> str:
        return self.error_names.get(code, f"Error{code}")

    def _named(self) -> Iterable[tuple[str, ApiRequestMetrics]]:
        for key, metrics in sorted(self._by_key.items()):
            yield self.name_of(key), metrics
            if key == FETCH_API_KEY:
                yield "FetchConsumer", self.fetch_consumer
                yield "FetchFollower", self.fetch_follower

    def readings(self) -> Iterator[Reading]:
        named = list(self._named())
        for request, metrics in named:
            for version, count in enumerate(metrics.requests):
                if count:
                    yield Reading(MetricName("kafka.network", "RequestMetrics", "RequestsPerSec",
                                             (("request", request), ("version", str(version)))), Kind.METER, count)
        for key, metrics in sorted(self._by_key.items()):
            request = self.name_of(key)
            for code, count in sorted(metrics.errors.items()):
                yield Reading(MetricName("kafka.network", "RequestMetrics", "ErrorsPerSec",
                                         (("request", request), ("error", self.error_name(code)))), Kind.METER, count)
        for request, metrics in named:
            yield Reading(MetricName("kafka.network", "RequestMetrics", "TotalTimeMs", (("request", request),)),
                          Kind.HISTOGRAM, metrics.total_ms())
        for part, attr in (("RequestQueueTimeMs", "queue_s"), ("LocalTimeMs", "local_s"),
                           ("RemoteTimeMs", "remote_s"), ("ResponseSendTimeMs", "send_s")):
            for request, metrics in named:
                yield Reading(MetricName("kafka.network", "RequestMetrics", part, (("request", request),)),
                              Kind.SUMMARY, SummaryValue(metrics.count, getattr(metrics, attr) * 1000.0))


def _count_nothing(_response: object, _counts: dict) -> None:
    return None


# -- ControllerStats -----------------------------------------------------------------

# The controller's event names (Kafka's ControllerEvent classes) -> the ControllerState
# whose rate-and-time timer Kafka's ControllerEventManager updates for them. A broker
# change is where leaders are elected, hence its timer's name.
CONTROLLER_EVENT_TIMERS: dict[str, str] = {
    "Startup": "ControllerChangeRateAndTimeMs",
    "ControllerChange": "ControllerChangeRateAndTimeMs",
    "Reelect": "ControllerChangeRateAndTimeMs",
    "Expire": "ControllerChangeRateAndTimeMs",
    "BrokerChange": "LeaderElectionRateAndTimeMs",
    "BrokerModifications": "LeaderElectionRateAndTimeMs",
    "TopicChange": "TopicChangeRateAndTimeMs",
    "PartitionModifications": "TopicChangeRateAndTimeMs",
    "TopicDeletion": "TopicDeletionRateAndTimeMs",
    "TopicDeletionStopReplicaResponseReceived": "TopicDeletionRateAndTimeMs",
    "ApiPartitionReassignment": "PartitionReassignmentRateAndTimeMs",
    "ZkPartitionReassignment": "PartitionReassignmentRateAndTimeMs",
    "PartitionReassignmentIsrChange": "PartitionReassignmentRateAndTimeMs",
    "ListPartitionReassignments": "ListPartitionReassignmentRateAndTimeMs",
    "AutoPreferredReplicaLeaderElection": "AutoLeaderBalanceRateAndTimeMs",
    "ReplicaLeaderElection": "ManualLeaderBalanceRateAndTimeMs",
    "PreferredReplicaLeaderElection": "ManualLeaderBalanceRateAndTimeMs",
    "ControlledShutdown": "ControlledShutdownRateAndTimeMs",
    "AlterIsrReceived": "IsrChangeRateAndTimeMs",
    "IsrChangeNotification": "IsrChangeRateAndTimeMs",
    "LeaderAndIsrResponseReceived": "LeaderAndIsrResponseReceivedRateAndTimeMs",
    "UpdateMetadataResponseReceived": "UpdateMetadataResponseReceivedRateAndTimeMs",
    "UpdateFeatures": "UpdateFeaturesRateAndTimeMs",
    "TopicUncleanLeaderElectionEnable": "TopicUncleanLeaderElectionEnableRateAndTimeMs",
    "UncleanLeaderElectionEnable": "UncleanLeaderElectionEnableRateAndTimeMs",
}


class ControllerStats:
    """kafka.controller:type=ControllerStats: a timer per controller state, and the
    unclean leader election meter. Every broker has them (zero until it is controller),
    as in Kafka, so a dashboard sums them across brokers."""

    def __init__(self) -> None:
        self.timers: dict[str, Histogram] = {name: Histogram(LATENCY_BUCKETS_MS)
                                             for name in sorted(set(CONTROLLER_EVENT_TIMERS.values()))}
        self.unclean_elections = 0

    def event_handled(self, event: str, seconds: float) -> None:
        """The controller finished handling one event of its queue."""
        timer = self.timers.get(CONTROLLER_EVENT_TIMERS.get(event, ""))
        if timer is not None:
            timer.observe(seconds * 1000.0)

    def unclean_election(self, count: int = 1) -> None:
        self.unclean_elections += count

    def readings(self) -> Iterator[Reading]:
        for name, timer in self.timers.items():
            value: HistogramValue = timer.value()
            yield Reading(MetricName("kafka.controller", "ControllerStats", name), Kind.HISTOGRAM, value)
        yield Reading(MetricName("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec"),
                      Kind.METER, self.unclean_elections)


# -- LogFlushStats --------------------------------------------------------------------


class LogFlushStats:
    """kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs: Kafka times each segment's
    flush (the log and its indexes fsynced) with this one timer, shared by every log of the
    process. Flushes run on worker threads, so observations take a lock; a flush is an
    fsync, next to which the lock costs nothing."""

    NAME = MetricName("kafka.log", "LogFlushStats", "LogFlushRateAndTimeMs")

    def __init__(self) -> None:
        self.timer = Histogram(LATENCY_BUCKETS_MS)
        self._lock = threading.Lock()

    def flushed(self, seconds: float) -> None:
        with self._lock:
            self.timer.observe(seconds * 1000.0)

    def readings(self) -> Iterator[Reading]:
        with self._lock:
            value = self.timer.value()
        yield Reading(self.NAME, Kind.HISTOGRAM, value)


# One per process, as Kafka's LogFlushStats object is one per JVM: storage times its flushes here.
LOG_FLUSH_STATS = LogFlushStats()
