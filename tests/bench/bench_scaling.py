"""Scaling: produce throughput and broker CPU by partition count and by client connections;
Metadata and group rebalance times up to 10,000 partitions; how each grows.

    python tests/bench/bench_scaling.py [--quick] [--records 300000] [--reps 3] [--dir /dev/shm]
                                        [--partitions 1,10,100,1000] [--connections 1,10,100]
                                        [--connection-partitions 100] [--big 10000]
                                        [--big-brokers 3] [--max-in-flight N] [--no-big]
                                        [--nofile 65536] [--profile /tmp/scaling]

It starts its own ZooKeeper, one broker for the produce parts and then a cluster of
--big-brokers for the many-partitions part (kafkalike.lab, log dirs under --dir, memory by
default), and removes everything afterwards, whatever happens (SIGTERM too). Every topic
has RF=1.

1. **Partitions.** One topic per count in --partitions (created before any run; the time
   to create each, until every partition has a leader, is reported). Each run is kcat -P
   (librdkafka, no Python in the loop) writing --records 100-byte values, acks=1,
   batch.size 16384, linger.ms 5, no compression, keyless with
   sticky.partitioning.linger.ms=0 so that every record goes to a random partition: the
   records are spread over all partitions, as many producers' keyed traffic would be.
2. **Connections.** N confluent-kafka Producers in this one process (N client
   connections to the broker, counted with `ss` before the timed part), all writing to
   the --connection-partitions topic, records handed out round robin from one Python
   loop, timed from the first produce() until every producer's flush() returns (each
   producer connects and sends one untimed record first). Same settings as above.
   --max-in-flight sets max.in.flight.requests.per.connection for every producer
   (librdkafka's default is 1,000,000, the Java client's 5).
3. **Many partitions** (skipped with --no-big). The produce broker is stopped and a
   cluster of --big-brokers started; topics of every --partitions count and of --big
   (10,000) partitions are created and timed; then, for each, the median time of a Metadata request for that one
   topic, and at the end of a full Metadata request (all topics), from confluent-kafka's
   AdminClient.list_topics; and a consumer group's rebalance times with confluent-kafka
   Consumers (range assignor, heartbeat.interval.ms=100): a first member subscribes to
   the topic (time until its assignment callback), then a second member subscribes (time
   until both members have seen their new assignment: the first one notices the
   rebalance at a heartbeat, at most 100 ms after the second one's JoinGroup).

Broker CPU is the broker process's utime+stime from /proc/<pid>/stat, before and after
each timed part; "CPU s/MB" is broker CPU seconds per 10^6 bytes of values. Repetitions
run the cases of a part in rotating order; medians are printed, and each table gives
every case's ratio to the smallest one. The load average is printed before and after
each part (the machine has 2 cores shared with other work).

--profile PREFIX records the broker with py-spy during one more kcat run at the largest
partition count, one more run with the most producers, and the Metadata requests and the
two-member rebalance at --big partitions, and prints where its reactor thread spends its
time (raw stacks in PREFIX.produce.txt, PREFIX.connections.txt and PREFIX.big.txt).

"Records/batch" counts the record batches a run added to the log (the segment files walked
by their length fields afterwards, untimed).

The brokers inherit an open-files limit of --nofile where this process may raise it. A
broker keeps five descriptors per partition (.log, and .index and .timeindex twice each),
so 10,000 partitions on one broker need more than the 20,000 this machine allows (every
partition then fails LeaderAndIsr with "Too many open files"); after creating the big
topic the run prints each broker's descriptors and how many partitions failed.

--quick: 30,000 records, 1 rep, --big 2000; under two minutes on an idle machine.
"""
from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

try:
    from . import harness          # collected by pytest as tests.bench.bench_scaling
except ImportError:
    import harness                 # python tests/bench/bench_scaling.py

VALUE_SIZE = 100
MB = harness.MB
SPREAD = {"sticky.partitioning.linger.ms": "0"}


def client_settings(args: argparse.Namespace) -> dict[str, str]:
    """librdkafka settings of every producer: records spread, and --max-in-flight if given."""
    settings = dict(SPREAD)
    if args.max_in_flight:
        settings["max.in.flight.requests.per.connection"] = str(args.max_in_flight)
    return settings


@dataclass
class Sample:
    seconds: float
    records: int
    broker_cpu: float
    client_cpu: float
    batches: int = 0           # record batches the run added to the log

    def records_per_batch(self) -> float:
        return self.records / self.batches if self.batches else float("nan")

    def mb_s(self) -> float:
        return self.records * VALUE_SIZE / self.seconds / MB

    def records_s(self) -> float:
        return self.records / self.seconds

    def cpu_per_mb(self) -> float:
        return self.broker_cpu / (self.records * VALUE_SIZE / MB)

    def busy(self) -> float:
        return self.broker_cpu / self.seconds

    def client_busy(self) -> float:
        return self.client_cpu / self.seconds


def topic_name(partitions: int) -> str:
    return f"scale-p{partitions}"


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def med(samples: list, key) -> float:
    return harness.median(key(s) for s in samples)


def stamp(what: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {what}; load average {harness.load_average():.2f}", flush=True)


class Bench:
    def __init__(self, cluster, args: argparse.Namespace, scratch: Path) -> None:
        self.cluster = cluster
        self.broker = cluster.brokers[0]     # produce, Metadata and the groups' bootstrap
        self.args = args
        self.value = harness.printable_value(VALUE_SIZE)
        self.lines = harness.write_value_lines(scratch / "values.txt", self.value, args.records)
        self.created: dict[int, tuple[float, float]] = {}   # partitions -> (seconds, broker CPU)

    @property
    def pid(self) -> int:
        return self.broker.proc.pid

    def cpu(self) -> float:
        """CPU seconds of every broker of the cluster."""
        return sum(harness.process_cpu(b.proc.pid) for b in self.cluster.brokers)

    def create(self, partitions: int) -> str:
        """The topic of `partitions` partitions, timed until every partition has a leader."""
        name = topic_name(partitions)
        if partitions not in self.created:
            cpu0, start = self.cpu(), time.perf_counter()
            if partitions <= 1000:
                harness.create_topic(self.broker.bootstrap, name, partitions, timeout=600)
            else:
                self.create_large(name, partitions)
            self.created[partitions] = (time.perf_counter() - start, self.cpu() - cpu0)
        return name

    def create_large(self, name: str, partitions: int, timeout: float = 1800) -> None:
        """CreateTopics with timeouts long enough for thousands of partitions (the harness's
        30 s is not), then wait until every partition has a leader."""
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, "log_level": 2})
        future = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)],
                                     operation_timeout=timeout, request_timeout=timeout)[name]
        future.result(timeout)
        deadline = time.monotonic() + timeout
        while True:
            found = admin.list_topics(name, timeout=300).topics[name].partitions
            if len(found) == partitions and all(p.leader >= 0 for p in found.values()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {name}: {sum(p.leader >= 0 for p in found.values())} of {partitions} "
                                   f"partitions have a leader after {timeout:.0f}s")
            time.sleep(0.5)

    # -- produce --------------------------------------------------------------------------

    def log_ends(self, partitions: int) -> dict[Path, int]:
        """The size of every segment file of a topic (the broker writes them with os.write)."""
        ends = {}
        for index in range(partitions):
            for segment in (self.broker.log_dir / f"{topic_name(partitions)}-{index}").glob("*.log"):
                ends[segment] = segment.stat().st_size
        return ends

    def batches_since(self, partitions: int, ends: dict[Path, int]) -> int:
        """Record batches written after `ends`, walked by their length fields (offset 8,
        length 4, then `length` bytes): what the broker stored per produce, untimed."""
        count = 0
        for segment in self.log_ends(partitions):
            with open(segment, "rb") as f:
                f.seek(ends.get(segment, 0))
                data = f.read()
            position = 0
            while position + 12 <= len(data):
                position += 12 + int.from_bytes(data[position + 8:position + 12], "big")
                count += 1
        return count

    def produce_kcat(self, partitions: int) -> Sample:
        ends = self.log_ends(partitions)
        timed = harness.produce_kcat(self.broker.bootstrap, topic_name(partitions), self.lines, acks=1,
                                     batch_size=16384, linger_ms=5, broker_pids=[self.pid], partition=None,
                                     extra=client_settings(self.args))
        return Sample(timed.seconds, self.args.records, timed.broker_cpu[0], timed.client_cpu,
                      self.batches_since(partitions, ends))

    def connections_open(self) -> int:
        """Established connections to the broker's port (kernel's view, via ss)."""
        found = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{self.broker.port} )"],
                               capture_output=True, text=True)
        return len([line for line in found.stdout.splitlines() if line.strip()])

    def produce_connections(self, clients: int) -> tuple[Sample, int]:
        """`clients` confluent-kafka producers in this process, records handed out round robin."""
        from confluent_kafka import Producer
        topic = topic_name(self.args.connection_partitions)
        errors: list[str] = []
        config = {"bootstrap.servers": self.broker.bootstrap, "acks": 1, "enable.idempotence": False,
                  "batch.size": 16384, "linger.ms": 5, "compression.type": "none",
                  "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                  "delivery.report.only.error": True, "log_level": 2,
                  "on_delivery": lambda err, msg: errors.append(str(err)), **client_settings(self.args)}
        before = self.connections_open()
        producers = [Producer(config) for _ in range(clients)]
        try:
            for producer in producers:
                producer.produce(topic, b"warm-up")
            for producer in producers:
                producer.flush(60)
            seen = self.connections_open() - before
            records, value = self.args.records, self.value
            ends = self.log_ends(self.args.connection_partitions)
            cpu0, client0 = harness.process_cpu(self.pid), harness.own_cpu()
            start = time.perf_counter()
            for i in range(records):
                producer = producers[i % clients]
                while True:
                    try:
                        producer.produce(topic, value)
                        break
                    except BufferError:
                        producer.poll(0.0005)
            left = sum(producer.flush(300) for producer in producers)
            seconds = time.perf_counter() - start
            sample = Sample(seconds, records, harness.process_cpu(self.pid) - cpu0, harness.own_cpu() - client0)
            sample.batches = self.batches_since(self.args.connection_partitions, ends)
        finally:
            del producers
        if left or errors:
            raise RuntimeError(f"{clients} producers: {left} undelivered, errors {errors[:3]}")
        return sample, seen

    # -- metadata and groups --------------------------------------------------------------

    def metadata(self, topic: str | None, times: int = 5) -> tuple[float, int]:
        """Median seconds of a Metadata request for `topic` (None: all topics), and the
        partitions it returned."""
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, "log_level": 2})
        admin.list_topics(timeout=60)   # connected, untimed
        seconds, partitions = [], 0
        for _ in range(times):
            start = time.perf_counter()
            found = admin.list_topics(topic, timeout=300) if topic else admin.list_topics(timeout=300)
            seconds.append(time.perf_counter() - start)
            partitions = sum(len(t.partitions) for t in found.topics.values())
        return harness.median(seconds), partitions

    def rebalance(self, topic: str, group: str) -> tuple[float, float, int]:
        """Seconds until a first member has its assignment, then seconds from a second
        member's subscribe until both have their new one; and the partitions assigned."""
        from confluent_kafka import Consumer
        config = {"bootstrap.servers": self.broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "latest", "heartbeat.interval.ms": 100, "session.timeout.ms": 30000,
                  "partition.assignment.strategy": "range", "log_level": 2}
        assigned: dict[str, list] = {}
        revoked: collections.Counter[str] = collections.Counter()

        def on_assign(name: str):
            return lambda consumer, partitions: assigned.__setitem__(name, list(partitions))

        def on_revoke(name: str):
            def revoke(consumer, partitions) -> None:
                assigned.pop(name, None)
                revoked[name] += 1
            return revoke

        first, second = Consumer(config), Consumer(config)
        try:
            start = time.perf_counter()
            first.subscribe([topic], on_assign=on_assign("a"), on_revoke=on_revoke("a"))
            deadline = start + 600
            while "a" not in assigned:
                first.poll(0.01)
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"group {group}: first member never assigned")
            one = time.perf_counter() - start
            wanted = len(assigned["a"])
            start = time.perf_counter()
            second.subscribe([topic], on_assign=on_assign("b"), on_revoke=on_revoke("b"))
            # Done when the first member has given its partitions up and both members hold
            # their new assignments, which together cover the topic.
            deadline = start + 600
            while not (revoked["a"] and "a" in assigned and "b" in assigned
                       and len(assigned["a"]) + len(assigned["b"]) == wanted):
                first.poll(0.01)
                second.poll(0.01)
                if time.perf_counter() > deadline:
                    state = {k: len(v) for k, v in assigned.items()}
                    raise RuntimeError(f"group {group}: no second assignment ({state})")
            two = time.perf_counter() - start
        finally:
            for consumer in (first, second):
                consumer.close()
        return one, two, wanted


# -- reports ------------------------------------------------------------------------------

def produce_table(title: str, label: str, results: dict[int, list[Sample]], extra: dict[int, str]) -> None:
    print(f"\n{title}")
    table = harness.Table(harness.Column(label, 12, align="<"), harness.Column("MB/s", 8, ".2f"),
                          harness.Column("records/s", 11, ",.0f"), harness.Column("x smallest", 11, ".2f"),
                          harness.Column("CPU s/MB", 10, ".3f"), harness.Column("x smallest", 11, ".2f"),
                          harness.Column("broker busy", 12, ".0%"), harness.Column("client busy", 12, ".0%"),
                          harness.Column("records/batch", 14, ".1f"),
                          harness.Column("µs CPU/batch", 13, ".0f"), harness.Column("", 30, align="<", gap=2))
    print(table.header().rstrip())
    keys = sorted(results)
    base_rate = med(results[keys[0]], Sample.mb_s)
    base_cpu = med(results[keys[0]], Sample.cpu_per_mb)
    for key in keys:
        rate, cpu = med(results[key], Sample.mb_s), med(results[key], Sample.cpu_per_mb)
        print(table.row(str(key), rate, med(results[key], Sample.records_s), rate / base_rate, cpu,
                        cpu / base_cpu, med(results[key], Sample.busy), med(results[key], Sample.client_busy),
                        med(results[key], Sample.records_per_batch),
                        med(results[key], lambda x: 1e6 * x.broker_cpu / x.batches if x.batches else float("nan")),
                        extra.get(key, "")).rstrip())
    print("  per rep MB/s: " + "; ".join(f"{k}: " + ", ".join(f"{s.mb_s():.1f}" for s in results[k]) for k in keys))


def big_table(sizes: list[int], created: dict[int, tuple[float, float]], metadata: dict[int, list[float]],
              groups: dict[int, list[tuple[float, float]]]) -> None:
    print("\nby partitions of the topic: creation (until every partition has a leader), a Metadata request "
          "for that topic, and a group of 2 consumers subscribed to it")
    table = harness.Table(harness.Column("partitions", 10, align="<"), harness.Column("create s", 10, ".2f"),
                          harness.Column("x", 8, ".1f"), harness.Column("metadata ms", 12, ".1f"),
                          harness.Column("x", 8, ".1f"), harness.Column("1st join s", 11, ".2f"),
                          harness.Column("x", 8, ".1f"), harness.Column("2nd join s", 11, ".2f"),
                          harness.Column("x", 8, ".1f"))
    print(table.header().rstrip())
    small = sizes[0]
    base = (created[small][0], med(metadata[small], float), med(groups[small], lambda g: g[0]),
            med(groups[small], lambda g: g[1]))
    for size in sizes:
        row = (created[size][0], med(metadata[size], float) * 1000, med(groups[size], lambda g: g[0]),
               med(groups[size], lambda g: g[1]))
        print(table.row(str(size), row[0], row[0] / base[0], row[1], row[1] / 1000 / base[1], row[2],
                        row[2] / base[2], row[3], row[3] / base[3]).rstrip())
    print("  creation CPU s, all brokers: " + ", ".join(f"{s}: {created[s][1]:.2f}" for s in sizes))


# -- profiles -----------------------------------------------------------------------------

class Spy:
    """py-spy recording the broker while a `with` block runs."""

    def __init__(self, pid: int, out: Path, rate: int = 100) -> None:
        py_spy = shutil.which("py-spy")
        if py_spy is None:
            raise SystemExit("--profile needs py-spy on PATH")
        self.out, self.rate = out, rate
        self.proc = subprocess.Popen([py_spy, "record", "--rate", str(rate), "--format", "raw", "--output",
                                      str(out), "--pid", str(pid)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        time.sleep(1.0)   # py-spy attaches
        self.start = time.perf_counter()

    def __enter__(self) -> "Spy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def summarise(self, what: str) -> None:
        try:
            from . import bench_broker
        except ImportError:
            import bench_broker
        print(f"\nprofile: the broker under py-spy ({self.rate} Hz) during {what} ({self.seconds:.1f}s); "
              f"raw stacks in {self.out}")
        if self.out.exists():
            bench_broker.summarise_profile(self.out, self.rate, self.seconds)
        else:
            print("  (py-spy wrote nothing)")


# -- the run ------------------------------------------------------------------------------

def raise_open_files(wanted: int) -> str:
    """Lift this process's open-file limit (the brokers inherit it) to `wanted` where the
    hard limit allows, or as root; a broker keeps about two descriptors per partition."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if wanted and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, max(hard, wanted)))
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return f"open files limit {now} (was {soft})" if now != soft else f"open files limit {now}"


def broker_health(cluster) -> str:
    """Descriptors each broker holds, and partitions their logs say failed to become leader."""
    fds, failed = [], 0
    for broker in cluster.brokers:
        fds.append(len(list(Path(f"/proc/{broker.proc.pid}/fd").iterdir())))
        log = broker.app_log_dir / "server.log"
        if log.exists():
            with open(log, errors="replace") as f:
                failed += sum(1 for line in f if "ERROR Error handling LeaderAndIsr" in line)
    return (f"file descriptors held per broker: {'/'.join(map(str, fds))}; partitions that failed "
            f"LeaderAndIsr (server.log): {failed}")


class Spies:
    """py-spy on every broker of a cluster while a `with` block runs."""

    def __init__(self, cluster, prefix: str) -> None:
        self.spies = [Spy(b.proc.pid, Path(f"{prefix}.broker{b.broker_id}.txt")) for b in cluster.brokers]
        started = time.perf_counter()
        for spy in self.spies:
            spy.start = started

    def __enter__(self) -> "Spies":
        return self

    def __exit__(self, *exc: object) -> None:
        for spy in self.spies:
            spy.__exit__(*exc)

    def summarise(self, what: str) -> None:
        for index, spy in enumerate(self.spies):
            spy.summarise(f"{what}, broker {index}")


def run(args: argparse.Namespace) -> int:
    limit = raise_open_files(args.nofile)
    with harness.Lab("scaling", args.dir) as lab:
        cluster = lab.cluster("produce", 1)
        broker = cluster.brokers[0]
        bench = Bench(cluster, args, lab.scratch)
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {harness.machine()}; "
              f"load average {harness.load_average():.2f} at start")
        print(f"1 broker, log dir {broker.log_dir} ({harness.filesystem_of(broker.log_dir)}); RF=1, acks=1, "
              f"{args.records} records of {VALUE_SIZE} bytes per run, batch.size=16384, linger.ms=5, "
              f"no compression, sticky.partitioning.linger.ms=0, max.in.flight.requests.per.connection="
              f"{args.max_in_flight or 'librdkafka default (1000000)'}; {args.reps} interleaved reps, medians; {limit}")

        if not args.only_big:
            # 1. partitions
            stamp("creating the topics")
            for count in sorted(set(args.partitions) | {args.connection_partitions}):
                bench.create(count)
            stamp("produce by partitions (kcat)")
            by_partitions: dict[int, list[Sample]] = collections.defaultdict(list)
            harness.interleave(args.reps, sorted(args.partitions),
                               lambda n: by_partitions[n].append(bench.produce_kcat(n)),
                               lambda rep: print(f"  rep {rep + 1}: " + ", ".join(
                                   f"{n}p {by_partitions[n][-1].mb_s():.1f}" for n in sorted(by_partitions))
                                   + " MB/s", flush=True))
            stamp("done")
            produce_table("produce by partition count (kcat -P, 1 connection; records spread at random over all "
                          "partitions):", "partitions", by_partitions, {})

            # 2. connections
            stamp(f"produce by connections (confluent-kafka, {args.connection_partitions} partitions)")
            by_clients: dict[int, list[Sample]] = collections.defaultdict(list)
            seen: dict[int, int] = {}

            def produce_clients(n: int) -> None:
                sample, seen[n] = bench.produce_connections(n)
                by_clients[n].append(sample)

            harness.interleave(args.reps, sorted(args.connections), produce_clients,
                               lambda rep: print(f"  rep {rep + 1}: " + ", ".join(
                                   f"{n}c {by_clients[n][-1].mb_s():.1f}" for n in sorted(by_clients))
                                   + " MB/s", flush=True))
            stamp("done")
            produce_table(f"produce by client connections (N confluent-kafka producers in one process, one Python "
                          f"loop, {args.connection_partitions} partitions):", "producers", by_clients,
                          {n: f"{seen[n]} client connections" for n in seen})

            if args.profile:
                largest = max(args.partitions)
                with Spy(bench.pid, Path(f"{args.profile}.produce.txt")) as spy:
                    sample = bench.produce_kcat(largest)
                spy.summarise(f"a kcat run at {largest} partitions, {sample.mb_s():.1f} MB/s, "
                              f"{sample.records_per_batch():.1f} records/batch")
                most = max(args.connections)
                with Spy(bench.pid, Path(f"{args.profile}.connections.txt")) as spy:
                    sample, _ = bench.produce_connections(most)
                spy.summarise(f"{most} producers at {args.connection_partitions} partitions, {sample.mb_s():.1f} MB/s, "
                              f"{sample.records_per_batch():.1f} records/batch")

        if args.no_big:
            print(f"load average {harness.load_average():.2f} at the end (other work on the machine skews a run)")
            return 0

        # 3. many partitions, on a cluster of --big-brokers (the produce broker stopped)
        cluster.kill()
        cluster = lab.cluster("big", args.big_brokers)
        bench = Bench(cluster, args, lab.scratch)
        sizes = sorted(set(args.partitions) | {args.big})
        stamp(f"{args.big_brokers} brokers started; creating topics of {', '.join(map(str, sizes))} partitions "
              f"(RF=1, spread by the controller)")
        for size in sizes:
            bench.create(size)
        stamp(f"created {args.big} partitions in {bench.created[args.big][0]:.1f}s; {broker_health(cluster)}")
        bench.rebalance(topic_name(min(args.partitions)), "scale-warm-up")   # __consumer_offsets, untimed
        metadata: dict[int, list[float]] = collections.defaultdict(list)
        groups: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
        runs = collections.Counter()

        def metadata_and_group(size: int) -> None:
            seconds, found = bench.metadata(topic_name(size))
            if found != size:
                raise RuntimeError(f"Metadata for {topic_name(size)} gave {found} partitions")
            metadata[size].append(seconds)
            runs[size] += 1
            one, two, _ = bench.rebalance(topic_name(size), f"scale-g{size}-{runs[size]}")
            groups[size].append((one, two))

        harness.interleave(args.reps, sizes, metadata_and_group,
                           lambda rep: print(f"  rep {rep + 1}: " + ", ".join(
                               f"{n}p md {1000 * metadata[n][-1]:.1f} ms, joins {groups[n][-1][0]:.2f}/"
                               f"{groups[n][-1][1]:.2f} s" for n in sizes), flush=True))
        full, total = bench.metadata(None)
        stamp("done")
        big_table(sizes, bench.created, metadata, groups)
        print(f"full Metadata request (all topics, {total} partitions incl. __consumer_offsets): "
              f"{1000 * full:.1f} ms (median of 5)")

        if args.profile:
            with Spies(bench.cluster, f"{args.profile}.big") as spies:
                bench.metadata(None)
                bench.metadata(topic_name(args.big))
                one, two, _ = bench.rebalance(topic_name(args.big), "scale-profile")
            spies.summarise(f"5+5 Metadata requests and a 2-member rebalance ({one:.2f}s + {two:.2f}s) at "
                            f"{args.big} partitions")
        print(f"load average {harness.load_average():.2f} at the end (other work on the machine skews a run)")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3)
    parser.add_argument("--quick", action="store_true", help="30,000 records, 1 rep, --big 2000")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--partitions", type=ints, default=[1, 10, 100, 1000], help="comma-separated counts")
    parser.add_argument("--connections", type=ints, default=[1, 10, 100], help="comma-separated producer counts")
    parser.add_argument("--connection-partitions", type=int, default=100,
                        help="partitions of the topic the connections part writes to")
    parser.add_argument("--big", type=int, help="partitions of the largest topic (default 10,000; 2,000 with "
                                                "--quick)")
    parser.add_argument("--profile", metavar="PREFIX", help="py-spy the broker at the largest cases")
    parser.add_argument("--no-big", action="store_true", help="only the produce parts")
    parser.add_argument("--only-big", action="store_true", help="only the many-partitions part")
    parser.add_argument("--max-in-flight", type=int, default=0,
                        help="max.in.flight.requests.per.connection of every producer (default: librdkafka's, "
                             "1000000; the Java client's is 5)")
    parser.add_argument("--big-brokers", type=int, default=3,
                        help="brokers of the cluster the many-partitions part runs on (default 3)")
    parser.add_argument("--nofile", type=int, default=65536,
                        help="raise the open-files limit the broker inherits to this (0: leave it; default 65536)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.reps = 30_000, 1
    if args.big is None:
        args.big = 2000 if args.quick else 10_000
    return run(args)


@harness.bench_test
def test_scaling_bench_short() -> None:
    """Every part, small."""
    assert main(["--quick", "--partitions", "1,10", "--connections", "1,4", "--connection-partitions", "10",
                 "--big", "200"]) == 0


if __name__ == "__main__":
    # SIGTERM unwinds like an exception, so the lab's brokers and ZooKeeper are removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.exit(main())
