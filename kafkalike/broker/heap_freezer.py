"""Keeps Python's full garbage collections short on a broker with many partitions.

A broker's heap is mostly long-lived: each partition's log, segments, indexes and
replica state live as long as the partition, and with 10,000 partitions that is
millions of objects. CPython's cyclic collector walks all of them in every full
(generation 2) collection, which stopped each broker's reactor for 0.3-0.45 s in the
middle of a 10,000-partition rebalance (docs/benchmarks.md, "Scaling"). The JVM's
collectors do not rescan an old generation that did not change; `gc.freeze()` is
CPython's way to say the same: objects alive now move to a permanent generation that
collections skip.

So after a full collection that took long (its survivors are the long-lived heap),
the freezer freezes what survived; later full collections scan only what came since,
until the heap has grown enough for another long one. Frozen objects are still freed
by reference counting; only reference cycles among them wait. Those are what a deleted
partition may leave, so deleting logs thaws the heap (`thaw`), and the next long full
collection reclaims them and freezes the rest again.
"""
from __future__ import annotations

import gc
import logging
import time
from typing import Any, Callable

log = logging.getLogger("kafka.server.KafkaServer")

LONG_FULL_COLLECTION_S = 0.05   # a full collection this long is worth not repeating


class HeapFreezer:
    """Installed once per broker process; `callFromThread` runs the freeze on the reactor,
    outside the collector (collections run in whichever thread allocated)."""

    def __init__(self, call_from_thread: Callable[..., Any], long_collection_s: float = LONG_FULL_COLLECTION_S,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._call = call_from_thread
        self._long = long_collection_s
        self._clock = clock
        self._started: float | None = None
        self._scheduled = False

    def install(self) -> None:
        if self._on_collection not in gc.callbacks:
            gc.callbacks.append(self._on_collection)

    def uninstall(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)

    def _on_collection(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = self._clock()
            return
        if self._started is None:
            return
        took = self._clock() - self._started
        self._started = None
        if took >= self._long and not self._scheduled:
            self._scheduled = True
            self._call(self._freeze, took)

    def _freeze(self, took: float) -> None:
        self._scheduled = False
        before = gc.get_freeze_count()
        gc.freeze()
        log.info("Froze %d long-lived objects after a full garbage collection of %d ms; later full "
                 "collections skip them (%d frozen in all)", gc.get_freeze_count() - before, took * 1000,
                 gc.get_freeze_count())


def thaw() -> None:
    """Give frozen objects back to the collector (after logs were deleted, their cycles)."""
    if gc.get_freeze_count():
        gc.unfreeze()
