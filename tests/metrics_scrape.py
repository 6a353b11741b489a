"""One scrape of a broker's Prometheus endpoint (kafkalike.metrics.port), parsed by
prometheus_client as a Prometheus server would parse it: the metrics and fetch-session
tests read broker state this way, as an operator's dashboards do."""
from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """One scrape of a broker's /metrics, as Prometheus parses it."""

    def __init__(self, url: str):
        with urllib.request.urlopen(url, timeout=10) as response:
            self.content_type = response.headers["Content-Type"]
            text = response.read().decode()
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.samples: dict[str, dict[frozenset, float]] = {}
        for family in self.families.values():
            for s in family.samples:
                self.samples.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value

    def value(self, name: str, default: float | None = None, **labels: str) -> float:
        found = self.samples.get(name, {}).get(frozenset(labels.items()))
        if found is None:
            if default is None:
                raise KeyError(f"{name}{labels} not in the scrape")
            return default
        return found

    def series(self, name: str) -> dict[frozenset, float]:
        return self.samples.get(name, {})
