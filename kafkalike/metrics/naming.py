"""JMX names to the names Prometheus's JMX exporter gives them with its Kafka rules.

Kafka operators scrape brokers through the Prometheus JMX exporter (a Java agent) with
the rules its project ships for Kafka (`example_configs/kafka-2_0_0.yml`), and their
dashboards and alerts use the names those rules make. kafkalike serves the same names
itself, so those dashboards work unchanged. The rules, as this module applies them
(`lowercaseOutputName: true`; label names keep their case, values are untouched):

- a meter, `kafka.X<type=T, name=NPerSec, k=v...><>Count` ->
  counter `kafka_X_T_N_total{k="v"}` (the `PerSec` suffix and anything after it dropped);
  a meter whose name has no `PerSec` (`RequestHandlerAvgIdlePercent`) falls to the
  exporter's generic `<>Count` rule instead: `kafka_X_T_N_count`, served untyped (a
  Prometheus counter's samples must end in `_total`; the series is the exporter's);
- a gauge, `kafka.X<type=T, name=N, k=v...><>Value` -> gauge `kafka_X_T_N{k="v"}`;
- a histogram or timer, `...><>Count` -> `kafka_X_T_N_count{...}`. The exporter also
  turns the Yammer percentiles into gauges `kafka_X_T_N{quantile="0.99"}`; kafkalike
  serves a real Prometheus histogram instead (`_bucket{le=...}`, `_count`, `_sum`), whose
  `_count` has the exporter's name and whose quantiles PromQL computes
  (`histogram_quantile`) over any window and across brokers;
- domains with dots (`kafka.coordinator.group`) have each dot made an underscore, as
  the exporter's `kafka.coordinator.(\\w+)` rule does.

Names are sanitised the exporter's way: characters other than letters, digits, `_` and
`:` become `_`, and runs of `_` collapse to one.
"""
from __future__ import annotations

import functools
import re

from kafkalike.metrics.core import Kind, MetricName

_UNSAFE = re.compile(r"[^a-zA-Z0-9:_]")
_RUNS = re.compile(r"_+")
_PER_SEC = re.compile(r"^(.+)PerSec\w*$")


@functools.lru_cache(maxsize=4096)
def safe_name(text: str) -> str:
    return _RUNS.sub("_", _UNSAFE.sub("_", text))


@functools.lru_cache(maxsize=4096)
def _family(domain: str, type_: str, short: str, kind: Kind) -> str:
    if kind is Kind.METER:
        match = _PER_SEC.match(short)
        short = match.group(1) if match else short + "_count"
    return safe_name(f"{domain}_{type_}_{short}".replace(".", "_")).lower()


def is_count(name: MetricName, kind: Kind) -> bool:
    """A meter the exporter names by its `<>Count` rule (no `PerSec` in its name): one
    untyped sample named as its family, `..._count`."""
    return kind is Kind.METER and _PER_SEC.match(name.name) is None


def prometheus_type(name: MetricName, kind: Kind) -> str:
    """The family's Prometheus type."""
    return "unknown" if is_count(name, kind) else kind.value


def family_name(name: MetricName, kind: Kind) -> str:
    """The metric family's name: for meters without the `_total` their samples carry.
    Cached per (domain, type, name, kind): a scrape names thousands of series of a few
    dozen families."""
    return _family(name.domain, name.type, name.name, kind)


def sample_name(name: MetricName, kind: Kind) -> str:
    """The name a single-valued sample is exposed under (`..._total` for meters)."""
    family = family_name(name, kind)
    return family + "_total" if kind is Kind.METER and not is_count(name, kind) else family


def labels(name: MetricName) -> dict[str, str]:
    """The tags as labels, names as Kafka spells them (`delayedOperation`, `clientId`)."""
    return {safe_name(k): v for k, v in name.tags}


def jmx_attribute(kind: Kind) -> str:
    """The JMX attribute the exporter reads for this kind (its `<>Count` / `<>Value`)."""
    return "Value" if kind is Kind.GAUGE else "Count"


def help_text(name: MetricName, kind: Kind) -> str:
    """A family's help line: the JMX metric it comes from (without tag values, which
    vary across the family's samples) and the attribute the exporter reads."""
    return f"{name.domain}:type={name.type},name={name.name} (JMX attribute {jmx_attribute(kind)})"
