"""Transactional produce throughput as a ratio to idempotent produce, and commit latency, in one run.

    python tests/bench/bench_transactions.py [--records 500000] [--value-size 1024]
                                             [--txn-sizes 1000,10000] [--interval-ms 100]
                                             [--partitions 3] [--brokers 1] [--reps 3]
                                             [--linger-ms 5] [--dir /dev/shm]

It starts its own ZooKeeper and --brokers brokers (kafkalike.lab, log dirs under --dir,
memory by default; topics, __transaction_state and __consumer_offsets replicated on all
of them, min.insync.replicas 2 from 3 brokers up) and removes everything afterwards.
confluent-kafka (librdkafka) produces the same --records values, no key, over
--partitions partitions of a fresh topic per run, acks=all, linger.ms 5, no compression,
from a Python loop of produce() calls:

- idempotent: enable.idempotence=true, no transactions (the baseline: the same producer
  id, sequence numbers and acks=all a transactional producer has);
- txn N: transactional, one transaction per N records (begin_transaction, N produce(),
  commit_transaction), for each N of --txn-sizes;
- txn every M ms: transactional, a commit as soon as M ms (--interval-ms, 0 to leave it
  out) have passed since the transaction began, as Kafka Streams' commit.interval.ms
  does; Kafka's published figure (a few percent at 100 ms commit intervals) is for this.

Each run is a fresh worker process timed from the first produce() until the last
commit_transaction() (flush() for the baseline) returns; init_transactions and a warm-up
transaction are outside the time. Before each commit the worker calls flush() and then
times commit_transaction() alone: that is the commit latency (EndTxn to the coordinator,
which answers once PrepareCommit is replicated; the markers go to the partitions after
the answer). Repetitions run the cases in a rotating order; throughput is the median,
the ratio to idempotent is the median of the per-repetition ratios (each against the
idempotent run of the same repetition), commit latency percentiles are over every commit
of every repetition. MB = 10^6 bytes of values. Broker CPU is read from /proc.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

try:
    from . import harness          # collected by pytest as tests.bench.bench_transactions
except ImportError:
    import harness                 # python tests/bench/bench_transactions.py

BASELINE = "idempotent"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile by nearest rank (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def worker(args: argparse.Namespace) -> int:
    """One timed run in this process; prints seconds, transactions and commit times as JSON."""
    from confluent_kafka import Producer
    errors: list[str] = []
    config = {"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
              "linger.ms": args.linger_ms, "compression.type": "none", "queue.buffering.max.messages": 1_000_000,
              "queue.buffering.max.kbytes": 1_048_576, "delivery.report.only.error": True,
              "on_delivery": lambda err, msg: errors.append(str(err))}
    case = args.worker
    transactional = case != BASELINE
    if transactional:
        config["transactional.id"] = f"bench-{args.topic}"
    producer = Producer(config)
    produce, poll = producer.produce, producer.poll
    value = bytes(33 + (i * 7) % 90 for i in range(args.value_size))
    if transactional:
        producer.init_transactions(60)
        producer.begin_transaction()
    producer.produce(args.topic, b"warm-up")
    producer.flush(60)
    if transactional:
        producer.commit_transaction(60)

    txn_size = int(case.split()[1]) if case.startswith("txn ") and "every" not in case else 0
    interval = args.interval_ms / 1000 if "every" in case else 0.0
    commits: list[float] = []
    open_since = 0.0

    def commit() -> None:
        producer.flush(300)
        t0 = time.perf_counter()
        producer.commit_transaction(120)
        commits.append(time.perf_counter() - t0)

    cpu0 = harness.own_cpu()
    start = time.perf_counter()
    in_txn = 0
    for i in range(args.records):
        if transactional and in_txn == 0:
            producer.begin_transaction()
            open_since = time.perf_counter()
        while True:
            try:
                produce(args.topic, value)
                break
            except BufferError:
                poll(0.0005)
        in_txn += 1
        if not transactional:
            continue
        if txn_size and in_txn == txn_size:
            commit()
            in_txn = 0
        elif interval and (i & 63) == 0 and time.perf_counter() - open_since >= interval:
            commit()
            in_txn = 0
    if transactional and in_txn:
        commit()
    left = producer.flush(300)
    seconds = time.perf_counter() - start
    cpu = harness.own_cpu() - cpu0
    if left or errors:
        raise RuntimeError(f"{case}: {left} undelivered, errors {errors[:3]}")
    print(json.dumps({"seconds": seconds, "commits": commits, "cpu": cpu}))
    return 0


def run(args: argparse.Namespace) -> int:
    cases = [BASELINE] + [f"txn {int(n)}" for n in args.txn_sizes.split(",") if n]
    if args.interval_ms:
        cases.append(f"txn every {args.interval_ms} ms")
    replicas = args.brokers
    overrides = {"transaction.state.log.replication.factor": str(replicas),
                 "transaction.state.log.min.isr": str(min(2, replicas)),
                 "transaction.state.log.num.partitions": "5",
                 "offsets.topic.replication.factor": str(replicas), "offsets.topic.num.partitions": "5",
                 "min.insync.replicas": str(min(2, replicas))}
    with harness.Lab("transactions", args.dir) as lab:
        cluster = lab.cluster("bench", args.brokers, overrides)
        pids = [b.proc.pid for b in cluster.brokers]
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} cores; load average {harness.load_average():.2f}")
        print(f"{args.records:,} values of {args.value_size} B per run, {args.partitions} partitions, "
              f"{args.brokers} broker(s) (RF {replicas}), acks=all, linger.ms={args.linger_ms}, no compression, "
              f"confluent-kafka {confluent_version()}; log dirs in {args.dir}; {args.reps} rotating reps")

        seconds: dict[str, list[float]] = {case: [] for case in cases}
        cpu: dict[str, list[float]] = {case: [] for case in cases}
        commits: dict[str, list[float]] = {case: [] for case in cases}
        counts: dict[str, list[int]] = {case: [] for case in cases}
        in_commit: dict[str, list[float]] = {case: [] for case in cases}
        client_cpu: dict[str, list[float]] = {case: [] for case in cases}
        for rep in range(args.reps):
            for case in harness.rotated(cases, rep):
                topic = harness.create_topic(cluster.bootstrap, f"bench-txn-{int(time.time() * 1000)}",
                                             args.partitions, replicas, full_isr=True)
                before = [harness.process_cpu(pid) for pid in pids]
                result = harness.run_worker(__file__, [
                    "--worker", case, "--bootstrap", cluster.bootstrap, "--topic", topic,
                    "--records", str(args.records), "--value-size", str(args.value_size),
                    "--linger-ms", str(args.linger_ms), "--interval-ms", str(args.interval_ms)],
                    what=case)
                cpu[case].append(sum(harness.process_cpu(pid) - b for pid, b in zip(pids, before)))
                seconds[case].append(result["seconds"])
                commits[case].extend(result["commits"])
                counts[case].append(len(result["commits"]))
                in_commit[case].append(sum(result["commits"]) / result["seconds"])
                client_cpu[case].append(result["cpu"])
                delete_topic(cluster.bootstrap, topic)   # a run writes up to a GB; the log dirs are in memory
            print(f"  rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{case} {args.records / seconds[case][-1]:,.0f} rec/s" for case in cases), flush=True)

        table = harness.Table(harness.Column("case", 20, align="<"), harness.Column("records/s", 11, ",.0f"),
                              harness.Column("MB/s", 7, ".1f"), harness.Column("/idempotent", 12, ".3f"),
                              harness.Column("per-rep ratios", 14, gap=2, align="<"),
                              harness.Column("txns", 6, ",.0f"), harness.Column("commit p50", 11, ".1f", suffix=" ms"),
                              harness.Column("p99", 9, ".1f", suffix=" ms"),
                              harness.Column("in commit", 10, ".1%"),
                              harness.Column("broker CPU", 11, ".2f", suffix=" s"),
                              harness.Column("client CPU", 11, ".2f", suffix=" s"),
                              harness.Column("CPU/idempotent", 15, ".3f"))
        # CPU (broker and client together) of a run, per repetition against the idempotent run
        # of the same repetition: steadier than wall time on a machine shared with other work.
        cpu_ratios = {case: harness.median([(b + c) / (b0 + c0) for b, c, b0, c0 in zip(
            cpu[case], client_cpu[case], cpu[BASELINE], client_cpu[BASELINE])]) for case in cases}
        print("\n" + table.header())
        for case in cases:
            rate = args.records / harness.median(seconds[case])
            ratios = [b / s for s, b in zip(seconds[case], seconds[BASELINE])]
            spread = f"{min(ratios):.3f}-{max(ratios):.3f}"
            ms = [c * 1000 for c in commits[case]]
            print(table.row(case, rate, rate * args.value_size / 1e6, harness.median(ratios), spread,
                            harness.median(counts[case]), percentile(ms, 50), percentile(ms, 99),
                            harness.median(in_commit[case]), harness.median(cpu[case]),
                            harness.median(client_cpu[case]), cpu_ratios[case]).rstrip())
        print(f"load average {harness.load_average():.2f} at the end")
    return 0


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})   # held until the answer is in
    admin.delete_topics([topic], operation_timeout=30)[topic].result(60)


def confluent_version() -> str:
    import confluent_kafka
    return f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]})"


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--txn-sizes", default="1000,10000", help="records per transaction, comma-separated")
    parser.add_argument("--interval-ms", type=int, default=100, help="the time-based case's commit interval (0: none)")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--linger-ms", type=int, default=5)
    harness.hidden(parser, "--worker")
    harness.hidden(parser, "--bootstrap", "--topic")
    args = parser.parse_args(argv)
    return worker(args) if args.worker else run(args)


@harness.bench_test
def test_transactions_bench_short() -> None:
    """Every case once with a few records (one transaction per 1,000, and per 100 ms)."""
    assert main(["--records", "3000", "--txn-sizes", "1000", "--reps", "1", "--value-size", "100"]) == 0


if __name__ == "__main__":
    sys.exit(main())
