"""Waiting for what a test sees only eventually (a leader elected, an ISR grown, a line logged)."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, what: str = "condition",
               interval: float = 0.1) -> T:
    """Poll until `predicate()` is truthy and return its value; AssertionError naming `what`
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
