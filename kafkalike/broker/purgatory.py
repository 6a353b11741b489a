"""Delayed operations: fetch long polls and acks=all produces wait here, not in sleeps.

Kafka's purgatory in reactor form: an operation is tried once, then watched under keys
(topic-partitions); whoever changes a partition (an append, a high watermark move)
calls check_and_complete for its key. A timer completes what nobody completed in time.
Everything runs on the reactor thread, so there are no locks.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Hashable

from twisted.internet import defer


class DelayedOperation:
    """Subclasses implement try_complete() (calling force_complete()) and on_complete()."""

    def __init__(self, timeout_ms: int):
        self.timeout_ms = timeout_ms
        self.completed = False
        self.deferred: defer.Deferred = defer.Deferred()
        self._timer = None

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Hook for expiry bookkeeping (metrics); completion still runs on_complete."""

    def force_complete(self) -> bool:
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self.on_complete()
        return True


class Purgatory:
    def __init__(self, name: str, clock):
        self.name = name
        self.clock = clock
        self._watchers: dict[Hashable, list[DelayedOperation]] = defaultdict(list)

    def try_complete_else_watch(self, op: DelayedOperation, keys: list[Hashable]) -> defer.Deferred:
        if op.try_complete():
            return op.deferred
        for key in keys:
            self._watchers[key].append(op)
        op._timer = self.clock.callLater(max(op.timeout_ms, 0) / 1000.0, self._expire, op)
        return op.deferred

    def _expire(self, op: DelayedOperation) -> None:
        if not op.completed:
            op.on_expiration()
            op.force_complete()

    def check_and_complete(self, key: Hashable) -> int:
        ops = self._watchers.get(key)
        if not ops:
            return 0
        done = 0
        remaining = []
        for op in ops:
            if op.completed:
                continue
            if op.try_complete():
                done += 1
            else:
                remaining.append(op)
        if remaining:
            self._watchers[key] = remaining
        else:
            del self._watchers[key]
        return done

    def watched(self) -> int:
        """Kafka's PurgatorySize: watch entries, an operation once per key it waits on
        (completed ones count until their key is next checked, as in Kafka until a purge)."""
        return sum(len(v) for v in self._watchers.values())

    def delayed(self) -> int:
        """Kafka's NumDelayedOperations: operations waiting, each once, however many keys
        it watches."""
        return len({id(op) for ops in self._watchers.values() for op in ops if not op.completed})

    def shutdown(self) -> None:
        """Drop what waits, answering nothing, as Kafka's purgatory shutdown does.

        Completing a waiting acks=all produce here would answer it with success for
        records no follower has yet: a broker stopping after its controlled shutdown
        (its leaderships already moved) acknowledged writes the new leader never had,
        and they were lost. The connections are closing; their clients retry."""
        for ops in list(self._watchers.values()):
            for op in ops:
                op.completed = True
                if op._timer is not None and op._timer.active():
                    op._timer.cancel()
        self._watchers.clear()
