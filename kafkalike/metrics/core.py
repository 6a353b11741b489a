"""The metric kinds and the registry: what is counted, and how a scrape reads it.

Kafka keeps its broker metrics in Yammer metrics registered under JMX names: meters
(counts with rates), gauges (a callback read when asked), histograms and timers. Here
the same names, with the cost moved off the hot path:

- a *meter* is a plain integer the code increments (`stats.py` holds them in slotted
  objects); rates are what Prometheus computes from the count, so nothing decays or
  samples on the request path;
- a *gauge* is a callback the registry calls at scrape time, reading in-memory state;
- a *histogram* (request latency) is one `bisect` and two additions per observation
  into fixed buckets, made cumulative only when scraped;
- a *summary* keeps a count and a sum (Kafka's secondary timers: queue, local, remote
  and send time), two additions per observation.

The registry holds *sources*: callables that yield `Reading`s when the endpoint is
scraped. A single metric is a source of one reading; a family of metrics over changing
things (one per topic, per partition, per API) is one source that walks them. Nothing
here imports the Prometheus client: the exposition module does, so a hot-path module
that counts things loads nothing it does not use.
"""
from __future__ import annotations

import bisect
import enum
import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

log = logging.getLogger("kafkalike.metrics")

Tags = tuple[tuple[str, str], ...]


class Kind(enum.Enum):
    """How a metric is exposed: a Yammer meter is a Prometheus counter, and so on."""

    METER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"
    SUMMARY = "summary"


@dataclass(frozen=True, slots=True)
class MetricName:
    """A Yammer metric name as Kafka registers it in JMX: domain, type, name and the
    ordered tags (`kafka.log:type=Log,name=LogEndOffset,topic=T,partition=0`)."""

    domain: str
    type: str
    name: str
    tags: Tags = ()

    @property
    def mbean(self) -> str:
        """The JMX object name, properties in Kafka's registration order."""
        props = [f"type={self.type}", f"name={self.name}"] + [f"{k}={v}" for k, v in self.tags]
        return f"{self.domain}:{','.join(props)}"

    def tagged(self, *tags: tuple[str, str]) -> "MetricName":
        """The same metric for one topic, partition, API... (tags appended in order)."""
        return MetricName(self.domain, self.type, self.name, self.tags + tuple(tags))


@dataclass(frozen=True, slots=True)
class HistogramValue:
    """Upper bounds, the count in each bucket (not cumulative; the last one is +Inf),
    and the sum of the observed values."""

    bounds: Sequence[float]
    counts: Sequence[int]
    sum: float


@dataclass(frozen=True, slots=True)
class SummaryValue:
    count: int
    sum: float


@dataclass(frozen=True, slots=True)
class Reading:
    """One metric's value at scrape time."""

    name: MetricName
    kind: Kind
    value: float | HistogramValue | SummaryValue


@dataclass(frozen=True, slots=True)
class Table:
    """Many series of a few metrics that share their tags, taken as rows: one row per
    partition (its tag values, then one value per metric) instead of one Reading per
    series. A scrape of a broker with thousands of partitions then costs the reactor a
    tuple per partition; the series are spelled out where the exposition is written,
    off the reactor."""

    names: tuple[MetricName, ...]     # one per value column, without the row's tags
    kind: Kind
    tag_keys: tuple[str, ...]
    rows: Sequence[tuple]             # (tag value, ..., value per name, ...)

    def readings(self) -> Iterator[Reading]:
        width = len(self.tag_keys)
        for column, name in enumerate(self.names):
            for row in self.rows:
                tags = name.tags + tuple(zip(self.tag_keys, row[:width]))
                yield Reading(MetricName(name.domain, name.type, name.name, tags), self.kind, row[width + column])


Item = Reading | Table
Source = Callable[[], Iterable[Item]]


class Histogram:
    """Fixed-bucket histogram: observe() costs one C bisect and two additions.

    Counts are kept per bucket (not cumulative), so an observation touches one slot;
    the exposition makes them cumulative. The count is the sum of the buckets.
    """

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]):
        if list(bounds) != sorted(set(bounds)):
            raise ValueError(f"histogram bounds must rise strictly: {bounds}")
        self.bounds = tuple(float(b) for b in bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # bisect_left: a value equal to a bound falls in that bound's bucket (le="bound").
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def value(self) -> HistogramValue:
        return HistogramValue(self.bounds, tuple(self.counts), self.sum)


class Summary:
    """A count and a sum: what a rate of time spent needs, at two additions."""

    __slots__ = ("count", "sum")

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value

    def value(self) -> SummaryValue:
        return SummaryValue(self.count, self.sum)


class Meter:
    """A single counting metric, for code that has no slotted stats object of its own."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def mark(self, n: int = 1) -> None:
        self.count += n


# Latency buckets in milliseconds: sub-millisecond for local produce and metadata, up to
# the 30 s request timeouts; fetch long polls (500 ms by default) land in the middle.
LATENCY_BUCKETS_MS: tuple[float, ...] = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500,
                                         1000, 2500, 5000, 10000, 30000)


class MetricsRegistry:
    """The broker's metrics as sources read at scrape time.

    Registering is cheap and happens at start-up; `readings()` walks every source and
    is the only place gauges run. A source that raises is logged and skipped, so one
    broken gauge never takes the whole endpoint down.
    """

    def __init__(self) -> None:
        self._sources: list[tuple[str, Source]] = []

    def add_source(self, source: Source, description: str = "") -> None:
        """A callable yielding readings at scrape time (a family over topics, partitions...)."""
        self._sources.append((description or getattr(source, "__name__", "source"), source))

    def gauge(self, name: MetricName, read: Callable[[], float]) -> None:
        """A gauge: `read` is called at scrape time and must only read memory."""
        self.add_source(lambda: (Reading(name, Kind.GAUGE, read()),), name.mbean)

    def meter(self, name: MetricName, meter: Meter | None = None) -> Meter:
        """A meter registered on its own; returns it for the code that marks it."""
        meter = meter if meter is not None else Meter()
        self.add_source(lambda: (Reading(name, Kind.METER, meter.count),), name.mbean)
        return meter

    def histogram(self, name: MetricName, histogram: Histogram) -> Histogram:
        self.add_source(lambda: (Reading(name, Kind.HISTOGRAM, histogram.value()),), name.mbean)
        return histogram

    def readings(self) -> Iterator[Item]:
        """Every source's readings and tables, read now (on the reactor, in the broker)."""
        for description, source in self._sources:
            try:
                found = list(source())
            except Exception:
                log.exception("Metric source %s failed; skipped in this scrape", description)
                continue
            yield from found

    def snapshot(self) -> dict[str, float | HistogramValue | SummaryValue]:
        """mbean name -> value: what tests and tools read without the HTTP endpoint."""
        return {r.name.mbean: r.value for r in expand(self.readings())}


def expand(items: Iterable[Item]) -> Iterator[Reading]:
    """Readings, with tables spelled out series by series."""
    for item in items:
        if isinstance(item, Table):
            yield from item.readings()
        else:
            yield item
