"""What the benchmarks in tests/bench share: the lab they run against, the load generators,
rotating repetitions, the report tables and the command line.

- **The lab.** `Lab` starts one ZooKeeper (in memory, /dev/shm, whatever --dir says) and
  the brokers a benchmark asks for, each cluster under its own chroot and directory, and
  kills and removes everything when the `with` block ends, whatever happened.
- **Checkouts.** A benchmark can measure this checkout and, with `--compare-with DIR`,
  another one (an older commit in a git worktree: `git worktree add /tmp/kl-base <commit>`)
  in the same run. Brokers of the other checkout run its code (`Checkout.launcher`), and
  worker processes import its kafkalike (`Checkout.worker_env`: this module puts the
  checkout named by $KAFKALIKE_BENCH_CHECKOUT first on sys.path when it is imported).
- **Repetitions.** `rotated` and `interleave` run the cases of a benchmark in an order
  that moves by one each repetition, so machine noise (a 2-core VM shared with other
  work) falls on every case alike; results are medians.
- **Reports.** `Table` prints the aligned tables; `comparison` the this/base table of a
  side-by-side run, with the ratio of medians and the median of per-repetition ratios.
- **Load generators.** confluent-kafka's produce loop and kcat, timed, with the brokers'
  and the client's CPU, and topic creation that waits for leaders.

Each bench_*.py stays a script (`python tests/bench/bench_x.py --help`) and also holds a
test marked `bench` that runs it in a short configuration (`pytest tests/bench -m bench`).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT_ENV = "KAFKALIKE_BENCH_CHECKOUT"
# A worker process of another checkout imports that checkout's kafkalike; everyone else
# this one's. Nothing of kafkalike is imported before this point.
_WORKER_CHECKOUT = os.environ.get(CHECKOUT_ENV)
if _WORKER_CHECKOUT:
    sys.path.insert(0, _WORKER_CHECKOUT)
elif str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    import pytest
except ImportError:  # the scripts run without pytest too
    pytest = None

MB = 1e6
SCRATCH_ROOT = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
T = TypeVar("T")


def bench_test(function: Callable[[], None]) -> Callable[[], None]:
    """Mark a bench file's short-configuration test (pytest tests/bench -m bench runs it)."""
    return pytest.mark.bench(function) if pytest is not None else function


# -- checkouts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkout:
    """A kafkalike source tree whose broker and client a benchmark runs."""

    label: str
    root: Path

    @property
    def is_this(self) -> bool:
        return self.root.resolve() == ROOT

    def launcher(self) -> list[str]:
        """Words before a broker's command so that it runs this checkout's code (its cwd and
        PYTHONPATH are the checkout's root; env execs, so the pid is the broker's)."""
        if self.is_this:
            return []
        return ["env", "-C", str(self.root), f"PYTHONPATH={self.root}"]

    def worker_env(self) -> dict[str, str]:
        """The environment of a worker process that must import this checkout's kafkalike."""
        env = {k: v for k, v in os.environ.items() if k != CHECKOUT_ENV}
        if not self.is_this:
            env[CHECKOUT_ENV] = str(self.root)
        return env

    def describe(self) -> str:
        """`label: root at commit` (with `+ uncommitted changes` when the tree differs from it)."""
        head = subprocess.run(["git", "-C", str(self.root), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(self.root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True)
        commit = head.stdout.strip()[:72] if head.returncode == 0 else "(not a git checkout)"
        changes = " + uncommitted changes" if dirty.returncode == 0 and dirty.stdout.strip() else ""
        return f"{self.label}: {self.root} at {commit}{changes}"


THIS = Checkout("this", ROOT)


def checkouts(args: argparse.Namespace) -> list[Checkout]:
    """This checkout, and the one --compare-with names."""
    other = getattr(args, "compare_with", None)
    if not other:
        return [THIS]
    base = Checkout("base", Path(other).resolve())
    if not (base.root / "kafkalike" / "broker" / "main.py").is_file():
        raise SystemExit(f"--compare-with {other}: not a kafkalike checkout")
    if base.is_this:
        raise SystemExit("--compare-with names this checkout")
    return [THIS, base]


# -- the command line -----------------------------------------------------------------------------


def arg_parser(doc: str | None, *, reps: int, scratch: bool = True, compare: bool = False,
               dir_help: str = "where the brokers' log dirs go (default /dev/shm)") -> argparse.ArgumentParser:
    """The options every benchmark shares: --reps, --dir (where its files go) and, where the
    benchmark can run two checkouts side by side, --compare-with."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    parser.add_argument("--reps", type=int, default=reps, help=f"repetitions, in rotating order (default {reps})")
    if scratch:
        parser.add_argument("--dir", default=str(SCRATCH_ROOT), help=dir_help)
    if compare:
        parser.add_argument("--compare-with", metavar="DIR",
                            help="another kafkalike checkout (e.g. a git worktree of an older commit): run its "
                                 "broker and client next to this checkout's in the same run, rotating, and "
                                 "print this/base ratios")
    return parser


def hidden(parser: argparse.ArgumentParser, *names: str, **kwargs: Any) -> None:
    """Options only the benchmark passes to its own worker processes."""
    for name in names:
        parser.add_argument(name, help=argparse.SUPPRESS, **kwargs)


# -- measuring ------------------------------------------------------------------------------------


CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    """VmHWM of this process: the most resident memory it ever had."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def rotated(items: Sequence[T], rep: int) -> list[T]:
    """The cases of repetition `rep`: the same cycle, starting one further each time."""
    if not items:
        return []
    shift = rep % len(items)
    return list(items[shift:]) + list(items[:shift])


def interleave(reps: int, cases: Sequence[T], run: Callable[[T], Any],
               after_rep: Callable[[int], None] | None = None) -> None:
    """Run every case once per repetition, in rotating order; after_rep(rep) reports progress."""
    for rep in range(reps):
        for case in rotated(cases, rep):
            run(case)
        if after_rep is not None:
            after_rep(rep)


def machine() -> str:
    model = "?"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{platform.node()}: {os.cpu_count()} vCPU {model}, Linux {platform.release()}, "
            f"Python {platform.python_version()}")


def load_average() -> float:
    return os.getloadavg()[0]


def filesystem_of(path: Path) -> str:
    found = subprocess.run(["df", "--output=source,fstype", str(path)], capture_output=True, text=True)
    rows = found.stdout.split("\n")
    return " ".join(rows[1].split()) if len(rows) > 1 else "?"


def print_checkouts(sides: Sequence[Checkout]) -> None:
    if len(sides) > 1:
        for side in sides:
            print(f"  {side.describe()}")


# -- reports --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column of a Table: a header right- (or left-) aligned over `width` characters,
    values formatted with `fmt` and followed by `suffix`, `gap` spaces before it."""

    header: str
    width: int
    fmt: str = ""
    align: str = ">"
    suffix: str = ""
    gap: int = 0

    def head(self) -> str:
        return " " * self.gap + f"{self.header:{self.align}{self.width}}"

    def cell(self, value: Any) -> str:
        width = self.width - len(self.suffix)
        text = f"{value:{self.align}{width}}" if isinstance(value, str) else \
            f"{value:{self.align}{width}{self.fmt}}"
        return " " * self.gap + text + self.suffix


class Table:
    """Aligned columns: print(table.header()) then print(table.row(...)) per row."""

    def __init__(self, *columns: Column) -> None:
        self.columns = columns

    def header(self) -> str:
        return "".join(c.head() for c in self.columns)

    def row(self, *values: Any) -> str:
        return "".join(c.cell(v) for c, v in zip(self.columns, values))


def comparison(title: str, rows: Sequence[tuple[str, Sequence[float], Sequence[float]]], unit: str,
               higher_is_better: bool = True, fmt: str = ",.1f") -> None:
    """The side-by-side report: per row, the median of this checkout's and the base's values
    (one per repetition, measured in the same rotating run), this/base of the medians, and
    the median and range of the per-repetition ratios."""
    print(f"\n{title}")
    table = Table(Column("case", 30, align="<"), Column(f"this {unit}", 16, fmt),
                  Column(f"base {unit}", 16, fmt), Column("this/base", 11, ".3f"),
                  Column("per-rep ratios", 28, gap=2, align="<"))
    print(table.header().rstrip())
    ratios = []
    for name, ours, theirs in rows:
        ratio = median(ours) / median(theirs) if median(theirs) else float("nan")
        per_rep = [a / b for a, b in zip(ours, theirs) if b]
        spread = (f"median {median(per_rep):.3f}, {min(per_rep):.3f}-{max(per_rep):.3f}" if per_rep else "")
        print(table.row(name, median(ours), median(theirs), ratio, spread).rstrip())
        ratios.append(ratio)
    if ratios:
        better, worst = (">", min(ratios)) if higher_is_better else ("<", max(ratios))
        print(f"(this/base {better} 1: this checkout does better; the row least in its favour: {worst:.3f})")


# -- the lab --------------------------------------------------------------------------------------


class Lab:
    """One ZooKeeper (in memory) and the broker clusters of a benchmark, removed afterwards.

        with Lab("broker", args.dir) as lab:
            broker = lab.broker()                       # one broker of this checkout
            base = lab.broker("base", checkout=other)   # one running another checkout's code
    """

    def __init__(self, prefix: str, directory: str | Path | None = None, *, tick_time: int | None = None) -> None:
        self.base = Path(tempfile.mkdtemp(prefix=f"kafkalike-bench-{prefix}-", dir=directory or SCRATCH_ROOT))
        self.zk_base = Path(tempfile.mkdtemp(prefix=f"kafkalike-bench-{prefix}-zk-", dir=SCRATCH_ROOT))
        from kafkalike.lab.zookeeper import ZooKeeperServer
        options = {"tick_time": tick_time} if tick_time else {}
        self.zookeeper = ZooKeeperServer(self.zk_base, force_sync=False, **options)
        self.clusters: list = []

    def __enter__(self) -> "Lab":
        try:
            self.zookeeper.start()
            self.zookeeper.wait_ready(60)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def scratch(self) -> Path:
        """A directory in memory for the benchmark's own files (removed with the lab)."""
        return self.zk_base

    def cluster(self, name: str = "bench", size: int = 1, overrides: dict[str, str] | None = None,
                checkout: Checkout = THIS, timeout: float = 90.0, launcher: Sequence[str] | None = None):
        """`size` brokers of `checkout` under the chroot /<name>, started and registered.
        `launcher`, if given, replaces the checkout's words before the broker's command (a
        benchmark's own variant of the broker, such as bench_metrics' stubbed one)."""
        from kafkalike.lab.cluster import Cluster
        cluster = Cluster(f"{self.zookeeper.connect_string}/{name}", self.base / name, size=size,
                          overrides=overrides)
        for broker in cluster.brokers:
            broker.launcher = list(launcher) if launcher is not None else checkout.launcher()
        self.clusters.append(cluster)
        cluster.start(timeout)
        return cluster

    def broker(self, name: str = "bench", checkout: Checkout = THIS, overrides: dict[str, str] | None = None,
               launcher: Sequence[str] | None = None):
        """One broker (id 0) of `checkout` (or run by `launcher`)."""
        return self.cluster(name, 1, overrides, checkout, launcher=launcher).brokers[0]

    def close(self) -> None:
        for cluster in self.clusters:
            cluster.kill()
        self.clusters.clear()
        self.zookeeper.remove()
        shutil.rmtree(self.base, ignore_errors=True)
        shutil.rmtree(self.zk_base, ignore_errors=True)


# -- worker processes -----------------------------------------------------------------------------


def run_worker(script: str, arguments: Sequence[str], checkout: Checkout = THIS, timeout: float = 1200,
               what: str = "worker") -> dict:
    """Run `python script arguments` (a benchmark's own worker mode) with `checkout`'s
    kafkalike; its last stdout line is a JSON result."""
    proc = subprocess.run([sys.executable, os.path.abspath(script), *arguments], capture_output=True, text=True,
                          timeout=timeout, env=checkout.worker_env())
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- load generators ------------------------------------------------------------------------------


def printable_value(size: int = 100) -> bytes:
    """A printable value with no newline (kcat -l reads values line by line)."""
    return bytes(33 + (i * 7) % 90 for i in range(size))


def write_value_lines(path: Path, value: bytes, records: int) -> Path:
    """A file of `records` lines of `value`, for kcat -P -l."""
    with open(path, "wb") as f:
        block = (value + b"\n") * 10000
        for _ in range(records // 10000):
            f.write(block)
        f.write((value + b"\n") * (records % 10000))
    return path


@dataclass
class Timed:
    """One timed load run: seconds, and CPU seconds of each broker and of the load generator."""

    seconds: float
    broker_cpu: list[float] = field(default_factory=list)
    client_cpu: float = 0.0


def _cpu(pids: Sequence[int]) -> list[float]:
    return [process_cpu(pid) for pid in pids]


def produce_confluent(bootstrap: str, topic: str, records: int, value: bytes, *, acks: str | int,
                      batch_size: int, linger_ms: int, broker_pids: Sequence[int] = (),
                      partition: int | None = 0) -> Timed:
    """confluent-kafka's Producer.produce() in a Python loop to partition 0 (or, with
    partition=None, to the partitioner's choice: keyless records spread at random), timed
    from the first call until flush() returns (one untimed warm-up record first)."""
    from confluent_kafka import Producer
    errors: list[str] = []
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "enable.idempotence": False,
        "batch.size": batch_size,
        "linger.ms": linger_ms,
        "compression.type": "none",
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "delivery.report.only.error": True,
        "on_delivery": lambda err, msg: errors.append(str(err)),
    })
    where = {} if partition is None else {"partition": partition}
    producer.produce(topic, b"warm-up", **where)  # connection and metadata, untimed
    producer.flush(30)
    produce, poll = producer.produce, producer.poll
    broker0, client0 = _cpu(broker_pids), own_cpu()
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                produce(topic, value, **where)
                break
            except BufferError:
                poll(0.0005)
    left = producer.flush(300)
    seconds = time.perf_counter() - start
    timed = Timed(seconds, [b - a for a, b in zip(broker0, _cpu(broker_pids))], own_cpu() - client0)
    if left or errors:
        raise RuntimeError(f"confluent produce to {topic}: {left} undelivered, errors {errors[:3]}")
    return timed


def produce_kcat(bootstrap: str, topic: str, lines: Path, *, acks: str | int, batch_size: int, linger_ms: int,
                 broker_pids: Sequence[int] = (), partition: int | None = 0,
                 extra: dict[str, str] | None = None) -> Timed:
    """kcat -P -l: librdkafka with no Python in the loop, the same settings, from a file of
    values (to partition 0, or with partition=None spread by the partitioner); the time
    includes starting kcat (about 20-50 ms). `extra` adds librdkafka settings (-X)."""
    command = ["kcat", "-P", "-t", topic, "-p", str(-1 if partition is None else partition), "-b", bootstrap,
               "-X", f"batch.size={batch_size}", "-X", f"linger.ms={linger_ms}",
               "-X", f"acks={acks}", "-X", "compression.codec=none", "-X", "enable.idempotence=false",
               "-X", "queue.buffering.max.messages=1000000", "-X", "queue.buffering.max.kbytes=1048576",
               *[word for key, value in (extra or {}).items() for word in ("-X", f"{key}={value}")],
               "-l", str(lines)]
    broker0, client0 = _cpu(broker_pids), children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, timeout=600)
    seconds = time.perf_counter() - start
    timed = Timed(seconds, [b - a for a, b in zip(broker0, _cpu(broker_pids))], children_cpu() - client0)
    if done.returncode != 0:
        raise RuntimeError(f"kcat produce to {topic} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return timed


def create_topic(bootstrap: str, name: str, partitions: int = 1, replication: int = 1, *,
                 assignment: list[list[int]] | None = None, config: dict[str, str] | None = None,
                 leader: int | None = None, full_isr: bool = False, timeout: float = 60) -> str:
    """Create a topic (confluent-kafka's admin client) and wait until every partition has a
    leader (`leader` if given, with all replicas in sync if `full_isr`), so no timed run pays
    for an election."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    if assignment is not None:
        topic = NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment, config=config or {})
    else:
        topic = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config or {})
    admin.create_topics([topic], operation_timeout=30)[name].result(30)
    wanted = len(assignment) if assignment is not None else partitions
    replicas = len(assignment[0]) if assignment is not None else replication
    deadline = time.monotonic() + timeout
    while True:
        found = admin.list_topics(name, timeout=10).topics[name].partitions
        ready = len(found) == wanted and all(
            p.leader >= 0 and (leader is None or p.leader == leader) and (not full_isr or len(p.isrs) == replicas)
            for p in found.values())
        if ready:
            return name
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {name} not ready: {[(p.leader, p.isrs) for p in found.values()]}")
        time.sleep(0.05)


__all__ = ["CHECKOUT_ENV", "Checkout", "Column", "Lab", "MB", "ROOT", "SCRATCH_ROOT", "THIS", "Table", "Timed",
           "arg_parser", "bench_test", "checkouts", "children_cpu", "comparison", "create_topic", "filesystem_of",
           "hidden", "interleave", "load_average", "machine", "median", "own_cpu", "peak_rss_mib",
           "print_checkouts", "printable_value", "process_cpu", "produce_confluent", "produce_kcat", "rotated",
           "run_worker", "write_value_lines"]
