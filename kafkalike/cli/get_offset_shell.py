"""kafka.tools.GetOffsetShell: a topic's offsets for a time, as Kafka 2.8 prints them.

Run as Kafka's operators run it, through kafka-run-class.sh (Kafka 2.8 has no script of its
own for it; kafka-get-offsets.sh came with 3.0):

    bin/kafka-run-class.sh kafka.tools.GetOffsetShell --broker-list host:9092 --topic T [--time -1]

One line per partition, `topic:partition:offset`, in partition order: the log end offset
for -1 (the default), the log start offset for -2, and for a timestamp the first offset
whose record is at or after it (nothing after the last colon when there is none). The
tool is a plain KafkaConsumer (client id GetOffsetShell) that lists the topics once, so
asking about a topic that does not exist never creates it. Its command line is 2.8's:
jopt-simple without abbreviations, no --help, --broker-list and --topic required, and
--offsets / --max-wait-ms accepted and ignored.
"""
from __future__ import annotations

import sys
from typing import Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import ILLEGAL_ARGUMENT, JavaError, Option, UsageError, options_table, valid_host_ports
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.consumer import KafkaConsumer
from kafkalike.client.errors import KafkaTimeoutError
from kafkalike.client.metadata import TopicPartition

EARLIEST, LATEST = -2, -1
OPTIONS = options_table(
    Option("broker-list", "REQUIRED: The list of hostname and port of the server to connect to.",
           "hostname:port,...,hostname:port"),
    Option("topic", "REQUIRED: The topic to get offset from.", "topic"),
    Option("partitions", "comma separated list of partition ids. If not specified, it will find offsets for all "
           "partitions", "partition ids", default=""),
    Option("time", "timestamp of the offsets before that. [Note: No offset is returned, if the timestamp greater "
           "than recently commited record timestamp is given.]", "timestamp/-1(latest)/-2(earliest)",
           type_name="Long", default="-1"),
    Option("offsets", "DEPRECATED AND IGNORED: number of offsets returned", "count", type_name="Integer",
           default="1"),
    Option("max-wait-ms", "DEPRECATED AND IGNORED: The max amount of time each fetch request waits.", "ms",
           type_name="Integer", default="1000"),
)
USAGE = "An interactive shell for getting topic offsets."
TIMEOUT_CLASS = "org.apache.kafka.common.errors.TimeoutException"


class ToolExit(Exception):
    """The tool printed its reason on stderr and ends with status 1 (Exit.exit(1))."""


def requested_partitions(text: str, err: TextIO) -> set[int]:
    if not text:
        return set()
    try:
        return {int(p) for p in text.split(",")}
    except ValueError:
        err.write(f"--partitions expects a comma separated list of numeric partition ids, but received: {text}\n")
        raise ToolExit() from None


def offsets(consumer: KafkaConsumer, partitions: list[TopicPartition], time: int) -> dict[TopicPartition, int | None]:
    if time == EARLIEST:
        return dict(consumer.beginning_offsets(partitions))
    if time == LATEST:
        return dict(consumer.end_offsets(partitions))
    try:
        found = consumer.offsets_for_times({tp: time for tp in partitions})
    except ValueError as error:     # a negative time other than -1/-2, as Java's offsetsForTimes refuses it
        raise JavaError(ILLEGAL_ARGUMENT, str(error)) from None
    return {tp: (hit[0] if hit is not None else None) for tp, hit in found.items()}


def get_offsets(opts, out: TextIO, err: TextIO) -> int:
    topic = opts.value("topic")
    wanted = requested_partitions(opts.value("partitions") or "", err)
    time = opts.number("time")
    consumer = KafkaConsumer(bootstrap_servers=opts.value("broker-list"), client_id="GetOffsetShell")
    try:
        infos = consumer.list_topics().get(topic)
        if infos is None:
            err.write(f"Topic {topic} does not exist\n")
            raise ToolExit()
        if wanted:
            infos = [p for p in infos if p.partition in wanted]
        if not infos:
            err.write(f"Topic {topic} has 0 partitions\n" if not wanted else
                      f"Topic {topic} does not have any of the requested partitions "
                      f"{','.join(map(str, sorted(wanted)))}\n")
            raise ToolExit()
        for missing in sorted(wanted - {p.partition for p in infos}):
            err.write(f"Error: partition {missing} does not exist\n")
        partitions = []
        for info in sorted(infos, key=lambda p: p.partition):
            if info.leader is None:
                err.write(f"Error: partition {info.partition} does not have a leader. Skip getting offsets\n")
            else:
                partitions.append(TopicPartition(topic, info.partition))
        found = offsets(consumer, partitions, time) if partitions else {}
        for tp in sorted(found, key=lambda tp: tp.partition):
            value = found[tp]
            out.write(f"{topic}:{tp.partition}:{'' if value is None else value}\n")
    except KafkaTimeoutError as error:
        raise JavaError(TIMEOUT_CLASS, str(error)) from None
    finally:
        consumer.close()
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        if not args:
            raise UsageError(USAGE)
        opts = command_default.parse_plain(OPTIONS, args, ("broker-list", "topic"))
        if not valid_host_ports(opts.value("broker-list")):
            raise UsageError("Please provide valid host:port like host1:9091,host2:9092\n ")
        try:
            return get_offsets(opts, out, err)
        except ToolExit:
            return 1
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
