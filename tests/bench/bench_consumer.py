"""Consumer throughput: kafkalike's KafkaConsumer next to kafka-python, aiokafka and confluent-kafka, in one run.

    python tests/bench/bench_consumer.py [--records-100 300000] [--records-1k 100000]
                                         [--reps 3] [--dir /dev/shm] [--profile /tmp/consumer-prof]

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
PREFIX.<size>.txt (the top functions by own time).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

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
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "batch.size": 16384,
                         "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 1_048_576})
    value = bytes(i % 251 for i in range(size))
    for i in range(records):
        producer.produce(topic, value)
        if not i % 10000:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"pre-produce of {topic} did not finish")


def run_worker(client: str, bootstrap: str, topic: str, records: int, profile_out: str = "") -> dict:
    command = [sys.executable, __file__, "--worker", client, "--bootstrap", bootstrap, "--topic", topic,
               "--records", str(records)]
    if profile_out:
        command += ["--profile-out", profile_out]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(f"{client} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace) -> int:
    from kafkalike.lab.cluster import BrokerProcess
    from kafkalike.lab.zookeeper import ZooKeeperServer

    base = Path(tempfile.mkdtemp(prefix="kafkalike-bench-consumer-", dir=args.dir))
    zookeeper = ZooKeeperServer(base / "zk", force_sync=False)
    broker = None
    try:
        zookeeper.start()
        zookeeper.wait_ready(60)
        broker = BrokerProcess(0, zookeeper.connect_string + "/bench", base / "kafka")
        broker.start()
        broker.wait_ready(60)
        counts = {"100B": args.records_100, "1KiB": args.records_1k}
        topics = {}
        for label, size in SIZES.items():
            topics[label] = f"bench-consume-{label}-{int(time.time() * 1000)}"
            pre_produce(broker.bootstrap, topics[label], counts[label], size)
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
        print(f"1 partition, pre-produced by confluent-kafka (no compression, 16 KiB batches); assign mode from "
              f"offset 0; broker log dir in {args.dir}; {args.reps} rotating reps, medians")
        rates: dict[tuple[str, str], list[float]] = {(c, s): [] for c in CLIENTS for s in SIZES}
        for rep in range(args.reps):
            order = CLIENTS[rep % len(CLIENTS):] + CLIENTS[:rep % len(CLIENTS)]
            for label, size in SIZES.items():
                for client in order:
                    result = run_worker(client, broker.bootstrap, topics[label], counts[label])
                    if result["bytes"] != counts[label] * size:
                        raise RuntimeError(f"{client} saw {result['bytes']} value bytes, expected "
                                           f"{counts[label] * size}")
                    rates[(client, label)].append(result["timed_records"] / result["seconds"])
                print(f"  rep {rep + 1}/{args.reps} {label}: " + ", ".join(
                    f"{c} {rates[(c, label)][-1]:,.0f} rec/s" for c in CLIENTS), flush=True)
        print(f"\n{'size':<6}{'client':<17}{'records':>9}{'records/s':>12}{'MB/s':>8}{'ours/this':>11}")
        for label, size in SIZES.items():
            ours = statistics.median(rates[("kafkalike", label)])
            for client in CLIENTS:
                rate = statistics.median(rates[(client, label)])
                print(f"{label:<6}{client:<17}{counts[label]:>9,}{rate:>12,.0f}{rate * size / 1e6:>8.1f}"
                      f"{ours / rate:>10.2f}x")
        if args.profile:
            for label in SIZES:
                out = f"{args.profile}.{label}.txt"
                run_worker("kafkalike", broker.bootstrap, topics[label], counts[label], out)
                print(f"cProfile of kafkalike, {label}: {out}")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        return 0
    finally:
        if broker is not None:
            broker.kill()
        zookeeper.remove()
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records-100", type=int, default=300_000)
    parser.add_argument("--records-1k", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    parser.add_argument("--profile", default="")
    parser.add_argument("--worker", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--records", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return worker(args) if args.worker else run(args)


if __name__ == "__main__":
    sys.exit(main())
