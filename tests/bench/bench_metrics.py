"""What the broker's metrics cost the produce path: three brokers side by side in one run.

    python tests/bench/bench_metrics.py [--records 500000] [--small-records 20000]
                                        [--reps 5] [--dir /dev/shm] [--scrape-interval 1]

It starts, through the harness's Lab, a ZooKeeper and three single-broker clusters (each in its
own chroot), the log dirs under --dir (memory by default):

- "no recording": the broker with every metric recording call stubbed out (the
  replica manager's and the listener's counting calls replaced by no-ops, the listener's
  clock by a constant, the reactor's poller left unwrapped), which is what the broker
  cost before it had metrics;
- "recording": the broker as shipped, metrics counted, no endpoint (the default);
- "endpoint + scrapes": metrics counted and `kafkalike.metrics.port` set, scraped over
  HTTP every --scrape-interval seconds by a separate process for the whole run (Prometheus
  scrapes every 15-60 s; this is harsher).

Two produce cases, each a confluent-kafka Producer loop (acks=1, 100-byte values, no key,
one partition), timed from the first produce() until flush() returns:

- "batches": linger.ms=5, 16 KiB batches (many records per request: the byte path);
- "small requests": batch.num.messages=1, one record per request (the per-request
  path, where request metrics are recorded once per record).

Every repetition runs every (case, broker) pair, in an order that rotates by one each
repetition so machine noise falls on all alike; medians are reported, with the CPU time
per record of each broker's reactor thread (/proc/PID/schedstat), and the per-repetition
ratios to the broker without recording. --control adds a second broker without recording:
its ratios to the first are the noise floor of the machine at the time.

Then, in this process: the cost of the recording calls one produce request makes (timed
over a million requests, less an empty loop), next to the reactor's CPU per small
request; what a scrape costs a broker leading 10 to 10,000 partitions (the readings, on
the reactor, and the formatting, on a worker thread, over the broker's real gauge code);
and the HTTP scrape latency the scraper measured.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

try:
    from . import harness          # collected by pytest as tests.bench.bench_metrics
except ImportError:
    import harness                 # python tests/bench/bench_metrics.py

REPO_ROOT = harness.ROOT
NO_RECORDING_FLAG = "--run-broker-without-metric-recording"
VALUE = b"v" * 100
BROKERS = ("no recording", "recording", "endpoint + scrapes")
CONTROL = "no recording, 2nd"      # --control: a second stubbed broker, the noise floor (A/A)
CASES = ("batches", "small requests")


# -- the stubbed broker -------------------------------------------------------------------

def run_broker_without_recording(argv: list[str]) -> None:
    """Run kafkalike.broker.main with metric recording stubbed out (a bench-only broker).

    Started by BrokerProcess as `python bench_metrics.py FLAG python -m kafkalike.broker.main
    CONFIG`: the broker runs in this process, so its pid is the one measured.
    """
    import runpy
    from types import SimpleNamespace

    sys.path.insert(0, str(REPO_ROOT))
    import kafkalike.broker.network as network
    from kafkalike.metrics.reactor_idle import ReactorIdle
    from kafkalike.metrics.stats import LogFlushStats, ReplicaStats, RequestMetrics

    def nothing(*_args, **_kwargs) -> None:
        return None

    for name in ("appended", "append_failed", "fetched", "replicated_in", "isr_changed", "isr_update_failed"):
        setattr(ReplicaStats, name, nothing)
    RequestMetrics.record = nothing              # the request metrics, error counts included
    LogFlushStats.flushed = nothing
    ReactorIdle.start = nothing                  # the reactor's poller is not wrapped
    network.time = SimpleNamespace(monotonic=int)     # int() is 0: a clock that costs ~nothing
    sys.argv = ["kafkalike.broker.main", argv[-1]]
    runpy.run_module("kafkalike.broker.main", run_name="__main__")


# -- measuring --------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """CPU time of the broker's main thread, its reactor, in nanoseconds' precision
    (/proc/PID/schedstat; /proc/PID/stat counts in 10 ms ticks, too coarse here)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def produce(bootstrap: str, topic: str, records: int, small: bool) -> float:
    from confluent_kafka import Producer
    config = {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "batch.size": 16384,
              "queue.buffering.max.messages": 1_000_000}
    if small:
        config.update({"linger.ms": 0, "batch.num.messages": 1})
    producer = Producer(config)
    produce_ = producer.produce
    poll = producer.poll
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                produce_(topic, VALUE, partition=0)
                break
            except BufferError:
                poll(0.01)
        if i % 10000 == 0:
            poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unsent")
    return time.perf_counter() - start


SCRAPER = r"""
import sys, time, urllib.request
url, interval, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
with open(out, "a") as f:
    while True:
        t = time.perf_counter()
        try:
            body = urllib.request.urlopen(url, timeout=10).read()
            f.write(f"{(time.perf_counter() - t) * 1000:.3f} {len(body)}\n")
            f.flush()
        except Exception as exc:
            f.write(f"error {exc}\n")
            f.flush()
        time.sleep(max(0.0, interval - (time.perf_counter() - t)))
"""


def recording_cost_us(n: int = 1_000_000) -> tuple[float, float]:
    """(µs per produce request, µs per fetch request) of the recording calls, in this
    process: the listener's five clock reads and its record() call (which counts the
    answer's error codes too), plus the replica manager's append (or fetch) count, less
    an empty loop of the same shape."""
    from types import SimpleNamespace

    from kafkalike.broker.registry import new_request_metrics
    from kafkalike.metrics.stats import ReplicaStats
    from kafkalike.protocol.messages.fetch import FetchResponse
    from kafkalike.protocol.messages.produce import ProduceResponse
    monotonic = time.monotonic
    requests = new_request_metrics()          # the broker's: error codes of each answer counted too
    stats = ReplicaStats()
    result = {("bench", 0): SimpleNamespace(error=0, records=b"x" * 1000)}
    produced = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="bench", partition_responses=[
        ProduceResponse.PartitionProduceResponse(index=0, base_offset=0)])])
    fetched = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="bench", partition_responses=[
        FetchResponse.FetchablePartitionResponse(partition=0, record_set=b"x" * 1000)])])

    def produce_loop() -> float:
        start = time.perf_counter()
        for _ in range(n):
            received, started, handled, ready = monotonic(), monotonic(), monotonic(), monotonic()
            stats.appended("bench", 16, 16384)
            requests.record(0, 9, False, received, started, handled, ready, monotonic(), produced)
        return time.perf_counter() - start

    def fetch_loop() -> float:
        start = time.perf_counter()
        for _ in range(n):
            received, started, handled, ready = monotonic(), monotonic(), monotonic(), monotonic()
            stats.fetched(-1, result)
            requests.record(1, 12, False, received, started, handled, ready, monotonic(), fetched)
        return time.perf_counter() - start

    def empty_loop() -> float:
        start = time.perf_counter()
        for _ in range(n):
            pass
        return time.perf_counter() - start

    empty = min(empty_loop() for _ in range(3))
    per_produce = (min(produce_loop() for _ in range(3)) - empty) / n * 1e6
    per_fetch = (min(fetch_loop() for _ in range(3)) - empty) / n * 1e6
    return per_produce, per_fetch


def idle_timing_cost_us(n: int = 200_000) -> float:
    """µs one reactor turn pays for the idle time (kafkalike.metrics.reactor_idle): an
    epoll poll() that returns at once, through the timing wrapper less without it."""
    import select

    from kafkalike.metrics.reactor_idle import TimedPoller
    poller = select.epoll()
    timed = TimedPoller(poller)

    def loop(target) -> float:
        poll = target.poll
        start = time.perf_counter()
        for _ in range(n):
            poll(0, 1)
        return time.perf_counter() - start

    try:
        plain = min(loop(poller) for _ in range(3))
        wrapped = min(loop(timed) for _ in range(3))
    finally:
        poller.close()
    return (wrapped - plain) / n * 1e6


def scrape_cost_ms(partitions: int) -> tuple[float, float, int]:
    """A broker's scrape with `partitions` partitions (10 per topic, each led here, one
    log each, every topic produced to and fetched from, 20 APIs seen): (median ms to take
    the readings, as the reactor does; median ms to format them, as the worker thread
    does; body size). The broker's real gauge code runs over in-memory partitions and
    logs; only the logs' storage is left out."""
    from types import SimpleNamespace

    from kafkalike.broker.metrics import BrokerMetrics
    from kafkalike.broker.partition import Partition
    from kafkalike.metrics.exposition import render
    from kafkalike.metrics.stats import ControllerStats, ReplicaStats, RequestMetrics

    class Log:
        log_start_offset, log_end_offset, size, segments, high_watermark = 0, 1000, 10**6, (1,), 1000

    parts, logs = {}, {}
    for p in range(partitions):
        tp = (f"topic-{p // 10}", p % 10)
        parts[tp] = Partition(tp[0], tp[1], 0, Log(), leader_id=0, replicas=[0, 1, 2], isr=[0, 1, 2])
        logs[tp] = parts[tp].log
    stats = ReplicaStats()
    for t in range(max(1, partitions // 10)):
        stats.appended(f"topic-{t}", 10, 1000)
        stats.fetched(-1, {(f"topic-{t}", 0): SimpleNamespace(error=0, records=b"x")})
    requests = RequestMetrics({k: f"Api{k}" for k in range(20)})
    for k in range(20):
        requests.record(k, 3, False, 0.0, 0.001, 0.002, 0.002, 0.003)
    purgatory = SimpleNamespace(watched=lambda: 0, delayed=lambda: 0)
    manager = SimpleNamespace(partitions=parts, stats=stats, min_insync=lambda t: 2,
                              produce_purgatory=purgatory, fetch_purgatory=purgatory)
    controller = SimpleNamespace(active=False, ctx=None, stats=ControllerStats())
    services = SimpleNamespace(request_metrics=requests, controller=controller, fetch_sessions=None,
                               replicas=manager, logs=SimpleNamespace(logs=logs), groups=None, quotas=None,
                               alter_log_dirs=None)
    registry = BrokerMetrics(services, None, lambda: False).registry
    reads, formats = [], []
    body = b""
    for _ in range(5):
        start = time.perf_counter()
        readings = list(registry.readings())
        reads.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        body, _ = render(readings)
        formats.append((time.perf_counter() - start) * 1000)
    return harness.median(reads), harness.median(formats), len(body)


# -- the run ----------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=5)
    parser.add_argument("--records", type=int, default=500_000, help="records per 'batches' run")
    parser.add_argument("--small-records", type=int, default=20_000, help="records per 'small requests' run")
    parser.add_argument("--scrape-interval", type=float, default=1.0)
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of: {', '.join(CASES)}")
    parser.add_argument("--control", action="store_true",
                        help="add a second broker without recording: its ratio to the first is the noise floor")
    args = parser.parse_args(argv)
    cases = tuple(c for c in CASES if c in args.cases.split(","))
    names = BROKERS + ((CONTROL,) if args.control else ())
    from kafkalike.lab.zookeeper import free_ports

    median = harness.median
    scraper = None
    with harness.Lab("metrics", args.dir) as lab:
        try:
            scrape_port = free_ports(1)[0]
            brokers = {}
            for i, name in enumerate(names):
                overrides: dict[str, str] = {}
                launcher: list[str] = []
                if name in ("no recording", CONTROL):
                    launcher = [sys.executable, str(Path(__file__).resolve()), NO_RECORDING_FLAG]
                if name == "endpoint + scrapes":
                    overrides.update({"kafkalike.metrics.port": str(scrape_port),
                                      "kafkalike.metrics.host": "127.0.0.1"})
                brokers[name] = lab.broker(f"b{i}", overrides=overrides, launcher=launcher)
            for b in brokers.values():
                harness.create_topic(b.bootstrap, "bench", leader=0, timeout=30)
                produce(b.bootstrap, "bench", 2000, small=False)     # warm up connections and the log
            scrape_log = lab.scratch / "scrapes.txt"
            scraper = subprocess.Popen([sys.executable, "-c", SCRAPER, f"http://127.0.0.1:{scrape_port}/metrics",
                                        str(args.scrape_interval), str(scrape_log)])

            pairs = [(case, name) for case in cases for name in names]
            results: dict[tuple[str, str], list[tuple[float, float]]] = {p: [] for p in pairs}

            def run(pair: tuple[str, str]) -> None:
                case, name = pair
                broker = brokers[name]
                small = case == "small requests"
                records = args.small_records if small else args.records
                cpu0 = cpu_seconds(broker.pid)
                seconds = produce(broker.bootstrap, "bench", records, small)
                cpu = cpu_seconds(broker.pid) - cpu0
                results[pair].append((records / seconds, cpu / records * 1e6))

            harness.interleave(args.reps, pairs, run,
                               lambda rep: print(f"repetition {rep + 1}/{args.reps} done", flush=True))

            print()
            table = harness.Table(harness.Column("case", 16, align="<"),
                                  harness.Column("broker", 20, align="<", gap=1),
                                  harness.Column("records/s", 11, ",.0f", gap=1), harness.Column("range", 21, gap=1),
                                  harness.Column("reactor CPU us/record", 22, ".3f", gap=1))
            print(table.header())
            for case, name in pairs:
                rates = [r for r, _ in results[(case, name)]]
                cpus = [c for _, c in results[(case, name)]]
                print(table.row(case, name, median(rates), f"{min(rates):>10,.0f}-{max(rates):<10,.0f}",
                                median(cpus)))
            print()
            for case in cases:
                base = results[(case, "no recording")]
                base_rate = median(r for r, _ in base)
                base_cpu = median(c for _, c in base)
                for name in names[1:]:
                    rate = median(r for r, _ in results[(case, name)])
                    cpu = median(c for _, c in results[(case, name)])
                    ratios = sorted(a[0] / b[0] for a, b in zip(results[(case, name)], base))
                    cpu_ratios = sorted(a[1] / b[1] for a, b in zip(results[(case, name)], base))
                    print(f"{case:<16} {name:<20} / no recording: throughput {rate / base_rate:.3f} "
                          f"(per-rep median {median(ratios):.3f}, {ratios[0]:.3f}-{ratios[-1]:.3f}); "
                          f"CPU per record {cpu / base_cpu:.3f} (per-rep median {median(cpu_ratios):.3f})")
            per_produce, per_fetch = recording_cost_us()
            print()
            print(f"recording calls per produce request: {per_produce:.2f} us; per fetch request: "
                  f"{per_fetch:.2f} us (this process, less an empty loop)")
            print(f"timing the reactor's idle time: {idle_timing_cost_us():.2f} us per reactor turn")
            if "small requests" in cases:
                small_cpu = median(c for _, c in results[("small requests", "recording")])
                print(f"reactor CPU per small produce request (one record each): {small_cpu:.1f} us; "
                      f"recording share: {per_produce / small_cpu * 100:.1f}%")
            for partitions in (10, 100, 1000, 10000):
                read_ms, format_ms, size = scrape_cost_ms(partitions)
                print(f"scrape of a broker leading {partitions} partitions: readings {read_ms:.1f} ms (reactor), "
                      f"formatting {format_ms:.1f} ms (worker thread), {size / 1000:,.0f} kB")
            lines = [line.split() for line in scrape_log.read_text().splitlines()]
            latencies = [float(x[0]) for x in lines if x and x[0] != "error"]
            errors = sum(1 for x in lines if x and x[0] == "error")
            if latencies:
                print(f"HTTP scrapes during the run: {len(latencies)}, median {median(latencies):.1f} ms, "
                      f"max {max(latencies):.1f} ms, {errors} errors, body {lines[-1][1]} bytes")
            return 0
        finally:
            if scraper is not None:
                scraper.kill()
                scraper.wait()


@harness.bench_test
def test_metrics_bench_short() -> None:
    assert main(["--records", "20000", "--small-records", "1000", "--reps", "1"]) == 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == NO_RECORDING_FLAG:
        run_broker_without_recording(sys.argv[2:])
    else:
        sys.exit(main())
