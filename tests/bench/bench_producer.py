"""Producer throughput: kafkalike's KafkaProducer next to kafka-python, aiokafka and confluent-kafka, in one run.

    python tests/bench/bench_producer.py [--records 300000] [--kafka-python-records 100000]
                                         [--value-sizes 100,1024] [--reps 3] [--linger-ms 5]
                                         [--batch-size 16384] [--key-size 0] [--dir /dev/shm]
                                         [--memory-records 300000] [--profile /tmp/producer-prof]
                                         [--clients kafkalike,confluent-kafka] [--compare-with DIR]

It starts its own ZooKeeper and one broker (kafkalike.lab, log dir in memory by
default) and removes everything afterwards. For each value size (100 bytes and 1 KiB by
default) every client produces the same values (plus an optional key) to its own fresh
single-partition topic on that broker, acks=1, no compression, the same batch.size and
linger.ms, from a plain Python loop of send()/produce() calls timed from the first call
until flush() returns (aiokafka: `await send()` per record, then `await flush()`). Each
measurement runs in a fresh process so no client's background threads linger into
another's run; the order rotates between repetitions so machine noise spreads evenly.
kafka-python and aiokafka are given fewer records by default because they are much
slower; 1 KiB runs use a third of the records. Medians; MB = 10^6 bytes of values (keys
included when --key-size > 0).

Memory: afterwards one more process runs kafkalike's producer with buffer.memory=32 MiB
producing --memory-records 1 KiB records (each value a fresh bytes object, as real data
is) as fast as it can, and reports its peak RSS
(VmHWM from /proc/<pid>/status, read by the process itself after flush()) next to the
peak RSS of the same process before its first send (interpreter, imports, client); once
as is, and once with the broker stopped (SIGSTOP) for --memory-stall seconds right after
sending starts, so nothing is acknowledged and the whole buffer fills.
--profile PREFIX runs kafkalike once per size under cProfile (PREFIX.<size>.txt).
kafkalike's runs also report their CPU per record, split between the thread that calls
send() and flush() and the rest of the process (the sender thread); an older checkout's
worker reports it too (the worker code is this file's).

--clients picks some of the clients (kafkalike always runs). --compare-with DIR also
starts a broker from another checkout (e.g. `git worktree add /tmp/kl-base <commit>`):
every client then produces to both brokers, kafkalike's producer each time from the
broker's own checkout, in one rotation; the table is printed for each, then the ratios
this/base (memory and profile runs are this checkout's only).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

try:
    from . import harness          # collected by pytest as tests.bench.bench_producer
except ImportError:
    import harness                 # python tests/bench/bench_producer.py

CLIENTS = ("kafkalike", "kafka-python", "aiokafka", "confluent-kafka")
SLOW_CLIENTS = ("kafka-python", "aiokafka")
MEMORY_BUFFER = 32 * 1024 * 1024
peak_rss_mib = harness.peak_rss_mib


def produce_kafkalike(bootstrap: str, topic: str, records: int, value: bytes, keys: list, cfg: dict) -> float:
    from kafkalike.client.producer import KafkaProducer
    extra = {"buffer.memory": cfg["buffer_memory"]} if cfg.get("buffer_memory") else {}
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": cfg["linger"],
                              "batch.size": cfg["batch"], "max.block.ms": 120000, **extra})
    producer.send(topic, b"warm-up").get(60)
    cfg["rss_before"] = peak_rss_mib()
    if cfg.get("buffer_memory"):
        print("sending", flush=True)   # the parent stalls the broker now, so the buffer fills
    start = time.perf_counter()
    cpu_start, thread_start = time.process_time(), time.thread_time()
    send = producer.send
    if cfg.get("buffer_memory"):
        # A value object of its own per record, as real data has: the producer holds
        # references until a batch is encoded, so one shared value would cost nothing.
        prefix = value[:-4]
        for i in range(records):
            send(topic, prefix + i.to_bytes(4, "big"))
    elif keys:
        for i in range(records):
            send(topic, value, keys[i % len(keys)])
    else:
        for _ in range(records):
            send(topic, value)
    producer.flush()
    elapsed = time.perf_counter() - start
    thread_cpu = time.thread_time() - thread_start
    cfg["cpu_us"] = [thread_cpu * 1e6 / records, (time.process_time() - cpu_start - thread_cpu) * 1e6 / records]
    producer.close()
    return elapsed


def produce_kafka_python(bootstrap: str, topic: str, records: int, value: bytes, keys: list, cfg: dict) -> float:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=cfg["linger"], batch_size=cfg["batch"],
                             max_block_ms=120000)
    producer.send(topic, b"warm-up").get(60)
    start = time.perf_counter()
    send = producer.send
    if keys:
        for i in range(records):
            send(topic, value, keys[i % len(keys)])
    else:
        for _ in range(records):
            send(topic, value)
    producer.flush()
    elapsed = time.perf_counter() - start
    producer.close()
    return elapsed


def produce_aiokafka(bootstrap: str, topic: str, records: int, value: bytes, keys: list, cfg: dict) -> float:
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=cfg["linger"],
                                    max_batch_size=cfg["batch"], request_timeout_ms=120000)
        await producer.start()
        try:
            await (await producer.send(topic, b"warm-up"))
            start = time.perf_counter()
            send = producer.send
            if keys:
                for i in range(records):
                    await send(topic, value, keys[i % len(keys)])
            else:
                for _ in range(records):
                    await send(topic, value)
            await producer.flush()
            return time.perf_counter() - start
        finally:
            await producer.stop()
    return asyncio.run(run())


def produce_confluent(bootstrap: str, topic: str, records: int, value: bytes, keys: list, cfg: dict) -> float:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": cfg["linger"],
                         "batch.size": cfg["batch"], "queue.buffering.max.messages": 2_000_000,
                         "partitioner": "murmur2_random"})
    producer.produce(topic, b"warm-up")
    producer.flush(60)
    start = time.perf_counter()
    produce, poll = producer.produce, producer.poll
    for i in range(records):
        if keys:
            produce(topic, value, keys[i % len(keys)])
        else:
            produce(topic, value)
        if not i % 10000:
            poll(0)
    producer.flush(120)
    return time.perf_counter() - start


WORKERS = {"kafkalike": produce_kafkalike, "kafka-python": produce_kafka_python, "aiokafka": produce_aiokafka,
           "confluent-kafka": produce_confluent}


def worker(args: argparse.Namespace) -> int:
    """One timed run in this process; prints its seconds (and peak RSS in MiB) as JSON."""
    value = bytes(i % 256 for i in range(args.value_size))
    keys = [i.to_bytes(4, "big") * (args.key_size // 4 + 1) for i in range(1000)] if args.key_size else []
    keys = [k[:args.key_size] for k in keys]
    cfg = {"linger": args.linger_ms, "batch": args.batch_size, "buffer_memory": args.buffer_memory}
    if args.profile_out:
        import cProfile
        import pstats
        profiler = cProfile.Profile()
        profiler.enable()
        seconds = WORKERS[args.worker](args.bootstrap, args.topic, args.records, value, keys, cfg)
        profiler.disable()
        with open(args.profile_out, "w") as out:
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
    else:
        seconds = WORKERS[args.worker](args.bootstrap, args.topic, args.records, value, keys, cfg)
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_rss_mib(), "rss_before_mib": cfg.get("rss_before"),
                      "cpu_us": cfg.get("cpu_us")}))
    return 0


def measure_memory(broker, args: argparse.Namespace, stall: float) -> dict:
    """Peak RSS of a kafkalike producer with buffer.memory=32 MiB. With `stall` > 0 the broker
    is stopped (SIGSTOP) for that long once sending starts: nothing is acknowledged, so the
    producer fills its whole buffer and then blocks in send(), the worst case for memory."""
    topic = harness.create_topic(broker.bootstrap, f"bench-memory-{int(time.time() * 1000)}")
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", "kafkalike", "--bootstrap", broker.bootstrap, "--topic", topic,
         "--records", str(args.memory_records), "--linger-ms", str(args.linger_ms), "--value-size", "1024",
         "--batch-size", str(args.batch_size), "--buffer-memory", str(MEMORY_BUFFER)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=harness.THIS.worker_env())
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.strip() == "sending" and stall > 0:
            time.sleep(0.2)
            os.kill(broker.proc.pid, signal.SIGSTOP)
            try:
                time.sleep(stall)
            finally:
                os.kill(broker.proc.pid, signal.SIGCONT)
    if proc.wait(timeout=600) != 0:
        raise RuntimeError(f"memory run failed:\n{proc.stderr.read()}")
    return json.loads(lines[-1])


def run(args: argparse.Namespace) -> int:
    sides = harness.checkouts(args)
    clients = tuple(c for c in CLIENTS if c in args.clients.split(",") or c == "kafkalike")
    with harness.Lab("producer", args.dir) as lab:
        brokers = {side.label: lab.broker(side.label, side) for side in sides}
        broker = brokers["this"]
        sizes = [int(v) for v in args.value_sizes.split(",")]
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} cores; load average {harness.load_average():.2f}")
        harness.print_checkouts(sides)
        print(f"values of {', '.join(map(str, sizes))} bytes, key {args.key_size or 'none'}, 1 partition, acks=1, "
              f"batch.size={args.batch_size}, linger.ms={args.linger_ms}, no compression; broker log dir in "
              f"{args.dir}; {args.reps} rotating reps, medians")

        def spawn(client: str, size: int, records: int, side: harness.Checkout = harness.THIS, *extra: str) -> dict:
            bootstrap = brokers[side.label].bootstrap
            topic = harness.create_topic(bootstrap, f"bench-{client}-{size}-{int(time.time() * 1000)}")
            return harness.run_worker(__file__, [
                "--worker", client, "--bootstrap", bootstrap, "--topic", topic, "--records", str(records),
                "--linger-ms", str(args.linger_ms), "--value-size", str(size), "--batch-size", str(args.batch_size),
                "--key-size", str(args.key_size), *extra], side, what=f"{client} ({side.label})")

        counts: dict[tuple[str, int], int] = {}
        for size in sizes:
            scale = 1 if size <= 100 else 3
            for client in clients:
                base_count = args.kafka_python_records if client in SLOW_CLIENTS else args.records
                counts[(client, size)] = base_count // scale
        seconds = {(side.label, client, size): [] for side in sides for client, size in counts}
        cpu: dict[tuple[str, int], list] = {(side.label, size): [] for side in sides for size in sizes}
        cases = [(client, side) for client in clients for side in sides]
        for rep in range(args.reps):
            for size in sizes:
                for client, side in harness.rotated(cases, rep):
                    result = spawn(client, size, counts[(client, size)], side)
                    seconds[(side.label, client, size)].append(result["seconds"])
                    if client == "kafkalike" and result.get("cpu_us"):
                        cpu[(side.label, size)].append(result["cpu_us"])
                print(f"  rep {rep + 1}/{args.reps} {size} B: " + ", ".join(
                    f"{c}{'' if s.is_this else ' (base)'} {counts[(c, size)] / seconds[(s.label, c, size)][-1]:,.0f}"
                    " rec/s" for c, s in cases), flush=True)

        table = harness.Table(harness.Column("size", 6), harness.Column("client", 17, align="<", gap=1),
                              harness.Column("records", 9, ","), harness.Column("records/s", 12, ",.0f"),
                              harness.Column("MB/s", 8, ".1f"), harness.Column("ours/this", 11, ".2f", suffix="x"))
        for side in sides:
            if len(sides) > 1:
                print(f"\n== {side.label}: {side.root}")
            print("\n" + table.header())
            for size in sizes:
                ours = counts[("kafkalike", size)] / harness.median(seconds[(side.label, "kafkalike", size)])
                for client in clients:
                    rate = counts[(client, size)] / harness.median(seconds[(side.label, client, size)])
                    print(table.row(size, client, counts[(client, size)], rate,
                                    rate * (size + args.key_size) / 1e6, ours / rate))
        if "confluent-kafka" in clients:
            print("\nkafkalike / confluent-kafka per repetition (rates of the same repetition, less exposed to load "
                  "that changes between repetitions than the ratio of medians)")
            for side in sides:
                for size in sizes:
                    n = counts[("kafkalike", size)]
                    m = counts[("confluent-kafka", size)]
                    ratios = sorted((n / a) / (m / b) for a, b in zip(seconds[(side.label, "kafkalike", size)],
                                                                    seconds[(side.label, "confluent-kafka", size)]))
                    print(f"  {side.label:5s} {size:5d} B: median {harness.median(ratios):.2f}, "
                          + " ".join(f"{r:.2f}" for r in ratios))
        print("\nkafkalike's CPU per record (medians): the thread calling send() and flush(), and the rest "
              "of the process (the sender thread)")
        for side in sides:
            for size in sizes:
                rows = cpu[(side.label, size)]
                if rows:
                    print(f"  {side.label:5s} {size:5d} B: send() thread {harness.median(r[0] for r in rows):5.2f} us, "
                          f"sender {harness.median(r[1] for r in rows):5.2f} us")
        if len(sides) > 1:
            harness.comparison("this / base (records/s, each client against each checkout's broker; kafkalike's "
                               "producer from the same checkout)",
                               [(f"{size} B {client}",
                                 [counts[(client, size)] / s for s in seconds[("this", client, size)]],
                                 [counts[(client, size)] / s for s in seconds[("base", client, size)]])
                                for size in sizes for client in clients], "rec/s", fmt=",.0f")
        if args.memory_records:
            for stall in (0.0, args.memory_stall):
                memory = measure_memory(broker, args, stall)
                print(f"\nmemory: kafkalike, buffer.memory=32 MiB, {args.memory_records:,} x 1 KiB as fast as it can, "
                      f"broker stopped for {stall:.0f} s mid-run ({args.memory_records / memory['seconds']:,.0f} "
                      f"rec/s): peak RSS {memory['peak_rss_mib']:.1f} MiB (before the first send: "
                      f"{memory['rss_before_mib']:.1f} MiB)")
        if args.profile:
            for size in sizes:
                out = f"{args.profile}.{size}.txt"
                spawn("kafkalike", size, counts[("kafkalike", size)], harness.THIS, "--profile-out", out)
                print(f"cProfile of kafkalike, {size} B: {out}")
        print(f"load average {harness.load_average():.2f} at the end")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3, compare=True,
                                dir_help="where the broker's log dir goes (default /dev/shm)")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--kafka-python-records", type=int, default=100_000)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--key-size", type=int, default=0)
    parser.add_argument("--value-sizes", default="100,1024")
    parser.add_argument("--memory-records", type=int, default=300_000)
    parser.add_argument("--memory-stall", type=float, default=3.0)
    parser.add_argument("--profile", default="")
    parser.add_argument("--clients", default=",".join(CLIENTS), help="comma-separated (kafkalike always runs)")
    harness.hidden(parser, "--value-size", type=int, default=100)
    harness.hidden(parser, "--buffer-memory", type=int, default=0)
    harness.hidden(parser, "--profile-out", default="")
    harness.hidden(parser, "--worker", choices=CLIENTS)
    harness.hidden(parser, "--bootstrap", "--topic")
    args = parser.parse_args(argv)
    return worker(args) if args.worker else run(args)


@harness.bench_test
def test_producer_bench_short() -> None:
    """Every client produces a few records of each size; the memory run too."""
    assert main(["--records", "3000", "--kafka-python-records", "1500", "--reps", "1",
                 "--memory-records", "3000", "--memory-stall", "0.5"]) == 0


if __name__ == "__main__":
    sys.exit(main())
