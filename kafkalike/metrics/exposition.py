"""The registry's readings in Prometheus's exposition formats, by the Prometheus client.

`prometheus_client` (the Prometheus project's maintained Python client) writes the text
format and OpenMetrics, negotiated from the scraper's Accept header; kafkalike only
turns its readings into metric families named as the JMX exporter names them
(`naming.py`). Readings of one family (MessagesIn for all topics and for each topic)
become samples of one family, as the exporter exposes them.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import CollectorRegistry

from kafkalike.metrics import naming
from kafkalike.metrics.core import HistogramValue, Item, Kind, MetricsRegistry, SummaryValue, Table


def families(items: Iterable[Item]) -> Iterator[Metric]:
    """Group readings (and tables' rows) into Prometheus metric families, in first-seen
    order."""
    found: dict[str, Metric] = {}

    def family_of(name, kind: Kind) -> tuple[str, Metric | None]:
        family = naming.family_name(name, kind)
        metric = found.get(family)
        type_ = naming.prometheus_type(name, kind)
        if metric is None:
            metric = found[family] = Metric(family, naming.help_text(name, kind), type_)
        elif metric.type != type_:
            return family, None   # the same name as another kind would make the exposition invalid
        return family, metric

    for item in items:
        if isinstance(item, Table):
            _add_table(item, family_of)
            continue
        family, metric = family_of(item.name, item.kind)
        if metric is not None:
            _add_samples(metric, family, naming.labels(item.name), item.kind, item.value)
    return iter(found.values())


def _add_table(table: Table, family_of) -> None:
    width = len(table.tag_keys)
    keys = [naming.safe_name(k) for k in table.tag_keys]
    kind = table.kind
    for column, name in enumerate(table.names):
        family, metric = family_of(name, kind)
        if metric is None:
            continue
        base = naming.labels(name)
        for row in table.rows:
            labels = dict(base)
            labels.update(zip(keys, row[:width]))
            _add_samples(metric, family, labels, kind, row[width + column])


def _add_samples(metric: Metric, family: str, labels: dict[str, str], kind: Kind, value) -> None:
    if kind is Kind.METER:
        metric.add_sample(family if metric.type == "unknown" else family + "_total", labels, float(value))
    elif kind is Kind.GAUGE:
        metric.add_sample(family, labels, float(value))
    elif kind is Kind.HISTOGRAM:
        assert isinstance(value, HistogramValue)
        running = 0
        for bound, count in zip(list(value.bounds) + [float("inf")], value.counts):
            running += count
            metric.add_sample(family + "_bucket", {**labels, "le": _le(bound)}, float(running))
        metric.add_sample(family + "_count", labels, float(running))
        metric.add_sample(family + "_sum", labels, float(value.sum))
    elif kind is Kind.SUMMARY:
        assert isinstance(value, SummaryValue)
        metric.add_sample(family + "_count", labels, float(value.count))
        metric.add_sample(family + "_sum", labels, float(value.sum))


def _le(bound: float) -> str:
    """Bucket bounds as the Prometheus client writes them (`1.0`, `0.25`, `+Inf`)."""
    return "+Inf" if bound == float("inf") else repr(float(bound))


class _Fixed:
    """A collector over readings already taken."""

    def __init__(self, readings: Iterable[Item]):
        self._readings = list(readings)

    def collect(self) -> Iterator[Metric]:
        return families(self._readings)


class RegistryCollector:
    """Adapts a MetricsRegistry to the Prometheus client's collector interface: every
    collect() reads the registry anew."""

    def __init__(self, registry: MetricsRegistry):
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        return families(self.registry.readings())


def prometheus_registry(registry: MetricsRegistry) -> CollectorRegistry:
    """A Prometheus client registry reading ours at every collection (nothing is copied),
    for code that drives the Prometheus client itself."""
    out = CollectorRegistry(auto_describe=False)
    out.register(RegistryCollector(registry))
    return out


def render(readings: Iterable[Item], accept: str | None = None) -> tuple[bytes, str]:
    """(body, content type) of a scrape of these readings for a scraper that sent
    `accept`: the text format by default, OpenMetrics when the scraper asks for it.

    Touches nothing but the readings, so it may run on any thread: the endpoint takes
    the readings on the reactor and formats them on a worker thread.
    """
    encode, content_type = choose_encoder(accept or "")
    collector = CollectorRegistry(auto_describe=False)
    collector.register(_Fixed(readings))
    return encode(collector), content_type
