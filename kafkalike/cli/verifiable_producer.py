"""kafka-verifiable-producer: increasing integers to a topic, one JSON line per outcome.

System tests read its stdout to learn exactly which records were acknowledged and where
(Kafka 2.8's VerifiableProducer): startup_complete, one producer_send_success (key,
value, topic, partition, offset) or producer_send_error (exception, message) per record,
shutdown_complete once the producer is closed and a tool_data summary last. Like the Java
tool it sends without retries, and stops cleanly on SIGTERM or Ctrl-C.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import Any, Sequence, TextIO

from kafkalike.properties import load as load_properties
from kafkalike.client.producer import KafkaProducer
from kafkalike.cli.argparse4j import INTEGER, LONG, ArgumentParser
from kafkalike.cli.tool_main import JsonEvents, run_tool

STRING_SERIALIZER = "org.apache.kafka.common.serialization.StringSerializer"


def _java_exception(error: BaseException) -> tuple[str, str | None]:
    """(`class a.b.C`, message) as Java's exception.getClass().toString() and getMessage()."""
    name = getattr(error, "java_class", None) or f"{type(error).__module__}.{type(error).__qualname__}"
    return f"class {name}", (str(error) or None)


class VerifiableProducer:
    """Sends 0, 1, 2, ... (optionally `prefix.` + n) and prints what became of each."""

    def __init__(self, producer: Any, topic: str, out: TextIO, *, max_messages: int = -1, throughput: int = -1,
                 value_prefix: int | None = None, create_time: int | None = None,
                 repeating_keys: int | None = None) -> None:
        self.producer, self.topic, self.out = producer, topic, out
        self.max_messages, self.throughput = max_messages, throughput
        self.value_prefix, self.create_time, self.repeating_keys = value_prefix, create_time, repeating_keys
        self.num_sent = self.num_acked = 0
        self.stop = threading.Event()
        self._key_counter = 0
        self.print_json = JsonEvents(out)
        self._start_ms = int(time.time() * 1000)


    def value(self, n: int) -> str:
        return f"{self.value_prefix}.{n}" if self.value_prefix is not None else str(n)

    def key(self) -> str | None:
        if self.repeating_keys is None:
            return None
        key = str(self._key_counter)
        self._key_counter += 1
        if self._key_counter == self.repeating_keys:
            self._key_counter = 0
        return key

    def send(self, key: str | None, value: str) -> None:
        timestamp = None
        if self.create_time is not None:
            timestamp = self.create_time
            # The Java tool moves the create time on by the time elapsed since it started.
            self.create_time += int(time.time() * 1000) - self._start_ms
        self.num_sent += 1

        def on_completion(metadata, error) -> None:
            if error is None:
                self.num_acked += 1
                self.print_json("producer_send_success", key=key, value=value, topic=metadata.topic,
                                partition=metadata.partition, offset=metadata.offset)
            else:
                self._print_error(key, value, error)
        try:
            self.producer.send(self.topic, value, key=key, timestamp=timestamp, callback=on_completion)
        except Exception as error:
            self._print_error(key, value, error)

    def _print_error(self, key: str | None, value: str, error: BaseException) -> None:
        exception, message = _java_exception(error)
        self.print_json("producer_send_error", key=key, value=value, topic=self.topic,
                        exception=exception, message=message)

    def run(self) -> None:
        self.print_json("startup_complete")
        limit = self.max_messages if self.max_messages >= 0 else float("inf")
        start = time.monotonic()
        i = 0
        while i < limit and not self.stop.is_set():
            self.send(self.key(), self.value(i))
            i += 1
            if self.throughput > 0:
                ahead = i / self.throughput - (time.monotonic() - start)
                if ahead > 0:
                    self.stop.wait(ahead)
            elif self.throughput == 0:
                self.stop.wait()      # a target of 0 messages/s: wait to be stopped

    def close(self, start_ms: int) -> None:
        self.producer.close()
        self.print_json("shutdown_complete")
        elapsed = max(1, int(time.time() * 1000) - start_ms)
        self.print_json("tool_data", sent=self.num_sent, acked=self.num_acked,
                        target_throughput=self.throughput, avg_throughput=1000 * self.num_acked / elapsed)


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="verifiable-producer",
        description="This tool produces increasing integers to the specified topic and prints JSON metadata to "
                    "stdout on each \"send\" request, making externally visible which messages have been acked "
                    "and which have not.")
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="Produce messages to this topic.")
    group = parser.add_argument_group("Connection Group", "Group of arguments for connection to brokers")
    connection = group.add_mutually_exclusive_group(required=True)
    connection.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="The server(s) to connect to.")
    connection.add_argument("--broker-list", dest="broker_list", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server "
                                 "is specified.")
    parser.add_argument("--max-messages", dest="max_messages", type=INTEGER, default=-1, metavar="MAX-MESSAGES",
                        help="Produce this many messages. If -1, produce until the process is killed.")
    parser.add_argument("--throughput", type=INTEGER, default=-1, metavar="THROUGHPUT",
                        help="If set >= 0, throttle to *approximately* THROUGHPUT messages/sec.")
    parser.add_argument("--acks", type=INTEGER, default=-1, choices=(0, 1, -1), metavar="ACKS",
                        help="Acks required on each produced message.")
    parser.add_argument("--producer.config", dest="producer_config", metavar="CONFIG_FILE",
                        help="Producer config properties file.")
    parser.add_argument("--message-create-time", dest="create_time", type=LONG, default=-1, metavar="CREATETIME",
                        help="Send messages with creation time starting at the arguments value, in "
                             "milliseconds since epoch")
    parser.add_argument("--value-prefix", dest="value_prefix", type=INTEGER, metavar="VALUE-PREFIX",
                        help="If specified, each produced value will have this prefix with a dot separator")
    parser.add_argument("--repeating-keys", dest="repeating_keys", type=INTEGER, metavar="REPEATING-KEYS",
                        help="If specified, each produced record will have a key starting at 0 increment by 1 "
                             "up to the number specified (exclusive), then the key is set to 0 again")
    return parser


def producer_config(args: argparse.Namespace) -> dict[str, str]:
    config = {
        "bootstrap.servers": args.bootstrap_server or args.broker_list,
        "key.serializer": STRING_SERIALIZER,
        "value.serializer": STRING_SERIALIZER,
        "acks": str(args.acks),
        "retries": "0",
    }
    if args.producer_config:
        config.update(load_properties(args.producer_config))
    return config


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = _parser()
    args_list = sys.argv[1:] if argv is None else list(argv)
    if not args_list:
        parser.print_help(out)
        return 0
    args = parser.parse_args(args_list)
    producer = KafkaProducer(producer_config(args))
    tool = VerifiableProducer(producer, args.topic, out, max_messages=args.max_messages,
                              throughput=args.throughput, value_prefix=args.value_prefix,
                              create_time=None if args.create_time == -1 else args.create_time,
                              repeating_keys=args.repeating_keys)
    start_ms = int(time.time() * 1000)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: tool.stop.set())
    try:
        tool.run()
    finally:
        tool.close(start_ms)
    return 0


if __name__ == "__main__":
    run_tool(main)
