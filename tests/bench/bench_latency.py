"""End-to-end latency, producer send to consumer receive, with replication factor 3.

    python tests/bench/bench_latency.py [--mb-per-s 10] [--record-size 1000] [--seconds 10]
                                        [--acks all] [--linger-ms 5] [--reps 3] [--dir /dev/shm] [--compare-with DIR]

It starts its own ZooKeeper and 3 brokers (kafkalike.lab, log dirs under --dir, memory by
default) and removes everything afterwards. One topic of one partition, replicas
[0, 1, 2] led by broker 0, min.insync.replicas=2, its ISR full before the run.

A consumer process (confluent-kafka, read_uncommitted, assigned at the log end) and a
producer (confluent-kafka in this process, --linger-ms, by default librdkafka's 5, --acks) run on the same machine.
The producer paces its records to --mb-per-s and writes CLOCK_MONOTONIC (shared by every
process of the machine) into each record's first 8 bytes just before produce(); the
consumer subtracts it from its own clock when poll() hands the record over. So a
latency is the producer client's queueing, the produce request, replication (a consumer
reads only below the high watermark, which moves when both followers have the batch), the
consumer's fetch and its client: what a user of the two clients sees. The first second of
each run is left out (connections, first metadata). Percentiles are of every record of
a run; with --reps the table gives each rep and the median over reps.

A sparse run shows how closely the high watermark follows a write (issue 13): e.g.
`--acks 1 --linger-ms 0 --mb-per-s 0.001 --record-size 100` sends 10 records a second,
each after an idle gap, and the latency is the time until a consumer can read it.
`--hw-probe N` measures the high watermark itself: N acks=1 writes after idle gaps of
10 ms, 200 ms and 1 s, each timed from its acknowledgement until ListOffsets (latest)
covers it.

--compare-with DIR starts a second cluster running another checkout's brokers and runs
both in the same rotation (the clients are the same).
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

try:
    from . import harness          # collected by pytest as tests.bench.bench_latency
except ImportError:
    import harness                 # python tests/bench/bench_latency.py

TOPIC = "latency"
WARM_UP_S = 1.0
STAMP = struct.Struct(">d")
END = b"end-of-run"


# -- the consumer process -------------------------------------------------------------------------


def consume(bootstrap: str, topic: str) -> None:
    """Worker mode: print "ready" once fetching at the log end, then latencies as JSON."""
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "latency-bench", "enable.auto.commit": False,
                         "isolation.level": "read_uncommitted", "fetch.wait.max.ms": 500,
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:     # the first fetch position is resolved in here
        consumer.poll(0.05)
        [position] = consumer.position([TopicPartition(topic, 0)])
        if position.offset >= 0:
            break
    print("ready", flush=True)
    latencies = []
    now = time.monotonic
    while True:
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        value = msg.value()
        if value == END:
            break
        latencies.append(now() - STAMP.unpack_from(value)[0])
    consumer.close()
    print(json.dumps({"latencies_ms": [round(x * 1000, 4) for x in latencies]}), flush=True)


# -- the producer (this process) ------------------------------------------------------------------


def produce(bootstrap: str, topic: str, rate_bytes: float, record_size: int, seconds: float, acks: str,
            linger_ms: float) -> dict:
    from confluent_kafka import Producer
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": linger_ms,
                         "enable.idempotence": False, "compression.type": "none",
                         "delivery.report.only.error": True,
                         "on_delivery": lambda err, msg: errors.append(str(err))})
    producer.produce(topic, STAMP.pack(0.0) + b"w" * (record_size - STAMP.size), partition=0)
    producer.flush(30)
    padding = b"x" * (record_size - STAMP.size)
    per_second = rate_bytes / record_size
    now, pack, send, poll = time.monotonic, STAMP.pack, producer.produce, producer.poll
    start = now()
    sent = 0
    total = int(per_second * seconds)
    sleep = time.sleep
    while sent < total:
        # Send what is due, then sleep until the next record is: the loop must not spin,
        # or the producer takes a core from the brokers it measures (2-core machine).
        due = min(total, int((now() - start) * per_second) + 1)
        while sent < due:
            send(topic, pack(now()) + padding, partition=0)
            sent += 1
        poll(0)
        delay = start + sent / per_second - now()
        if delay > 0:
            sleep(delay)
    elapsed = now() - start
    producer.produce(topic, END, partition=0)
    left = producer.flush(60)
    if left or errors:
        raise RuntimeError(f"produce to {topic}: {left} undelivered, errors {errors[:3]}")
    return {"records": sent, "seconds": elapsed, "start": start}


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


def one_run(cluster, args: argparse.Namespace) -> dict:
    consumer = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--consume", cluster.bootstrap],
                                stdout=subprocess.PIPE, text=True)
    try:
        line = consumer.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"latency consumer did not start: {line!r}")
        timed = produce(cluster.bootstrap, TOPIC, args.mb_per_s * harness.MB, args.record_size, args.seconds,
                        args.acks, args.linger_ms)
        out, _ = consumer.communicate(timeout=120)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    latencies = json.loads(out.strip().splitlines()[-1])["latencies_ms"]
    # The first WARM_UP_S seconds of records (by count, at the paced rate) are left out.
    skip = int(timed["records"] * min(WARM_UP_S / max(timed["seconds"], 1e-9), 0.5))
    if args.save:
        with open(args.save, "a") as out:
            out.write(json.dumps({"start": timed["start"], "per_second": timed["records"] / timed["seconds"],
                                  "latencies_ms": latencies}) + "\n")
    kept = sorted(latencies[skip:])
    return {"records": timed["records"], "measured": len(kept),
            "mb_s": timed["records"] * args.record_size / timed["seconds"] / harness.MB,
            "p50": percentile(kept, 0.50), "p99": percentile(kept, 0.99), "p999": percentile(kept, 0.999),
            "max": kept[-1] if kept else float("nan")}


def start_profile(cluster, prefix: str, rate: int = 200) -> list:
    """py-spy on this checkout's leader and one follower for the whole measurement."""
    import shutil
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    spies = []
    for broker in cluster.brokers[:2]:
        out = f"{prefix}.broker{broker.broker_id}.txt"
        spies.append((out, rate, subprocess.Popen(
            [py_spy, "record", "--rate", str(rate), "--format", "raw", "--output", out, "--pid", str(broker.proc.pid)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
    time.sleep(1.0)   # py-spy attaches
    return spies


def stop_profile(spies: list, seconds: float) -> None:
    import signal
    try:
        from . import bench_broker
    except ImportError:
        import bench_broker
    for (out, rate, spy), role in zip(spies, ("leader", "follower")):
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
        print(f"\nprofile: {role} under py-spy ({rate} Hz) over about {seconds:.0f} s of runs; raw stacks in {out}")
        bench_broker.summarise_profile(Path(out), rate, seconds)


def hw_probe(bootstrap: str, writes: int, gaps: list[float]) -> dict[float, list[float]]:
    """How long after an acks=1 write is acknowledged the leader's high watermark covers
    it, as a user checks it: ListOffsets for the latest offset (confluent-kafka's
    get_watermark_offsets, uncached) in a loop. Each write follows an idle gap."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw-probe"})
    tp = TopicPartition(TOPIC, 0)
    watcher.get_watermark_offsets(tp, timeout=10, cached=False)
    lags: dict[float, list[float]] = {}
    for gap in gaps:
        for _ in range(writes):
            time.sleep(gap)
            acked = []
            producer.produce(TOPIC, b"hw", partition=0, on_delivery=lambda err, msg: acked.append(msg.offset()))
            producer.flush(10)
            t0 = time.monotonic()
            while watcher.get_watermark_offsets(tp, timeout=10, cached=False)[1] <= acked[0]:
                pass
            lags.setdefault(gap, []).append((time.monotonic() - t0) * 1000)
    watcher.close()
    return lags


def run_hw_probe(args: argparse.Namespace, sides, clusters) -> None:
    gaps = [0.01, 0.2, 1.0]
    results: dict[str, dict[float, list[float]]] = {s.label: {} for s in sides}

    def measure(label: str) -> None:
        for gap, lags in hw_probe(clusters[label].bootstrap, args.hw_probe, gaps).items():
            results[label].setdefault(gap, []).extend(lags)

    harness.interleave(args.reps, [s.label for s in sides], measure)
    print(f"\nhigh watermark after an acks=1 write was acknowledged ({args.hw_probe} writes per gap per rep, "
          f"ms until ListOffsets shows it; each ListOffsets is itself a round trip):")
    print(f"{'side':6} {'idle gap':>9} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8}")
    for label, by_gap in results.items():
        for gap, lags in by_gap.items():
            lags.sort()
            print(f"{label:6} {gap:8.2f}s {percentile(lags, 0.5):8.2f} {percentile(lags, 0.9):8.2f} {lags[-1]:8.2f}")


def run(args: argparse.Namespace) -> int:
    sides = harness.checkouts(args)
    with harness.Lab("latency", args.dir) as lab:
        clusters = {}
        for side in sides:
            cluster = lab.cluster(f"latency-{side.label}", size=3,
                                  overrides={"auto.leader.rebalance.enable": "false"}, checkout=side)
            harness.create_topic(cluster.bootstrap, TOPIC, assignment=[[0, 1, 2]], leader=0, full_isr=True,
                                 config={"min.insync.replicas": "2"})
            clusters[side.label] = cluster
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {harness.machine()}; "
              f"load average {harness.load_average():.2f} at start")
        harness.print_checkouts(sides)
        if args.hw_probe:
            print(f"3 brokers per checkout, log dirs under {args.dir}; 1 partition, RF=3; {args.reps} reps, rotating")
            run_hw_probe(args, sides, clusters)
            return 0
        print(f"3 brokers per checkout, log dirs under {args.dir}; 1 partition, RF=3, min.insync.replicas=2, "
              f"acks={args.acks}, linger.ms={args.linger_ms}; {args.mb_per_s} MB/s of {args.record_size}-byte records for "
              f"{args.seconds} s per run, first {WARM_UP_S:.0f} s left out; {args.reps} reps, rotating")
        results: dict[str, list[dict]] = {side.label: [] for side in sides}

        def measure(label: str) -> None:
            results[label].append(one_run(clusters[label], args))

        def progress(rep: int) -> None:
            for label, runs in results.items():
                r = runs[-1]
                print(f"  rep {rep + 1}/{args.reps} {label}: {r['mb_s']:.2f} MB/s, p50 {r['p50']:.2f} ms, "
                      f"p99 {r['p99']:.2f} ms, p99.9 {r['p999']:.2f} ms, max {r['max']:.2f} ms "
                      f"({r['measured']} records)", flush=True)

        spies = start_profile(clusters["this"], args.profile) if args.profile else []
        harness.interleave(args.reps, [s.label for s in sides], measure, progress)
        if spies:
            stop_profile(spies, args.seconds * args.reps)
        print(f"\n{'side':6} {'MB/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9} {'max ms':>8}   (medians over reps)")
        for label, runs in results.items():
            med = {k: harness.median(r[k] for r in runs) for k in ("mb_s", "p50", "p99", "p999", "max")}
            print(f"{label:6} {med['mb_s']:7.2f} {med['p50']:8.2f} {med['p99']:8.2f} {med['p999']:9.2f} "
                  f"{med['max']:8.2f}")
        if len(sides) > 1:
            for key, name in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")):
                harness.comparison(f"{name} latency, this against the base (< 1: this is faster):",
                                   [(name, [r[key] for r in results["this"]], [r[key] for r in results["base"]])],
                                   "ms", higher_is_better=False, fmt=".2f")
        print(f"load average {harness.load_average():.2f} at the end (other work on the machine skews a run)")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3, compare=True)
    parser.add_argument("--mb-per-s", type=float, default=10.0, help="produce rate, MB (10^6 bytes) a second")
    parser.add_argument("--record-size", type=int, default=1000, help="bytes of each record's value (>= 16)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each run")
    parser.add_argument("--acks", default="all")
    parser.add_argument("--linger-ms", type=float, default=5, help="the producer's linger.ms (librdkafka's default: 5)")
    parser.add_argument("--profile", metavar="PREFIX", help="py-spy this checkout's leader and a follower")
    parser.add_argument("--hw-probe", type=int, default=0, metavar="N",
                        help="instead: N acks=1 writes after each idle gap (10 ms, 200 ms, 1 s), timing how soon "
                             "the high watermark covers each")
    parser.add_argument("--save", metavar="FILE", help="append each run's latencies, in send order, as JSON lines")
    harness.hidden(parser, "--consume")
    args = parser.parse_args(argv)
    if args.consume:
        consume(args.consume, TOPIC)
        return 0
    if args.record_size < 16:
        parser.error("--record-size must be at least 16")
    return run(args)


@harness.bench_test
def test_latency_bench_short() -> None:
    """Two seconds at 2 MB/s: the harness, both processes and the report."""
    assert main(["--mb-per-s", "2", "--seconds", "2", "--reps", "1"]) == 0


if __name__ == "__main__":
    sys.exit(main())
