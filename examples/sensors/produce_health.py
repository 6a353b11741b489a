"""Produce sensor health events to the topic "sensor-health", keyed by sensor id.

    python examples/sensors/produce_health.py [--bootstrap-server localhost:9092]
                                              [--sensors 8] [--rounds 5] [--seed 1]

Each round, every sensor reports once: a JSON value such as

    {"sensor_id": "sensor-03", "temperature": 21.7, "battery": 64, "status": "ok",
     "timestamp": 1764000000000}

with the key "sensor-03", so all of one sensor's events land on one partition, in order
(Kafka's default partitioner: murmur2 of the key). `timestamp` is the event time in
epoch milliseconds; within a run it grows round by round. The status follows from the
readings: "overheating" above 70 °C, "low-battery" below 15 %, otherwise "ok".

The topic is created with 3 partitions if it does not exist. The last line printed
names each sensor's last event, which is what latest_status.py should report.
"""
from __future__ import annotations

import argparse
import random
import sys
import time

try:
    import kafkalike  # noqa: F401
except ImportError:  # run from a checkout without `pip install -e .`
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.client.producer import KafkaProducer

TOPIC = "sensor-health"
PARTITIONS = 3
ROUND_MS = 1000


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create the topic unless it exists already (whatever its partition count)."""
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        if topic not in {t.name for t in admin.list_topics()}:
            admin.create_topics([NewTopic(topic, partitions, 1)])


def status_of(temperature: float, battery: int) -> str:
    if temperature > 70:
        return "overheating"
    if battery < 15:
        return "low-battery"
    return "ok"


def health_events(sensors: int, rounds: int, seed: int, now_ms: int) -> list[dict]:
    """`rounds` events per sensor, round by round; the last round is stamped `now_ms`."""
    rng = random.Random(seed)
    temperature = {f"sensor-{i:02d}": rng.uniform(15, 35) for i in range(1, sensors + 1)}
    battery = {sensor: rng.randint(20, 100) for sensor in temperature}
    events = []
    for r in range(rounds):
        stamp = now_ms - (rounds - 1 - r) * ROUND_MS
        for sensor in temperature:
            # A random walk, with now and then a hot spell.
            temperature[sensor] += rng.uniform(-3, 3) + (rng.random() < 0.1) * 45
            temperature[sensor] = min(max(temperature[sensor], -10.0), 120.0)
            battery[sensor] = max(battery[sensor] - rng.randint(0, 9), 0)
            t, b = round(temperature[sensor], 1), battery[sensor]
            events.append({"sensor_id": sensor, "temperature": t, "battery": b, "status": status_of(t, b),
                           "timestamp": stamp})
            if temperature[sensor] > 70:
                temperature[sensor] -= 40  # the fan kicks in
    return events


def produce(bootstrap: str, events: list[dict], topic: str = TOPIC) -> None:
    producer = KafkaProducer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "key.serializer": "str",
        "value.serializer": "json",
        "linger.ms": 5,
    })
    try:
        futures = [producer.send(topic, key=e["sensor_id"], value=e, timestamp=e["timestamp"]) for e in events]
        producer.flush(30)
        for future in futures:
            future.get(timeout=30)  # raises if any event was not written
    finally:
        producer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default="localhost:9092", help="default: %(default)s")
    parser.add_argument("--topic", default=TOPIC, help="default: %(default)s")
    parser.add_argument("--sensors", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5, help="events per sensor")
    parser.add_argument("--seed", type=int, default=None, help="for the same readings every run")
    args = parser.parse_args(argv)

    ensure_topic(args.bootstrap_server, args.topic, PARTITIONS)
    events = health_events(args.sensors, args.rounds, args.seed if args.seed is not None else time.time_ns(),
                           int(time.time() * 1000))
    produce(args.bootstrap_server, events, args.topic)
    print(f"produced {len(events)} health events for {args.sensors} sensors to {args.topic}")
    last = {e["sensor_id"]: e for e in events}
    print("last status: " + ", ".join(f"{s}={e['status']}" for s, e in sorted(last.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
