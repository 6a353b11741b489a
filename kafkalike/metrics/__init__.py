"""Kafka's metrics under their JMX names, served in Prometheus's format (docs/metrics.md).

A floor package: it imports nothing of kafkalike, so the broker, the controller and the
coordinator can all count into it. `core` (metric kinds, registry) and `stats` (what hot
paths increment) load no third-party code; `exposition` (the Prometheus client) and
`http` (Twisted web) are imported only by whoever serves the endpoint.
"""
from kafkalike.metrics.core import (
    LATENCY_BUCKETS_MS,
    Histogram,
    HistogramValue,
    Item,
    Kind,
    Meter,
    MetricName,
    MetricsRegistry,
    Reading,
    Summary,
    SummaryValue,
    Table,
    expand,
)
from kafkalike.metrics.stats import ControllerStats, ReplicaStats, RequestMetrics

__all__ = [
    "LATENCY_BUCKETS_MS", "ControllerStats", "Histogram", "HistogramValue", "Item", "Kind", "Meter", "MetricName",
    "MetricsRegistry", "Reading", "ReplicaStats", "RequestMetrics", "Summary", "SummaryValue", "Table",
    "expand",
]
