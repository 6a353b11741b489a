"""kafka-console-consumer's command line without a broker: Kafka 2.8 ConsumerConfig's checks,
the consumer properties they produce, and the shared jopt-simple layer (kafkalike.cli.joptions)."""
from __future__ import annotations

import io

import pytest

from kafkalike.cli import console_consumer, console_producer, joptions
from kafkalike.cli.console_consumer import ConsumerOptions, MessageFormatter, OffsetResetConflict
from kafkalike.client.fetcher import ConsumerRecord

BASE = ["--bootstrap-server", "localhost:9092", "--topic", "t"]


def run(*argv: str) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    status = console_consumer.run(list(argv), out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv, message", [
    (BASE + ["--group", "g", "--partition", "0"], "Options group and partition cannot be specified together."),
    (["--bootstrap-server", "h:1", "--whitelist", "x", "--partition", "0"],
     "The topic is required when partition is specified."),
    (BASE + ["--offset", "latest"], "The partition is required when offset is specified."),
    (BASE + ["--offset", "3"], "The partition is required when offset is specified."),
    (BASE + ["--partition", "0", "--offset", "latest", "--from-beginning"],
     "Options from-beginning and offset cannot be specified together."),
    (BASE + ["--partition", "0", "--offset", "-1"],
     "The provided offset value '-1' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    (BASE + ["--partition", "0", "--offset", "Soon"],
     "The provided offset value 'soon' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    (BASE + ["--group", "a", "--consumer-property", "group.id=b"],
     "The group ids provided in different places (directly using '--group', via '--consumer-property', or via "
     "'--consumer.config') do not match. Detected group ids: 'a', 'b'"),
    (["--topic", "t"], 'Missing required argument "[bootstrap-server]"'),
    (BASE + ["--bogus"], "bogus is not a recognized option"),
    (BASE + ["--partition", "x"], "Cannot parse argument 'x' of option partition"),
    (BASE + ["--partition"], "Option partition requires an argument"),
    (["--bootstrap-server", "h:1"], "Exactly one of whitelist/topic is required."),
    (["--help"], console_consumer.HELP_MESSAGE),
    ([], console_consumer.HELP_MESSAGE),
])
def test_usage_errors_print_the_message_then_the_option_table(argv, message):
    status, out, err = run(*argv)
    assert status == 1 and out == b""
    assert err == message + "\n" + joptions.format_help(console_consumer.OPTIONS)


def test_offset_values_are_case_insensitive_or_non_negative_longs():
    assert ConsumerOptions(BASE + ["--partition", "0", "--offset", "EARLIEST"]).offset == "earliest"
    assert ConsumerOptions(BASE + ["--partition", "0", "--offset", "Latest"]).offset == "latest"
    assert ConsumerOptions(BASE + ["--partition", "0", "--offset", "42"]).offset == 42
    assert ConsumerOptions(BASE + ["--partition", "0", "--from-beginning"]).offset == "earliest"
    assert ConsumerOptions(BASE + ["--partition", "0"]).offset == "latest"


def test_unique_prefixes_and_equals_values():
    conf = ConsumerOptions(["--bootstrap=h:1", "--top", "t", "--from-beg", "--max-m=3"])
    assert conf.from_beginning and conf.topic == "t" and conf.max_messages == 3
    status, _, err = run("--bootstrap-server", "h:1", "--topic", "t", "--p", "0")
    assert status == 1 and err.startswith("p is not a recognized option\n")  # partition or property


def test_isolation_level_from_consumer_property_is_kept():
    props = ConsumerOptions(BASE + ["--consumer-property", "isolation.level=read_committed"]).consumer_props()
    assert props["isolation.level"] == "read_committed"
    props = ConsumerOptions(BASE + ["--consumer-property", "isolation.level=read_committed",
                                    "--isolation-level", "read_uncommitted"]).consumer_props()
    assert props["isolation.level"] == "read_uncommitted"
    assert ConsumerOptions(BASE).consumer_props()["isolation.level"] == "read_uncommitted"


def test_consumer_properties_defaults():
    props = ConsumerOptions(BASE).consumer_props()
    assert "client.id" not in props        # KafkaConsumer's consumer-<group>-<n>, as Kafka 2.8
    assert props["auto.offset.reset"] == "latest"
    assert props["group.id"].startswith("console-consumer-") and props["enable.auto.commit"] == "false"
    props = ConsumerOptions(BASE + ["--from-beginning", "--consumer-property", "client.id=mine"]).consumer_props()
    assert props["client.id"] == "mine" and props["auto.offset.reset"] == "earliest"
    props = ConsumerOptions(BASE + ["--group", "g", "--consumer-property", "group.id=g"]).consumer_props()
    assert props["group.id"] == "g" and "enable.auto.commit" not in props


def test_from_beginning_conflicts_with_another_auto_offset_reset():
    with pytest.raises(OffsetResetConflict):
        ConsumerOptions(BASE + ["--from-beginning", "--consumer-property", "auto.offset.reset=latest"]).consumer_props()
    ConsumerOptions(BASE + ["--from-beginning", "--consumer-property", "auto.offset.reset=earliest"]).consumer_props()
    status, _, err = run(*BASE, "--from-beginning", "--consumer-property", "auto.offset.reset=latest")
    assert status == 1
    assert err == ("Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest', please remove one "
                   "option\n")


def test_property_without_equals_is_an_empty_value():
    conf = ConsumerOptions(BASE + ["--property", "print.key", "--property", "print.offset=TRUE "])
    assert conf.formatter.key is False and conf.formatter.offset is True


def test_unknown_formatter_or_deserializer_is_a_class_not_found():
    for extra in (["--formatter", "com.example.Fancy"], ["--key-deserializer", "com.example.Des"],
                  ["--property", "value.deserializer=nope"]):
        status, _, err = run(*BASE, *extra)
        assert status == 1
        assert err.startswith('Exception in thread "main" java.lang.ClassNotFoundException: ')


def test_version_is_printed_with_exit_0():
    status, out, err = run("--version")
    assert (status, out, err) == (0, b"2.8.0 (Commit:kafkalike)\n", "")


def record(key, value, headers=(), timestamp_type=0):
    return ConsumerRecord("t", 3, 7, 1_600_000_000_000, timestamp_type, key, value, list(headers))


def test_formatter_writes_bytes_verbatim():
    fmt = MessageFormatter({"print.key": "true", "key.separator": "\\t", "line.separator": "|"})
    assert fmt.format(record(b"\xff\x00", b"\x80bin")) == b"\xff\x00\\t\x80bin|"
    fmt = MessageFormatter({"print.key": "true", "key.separator": "\u2192", "null.literal": "NUL"})
    assert fmt.format(record(None, b"v")) == "NUL\u2192v\n".encode()
    fmt = MessageFormatter({"print.headers": "true", "print.value": "false", "headers.separator": ";"})
    assert fmt.format(record(None, b"v", [("a", b"1"), ("b", None)])) == b"a:1;b:null\n"
    fmt = MessageFormatter({"print.timestamp": "true", "print.partition": "true", "print.offset": "true"})
    assert fmt.format(record(b"k", b"v", timestamp_type=1)) == b"LogAppendTime:1600000000000\tPartition:3\tOffset:7\tv\n"


def test_formatter_deserializers():
    fmt = MessageFormatter({"print.key": "true",
                            "key.deserializer": "org.apache.kafka.common.serialization.IntegerDeserializer",
                            "value.deserializer": "org.apache.kafka.common.serialization.StringDeserializer"})
    assert fmt.format(record(b"\x00\x00\x01\x00", b"caf\xc3\xa9")) == "256\tcaf\u00e9\n".encode()


def test_producer_uses_the_shared_parser():
    assert console_producer.Option is joptions.Option
    assert console_producer.format_help() == joptions.format_help(console_producer.OPTIONS)
    assert console_producer.parse_args(["--bootstrap-server", "h:1", "--top", "x"]).value("topic") == "x"
