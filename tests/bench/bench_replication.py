"""Produce throughput with replication factor 3 and acks=all, as a ratio to RF=1 acks=1, in one run.

    python tests/bench/bench_replication.py [--records 300000] [--reps 5] [--dir /dev/shm]
                                            [--linger-ms 5] [--batch-size 16384] [--no-kcat]

It starts its own ZooKeeper and a cluster of 3 brokers (kafkalike.lab, log dirs under
--dir, memory by default) and removes everything afterwards. Two topics of one
partition each, both led by broker 0:

- rf1: replicas [0], produced with acks=1;
- rf3: replicas [0, 1, 2], min.insync.replicas=2, produced with acks=all, so every
  produce response waits until both followers have fetched the batch (the high
  watermark moves over the whole ISR).

100-byte values, no key, no compression, batch.size 16384, linger.ms 5. Load
generators: confluent-kafka (a Python loop of produce() calls, timed from the first call
until flush() returns) and, unless --no-kcat, kcat -P reading the same values from a
file. Each repetition runs the four (generator, topic) cases in a rotating order so
noise spreads evenly; medians are printed, MB = 10^6 bytes of values. CPU seconds of
each broker are read from /proc: on a 2-core machine three brokers and the client share
two cores, which the "CPU" columns show.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from dataclasses import dataclass

try:
    from . import harness          # collected by pytest as tests.bench.bench_replication
except ImportError:
    import harness                 # python tests/bench/bench_replication.py

VALUE_SIZE = 100
MB = harness.MB
CASES = {"rf1": ([0], "1"), "rf3": ([0, 1, 2], "all")}


@dataclass
class Sample:
    seconds: float
    records: int
    broker_cpu: list[float]
    client_cpu: float

    def mb_s(self) -> float:
        return self.records * VALUE_SIZE / self.seconds / MB

    def records_s(self) -> float:
        return self.records / self.seconds


class Bench:
    def __init__(self, cluster, records: int, batch_size: int, linger_ms: int, scratch):
        self.cluster = cluster
        self.records = records
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.value = harness.printable_value(VALUE_SIZE)
        self.lines_path = harness.write_value_lines(scratch / "values.txt", self.value, records)

    def create_topics(self) -> None:
        """Both topics led by broker 0 with their full ISR before any run."""
        for name, (replicas, _) in CASES.items():
            harness.create_topic(self.cluster.bootstrap, name, assignment=[replicas], leader=0, full_isr=True,
                                 config={"min.insync.replicas": "2" if len(replicas) == 3 else "1"})

    def broker_pids(self) -> list[int]:
        return [b.proc.pid for b in self.cluster.brokers]

    def produce_confluent(self, topic: str, acks: str) -> Sample:
        timed = harness.produce_confluent(self.cluster.bootstrap, topic, self.records, self.value, acks=acks,
                                          batch_size=self.batch_size, linger_ms=self.linger_ms,
                                          broker_pids=self.broker_pids())
        return Sample(timed.seconds, self.records, timed.broker_cpu, timed.client_cpu)

    def produce_kcat(self, topic: str, acks: str) -> Sample:
        timed = harness.produce_kcat(self.cluster.bootstrap, topic, self.lines_path, acks=acks,
                                     batch_size=self.batch_size, linger_ms=self.linger_ms,
                                     broker_pids=self.broker_pids())
        return Sample(timed.seconds, self.records, timed.broker_cpu, timed.client_cpu)


def report(results: dict[str, list[Sample]], generators: list[str]) -> None:
    print(f"\n{'case':28} {'MB/s':>7} {'records/s':>10} {'broker CPU 0/1/2':>20} {'client CPU':>11}")
    for gen in generators:
        for name, (replicas, acks) in CASES.items():
            s = results[f"{gen} {name}"]
            cpu = [statistics.median(x.broker_cpu[i] / x.seconds for x in s) for i in range(3)]
            label = f"{gen} RF={len(replicas)} acks={acks}"
            print(f"{label:28} {statistics.median(x.mb_s() for x in s):7.2f} "
                  f"{statistics.median(x.records_s() for x in s):10.0f} "
                  f"{'/'.join(f'{100 * c:.0f}%' for c in cpu):>20} "
                  f"{100 * statistics.median(x.client_cpu / x.seconds for x in s):10.0f}%")
    print("\nratio RF=3 acks=all / RF=1 acks=1 (median MB/s; and median of the per-rep ratios):")
    for gen in generators:
        rf1, rf3 = results[f"{gen} rf1"], results[f"{gen} rf3"]
        whole = statistics.median(x.mb_s() for x in rf3) / statistics.median(x.mb_s() for x in rf1)
        per_rep = statistics.median(b.mb_s() / a.mb_s() for a, b in zip(rf1, rf3))
        print(f"  {gen:10} {whole:.2f}  (per rep {per_rep:.2f}; "
              f"{', '.join(f'{b.mb_s() / a.mb_s():.2f}' for a, b in zip(rf1, rf3))})")


def run(args: argparse.Namespace) -> int:
    with harness.Lab("replication", args.dir) as lab:
        cluster = lab.cluster("bench", size=3, overrides={"auto.leader.rebalance.enable": "false"})
        bench = Bench(cluster, args.records, args.batch_size, args.linger_ms, lab.scratch)
        bench.create_topics()
        generators = ["confluent"] + ([] if args.no_kcat else ["kcat"])
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {harness.machine()}; "
              f"load average {harness.load_average():.2f} at start")
        print(f"3 brokers, log dirs under {args.dir}; {args.records} records of {VALUE_SIZE} bytes per run, "
              f"1 partition led by broker 0, batch.size={args.batch_size}, linger.ms={args.linger_ms}, "
              f"no compression; {args.reps} interleaved reps, medians")
        results: dict[str, list[Sample]] = collections.defaultdict(list)
        cases = [(gen, name) for gen in generators for name in CASES]

        def produce(case: tuple[str, str]) -> None:
            gen, name = case
            run_one = bench.produce_confluent if gen == "confluent" else bench.produce_kcat
            results[f"{gen} {name}"].append(run_one(name, CASES[name][1]))

        def progress(rep: int) -> None:
            print(f"  rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{gen} {name} {results[f'{gen} {name}'][-1].mb_s():.2f} MB/s" for gen, name in cases), flush=True)

        harness.interleave(args.reps, cases, produce, progress)
        report(results, generators)
        print(f"load average {harness.load_average():.2f} at the end (other work on the machine skews a run)")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=5)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--no-kcat", action="store_true", help="confluent-kafka only")
    return run(parser.parse_args(argv))


@harness.bench_test
def test_replication_bench_short() -> None:
    """Both topics, both load generators, a few thousand records each."""
    assert main(["--records", "5000", "--reps", "1"]) == 0


if __name__ == "__main__":
    sys.exit(main())
