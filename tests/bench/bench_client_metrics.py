"""What the clients' metrics cost, as a share of the CPU time the clients spend anyway.

    python tests/bench/bench_client_metrics.py [--records 200000] [--value-sizes 100,1024] [--reps 5]

End-to-end runs (bench_producer.py / bench_consumer.py --compare-with) cannot resolve a
cost below a few percent on a shared 2-core machine. This one measures in CPU time of
its own process, which load on other cores hardly moves:

1. it starts a broker (kafkalike.lab, log dir in memory), produces --records values with
   kafkalike's KafkaProducer (acks=1, linger.ms=5, 16 KiB batches) and reads them back
   with KafkaConsumer, noting the process's CPU time for each and, from the clients' own
   metrics, how many batches, Produce requests, Fetch answers and polls that took;
2. it times the recording calls the sender makes per batch and per request, and the
   consumer per Fetch answer and per poll, in a tight loop (CPU time, median of --reps);
3. it prints recordings x their cost over the CPU time of the run: the share of the
   client's CPU that goes to its metrics.

send() itself records nothing (the producer's metrics are all taken on its sender
thread, per batch and per request), so the per-record path is unchanged by them.
"""
from __future__ import annotations

import statistics
import time

try:
    from . import harness          # collected by pytest as tests.bench.bench_client_metrics
except ImportError:
    import harness                 # python tests/bench/bench_client_metrics.py

from kafkalike.client.consumer import KafkaConsumer, TopicPartition
from kafkalike.client.metrics import FetchMetrics, Metrics, ProducerMetrics, network_sensors
from kafkalike.client.producer import KafkaProducer

LOOPS = 20000


def per_call(fn, reps: int) -> float:
    """CPU seconds per call: the median over `reps` runs of LOOPS calls."""
    runs = []
    for _ in range(reps):
        start = time.process_time()
        for _ in range(LOOPS):
            fn()
        runs.append((time.process_time() - start) / LOOPS)
    return statistics.median(runs)


def recording_costs(reps: int) -> dict[str, float]:
    producer = ProducerMetrics(Metrics("bench-producer"))
    fetch = FetchMetrics(Metrics("bench-consumer"))
    net = network_sensors(fetch.metrics, "consumer-metrics")
    now = time.monotonic()

    def produce_request() -> None:      # once per Produce request and its answer
        producer.network[0].record(16500, now)
        producer.answered(1.5, 0, 150, now)
        producer.network[1].record(60, now)

    def fetch_answer() -> None:         # once per Fetch request and its answer
        net[0].record(120, now)
        net[1].record(16500, now)
        fetch.fetch_answered(2.0, 16400, {"bench": 16400}, 0, now)

    return {
        "batch": per_call(lambda: producer.batch_sent("bench", 150, 16400, 16400, 2.5, now), reps),
        "request": per_call(produce_request, reps),
        "fetch": per_call(fetch_answer, reps),
        "poll": per_call(lambda: fetch.consumed("bench", 0, 500, 1000, 5000, now), reps),
    }


def metric(client, name: str, group: str) -> float:
    for metric_name, value in client.metrics().items():
        if metric_name.name == name and metric_name.group == group and len(metric_name.tags) == 1:
            return value.metric_value()
    raise KeyError(name)


def run(bootstrap: str, topic: str, records: int, value: bytes) -> dict[str, float]:
    out: dict[str, float] = {}
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5, "batch.size": 16384})
    producer.partitions_for(topic)
    start = time.process_time()
    for _ in range(records):
        producer.send(topic, value)
    producer.flush()
    out["produce_cpu"] = time.process_time() - start
    out["records_sent"] = metric(producer, "record-send-total", "producer-metrics")
    out["requests"] = metric(producer, "request-total", "producer-metrics")
    producer.close()
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False})
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got = polls = 0
    start = time.process_time()
    while got < records:
        got += len(consumer.poll(1.0))
        polls += 1
    out["consume_cpu"] = time.process_time() - start
    out["polls"] = polls
    out["fetches"] = metric(consumer, "fetch-total", "consumer-fetch-manager-metrics")
    consumer.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=5)
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--value-sizes", default="100,1024")
    args = parser.parse_args(argv)
    costs = recording_costs(args.reps)
    print(f"{harness.machine()}; load average {harness.load_average():.2f}")
    print("recording, CPU us per call: " + ", ".join(f"{k} {v * 1e6:.2f}" for k, v in costs.items()))
    with harness.Lab("client-metrics", args.dir) as lab:
        bootstrap = lab.broker().bootstrap
        for size in (int(s) for s in args.value_sizes.split(",")):
            records = args.records if size <= 100 else args.records // 3
            topic = f"bench-client-metrics-{size}"
            harness.create_topic(bootstrap, topic)
            r = run(bootstrap, topic, records, harness.printable_value(size))
            # One partition: each Produce request carries one batch.
            produce_share = (r["requests"] * costs["batch"] + r["requests"] * costs["request"]) / r["produce_cpu"]
            consume_share = (r["fetches"] * costs["fetch"] + r["polls"] * costs["poll"]) / r["consume_cpu"]
            print(f"{size:>5} B x {records}: produce {r['produce_cpu']:.2f} s CPU, {r['requests']:.0f} requests "
                  f"of {r['records_sent'] / max(1.0, r['requests']):.0f} records; metrics {produce_share:.2%} of it")
            print(f"{size:>5} B x {records}: consume {r['consume_cpu']:.2f} s CPU, {r['fetches']:.0f} fetch answers, "
                  f"{r['polls']} polls; metrics {consume_share:.2%} of it")
    return 0


@harness.bench_test
def test_client_metrics_bench_short() -> None:
    """A few thousand records of each size through the measured producer and consumer."""
    assert main(["--records", "3000", "--reps", "1"]) == 0


if __name__ == "__main__":
    raise SystemExit(main())
