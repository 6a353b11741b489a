"""Produce sensor alerts to "sensor-alerts", routed to a partition by alert level.

    python examples/sensors/produce_alerts.py [--bootstrap-server localhost:9092]
                                              [--sensors 8] [--alerts 40] [--seed 1]

Alerts are JSON values keyed by sensor id:

    {"sensor_id": "sensor-03", "level": "critical", "message": "temperature above 90 C",
     "timestamp": 1764000000000}

A custom partitioner, AlertLevelPartitioner below, puts every critical alert on
partition 0, warnings on 1 and info on 2, whatever the key. A consumer that must see
critical alerts first can then read partition 0 on its own. It is given to the producer
the way a Java user gives a Partitioner class:

    KafkaProducer({..., "partitioner.class": AlertLevelPartitioner})

(a "module.ClassName" string works too). The producer creates one instance, calls
partition() for every record with the record's key and value before and after
serialization and the cluster metadata, and close() when it closes.

The topic is created with 3 partitions if it does not exist. The script prints how many
alerts of each level went to which partition, as the broker acknowledged them.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

try:
    import kafkalike  # noqa: F401
except ImportError:  # run from a checkout without `pip install -e .`
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.client.producer import KafkaProducer

TOPIC = "sensor-alerts"
LEVELS = ("critical", "warning", "info")
MESSAGES = {
    "critical": ("temperature above 90 C", "battery empty", "sensor not responding"),
    "warning": ("temperature above 60 C", "battery below 15 %", "readings out of range"),
    "info": ("firmware updated", "calibrated", "back online"),
}


class AlertLevelPartitioner:
    """Java's Partitioner interface: partition(topic, key, keyBytes, value, valueBytes, cluster).

    The level's position in LEVELS is the partition: critical 0, warning 1, info 2.
    """

    def partition(self, topic, key, key_bytes, value, value_bytes, cluster) -> int:
        count = cluster.partition_count(topic)
        if count is None or count < len(LEVELS):
            raise ValueError(f"topic {topic} has {count} partitions; AlertLevelPartitioner needs {len(LEVELS)}, "
                             "one per alert level")
        try:
            return LEVELS.index(value["level"])
        except (TypeError, KeyError, ValueError):
            raise ValueError(f"not an alert with a level in {LEVELS}: {value!r}") from None

    def close(self) -> None:
        pass


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create the topic unless it exists; an existing one must have enough partitions."""
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        if topic not in {t.name for t in admin.list_topics()}:
            admin.create_topics([NewTopic(topic, partitions, 1)])
            return
        have = len(admin.describe_topics([topic])[topic].partitions)
    if have < partitions:
        raise SystemExit(f"topic {topic} has {have} partitions, alerts need {partitions} (one per level): "
                         f"delete it or add partitions with bin/kafka-topics.sh --alter")


def alerts(sensors: int, count: int, seed: int, now_ms: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        level = rng.choices(LEVELS, weights=(2, 3, 5))[0]
        out.append({"sensor_id": f"sensor-{rng.randint(1, sensors):02d}", "level": level,
                    "message": rng.choice(MESSAGES[level]), "timestamp": now_ms - (count - 1 - i) * 100})
    return out


def produce(bootstrap: str, records: list[dict], topic: str = TOPIC) -> Counter:
    """Send every alert; (level, partition) -> how many, from the broker's acknowledgements."""
    producer = KafkaProducer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "key.serializer": "str",
        "value.serializer": "json",
        "partitioner.class": AlertLevelPartitioner,
    })
    try:
        futures = [(a["level"], producer.send(topic, key=a["sensor_id"], value=a, timestamp=a["timestamp"]))
                   for a in records]
        producer.flush(30)
        return Counter((level, future.get(timeout=30).partition) for level, future in futures)
    finally:
        producer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default="localhost:9092", help="default: %(default)s")
    parser.add_argument("--topic", default=TOPIC, help="default: %(default)s")
    parser.add_argument("--sensors", type=int, default=8)
    parser.add_argument("--alerts", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None, help="for the same alerts every run")
    args = parser.parse_args(argv)

    ensure_topic(args.bootstrap_server, args.topic, len(LEVELS))
    records = alerts(args.sensors, args.alerts, args.seed if args.seed is not None else time.time_ns(),
                     int(time.time() * 1000))
    placed = produce(args.bootstrap_server, records, args.topic)
    print(f"produced {len(records)} alerts to {args.topic}")
    for level in LEVELS:
        where = ", ".join(f"{n} on partition {p}" for (lv, p), n in sorted(placed.items()) if lv == level)
        print(f"  {level:<8} {where or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
