"""The operator's measurements: Kafka's perf tools next to confluent-kafka with the same
load, and moving a large partition with and without a replication throttle.

    python tests/bench/bench_operations.py [--reps 3] [--records 500000] [--move-bytes 1000000000]
                                           [--throttle 50000000] [--dir /dev/shm]

Perf tools. One broker. kafka-producer-perf-test (kafkalike's producer behind Kafka's
flags: --num-records R --record-size 100 --throughput -1, acks=1, batch.size 16384,
linger.ms 5) against confluent-kafka producing the same R records with the same settings
from a Python loop; then kafka-consumer-perf-test --messages R against a confluent-kafka
consumer reading the same R records from the start. Each repetition rotates the order;
records/s are medians, with the tools' rate as a ratio to confluent-kafka's.

A big move. Two brokers; a partition of --move-bytes (100-byte records written by kcat)
on broker 0 is reassigned to [0, 1] with kafka-reassign-partitions, once without and
once (another topic of the same size) with --throttle; for each, the time from --execute
to the partition's new replica list, and the acks=all latency (p50, p99) of a steady
100 records/s producer to a third, replicated topic led by broker 0 during the move, next
to the same producer while nothing moves.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

try:
    from . import harness          # collected by pytest as tests.bench.bench_operations
except ImportError:
    import harness                 # python tests/bench/bench_operations.py

BIN = harness.ROOT / "bin"
ENV = {"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}


def tool(name: str, *args: str, timeout: float = 900) -> str:
    done = subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=timeout, env=ENV)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


# -- perf tools next to confluent-kafka --------------------------------------------------------


def producer_perf_test(bootstrap: str, topic: str, records: int) -> float:
    out = tool("kafka-producer-perf-test.sh", "--topic", topic, "--num-records", str(records), "--record-size",
               "100", "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", "acks=1",
               "batch.size=16384", "linger.ms=5")
    last = [line for line in out.splitlines() if " records sent, " in line][-1]
    return float(re.search(r"records sent, ([\d.]+) records/sec", last).group(1))


def consumer_perf_test(bootstrap: str, topic: str, records: int) -> float:
    out = tool("kafka-consumer-perf-test.sh", "--bootstrap-server", bootstrap, "--topic", topic, "--messages",
               str(records), "--timeout", "60000", "--group", f"perf-{time.monotonic_ns()}")
    header, row = out.strip().splitlines()[-2:]
    values = dict(zip((h.strip() for h in header.split(",")), (v.strip() for v in row.split(","))))
    return float(values["nMsg.sec"])


def confluent_consume(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    count, start = 0, None
    try:
        while count < records:
            batch = consumer.consume(10000, 1.0)
            if batch and start is None:
                start = time.perf_counter()
            count += sum(1 for m in batch if m.error() is None)
        return records / (time.perf_counter() - start)
    finally:
        consumer.close()


def perf_tools(lab: harness.Lab, args) -> dict:
    broker = lab.broker("perf")
    value = harness.printable_value(100)
    results: dict[str, list[float]] = {"producer-perf-test": [], "confluent produce": [],
                                       "consumer-perf-test": [], "confluent consume": []}
    for rep in range(args.reps):
        topic = harness.create_topic(broker.bootstrap, f"perf-{rep}")
        runs = [("producer-perf-test", lambda: producer_perf_test(broker.bootstrap, topic, args.records)),
                ("confluent produce", lambda: args.records / harness.produce_confluent(
                    broker.bootstrap, topic, args.records, value, acks=1, batch_size=16384,
                    linger_ms=5).seconds)]
        for name, run in harness.rotated(runs, rep):
            results[name].append(run())
        reads = [("consumer-perf-test", lambda: consumer_perf_test(broker.bootstrap, topic, args.records)),
                 ("confluent consume", lambda: confluent_consume(broker.bootstrap, topic, args.records))]
        for name, run in harness.rotated(reads, rep):
            results[name].append(run())
        print(f"  rep {rep + 1}: " + ", ".join(f"{k} {v[-1]:,.0f} rec/s" for k, v in results.items()), flush=True)
    return results


# -- a big move ---------------------------------------------------------------------------------


class LatencyProbe:
    """A confluent-kafka producer sending 100 records/s (acks=all) and keeping each latency."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "log_level": 2})
        self.topic = topic
        self.latencies: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        next_send = time.perf_counter()
        while not self.stop.is_set():
            sent = time.perf_counter()
            self.producer.produce(self.topic, b"probe", partition=0,
                                  on_delivery=lambda err, msg, sent=sent: err is None and self.latencies.append(
                                      (time.perf_counter() - sent) * 1000))
            next_send += 0.01
            while (left := next_send - time.perf_counter()) > 0:   # serve delivery reports until the next slot
                self.producer.poll(left)

    def measure(self, seconds: float | None = None, until: threading.Event | None = None) -> list[float]:
        self.latencies = []
        if until is not None:
            until.wait()
        else:
            time.sleep(seconds)
        self.producer.flush(30)
        return sorted(self.latencies)


def percentile(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def move(bootstrap: str, zk_connect: str, topic: str, scratch: Path, throttle: int | None) -> float:
    plan = scratch / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [0, 1]}]}))
    extra = ["--throttle", str(throttle)] if throttle else []
    started = time.monotonic()
    tool("kafka-reassign-partitions.sh", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan),
         "--execute", *extra)
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=zk_connect)
    zk.start(15)
    try:
        while True:
            data, _ = zk.get(f"/brokers/topics/{topic}")
            znode = json.loads(data)
            if znode["partitions"]["0"] == [0, 1] and not znode.get("adding_replicas"):
                took = time.monotonic() - started
                break
            time.sleep(0.05)
    finally:
        zk.stop()
        zk.close()
    tool("kafka-reassign-partitions.sh", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan),
         "--verify")     # removes the throttle
    return took


def big_move(lab: harness.Lab, args) -> list[tuple[str, float, list[float]]]:
    cluster = lab.cluster("move", 2)
    bootstrap = cluster.bootstrap
    records = int(args.move_bytes // 100)
    lines = harness.write_value_lines(lab.scratch / "values.txt", harness.printable_value(100), records)
    for topic in ("move-free", "move-capped"):
        harness.create_topic(bootstrap, topic, assignment=[[0]])
        harness.produce_kcat(bootstrap, topic, lines, acks=1, batch_size=1_000_000, linger_ms=5)
    lines.unlink()
    harness.create_topic(bootstrap, "probe", assignment=[[0, 1]], full_isr=True)
    probe = LatencyProbe(bootstrap, "probe")
    probe.thread.start()
    out = [("nothing moving", 0.0, probe.measure(5))]
    for topic, throttle in (("move-free", None), ("move-capped", args.throttle)):
        done = threading.Event()
        took: list[float] = []

        def run(topic=topic, throttle=throttle) -> None:
            try:
                took.append(move(bootstrap, cluster.brokers[0].zk_connect, topic, lab.scratch, throttle))
            finally:
                done.set()
        threading.Thread(target=run, daemon=True).start()
        latencies = probe.measure(until=done)
        label = f"throttled at {throttle / 1e6:g} MB/s" if throttle else "unthrottled"
        out.append((label, took[0], latencies))
    probe.stop.set()
    probe.thread.join(5)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3)
    parser.add_argument("--records", type=int, default=500_000, help="records per perf-tool run (default 500000)")
    parser.add_argument("--move-bytes", type=float, default=1e9, help="size of the moved partition (default 1e9)")
    parser.add_argument("--throttle", type=int, default=50_000_000, help="--throttle of the second move (B/s)")
    parser.add_argument("--skip", choices=("perf", "move"), help="leave one part out")
    args = parser.parse_args(argv)
    print(harness.machine())
    with harness.Lab("operations", args.dir) as lab:
        if args.skip != "perf":
            results = perf_tools(lab, args)
            print(f"\nperf tools, {args.records:,} records of 100 B, {args.reps} reps (medians)")
            for tool_name, client in (("producer-perf-test", "confluent produce"),
                                      ("consumer-perf-test", "confluent consume")):
                ours, theirs = harness.median(results[tool_name]), harness.median(results[client])
                print(f"  {tool_name:20} {ours:>12,.0f} rec/s   {client:18} {theirs:>12,.0f} rec/s   "
                      f"ratio {ours / theirs:.2f}")
        if args.skip != "move":
            rows = big_move(lab, args)
            print(f"\nmoving a {args.move_bytes / 1e9:g} GB partition to a second broker; acks=all latency of "
                  "100 records/s to a replicated topic meanwhile")
            for label, took, latencies in rows:
                took_text = f"{took:7.1f} s ({args.move_bytes / took / 1e6:6.1f} MB/s)" if took else " " * 20
                print(f"  {label:24} {took_text}  p50 {percentile(latencies, 0.5):6.1f} ms  "
                      f"p99 {percentile(latencies, 0.99):7.1f} ms  ({len(latencies)} records)")
    print(f"load average {harness.load_average():.2f} at the end")
    return 0


@harness.bench_test
def test_operations_bench_short() -> None:
    assert main(["--reps", "1", "--records", "20000", "--move-bytes", "20000000", "--throttle", "10000000"]) == 0


if __name__ == "__main__":
    sys.exit(main())
