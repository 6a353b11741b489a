"""Produce throughput with replication factor 3 and acks=all, as a ratio to RF=1 acks=1, in one run.

    python tests/bench/bench_replication.py [--records 300000] [--reps 5] [--dir /dev/shm]
                                            [--linger-ms 5] [--batch-size 16384] [--no-kcat]
                                            [--partitions 1] [--idle-partitions 0]
                                            [--compare-with DIR]
                                            [--profile /tmp/replication]

It starts its own ZooKeeper and a cluster of 3 brokers (kafkalike.lab, log dirs under
--dir, memory by default) and removes everything afterwards. Two topics, by default of
one partition each, both led by broker 0:

- rf1: replicas [0], produced with acks=1;
- rf3: replicas [0, 1, 2], min.insync.replicas=2, produced with acks=all, so every
  produce response waits until both followers have fetched the batch (the high
  watermark moves over the whole ISR).

With --partitions N each topic has N partitions whose leaders rotate over the three
brokers (rf1: partition i on broker i mod 3; rf3: replicas rotated the same way), and
the producers spread keyless records over them with their partitioner.

100-byte values, no key, no compression, batch.size 16384, linger.ms 5. Load
generators: confluent-kafka (a Python loop of produce() calls, timed from the first call
until flush() returns) and, unless --no-kcat, kcat -P reading the same values from a
file. Each repetition runs the four (generator, topic) cases in a rotating order so
noise spreads evenly; medians are printed, MB = 10^6 bytes of values. CPU seconds of
each broker are read from /proc: on a 2-core machine three brokers and the client share
two cores, which the "CPU" columns show.

With --idle-partitions N a third topic, `idle`, has N partitions of replication factor
3 (leaders rotating over the brokers) that are never written: every follower's fetch
then covers them too, as in a cluster where most partitions are quiet. That is where
incremental fetch sessions (KIP-227) matter: without them each follower fetch lists,
and each answer carries, every partition; the script prints the size of a follower's
fetch request for that many partitions in full and incremental form.

--profile PREFIX records the leader (broker 0) and a follower (broker 1) of this
checkout with py-spy during one extra rf3 run per load generator and prints where their
reactor threads spend the time (raw stacks in PREFIX.<generator>.broker<N>.txt).

--compare-with DIR starts a second cluster of 3 brokers running another checkout's code
(e.g. a git worktree of the commit before a change) and runs every case against both in
the same rotation, then prints this/base ratios per case and for the RF=3/RF=1 ratio.
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
    def __init__(self, cluster, records: int, batch_size: int, linger_ms: int, scratch, partitions: int = 1,
                 idle_partitions: int = 0):
        self.cluster = cluster
        self.idle_partitions = idle_partitions
        self.records = records
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.partitions = partitions
        self.value = harness.printable_value(VALUE_SIZE)
        self.lines_path = scratch / "values.txt"
        if not self.lines_path.exists():
            harness.write_value_lines(self.lines_path, self.value, records)

    def create_topics(self) -> None:
        """Both topics with their leaders (broker 0 for one partition) and full ISR before any run."""
        for name, (replicas, _) in CASES.items():
            assignment = [[(r + i) % 3 for r in replicas] for i in range(self.partitions)]
            harness.create_topic(self.cluster.bootstrap, name, assignment=assignment,
                                 leader=0 if self.partitions == 1 else None, full_isr=True,
                                 config={"min.insync.replicas": "2" if len(replicas) == 3 else "1"})
        if self.idle_partitions:
            harness.create_topic(self.cluster.bootstrap, "idle", full_isr=True,
                                 assignment=[[(r + i) % 3 for r in (0, 1, 2)] for i in range(self.idle_partitions)])

    def broker_pids(self) -> list[int]:
        return [b.proc.pid for b in self.cluster.brokers]

    @property
    def partition(self) -> int | None:
        return 0 if self.partitions == 1 else None

    def produce_confluent(self, topic: str, acks: str) -> Sample:
        timed = harness.produce_confluent(self.cluster.bootstrap, topic, self.records, self.value, acks=acks,
                                          batch_size=self.batch_size, linger_ms=self.linger_ms,
                                          broker_pids=self.broker_pids(), partition=self.partition)
        return Sample(timed.seconds, self.records, timed.broker_cpu, timed.client_cpu)

    def produce_kcat(self, topic: str, acks: str) -> Sample:
        timed = harness.produce_kcat(self.cluster.bootstrap, topic, self.lines_path, acks=acks,
                                     batch_size=self.batch_size, linger_ms=self.linger_ms,
                                     broker_pids=self.broker_pids(), partition=self.partition)
        return Sample(timed.seconds, self.records, timed.broker_cpu, timed.client_cpu)


def profile(bench: Bench, prefix: str, generators: list[str], rate: int = 200) -> None:
    import shutil
    import signal
    import subprocess
    from pathlib import Path
    try:
        from . import bench_broker
    except ImportError:
        import bench_broker
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    for gen in generators:
        outs, spies = [], []
        for broker in bench.cluster.brokers[:2]:
            out = Path(f"{prefix}.{gen}.broker{broker.broker_id}.txt")
            spies.append(subprocess.Popen([py_spy, "record", "--rate", str(rate), "--format", "raw", "--output",
                                           str(out), "--pid", str(broker.proc.pid)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            outs.append(out)
        time.sleep(1.0)   # py-spy attaches
        sample = (bench.produce_confluent if gen == "confluent" else bench.produce_kcat)("rf3", "all")
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        for role, out in zip(("leader", "follower"), outs):
            print(f"\nprofile: {role} under py-spy ({rate} Hz), {gen} rf3 run of {sample.seconds:.2f}s at "
                  f"{sample.mb_s():.1f} MB/s; raw stacks in {out}")
            bench_broker.summarise_profile(out, rate, sample.seconds)


def fetch_request_sizes(partitions: int) -> tuple[int, int]:
    """Bytes of a follower's Fetch v12 request body listing `partitions` partitions (a
    full fetch, or one without sessions) and listing one (an incremental fetch in which
    one partition moved)."""
    from kafkalike.protocol.messages.fetch import FetchRequest

    def size(n: int, session_epoch: int) -> int:
        request = FetchRequest(replica_id=1, max_wait_ms=500, min_bytes=1, max_bytes=10485760, isolation_level=0,
                               session_id=0 if session_epoch <= 0 else 12345, session_epoch=session_epoch,
                               topics=[FetchRequest.FetchTopic(topic="idle", partitions=[
                                   FetchRequest.FetchPartition(partition=i, current_leader_epoch=0, fetch_offset=0,
                                                               last_fetched_epoch=0, log_start_offset=0,
                                                               partition_max_bytes=1048576)
                                   for i in range(n)])],
                               forgotten_topics_data=[])
        return len(request.encode(12))
    return size(partitions, 0), size(1, 1)


def report(results: dict[str, list[Sample]], generators: list[str], side: str = "this") -> None:
    print(f"\n{side:6} {'case':28} {'MB/s':>7} {'records/s':>10} {'broker CPU 0/1/2':>20} {'client CPU':>11}")
    for gen in generators:
        for name, (replicas, acks) in CASES.items():
            s = results[f"{side} {gen} {name}"]
            cpu = [statistics.median(x.broker_cpu[i] / x.seconds for x in s) for i in range(3)]
            label = f"{gen} RF={len(replicas)} acks={acks}"
            print(f"{side:6} {label:28} {statistics.median(x.mb_s() for x in s):7.2f} "
                  f"{statistics.median(x.records_s() for x in s):10.0f} "
                  f"{'/'.join(f'{100 * c:.0f}%' for c in cpu):>20} "
                  f"{100 * statistics.median(x.client_cpu / x.seconds for x in s):10.0f}%")
    print(f"\n{side}: ratio RF=3 acks=all / RF=1 acks=1 (median MB/s; and median of the per-rep ratios):")
    for gen in generators:
        rf1, rf3 = results[f"{side} {gen} rf1"], results[f"{side} {gen} rf3"]
        whole = statistics.median(x.mb_s() for x in rf3) / statistics.median(x.mb_s() for x in rf1)
        per_rep = statistics.median(b.mb_s() / a.mb_s() for a, b in zip(rf1, rf3))
        print(f"  {gen:10} {whole:.2f}  (per rep {per_rep:.2f}; "
              f"{', '.join(f'{b.mb_s() / a.mb_s():.2f}' for a, b in zip(rf1, rf3))})")


def compare(results: dict[str, list[Sample]], generators: list[str]) -> None:
    rows = [(f"{gen} {name}", [x.mb_s() for x in results[f"this {gen} {name}"]],
             [x.mb_s() for x in results[f"base {gen} {name}"]]) for gen in generators for name in CASES]
    harness.comparison("this checkout against the base, MB/s (same run, rotating):", rows, "MB/s", fmt=".2f")
    rows = [(f"{gen} RF3/RF1", [b.mb_s() / a.mb_s() for a, b in zip(results[f"this {gen} rf1"],
                                                                        results[f"this {gen} rf3"])],
             [b.mb_s() / a.mb_s() for a, b in zip(results[f"base {gen} rf1"], results[f"base {gen} rf3"])])
            for gen in generators]
    harness.comparison("the RF=3 acks=all / RF=1 acks=1 ratio, this against the base:", rows, "ratio", fmt=".3f")


def run(args: argparse.Namespace) -> int:
    sides = harness.checkouts(args)
    with harness.Lab("replication", args.dir) as lab:
        benches = {}
        for side in sides:
            cluster = lab.cluster(f"bench-{side.label}", size=3, overrides={"auto.leader.rebalance.enable": "false"},
                                  checkout=side)
            benches[side.label] = Bench(cluster, args.records, args.batch_size, args.linger_ms, lab.scratch,
                                        args.partitions, args.idle_partitions)
            benches[side.label].create_topics()
        generators = ["confluent"] + ([] if args.no_kcat else ["kcat"])
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {harness.machine()}; "
              f"load average {harness.load_average():.2f} at start")
        harness.print_checkouts(sides)
        where = "1 partition led by broker 0" if args.partitions == 1 else \
            f"{args.partitions} partitions, leaders rotating over the 3 brokers"
        if args.idle_partitions:
            where += f", and {args.idle_partitions} idle partitions (RF=3) every follower fetches"
        print(f"3 brokers per checkout, log dirs under {args.dir}; {args.records} records of {VALUE_SIZE} bytes "
              f"per run, {where}, batch.size={args.batch_size}, linger.ms={args.linger_ms}, "
              f"no compression; {args.reps} interleaved reps, medians")
        if args.idle_partitions:
            per_fetch = (args.idle_partitions + args.partitions) // 3      # a fetcher follows one leader's
            full, incremental = fetch_request_sizes(per_fetch)
            print(f"a follower's Fetch request body for ~{per_fetch} partitions: {full} bytes in full "
                  f"(no session), {incremental} bytes incremental with one partition moved")
        results: dict[str, list[Sample]] = collections.defaultdict(list)
        cases = [(side.label, gen, name) for gen in generators for name in CASES for side in sides]

        def produce(case: tuple[str, str, str]) -> None:
            side, gen, name = case
            bench = benches[side]
            run_one = bench.produce_confluent if gen == "confluent" else bench.produce_kcat
            results[f"{side} {gen} {name}"].append(run_one(name, CASES[name][1]))

        def progress(rep: int) -> None:
            print(f"  rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{side} {gen} {name} {results[f'{side} {gen} {name}'][-1].mb_s():.2f}"
                for side, gen, name in cases) + " MB/s", flush=True)

        harness.interleave(args.reps, cases, produce, progress)
        for side in sides:
            report(results, generators, side.label)
        if args.profile:
            profile(benches["this"], args.profile, generators)
        if len(sides) > 1:
            compare(results, generators)
        print(f"load average {harness.load_average():.2f} at the end (other work on the machine skews a run)")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=5, compare=True)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--partitions", type=int, default=1, help="partitions per topic (leaders rotate)")
    parser.add_argument("--idle-partitions", type=int, default=0,
                        help="an extra RF=3 topic of this many partitions that is never written")
    parser.add_argument("--no-kcat", action="store_true", help="confluent-kafka only")
    parser.add_argument("--profile", metavar="PREFIX", help="py-spy the leader and a follower in one more rf3 run")
    return run(parser.parse_args(argv))


@harness.bench_test
def test_replication_bench_short() -> None:
    """Both topics, both load generators, a few thousand records each."""
    assert main(["--records", "5000", "--reps", "1"]) == 0


if __name__ == "__main__":
    sys.exit(main())
