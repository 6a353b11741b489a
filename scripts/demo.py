"""Write a small topic partition log with kafkalike's own record and storage layers.

scripts/start.sh runs this, then shows the segment with bin/kafka-dump-log.sh, to show
what exists before the broker does. The layers are imported inside main() so that a
missing or broken one stops the demo right here with its own error.

usage: python scripts/demo.py [--log-dir /tmp/kafkalike-demo] [--topic demo] [--batches 3]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path


def write_demo_log(partition_dir: Path, batches: int, records_per_batch: int) -> Path:
    """Append a few record batches to a fresh log and return its first segment file."""
    try:
        from kafkalike.records.batch import Record, encode_batch
        from kafkalike.storage.log import Log
    except ImportError as error:
        raise SystemExit(
            f"demo: kafkalike's record or storage layer is not importable ({error}); "
            "it needs kafkalike.records.batch and kafkalike.storage.log"
        ) from error

    shutil.rmtree(partition_dir, ignore_errors=True)
    partition_dir.mkdir(parents=True)
    now_ms = int(time.time() * 1000)
    log = Log(partition_dir)
    try:
        for batch in range(batches):
            records = [
                Record(
                    offset=i,  # encode_batch numbers records itself; the log assigns offsets
                    timestamp=now_ms,
                    key=f"key-{batch}-{i}".encode(),
                    value=f"hello from kafkalike, batch {batch} record {i}".encode(),
                )
                for i in range(records_per_batch)
            ]
            log.append(encode_batch(records))
    finally:
        log.close()
    segment = partition_dir / f"{0:020d}.log"
    if not segment.is_file():
        raise SystemExit(f"demo: expected the first segment at {segment}, found {sorted(partition_dir.iterdir())}")
    return segment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-dir", type=Path, default=Path("/tmp/kafkalike-demo"))
    parser.add_argument("--topic", default="demo")
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--records-per-batch", type=int, default=2)
    args = parser.parse_args(argv)
    partition_dir = args.log_dir / f"{args.topic}-{args.partition}"
    segment = write_demo_log(partition_dir, args.batches, args.records_per_batch)
    print(f"Wrote {args.batches} batches of {args.records_per_batch} records to {segment}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
