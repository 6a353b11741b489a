"""Answers leave the coordinator only between changes, never in the middle of one.

Firing a request's Deferred sends its response, and the connection may then hand
its next queued request straight back into the coordinator. So answers produced
while a group changes are queued, and delivered when the outermost way in (a
request, a timer, an append completing) returns.
"""
from __future__ import annotations

import functools
from collections import deque
from typing import Any, Callable

from twisted.internet import defer


class Deliveries:
    def __init__(self) -> None:
        self._outbox: deque = deque()
        self._depth = 0

    def _drain(self) -> None:
        while self._outbox:
            fire, value = self._outbox.popleft()
            fire(value)

    def _responder(self, d: defer.Deferred) -> Callable[[Any], None]:
        """A callback that answers `d` once the current change is complete."""
        return lambda value: self._outbox.append((d.callback, value))

    def _guarded(self, fn: Callable) -> Callable:
        """`fn` as a way in, for callbacks that arrive later (appends, loads)."""
        def run(*args):
            self._depth += 1
            try:
                return fn(*args)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._drain()
        return run


def entry(fn):
    """Marks a method as a way into the coordinator (see the module docstring)."""
    @functools.wraps(fn)
    def run(self, *args, **kwargs):
        self._depth += 1
        try:
            return fn(self, *args, **kwargs)
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._drain()
    return run
