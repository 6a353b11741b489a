"""Cost of receiving one large frame in 64 KiB reads: kafkalike's framing vs Twisted's.

Twisted's Int32StringReceiver re-joins the buffered part of a frame on every read
(quadratic in the frame size); kafkalike.common.framing fills one buffer sized from the
prefix (linear). Run: python tests/bench/bench_framing.py [--reps 1] [SIZE_MIB ...]
"""
from __future__ import annotations

import sys
import time

from twisted.internet.testing import StringTransport
from twisted.protocols.basic import Int32StringReceiver

try:
    from . import harness          # collected by pytest as tests.bench.bench_framing
except ImportError:
    import harness                 # python tests/bench/bench_framing.py

from kafkalike.common.framing import SizePrefixedReceiver  # noqa: E402  (harness puts the checkout on sys.path)

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


@harness.bench_test
def test_framing_cost_is_linear_in_the_frame_size():
    rows = run((1, 10))
    per_mib = [ours / mib for mib, ours, _ in rows]
    # Linear: the cost per MiB of a 10 MiB frame is close to that of a 1 MiB frame.
    assert per_mib[1] < 3 * per_mib[0] + 0.002, rows


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=1, scratch=False)
    parser.add_argument("sizes", nargs="*", type=int, default=[1, 4, 10, 25, 100], help="frame sizes in MiB")
    args = parser.parse_args(argv)
    table = harness.Table(harness.Column("frame MiB", 9), harness.Column("kafkalike s", 12, ".4f", gap=1),
                          harness.Column("ms/MiB", 8, ".2f", gap=1),
                          harness.Column("Int32StringReceiver s", 22, ".3f", gap=1),
                          harness.Column("ratio", 7, ".1f", gap=1))
    print(table.header())
    for _ in range(args.reps):
        for mib, ours, theirs in run(tuple(args.sizes)):
            print(table.row(mib, ours, ours / mib * 1000, theirs, theirs / ours))
    return 0


if __name__ == "__main__":
    sys.exit(main())
