"""The Java clients' metrics: sensors with windowed stats, read as `metrics()` returns them.

Java's producer and consumer keep their metrics in org.apache.kafka.common.metrics: a
*sensor* records a value into one or more *stats* (Avg, Max, Rate, a cumulative Total
or Count, a last Value), each published as a KafkaMetric under a MetricName of (name,
group, description, tags), such as ("record-send-rate", "producer-metrics",
{"client-id": "producer-1"}). `producer.metrics()` returns {MetricName: KafkaMetric}
and `metric.metric_value()` reads it now. Here the same, under the same names, groups,
tags and windowing (metrics.sample.window.ms, metrics.num.samples):

- the windowed stats keep `metrics.num.samples` samples of `metrics.sample.window.ms`
  each; a reading combines the samples not older than their number times the window,
  as Java's SampledStat does, so an Avg or Max forgets what is older than about a
  minute; a Rate is the windowed total over the elapsed window, at least
  (samples - 1) windows long (Java's Rate.windowSize), so a rate is understated for
  the first window after a burst, exactly as Java's;
- a sensor records once per batch, per request or per poll, never per record on a
  user's send(): the producer's counts are taken on its sender thread as batches go
  out and come back (Java's SenderMetrics), the consumer's when poll() hands records
  over (Java's FetchManagerMetrics);
- gauges (buffer-available-bytes, requests-in-flight, assigned-partitions...) are
  callbacks read when asked.

kafkalike/metrics' kinds (a plain count or sum that Prometheus turns into rates) fit a
scraped broker, not these: a client has no scraper, and Java's windowed avg/max/rate
are what a client user reads, so the stats here are windowed. Recording happens on
one thread (the sender, or the consumer's polling thread); a reader on another thread
sees a value at most one record stale, which Java's locks would not make more useful.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

_monotonic = time.monotonic


@dataclass(frozen=True)
class MetricName:
    """Java's MetricName: equal (and hashed) by name, group and tags; the description is
    documentation only, as in Java."""

    name: str
    group: str
    description: str = field(default="", compare=False, hash=False)
    tags: tuple[tuple[str, str], ...] = ()

    @property
    def tags_dict(self) -> dict[str, str]:
        return dict(self.tags)

    def __str__(self) -> str:
        tags = ", ".join(f"{k}={v}" for k, v in self.tags)
        return f"MetricName [name={self.name}, group={self.group}, description={self.description}, tags={{{tags}}}]"


class KafkaMetric:
    """One published metric: `metric_name` and `metric_value()` (Java's metricName(),
    metricValue()); a float, NaN where Java's stat has nothing to report (an average
    of no values)."""

    __slots__ = ("metric_name", "_read")

    def __init__(self, metric_name: MetricName, read: Callable[[], float]) -> None:
        self.metric_name = metric_name
        self._read = read

    def metric_value(self) -> float:
        return float(self._read())

    def __repr__(self) -> str:
        return f"KafkaMetric({self.metric_name.group}:{self.metric_name.name}={self.metric_value()})"


class Sensor:
    """Records values into `samples` windows of `window` seconds (Java's SampledStat) and
    into running totals; every stat attached to it (avg, max, min, rate, total, count,
    last value) is a view computed when read.

    Java gives each stat its own samples; they all share one window length and start
    together here, so one ring serves them all and `record()` is one call: a clock read
    (unless `now` is given), a window check and a handful of additions and comparisons.
    """

    __slots__ = ("name", "window", "samples", "_starts", "_sums", "_counts", "_maxes", "_mins", "_current",
                 "total", "count", "last")

    def __init__(self, name: str, window: float = 30.0, samples: int = 2) -> None:
        self.name = name
        self.window = window
        self.samples = samples
        self._starts = [_monotonic()] + [-math.inf] * (samples - 1)
        self._sums = [0.0] * samples
        self._counts = [0] * samples
        self._maxes = [-math.inf] * samples
        self._mins = [math.inf] * samples
        self._current = 0
        self.total = 0.0       # CumulativeSum
        self.count = 0         # CumulativeCount
        self.last = math.nan   # Value

    def record(self, value: float = 1.0, now: float | None = None) -> None:
        if now is None:
            now = _monotonic()
        i = self._current
        if now - self._starts[i] >= self.window:
            i = self._roll(now)
        self._sums[i] += value
        self._counts[i] += 1
        if value > self._maxes[i]:
            self._maxes[i] = value
        if value < self._mins[i]:
            self._mins[i] = value
        self.total += value
        self.count += 1
        self.last = value

    def _roll(self, now: float) -> int:
        i = (self._current + 1) % self.samples
        self._starts[i] = now
        self._sums[i] = 0.0
        self._counts[i] = 0
        self._maxes[i] = -math.inf
        self._mins[i] = math.inf
        self._current = i
        return i

    def _live(self, now: float) -> list[int]:
        """Samples recent enough to count (Java's purgeObsoleteSamples)."""
        expire = self.window * self.samples
        return [i for i in range(self.samples) if now - self._starts[i] < expire]

    # -- the stats, read --------------------------------------------------------------

    def avg(self) -> float:
        live = self._live(_monotonic())
        count = sum(self._counts[i] for i in live)
        return sum(self._sums[i] for i in live) / count if count else math.nan

    def max(self) -> float:
        values = [self._maxes[i] for i in self._live(_monotonic()) if self._counts[i]]
        return max(values) if values else math.nan

    def min(self) -> float:
        values = [self._mins[i] for i in self._live(_monotonic()) if self._counts[i]]
        return min(values) if values else math.nan

    def rate(self, counting: bool = False) -> float:
        """Java's Rate: the windowed sum (or count) over the elapsed window, per second; the
        window is at least (samples - 1) full windows long (Rate.windowSize)."""
        now = _monotonic()
        live = self._live(now)
        total = sum((self._counts if counting else self._sums)[i] for i in live)
        elapsed = now - (min(self._starts[i] for i in live) if live else now)
        full = int(elapsed / self.window)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window
        return total / elapsed if elapsed > 0 else 0.0


_STATS: dict[str, Callable[[Sensor], Callable[[], float]]] = {
    "avg": lambda s: s.avg,
    "max": lambda s: s.max,
    "min": lambda s: s.min,
    "rate": lambda s: s.rate,
    "count-rate": lambda s: lambda: s.rate(True),
    "total": lambda s: lambda: s.total,
    "count": lambda s: lambda: s.count,
    "value": lambda s: lambda: s.last,
}


class Metrics:
    """One client's metrics: Java's Metrics registry with its sensors.

    `sensor(name)` returns the same Sensor for the same name; the `add_*` helpers attach
    a stat to it and publish it under (metric, group, tags). Tags are Java's: the
    client-id always, then topic and partition where the metric is per topic or per
    partition.
    """

    def __init__(self, client_id: str, *, window_ms: int = 30000, samples: int = 2) -> None:
        self.client_id = client_id
        self.window = max(window_ms, 1) / 1000
        self.samples = max(samples, 1)
        self._metrics: dict[MetricName, KafkaMetric] = {}
        self._sensors: dict[str, Sensor] = {}

    # -- registering -------------------------------------------------------------------

    def name(self, name: str, group: str, description: str = "", **tags: str) -> MetricName:
        return MetricName(name, group, description, (("client-id", self.client_id),) + tuple(tags.items()))

    def _publish(self, name: MetricName, read: Callable[[], float]) -> None:
        self._metrics[name] = KafkaMetric(name, read)

    def sensor(self, name: str) -> tuple[Sensor, bool]:
        """The sensor of this name and whether it is new (its stats still to be added)."""
        sensor = self._sensors.get(name)
        if sensor is not None:
            return sensor, False
        sensor = self._sensors[name] = Sensor(name, self.window, self.samples)
        return sensor, True

    def add_stat(self, sensor: Sensor, kind: str, name: MetricName) -> None:
        """Publish one stat of a sensor: "avg", "max", "min", "rate" (a windowed sum per
        second), "count-rate" (a windowed count per second), "total", "count" or "value"."""
        try:
            view = _STATS[kind]
        except KeyError:
            raise ValueError(f"unknown stat kind {kind}") from None
        self._publish(name, view(sensor))

    def meter(self, sensor: Sensor, group: str, prefix: str, *, count: bool = False, what: str = "",
              **tags: str) -> None:
        """Java's Meter: `<prefix>-rate` and `<prefix>-total` (of values, or of recordings
        when `count`)."""
        self.add_stat(sensor, "count-rate" if count else "rate",
                      self.name(f"{prefix}-rate", group, f"The average number of {what or prefix} per second", **tags))
        self.add_stat(sensor, "count" if count else "total",
                      self.name(f"{prefix}-total", group, f"The total number of {what or prefix}", **tags))

    def gauge(self, name: MetricName, read: Callable[[], float]) -> None:
        self._publish(name, read)

    def remove(self, names: Iterable[MetricName]) -> None:
        for name in names:
            self._metrics.pop(name, None)

    # -- reading -----------------------------------------------------------------------

    def metrics(self) -> dict[MetricName, KafkaMetric]:
        """A copy of every published metric (Java's metrics(): an unmodifiable map)."""
        return dict(self._metrics)

    def value(self, name: str, group: str, **tags: str) -> float:
        """One metric's value now (tests and tools); KeyError when not published."""
        return self._metrics[self.name(name, group, **tags)].metric_value()


def by_name(metrics: Mapping[MetricName, KafkaMetric]) -> dict[str, float]:
    """{"group:name{tags}": value}: a flat view for printing (the perf tools' --print-metrics)."""
    out = {}
    for name, metric in sorted(metrics.items(), key=lambda kv: (kv[0].group, kv[0].name, kv[0].tags)):
        tags = ",".join(f"{k}={v}" for k, v in name.tags)
        out[f"{name.group}:{name.name}:{{{tags}}}"] = metric.metric_value()
    return out


def network_sensors(m: Metrics, group: str) -> tuple[Sensor, Sensor]:
    """Java's Selector metrics in the client's group: (bytes sent per request, bytes received
    per response), each also counting requests or responses. The NetworkClient records
    them once per request and per response frame."""
    outgoing = m.sensor("bytes-sent")[0]
    m.meter(outgoing, group, "outgoing-byte", what="outgoing bytes sent to all servers")
    m.meter(outgoing, group, "request", count=True, what="requests sent")
    m.add_stat(outgoing, "avg", m.name("request-size-avg", group, "The average size of requests sent."))
    m.add_stat(outgoing, "max", m.name("request-size-max", group, "The maximum size of any request sent."))
    incoming = m.sensor("bytes-received")[0]
    m.meter(incoming, group, "incoming-byte", what="bytes read off all sockets")
    m.meter(incoming, group, "response", count=True, what="responses received")
    return outgoing, incoming


# -- the producer (Java's SenderMetricsRegistry and the producer's buffer and network gauges) ----

PRODUCER = "producer-metrics"
PRODUCER_TOPIC = "producer-topic-metrics"


class ProducerMetrics:
    """The producer's sensors, recorded by its sender thread once per batch or request.

    Names, groups and meanings are Java's: record-send-* counts records as their batches
    go out in a Produce request (a retried batch counts again, as in Java), record-queue-
    time is a batch's wait in the accumulator until drained, request-latency a Produce
    request's round trip, batch-size the bytes of a batch as sent, compression-rate its
    compressed over uncompressed size.
    """

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = m = metrics
        g = PRODUCER

        def sensor(name: str) -> Sensor:
            return m.sensor(name)[0]

        self.batch_size = sensor("batch-size")
        m.add_stat(self.batch_size, "avg", m.name("batch-size-avg", g, "The average number of bytes sent per "
                                                   "partition per-request."))
        m.add_stat(self.batch_size, "max", m.name("batch-size-max", g, "The max number of bytes sent per partition "
                                                   "per-request."))
        self.compression = sensor("compression-rate")
        m.add_stat(self.compression, "avg", m.name("compression-rate-avg", g, "The average compression rate of "
                                                    "record batches."))
        self.queue_time = sensor("queue-time")
        m.add_stat(self.queue_time, "avg", m.name("record-queue-time-avg", g, "The average time in ms record "
                                                   "batches spent in the send buffer."))
        m.add_stat(self.queue_time, "max", m.name("record-queue-time-max", g, "The maximum time in ms record "
                                                   "batches spent in the send buffer."))
        self.latency = sensor("request-time")
        m.add_stat(self.latency, "avg", m.name("request-latency-avg", g, "The average request latency in ms"))
        m.add_stat(self.latency, "max", m.name("request-latency-max", g, "The maximum request latency in ms"))
        self.throttle = sensor("produce-throttle-time")
        m.add_stat(self.throttle, "avg", m.name("produce-throttle-time-avg", g, "The average time in ms a request "
                                                 "was throttled by a broker"))
        m.add_stat(self.throttle, "max", m.name("produce-throttle-time-max", g, "The maximum time in ms a request "
                                                 "was throttled by a broker"))
        self.records_per_request = sensor("records-per-request")
        m.add_stat(self.records_per_request, "avg", m.name("records-per-request-avg", g, "The average number of "
                                                            "records per request."))
        self.send = sensor("record-send")
        m.meter(self.send, g, "record-send", what="records sent")
        self.retry = sensor("record-retries")
        m.meter(self.retry, g, "record-retry", what="retried record sends")
        self.error = sensor("errors")
        m.meter(self.error, g, "record-error", what="record sends that resulted in errors")
        self.record_size = sensor("record-size")
        m.add_stat(self.record_size, "max", m.name("record-size-max", g, "The maximum record size"))
        m.add_stat(self.record_size, "avg", m.name("record-size-avg", g, "The average record size"))
        self.split = sensor("batch-split")
        m.meter(self.split, g, "batch-split", count=True, what="batch splits")
        self.network = network_sensors(m, g)
        self._topics: dict[str, tuple[Sensor, Sensor, Sensor, Sensor, Sensor]] = {}

    def topic(self, topic: str) -> tuple[Sensor, Sensor, Sensor, Sensor, Sensor]:
        """(records sent, bytes, compression, retries, errors) of one topic (producer-topic-metrics)."""
        sensors = self._topics.get(topic)
        if sensors is None:
            m, g = self.metrics, PRODUCER_TOPIC
            send, byte, comp, retry, error = (m.sensor(f"topic.{topic}.{s}")[0] for s in
                                              ("records-per-batch", "bytes", "compression-rate", "record-retries",
                                               "record-errors"))
            m.meter(send, g, "record-send", what="records sent", topic=topic)
            m.meter(byte, g, "byte", what="bytes sent", topic=topic)
            m.add_stat(comp, "avg", m.name("compression-rate", g, "The average compression rate of record batches "
                                           "for a topic.", topic=topic))
            m.meter(retry, g, "record-retry", what="retried record sends", topic=topic)
            m.meter(error, g, "record-error", what="record sends that resulted in errors", topic=topic)
            sensors = self._topics[topic] = (send, byte, comp, retry, error)
        return sensors

    def batch_sent(self, topic: str, records: int, size: int, uncompressed: int, queue_ms: float,
                   now: float) -> None:
        """One batch put in a Produce request (Java's updateProduceRequestMetrics, per batch)."""
        send, byte, comp, _, _ = self.topic(topic)
        send.record(records, now)
        byte.record(size, now)
        self.send.record(records, now)
        self.batch_size.record(size, now)
        self.queue_time.record(queue_ms, now)
        if records:
            self.record_size.record(size / records, now)
        if uncompressed:
            ratio = size / uncompressed
            comp.record(ratio, now)
            self.compression.record(ratio, now)

    def retried(self, topic: str, records: int, now: float) -> None:
        self.topic(topic)[3].record(records, now)
        self.retry.record(records, now)

    def failed(self, topic: str, records: int, now: float) -> None:
        self.topic(topic)[4].record(records, now)
        self.error.record(records, now)


# -- the consumer (Java's FetchManagerMetrics and ConsumerCoordinator's metrics) ---------------

FETCH_MANAGER = "consumer-fetch-manager-metrics"
COORDINATOR = "consumer-coordinator-metrics"
CONSUMER = "consumer-metrics"


class FetchMetrics:
    """The consumer's fetch sensors, recorded by the thread that polls.

    fetch-latency and fetch-size per Fetch answer; records-consumed and bytes-consumed
    as poll() hands records over (per partition per poll, Java's FetchResponseMetric-
    Aggregator records them as a fetch is drained); records-lag (high watermark, or the
    last stable offset under read_committed, less the position) and records-lead
    (position less log start) per partition after each poll that read it.
    """

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = m = metrics
        g = FETCH_MANAGER
        self.latency = m.sensor("fetch-latency")[0]
        m.add_stat(self.latency, "avg", m.name("fetch-latency-avg", g, "The average time taken for a fetch request."))
        m.add_stat(self.latency, "max", m.name("fetch-latency-max", g, "The max time taken for any fetch request."))
        m.meter(self.latency, g, "fetch", count=True, what="fetch requests")
        self.fetch_size = m.sensor("bytes-fetched")[0]
        m.add_stat(self.fetch_size, "avg", m.name("fetch-size-avg", g, "The average number of bytes fetched per "
                                                   "request"))
        m.add_stat(self.fetch_size, "max", m.name("fetch-size-max", g, "The maximum number of bytes fetched per "
                                                   "request"))
        self.records_per_request = m.sensor("records-fetched")[0]
        m.add_stat(self.records_per_request, "avg", m.name("records-per-request-avg", g, "The average number of "
                                                            "records in each request"))
        self.bytes = m.sensor("bytes-consumed")[0]
        m.meter(self.bytes, g, "bytes-consumed", what="bytes consumed")
        self.records = m.sensor("records-consumed")[0]
        m.meter(self.records, g, "records-consumed", what="records consumed")
        self.lag = m.sensor("records-lag")[0]
        m.add_stat(self.lag, "max", m.name("records-lag-max", g, "The maximum lag in terms of number of records for "
                                           "any partition in this window"))
        self.lead = m.sensor("records-lead")[0]
        m.add_stat(self.lead, "min", m.name("records-lead-min", g, "The minimum lead in terms of number of records "
                                            "for any partition in this window"))
        self.throttle = m.sensor("fetch-throttle-time")[0]
        m.add_stat(self.throttle, "avg", m.name("fetch-throttle-time-avg", g, "The average throttle time in ms"))
        m.add_stat(self.throttle, "max", m.name("fetch-throttle-time-max", g, "The maximum throttle time in ms"))
        self._topics: dict[str, tuple[Sensor, Sensor]] = {}
        self._partitions: dict[tuple[str, int], tuple[Sensor, Sensor]] = {}

    def _topic(self, topic: str) -> tuple[Sensor, Sensor]:
        sensors = self._topics.get(topic)
        if sensors is None:
            m, g = self.metrics, FETCH_MANAGER
            records = m.sensor(f"topic.{topic}.records-fetched")[0]
            byte = m.sensor(f"topic.{topic}.bytes-fetched")[0]
            m.meter(records, g, "records-consumed", what="records consumed", topic=topic)
            m.add_stat(records, "avg", m.name("records-per-request-avg", g, "The average number of records in each "
                                              "request", topic=topic))
            m.meter(byte, g, "bytes-consumed", what="bytes consumed", topic=topic)
            m.add_stat(byte, "avg", m.name("fetch-size-avg", g, "The average number of bytes fetched per request",
                                           topic=topic))
            m.add_stat(byte, "max", m.name("fetch-size-max", g, "The maximum number of bytes fetched per request",
                                           topic=topic))
            sensors = self._topics[topic] = (records, byte)
        return sensors

    def _partition(self, topic: str, partition: int) -> tuple[Sensor, Sensor]:
        key = (topic, partition)
        sensors = self._partitions.get(key)
        if sensors is None:
            m, g, p = self.metrics, FETCH_MANAGER, str(partition)
            lag = m.sensor(f"{topic}-{partition}.records-lag")[0]
            lead = m.sensor(f"{topic}-{partition}.records-lead")[0]
            for stat, desc in (("value", "The latest lag of the partition"), ("max", "The max lag of the partition"),
                               ("avg", "The average lag of the partition")):
                suffix = "" if stat == "value" else f"-{stat}"
                m.add_stat(lag, stat, m.name(f"records-lag{suffix}", g, desc, topic=topic, partition=p))
            for stat, desc in (("value", "The latest lead of the partition"), ("min", "The min lead of the "
                                                                                "partition"),
                               ("avg", "The average lead of the partition")):
                suffix = "" if stat == "value" else f"-{stat}"
                m.add_stat(lead, stat, m.name(f"records-lead{suffix}", g, desc, topic=topic, partition=p))
            sensors = self._partitions[key] = (lag, lead)
        return sensors

    def fetch_answered(self, latency_ms: float, size: int, records_by_topic: Mapping[str, tuple[int, int]],
                       throttle_ms: int, now: float) -> None:
        """One Fetch answer: its latency, size, and (records, bytes) per topic it carried."""
        self.latency.record(latency_ms, now)
        self.fetch_size.record(size, now)
        self.throttle.record(throttle_ms, now)
        for topic, (_, byte) in records_by_topic.items():
            self._topic(topic)[1].record(byte, now)
            self.bytes.record(byte, now)

    def consumed(self, topic: str, partition: int, records: int, lag: int | None, lead: int | None,
                 now: float) -> None:
        """A poll handed `records` of one partition over; its lag and lead after that."""
        self._topic(topic)[0].record(records, now)
        self.records.record(records, now)
        self.records_per_request.record(records, now)
        lag_sensor, lead_sensor = self._partition(topic, partition)
        if lag is not None:
            lag_sensor.record(lag, now)
            self.lag.record(lag, now)
        if lead is not None:
            lead_sensor.record(lead, now)
            self.lead.record(lead, now)

    def keep_partitions(self, assigned: Iterable[tuple[str, int]]) -> None:
        """Drop the lag metrics of partitions no longer assigned (Java removes them on unassignment)."""
        keep = {(topic, partition) for topic, partition in assigned}
        m, g = self.metrics, FETCH_MANAGER
        for topic, partition in [key for key in self._partitions if key not in keep]:
            del self._partitions[(topic, partition)]
            p = str(partition)
            m.remove(m.name(n, g, topic=topic, partition=p) for n in (
                "records-lag", "records-lag-max", "records-lag-avg", "records-lead", "records-lead-min",
                "records-lead-avg"))
            m._sensors.pop(f"{topic}-{partition}.records-lag", None)
            m._sensors.pop(f"{topic}-{partition}.records-lead", None)


class CoordinatorMetrics:
    """ConsumerCoordinator's and AbstractCoordinator's group metrics."""

    def __init__(self, metrics: Metrics, assigned: Callable[[], float]) -> None:
        self.metrics = m = metrics
        g = COORDINATOR
        self.commit = m.sensor("commit-latency")[0]
        m.add_stat(self.commit, "avg", m.name("commit-latency-avg", g, "The average time taken for a commit request"))
        m.add_stat(self.commit, "max", m.name("commit-latency-max", g, "The max time taken for a commit request"))
        m.meter(self.commit, g, "commit", count=True, what="commit calls")
        self.heartbeat = m.sensor("heartbeat-latency")[0]
        m.add_stat(self.heartbeat, "max", m.name("heartbeat-response-time-max", g, "The max time taken to receive a "
                                                  "response to a heartbeat request"))
        m.meter(self.heartbeat, g, "heartbeat", count=True, what="heartbeats")
        self.join = m.sensor("join-latency")[0]
        m.add_stat(self.join, "avg", m.name("join-time-avg", g, "The average time taken for a group rejoin"))
        m.add_stat(self.join, "max", m.name("join-time-max", g, "The max time taken for a group rejoin"))
        m.meter(self.join, g, "join", count=True, what="group joins")
        self.sync = m.sensor("sync-latency")[0]
        m.add_stat(self.sync, "avg", m.name("sync-time-avg", g, "The average time taken for a group sync"))
        m.add_stat(self.sync, "max", m.name("sync-time-max", g, "The max time taken for a group sync"))
        m.meter(self.sync, g, "sync", count=True, what="group syncs")
        self.rebalance = m.sensor("rebalance-latency")[0]
        m.add_stat(self.rebalance, "avg", m.name("rebalance-latency-avg", g, "The average time taken for a group to "
                                                  "complete a successful rebalance"))
        m.add_stat(self.rebalance, "max", m.name("rebalance-latency-max", g, "The max time taken for a group to "
                                                  "complete a successful rebalance"))
        m.add_stat(self.rebalance, "total", m.name("rebalance-latency-total", g, "The total number of milliseconds "
                                                    "this consumer has spent in successful rebalances since creation"))
        m.add_stat(self.rebalance, "count", m.name("rebalance-total", g, "The total number of successful rebalance "
                                                    "events"))
        self.failed_rebalance = m.sensor("failed-rebalance")[0]
        m.add_stat(self.failed_rebalance, "count", m.name("failed-rebalance-total", g, "The total number of failed "
                                                           "rebalance events"))
        self.last_rebalance: float | None = None
        self.last_heartbeat: float | None = None
        m.gauge(m.name("last-rebalance-seconds-ago", g, "The number of seconds since the last successful rebalance "
                       "event"), lambda: -1.0 if self.last_rebalance is None else _monotonic() - self.last_rebalance)
        m.gauge(m.name("last-heartbeat-seconds-ago", g, "The number of seconds since the last coordinator heartbeat "
                       "was sent"), lambda: -1.0 if self.last_heartbeat is None else _monotonic() - self.last_heartbeat)
        m.gauge(m.name("assigned-partitions", g, "The number of partitions currently assigned to this consumer"),
                assigned)


__all__ = ["COORDINATOR", "CONSUMER", "FETCH_MANAGER", "PRODUCER", "PRODUCER_TOPIC", "CoordinatorMetrics",
           "FetchMetrics", "KafkaMetric", "MetricName", "Metrics", "ProducerMetrics", "Sensor", "by_name"]
