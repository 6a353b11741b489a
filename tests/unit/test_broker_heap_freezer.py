"""The broker's heap freezer: a long full collection freezes its survivors; deleting logs thaws them."""
from __future__ import annotations

import gc

import pytest

from kafkalike.broker.heap_freezer import HeapFreezer, thaw


@pytest.fixture
def freezer():
    calls = []
    f = HeapFreezer(lambda fn, *args: calls.append((fn, args)), long_collection_s=0.0)
    # Only the test's own collections: an automatic full one (allocations can start one at
    # any time) would count as long too, with the threshold at 0.
    was_enabled = gc.isenabled()
    gc.disable()
    f.install()
    yield f, calls
    f.uninstall()
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def test_a_long_full_collection_freezes_the_survivors_once_the_reactor_runs(freezer):
    f, calls = freezer
    long_lived = [[i] for i in range(10_000)]       # a heap worth freezing
    gc.collect(1)
    assert calls == []                               # only full collections count
    gc.collect()
    gc.collect()
    assert len(calls) == 1                           # one freeze waits for the reactor, however many
    assert gc.get_freeze_count() == 0                # not inside the collector
    fn, args = calls.pop()
    fn(*args)
    assert gc.get_freeze_count() >= len(long_lived)
    gc.collect()
    assert len(calls) == 1                           # the next long one is frozen again


def test_a_short_full_collection_changes_nothing():
    calls = []
    f = HeapFreezer(lambda fn, *args: calls.append(fn), long_collection_s=3600)
    f.install()
    try:
        gc.collect()
    finally:
        f.uninstall()
    assert calls == [] and gc.get_freeze_count() == 0


def test_thaw_gives_frozen_cycles_back_to_the_collector():
    class Node:
        pass

    cycle = Node()
    cycle.me = cycle
    gc.freeze()
    try:
        del cycle
        assert not any(isinstance(o, Node) for o in gc.get_objects())   # frozen: out of the collector's sight
        gc.collect()
        assert gc.get_freeze_count() > 0
        thaw()
        assert gc.get_freeze_count() == 0
        assert gc.collect() >= 1                     # the cycle is reclaimed now
    finally:
        gc.unfreeze()
