"""kafka-consumer-perf-test: Kafka 2.8's ConsumerPerformance on kafkalike's own consumer.

The command line is ConsumerPerfConfig's (jopt-simple through CommandDefaultOptions: whole
option names, `--help` or no arguments print the help, --topic and --messages required).
The consumer subscribes to the topic in the group (auto.offset.reset earliest, latest with
--from-latest) and polls until it has read --messages records or no record came for
--timeout ms, then prints Kafka's header (unless --hide-header) and one result line:

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec

With --show-detailed-stats a line per --reporting-interval instead (time, threadId, ...),
as Kafka prints it. Dates use the --date-format SimpleDateFormat pattern. Bytes counted are
the keys' and values' sizes. --threads, --num-fetch-threads, --batch-size, --message-size
and --compression-codec are accepted and, as in Kafka 2.8, not used;
--print-metrics prints the consumer's metrics after the stats, as Java's (group:name:{tags}).
"""
from __future__ import annotations

import random
import re
import sys
import time
from datetime import datetime
from typing import Sequence, TextIO

from kafkalike.cli import command_default, joptions
from kafkalike.cli.joptions import JavaError, Option
from kafkalike.cli.tool_main import run_tool
from kafkalike.cli.producer_perf_test import print_metrics
from kafkalike.client.consumer import KafkaConsumer
from kafkalike.client.metrics import by_name
from kafkalike.properties import load as load_properties

BYTES_DESERIALIZER = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
HELP_MESSAGE = "This tool helps in performance test for the full zookeeper consumer"
HEADER_TAIL = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
OPTIONS = command_default.with_defaults(
    Option("messages", "REQUIRED: The number of messages to send or consume", "count", "Long"),
    Option("reporting-interval", "Interval in milliseconds at which to print progress info.", "interval_ms",
           "Integer", default="5000"),
    Option("date-format", "The date format to use for formatting the time field. See java.text.SimpleDateFormat "
           "for options.", "date format", default="yyyy-MM-dd HH:mm:ss:SSS"),
    Option("show-detailed-stats", "If set, stats are reported for each reporting interval as configured by "
           "reporting-interval"),
    Option("hide-header", "If set, skips printing the header for the stats"),
    Option("message-size", "The size of each message.", "size", "Integer", default="100"),
    Option("batch-size", "Number of messages to write in a single batch.", "size", "Integer", default="200"),
    Option("compression-codec", "If set, messages are sent compressed", "supported codec: NoCompressionCodec as 0, "
           "GZIPCompressionCodec as 1, SnappyCompressionCodec as 2, LZ4CompressionCodec as 3", "Integer",
           default="0"),
    Option("broker-list", "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified. "
           "The broker list string in the form HOST1:PORT1,HOST2:PORT2.", "broker-list"),
    Option("bootstrap-server", "REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect "
           "to.", "server to connect to"),
    Option("topic", "REQUIRED: The topic to consume from.", "topic"),
    Option("group", "The group id to consume on.", "gid", default="perf-consumer-" + str(random.randrange(100000))),
    Option("fetch-size", "The amount of data to fetch in a single request.", "size", "Integer", default="1048576"),
    Option("from-latest", "If the consumer does not already have an established offset to consume from, start "
           "with the latest message present in the log rather than the earliest message."),
    Option("socket-buffer-size", "The size of the tcp RECV size.", "size", "Integer", default="2097152"),
    Option("threads", "Number of processing threads.", "count", "Integer", default="10"),
    Option("num-fetch-threads", "Number of fetcher threads.", "count", "Integer", default="1"),
    Option("consumer.config", "Consumer config properties file.", "config file"),
    Option("print-metrics", "Print out the metrics."),
    Option("timeout", "The maximum allowed time in milliseconds between returned records.", "milliseconds",
           "Long", default="10000"),
)

_PATTERN_LETTERS = re.compile(r"''|'(?:[^']|'')*'|([A-Za-z])\1*")


def simple_date_format(pattern: str, millis: int) -> str:
    """java.text.SimpleDateFormat.format for the letters the tools use (y M d H h m s S a E)."""
    moment = datetime.fromtimestamp(millis / 1000.0)
    ms = millis % 1000

    def field(match: re.Match) -> str:
        text = match.group(0)
        if text == "''":
            return "'"
        if text.startswith("'"):
            return text[1:-1].replace("''", "'")
        letter, n = text[0], len(text)
        if letter == "y":
            return f"{moment.year % 100:02d}" if n == 2 else f"{moment.year:0{n}d}"
        if letter == "M":
            return moment.strftime("%B") if n >= 4 else moment.strftime("%b") if n == 3 else f"{moment.month:0{n}d}"
        values = {"d": moment.day, "H": moment.hour, "h": moment.hour % 12 or 12, "m": moment.minute,
                  "s": moment.second, "S": ms}
        if letter in values:
            return f"{values[letter]:0{n}d}"
        if letter == "a":
            return "AM" if moment.hour < 12 else "PM"
        if letter == "E":
            return moment.strftime("%A") if n >= 4 else moment.strftime("%a")
        raise JavaError("java.lang.IllegalArgumentException", f"Illegal pattern character '{letter}'")
    return _PATTERN_LETTERS.sub(field, pattern)


def java_double(value: float) -> str:
    """%.4f, with Java's Infinity and NaN."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:.4f}"


def _div(a: float, b: float) -> float:
    if b == 0:
        return float("nan") if a == 0 else float("inf") * (1 if a > 0 else -1)
    return a / b


class Run:
    """What ConsumerPerformance.consume counts."""

    def __init__(self, opts: joptions.ParsedArgs, out: TextIO) -> None:
        self.out = out
        self.date_format = opts.value("date-format") or ""
        self.reporting_interval = opts.number("reporting-interval") or 0
        self.show_detailed = opts.has("show-detailed-stats")
        self.join_time_ms = 0
        self.join_round_ms = 0
        self.join_start = 0
        self.messages = self.bytes = 0

    def on_partitions_revoked(self, revoked) -> None:
        self.join_start = int(time.time() * 1000)

    def on_partitions_assigned(self, assigned) -> None:
        took = int(time.time() * 1000) - self.join_start
        self.join_time_ms += took
        self.join_round_ms += took

    def on_partitions_lost(self, lost) -> None:
        self.on_partitions_revoked(lost)

    def consume(self, consumer: KafkaConsumer, topic: str, count: int, timeout_ms: int) -> None:
        self.join_start = int(time.time() * 1000)
        consumer.subscribe([topic], listener=self)
        now = last_report = last_consumed = int(time.time() * 1000)
        last_bytes = last_messages = 0
        while self.messages < count and now - last_consumed <= timeout_ms:
            records = consumer.poll(0.1)
            now = int(time.time() * 1000)
            if records:
                last_consumed = now
            for record in records:
                self.messages += 1
                if record.key is not None:
                    self.bytes += len(record.key)
                if record.value is not None:
                    self.bytes += len(record.value)
                if now - last_report >= self.reporting_interval:
                    if self.show_detailed:
                        self.print_progress(last_bytes, last_messages, last_report, now)
                    self.join_round_ms = 0
                    last_report, last_messages, last_bytes = now, self.messages, self.bytes
        if self.messages < count:
            self.out.write(f"WARNING: Exiting before consuming the expected number of messages: timeout "
                           f"({timeout_ms} ms) exceeded. You can use the --timeout option to increase the timeout.\n")

    def print_progress(self, last_bytes: int, last_messages: int, start_ms: int, end_ms: int) -> None:
        elapsed = float(end_ms - start_ms)
        total_mb = self.bytes / (1024 * 1024)
        interval_mb = (self.bytes - last_bytes) / (1024 * 1024)
        basic = (f"{simple_date_format(self.date_format, end_ms)}, 0, {java_double(total_mb)}, "
                 f"{java_double(_div(1000.0 * interval_mb, elapsed))}, {self.messages}, "
                 f"{java_double(_div(self.messages - last_messages, elapsed) * 1000.0)}")
        fetch_ms = end_ms - start_ms - self.join_round_ms
        if fetch_ms <= 0:
            mb_sec = msg_sec = 0.0
        else:
            mb_sec, msg_sec = 1000.0 * interval_mb / fetch_ms, 1000.0 * (self.messages - last_messages) / fetch_ms
        self.out.write(f"{basic}, {self.join_round_ms}, {fetch_ms}, {java_double(mb_sec)}, {java_double(msg_sec)}\n")
        self.out.flush()


def consumer_config(opts: joptions.ParsedArgs) -> dict[str, str]:
    config = load_properties(opts.value("consumer.config")) if opts.has("consumer.config") else {}
    servers = opts.value("bootstrap-server") if opts.has("bootstrap-server") else opts.value("broker-list")
    if servers is None:
        raise JavaError("org.apache.kafka.common.config.ConfigException",
                        'Missing required configuration "bootstrap.servers" which has no default value.')
    config.update({
        "bootstrap.servers": servers,
        "group.id": opts.value("group") or "",
        "receive.buffer.bytes": str(opts.number("socket-buffer-size")),
        "max.partition.fetch.bytes": str(opts.number("fetch-size")),
        "auto.offset.reset": "latest" if opts.has("from-latest") else "earliest",
        "key.deserializer": BYTES_DESERIALIZER,
        "value.deserializer": BYTES_DESERIALIZER,
        "check.crcs": "false",
    })
    config.setdefault("client.id", "perf-consumer-client")
    return config


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, HELP_MESSAGE, ("topic", "messages"))
        for name in ("messages", "reporting-interval", "timeout", "fetch-size", "socket-buffer-size"):
            opts.number(name)   # valueOf: jopt's conversion error escapes main
        config = consumer_config(opts)
        run = Run(opts, out)
        simple_date_format(run.date_format, 0)      # an illegal pattern fails before anything runs
        if not opts.has("hide-header"):
            fields = "time, threadId" if run.show_detailed else "start.time, end.time"
            out.write(f"{fields}, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec{HEADER_TAIL}\n")
        consumer = KafkaConsumer(config)
        start_ms = int(time.time() * 1000)
        metrics = None
        try:
            run.consume(consumer, opts.value("topic") or "", opts.number("messages") or 0, opts.number("timeout") or 0)
            end_ms = int(time.time() * 1000)
            if opts.has("print-metrics"):
                metrics = by_name(consumer.metrics())    # read before close, as Java's
        finally:
            consumer.close()
        elapsed_s = (end_ms - start_ms) / 1000.0
        fetch_ms = end_ms - start_ms - run.join_time_ms
        if not run.show_detailed:
            mb = run.bytes / (1024 * 1024)
            out.write(", ".join([
                simple_date_format(run.date_format, start_ms), simple_date_format(run.date_format, end_ms),
                java_double(mb), java_double(_div(mb, elapsed_s)), str(run.messages),
                java_double(_div(run.messages, elapsed_s)), str(run.join_time_ms), str(fetch_ms),
                java_double(_div(mb, fetch_ms / 1000.0)), java_double(_div(run.messages, fetch_ms / 1000.0))]) + "\n")
        if metrics is not None:
            print_metrics(metrics, out)
        return 0
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
