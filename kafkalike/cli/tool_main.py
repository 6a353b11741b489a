"""How every tool's `python -m` entry ends: with main()'s status, and quietly when stdout's
reader has gone (`kafka-topics.sh --list | head -1`).

A JVM tool writes through a PrintStream that swallows a broken pipe, so piping Kafka's
tools into `head` shows no error. Python raises BrokenPipeError on the next write or at
exit; here that ends the tool with status 0 and nothing on stderr.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Callable, NoReturn, TextIO


def run_tool(main: Callable[[], int | None]) -> NoReturn:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's own flush at exit cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0
    sys.exit(code)


class JsonEvents:
    """The verifiable tools' stdout: one JSON event a line, flushed at once, from any thread.

    Like the PrintStream Kafka's tools write to, it never raises: once the reader has gone
    (a broken pipe) later events are dropped and the tool goes on to its end.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()
        self._gone = False

    def __call__(self, name: str, **fields: Any) -> None:
        line = json.dumps({"timestamp": int(time.time() * 1000), "name": name, **fields}, separators=(",", ":"))
        with self._lock:
            if self._gone:
                return
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except BrokenPipeError:
                self._gone = True
