"""kafka-replica-verification: Kafka 2.8's ReplicaVerificationTool, which checks that every
replica of the chosen topics holds the same data.

It reads every replica directly: one fetcher per broker, each a Fetch with the debugging
replica id -2 that a broker serves from followers too (Fetch v11+), starting at --time
(-1: the log end, -2: the log start, or a timestamp). Each round every fetcher fetches
once; then the batches of each partition's replicas are compared in lockstep up to each
replica's high watermark: the same last offset, else it prints the mismatch and exits 1;
the same checksum, else it prints the mismatch and goes on. Every --report-interval-ms it
prints the largest lag behind the high watermark (`max lag is N for partition T-P at
offset O among K partitions`). It runs until stopped. Like Kafka's, it needs every broker
up at the start and does not handle offsets out of range.
"""
from __future__ import annotations

import concurrent.futures
import datetime
import logging
import re
import sys
import time
from typing import Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import JavaError, Option, UsageError, options_table, tools_logging, valid_host_ports
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.admin import AdminClient
from kafkalike.client.connection import BrokerConnection
from kafkalike.client.consumer import KafkaConsumer
from kafkalike.client.metadata import TopicPartition
from kafkalike.common.topics import include_list_regex
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.records.header import LOG_OVERHEAD, read_header

log = logging.getLogger("kafkalike.cli.replica_verification")
JAVA_LOGGERS = {"kafkalike.cli.replica_verification": "kafka.tools.ReplicaVerificationTool$"}
DEBUGGING_CONSUMER_ID = -2
CLIENT_ID = "replicaVerificationTool"
USAGE = "Validate that all replicas for a set of topics have the same data."
OPTIONS = options_table(
    Option("broker-list", "REQUIRED: The list of hostname and port of the server to connect to.",
           "hostname:port,...,hostname:port"),
    Option("fetch-size", "The fetch size of each request.", "bytes", type_name="Integer", default="1048576"),
    Option("max-wait-ms", "The max amount of time each fetch request waits.", "ms", type_name="Integer",
           default="1000"),
    Option("topic-white-list", "White list of topics to verify replica consistency. Defaults to all topics.",
           "Java regex (String)", default=".*"),
    Option("time", "Timestamp for getting the initial offsets.", "timestamp/-1(latest)/-2(earliest)",
           type_name="Long", default="-1"),
    Option("report-interval-ms", "The reporting interval.", "ms", type_name="Long", default="30000"),
    Option("help", "Print usage information."),
    Option("version", "Print version information and exit."),
)


def now_text() -> str:
    """The tool's timestamps: yyyy-MM-dd HH:mm:ss,SSS in local time."""
    now = datetime.datetime.now()
    return now.strftime("%Y-%m-%d %H:%M:%S,") + f"{now.microsecond // 1000:03d}"


def whole_batches(records) -> list[tuple[int, int, int]]:
    """(last offset, next offset, checksum) of each whole v2 batch; a fetch may end mid-batch."""
    out = []
    buf = memoryview(bytes(records or b""))
    pos = 0
    while len(buf) - pos > LOG_OVERHEAD:
        header = read_header(buf, pos)
        if pos + header.size > len(buf):
            break
        out.append((header.last_offset, header.next_offset, header.crc))
        pos += header.size
    return out


class Verifier:
    """ReplicaBuffer: where each partition is verified up to, and the round's answers."""

    def __init__(self, replicas: dict[TopicPartition, list[int]], offsets: dict[TopicPartition, int],
                 report_interval_s: float, out: TextIO) -> None:
        self.replicas = replicas
        self.offsets = dict(offsets)
        self.report_interval_s = report_interval_s
        self.out = out
        self.last_report = time.monotonic()

    def verify(self, answers: dict[TopicPartition, dict[int, object]]) -> bool:
        """Compare one round's answers; False when replicas disagree on an offset (exit 1)."""
        max_lag, lag_tp, lag_offset = -1, None, -1
        for tp, expected in self.replicas.items():
            fetched = answers.get(tp, {})
            if len(fetched) != len(expected):
                raise JavaError("java.lang.AssertionError", f"assertion failed: fetched {len(fetched)} replicas "
                                f"for {tp.topic}-{tp.partition}, but expected {len(expected)} replicas")
            batches = {r: whole_batches(a.record_set) for r, a in fetched.items()}
            high = {r: a.high_watermark for r, a in fetched.items()}
            index = 0
            while True:
                first = None
                in_all = True
                for replica in expected:
                    mine = batches[replica]
                    if index >= len(mine) or mine[index][0] >= high[replica]:
                        in_all = False     # only verify up to the high watermark
                        break
                    last, following, checksum = mine[index]
                    if first is None:
                        first = (replica, last, following, checksum)
                    elif first[1] != last:
                        self.out.write(f"{now_text()}: partition {tp.topic}-{tp.partition}: replica {first[0]}'s "
                                       f"offset {first[1]} doesn't match replica {replica}'s offset {last}\n")
                        self.out.flush()
                        return False
                    elif first[3] != checksum:
                        self.out.write(f"{now_text()}: partition {tp.topic}-{tp.partition} has unmatched checksum "
                                       f"at offset {last}; replica {first[0]}'s checksum {first[3]}; replica "
                                       f"{replica}'s checksum {checksum}\n")
                if not in_all or first is None:
                    break
                self.offsets[tp] = first[2]
                index += 1
            lag = max(high.values()) - self.offsets[tp]
            if lag > max_lag:
                max_lag, lag_tp, lag_offset = lag, tp, self.offsets[tp]
        if time.monotonic() - self.last_report > self.report_interval_s:
            name = "null" if lag_tp is None else f"{lag_tp.topic}-{lag_tp.partition}"
            self.out.write(f"{now_text()}: max lag is {max_lag} for partition {name} at offset {lag_offset} "
                           f"among {len(self.replicas)} partitions\n")
            self.out.flush()
            self.last_report = time.monotonic()
        return True


def fetch_round(connection: BrokerConnection, partitions: list[TopicPartition], offsets: dict[TopicPartition, int],
                fetch_size: int, max_wait_ms: int) -> dict[TopicPartition, object]:
    by_topic: dict[str, list] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(FetchRequest.FetchPartition(
            partition=tp.partition, fetch_offset=offsets[tp], partition_max_bytes=fetch_size))
    response = connection.send(FetchRequest(
        replica_id=DEBUGGING_CONSUMER_ID, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=(1 << 31) - 1,
        isolation_level=0, topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return {TopicPartition(t.topic, p.partition): p for t in response.responses for p in t.partition_responses}


def initial_offsets(bootstrap: str, partitions: list[TopicPartition], time_value: int) -> dict[TopicPartition, int]:
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "ReplicaVerification"})
    try:
        if time_value == -1:
            return consumer.end_offsets(partitions)
        if time_value == -2:
            return consumer.beginning_offsets(partitions)
        found = consumer.offsets_for_times({tp: time_value for tp in partitions})
        return {tp: hit[0] for tp, hit in found.items() if hit is not None}
    finally:
        consumer.close()


def verify_replicas(opts, out: TextIO) -> int:
    regex = include_list_regex(opts.value("topic-white-list") or "")
    try:
        pattern = re.compile(regex)
    except re.error:
        raise JavaError("java.lang.RuntimeException", f"{regex} is an invalid regex.") from None
    fetch_size, max_wait = opts.number("fetch-size"), opts.number("max-wait-ms")
    time_value, report_s = opts.number("time"), opts.number("report-interval-ms") / 1000
    bootstrap = opts.value("broker-list")
    if not valid_host_ports(bootstrap):
        raise UsageError("Please provide valid host:port like host1:9091,host2:9092\n ")
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        names = [t.name for t in admin.list_topics(include_internal=True)]
        described = admin.describe_topics(names) if names else {}
        brokers = {b.id: b for b in admin.describe_cluster().brokers}
    topics = [d for name, d in sorted(described.items()) if pattern.fullmatch(name)]
    if not topics:
        log.error("No topics found. [topic-white-list] if specified, is either filtering out all topics or there "
                  "is no topic.")
        return 1
    replicas = {TopicPartition(t.name, p.partition): list(p.replicas) for t in topics for p in t.partitions}
    per_broker: dict[int, list[TopicPartition]] = {}
    for tp, ids in replicas.items():
        for broker in ids:
            per_broker.setdefault(broker, []).append(tp)
    verifier = Verifier(replicas, initial_offsets(bootstrap, list(replicas), time_value), report_s, out)
    connections = {b: BrokerConnection(brokers[b].host, brokers[b].port, client_id=CLIENT_ID) for b in per_broker}
    for connection in connections.values():
        connection.connect()
    out.write(f"{now_text()}: verification process is started.\n")
    out.flush()
    try:
        with concurrent.futures.ThreadPoolExecutor(len(connections)) as pool:
            while True:   # every fetcher fetches once, then the round is verified (2.8's two barriers)
                futures = {b: pool.submit(fetch_round, connections[b], per_broker[b], verifier.offsets, fetch_size,
                                          max_wait) for b in per_broker}
                answers: dict[TopicPartition, dict[int, object]] = {}
                for broker, future in futures.items():
                    for tp, answer in future.result().items():
                        answers.setdefault(tp, {})[broker] = answer
                if not verifier.verify(answers):
                    return 1
    finally:
        for connection in connections.values():
            connection.close()


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse_plain(OPTIONS, args)
        if not args or opts.has("help"):
            raise UsageError(USAGE)
        if opts.has("version"):
            raise command_default.VersionRequested()
        command_default.check_required(opts, ("broker-list",))
        with tools_logging(err, JAVA_LOGGERS):
            try:
                return verify_replicas(opts, out)
            except KeyboardInterrupt:
                return 130
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
