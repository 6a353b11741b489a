"""Produce and fetch throughput of one broker, next to the loopback and disk limits, in one run.

    python tests/bench/bench_broker.py [--records 1000000] [--dir /dev/shm] [--reps 5]
                                       [--linger-ms 5] [--batch-size 16384]
                                       [--profile /tmp/broker-produce] [--compare-with DIR]
                                       [--loads confluent,kcat]

It starts its own ZooKeeper and one broker (kafkalike.lab), the broker's log dir under
--dir (memory by default), and removes everything afterwards. One partition, acks=1,
100-byte values, no key, no compression, 16 KiB batches.

Each repetition measures, in a rotating order so machine noise spreads evenly:

- produce, confluent-kafka (the load generator the aim is stated for): a Python loop
  of Producer.produce() calls, timed from the first call until flush() returns;
- produce, kcat (librdkafka without Python in the loop), same settings, from a file;
- fetch, confluent-kafka Consumer in assign mode from offset 0 with large fetch sizes,
  and fetch, kcat -C, each reading back everything the matching produce wrote;
- loopback: a raw Python socket pair (two processes) moving the same bytes over
  127.0.0.1 in 16 KiB sends;
- disk: sequential 16 KiB writes of the same bytes, then one fsync, to the log dir's
  filesystem and to /tmp.

"The same bytes" is the size of the log the produce run left on disk (values plus
record and batch framing). Medians over the repetitions are printed, MB = 10^6 bytes.
The broker's CPU time is read from /proc during each phase: "ceiling" is the rate the
broker would reach if it had its CPU to itself (bytes / broker CPU seconds), which tells
a slow broker from a slow load generator on a 2-core machine. "CPU ms/MB" is the same
reading the other way round: broker CPU milliseconds per MB of payload produced or
fetched.

--loads kcat runs only the kcat phases (e.g. with --batch-size 1048576, where the
confluent-kafka phases measure their own Python loop); kcat's message.max.bytes is
raised to fit batches larger than its default 1,000,000. --value-size changes the
record value size (100 bytes by default, as the aims state them): with larger values a
load generator spends less per MB, which shows the broker's rate where kcat's per-record
cost is the limit.

--loads wire adds (or, alone, runs) a generator with almost no cost per record
(wire_load.py: one pre-built ProduceRequest v8 frame of one batch sent again and again,
5 in flight; raw Fetch v11 requests whose answers are read only as far as the batch
headers), so the broker's own rate shows where kcat's per-record CPU is the limit; its
batches hold batch.size bytes of records exactly.

--profile PREFIX also records the broker with py-spy during one extra produce run per
load generator (PREFIX.confluent.txt, PREFIX.kcat.txt, py-spy's raw collapsed stacks)
and prints where its reactor thread spends its time (py-spy must be installed).

--compare-with DIR also starts a broker from another checkout (e.g. `git worktree add
/tmp/kl-base <commit>`) and runs every produce and fetch phase against both brokers in
one rotation; it prints the table for each broker and the ratios this/base.
"""
from __future__ import annotations

import collections
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

try:
    from . import harness          # collected by pytest as tests.bench.bench_broker
except ImportError:
    import harness                 # python tests/bench/bench_broker.py

VALUE_SIZE = 100
CHUNK = 16384
MB = harness.MB
BROKER_PHASES = ("produce confluent", "produce kcat", "produce wire", "fetch confluent", "fetch kcat", "fetch wire")
WIRE_LOAD = str(Path(__file__).with_name("wire_load.py"))
LIMITS = ("loopback", "disk logdir write", "disk logdir write+fsync", "disk /tmp write", "disk /tmp write+fsync")


@dataclass
class Sample:
    """One timed phase: how long it took and what it cost whom."""

    seconds: float
    payload_bytes: int = 0     # what the user handed over (values)
    wire_bytes: int = 0        # what moved: values plus record and batch framing
    records: int = 0
    broker_cpu: float = 0.0    # seconds of broker CPU during the phase
    client_cpu: float = 0.0    # seconds of load-generator CPU during the phase

    def mb_s(self) -> float:
        return (self.payload_bytes or self.wire_bytes) / self.seconds / MB

    def wire_mb_s(self) -> float:
        return self.wire_bytes / self.seconds / MB

    def records_s(self) -> float:
        return self.records / self.seconds

    def broker_busy(self) -> float:
        return self.broker_cpu / self.seconds

    def cpu_ms_per_mb(self) -> float:
        return 1000 * self.broker_cpu / (self.payload_bytes / MB)

    def broker_ceiling_mb_s(self) -> float:
        return self.payload_bytes / self.broker_cpu / MB if self.broker_cpu else float("inf")


def log_bytes(log_dir: Path, topic: str) -> int:
    return sum(p.stat().st_size for p in (log_dir / f"{topic}-0").glob("*.log"))


# -- the broker side --------------------------------------------------------------------

class Bench:
    def __init__(self, broker, records: int, batch_size: int, linger_ms: int, scratch: Path,
                 value_size: int = 100):
        self.broker = broker
        self.records = records
        self.value_size = value_size
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.scratch = scratch
        self.value = harness.printable_value(value_size)
        self.lines_path = scratch / "values.txt"
        if not self.lines_path.exists():
            harness.write_value_lines(self.lines_path, self.value, records)
        self._topics = 0

    def new_topic(self, label: str) -> str:
        self._topics += 1
        # Led by the broker before the run, so no run pays for leader election.
        return harness.create_topic(self.broker.bootstrap, f"bench-{label}-{self._topics}", leader=0)

    def broker_cpu(self) -> float:
        return harness.process_cpu(self.broker.proc.pid)

    def _sample(self, timed: harness.Timed, topic: str) -> Sample:
        sample = Sample(timed.seconds, self.records * self.value_size, 0, self.records, timed.broker_cpu[0],
                        timed.client_cpu)
        sample.wire_bytes = log_bytes(self.broker.log_dir, topic)
        return sample

    def produce_confluent(self, topic: str) -> Sample:
        return self._sample(harness.produce_confluent(
            self.broker.bootstrap, topic, self.records, self.value, acks=1, batch_size=self.batch_size,
            linger_ms=self.linger_ms, broker_pids=[self.broker.proc.pid]), topic)

    def produce_kcat(self, topic: str) -> Sample:
        # librdkafka caps a batch at message.max.bytes too (default 1,000,000).
        extra = {"message.max.bytes": str(self.batch_size + 4096)} if self.batch_size > 1_000_000 - 4096 else None
        return self._sample(harness.produce_kcat(
            self.broker.bootstrap, topic, self.lines_path, acks=1, batch_size=self.batch_size,
            linger_ms=self.linger_ms, broker_pids=[self.broker.proc.pid], extra=extra), topic)

    def produce_wire(self, topic: str) -> Sample:
        """Pre-built ProduceRequest frames from wire_load.py: the broker's rate with a load
        generator that costs almost nothing per record."""
        broker0 = self.broker_cpu()
        done = harness.run_worker(WIRE_LOAD, ["produce", self.broker.bootstrap, topic, str(self.records),
                                              str(self.value_size), str(self.batch_size)], what="wire produce")
        return Sample(done["seconds"], done["records"] * self.value_size, log_bytes(self.broker.log_dir, topic),
                      done["records"], self.broker_cpu() - broker0, done["cpu"])

    def fetch_wire(self, topic: str, wire_bytes: int) -> Sample:
        broker0 = self.broker_cpu()
        done = harness.run_worker(WIRE_LOAD, ["fetch", self.broker.bootstrap, topic, str(self.records)],
                                  what="wire fetch")
        if done["bytes"] != wire_bytes:
            raise RuntimeError(f"wire fetch read {done['bytes']} bytes of {wire_bytes}")
        return Sample(done["seconds"], done["records"] * self.value_size, wire_bytes, done["records"],
                      self.broker_cpu() - broker0, done["cpu"])

    def fetch_confluent(self, topic: str, wire_bytes: int) -> Sample:
        from confluent_kafka import Consumer, TopicPartition
        consumer = Consumer({
            "bootstrap.servers": self.broker.bootstrap,
            "group.id": "bench-fetch",
            "enable.auto.commit": False,
            "fetch.max.bytes": 16 * 1024 * 1024,
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
            "queued.min.messages": 1_000_000,
            "queued.max.messages.kbytes": 262_144,
            "fetch.queue.backoff.ms": 10,
            "check.crcs": False,
        })
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            last, count, payload = high - 1, 0, 0
            broker0, client0 = self.broker_cpu(), harness.own_cpu()
            start = time.perf_counter()
            consumer.assign([TopicPartition(topic, 0, 0)])
            deadline = time.monotonic() + 300
            offset = -1
            while offset < last:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"confluent fetch stuck at offset {offset} of {last}")
                # Ask for no more than remain: consume() waits out its timeout for a short batch.
                for msg in consumer.consume(max(1, min(10000, last - offset)), 1.0):
                    if msg.error():
                        raise RuntimeError(f"confluent fetch: {msg.error()}")
                    offset = msg.offset()
                    payload += len(msg.value())
                    count += 1
            seconds = time.perf_counter() - start
            if count != high:
                raise RuntimeError(f"confluent fetch read {count} records of {high}")
            return Sample(seconds, payload, wire_bytes, count,
                          self.broker_cpu() - broker0, harness.own_cpu() - client0)
        finally:
            consumer.close()

    def fetch_kcat(self, topic: str, wire_bytes: int) -> Sample:
        out_path = self.scratch / "kcat-offsets.txt"
        command = ["kcat", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o\n",
                   "-b", self.broker.bootstrap, "-X", "fetch.max.bytes=16777216",
                   "-X", "max.partition.fetch.bytes=8388608", "-X", "queued.min.messages=1000000",
                   "-X", "queued.max.messages.kbytes=262144"]
        broker0, client0 = self.broker_cpu(), harness.children_cpu()
        with open(out_path, "wb") as out:
            start = time.perf_counter()
            done = subprocess.run(command, stdout=out, stderr=subprocess.PIPE, timeout=300)
            seconds = time.perf_counter() - start
        sample = Sample(seconds, 0, wire_bytes, 0, self.broker_cpu() - broker0, harness.children_cpu() - client0)
        offsets = out_path.read_bytes().split()
        out_path.unlink()
        if done.returncode != 0 or len(offsets) != self.records or int(offsets[-1]) != self.records - 1:
            raise RuntimeError(f"kcat fetch failed ({done.returncode}): {done.stderr[-500:]!r}")
        sample.records = len(offsets)
        sample.payload_bytes = self.records * self.value_size
        return sample


# -- the limits -------------------------------------------------------------------------

def _receive(listener: socket.socket, total: int) -> None:
    conn, _ = listener.accept()
    buf = bytearray(256 * 1024)
    view = memoryview(buf)
    got = 0
    while got < total:
        n = conn.recv_into(view)
        if n == 0:
            break
        got += n
    conn.sendall(b"k")
    conn.close()


def loopback(total: int) -> Sample:
    """A raw Python sender and receiver (separate processes) moving total bytes over 127.0.0.1."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    receiver = multiprocessing.get_context("fork").Process(target=_receive, args=(listener, total))
    receiver.start()
    chunk = memoryview(os.urandom(CHUNK))
    try:
        sender = socket.create_connection(listener.getsockname())
        start = time.perf_counter()
        sent = 0
        while sent < total:
            piece = chunk[: min(CHUNK, total - sent)]
            sender.sendall(piece)
            sent += len(piece)
        if sender.recv(1) != b"k":
            raise RuntimeError("loopback receiver did not confirm")
        seconds = time.perf_counter() - start
        sender.close()
    finally:
        receiver.join(30)
        listener.close()
    return Sample(seconds, 0, total)


@dataclass
class DiskSample:
    write: Sample    # into the page cache (what the broker does: no fsync by default)
    synced: Sample   # writes plus one fsync: the device's sustained rate


def disk(directory: Path, total: int) -> DiskSample:
    """Sequential 16 KiB writes of total bytes to a new file in directory, then fsync."""
    path = directory / f"bench-disk-{os.getpid()}.bin"
    chunk = memoryview(os.urandom(CHUNK))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        written = 0
        while written < total:
            written += os.write(fd, chunk[: min(CHUNK, total - written)])
        wrote = time.perf_counter() - start
        os.fsync(fd)
        synced = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    return DiskSample(Sample(wrote, 0, total), Sample(synced, 0, total))


# -- profiling --------------------------------------------------------------------------

def profile_produce(bench: Bench, prefix: str, rate: int = 200, loads: tuple[str, ...] = ("confluent", "kcat")) -> None:
    """py-spy record the broker through one produce run per load generator; summarise its reactor thread."""
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    for label, produce in (("confluent", bench.produce_confluent), ("kcat", bench.produce_kcat),
                           ("wire", bench.produce_wire)):
        if label not in loads:
            continue
        topic = bench.new_topic(f"profile-{label}")
        out_path = Path(f"{prefix}.{label}.txt")
        spy = subprocess.Popen([py_spy, "record", "--rate", str(rate), "--format", "raw",
                                "--output", str(out_path), "--pid", str(bench.broker.proc.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)  # py-spy attaches
        sample = produce(topic)
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
        print(f"\nprofile: broker under py-spy ({rate} Hz) during a {label} produce run of "
              f"{sample.seconds:.2f}s at {sample.mb_s():.1f} MB/s; raw stacks in {out_path}")
        summarise_profile(out_path, rate, sample.seconds)


def summarise_profile(path: Path, rate: int, run_seconds: float) -> None:
    self_time: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    reactor = 0
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        stack, count_text = line.rsplit(" ", 1)
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if not any("ReactorBase.mainLoop" in f for f in frames):
            continue  # kazoo and thread-pool threads
        count = int(count_text)
        reactor += count
        self_time[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    if not reactor:
        print("  (no reactor samples)")
        return
    print(f"  reactor thread: {reactor} samples, busy about {100 * reactor / (rate * run_seconds):.0f}% of the "
          f"run (py-spy leaves out samples where the thread sleeps)")
    print("  self time, share of the reactor's busy samples:")
    for frame, count in self_time.most_common(12):
        print(f"    {100 * count / reactor:5.1f}%  {frame}")
    print("  inclusive, kafkalike frames:")
    shown = 0
    for frame, count in inclusive.most_common():
        if "kafkalike/" in frame and shown < 16:
            print(f"    {100 * count / reactor:5.1f}%  {frame}")
            shown += 1


# -- the run ----------------------------------------------------------------------------

def median(samples: list, key: Callable) -> float:
    return harness.median(key(s) for s in samples)


def run(args) -> int:
    sides = harness.checkouts(args)
    with harness.Lab("broker", args.dir) as lab:
        benches = {side.label: Bench(lab.broker(side.label, side), args.records, args.batch_size, args.linger_ms,
                                     lab.scratch, args.value_size)
                   for side in sides}
        bench = benches["this"]
        broker = bench.broker
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {harness.machine()}; "
              f"load average {harness.load_average():.2f} at start")
        harness.print_checkouts(sides)
        print(f"broker log dir {broker.log_dir} ({harness.filesystem_of(broker.log_dir)}); "
              f"/tmp is {harness.filesystem_of(Path(tempfile.gettempdir()))}")
        print(f"{args.records} records of {args.value_size} bytes, 1 partition, acks=1, batch.size={args.batch_size}, "
              f"linger.ms={args.linger_ms}, no compression; {args.reps} interleaved reps, medians")

        results: dict[str, dict[str, list]] = {side.label: collections.defaultdict(list) for side in sides}
        limits_: dict[str, list] = collections.defaultdict(list)
        wire = 0

        def produce_and_fetch(side: str, label: str) -> None:
            nonlocal wire
            one = benches[side]
            produce, fetch = {"confluent": (one.produce_confluent, one.fetch_confluent),
                              "kcat": (one.produce_kcat, one.fetch_kcat),
                              "wire": (one.produce_wire, one.fetch_wire)}[label]
            topic = one.new_topic(label)
            made = produce(topic)
            wire = made.wire_bytes
            results[side][f"produce {label}"].append(made)
            results[side][f"fetch {label}"].append(fetch(topic, made.wire_bytes))

        def limits() -> None:
            size = wire or args.records * (args.value_size + 10)
            limits_["loopback"].append(loopback(size))
            here = disk(broker.log_dir, size)
            limits_["disk logdir write"].append(here.write)
            limits_["disk logdir write+fsync"].append(here.synced)
            tmp = disk(Path(tempfile.gettempdir()), size)
            limits_["disk /tmp write"].append(tmp.write)
            limits_["disk /tmp write+fsync"].append(tmp.synced)

        phases: list[Callable[[], None]] = [
            (lambda side=side.label, label=label: produce_and_fetch(side, label))
            for label in args.loads for side in sides]
        phases.append(limits)

        def progress(rep: int) -> None:
            mine = results["this"]
            line = f"  rep {rep + 1}/{args.reps}: produce " + ", ".join(
                f"{load} {mine[f'produce {load}'][-1].mb_s():.1f} MB/s" for load in args.loads)
            if len(sides) > 1:
                base = results["base"]
                line += " (base: " + ", ".join(f"{base[f'produce {load}'][-1].mb_s():.1f}"
                                               for load in args.loads) + ")"
            print(line + f"; loopback {limits_['loopback'][-1].wire_mb_s():.0f} MB/s", flush=True)

        harness.interleave(args.reps, phases, lambda phase: phase(), progress)
        phases_run = [name for name in BROKER_PHASES if name.split()[1] in args.loads]

        for side in sides:
            if len(sides) > 1:
                print(f"\n== {side.label} broker ({side.root})")
            report({**results[side.label], **limits_}, wire, phases_run)
        if len(sides) > 1:
            harness.comparison(
                "this / base (payload MB/s per phase; the same rotation, same machine load)",
                [(name, [s.mb_s() for s in results["this"][name]], [s.mb_s() for s in results["base"][name]])
                 for name in phases_run], "MB/s")
            harness.comparison(
                "broker CPU milliseconds per payload MB (lower is better)",
                [(name, [s.cpu_ms_per_mb() for s in results["this"][name]],
                  [s.cpu_ms_per_mb() for s in results["base"][name]])
                 for name in phases_run], "CPU ms/MB", higher_is_better=False)
        print(f"load average {harness.load_average():.2f} at the end (other work on the machine skews a run)")
        if args.profile:
            profile_produce(bench, args.profile, loads=args.loads)
        return 0


def report(results: dict[str, list], wire: int, phases: list[str]) -> None:
    print(f"\nbytes per run: {wire / MB:.1f} MB on the wire and in the log")
    print(f"{'phase':26} {'MB/s':>8} {'wire MB/s':>10} {'records/s':>11} {'broker CPU':>11} "
          f"{'ceiling MB/s':>13} {'CPU ms/MB':>10} {'client CPU':>11}")
    for name in phases:
        s = results[name]
        print(f"{name:26} {median(s, Sample.mb_s):8.1f} {median(s, Sample.wire_mb_s):10.1f} "
              f"{median(s, Sample.records_s):11.0f} {100 * median(s, Sample.broker_busy):10.0f}% "
              f"{median(s, Sample.broker_ceiling_mb_s):13.0f} {median(s, Sample.cpu_ms_per_mb):10.2f} "
              f"{100 * median(s, lambda x: x.client_cpu / x.seconds):10.0f}%")
    for name in LIMITS:
        print(f"{name:26} {'':8} {median(results[name], Sample.wire_mb_s):10.1f}")

    def ratio(a: str, b: str) -> str:
        return f"{median(results[a], Sample.wire_mb_s) / median(results[b], Sample.wire_mb_s):.2f}"

    print("\nratios (wire bytes per second, medians):")
    for broker_phase in phases:
        print(f"  {broker_phase:18} / loopback {ratio(broker_phase, 'loopback')}")
    for broker_phase in (name for name in phases if name.startswith("produce")):
        print(f"  {broker_phase:18} / disk logdir write {ratio(broker_phase, 'disk logdir write')}"
              f", write+fsync {ratio(broker_phase, 'disk logdir write+fsync')}"
              f"; /tmp write {ratio(broker_phase, 'disk /tmp write')}"
              f", write+fsync {ratio(broker_phase, 'disk /tmp write+fsync')}")


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=5, compare=True,
                                dir_help="where the broker's log dir goes (default /dev/shm)")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--value-size", type=int, default=VALUE_SIZE,
                        help="bytes per record value (default 100, the aims' setting)")
    parser.add_argument("--loads", type=lambda text: tuple(text.split(",")), default=("confluent", "kcat"),
                        help="load generators to run, of confluent,kcat,wire (default confluent,kcat)")
    parser.add_argument("--profile", metavar="PREFIX",
                        help="py-spy the broker through one extra produce run per load generator")
    return run(parser.parse_args(argv))


@harness.bench_test
def test_broker_bench_short() -> None:
    """The whole benchmark, small: every phase delivers and reads back every record."""
    assert main(["--records", "20000", "--reps", "1", "--loads", "confluent,kcat,wire"]) == 0


if __name__ == "__main__":
    sys.exit(main())
