"""kafka-console-consumer: print records of a topic to stdout, as Kafka 2.8's ConsoleConsumer does.

The command line is jopt-simple's (kafkalike.cli.joptions: unique abbreviations,
`--name=value`, usage errors as the message then the option table on stderr, exit 1),
checked in ConsumerConfig's order: parse errors, --help/--version, the formatter and
its deserializers, exactly one of --topic/--whitelist, the partition/offset rules, the
offset value, --bootstrap-server, then the group ids given in different places.

Output follows Kafka's DefaultMessageFormatter, byte for byte: optional
"CreateTime:<ms>", "Partition:<n>", "Offset:<n>" and headers columns, then the key and
the value, separated by key.separator and ended by line.separator. The properties are
used verbatim (as Kafka does: "\\t" on the command line is a backslash and a t), and
keys and values are written as their raw bytes unless a deserializer is named; a null
key or value prints null.literal. At exit stderr gets "Processed a total of N
messages".

As in Kafka, --partition reads that one partition in assign mode; otherwise the tool
joins a consumer group (--group, or a generated console-consumer-NNNNN whose offsets are
not committed, since nobody will use them again) for --topic or the --whitelist regex.
A failure while setting the consumer up is logged as Kafka's "Unknown error when
running consumer" line with the Java exception, exit 1; a closed stdout (`| head -1`)
ends the tool quietly; SIGINT/SIGTERM end it with status 130/143.
"""
from __future__ import annotations

import logging
import os
import random
import re
import signal
import socket
import sys
import time
from typing import BinaryIO, Callable, Sequence, TextIO

from kafkalike.cli import joptions
from kafkalike.cli.joptions import (KAFKA_COMMIT_ID, KAFKA_VERSION, JavaError, Option, UsageError, parse_key_values,
                                     tools_error_line)
from kafkalike.client.config import consumer_config
from kafkalike.client.consumer import KafkaConsumer, TopicPartition
from kafkalike.client.deserializers import is_passthrough, resolve_deserializer
from kafkalike.client.connection import parse_bootstrap_servers
from kafkalike.client.errors import ConfigError, KafkaError, WakeupError, java_view
from kafkalike.properties import load as load_properties

TOOL_LOGGER = "kafka.tools.ConsoleConsumer$"
HELP_MESSAGE = "This tool helps to read data from Kafka topics and outputs it to standard output."
DEFAULT_FORMATTER = "kafka.tools.DefaultMessageFormatter"
FORMATTERS = (DEFAULT_FORMATTER, "kafka.tools.LoggingMessageFormatter", "kafka.tools.NoOpMessageFormatter")
JAVA_SERIALIZATION = "org.apache.kafka.common.serialization."
CONSTRUCTION_FAILED = "Failed to construct kafka consumer"

JAVA_LOGGERS = {
    "kafkalike.client.consumer": "org.apache.kafka.clients.consumer.KafkaConsumer",
    "kafkalike.client.coordinator": "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator",
    "kafkalike.client.fetcher": "org.apache.kafka.clients.consumer.internals.Fetcher",
    "kafkalike.client.network": "org.apache.kafka.clients.NetworkClient",
    "kafkalike.client.config": "org.apache.kafka.clients.consumer.ConsumerConfig",
    "kafkalike.client.assignors": "org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor",
    "kafkalike.client.utils": "org.apache.kafka.clients.ClientUtils",
    "kafkalike.cli.console_consumer": TOOL_LOGGER,
}

FORMATTER_PROPERTIES = ("print.timestamp=true|false print.key=true|false print.offset=true|false "
                        "print.partition=true|false print.headers=true|false print.value=true|false "
                        "key.separator=<key.separator> line.separator=<line.separator> "
                        "headers.separator=<line.separator> null.literal=<null.literal> "
                        "key.deserializer=<key.deserializer> value.deserializer=<value.deserializer> "
                        "header.deserializer=<header.deserializer>")

OPTIONS = joptions.options_table(
    Option("topic", "The topic id to consume on.", "topic"),
    Option("whitelist", "Regular expression specifying whitelist of topics to include for consumption.",
           "whitelist"),
    Option("partition", "The partition to consume from. Consumption starts from the end of the partition unless "
           "'--offset' is specified.", "partition", "Integer"),
    Option("offset", "The offset id to consume from (a non-negative number), or 'earliest' which means from "
           "beginning, or 'latest' which means from end", "consume offset", default="latest"),
    Option("consumer-property", "A mechanism to pass user-defined properties in the form key=value to the "
           "consumer.", "consumer_prop"),
    Option("consumer.config", "Consumer config properties file. Note that [consumer-property] takes precedence "
           "over this config.", "config file"),
    Option("formatter", "The name of a class to use for formatting kafka messages for display.", "class",
           default=DEFAULT_FORMATTER),
    Option("property", "The properties to initialize the message formatter. Default properties include: "
           + FORMATTER_PROPERTIES + " Users can also pass in customized properties for their formatter; more "
           "specifically, users can pass in properties keyed with 'key.deserializer.', 'value.deserializer.' and "
           "'headers.deserializer.' prefixes to configure their deserializers.", "prop"),
    Option("from-beginning", "If the consumer does not already have an established offset to consume from, start "
           "with the earliest message present in the log rather than the latest message."),
    Option("max-messages", "The maximum number of messages to consume before exiting. If not set, consumption is "
           "continual.", "num_messages", "Integer"),
    Option("timeout-ms", "If specified, exit if no message is available for consumption for the specified "
           "interval.", "timeout_ms", "Integer"),
    Option("skip-message-on-error", "If there is an error when processing a message, skip it instead of halt."),
    Option("bootstrap-server", "REQUIRED: The server(s) to connect to.", "server to connect to"),
    Option("key-deserializer", "", "deserializer for key"),
    Option("value-deserializer", "", "deserializer for values"),
    Option("enable-systest-events", "Log lifecycle events of the consumer in addition to logging consumed "
           "messages. (This is specific for system tests.)"),
    Option("isolation-level", "Set to read_committed in order to filter out transactional messages which are not "
           "committed. Set to read_uncommitted to read all messages.", "", default="read_uncommitted"),
    Option("group", "The consumer group id of the consumer.", "consumer group id"),
    Option("help", "Print usage information."),
    Option("version", "Display Kafka version."),
)


# Where Kafka throws what it does not catch while ConsumerConfig is built (the JVM prints it, exit 1).
CONFIG_INIT = "kafka.tools.ConsoleConsumer$ConsumerConfig.<init>(ConsoleConsumer.scala)"


def _arg_bytes(text: str) -> bytes:
    """A command-line (or properties) string as the bytes it was typed as."""
    return text.encode("utf-8", "surrogateescape")


def _deserializer(name: str | None, props: dict[str, str], is_key: bool) -> Callable | None:
    """Class.forName(...) of a formatter's key/value/headers deserializer; None for "print the raw bytes"."""
    if name is None:
        return None
    if not name.startswith(JAVA_SERIALIZATION):
        raise JavaError("java.lang.ClassNotFoundException", name)
    try:
        fn = resolve_deserializer(name, props, is_key)
    except KafkaError:
        raise JavaError("java.lang.ClassNotFoundException", name) from None
    return None if is_passthrough(fn) else fn


class MessageFormatter:
    """Kafka's DefaultMessageFormatter: its print.* and *.separator properties, written as bytes."""

    def __init__(self, props: dict[str, str], writes: bool = True) -> None:
        flag = lambda name, default: props[name].strip().lower() == "true" if name in props else default  # noqa
        self.writes = writes
        self.timestamp = flag("print.timestamp", False)
        self.key = flag("print.key", False)
        self.value = flag("print.value", True)
        self.partition = flag("print.partition", False)
        self.offset = flag("print.offset", False)
        self.headers = flag("print.headers", False)
        raw = lambda name, default: _arg_bytes(props[name]) if name in props else default  # noqa: E731
        self.key_separator = raw("key.separator", b"\t")
        self.line_separator = raw("line.separator", b"\n")
        self.headers_separator = raw("headers.separator", b",")
        self.null_literal = raw("null.literal", b"null")
        self.key_deserializer = _deserializer(props.get("key.deserializer"), props, True)
        self.value_deserializer = _deserializer(props.get("value.deserializer"), props, False)
        self.headers_deserializer = _deserializer(props.get("headers.deserializer"), props, False)

    def _bytes(self, deserializer: Callable | None, data: bytes | None, topic: str) -> bytes:
        data = self.null_literal if data is None else data   # Kafka deserializes null.literal for a null
        if deserializer is None:
            return data
        value = deserializer(topic, data)
        return ("null" if value is None else str(value)).encode("utf-8")

    def format(self, record) -> bytes:
        if not self.writes:
            return b""
        columns = []
        if self.timestamp:
            names = {0: "CreateTime", 1: "LogAppendTime"}
            columns.append(f"{names[record.timestamp_type]}:{record.timestamp}".encode()
                           if record.timestamp_type in names else b"NO_TIMESTAMP")
        if self.partition:
            columns.append(f"Partition:{record.partition}".encode())
        if self.offset:
            columns.append(f"Offset:{record.offset}".encode())
        if self.headers:
            columns.append(self.headers_separator.join(
                k.encode("utf-8") + b":" + self._bytes(self.headers_deserializer, v, record.topic)
                for k, v in record.headers) if record.headers else b"NO_HEADERS")
        if self.key:
            columns.append(self._bytes(self.key_deserializer, record.key, record.topic))
        if self.value:
            columns.append(self._bytes(self.value_deserializer, record.value, record.topic))
        if not columns:
            return b""
        return self.key_separator.join(columns) + self.line_separator


# -- ConsumerConfig: the options, checked in Kafka's order -----------------------------------------


class ConsumerOptions:
    def __init__(self, argv: Sequence[str]) -> None:
        args = self.args = joptions.parse_args(OPTIONS, argv)
        if not argv or args.has("help"):
            raise UsageError(HELP_MESSAGE)
        if args.has("version"):
            return
        self.extra_props = parse_key_values(args.all("consumer-property"))
        self.file_props: dict[str, str] = {}
        if args.has("consumer.config"):
            path = args.value("consumer.config")
            if not os.path.isfile(path):
                raise JavaError("java.nio.file.NoSuchFileException", path)
            self.file_props = load_properties(path)
        self.from_beginning = args.has("from-beginning")
        self.partition = int(args.value("partition")) if args.has("partition") else None
        formatter_class = args.value("formatter")
        if formatter_class not in FORMATTERS:
            raise JavaError("java.lang.ClassNotFoundException", formatter_class)
        formatter_args = parse_key_values(args.all("property"))
        for option, key in (("key-deserializer", "key.deserializer"), ("value-deserializer", "value.deserializer")):
            if args.value(option):
                formatter_args[key] = args.value(option)
        self.formatter = MessageFormatter(formatter_args, writes=not formatter_class.endswith("NoOpMessageFormatter"))
        self.max_messages = int(args.value("max-messages")) if args.has("max-messages") else None
        self.timeout_ms = int(args.value("timeout-ms")) if args.has("timeout-ms") else None
        self.topic = args.value("topic")
        self.whitelist = args.value("whitelist")
        if args.has("topic") == args.has("whitelist"):
            raise UsageError("Exactly one of whitelist/topic is required.")
        if self.partition is not None:
            if not args.has("topic"):
                raise UsageError("The topic is required when partition is specified.")
            if self.from_beginning and args.has("offset"):
                raise UsageError("Options from-beginning and offset cannot be specified together.")
        elif args.has("offset"):
            raise UsageError("The partition is required when offset is specified.")
        self.offset = self._offset()
        if not args.has("bootstrap-server"):
            raise UsageError(f'Missing required argument "{OPTIONS["bootstrap-server"]}"')
        groups: list[str] = []
        for found in (args.value("group"), self.file_props.get("group.id"), self.extra_props.get("group.id")):
            if found is not None and found not in groups:
                groups.append(found)
        if len(groups) > 1:
            raise UsageError("The group ids provided in different places (directly using '--group', via "
                             "'--consumer-property', or via '--consumer.config') do not match. Detected group ids: "
                             + ", ".join(f"'{g}'" for g in groups))
        self.group_id_passed = bool(groups)
        if groups:
            self.file_props["group.id"] = groups[0]
        else:
            self.file_props["group.id"] = f"console-consumer-{random.randrange(100000)}"
            self.file_props.setdefault("enable.auto.commit", "false")
        if self.group_id_passed and self.partition is not None:
            raise UsageError("Options group and partition cannot be specified together.")

    def _offset(self) -> str | int:
        """'earliest', 'latest' or the offset to seek the --partition to."""
        if not self.args.has("offset"):
            return "earliest" if self.from_beginning else "latest"
        text = self.args.value("offset").lower()
        if text in ("earliest", "latest"):
            return text
        if re.fullmatch(r"\+?[0-9]+", text, re.ASCII) and int(text) < 2**63:
            return int(text)
        raise UsageError(f"The provided offset value '{text}' is incorrect. Valid values are 'earliest', 'latest', "
                         "or a non-negative long.")

    def consumer_props(self) -> dict[str, str]:
        """ConsoleConsumer.consumerProps, with setAutoOffsetResetValue's conflict check."""
        props = {**self.file_props, **self.extra_props}
        if "auto.offset.reset" in props:
            if self.from_beginning and props["auto.offset.reset"] != "earliest":
                raise OffsetResetConflict(props["auto.offset.reset"])
        else:
            props["auto.offset.reset"] = "earliest" if self.from_beginning else "latest"
        props["bootstrap.servers"] = self.args.value("bootstrap-server")
        # No client.id of its own (unlike the console producer): KafkaConsumer names it
        # consumer-<group>-<n>, which kafka-consumer-groups.sh then shows as CLIENT-ID.
        if self.args.has("isolation-level") or "isolation.level" not in props:  # maybeMergeOptions
            props["isolation.level"] = self.args.value("isolation-level")
        return props


class OffsetResetConflict(Exception):
    """--from-beginning next to another auto.offset.reset: Kafka prints this and exits 1, without usage."""

    def __init__(self, value: str) -> None:
        super().__init__(f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={value}', "
                         "please remove one option")


# -- running ---------------------------------------------------------------------------------------


def _error(err: TextIO, message: str, trace: str) -> None:
    err.write(tools_error_line(message, TOOL_LOGGER, trace))
    err.flush()


def _make_consumer(props: dict[str, str]) -> KafkaConsumer:
    """new KafkaConsumer(props): a bad config value is thrown as is, anything later is wrapped."""
    try:
        consumer_config(props)
    except KafkaError as error:
        raise JavaError(error.java_class, str(error)) from None
    try:
        _check_resolvable(props["bootstrap.servers"])
        return KafkaConsumer(props)
    except KafkaError as error:
        raise JavaError("org.apache.kafka.common.KafkaException", CONSTRUCTION_FAILED, error) from None


def _check_resolvable(servers: str) -> None:
    """ClientUtils.parseAndValidateAddresses: a host DNS cannot resolve is skipped with a warning,
    and none left is a ConfigException (Java's consumer gives up at once rather than retrying)."""
    try:
        addresses = parse_bootstrap_servers(servers)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    resolved = 0
    for host, port in addresses:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            resolved += 1
        except (OSError, UnicodeError):
            logging.getLogger("kafkalike.client.utils").warning(
                "Couldn't resolve server %s:%s from bootstrap.servers as DNS resolution failed for %s",
                host, port, host)
    if not resolved:
        raise ConfigError("No resolvable bootstrap urls given in bootstrap.servers")


def _start(consumer: KafkaConsumer, conf: ConsumerOptions) -> None:
    """ConsumerWrapper.consumerInit: assign and seek the partition, or subscribe."""
    if conf.partition is not None:
        tp = TopicPartition(conf.topic, conf.partition)
        consumer.assign([tp])
        if conf.offset == "earliest":
            consumer.seek_to_beginning([tp])
        elif conf.offset == "latest":
            consumer.seek_to_end([tp])
        else:
            consumer.seek(tp, conf.offset)
    elif conf.whitelist is not None:
        try:
            pattern = re.compile(conf.whitelist)
        except re.error as error:
            raise JavaError("java.util.regex.PatternSyntaxException", f"{error}\n{conf.whitelist}") from None
        consumer.subscribe(pattern)
    else:
        consumer.subscribe([conf.topic])


def run(argv: Sequence[str], out: BinaryIO, err: TextIO) -> int:
    try:
        conf = ConsumerOptions(argv)
    except UsageError as error:
        err.write(f"{error}\n{joptions.format_help(OPTIONS)}")
        return 1
    except JavaError as error:
        err.write(f'Exception in thread "main" {error.trace(CONFIG_INIT)}\n')
        return 1
    if conf.args.has("version"):
        _write(out, f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n".encode())
        return 0
    try:
        props = conf.consumer_props()
    except OffsetResetConflict as error:
        err.write(f"{error}\n")
        return 1
    handler = joptions.setup_tools_logging(err, JAVA_LOGGERS)
    stopped_by: list[int] = []
    wakeups: list[Callable[[], None]] = []

    def on_signal(signum, frame) -> None:  # Kafka's shutdown hook: wake the consumer up, let run() finish
        stopped_by.append(signum)
        if not wakeups:
            raise KeyboardInterrupt
        wakeups[0]()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        status = _run(conf, props, out, err, wakeups)
    except KeyboardInterrupt:  # stopped while the consumer was being set up
        err.write("Processed a total of 0 messages\n")
        status = 0
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
        logging.getLogger("kafkalike").removeHandler(handler)
    err.flush()
    return 128 + stopped_by[0] if stopped_by else status


def _run(conf: ConsumerOptions, props: dict[str, str], out: BinaryIO, err: TextIO,
         wakeups: list[Callable[[], None]]) -> int:
    """ConsoleConsumer.main and run: set up, process, clean up, report the count."""
    try:
        consumer = _make_consumer(props)
        wakeups.append(consumer.wakeup)
        try:
            _start(consumer, conf)
        except BaseException:
            consumer.close()
            raise
    except JavaError as error:  # thrown inside ConsoleConsumer.run: logged, exit 1
        _error(err, "Unknown error when running consumer: ", error.trace())
        return 1
    except KafkaError as error:
        _error(err, "Unknown error when running consumer: ", java_view(error))
        return 1
    counter = [0]
    stdout_closed = False
    failure: KafkaError | None = None
    try:
        stdout_closed = _process(consumer, conf, out, err, counter)
    except KafkaError as error:  # a formatter failure without --skip-message-on-error is thrown out of run
        failure = error
    finally:
        consumer.close()
        err.write(f"Processed a total of {counter[0]} messages\n")
        err.flush()
    if failure is not None:
        _error(err, "Unknown error when running consumer: ", java_view(failure))
        return 1
    if conf.args.has("enable-systest-events") and not stdout_closed:
        _write(out, b"shutdown_complete\n")
    return 0


def _write(out: BinaryIO, data: bytes) -> bool:
    """PrintStream.write then checkError: False once nobody reads stdout any more."""
    try:
        out.write(data)
        out.flush()
        return True
    except (OSError, ValueError):
        return False


def _process(consumer: KafkaConsumer, conf: ConsumerOptions, out: BinaryIO, err: TextIO, counter: list[int]) -> bool:
    """ConsoleConsumer.process; counter[0] counts the messages. True if stdout was found closed."""
    timeout = None if conf.timeout_ms is None else conf.timeout_ms / 1000
    last = time.monotonic()
    while conf.max_messages is None or counter[0] < conf.max_messages:
        limit = None if conf.max_messages is None else conf.max_messages - counter[0]
        try:
            records = consumer.poll(0.2 if timeout is None else min(0.2, timeout), max_records=limit)
        except WakeupError:
            return False
        except KafkaError as error:
            _error(err, "Error processing message, terminating consumer process: ", java_view(error))
            return False
        if records:
            last = time.monotonic()
        elif timeout is not None and time.monotonic() - last >= timeout:
            _error(err, "Error processing message, terminating consumer process: ",
                   "org.apache.kafka.common.errors.TimeoutException")
            return False
        for index, record in enumerate(records):
            counter[0] += 1
            try:
                data = conf.formatter.format(record)
            except KafkaError as error:
                if not conf.args.has("skip-message-on-error"):
                    _rewind(consumer, records[index:])
                    raise
                _error(err, "Error processing message, skipping this message: ", java_view(error))
                continue
            if data and not _write(out, data):
                err.write("Unable to write to standard out, closing consumer.\n")
                _silence_stdout(out)
                _rewind(consumer, records[index + 1:])
                return True
    return False


def _rewind(consumer: KafkaConsumer, unconsumed: list) -> None:
    """ConsumerWrapper.resetUnconsumedOffsets: do not commit past records nobody printed."""
    first: dict[tuple[str, int], int] = {}
    for record in unconsumed:
        first.setdefault((record.topic, record.partition), record.offset)
    for (topic, partition), offset in first.items():
        try:
            consumer.seek(TopicPartition(topic, partition), offset)
        except KafkaError:
            pass


def _silence_stdout(out: BinaryIO) -> None:
    """Nobody reads stdout any more: point it at /dev/null so that exiting does not fail on it again."""
    try:
        fd = out.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    return run(sys.argv[1:] if argv is None else list(argv), sys.stdout.buffer, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
