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


class _Column:
    """One recorded quantity of a sensor: per-sample sums, maxima and minima, and its
    running total and last value."""

    __slots__ = ("sums", "maxes", "mins", "total", "last")

    def __init__(self, samples: int) -> None:
        self.sums = [0.0] * samples
        self.maxes = [-math.inf] * samples
        self.mins = [math.inf] * samples
        self.total = 0.0        # CumulativeSum
        self.last = math.nan    # Value

    def reset(self, i: int) -> None:
        self.sums[i] = 0.0
        self.maxes[i] = -math.inf
        self.mins[i] = math.inf


class Sensor:
    """Records values into `samples` windows of `window` seconds (Java's SampledStat) and
    into running totals; every stat attached to it (avg, max, min, rate, total, count,
    last value) is a view computed when read.

    Java gives each stat its own samples; here the stats of a sensor share one window
    ring, and a sensor may record several quantities at once (`columns`: a batch's record
    count, size and queue time, say) under one window check, so a batch costs the sender
    one call per sensor: a window check and a few additions and comparisons per column.
    """

    __slots__ = ("name", "window", "samples", "_starts", "_counts", "_current", "count", "columns", "_first")

    def __init__(self, name: str, window: float = 30.0, samples: int = 2, columns: int = 1) -> None:
        self.name = name
        self.window = window
        self.samples = samples
        self._starts = [_monotonic()] + [-math.inf] * (samples - 1)
        self._counts = [0] * samples
        self._current = 0
        self.count = 0          # CumulativeCount: recordings
        self.columns = tuple(_Column(samples) for _ in range(columns))
        self._first = self.columns[0]

    def record(self, value: float = 1.0, now: float | None = None) -> None:
        """Record one value (into the first column)."""
        if now is None:
            now = _monotonic()
        i = self._current
        if now - self._starts[i] >= self.window:
            i = self._roll(now)
        self._counts[i] += 1
        self.count += 1
        c = self._first
        c.sums[i] += value
        if value > c.maxes[i]:
            c.maxes[i] = value
        if value < c.mins[i]:
            c.mins[i] = value
        c.total += value
        c.last = value

    def record_all(self, now: float, *values: float) -> None:
        """Record one value per column, as one recording."""
        i = self._current
        if now - self._starts[i] >= self.window:
            i = self._roll(now)
        self._counts[i] += 1
        self.count += 1
        for c, value in zip(self.columns, values):
            c.sums[i] += value
            if value > c.maxes[i]:
                c.maxes[i] = value
            if value < c.mins[i]:
                c.mins[i] = value
            c.total += value
            c.last = value

    def _roll(self, now: float) -> int:
        i = (self._current + 1) % self.samples
        self._starts[i] = now
        self._counts[i] = 0
        for column in self.columns:
            column.reset(i)
        self._current = i
        return i

    def _live(self, now: float) -> list[int]:
        """Samples recent enough to count (Java's purgeObsoleteSamples)."""
        expire = self.window * self.samples
        return [i for i in range(self.samples) if now - self._starts[i] < expire]

    # -- the stats, read --------------------------------------------------------------

    def avg(self, column: int = 0) -> float:
        live = self._live(_monotonic())
        count = sum(self._counts[i] for i in live)
        sums = self.columns[column].sums
        return sum(sums[i] for i in live) / count if count else math.nan

    def max(self, column: int = 0) -> float:
        maxes = self.columns[column].maxes
        values = [maxes[i] for i in self._live(_monotonic()) if self._counts[i]]
        return max(values) if values else math.nan

    def min(self, column: int = 0) -> float:
        mins = self.columns[column].mins
        values = [mins[i] for i in self._live(_monotonic()) if self._counts[i]]
        return min(values) if values else math.nan

    def rate(self, column: int = 0, counting: bool = False) -> float:
        """Java's Rate: the windowed sum (or count) over the elapsed window, per second; the
        window is at least (samples - 1) full windows long (Rate.windowSize)."""
        now = _monotonic()
        live = self._live(now)
        values = self._counts if counting else self.columns[column].sums
        total = sum(values[i] for i in live)
        elapsed = now - (min(self._starts[i] for i in live) if live else now)
        full = int(elapsed / self.window)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window
        return total / elapsed if elapsed > 0 else 0.0

    @property
    def total(self) -> float:
        return self._first.total

    @property
    def last(self) -> float:
        return self._first.last


_STATS: dict[str, Callable[[Sensor, int], Callable[[], float]]] = {
    "avg": lambda s, c: lambda: s.avg(c),
    "max": lambda s, c: lambda: s.max(c),
    "min": lambda s, c: lambda: s.min(c),
    "rate": lambda s, c: lambda: s.rate(c),
    "count-rate": lambda s, c: lambda: s.rate(c, True),
    "total": lambda s, c: lambda: s.columns[c].total,
    "count": lambda s, c: lambda: s.count,
    "value": lambda s, c: lambda: s.columns[c].last,
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

    def sensor(self, name: str, columns: int = 1) -> tuple[Sensor, bool]:
        """The sensor of this name and whether it is new (its stats still to be added)."""
        sensor = self._sensors.get(name)
        if sensor is not None:
            return sensor, False
        sensor = self._sensors[name] = Sensor(name, self.window, self.samples, columns)
        return sensor, True

    def add_stat(self, sensor: Sensor, kind: str, name: MetricName, column: int = 0) -> None:
        """Publish one stat of a sensor's column: "avg", "max", "min", "rate" (a windowed sum
        per second), "count-rate" (recordings per second), "total", "count" (recordings) or
        "value" (the last)."""
        try:
            view = _STATS[kind]
        except KeyError:
            raise ValueError(f"unknown stat kind {kind}") from None
        self._publish(name, view(sensor, column))

    def meter(self, sensor: Sensor, group: str, prefix: str, *, count: bool = False, what: str = "",
              column: int = 0, **tags: str) -> None:
        """Java's Meter: `<prefix>-rate` and `<prefix>-total` (of a column's values, or of
        recordings when `count`)."""
        self.add_stat(sensor, "count-rate" if count else "rate",
                      self.name(f"{prefix}-rate", group, f"The average number of {what or prefix} per second", **tags),
                      column)
        self.add_stat(sensor, "count" if count else "total",
                      self.name(f"{prefix}-total", group, f"The total number of {what or prefix}", **tags), column)

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
    compressed over uncompressed size (1.0 uncompressed), record-size a batch's bytes per
    record. A batch costs two recordings (the producer's batch sensor and its topic's),
    a request's answer one, plus the network's for the request and the answer.
    """

    # Columns of the batch sensor and of a topic's sensor.
    RECORDS, BYTES, QUEUE_MS, RECORD_SIZE, RATIO = range(5)
    T_RECORDS, T_BYTES, T_RATIO = range(3)

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = m = metrics
        g = PRODUCER
        self.batch = b = m.sensor("batches", columns=5)[0]
        m.meter(b, g, "record-send", what="records sent", column=self.RECORDS)
        m.add_stat(b, "avg", m.name("batch-size-avg", g, "The average number of bytes sent per partition "
                                    "per-request."), self.BYTES)
        m.add_stat(b, "max", m.name("batch-size-max", g, "The max number of bytes sent per partition per-request."),
                   self.BYTES)
        m.add_stat(b, "avg", m.name("record-queue-time-avg", g, "The average time in ms record batches spent in "
                                    "the send buffer."), self.QUEUE_MS)
        m.add_stat(b, "max", m.name("record-queue-time-max", g, "The maximum time in ms record batches spent in "
                                    "the send buffer."), self.QUEUE_MS)
        m.add_stat(b, "avg", m.name("record-size-avg", g, "The average record size"), self.RECORD_SIZE)
        m.add_stat(b, "max", m.name("record-size-max", g, "The maximum record size"), self.RECORD_SIZE)
        m.add_stat(b, "avg", m.name("compression-rate-avg", g, "The average compression rate of record batches."),
                   self.RATIO)
        # A Produce request's answer (or failure): (latency ms, throttle ms, records it carried).
        self.answer = a = m.sensor("produce-answers", columns=3)[0]
        m.add_stat(a, "avg", m.name("records-per-request-avg", g, "The average number of records per request."), 2)
        m.add_stat(a, "avg", m.name("request-latency-avg", g, "The average request latency in ms"), 0)
        m.add_stat(a, "max", m.name("request-latency-max", g, "The maximum request latency in ms"), 0)
        m.add_stat(a, "avg", m.name("produce-throttle-time-avg", g, "The average time in ms a request was "
                                    "throttled by a broker"), 1)
        m.add_stat(a, "max", m.name("produce-throttle-time-max", g, "The maximum time in ms a request was "
                                    "throttled by a broker"), 1)
        self.retry = m.sensor("record-retries")[0]
        m.meter(self.retry, g, "record-retry", what="retried record sends")
        self.error = m.sensor("errors")[0]
        m.meter(self.error, g, "record-error", what="record sends that resulted in errors")
        self.split = m.sensor("batch-split")[0]
        m.meter(self.split, g, "batch-split", count=True, what="batch splits")
        self.network = network_sensors(m, g)
        self._topics: dict[str, tuple[Sensor, Sensor, Sensor]] = {}

    def topic(self, topic: str) -> tuple[Sensor, Sensor, Sensor]:
        """(batches, retries, errors) of one topic (producer-topic-metrics)."""
        sensors = self._topics.get(topic)
        if sensors is None:
            m, g = self.metrics, PRODUCER_TOPIC
            batches = m.sensor(f"topic.{topic}.batches", columns=3)[0]
            retry, error = (m.sensor(f"topic.{topic}.{s}")[0] for s in ("record-retries", "record-errors"))
            m.meter(batches, g, "record-send", what="records sent", column=self.T_RECORDS, topic=topic)
            m.meter(batches, g, "byte", what="bytes sent", column=self.T_BYTES, topic=topic)
            m.add_stat(batches, "avg", m.name("compression-rate", g, "The average compression rate of record batches "
                                              "for a topic.", topic=topic), self.T_RATIO)
            m.meter(retry, g, "record-retry", what="retried record sends", topic=topic)
            m.meter(error, g, "record-error", what="record sends that resulted in errors", topic=topic)
            sensors = self._topics[topic] = (batches, retry, error)
        return sensors

    def batch_sent(self, topic: str, records: int, size: int, uncompressed: int, queue_ms: float,
                   now: float) -> None:
        """One batch put in a Produce request (Java's updateProduceRequestMetrics, per batch)."""
        ratio = size / uncompressed if uncompressed else 1.0
        self.batch.record_all(now, records, size, queue_ms, size / records if records else 0.0, ratio)
        sensors = self._topics.get(topic) or self.topic(topic)
        sensors[0].record_all(now, records, size, ratio)

    def answered(self, latency_ms: float, throttle_ms: float, records: int, now: float) -> None:
        self.answer.record_all(now, latency_ms, throttle_ms, records)

    def retried(self, topic: str, records: int, now: float) -> None:
        self.topic(topic)[1].record(records, now)
        self.retry.record(records, now)

    def failed(self, topic: str, records: int, now: float) -> None:
        self.topic(topic)[2].record(records, now)
        self.error.record(records, now)


# -- the consumer (Java's FetchManagerMetrics and ConsumerCoordinator's metrics) ---------------

FETCH_MANAGER = "consumer-fetch-manager-metrics"
COORDINATOR = "consumer-coordinator-metrics"
CONSUMER = "consumer-metrics"


class FetchMetrics:
    """The consumer's fetch sensors, recorded by the thread that polls.

    fetch-latency, fetch-size and bytes-consumed per Fetch answer (bytes are counted as
    answers arrive; Java's FetchResponseMetricAggregator counts them as a poll drains
    them); records-consumed and records-per-request as poll() hands records over, per
    partition per poll; records-lag (high watermark, or the last stable offset under
    read_committed, less the position) and records-lead (position less log start) per
    partition after each poll that read it, or each fetch that found nothing new.
    """

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = m = metrics
        g = FETCH_MANAGER
        # A Fetch answer: (latency ms, bytes, throttle ms).
        self.answer = a = m.sensor("fetch-answers", columns=3)[0]
        m.add_stat(a, "avg", m.name("fetch-latency-avg", g, "The average time taken for a fetch request."), 0)
        m.add_stat(a, "max", m.name("fetch-latency-max", g, "The max time taken for any fetch request."), 0)
        m.meter(a, g, "fetch", count=True, what="fetch requests")
        m.add_stat(a, "avg", m.name("fetch-size-avg", g, "The average number of bytes fetched per request"), 1)
        m.add_stat(a, "max", m.name("fetch-size-max", g, "The maximum number of bytes fetched per request"), 1)
        m.meter(a, g, "bytes-consumed", what="bytes consumed", column=1)
        m.add_stat(a, "avg", m.name("fetch-throttle-time-avg", g, "The average throttle time in ms"), 2)
        m.add_stat(a, "max", m.name("fetch-throttle-time-max", g, "The maximum throttle time in ms"), 2)
        # Records a poll took of one partition, and that partition's lag and lead then.
        self.records = r = m.sensor("records-consumed", columns=3)[0]
        m.meter(r, g, "records-consumed", what="records consumed", column=0)
        m.add_stat(r, "avg", m.name("records-per-request-avg", g, "The average number of records in each request"), 0)
        m.add_stat(r, "max", m.name("records-lag-max", g, "The maximum lag in terms of number of records for any "
                                    "partition in this window"), 1)
        m.add_stat(r, "min", m.name("records-lead-min", g, "The minimum lead in terms of number of records for any "
                                    "partition in this window"), 2)
        self._topics: dict[str, tuple[Sensor, Sensor]] = {}
        self._partitions: dict[tuple[str, int], Sensor] = {}

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

    def _partition(self, topic: str, partition: int) -> Sensor:
        key = (topic, partition)
        sensor = self._partitions.get(key)
        if sensor is None:
            m, g, p = self.metrics, FETCH_MANAGER, str(partition)
            sensor = m.sensor(f"{topic}-{partition}.records-lag", columns=2)[0]
            for what, column, extreme in (("lag", 0, "max"), ("lead", 1, "min")):
                m.add_stat(sensor, "value", m.name(f"records-{what}", g, f"The latest {what} of the partition",
                                                   topic=topic, partition=p), column)
                m.add_stat(sensor, extreme, m.name(f"records-{what}-{extreme}", g, f"The {extreme} {what} of the "
                                                   "partition", topic=topic, partition=p), column)
                m.add_stat(sensor, "avg", m.name(f"records-{what}-avg", g, f"The average {what} of the partition",
                                                 topic=topic, partition=p), column)
            self._partitions[key] = sensor
        return sensor

    def fetch_answered(self, latency_ms: float, size: int, bytes_by_topic: Mapping[str, int],
                       throttle_ms: int, now: float) -> None:
        """One Fetch answer: its latency, size and throttle, and the bytes per topic it carried."""
        self.answer.record_all(now, latency_ms, size, throttle_ms)
        for topic, byte in bytes_by_topic.items():
            (self._topics.get(topic) or self._topic(topic))[1].record(byte, now)

    def consumed(self, topic: str, partition: int, records: int, lag: int | None, lead: int | None,
                 now: float) -> None:
        """A poll handed `records` of one partition over; its lag and lead after that."""
        (self._topics.get(topic) or self._topic(topic))[0].record(records, now)
        lag_value = math.nan if lag is None else lag
        lead_value = math.nan if lead is None else lead
        self.records.record_all(now, records, lag_value, lead_value)
        if lag is not None and lead is not None:   # (unknown before the partition's first answer)
            (self._partitions.get((topic, partition)) or self._partition(topic, partition)).record_all(
                now, lag, lead)

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


class CoordinatorMetrics:
    """ConsumerCoordinator's and AbstractCoordinator's group metrics."""

    def __init__(self, metrics: Metrics, assigned: Callable[[], float],
                 clock: Callable[[], float] | None = None) -> None:
        """`clock` is the coordinator's, which stamps last_rebalance and last_heartbeat
        (seconds, monotonic); the "seconds ago" gauges read it too."""
        self.metrics = m = metrics
        now = clock if clock is not None else (lambda: _monotonic())
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
                       "event"), lambda: -1.0 if self.last_rebalance is None else now() - self.last_rebalance)
        m.gauge(m.name("last-heartbeat-seconds-ago", g, "The number of seconds since the last coordinator heartbeat "
                       "was sent"), lambda: -1.0 if self.last_heartbeat is None else now() - self.last_heartbeat)
        m.gauge(m.name("assigned-partitions", g, "The number of partitions currently assigned to this consumer"),
                assigned)


__all__ = ["COORDINATOR", "CONSUMER", "FETCH_MANAGER", "PRODUCER", "PRODUCER_TOPIC", "CoordinatorMetrics",
           "FetchMetrics", "KafkaMetric", "MetricName", "Metrics", "ProducerMetrics", "Sensor", "by_name"]
