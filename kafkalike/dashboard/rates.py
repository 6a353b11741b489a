"""Rates over the last minutes from counters sampled at each look.

A counter is a series (`label<TAB>source`: a topic's messages-in on one broker, a
partition's log end offset, a group's committed offset on one partition) read at each
look. A rate between two looks is the counter's increase over the time between them,
summed by label over the sources present in both looks: a broker that stopped answering
(or a partition whose leader is gone) drops out of that interval rather than counting as
a fall to zero, and a counter that went down (a restarted broker's meters) is left out.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

SEP = "\t"


@dataclass(frozen=True)
class Sample:
    at: float
    values: dict[str, float]


class History:
    """Samples of one set of counters within the last `window` seconds."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._samples: deque[Sample] = deque()

    def add(self, at: float, values: dict[str, float]) -> None:
        self._samples.append(Sample(at, dict(values)))
        while self._samples and self._samples[0].at < at - self.window:
            self._samples.popleft()

    def rates(self) -> dict[str, list[tuple[float, float]]]:
        """label -> [(time at the interval's end, per-second rate), ...], oldest first."""
        out: dict[str, list[tuple[float, float]]] = {}
        samples = list(self._samples)
        for before, after in zip(samples, samples[1:]):
            elapsed = after.at - before.at
            if elapsed <= 0:
                continue
            sums: dict[str, float] = {}
            for key, value in after.values.items():
                old = before.values.get(key)
                if old is None or value < old:
                    continue
                label = key.rpartition(SEP)[0] if SEP in key else key
                sums[label] = sums.get(label, 0.0) + (value - old) / elapsed
            labels = set(sums) | {(k.rpartition(SEP)[0] if SEP in k else k) for k in before.values}
            for label in labels:
                out.setdefault(label, []).append((after.at, sums.get(label, 0.0)))
        return out

    def latest(self) -> dict[str, float]:
        """Each label's rate over the last interval."""
        return {label: points[-1][1] for label, points in self.rates().items() if points}
