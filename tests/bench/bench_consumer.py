"""Consumer throughput: kafkalike's KafkaConsumer next to kafka-python, aiokafka and confluent-kafka, in one run.

    python tests/bench/bench_consumer.py [--records-100 300000] [--records-1k 100000]
                                         [--reps 3] [--dir /dev/shm] [--profile /tmp/consumer-prof]
                                         [--clients kafkalike,confluent-kafka] [--compare-with DIR]

It starts its own ZooKeeper and one broker (kafkalike.lab, log dir in memory by
default) and removes everything afterwards. confluent-kafka writes the data once, before
any timing: one single-partition topic of 100-byte values and one of 1 KiB values (no
key, no compression, 16 KiB batches). Every client then reads the same topic from
offset 0 in assign mode (no group, no commits), in a fresh process. The clock starts
when the first batch of records reaches the user (so connecting, metadata and the offset
lookup, which differ per client and are not throughput, stay out) and stops when the
last record has; the records of that first batch are not counted. Each client touches
every value (len) so no one can skip the work of handing records to the user. The order of the clients rotates
between repetitions so machine noise spreads evenly; medians are printed.
MB = 10^6 bytes of values.

Client settings are each client's defaults, except librdkafka's local queue: with its
defaults (queued.min.messages=100000, fetch.queue.backoff.ms=1000) the confluent consumer
stalls for a second whenever its queue fills, so it gets the larger queue and short
backoff bench_broker.py uses.

--profile PREFIX also runs kafkalike once per size under cProfile and writes
PREFIX.<size>.txt (the top functions by own time; the client is imported before the
profiler starts, so imports stay out). Time in `select.epoll.poll` there is time spent
waiting for the broker's next answer.

--clients picks some of the clients (kafkalike always runs). --compare-with DIR also
starts a broker from another checkout (e.g. `git worktree add /tmp/kl-base <commit>`),
writes the same topics to it, and every client reads from both brokers, kafkalike's
consumer each time from the broker's own checkout, in one rotation; the table is printed
for each, then the ratios this/base (the profile run is this checkout's only).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

try:
    from . import harness          # collected by pytest as tests.bench.bench_consumer
except ImportError:
    import harness                 # python tests/bench/bench_consumer.py

CLIENTS = ("kafkalike", "kafka-python", "aiokafka", "confluent-kafka")
SIZES = {"100B": 100, "1KiB": 1024}


class Clock:
    """Starts at the first non-empty batch; the records of that batch are not timed."""

    def __init__(self) -> None:
        self.start = 0.0
        self.untimed = 0

    def batch(self, count: int) -> None:
        if not self.start and count:
            self.start = time.perf_counter()
            self.untimed = count

    def result(self, records: int, value_bytes: int) -> dict:
        return {"seconds": time.perf_counter() - self.start, "timed_records": records - self.untimed,
                "bytes": value_bytes}


def consume_kafkalike(bootstrap: str, topic: str, records: int) -> dict:
    from kafkalike.client.consumer import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                              "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0)])
    seen = total = 0
    clock = Clock()
    while seen < records:
        batch = consumer.poll(1.0)
        clock.batch(len(batch))
        seen += len(batch)
        for record in batch:
            total += len(record.value)
    result = clock.result(seen, total)
    consumer.close()
    return result


def consume_kafka_python(bootstrap: str, topic: str, records: int) -> dict:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             group_id=None)
    consumer.assign([TopicPartition(topic, 0)])
    seen = total = 0
    clock = Clock()
    while seen < records:
        for batch in consumer.poll(timeout_ms=1000).values():
            clock.batch(len(batch))
            seen += len(batch)
            for record in batch:
                total += len(record.value)
    result = clock.result(seen, total)
    consumer.close()
    return result


def consume_aiokafka(bootstrap: str, topic: str, records: int) -> dict:
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> dict:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    enable_auto_commit=False, group_id=None)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            seen = total = 0
            clock = Clock()
            while seen < records:
                for batch in (await consumer.getmany(timeout_ms=1000)).values():
                    clock.batch(len(batch))
                    seen += len(batch)
                    for record in batch:
                        total += len(record.value)
            return clock.result(seen, total)
        finally:
            await consumer.stop()
    return asyncio.run(run())


def consume_confluent(bootstrap: str, topic: str, records: int) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False,
                         "queued.min.messages": 1_000_000, "fetch.queue.backoff.ms": 10})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen = total = 0
    clock = Clock()
    while seen < records:
        messages = consumer.consume(10000, 1.0)
        clock.batch(len(messages))
        for message in messages:
            if message.error():
                raise RuntimeError(str(message.error()))
            seen += 1
            total += len(message.value())
    result = clock.result(seen, total)
    consumer.close()
    return result


WORKERS = {"kafkalike": consume_kafkalike, "kafka-python": consume_kafka_python, "aiokafka": consume_aiokafka,
           "confluent-kafka": consume_confluent}


def worker(args: argparse.Namespace) -> int:
    """One timed run in this process; prints seconds and value bytes as JSON."""
    if args.profile_out:
        import cProfile
        import pstats
        import kafkalike.client.consumer  # noqa: F401  (imports stay out of the profile)
        profiler = cProfile.Profile()
        profiler.enable()
        result = WORKERS[args.worker](args.bootstrap, args.topic, args.records)
        profiler.disable()
        with open(args.profile_out, "w") as out:
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
    else:
        result = WORKERS[args.worker](args.bootstrap, args.topic, args.records)
    print(json.dumps(result))
    return 0


def pre_produce(bootstrap: str, topic: str, records: int, size: int) -> None:
    from confluent_kafka import Producer
    harness.create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "batch.size": 16384,
                         "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 1_048_576})
    value = bytes(i % 251 for i in range(size))
    for i in range(records):
        producer.produce(topic, value)
        if not i % 10000:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"pre-produce of {topic} did not finish")


def run_worker(client: str, bootstrap: str, topic: str, records: int, profile_out: str = "",
               side: harness.Checkout = harness.THIS) -> dict:
    command = ["--worker", client, "--bootstrap", bootstrap, "--topic", topic, "--records", str(records)]
    if profile_out:
        command += ["--profile-out", profile_out]
    return harness.run_worker(__file__, command, side, what=f"{client} ({side.label})")


def run(args: argparse.Namespace) -> int:
    sides = harness.checkouts(args)
    clients = tuple(c for c in CLIENTS if c in args.clients.split(",") or c == "kafkalike")
    with harness.Lab("consumer", args.dir) as lab:
        brokers = {side.label: lab.broker(side.label, side) for side in sides}
        broker = brokers["this"]
        counts = {"100B": args.records_100, "1KiB": args.records_1k}
        topics = {}
        for label, size in SIZES.items():
            topics[label] = f"bench-consume-{label}-{int(time.time() * 1000)}"
            for one in brokers.values():
                pre_produce(one.bootstrap, topics[label], counts[label], size)
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} cores; load average {harness.load_average():.2f}")
        harness.print_checkouts(sides)
        print(f"1 partition, pre-produced by confluent-kafka (no compression, 16 KiB batches); assign mode from "
              f"offset 0; broker log dir in {args.dir}; {args.reps} rotating reps, medians")
        rates: dict[tuple[str, str, str], list[float]] = {(side.label, c, s): [] for side in sides for c in clients
                                                           for s in SIZES}
        cases = [(client, side) for client in clients for side in sides]
        for rep in range(args.reps):
            for label, size in SIZES.items():
                for client, side in harness.rotated(cases, rep):
                    result = run_worker(client, brokers[side.label].bootstrap, topics[label], counts[label],
                                        side=side)
                    if result["bytes"] != counts[label] * size:
                        raise RuntimeError(f"{client} saw {result['bytes']} value bytes, expected "
                                           f"{counts[label] * size}")
                    rates[(side.label, client, label)].append(result["timed_records"] / result["seconds"])
                print(f"  rep {rep + 1}/{args.reps} {label}: " + ", ".join(
                    f"{c}{'' if s.is_this else ' (base)'} {rates[(s.label, c, label)][-1]:,.0f} rec/s"
                    for c, s in cases), flush=True)
        table = harness.Table(harness.Column("size", 6, align="<"), harness.Column("client", 17, align="<"),
                              harness.Column("records", 9, ","), harness.Column("records/s", 12, ",.0f"),
                              harness.Column("MB/s", 8, ".1f"), harness.Column("ours/this", 11, ".2f", suffix="x"))
        for side in sides:
            if len(sides) > 1:
                print(f"\n== {side.label}: {side.root}")
            print("\n" + table.header())
            for label, size in SIZES.items():
                ours = harness.median(rates[(side.label, "kafkalike", label)])
                for client in clients:
                    rate = harness.median(rates[(side.label, client, label)])
                    print(table.row(label, client, counts[label], rate, rate * size / 1e6,
                                    ours / rate if rate else float("nan")))
        if len(sides) > 1:
            harness.comparison("this / base (records/s, each client from each checkout's broker; kafkalike's "
                               "consumer from the same checkout)",
                               [(f"{label} {client}", rates[("this", client, label)], rates[("base", client, label)])
                                for label in SIZES for client in clients], "rec/s", fmt=",.0f")
        if args.profile:
            for label in SIZES:
                out = f"{args.profile}.{label}.txt"
                run_worker("kafkalike", broker.bootstrap, topics[label], counts[label], out)
                print(f"cProfile of kafkalike, {label}: {out}")
        print(f"load average {harness.load_average():.2f} at the end")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3, compare=True,
                                dir_help="where the broker's log dir goes (default /dev/shm)")
    parser.add_argument("--records-100", type=int, default=300_000)
    parser.add_argument("--records-1k", type=int, default=100_000)
    parser.add_argument("--profile", default="")
    parser.add_argument("--clients", default=",".join(CLIENTS), help="comma-separated (kafkalike always runs)")
    harness.hidden(parser, "--worker", choices=CLIENTS)
    harness.hidden(parser, "--bootstrap", "--topic")
    harness.hidden(parser, "--records", type=int)
    harness.hidden(parser, "--profile-out", default="")
    args = parser.parse_args(argv)
    return worker(args) if args.worker else run(args)


@harness.bench_test
def test_consumer_bench_short() -> None:
    """Every client reads back a few thousand records of each size."""
    # Enough records that each client's first batch (not timed) is not all of them.
    assert main(["--records-100", "40000", "--records-1k", "15000", "--reps", "1"]) == 0


if __name__ == "__main__":
    sys.exit(main())
