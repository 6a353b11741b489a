"""Log.append against raw sequential writes of the same bytes, side by side in one run.

    python tests/bench/bench_log_append.py [--dir /dev/shm] [--batch-size 16384]
                                            [--batches 2048] [--reps 9]

Both sides write the same pre-built v2 batches, one write per batch, to a fresh file
in the same directory. The log side does what a leader does on produce: copy the
batch once, check its header and CRC-32C, patch its base offset and leader epoch,
append, and keep the offset and time indexes. Neither side fsyncs (Kafka's default
flush policy leaves that to the OS). Repetitions alternate in rotating order (raw, log,
log, raw, ...) so machine noise hits both alike; medians are reported. The target is a ratio >= 0.6.
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


def run_log(directory: str, batches: list[bytes]) -> float:
    from kafkalike.storage.config import LogConfig
    from kafkalike.storage.log import Log
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
    parser = harness.arg_parser(__doc__, reps=9, dir_help="where both files go (default /dev/shm)")
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--batches", type=int, default=2048)
    args = parser.parse_args(argv)

    work = tempfile.mkdtemp(prefix="kafkalike-bench-append-", dir=args.dir)
    try:
        batches = [build_batch(args.batch_size) for _ in range(args.batches)]
        total_mb = args.batch_size * args.batches / 1e6
        run_raw(work, batches)  # warm-up both paths
        run_log(work, batches)
        times: dict[str, list[float]] = {"raw": [], "log": []}
        runs = {"raw": run_raw, "log": run_log}
        harness.interleave(args.reps, list(runs), lambda side: times[side].append(runs[side](work, batches)))
        raw = total_mb / harness.median(times["raw"])
        ours = total_mb / harness.median(times["log"])
        print(f"dir {args.dir}: {args.batches} batches of {args.batch_size} bytes "
              f"({total_mb:.1f} MB), {args.reps} interleaved reps, medians")
        print(f"raw os.write   {raw:8.1f} MB/s")
        print(f"Log.append     {ours:8.1f} MB/s")
        print(f"ratio          {ours / raw:8.2f}  (target >= 0.60)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


@harness.bench_test
def test_log_append_bench_short() -> None:
    assert main(["--batches", "64", "--reps", "3"]) == 0


if __name__ == "__main__":
    sys.exit(main())
