"""kafka-producer-perf-test: Kafka 2.8's ProducerPerformance on kafkalike's own producer.

Same command line (argparse4j: --topic, --num-records, --record-size or --payload-file,
--payload-delimiter, --throughput, --producer-props, --producer.config, --print-metrics,
--transactional-id, --transaction-duration-ms) and the same output: every 5 seconds
`N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency.` and at the
end `N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency, a ms 50th,
b ms 95th, c ms 99th, d ms 99.9th.`, with Java's printf formats. The payload is Kafka's:
`--record-size` bytes of random capital letters from a generator seeded 0, or a random
line of `--payload-file` per record. Latency is from send() to the completion callback,
in whole milliseconds; percentiles come from at most 500,000 sampled latencies.

With --transaction-duration-ms above 0 the producer is transactional, as 2.8's: its
transactional.id is --transactional-id (over any in the properties), init_transactions()
comes first, a transaction begins before the first record of each, and it is committed
once a send starts --transaction-duration-ms or more after its transaction began (the
check follows each send, so a transaction holds at least one record); the last one is
committed after the loop.

Beyond Kafka: `--histogram FILE.png` writes a histogram of the sampled latencies as a PNG,
drawn here (no plotting library): bars over the latency range, axes, and the 50th/99th
percentiles as red lines; the bucket width is printed on stderr.
"""
from __future__ import annotations

import argparse
import os
import random
import struct
import sys
import threading
import time
import zlib
from typing import Sequence, TextIO

from kafkalike.cli.argparse4j import INTEGER, LONG, ArgumentParser
from kafkalike.cli.joptions import parse_key_values
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.producer import KafkaProducer
from kafkalike.client.metrics import by_name
from kafkalike.properties import load as load_properties

BYTES_SERIALIZER = "org.apache.kafka.common.serialization.ByteArraySerializer"


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="producer-performance", description="This tool is used to verify the producer "
                            "performance.")
    payload = parser.add_mutually_exclusive_group(required=True)
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="produce messages to this topic")
    parser.add_argument("--num-records", dest="num_records", required=True, type=LONG, metavar="NUM-RECORDS",
                        help="number of messages to produce")
    payload.add_argument("--record-size", dest="record_size", type=INTEGER, metavar="RECORD-SIZE",
                         help="message size in bytes. Note that you must provide exactly one of --record-size or "
                              "--payload-file.")
    payload.add_argument("--payload-file", dest="payload_file", metavar="PAYLOAD-FILE",
                         help="file to read the message payloads from. This works only for UTF-8 encoded text "
                              "files. Payloads will be read from this file and a payload will be randomly selected "
                              "when sending messages. Note that you must provide exactly one of --record-size or "
                              "--payload-file.")
    parser.add_argument("--payload-delimiter", dest="payload_delimiter", default="\\n", metavar="PAYLOAD-DELIMITER",
                        help="provides delimiter to be used when --payload-file is provided. Defaults to new line. "
                             "Note that this parameter will be ignored if --payload-file is not provided.")
    parser.add_argument("--throughput", required=True, type=INTEGER, metavar="THROUGHPUT",
                        help="throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set "
                             "this to -1 to disable throttling.")
    parser.add_argument("--producer-props", dest="producer_props", nargs="+", metavar="PROP-NAME=PROP-VALUE",
                        help="kafka producer related configuration properties like bootstrap.servers,client.id "
                             "etc. These configs take precedence over those passed via --producer.config.")
    parser.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                        help="producer config properties file.")
    parser.add_argument("--print-metrics", dest="print_metrics", action="store_true",
                        help="print out metrics at the end of the test.")
    parser.add_argument("--transactional-id", dest="transactional_id", default="performance-producer-default-"
                        "transactional-id", metavar="TRANSACTIONAL-ID",
                        help="The transactionalId to use if transaction-duration-ms is > 0. Useful when testing "
                             "the performance of concurrent transactions.")
    parser.add_argument("--transaction-duration-ms", dest="transaction_duration_ms", type=LONG, default=0,
                        metavar="TRANSACTION-DURATION",
                        help="The max age of each transaction. The commitTransaction will be called after this "
                             "time has elapsed. Transactions are only enabled if this value is positive.")
    parser.add_argument("--histogram", metavar="FILE.png",
                        help="(kafkalike) write a histogram of the latencies to this PNG file.")
    return parser


class Stats:
    """ProducerPerformance.Stats: the window lines, the totals and the sampled latencies."""

    def __init__(self, num_records: int, reporting_interval_ms: int, out: TextIO) -> None:
        self.out = out
        self.start = self.window_start = _now_ms()
        self.sampling = max(1, num_records // max(1, min(num_records, 500000)))
        self.latencies: list[int] = []
        self.reporting_interval = reporting_interval_ms
        self.count = self.bytes = self.total_latency = self.max_latency = 0
        self.window_count = self.window_bytes = self.window_total_latency = self.window_max_latency = 0
        self.iteration = 0
        self.lock = threading.Lock()

    def record(self, iteration: int, latency: int, size: int, now: int) -> None:
        with self.lock:
            self.count += 1
            self.bytes += size
            self.total_latency += latency
            self.max_latency = max(self.max_latency, latency)
            self.window_count += 1
            self.window_bytes += size
            self.window_total_latency += latency
            self.window_max_latency = max(self.window_max_latency, latency)
            if iteration % self.sampling == 0:
                self.latencies.append(latency)
            if now - self.window_start >= self.reporting_interval:
                self.print_window()
                self.window_start = _now_ms()
                self.window_count = self.window_bytes = self.window_total_latency = self.window_max_latency = 0

    def next_completion(self, start: int, size: int):
        iteration = self.iteration
        self.iteration += 1

        def on_completion(metadata, error) -> None:
            now = _now_ms()
            self.record(iteration, now - start, size, now)
            if error is not None:
                sys.stderr.write(f"{getattr(error, 'java_class', type(error).__name__)}: {error}\n")
        return on_completion

    def print_window(self) -> None:
        elapsed = max(1, _now_ms() - self.window_start)
        count = self.window_count
        self.out.write(f"{count} records sent, {1000.0 * count / elapsed:.1f} records/sec "
                       f"({1000.0 * self.window_bytes / elapsed / (1024.0 * 1024.0):.2f} MB/sec), "
                       f"{_ratio(self.window_total_latency, count):.1f} ms avg latency, "
                       f"{float(self.window_max_latency):.1f} ms max latency.\n")
        self.out.flush()

    def percentiles(self, *ps: float) -> list[int]:
        ordered = sorted(self.latencies)
        return [ordered[int(p * len(ordered))] if ordered else 0 for p in ps]

    def print_total(self) -> None:
        elapsed = max(1, _now_ms() - self.start)
        p50, p95, p99, p999 = self.percentiles(0.5, 0.95, 0.99, 0.999)
        self.out.write(f"{self.count} records sent, {1000.0 * self.count / elapsed:f} records/sec "
                       f"({1000.0 * self.bytes / elapsed / (1024.0 * 1024.0):.2f} MB/sec), "
                       f"{_ratio(self.total_latency, self.count):.2f} ms avg latency, "
                       f"{float(self.max_latency):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, "
                       f"{p99} ms 99th, {p999} ms 99.9th.\n")
        self.out.flush()


def _ratio(total: int, count: int) -> float:
    return total / count if count else float("nan")


def _now_ms() -> int:
    return int(time.time() * 1000)


class Throttler:
    """ThroughputThrottler: keep the send rate at about `target` per second (-1: no limit, 0: stop)."""

    def __init__(self, target: int, start_ms: int) -> None:
        self.target, self.start_ms = target, start_ms

    def should_throttle(self, sent: int, now_ms: int) -> bool:
        if self.target < 0:
            return False
        elapsed = (now_ms - self.start_ms) / 1000.0
        return elapsed > 0 and sent / elapsed > self.target

    def throttle(self, sent: int) -> None:
        if self.target == 0:
            threading.Event().wait()
        ahead = sent / self.target - (_now_ms() - self.start_ms) / 1000.0
        if ahead > 0:
            time.sleep(ahead)


def read_payloads(path: str, delimiter: str, out: TextIO) -> list[bytes]:
    delimiter = delimiter.replace("\\n", "\n")
    out.write(f"Reading payloads from: {os.path.abspath(path)}\n")
    with open(path, encoding="utf-8") as f:
        payloads = [p.encode() for p in f.read().split(delimiter) if p]
    out.write(f"Number of messages read: {len(payloads)}\n")
    return payloads


def producer_config(args: argparse.Namespace, parser: ArgumentParser) -> dict[str, str]:
    if args.producer_props is None and args.producer_config is None:
        parser.error("Either --producer-props or --producer.config must be specified.")
    config: dict[str, str] = {}
    if args.producer_config:
        config.update(load_properties(args.producer_config))
    if args.producer_props:
        config.update(parse_key_values(args.producer_props))
    config["key.serializer"] = BYTES_SERIALIZER
    config["value.serializer"] = BYTES_SERIALIZER
    if args.transaction_duration_ms > 0:           # ProducerPerformance.readProps
        config["transactional.id"] = args.transactional_id
    return config


def write_histogram(path: str, latencies: list[int], p50: int, p99: int, width: int = 640, height: int = 400) -> int:
    """A bar chart of the latencies as an 8-bit RGB PNG; returns the bucket width in ms."""
    margin = 40
    plot_w, plot_h = width - 2 * margin, height - 2 * margin
    top = max(latencies) + 1 if latencies else 1
    bucket_ms = -(-top // 64)                  # whole milliseconds: latencies are whole
    buckets = -(-top // bucket_ms)
    counts = [0] * buckets
    for latency in latencies:
        counts[min(buckets - 1, int(latency / bucket_ms))] += 1
    peak = max(counts) or 1
    white, black, blue, red = b"\xff\xff\xff", b"\x00\x00\x00", b"\x1f\x77\xb4", b"\xd6\x27\x28"
    pixels = [bytearray(white * width) for _ in range(height)]

    def put(x: int, y: int, color: bytes) -> None:
        if 0 <= x < width and 0 <= y < height:
            pixels[y][3 * x:3 * x + 3] = color
    bar_w = plot_w / buckets
    for i, count in enumerate(counts):
        bar_h = round(plot_h * count / peak)
        for x in range(int(margin + i * bar_w), int(margin + (i + 1) * bar_w) - 1):
            for y in range(height - margin - bar_h, height - margin):
                put(x, y, blue)
    for mark in (p50, p99):
        x = int(margin + plot_w * mark / (bucket_ms * buckets))
        for y in range(margin, height - margin):
            put(x, y, red)
    for x in range(margin, width - margin):
        put(x, height - margin, black)
    for y in range(margin, height - margin + 1):
        put(margin, y, black)
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return bucket_ms


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = _parser()
    args_list = sys.argv[1:] if argv is None else list(argv)
    if not args_list:
        parser.print_help(out)
        return 0
    args = parser.parse_args(args_list)
    config = producer_config(args, parser)
    if args.record_size is not None:
        rng = random.Random(0)
        payload = bytes(rng.randrange(26) + 65 for _ in range(args.record_size))
        payloads = [payload]
    else:
        payloads = read_payloads(args.payload_file, args.payload_delimiter, out)
        if not payloads:
            err.write('Exception in thread "main" java.lang.IllegalArgumentException: File does not contain any '
                      'payload\n')
            return 1
    transactions = args.transaction_duration_ms > 0
    producer = KafkaProducer(config)
    if transactions:
        producer.init_transactions()
    stats = Stats(args.num_records, 5000, out)
    start_ms = _now_ms()
    throttler = Throttler(args.throughput, start_ms)
    pick = random.Random(0)
    transaction_size = 0
    transaction_start = 0
    for i in range(args.num_records):
        if transactions and transaction_size == 0:
            producer.begin_transaction()
            transaction_start = _now_ms()
        payload = payloads[pick.randrange(len(payloads))] if len(payloads) > 1 else payloads[0]
        send_start = _now_ms()
        producer.send(args.topic, payload, callback=stats.next_completion(send_start, len(payload)))
        transaction_size += 1
        if transactions and args.transaction_duration_ms <= send_start - transaction_start:
            producer.commit_transaction()
            transaction_size = 0
        if throttler.should_throttle(i, send_start):
            throttler.throttle(i)
    if transactions and transaction_size != 0:
        producer.commit_transaction()
    if args.print_metrics:
        producer.flush()
        stats.print_total()
        print_metrics(by_name(producer.metrics()), out)
        producer.close()
    else:
        producer.close()
        stats.print_total()
    if args.histogram:
        p50, p99 = stats.percentiles(0.5, 0.99)
        bucket = write_histogram(args.histogram, stats.latencies, p50, p99)
        err.write(f"Latency histogram of {len(stats.latencies)} sampled records written to {args.histogram} "
                  f"(bars of {bucket} ms; red lines: 50th and 99th percentiles)\n")
    return 0


def print_metrics(metrics: dict, out: TextIO) -> None:
    """ToolsUtils.printMetrics: a name/value table under a header, names padded to the longest."""
    if not metrics:
        return
    width = max(len(n) for n in metrics)
    out.write("\n" + "Metric Name".ljust(width) + "   Value\n")
    for name in sorted(metrics):
        value = metrics[name]
        out.write(f"{name.ljust(width)} : {float(value):.3f}\n" if isinstance(value, (int, float))
                  else f"{name.ljust(width)} : {value}\n")


if __name__ == "__main__":
    run_tool(main)
