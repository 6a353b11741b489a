"""Replication throttles (KIP-73): Kafka's ReplicationQuotaManager, one for the leader
side and one for the follower side of this broker.

An operator moving replicas (kafka-reassign-partitions --throttle) caps the bytes per
second that replication of the *throttled* replicas may use: the rate is a broker config
(leader.replication.throttled.rate / follower.replication.throttled.rate, set live in
/config/brokers/<id>), the replicas a topic config (leader/follower.replication.throttled.
replicas: "partition:broker" pairs or "*"). A broker throttles a partition when the topic's
list names this broker for it. Replicas already in sync are never held back, so a
throttle cannot stop a healthy ISR from keeping up.

The rate is measured as Kafka's Rate sensor measures it: bytes over the last
replication.quota.window.num windows of replication.quota.window.size.seconds, the
elapsed time counted as at least all but one window, so a move may start with a burst
of about (windows - 1) x rate bytes before the cap bites, as in Kafka.
"""
from __future__ import annotations

import time
from typing import Callable

UNLIMITED = (1 << 63) - 1


class Rate:
    """Bytes per second over a ring of fixed windows (Kafka's SampledStat + Rate)."""

    def __init__(self, windows: int = 11, window_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.windows = windows
        self.window_s = window_s
        self.clock = clock
        self._samples: list[list[float]] = []     # [window start, bytes], oldest first

    def record(self, value: float) -> None:
        now = self.clock()
        self._purge(now)
        if not self._samples or now - self._samples[-1][0] >= self.window_s:
            self._samples.append([now, 0.0])
        self._samples[-1][1] += value

    def measure(self) -> float:
        now = self.clock()
        self._purge(now)
        if not self._samples:
            return 0.0
        elapsed = max(now - self._samples[0][0], (self.windows - 1) * self.window_s)
        return sum(v for _, v in self._samples) / elapsed

    def _purge(self, now: float) -> None:
        horizon = self.windows * self.window_s
        while self._samples and now - self._samples[0][0] >= horizon:
            self._samples.pop(0)


def throttled_partitions(replicas: tuple[str, ...], broker_id: int) -> set[int] | None:
    """The partitions a throttled-replicas list names for this broker; None means all ("*")."""
    if "*" in replicas:
        return None
    out = set()
    for entry in replicas:
        partition, _, broker = entry.strip().partition(":")
        if broker.strip() == str(broker_id):
            out.add(int(partition))
    return out


class ReplicationQuota:
    """One side's throttle: is a partition throttled, is the quota used up, and record.

    `limit` and `replicas` are read at each check, so dynamic config changes take effect
    on the next fetch without any notification plumbing of their own."""

    def __init__(self, broker_id: int, limit: Callable[[], int], replicas: Callable[[str], tuple[str, ...]],
                 rate: Rate | None = None) -> None:
        self.broker_id = broker_id
        self.limit = limit
        self.replicas = replicas
        self.rate = rate or Rate()

    def is_throttled(self, topic: str, partition: int) -> bool:
        listed = self.replicas(topic)
        if not listed:
            return False
        wanted = throttled_partitions(listed, self.broker_id)
        return wanted is None or partition in wanted

    def is_exceeded(self) -> bool:
        limit = self.limit()
        return limit < UNLIMITED and self.rate.measure() > limit

    def record(self, size: int) -> None:
        self.rate.record(size)
