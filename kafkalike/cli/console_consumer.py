"""kafka-console-consumer: print records of a topic to stdout, as Kafka 2.8's ConsoleConsumer does.

Output follows Kafka's DefaultMessageFormatter: optional "CreateTime:<ms>", "Partition:<n>",
"Offset:<n>" and headers columns, then the key and the value, separated by key.separator
(a tab) and ended by line.separator; null prints as "null". At exit stderr gets
"Processed a total of N messages".

As in Kafka, --partition reads that one partition in assign mode; otherwise the tool
joins a consumer group (--group, or a generated console-consumer-NNNNN whose offsets are
not committed, since nobody will use them again) for --topic or the --whitelist regex.
"""
from __future__ import annotations

import argparse
import random
import re
import signal
import sys
import time
from typing import Sequence, TextIO

from kafkalike.client.consumer import KafkaConsumer, TopicPartition
from kafkalike.client.errors import KafkaError, WakeupError



def _error_line(trace: str) -> str:
    """Kafka's tools-log4j layout, "[%d] %p %m (%c)%n", then the exception line."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
    return (f"[{stamp}] ERROR Error processing message, terminating consumer process:  "
            f"(kafka.tools.ConsoleConsumer$)\n{trace}\n")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-console-consumer.sh", allow_abbrev=False,
                                description="This tool helps to read data from Kafka topics and outputs it to "
                                            "standard output.")
    p.add_argument("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
    p.add_argument("--topic", help="The topic id to consume on.")
    p.add_argument("--whitelist", help="Regular expression specifying whitelist of topics to include for "
                                       "consumption.")
    p.add_argument("--group", help="The consumer group id of the consumer.")
    p.add_argument("--from-beginning", action="store_true",
                   help="If the consumer does not already have an established offset to consume from, start with "
                        "the earliest message present in the log rather than the latest message.")
    p.add_argument("--partition", type=int, help="The partition to consume from.")
    p.add_argument("--offset", default="latest",
                   help="The offset id to consume from (a non-negative number), or 'earliest' or 'latest'.")
    p.add_argument("--max-messages", type=int, help="The maximum number of messages to consume before exiting.")
    p.add_argument("--timeout-ms", type=int, help="If specified, exit if no message is available for "
                                                  "consumption for the specified interval.")
    p.add_argument("--property", action="append", default=[], help="The properties to initialize the message "
                                                                   "formatter.")
    p.add_argument("--consumer-property", action="append", default=[],
                   help="A mechanism to pass user-defined properties in the form key=value to the consumer.")
    p.add_argument("--consumer.config", dest="consumer_config", help="Consumer config properties file.")
    p.add_argument("--isolation-level", default="read_uncommitted",
                   help="Set to read_committed in order to filter out transactional messages which are not "
                        "committed.")
    p.add_argument("--skip-message-on-error", action="store_true")
    return p


def _key_values(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"Invalid key=value: {item}")
        out[key.strip()] = value
    return out


def _properties_file(path: str) -> dict[str, str]:
    """A Java .properties file's key=value (or key: value) lines; # and ! start comments."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
            if match:
                out[match.group(1)] = match.group(2)
            else:
                out[line] = ""
    return out


def _unescape(text: str) -> str:
    return text.encode("utf-8").decode("unicode_escape")


class MessageFormatter:
    """Kafka's DefaultMessageFormatter with its print.* and *.separator properties."""

    def __init__(self, props: dict[str, str]) -> None:
        flag = lambda name, default="false": props.get(name, default).strip().lower() == "true"  # noqa: E731
        self.timestamp = flag("print.timestamp")
        self.key = flag("print.key")
        self.value = flag("print.value", "true")
        self.partition = flag("print.partition")
        self.offset = flag("print.offset")
        self.headers = flag("print.headers")
        self.key_separator = _unescape(props.get("key.separator", "\t"))
        self.line_separator = _unescape(props.get("line.separator", "\n"))
        self.headers_separator = _unescape(props.get("headers.separator", ","))
        self.null_literal = props.get("null.literal", "null")

    def _text(self, data: bytes | None) -> str:
        return self.null_literal if data is None else data.decode("utf-8", errors="replace")

    def format(self, record) -> str:
        columns = []
        if self.timestamp:
            names = {0: "CreateTime", 1: "LogAppendTime"}
            columns.append(f"{names[record.timestamp_type]}:{record.timestamp}"
                           if record.timestamp_type in names else "NO_TIMESTAMP")
        if self.partition:
            columns.append(f"Partition:{record.partition}")
        if self.offset:
            columns.append(f"Offset:{record.offset}")
        if self.headers:
            columns.append(self.headers_separator.join(f"{k}:{self._text(v)}" for k, v in record.headers)
                           if record.headers else "NO_HEADERS")
        if self.key:
            columns.append(self._text(record.key))
        if self.value:
            columns.append(self._text(record.value))
        if not columns:
            return ""
        return self.key_separator.join(columns) + self.line_separator


def run(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    args = build_parser().parse_args(argv)
    if bool(args.topic) == bool(args.whitelist):
        err.write("Exactly one of whitelist/topic is required.\n")
        return 1
    if args.offset != "latest" and args.partition is None:
        err.write("The partition is required when offset is specified.\n")
        return 1
    if args.from_beginning and args.offset != "latest":
        err.write("Options from-beginning and offset cannot be specified together.\n")
        return 1
    try:
        props = _key_values(args.property)
        config = _properties_file(args.consumer_config) if args.consumer_config else {}
        config.update(_key_values(args.consumer_property))
    except (OSError, ValueError) as error:
        err.write(f"{error}\n")
        return 1
    config["bootstrap.servers"] = args.bootstrap_server
    if args.group:
        config["group.id"] = args.group
    elif "group.id" not in config and args.partition is None:
        config["group.id"] = f"console-consumer-{random.randrange(100000)}"
        config.setdefault("enable.auto.commit", "false")
    config.setdefault("auto.offset.reset", "earliest" if args.from_beginning else "latest")
    config["isolation.level"] = args.isolation_level
    formatter = MessageFormatter(props)
    consumer = KafkaConsumer(config)
    count = 0
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: consumer.wakeup())
    try:
        partitions = []
        if args.partition is not None:
            partitions = [TopicPartition(args.topic, args.partition)]
            consumer.assign(partitions)
        elif args.whitelist:
            consumer.subscribe(re.compile(args.whitelist))
        else:
            consumer.subscribe([args.topic])
        if partitions and args.offset == "earliest":
            consumer.seek_to_beginning(partitions)
        elif partitions and args.offset == "latest":
            if not args.from_beginning:
                consumer.seek_to_end(partitions)
        elif partitions:
            try:
                offset = int(args.offset)
                if offset < 0:
                    raise ValueError
            except ValueError:
                err.write(f"The provided offset value '{args.offset}' is incorrect. Valid values are 'earliest', "
                          "'latest', or a non-negative long.\n")
                return 1
            consumer.seek(partitions[0], offset)
        timeout = None if args.timeout_ms is None else args.timeout_ms / 1000
        last = time.monotonic()
        while args.max_messages is None or count < args.max_messages:
            limit = None if args.max_messages is None else args.max_messages - count
            records = consumer.poll(0.2 if timeout is None else min(0.2, timeout), max_records=limit)
            if records:
                last = time.monotonic()
            elif timeout is not None and time.monotonic() - last >= timeout:
                err.write(_error_line("org.apache.kafka.common.errors.TimeoutException"))
                break
            for record in records:
                out.write(formatter.format(record))
                count += 1
            out.flush()
    except (KeyboardInterrupt, WakeupError):
        pass
    except KafkaError as error:
        err.write(_error_line(f"{error.java_class}: {error}"))
    finally:
        signal.signal(signal.SIGTERM, previous)
        consumer.close()
        err.write(f"Processed a total of {count} messages\n")
        err.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    sys.stdout.reconfigure(errors="replace")
    return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
