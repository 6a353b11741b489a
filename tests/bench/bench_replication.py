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
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafkalike.lab.cluster import Cluster  # noqa: E402
from kafkalike.lab.zookeeper import ZooKeeperServer  # noqa: E402

VALUE_SIZE = 100
MB = 1e6
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


def process_cpu(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def value_bytes() -> bytes:
    """One printable 100-byte value with no newline (kcat reads values line by line)."""
    return bytes(33 + (i * 7) % 90 for i in range(VALUE_SIZE))


class Bench:
    def __init__(self, cluster: Cluster, records: int, batch_size: int, linger_ms: int, scratch: Path):
        self.cluster = cluster
        self.records = records
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.value = value_bytes()
        self.lines_path = scratch / "values.txt"
        with open(self.lines_path, "wb") as f:
            for _ in range(records // 10000):
                f.write((self.value + b"\n") * 10000)
            f.write((self.value + b"\n") * (records % 10000))
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})

    def create_topics(self) -> None:
        topics = [NewTopic(name, num_partitions=1, replica_assignment=[replicas],
                           config={"min.insync.replicas": "2" if len(replicas) == 3 else "1"})
                  for name, (replicas, _) in CASES.items()]
        for future in self.admin.create_topics(topics).values():
            future.result(30)
        deadline = time.monotonic() + 60
        while True:
            md = self.admin.list_topics(timeout=10)
            ready = all(
                name in md.topics and 0 in md.topics[name].partitions
                and md.topics[name].partitions[0].leader == 0
                and len(md.topics[name].partitions[0].isrs) == len(replicas)
                for name, (replicas, _) in CASES.items())
            if ready:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("topics not led by broker 0 with a full ISR")
            time.sleep(0.1)

    def broker_cpu(self) -> list[float]:
        return [process_cpu(b.proc.pid) for b in self.cluster.brokers]

    def produce_confluent(self, topic: str, acks: str) -> Sample:
        errors: list[str] = []
        producer = Producer({
            "bootstrap.servers": self.cluster.bootstrap,
            "acks": acks,
            "enable.idempotence": False,
            "batch.size": self.batch_size,
            "linger.ms": self.linger_ms,
            "compression.type": "none",
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "delivery.report.only.error": True,
            "on_delivery": lambda err, msg: errors.append(str(err)),
        })
        producer.produce(topic, b"warm-up", partition=0)  # connection and metadata, untimed
        producer.flush(30)
        value, produce, poll = self.value, producer.produce, producer.poll
        broker0, client0 = self.broker_cpu(), own_cpu()
        start = time.perf_counter()
        for _ in range(self.records):
            while True:
                try:
                    produce(topic, value, partition=0)
                    break
                except BufferError:
                    poll(0.0005)
        left = producer.flush(300)
        seconds = time.perf_counter() - start
        if left or errors:
            raise RuntimeError(f"confluent produce to {topic}: {left} undelivered, errors {errors[:3]}")
        return Sample(seconds, self.records, [b - a for a, b in zip(broker0, self.broker_cpu())],
                      own_cpu() - client0)

    def produce_kcat(self, topic: str, acks: str) -> Sample:
        command = ["kcat", "-P", "-t", topic, "-p", "0", "-b", self.cluster.bootstrap,
                   "-X", f"batch.size={self.batch_size}", "-X", f"linger.ms={self.linger_ms}",
                   "-X", f"acks={acks}", "-X", "compression.codec=none", "-X", "enable.idempotence=false",
                   "-X", "queue.buffering.max.messages=1000000", "-X", "queue.buffering.max.kbytes=1048576",
                   "-l", str(self.lines_path)]
        broker0, client0 = self.broker_cpu(), children_cpu()
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, timeout=600)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"kcat produce to {topic} failed ({done.returncode}): {done.stderr[-500:]!r}")
        return Sample(seconds, self.records, [b - a for a, b in zip(broker0, self.broker_cpu())],
                      children_cpu() - client0)


def describe_machine() -> str:
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()}: {os.cpu_count()} vCPU {model}, Linux {platform.release()}, Python {platform.python_version()}"


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
    base = Path(tempfile.mkdtemp(prefix="kafkalike-bench-replication-", dir=args.dir))
    zookeeper = ZooKeeperServer(base / "zk", force_sync=False)
    cluster: Cluster | None = None
    try:
        zookeeper.start()
        zookeeper.wait_ready(60)
        cluster = Cluster(zookeeper.connect_string + "/bench", base, size=3,
                          overrides={"auto.leader.rebalance.enable": "false"})
        cluster.start(90)
        bench = Bench(cluster, args.records, args.batch_size, args.linger_ms, base)
        bench.create_topics()
        generators = ["confluent"] + ([] if args.no_kcat else ["kcat"])
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {describe_machine()}; "
              f"load average {os.getloadavg()[0]:.2f} at start")
        print(f"3 brokers, log dirs under {args.dir}; {args.records} records of {VALUE_SIZE} bytes per run, "
              f"1 partition led by broker 0, batch.size={args.batch_size}, linger.ms={args.linger_ms}, "
              f"no compression; {args.reps} interleaved reps, medians")
        results: dict[str, list[Sample]] = collections.defaultdict(list)
        cases = [(gen, name) for gen in generators for name in CASES]
        for rep in range(args.reps):
            for i in range(len(cases)):
                gen, name = cases[(rep + i) % len(cases)]
                produce = bench.produce_confluent if gen == "confluent" else bench.produce_kcat
                results[f"{gen} {name}"].append(produce(name, CASES[name][1]))
            print(f"  rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{gen} {name} {results[f'{gen} {name}'][-1].mb_s():.2f} MB/s" for gen, name in cases), flush=True)
        report(results, generators)
        print(f"load average {os.getloadavg()[0]:.2f} at the end (other work on the machine skews a run)")
        return 0
    finally:
        if cluster is not None:
            cluster.kill()
        zookeeper.remove()
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--no-kcat", action="store_true", help="confluent-kafka only")
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir(),
                        help="where the brokers' log dirs go (default /dev/shm)")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
