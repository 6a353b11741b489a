"""Producer throughput: kafkalike's KafkaProducer next to kafka-python's and confluent-kafka's, in one run.

    python tests/bench/bench_producer.py [--records 300000] [--kafka-python-records 100000]
                                         [--reps 3] [--linger-ms 5] [--batch-size 16384]
                                         [--key-size 0] [--dir /dev/shm]

It starts its own ZooKeeper and one broker (kafkalike.lab, log dir in memory by
default) and removes everything afterwards. Every client produces the same 100-byte
values (plus an optional key) to its own fresh single-partition topic on that broker,
acks=1, no compression, the same batch.size and linger.ms, from a plain Python loop
of send()/produce() calls timed from the first call until flush() returns. Each
measurement runs in a fresh process so no client's background threads linger into
another's run; the order rotates between repetitions so machine noise spreads evenly.
kafka-python is given fewer records by default because it is much slower. Medians;
MB = 10^6 bytes of values (keys included when --key-size > 0).
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

VALUE_SIZE = 100
CLIENTS = ("kafkalike", "kafka-python", "confluent-kafka")


def produce_kafkalike(bootstrap: str, topic: str, records: int, value: bytes, keys: list, cfg: dict) -> None:
    from kafkalike.client.producer import KafkaProducer
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": cfg["linger"],
                              "batch.size": cfg["batch"], "max.block.ms": 120000})
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


WORKERS = {"kafkalike": produce_kafkalike, "kafka-python": produce_kafka_python,
           "confluent-kafka": produce_confluent}


def worker(args: argparse.Namespace) -> int:
    """One timed run in this process; prints its seconds as JSON."""
    value = bytes(range(VALUE_SIZE))
    keys = [i.to_bytes(4, "big") * (args.key_size // 4 + 1) for i in range(1000)] if args.key_size else []
    keys = [k[:args.key_size] for k in keys]
    cfg = {"linger": args.linger_ms, "batch": args.batch_size}
    seconds = WORKERS[args.worker](args.bootstrap, args.topic, args.records, value, keys, cfg)
    print(json.dumps({"seconds": seconds}))
    return 0


def create_topic(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=30).values():
        future.result()


def run(args: argparse.Namespace) -> int:
    from kafkalike.lab.cluster import BrokerProcess
    from kafkalike.lab.zookeeper import ZooKeeperServer

    base = Path(tempfile.mkdtemp(prefix="kafkalike-bench-producer-", dir=args.dir))
    zookeeper = ZooKeeperServer(base / "zk", force_sync=False)
    broker = None
    try:
        zookeeper.start()
        zookeeper.wait_ready(60)
        broker = BrokerProcess(0, zookeeper.connect_string + "/bench", base / "kafka")
        broker.start()
        broker.wait_ready(60)
        counts = {"kafkalike": args.records, "confluent-kafka": args.records,
                  "kafka-python": args.kafka_python_records}
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
        print(f"{VALUE_SIZE}-byte values, key {args.key_size or 'none'}, 1 partition, acks=1, "
              f"batch.size={args.batch_size}, linger.ms={args.linger_ms}, no compression; broker log dir in "
              f"{args.dir}; {args.reps} rotating reps, medians")
        seconds: dict[str, list[float]] = {c: [] for c in CLIENTS}
        for rep in range(args.reps):
            order = CLIENTS[rep % 3:] + CLIENTS[:rep % 3]
            for client in order:
                topic = f"bench-{client}-{rep}-{int(time.time() * 1000)}"
                create_topic(broker.bootstrap, topic)
                proc = subprocess.run(
                    [sys.executable, __file__, "--worker", client, "--bootstrap", broker.bootstrap, "--topic", topic,
                     "--records", str(counts[client]), "--linger-ms", str(args.linger_ms),
                     "--batch-size", str(args.batch_size), "--key-size", str(args.key_size)],
                    capture_output=True, text=True, timeout=1200)
                if proc.returncode != 0:
                    print(f"{client} failed:\n{proc.stderr}", file=sys.stderr)
                    return 1
                seconds[client].append(json.loads(proc.stdout.strip().splitlines()[-1])["seconds"])
            print(f"  rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{c} {counts[c] / seconds[c][-1]:,.0f} rec/s" for c in CLIENTS), flush=True)
        print(f"\n{'client':<18}{'records':>10}{'records/s':>14}{'MB/s':>9}")
        per_record = VALUE_SIZE + args.key_size
        for client in CLIENTS:
            median = statistics.median(seconds[client])
            rate = counts[client] / median
            print(f"{client:<18}{counts[client]:>10,}{rate:>14,.0f}{rate * per_record / 1e6:>9.1f}")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        return 0
    finally:
        if broker is not None:
            broker.kill()
        zookeeper.remove()
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--kafka-python-records", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--key-size", type=int, default=0)
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    parser.add_argument("--worker", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return worker(args) if args.worker else run(args)


if __name__ == "__main__":
    sys.exit(main())
