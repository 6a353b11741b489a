"""Log.append against raw sequential writes of the same bytes, side by side in one run.

    python tests/bench/bench_log_append.py [--dir /dev/shm] [--batch-size 16384]
                                            [--batches 2048] [--reps 9] [--compare-with DIR]

Both sides write the same pre-built v2 batches, one write per batch, to a fresh file
in the same directory. The log side does what a leader does on produce: check each
batch's header and CRC-32C, assign its base offset and leader epoch (a patched copy of
the first 21 bytes written before the untouched rest, so the batch is not copied),
append, and keep the offset and time indexes. Neither side fsyncs (Kafka's default
flush policy leaves that to the OS). Repetitions alternate in rotating order (raw, log,
log, raw, ...) so machine noise hits both alike; medians are reported. The target is a
ratio >= 0.6. With --compare-with, another checkout's Log (e.g. a git worktree of an
older commit) is imported next to this one's and runs as a third case in the same
rotation, so a before/after comparison shares the run's noise.
"""
from __future__ import annotations

import os
import shutil
import struct
import sys
import tempfile
import time

from crc32c import crc32c

try:
    from . import harness          # collected by pytest as tests.bench.bench_log_append
except ImportError:
    import harness                 # python tests/bench/bench_log_append.py

TS = 1_600_000_000_000


def build_batch(size: int, records: int = 16) -> bytes:
    """A v2 batch of exactly `size` bytes; storage never looks inside the records."""
    body = os.urandom(size - 61)
    after_crc = struct.pack(">hiqqqhii", 0, records - 1, TS, TS, -1, -1, -1, records) + body
    return struct.pack(">qiibI", 0, size - 12, -1, 2, crc32c(after_crc)) + after_crc


def run_raw(directory: str, batches: list[bytes]) -> float:
    path = os.path.join(directory, "raw.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    write = os.write
    start = time.perf_counter()
    for batch in batches:
        write(fd, batch)
    elapsed = time.perf_counter() - start
    os.close(fd)
    os.unlink(path)
    return elapsed


def _kafkalike_modules() -> dict:
    return {name: module for name, module in sys.modules.items()
            if name == "kafkalike" or name.startswith("kafkalike.")}


def load_log(checkout: str | None = None) -> tuple[type, type]:
    """(Log, LogConfig) of this checkout, or of another one imported beside it.

    The other checkout's modules are imported under the usual names and then set aside,
    so both versions live in one process; this checkout's stay what `import` finds.
    """
    from kafkalike.storage.config import LogConfig
    from kafkalike.storage.log import Log
    if checkout is None:
        return Log, LogConfig
    ours = _kafkalike_modules()
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, os.path.abspath(checkout))
    try:
        from kafkalike.storage.config import LogConfig as OtherConfig
        from kafkalike.storage.log import Log as OtherLog
    finally:
        sys.path.remove(os.path.abspath(checkout))
        for name in _kafkalike_modules():
            del sys.modules[name]
        sys.modules.update(ours)
    return OtherLog, OtherConfig


def run_log(directory: str, batches: list[bytes], classes: tuple[type, type] | None = None) -> float:
    Log, LogConfig = classes or load_log()
    path = os.path.join(directory, "bench-0")
    log = Log(path, LogConfig(), clock=lambda: TS)
    append = log.append
    start = time.perf_counter()
    for batch in batches:
        append(batch, leader_epoch=3, now_ms=TS)
    elapsed = time.perf_counter() - start
    assert log.log_end_offset == 16 * len(batches)
    log.close()
    shutil.rmtree(path)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=9, compare=True,
                                dir_help="where both files go (default /dev/shm)")
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--batches", type=int, default=2048)
    args = parser.parse_args(argv)

    work = tempfile.mkdtemp(prefix="kafkalike-bench-append-", dir=args.dir)
    try:
        batches = [build_batch(args.batch_size) for _ in range(args.batches)]
        total_mb = args.batch_size * args.batches / 1e6
        runs = {"raw": lambda: run_raw(work, batches)}
        this = load_log()
        runs["log"] = lambda: run_log(work, batches, this)
        if args.compare_with:
            base = load_log(args.compare_with)
            runs["base"] = lambda: run_log(work, batches, base)
        for run in runs.values():  # warm-up every path
            run()
        times: dict[str, list[float]] = {side: [] for side in runs}
        harness.interleave(args.reps, list(runs), lambda side: times[side].append(runs[side]()))
        rate = {side: total_mb / harness.median(times[side]) for side in runs}
        print(f"dir {args.dir}: {args.batches} batches of {args.batch_size} bytes "
              f"({total_mb:.1f} MB), {args.reps} interleaved reps, medians")
        print(f"raw os.write   {rate['raw']:8.1f} MB/s")
        print(f"Log.append     {rate['log']:8.1f} MB/s")
        if "base" in rate:
            print(f"base Log.append{rate['base']:8.1f} MB/s  ({args.compare_with})")
            print(f"base ratio     {rate['base'] / rate['raw']:8.2f}")
        print(f"ratio          {rate['log'] / rate['raw']:8.2f}  (target >= 0.60)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


@harness.bench_test
def test_log_append_bench_short() -> None:
    assert main(["--batches", "64", "--reps", "3"]) == 0


@harness.bench_test
def test_log_append_bench_compare_with_this_checkout() -> None:
    assert main(["--batches", "64", "--reps", "3", "--compare-with", str(harness.ROOT)]) == 0


if __name__ == "__main__":
    sys.exit(main())
