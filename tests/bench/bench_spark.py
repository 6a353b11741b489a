"""Spark load throughput and Python worker memory: format("kafkalike") next to plain consumers, in one run.

    python tests/bench/bench_spark.py [--records 1000000] [--partitions 4] [--big-factor 4]
                                      [--reps 3] [--runs 2] [--dir /dev/shm] [--profile /tmp/reader-prof]
                                      [--json /tmp/bench-spark.json]

It starts its own ZooKeeper and one broker (kafkalike.lab, log dir in memory by default)
and removes everything afterwards. Before any timing, kcat (librdkafka, no Python in the
loop) writes two topics, partition by partition (`kcat -P -p N`): `--records` values of
100 bytes spread evenly over `--partitions` partitions, and a topic with `--big-factor`
times as many records per partition. No key, no compression, batch.size 1,000,000,
linger.ms 5. The script checks every partition's end offset before it starts.

Readers, each in a fresh process, in an order that rotates between repetitions:

- **spark local[1]** and **spark local[2]**: `kafkalike.lab.spark.local_session(master)`;
  the session is started and warmed first (a `spark.range` job and a read of 100 records
  per partition through the source, so the Python worker daemon is up and has imported
  the connector), then the clock runs around `--runs` actions of
  `spark.read.format("kafkalike")...load().select(count("*"), sum(length("value")))`
  over the whole small topic, and one over the big topic. A timed action includes
  planning on the driver (metadata, ListOffsets, the Python planning workers) and every
  record crossing from the Python workers to the JVM as Arrow, where the sum touches
  every value.
- **kafkalike**: kafkalike's KafkaConsumer, assign mode (every partition, `seek(tp, 0)` as
  a Spark task seeks to its range's start, no group), default settings, `len()` of every
  value, clocked from creating the consumer to the last record. (Not auto.offset.reset:
  with it, kafkalike's first records come 0.5 s later.)
- **range reader**: what a local[1] task worker does, without Spark: the connector's
  RangeReader (kafkalike/spark/reader.py) over each partition in turn, in one process,
  summing the value lengths of each Arrow batch; clocked like the consumers.
- **kafka-python**: kafka-python's KafkaConsumer, the same way.

Every reader must see every record and every value byte, or the run fails.

CPU: for a Spark action, the utime+stime of the JVM, of every Python process under it
(planning workers, the worker daemon and its forked workers) and of the driver process,
over the action; for a consumer, its process's. Broker CPU is the broker process's over
the same window. Records per CPU-second compare the work, not the wall clock.

Worker memory: during each Spark action a thread reads /proc/<pid>/status of every
forked Python worker under the JVM (`pyspark.daemon` children, which run the tasks)
every 20 ms. At the action's start each worker's peak (VmHWM) is reset through
/proc/<pid>/clear_refs, so the peak printed is that action's: the largest VmHWM of any
worker during the action, next to the largest VmRSS of the workers just before it, and
the largest VmRSS sampled in the action's first half and in its second half (memory that
grew with the records read would show in the second).

--profile PREFIX also runs the range reader once more under cProfile and writes
PREFIX.txt (top functions by own and by cumulative time).

MB = 10^6 bytes of values.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

try:
    from . import harness          # collected by pytest as tests.bench.bench_spark
except ImportError:
    import harness                 # python tests/bench/bench_spark.py

VALUE_SIZE = 100
READERS = ("spark local[1]", "spark local[2]", "kafkalike", "range reader", "kafka-python")
CLOCK_TICK = harness.CLOCK_TICK


# -- /proc ------------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (all its threads), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def status_kib(pid: int, *names: str) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key = line.split(":", 1)[0]
                if key in names:
                    out[key] = int(line.split()[1])
    except OSError:
        pass
    return out


def process_table() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) for every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            with open(f"/proc/{pid}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                argv = [a.decode(errors="replace") for a in cmdline.read().split(b"\0") if a]
        except (OSError, ValueError, IndexError):
            continue
        table[pid] = (ppid, argv)
    return table


def descendants(table: dict[int, tuple[int, list[str]]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class SparkProcesses:
    """The Spark JVM this driver started and the Python processes under it.

    Spark runs tasks in processes forked by `python -m pyspark.daemon pyspark.worker`;
    those forks carry the same argv, so a task worker is a pyspark.worker process whose
    parent is one too.
    """

    def __init__(self) -> None:
        table = process_table()
        me = os.getpid()
        jvms = [pid for pid, (ppid, argv) in table.items()
                if ppid == me and argv and os.path.basename(argv[0]) == "java" and any("spark" in a for a in argv)]
        if len(jvms) != 1:
            raise RuntimeError(f"expected one Spark JVM under pid {me}, found {jvms}")
        self.jvm = jvms[0]

    def python_processes(self) -> tuple[list[int], list[int]]:
        """(every Python process under the JVM, the task workers among them)."""
        table = process_table()
        pythons = [pid for pid in descendants(table, self.jvm) if "pyspark.daemon" in table[pid][1]]
        workers = [pid for pid in pythons if table[pid][1][-1:] == ["pyspark.worker"]
                   and table.get(table[pid][0], (0, []))[1][-1:] == ["pyspark.worker"]]
        return pythons, workers


class ActionMonitor:
    """CPU of Spark's processes and the task workers' peak memory over one action.

    A thread reads the task workers' /proc/<pid>/status every `period` seconds and
    looks for new processes under the JVM every `rescan` seconds; its own CPU is not
    counted as the driver's.
    """

    def __init__(self, procs: SparkProcesses, broker_pid: int, period: float = 0.02, rescan: float = 0.5) -> None:
        self.procs = procs
        self.broker_pid = broker_pid
        self.period = period
        self.rescan_every = max(1, round(rescan / period))

    def __enter__(self) -> "ActionMonitor":
        pythons, workers = self.procs.python_processes()
        self.rss_before = 0
        for pid in workers:
            self.rss_before = max(self.rss_before, status_kib(pid, "VmRSS").get("VmRSS", 0))
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as clear:
                    clear.write("5")  # resets VmHWM to the current RSS
            except OSError:
                pass
        self.pythons = set(pythons)
        self.task_workers = set(workers)
        self.cpu_start = {pid: cpu_seconds(pid) or 0.0 for pid in [self.procs.jvm, *pythons]}
        self.cpu_last = dict(self.cpu_start)
        self.hwm: dict[int, int] = {}
        self.rss_peak = 0
        self.rss_timeline: list[tuple[float, int]] = []  # (seconds into the action, largest worker VmRSS)
        self.workers_seen: set[int] = set()
        self.sampler_cpu = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.broker_start = cpu_seconds(self.broker_pid) or 0.0
        self.driver_start = time.process_time()
        self.start = time.perf_counter()
        self._thread.start()
        return self

    def _rescan(self) -> None:
        pythons, workers = self.procs.python_processes()
        self.pythons.update(pythons)
        self.task_workers.update(workers)
        for pid in [self.procs.jvm, *self.pythons]:
            cpu = cpu_seconds(pid)
            if cpu is not None:
                self.cpu_last[pid] = cpu
                self.cpu_start.setdefault(pid, 0.0)  # forked during the action

    def _memory(self) -> None:
        largest = 0
        for pid in self.task_workers:
            kib = status_kib(pid, "VmHWM", "VmRSS")
            if kib:
                self.workers_seen.add(pid)
                self.hwm[pid] = max(self.hwm.get(pid, 0), kib.get("VmHWM", 0))
                largest = max(largest, kib.get("VmRSS", 0))
        self.rss_peak = max(self.rss_peak, largest)
        self.rss_timeline.append((time.perf_counter() - self.start, largest))

    def _run(self) -> None:
        tick = 0
        self._memory()
        while not self._stop.wait(self.period):
            tick += 1
            if tick % self.rescan_every == 0:
                self._rescan()
            self._memory()
        self.sampler_cpu = time.thread_time()

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self.start
        driver = time.process_time() - self.driver_start
        broker_end = cpu_seconds(self.broker_pid)
        self._stop.set()
        self._thread.join()
        self._rescan()
        self._memory()
        used = {pid: self.cpu_last[pid] - self.cpu_start[pid] for pid in self.cpu_last}
        self.cpu_parts = {"jvm": used.pop(self.procs.jvm, 0.0),
                          "tasks": sum(used.pop(pid, 0.0) for pid in self.task_workers),
                          "other_python": sum(used.values()),
                          "driver": max(driver - self.sampler_cpu, 0.0)}
        self.spark_cpu = sum(self.cpu_parts.values())
        self.broker_cpu = (broker_end if broker_end is not None else self.broker_start) - self.broker_start

    def result(self, records: int, value_bytes: int) -> dict:
        half = self.seconds / 2
        return {"seconds": self.seconds, "records": records, "bytes": value_bytes, "cpu": self.spark_cpu,
                "cpu_parts": self.cpu_parts, "broker_cpu": self.broker_cpu,
                "worker_rss_before_kib": self.rss_before, "worker_hwm_kib": max(self.hwm.values(), default=0),
                "worker_rss_peak_kib": self.rss_peak, "workers": len(self.workers_seen),
                "worker_rss_first_half_kib": max((k for t, k in self.rss_timeline if t < half), default=0),
                "worker_rss_second_half_kib": max((k for t, k in self.rss_timeline if t >= half), default=0)}


# -- the readers (each in a process of its own) ----------------------------------------------

def read_spark(args: argparse.Namespace) -> dict:
    from pyspark.sql import functions as F

    import kafkalike.spark
    from kafkalike.lab.spark import local_session

    spark = local_session(args.master, app_name="bench-spark")
    try:
        kafkalike.spark.register(spark)
        procs = SparkProcesses()

        def load(topic: str, ending: str = "latest"):
            return (spark.read.format("kafkalike").option("kafka.bootstrap.servers", args.bootstrap)
                    .option("subscribe", topic).option("endingOffsets", ending).load())

        spark.range(10).count()
        warm = json.dumps({args.topic: {str(p): 100 for p in range(args.partitions)}})
        warm_rows = load(args.topic, warm).select(F.count("*")).collect()[0][0]
        if warm_rows != 100 * args.partitions:
            raise RuntimeError(f"warm-up read {warm_rows} records")
        out = {"small": [], "big": None}
        for run, (topic, records) in enumerate([(args.topic, args.records)] * args.runs
                                               + [(args.big_topic, args.big_records)]):
            query = load(topic).select(F.count("*"), F.sum(F.length("value")))
            with ActionMonitor(procs, args.broker_pid) as monitor:
                seen, total = query.collect()[0]
            result = monitor.result(seen, total or 0)
            if run < args.runs:
                out["small"].append(result)
            else:
                out["big"] = result
        return out
    finally:
        spark.stop()


class ConsumerClock:
    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid
        self.broker_start = cpu_seconds(broker_pid) or 0.0
        self.cpu_start = time.process_time()
        self.start = time.perf_counter()

    def result(self, records: int, value_bytes: int) -> dict:
        seconds = time.perf_counter() - self.start
        return {"seconds": seconds, "records": records, "bytes": value_bytes,
                "cpu": time.process_time() - self.cpu_start,
                "broker_cpu": (cpu_seconds(self.broker_pid) or self.broker_start) - self.broker_start}


def read_kafkalike(args: argparse.Namespace) -> dict:
    from kafkalike.client.consumer import KafkaConsumer, TopicPartition
    clock = ConsumerClock(args.broker_pid)
    consumer = KafkaConsumer({"bootstrap.servers": args.bootstrap, "auto.offset.reset": "earliest",
                              "enable.auto.commit": False})
    partitions = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer.assign(partitions)
    for tp in partitions:
        consumer.seek(tp, 0)
    seen = total = 0
    while seen < args.records:
        batch = consumer.poll(1.0)
        seen += len(batch)
        for record in batch:
            total += len(record.value)
    result = clock.result(seen, total)
    consumer.close()
    return result


def read_ranges(args: argparse.Namespace) -> dict:
    """What local[1]'s task worker does, without Spark: RangeReader over each partition in turn."""
    import pyarrow.compute as pc

    from kafkalike.spark.planner import OffsetRange
    from kafkalike.spark.reader import RangeReader
    clock = ConsumerClock(args.broker_pid)
    per_partition = args.records // args.partitions
    seen = total = 0
    for partition in range(args.partitions):
        for batch in RangeReader({"bootstrap.servers": args.bootstrap},
                                 OffsetRange(args.topic, partition, 0, per_partition), include_headers=False):
            seen += batch.num_rows
            total += pc.sum(pc.binary_length(batch.column(1))).as_py() or 0
    return clock.result(seen, total)


def read_kafka_python(args: argparse.Namespace) -> dict:
    from kafka import KafkaConsumer, TopicPartition
    clock = ConsumerClock(args.broker_pid)
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, group_id=None)
    partitions = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer.assign(partitions)
    for tp in partitions:
        consumer.seek(tp, 0)
    seen = total = 0
    while seen < args.records:
        for batch in consumer.poll(timeout_ms=1000).values():
            seen += len(batch)
            for record in batch:
                total += len(record.value)
    result = clock.result(seen, total)
    consumer.close()
    return result


WORKERS = {"kafkalike": read_kafkalike, "range reader": read_ranges, "kafka-python": read_kafka_python}


def worker(args: argparse.Namespace) -> int:
    if args.worker == "spark":
        print(json.dumps(read_spark(args)))
        return 0
    if args.profile_out:
        import cProfile
        import pstats

        import pyarrow.compute  # noqa: F401  (imports stay out of the profile)

        import kafkalike.spark.reader  # noqa: F401
        profiler = cProfile.Profile()
        profiler.enable()
        result = WORKERS[args.worker](args)
        profiler.disable()
        with open(args.profile_out, "w") as out:
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("tottime").print_stats(25)
            stats.sort_stats("cumulative").print_stats(25)
    else:
        result = WORKERS[args.worker](args)
    print(json.dumps(result))
    return 0


def run_worker(reader: str, args: argparse.Namespace, bootstrap: str, broker_pid: int, topics: dict,
               profile_out: str = "") -> dict:
    command = ["--bootstrap", bootstrap, "--broker-pid", str(broker_pid),
               "--topic", topics["small"], "--big-topic", topics["big"], "--records", str(args.records),
               "--big-records", str(args.records * args.big_factor), "--partitions", str(args.partitions),
               "--runs", str(args.runs)]
    if reader.startswith("spark"):
        command += ["--worker", "spark", "--master", reader.split()[1]]
    else:
        command += ["--worker", reader]
    if profile_out:
        command += ["--profile-out", profile_out]
    return harness.run_worker(__file__, command, timeout=1800, what=reader)


# -- setup -----------------------------------------------------------------------------------

def produce(bootstrap: str, topic: str, partitions: int, per_partition: int, scratch: Path) -> float:
    """kcat writes per_partition 100-byte values into each partition; returns seconds."""
    from kafkalike.client.admin import AdminClient, NewTopic, OffsetSpec
    from kafkalike.client.metadata import TopicPartition
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    value = (b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2)[:VALUE_SIZE]
    data = scratch / f"{topic}.txt"
    data.write_bytes((value + b"\n") * per_partition)
    start = time.perf_counter()
    for partition in range(partitions):
        subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", str(partition), "-l", str(data),
                        "-X", "batch.size=1000000", "-X", "linger.ms=5", "-X", "compression.codec=none",
                        "-X", "queue.buffering.max.messages=2000000"], check=True, timeout=600)
    seconds = time.perf_counter() - start
    data.unlink()
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        ends = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)})
    wrong = {tp: listed.offset for tp, listed in ends.items() if listed.offset != per_partition}
    if wrong:
        raise RuntimeError(f"{topic}: expected {per_partition} records per partition, end offsets {wrong}")
    return seconds


median = harness.median


def run(args: argparse.Namespace) -> int:
    if args.records % args.partitions:
        raise SystemExit("--records must be a multiple of --partitions")
    with harness.Lab("spark", args.dir) as lab:
        broker = lab.broker()
        base = lab.scratch
        stamp = int(time.time() * 1000)
        per_partition = args.records // args.partitions
        topics = {"small": f"bench-spark-{stamp}", "big": f"bench-spark-big-{stamp}"}
        produced = produce(broker.bootstrap, topics["small"], args.partitions, per_partition, base)
        produce(broker.bootstrap, topics["big"], args.partitions, per_partition * args.big_factor, base)
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} cores; load average {harness.load_average():.2f}")
        print(f"{args.records:,} x {VALUE_SIZE} B over {args.partitions} partitions ({per_partition:,} each; "
              f"kcat wrote them in {produced:.1f} s), big topic {args.big_factor}x per partition; "
              f"log dir in {args.dir}; {args.reps} rotating reps, {args.runs} Spark actions per session, medians",
              flush=True)
        small: dict[str, list[dict]] = {r: [] for r in READERS}
        big: dict[str, list[dict]] = {r: [] for r in READERS if r.startswith("spark")}
        pid = broker.proc.pid
        for rep in range(args.reps):
            for reader in harness.rotated(READERS, rep):
                result = run_worker(reader, args, broker.bootstrap, pid, topics)
                runs = result["small"] + [result["big"]] if reader.startswith("spark") else [result]
                for one in runs:
                    expected = args.records * (args.big_factor if one is result.get("big") else 1)
                    if one["records"] != expected or one["bytes"] != expected * VALUE_SIZE:
                        raise RuntimeError(f"{reader} saw {one['records']} records and {one['bytes']} value bytes, "
                                           f"expected {expected} and {expected * VALUE_SIZE}")
                if reader.startswith("spark"):
                    small[reader].extend(result["small"])
                    big[reader].append(result["big"])
                else:
                    small[reader].append(result)
            print(f"  rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{r} {small[r][-1]['records'] / small[r][-1]['seconds']:,.0f}" for r in READERS)
                + f" rec/s; load average {os.getloadavg()[0]:.2f}", flush=True)

        def rate(runs: list[dict]) -> float:
            return median([r["records"] / r["seconds"] for r in runs])

        def per_cpu(runs: list[dict]) -> float:
            return median([r["records"] / r["cpu"] for r in runs if r["cpu"] > 0])

        rates = {r: rate(small[r]) for r in READERS}
        print(f"\n{'reader':<16}{'records':>11}{'seconds':>9}{'records/s':>11}{'MB/s':>7}{'reader CPU':>12}"
              f"{'broker CPU':>12}{'rec/CPU-s':>11}")
        for reader in READERS:
            runs = small[reader]
            seconds = median([r["seconds"] for r in runs])
            print(f"{reader:<16}{args.records:>11,}{seconds:>9.2f}{rates[reader]:>11,.0f}"
                  f"{rates[reader] * VALUE_SIZE / 1e6:>7.1f}{median([r['cpu'] / r['seconds'] for r in runs]):>11.0%}"
                  f"{median([r['broker_cpu'] / r['seconds'] for r in runs]):>12.0%}{per_cpu(runs):>11,.0f}")
        for reader, runs in big.items():
            print(f"{reader + ' big':<16}{args.records * args.big_factor:>11,}"
                  f"{median([r['seconds'] for r in runs]):>9.2f}{rate(runs):>11,.0f}"
                  f"{rate(runs) * VALUE_SIZE / 1e6:>7.1f}{median([r['cpu'] / r['seconds'] for r in runs]):>11.0%}"
                  f"{median([r['broker_cpu'] / r['seconds'] for r in runs]):>12.0%}{per_cpu(runs):>11,.0f}")
        print("\nCPU seconds per action (medians): JVM / task workers / other Spark Python / driver; "
              "kafkalike consumer for comparison")
        for reader in READERS[:2]:
            for label, runs in (("", small[reader]), (" big", big[reader])):
                parts = {k: median([r["cpu_parts"][k] for r in runs]) for k in ("jvm", "tasks", "other_python",
                                                                                "driver")}
                print(f"  {reader + label:<19}" + " / ".join(f"{v:5.2f}" for v in parts.values()))
        for reader in READERS[2:4]:
            print(f"  {reader:<19}{median([r['cpu'] for r in small[reader]]):5.2f}")
        one, two, ours, alone, theirs = (rates[r] for r in READERS)
        print("\nratios (records/s):")
        print(f"  spark local[1] / kafkalike consumer   {one / ours:5.2f}   (aim >= 0.5)")
        print(f"  spark local[2] / spark local[1]       {two / one:5.2f}")
        print(f"  spark local[2] / kafkalike consumer   {two / ours:5.2f}")
        print(f"  spark local[1] / range reader alone   {one / alone:5.2f}")
        print(f"  range reader alone / kafkalike        {alone / ours:5.2f}")
        print(f"  kafkalike / kafka-python              {ours / theirs:5.2f}")
        print(f"  spark local[1] / kafka-python         {one / theirs:5.2f}")
        print("ratios (records per CPU-second):")
        for reader in ("spark local[1]", "spark local[2]", "range reader"):
            ratio = per_cpu(small[reader]) / per_cpu(small["kafkalike"])
            print(f"  {reader + ' / kafkalike consumer':<38}{ratio:5.2f}")
        print(f"\nPython task worker memory (MiB; peak over {args.reps} sessions per row):")
        print(f"{'topic':<8}{'records/partition':>19}{'master':>10}{'workers':>9}{'RSS before':>12}"
              f"{'peak VmHWM':>12}{'VmRSS 1st half':>16}{'2nd half':>10}")
        for reader in READERS[:2]:
            for label, runs, count in (("small", small[reader], per_partition),
                                       ("big", big[reader], per_partition * args.big_factor)):
                print(f"{label:<8}{count:>19,}{reader.split()[1]:>10}{max(r['workers'] for r in runs):>9}"
                      f"{max(r['worker_rss_before_kib'] for r in runs) / 1024:>12.1f}"
                      f"{max(r['worker_hwm_kib'] for r in runs) / 1024:>12.1f}"
                      f"{max(r['worker_rss_first_half_kib'] for r in runs) / 1024:>16.1f}"
                      f"{max(r['worker_rss_second_half_kib'] for r in runs) / 1024:>10.1f}")
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"small": small, "big": big}, out, indent=1)
            print(f"every measurement: {args.json}")
        if args.profile:
            out = f"{args.profile}.txt"
            run_worker("range reader", args, broker.bootstrap, pid, topics, out)
            print(f"cProfile of the range reader over the {args.partitions} partitions: {out}")
        print(f"load average {harness.load_average():.2f} at the end")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3, dir_help="where the broker's log dir goes (default /dev/shm)")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--big-factor", type=int, default=4)
    parser.add_argument("--runs", type=int, default=2, help="timed actions on the small topic per Spark session")
    parser.add_argument("--json", default="", help="write every measurement to this file")
    parser.add_argument("--profile", default="", help="also run the range reader once under cProfile: PREFIX.txt")
    harness.hidden(parser, "--worker", choices=("spark", *WORKERS))
    harness.hidden(parser, "--profile-out", default="")
    harness.hidden(parser, "--master", "--bootstrap", "--topic", "--big-topic")
    harness.hidden(parser, "--broker-pid", "--big-records", type=int)
    args = parser.parse_args(argv)
    return worker(args) if args.worker else run(args)


@harness.bench_test
def test_spark_bench_small() -> None:
    """The whole benchmark on a small topic: every reader sees every record."""
    assert main(["--records", "40000", "--reps", "1", "--runs", "1"]) == 0


if __name__ == "__main__":
    sys.exit(main())
