"""How idle a broker's reactor is: Kafka's two idle metrics, from one source.

Kafka 2.8 measures idleness in two thread pools: its request handler threads (time spent
waiting on the request queue, the meter
kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent) and its
network processor threads (time spent waiting in select, averaged into the gauge
kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent). A kafkalike broker
does both jobs on one thread, its reactor, and that thread is idle exactly while it waits
in its poller (epoll_wait): the time spent inside the poller's poll() call is the idle
time of both, and both metrics are read from it.

- RequestHandlerAvgIdlePercent is a meter, as in Kafka: its count is idle nanoseconds
  (Kafka marks idle nanoseconds divided by the number of handler threads; here there is
  one), so `rate(count) / 1e9` is the idle share, 0 to 1.
- NetworkProcessorAvgIdlePercent is a gauge, as in Kafka: the idle share (0 to 1) as a
  one-minute exponentially weighted average ticked every 5 seconds, which is what
  Kafka's gauge averages (its processors' one-minute rates).

The poller is wrapped, not replaced: a poll() costs one Python call and two clock
reads more, once per reactor turn (a turn handles whatever requests have arrived). Only
the epoll reactor (Twisted's default on Linux) is measured; with another reactor the
two metrics are absent.
"""
from __future__ import annotations

import math
import select
import time
from typing import Iterator

from twisted.internet.task import LoopingCall

from kafkalike.metrics.core import Kind, MetricName, Reading

TICK_S = 5.0                 # Yammer's EWMA tick
WINDOW_S = 60.0              # the one-minute average
_EPOLL = getattr(select, "epoll", ())   # the poller of Twisted's default reactor on Linux
HANDLER_IDLE = MetricName("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent")
NETWORK_IDLE = MetricName("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent")


class TimedPoller:
    """A poller whose poll() adds the time it waited to `idle_ns`; everything else is
    the wrapped poller's. A poll() that raises (EINTR) adds nothing."""

    __slots__ = ("wrapped", "idle_ns", "_poll", "_clock")

    def __init__(self, poller, clock=time.monotonic_ns) -> None:
        self.wrapped = poller
        self.idle_ns = 0
        self._poll = poller.poll
        self._clock = clock

    def poll(self, timeout=-1, maxevents=-1):
        clock = self._clock
        start = clock()
        events = self._poll(timeout, maxevents)
        self.idle_ns += clock() - start
        return events

    def __getattr__(self, name: str):
        return getattr(self.wrapped, name)


class ReactorIdle:
    """The reactor's idle time, and its one-minute average, for the two metrics."""

    def __init__(self, reactor, clock=time.monotonic_ns) -> None:
        self.reactor = reactor
        self._clock = clock
        poller = getattr(reactor, "_poller", None)
        self.poller = TimedPoller(poller, clock) if isinstance(poller, _EPOLL) else None
        self._since = self._last_at = clock()
        self._last_idle = 0
        self.one_minute: float | None = None
        self._loop: LoopingCall | None = None

    @property
    def measured(self) -> bool:
        return self.poller is not None

    @property
    def idle_ns(self) -> int:
        return self.poller.idle_ns if self.poller is not None else 0

    def start(self) -> None:
        """Wrap the reactor's poller and tick the average every TICK_S seconds."""
        if self.poller is None or self._loop is not None:
            return
        self.reactor._poller = self.poller
        self._since = self._last_at = self._clock()
        self._loop = LoopingCall(self.tick)
        self._loop.clock = self.reactor
        self._loop.start(TICK_S, now=False)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self.poller is not None and getattr(self.reactor, "_poller", None) is self.poller:
            self.reactor._poller = self.poller.wrapped

    def tick(self) -> None:
        """Fold the idle share since the last tick into the one-minute average."""
        now, idle = self._clock(), self.idle_ns
        elapsed = now - self._last_at
        if elapsed <= 0:
            return
        share = min(1.0, max(0.0, (idle - self._last_idle) / elapsed))
        self._last_at, self._last_idle = now, idle
        if self.one_minute is None:
            self.one_minute = share
        else:
            self.one_minute += (1.0 - math.exp(-elapsed / (WINDOW_S * 1e9))) * (share - self.one_minute)

    def average(self) -> float:
        """The one-minute average; before the first tick, the share since the start."""
        if self.one_minute is not None:
            return self.one_minute
        elapsed = self._clock() - self._since
        return min(1.0, self.idle_ns / elapsed) if elapsed > 0 else 1.0

    def readings(self) -> Iterator[Reading]:
        if self.poller is None:
            return
        yield Reading(HANDLER_IDLE, Kind.METER, self.idle_ns)
        yield Reading(NETWORK_IDLE, Kind.GAUGE, self.average())
