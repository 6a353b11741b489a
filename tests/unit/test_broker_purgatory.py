"""Delayed operations complete on a watched change or on their timer, exactly once."""
from __future__ import annotations

from twisted.internet.task import Clock

from kafkalike.broker.purgatory import DelayedOperation, Purgatory


class WaitFor(DelayedOperation):
    def __init__(self, timeout_ms, state):
        super().__init__(timeout_ms)
        self.state = state
        self.completions = 0
        self.expired = False

    def try_complete(self):
        return self.state["ready"] and self.force_complete()

    def on_expiration(self):
        self.expired = True

    def on_complete(self):
        self.completions += 1
        self.deferred.callback(self.state["ready"])


def test_completes_when_a_watched_key_changes():
    clock = Clock()
    p = Purgatory("Fetch", clock)
    state = {"ready": False}
    op = WaitFor(500, state)
    results = []
    p.try_complete_else_watch(op, [("t", 0), ("t", 1)]).addCallback(results.append)
    assert results == [] and p.watched() == 2
    assert p.check_and_complete(("t", 0)) == 0
    state["ready"] = True
    assert p.check_and_complete(("t", 1)) == 1
    assert results == [True] and not op.expired
    clock.advance(1)                     # the timer was cancelled: no second completion
    assert op.completions == 1
    p.check_and_complete(("t", 0))       # stale watcher entries are dropped
    assert p.watched() == 0


def test_expires_after_its_timeout():
    clock = Clock()
    p = Purgatory("Produce", clock)
    op = WaitFor(300, {"ready": False})
    results = []
    p.try_complete_else_watch(op, ["k"]).addCallback(results.append)
    clock.advance(0.299)
    assert results == []
    clock.advance(0.002)
    assert results == [False] and op.expired and op.completions == 1


def test_immediately_completable_is_never_watched():
    p = Purgatory("Fetch", Clock())
    op = WaitFor(1000, {"ready": True})
    results = []
    p.try_complete_else_watch(op, ["k"]).addCallback(results.append)
    assert results == [True] and p.watched() == 0
