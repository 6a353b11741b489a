"""Record batch encode/decode, kafkalike vs kafka-python, side by side in one run.

    python tests/bench/bench_records.py [--records 1000] [--value-size 100] [--reps 41]

Both sides do the same work on the same data: encoding appends N records with a
timestamp, no key and a value of the given size into one uncompressed v2 batch;
decoding walks the batch and touches every record's value. Repetitions are
interleaved (ours, theirs, ours, ...) so machine noise hits both alike, and the
median is reported. The goal is a speedup of at least 2x on both.
"""
from __future__ import annotations

import os
import sys
import time

try:
    from . import harness          # collected by pytest as tests.bench.bench_records
except ImportError:
    import harness                 # python tests/bench/bench_records.py

TS = 1_600_000_000_000


def make_cases(values):
    from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

    from kafkalike.records import BatchBuilder, decode_batches, encode_batch
    items = [(None, v, None, TS) for v in values]

    def ours_encode_batch():
        return encode_batch(items)

    def ours_builder():
        builder = BatchBuilder()
        append = builder.append
        for v in values:
            append(None, v, timestamp=TS)
        return builder.build()

    def theirs_encode():
        builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 30)
        append = builder.append
        for v in values:
            append(TS, None, v)
        builder.close()
        return bytes(builder.buffer())

    def ours_decode(buf):
        total = 0
        for batch in decode_batches(buf):
            for record in batch.records():
                total += len(record.value)
        return total

    def theirs_decode(buf):
        total = 0
        records = MemoryRecords(buf)
        while records.has_next():
            for record in records.next_batch():
                total += len(record.value)
        return total

    return ours_encode_batch, ours_builder, theirs_encode, ours_decode, theirs_decode


def main(argv=None) -> int:
    parser = harness.arg_parser(__doc__, reps=41, scratch=False)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--value-size", type=int, default=100)
    args = parser.parse_args(argv)

    values = [os.urandom(args.value_size) for _ in range(args.records)]
    ours_encode_batch, ours_builder, theirs_encode, ours_decode, theirs_decode = make_cases(values)

    ours_buf = ours_encode_batch()
    theirs_buf = theirs_encode()
    # Same bytes apart from partitionLeaderEpoch (-1 from us, as the Java producer, 0 from them).
    assert ours_buf[16:] == theirs_buf[16:] and ours_builder()[16:] == theirs_buf[16:]
    assert ours_decode(theirs_buf) == theirs_decode(ours_buf) == args.records * args.value_size

    cases = {
        "encode: encode_batch": (lambda: ours_encode_batch(), lambda: theirs_encode()),
        "encode: builder.append": (lambda: ours_builder(), lambda: theirs_encode()),
        "decode": (lambda: ours_decode(ours_buf), lambda: theirs_decode(ours_buf)),
    }
    timings = {name: ([], []) for name in cases}
    clock = time.perf_counter
    for _ in range(3):  # warm-up
        for ours, theirs in cases.values():
            ours()
            theirs()
    for _ in range(args.reps):
        for name, (ours, theirs) in cases.items():
            t0 = clock()
            ours()
            t1 = clock()
            theirs()
            t2 = clock()
            timings[name][0].append(t1 - t0)
            timings[name][1].append(t2 - t1)

    print(f"{args.records} records x {args.value_size} B values, uncompressed, one batch; "
          f"median of {args.reps} interleaved runs")
    table = harness.Table(harness.Column("operation", 24, align="<"), harness.Column("kafkalike ms", 14, ".3f"),
                          harness.Column("kafka-python ms", 17, ".3f"),
                          harness.Column("speedup", 10, ".2f", suffix="x"),
                          harness.Column("kafkalike rec/s", 17, ",.0f"))
    print(table.header())
    worst = float("inf")
    for name, (ours, theirs) in timings.items():
        ours_ms = harness.median(ours) * 1000
        theirs_ms = harness.median(theirs) * 1000
        ratio = theirs_ms / ours_ms
        worst = min(worst, ratio)
        print(table.row(name, ours_ms, theirs_ms, ratio, args.records / ours_ms * 1000))
    print(f"target >= 2.00x: {'met' if worst >= 2.0 else 'NOT met'} (worst {worst:.2f}x)")
    return 0


@harness.bench_test
def test_records_bench_short() -> None:
    assert main(["--records", "200", "--reps", "3"]) == 0


if __name__ == "__main__":
    sys.exit(main())
