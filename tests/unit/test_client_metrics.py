"""kafkalike.client.metrics' sensors behave as Java's Metrics: windowed avg/max, Rate's
window, cumulative totals, and MetricName equality without the description."""
from __future__ import annotations

import math

import pytest

from kafkalike.client import metrics as client_metrics
from kafkalike.client.metrics import MetricName, Metrics


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(client_metrics, "_monotonic", lambda: now[0])
    return now


def test_windowed_stats_rate_and_totals(clock):
    m = Metrics("c1", window_ms=30000, samples=2)
    sensor = m.sensor("s")[0]
    for kind in ("avg", "max", "rate", "total", "count"):
        m.add_stat(sensor, kind, m.name(f"x-{kind}", "g"))
    assert math.isnan(m.value("x-avg", "g")) and math.isnan(m.value("x-max", "g"))
    sensor.record(10, clock[0])
    sensor.record(20, clock[0])
    clock[0] += 1
    assert m.value("x-avg", "g") == 15 and m.value("x-max", "g") == 20
    # Java's Rate: at least (samples - 1) full windows: 30 over 1 s + 30 s.
    assert m.value("x-rate", "g") == pytest.approx(30 / 31)
    clock[0] += 40                      # a new sample; the first still counts (2 x 30 s)
    sensor.record(40, clock[0])
    assert m.value("x-avg", "g") == pytest.approx(70 / 3) and m.value("x-max", "g") == 40
    clock[0] += 61                      # every sample older than 2 x 30 s: forgotten
    assert math.isnan(m.value("x-avg", "g")) and m.value("x-rate", "g") == 0
    assert m.value("x-total", "g") == 70 and m.value("x-count", "g") == 3


def test_columns_share_one_recording(clock):
    m = Metrics("c1")
    sensor = m.sensor("batches", columns=2)[0]
    m.add_stat(sensor, "avg", m.name("a", "g"), 0)
    m.add_stat(sensor, "max", m.name("b", "g"), 1)
    m.add_stat(sensor, "count", m.name("n", "g"))
    sensor.record_all(clock[0], 4, 100)
    sensor.record_all(clock[0], 6, 50)
    assert (m.value("a", "g"), m.value("b", "g"), m.value("n", "g")) == (5, 100, 2)


def test_metric_names_are_java_s():
    a = MetricName("record-send-rate", "producer-metrics", "one text", (("client-id", "p"),))
    b = MetricName("record-send-rate", "producer-metrics", "another", (("client-id", "p"),))
    assert a == b and hash(a) == hash(b) and a.tags_dict == {"client-id": "p"}
    assert str(a) == ("MetricName [name=record-send-rate, group=producer-metrics, description=one text, "
                      "tags={client-id=p}]")
