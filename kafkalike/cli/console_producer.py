"""kafka-console-producer: stdin lines to a topic, as Kafka 2.8's ConsoleProducer.

The same options (jopt-simple style: --name value, --name=value, unique abbreviations),
the same precedence (--producer.config file, then --producer-property, then the
command-line options that were given, then the options' defaults for keys still unset),
the same reader properties (parse.key, key.separator, ignore.error; parse.headers,
headers.delimiter, headers.separator, headers.key.separator and null.marker are the
3.2 additions, accepted here too), a '>' prompt only when stdin and stdout are both a
terminal (KAFKA-10565, in 2.8), and the same failure output: usage errors followed by
the option table on stderr, a Java-style stack trace for a bad line or a failed --sync
send, and for asynchronous sends ErrorLoggingCallback's log line. Exit status 1 on an
error that stops the tool, 0 at the end of input (asynchronous send errors do not
change it, as in Kafka).
"""
from __future__ import annotations

import logging
import os
import re
import sys
from typing import BinaryIO, Sequence, TextIO

from kafkalike.properties import load as load_properties
from kafkalike.client.errors import KafkaError, java_view
from kafkalike.client.producer import KafkaProducer, ProducerRecord
from kafkalike.cli import joptions
from kafkalike.cli.joptions import (KAFKA_COMMIT_ID, KAFKA_VERSION, JavaError, Option, ParsedArgs, UsageError,
                                    parse_key_values, valid_host_ports)
from kafkalike.cli.tool_main import run_tool

DEFAULT_READER = "kafka.tools.ConsoleProducer$LineMessageReader"
KAFKA_EXCEPTION = "org.apache.kafka.common.KafkaException"
DESCRIPTION = "This tool helps to read data from standard input and publish it to Kafka."

# Our logger names as the Java classes whose log lines they stand for.
JAVA_LOGGERS = {
    "kafkalike.client.network": "org.apache.kafka.clients.NetworkClient",
    "kafkalike.client.sender": "org.apache.kafka.clients.producer.internals.Sender",
    "kafkalike.client.producer": "org.apache.kafka.clients.producer.KafkaProducer",
    "kafkalike.client.config": "org.apache.kafka.clients.producer.ProducerConfig",
    "kafkalike.cli.console_producer": "org.apache.kafka.clients.producer.internals.ErrorLoggingCallback",
}
log = logging.getLogger("kafkalike.cli.console_producer")


OPTIONS = {o.name: o for o in (
    Option("topic", "REQUIRED: The topic id to produce messages to.", "topic"),
    Option("broker-list", "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is "
           "specified.  The broker list string in the form HOST1:PORT1,HOST2:PORT2.", "broker-list"),
    Option("bootstrap-server", "REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect "
           "to. The broker list string in the form HOST1:PORT1,HOST2:PORT2.", "server to connect to"),
    Option("sync", "If set message send requests to the brokers are synchronously, one at a time as they arrive."),
    Option("compression-codec", "The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'.If "
           "specified without value, then it defaults to 'gzip'", "compression-codec", optional_arg=True),
    Option("batch-size", "Number of messages to send in a single batch if they are not being sent "
           "synchronously.", "size", "Integer", "200"),
    Option("message-send-max-retries", "Brokers can fail receiving the message for multiple reasons, and being "
           "unavailable transiently is just one of them. This property specifies the number of retries before "
           "the producer give up and drop this message.", "", "Integer", "3"),
    Option("retry-backoff-ms", "Before each retry, the producer refreshes the metadata of relevant topics. Since "
           "leader election takes a bit of time, this property specifies the amount of time that the producer "
           "waits before refreshing the metadata.", "", "Integer", "100"),
    Option("timeout", "If set and the producer is running in asynchronous mode, this gives the maximum amount of "
           "time a message will queue awaiting sufficient batch size. The value is given in ms.", "timeout_ms",
           "Integer", "1000"),
    Option("request-required-acks", "The required acks of the producer requests", "request required acks",
           "String", "1"),
    Option("request-timeout-ms", "The ack timeout of the producer requests. Value must be non-negative and "
           "non-zero", "request timeout ms", "Integer", "1500"),
    Option("metadata-expiry-ms", "The period of time in milliseconds after which we force a refresh of metadata "
           "even if we haven't seen any leadership changes.", "metadata expiration interval", "Long", "300000"),
    Option("max-block-ms", "The max time that the producer will block for during a send request",
           "max block on send", "Long", "60000"),
    Option("max-memory-bytes", "The total memory used by the producer to buffer records waiting to be sent to the "
           "server.", "total memory in bytes", "Long", "33554432"),
    Option("max-partition-memory-bytes", "The buffer size allocated for a partition. When records are received "
           "which are smaller than this size the producer will attempt to optimistically group them together "
           "until this size is reached.", "memory in bytes per partition", "Long", "16384"),
    Option("line-reader", "The class name of the class to use for reading lines from standard in. By default "
           "each line is read as a separate message.", "reader_class", "String", DEFAULT_READER),
    Option("socket-buffer-size", "The size of the tcp RECV size.", "size", "Integer", "102400"),
    Option("property", "A mechanism to pass user-defined properties in the form key=value to the message reader. "
           "This allows custom configuration for a user-defined message reader. Default properties include: "
           "parse.key=true|false key.separator=<key.separator> ignore.error=true|false", "prop"),
    Option("producer-property", "A mechanism to pass user-defined properties in the form key=value to the "
           "producer. ", "producer_prop"),
    Option("producer.config", "Producer config properties file. Note that [producer-property] takes precedence "
           "over this config.", "config file"),
    Option("help", "Print usage information."),
    Option("version", "Display Kafka version."),
)}

# Producer configs that command-line options stand for, merged the way Kafka's
# CommandLineUtils.maybeMergeOptions does.
MERGED_OPTIONS = [
    ("linger.ms", "timeout"), ("acks", "request-required-acks"), ("request.timeout.ms", "request-timeout-ms"),
    ("retries", "message-send-max-retries"), ("retry.backoff.ms", "retry-backoff-ms"),
    ("send.buffer.bytes", "socket-buffer-size"), ("buffer.memory", "max-memory-bytes"),
    ("batch.size", "max-partition-memory-bytes"), ("metadata.max.age.ms", "metadata-expiry-ms"),
    ("max.block.ms", "max-block-ms"),
]


def parse_args(argv: Sequence[str]) -> ParsedArgs:
    parsed = joptions.parse_args(OPTIONS, argv)
    if not parsed.has("bootstrap-server") and not parsed.has("broker-list") and not parsed.has("help") \
            and not parsed.has("version"):
        raise UsageError("Missing required option(s) [bootstrap-server]")
    return parsed


def format_help() -> str:
    return joptions.format_help(OPTIONS)


# -- the line reader ----------------------------------------------------------------------------


class LineMessageReader:
    """Kafka's LineMessageReader: one record per line, optionally `key<sep>value` and headers."""

    def __init__(self, stream: BinaryIO, props: dict[str, str]) -> None:
        self.topic = props["topic"]
        self.stream = stream
        flag = lambda name: props.get(name, "false").strip().lower() == "true"  # noqa: E731
        self.parse_key = flag("parse.key")
        self.key_separator = props.get("key.separator", "\t")
        self.parse_headers = flag("parse.headers")
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.ignore_error = flag("ignore.error")
        self.null_marker = props.get("null.marker")
        self.line_number = 0
        self._pending: list[str] = []
        pairs = [("headers.delimiter", self.headers_delimiter, "headers.separator", self.headers_separator),
                 ("headers.delimiter", self.headers_delimiter, "headers.key.separator", self.headers_key_separator),
                 ("headers.separator", self.headers_separator, "headers.key.separator", self.headers_key_separator)]
        if self.parse_headers:
            for a, va, b, vb in pairs:
                if va == vb:
                    raise JavaError(KAFKA_EXCEPTION, f"{a} and {b} may not be equal")
        if self.null_marker is not None:
            for name, value in (("key.separator", self.key_separator), ("headers.separator", self.headers_separator),
                                ("headers.delimiter", self.headers_delimiter),
                                ("headers.key.separator", self.headers_key_separator)):
                if self.null_marker == value:
                    raise JavaError(KAFKA_EXCEPTION, f"null.marker and {name} may not be equal")

    def _read_line(self) -> str | None:
        """BufferedReader.readLine: \\n, \\r and \\r\\n all end a line; malformed UTF-8 is replaced."""
        if self._pending:
            return self._pending.pop(0)
        raw = self.stream.readline()
        if not raw:
            return None
        text = raw.decode("utf-8", errors="replace")
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        parts = text.split("\r")
        self._pending.extend(parts[1:])
        return parts[0]

    def read_message(self) -> ProducerRecord | None:
        self.line_number += 1
        line = self._read_line()
        if line is None:
            return None
        if not self.parse_headers and self.null_marker is None:
            return self._read_2_8(line)
        headers = self._part(self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter")
        header_end = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._part(self.parse_key, line, header_end, self.key_separator, "key separator")
        key_end = 0 if key is None else len(key) + len(self.key_separator)
        value: str | None = line[header_end + key_end:]
        marker = self.null_marker
        record = ProducerRecord(self.topic,
                                None if value == marker else value.encode("utf-8"),
                                None if key is None or key == marker else key.encode("utf-8"))
        if headers is not None and headers != marker:
            record.headers = self._split_headers(headers)
        return record

    def _read_2_8(self, line: str) -> ProducerRecord:
        if not self.parse_key:
            return ProducerRecord(self.topic, line.encode("utf-8"))
        n = line.find(self.key_separator)
        if n < 0:
            if self.ignore_error:
                return ProducerRecord(self.topic, line.encode("utf-8"))
            raise JavaError(KAFKA_EXCEPTION, f"No key found on line {self.line_number}: {line}")
        value = line[n + len(self.key_separator):]
        return ProducerRecord(self.topic, value.encode("utf-8"), line[:n].encode("utf-8"))

    def _part(self, enabled: bool, line: str, start: int, demarcation: str, what: str) -> str | None:
        if not enabled:
            return None
        index = line.find(demarcation, start)
        if index < 0:
            if self.ignore_error:
                return None
            raise JavaError(KAFKA_EXCEPTION, f"No {what} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _split_headers(self, text: str) -> list[tuple[str, bytes | None]]:
        out = []
        for pair in re.split(self.headers_separator, text):
            i = pair.find(self.headers_key_separator)
            if i < 0:
                if not self.ignore_error:
                    raise JavaError(KAFKA_EXCEPTION, f"No header key separator found in pair '{pair}' on line "
                                                         f"number {self.line_number}")
                out.append((pair, None))
                continue
            key, value = pair[:i], pair[i + len(self.headers_key_separator):]
            if key == self.null_marker:
                raise JavaError(KAFKA_EXCEPTION, "Header keys should not be equal to the null marker "
                                                     f"'{self.null_marker}' as they can't be null")
            out.append((key, None if value == self.null_marker else value.encode("utf-8")))
        return out


# -- running ---------------------------------------------------------------------------------------


def _setup_logging(err: TextIO) -> logging.Handler:
    return joptions.setup_tools_logging(err, JAVA_LOGGERS)


def producer_props(args: ParsedArgs) -> dict[str, str]:
    props: dict[str, str] = {}
    if args.has("producer.config"):
        path = args.value("producer.config")
        if not os.path.exists(path):
            raise JavaError("java.nio.file.NoSuchFileException", path)
        props.update(load_properties(path))
    props.update(parse_key_values(args.all("producer-property")))
    props["bootstrap.servers"] = args.value("bootstrap-server") if args.has("bootstrap-server") \
        else args.value("broker-list")
    if args.has("compression-codec"):
        codec = args.value("compression-codec")
        props["compression.type"] = codec if codec else "gzip"
    else:
        props["compression.type"] = "none"
    props.setdefault("client.id", "console-producer")
    props["key.serializer"] = "org.apache.kafka.common.serialization.ByteArraySerializer"
    props["value.serializer"] = "org.apache.kafka.common.serialization.ByteArraySerializer"
    for key, option in MERGED_OPTIONS:
        if args.has(option) or key not in props:
            props[key] = args.value(option)
    if args.has("batch-size"):  # Kafka 3.0's reading; 2.8 accepted --batch-size and ignored it
        props["batch.size"] = args.value("batch-size")
    return props


def _describe(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


def run(argv: Sequence[str], stdin: BinaryIO, out: TextIO, err: TextIO, interactive: bool | None = None) -> int:
    try:
        args = parse_args(argv)
        if not argv or args.has("help"):
            raise UsageError(DESCRIPTION)
        if args.has("version"):
            out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
            return 0
        if not args.has("topic"):
            raise UsageError('Missing required argument "[topic]"')
        servers = args.value("bootstrap-server") if args.has("bootstrap-server") else args.value("broker-list")
        if not valid_host_ports(servers):
            raise UsageError("Please provide valid host:port like host1:9091,host2:9092\n ")
    except UsageError as error:
        err.write(f"{error}\n{format_help()}")
        return 1
    if interactive is None:  # Java's System.console(): stdin and stdout both a terminal
        interactive = stdin.isatty() and out.isatty()
    handler = _setup_logging(err)
    producer = None
    try:
        if args.value("line-reader") != DEFAULT_READER:
            raise JavaError("java.lang.ClassNotFoundException", args.value("line-reader"))
        reader = LineMessageReader(stdin, {"topic": args.value("topic"), **parse_key_values(args.all("property"))})
        try:
            producer = KafkaProducer(producer_props(args))
        except KafkaError as error:
            raise JavaError(KAFKA_EXCEPTION, "Failed to construct kafka producer", error) from None
        sync = args.has("sync")
        while True:
            if interactive:
                out.write(">")
                out.flush()
            record = reader.read_message()
            if record is None:
                break
            _send(producer, record, sync)
    except JavaError as error:
        err.write(error.trace("kafka.tools.ConsoleProducer$.main(ConsoleProducer.scala)") + "\n")
        err.flush()
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if producer is not None:
            producer.close()
        logging.getLogger("kafkalike").removeHandler(handler)
    return 0


def _send(producer: KafkaProducer, record: ProducerRecord, sync: bool) -> None:
    if sync:
        try:
            producer.send(record).get()
        except KafkaError as error:
            raise JavaError("java.util.concurrent.ExecutionException", java_view(error), error) from None
        return

    def on_completion(metadata, error) -> None:
        if error is not None:
            _log_send_error(record, error)
    try:
        producer.send(record, callback=on_completion)
    except KafkaError as error:  # Java hands these to the callback too
        _log_send_error(record, error)


def _log_send_error(record: ProducerRecord, error: Exception) -> None:
    log.error("Error when sending message to topic %s with key: %s, value: %s with error:", record.topic,
              _describe(record.key), _describe(record.value), exc_info=error)


def main(argv: Sequence[str] | None = None) -> int:
    return run(sys.argv[1:] if argv is None else list(argv), sys.stdin.buffer, sys.stdout, sys.stderr)


if __name__ == "__main__":
    run_tool(main)
