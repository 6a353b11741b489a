"""Cost of receiving one large frame in 64 KiB reads: kafkalike's framing vs Twisted's.

Twisted's Int32StringReceiver re-joins the buffered part of a frame on every read
(quadratic in the frame size); kafkalike.common.framing fills one buffer sized from the
prefix (linear). Run: python tests/bench/bench_framing.py
"""
from __future__ import annotations

import sys
import time

import pytest
from twisted.internet.testing import StringTransport
from twisted.protocols.basic import Int32StringReceiver

from kafkalike.common.framing import SizePrefixedReceiver

pytestmark = pytest.mark.bench
READ = 64 * 1024


class Ours(SizePrefixedReceiver):
    MAX_LENGTH = (1 << 31) - 1

    def stringReceived(self, frame: bytes) -> None:
        self.got = len(frame)


class Twisteds(Int32StringReceiver):
    MAX_LENGTH = (1 << 31) - 1

    def stringReceived(self, frame: bytes) -> None:
        self.got = len(frame)


def receive_seconds(cls, size: int) -> float:
    receiver = cls()
    receiver.makeConnection(StringTransport())
    data = size.to_bytes(4, "big") + bytes(size)
    view = memoryview(data)
    start = time.perf_counter()
    for i in range(0, len(data), READ):
        receiver.dataReceived(bytes(view[i:i + READ]))
    elapsed = time.perf_counter() - start
    assert receiver.got == size
    return elapsed


def run(sizes_mib=(1, 4, 10, 25)) -> list[tuple[int, float, float]]:
    rows = []
    for mib in sizes_mib:
        size = mib << 20
        ours = receive_seconds(Ours, size)
        theirs = receive_seconds(Twisteds, size) if mib <= 25 else float("nan")
        rows.append((mib, ours, theirs))
    return rows


def test_framing_cost_is_linear_in_the_frame_size():
    rows = run((1, 10))
    per_mib = [ours / mib for mib, ours, _ in rows]
    # Linear: the cost per MiB of a 10 MiB frame is close to that of a 1 MiB frame.
    assert per_mib[1] < 3 * per_mib[0] + 0.002, rows


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or (1, 4, 10, 25, 100)
    print(f"{'frame MiB':>9} {'kafkalike s':>12} {'ms/MiB':>8} {'Int32StringReceiver s':>22} {'ratio':>7}")
    for mib, ours, theirs in run(sizes):
        print(f"{mib:>9} {ours:>12.4f} {ours / mib * 1000:>8.2f} {theirs:>22.3f} {theirs / ours:>7.1f}")
