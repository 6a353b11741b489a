"""kafka-verifiable-consumer: a group member that narrates what it does, one JSON line each.

System tests read its stdout to check group semantics from outside (Kafka 2.8's
VerifiableConsumer): which partitions each member owned and when (partitions_assigned,
partitions_revoked), which offsets every poll delivered (records_consumed, with the
first and last offset per partition, so the union of all members' ranges can be
checked against what the producer acknowledged), and what each commit achieved
(offsets_committed). startup_complete comes first and shutdown_complete last, after
the consumer is closed, so a test knows the member has left the group.

SIGTERM or Ctrl-C wakes the consumer up; the loop then closes it (which revokes its
partitions and leaves the group) exactly as the Java tool's shutdown hook does.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence, TextIO

from kafkalike.properties import load as load_properties
from kafkalike.client.consumer import ConsumerRecord, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafkalike.client.errors import WakeupError
from kafkalike.cli.argparse4j import INTEGER, ArgumentParser
from kafkalike.cli.tool_main import JsonEvents, run_tool

log = logging.getLogger("kafkalike.cli.verifiable_consumer")

STRING_DESERIALIZER = "org.apache.kafka.common.serialization.StringDeserializer"
RANGE_ASSIGNOR = "org.apache.kafka.clients.consumer.RangeAssignor"
_POLL_SECONDS = 1.0  # the Java tool polls "forever"; we look up now and then to notice stop requests


@dataclass(frozen=True)
class RecordSetSummary:
    """What one poll delivered from one partition (field names are the JSON keys)."""

    topic: str
    partition: int
    count: int
    minOffset: int
    maxOffset: int


def partitions_json(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """[{"topic", "partition"}], sorted so that two runs print the same line for the same set."""
    return [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(partitions)]


def consumed_by_partition(records: Sequence[ConsumerRecord], room: int | None
                          ) -> list[tuple[RecordSetSummary, list[ConsumerRecord]]]:
    """One poll's records per partition, keeping at most `room` of them in all (None: all).

    Partitions come in the order their first record does. When the limit cuts a poll
    short, only the records the tool counts as consumed are summarized (and committed),
    which is what lets a checker match summaries against commits.
    """
    by_partition: dict[tuple[str, int], list[ConsumerRecord]] = {}
    for record in records:
        by_partition.setdefault((record.topic, record.partition), []).append(record)
    out = []
    for (topic, partition), taken in by_partition.items():
        if room is not None:
            taken = taken[:max(0, room)]
        if not taken:
            continue
        out.append((RecordSetSummary(topic, partition, len(taken), taken[0].offset, taken[-1].offset), taken))
        if room is not None:
            room -= len(taken)
            if room <= 0:
                break
    return out


class VerifiableConsumer:
    """Consumes `topic` in a group and prints every event a system test needs to check it."""

    def __init__(self, consumer: Any, topic: str, out: TextIO, *, max_messages: int = -1,
                 use_auto_commit: bool = False, use_async_commit: bool = False, verbose: bool = False) -> None:
        self.consumer, self.topic, self.out = consumer, topic, out
        self.max_messages = max_messages
        self.use_auto_commit, self.use_async_commit, self.verbose = use_auto_commit, use_async_commit, verbose
        self.consumed = 0
        self.print_json = JsonEvents(out)
        self._stop_requested = False
        self.shutdown = threading.Event()

    # -- output --------------------------------------------------------------------------------


    # -- the rebalance listener and the commit callback ----------------------------------------

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.print_json("partitions_assigned", partitions=partitions_json(assigned))

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.print_json("partitions_revoked", partitions=partitions_json(revoked))

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        # Java's default onPartitionsLost is onPartitionsRevoked; the tool does not override it.
        self.on_partitions_revoked(lost)

    def on_commit_complete(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                           error: BaseException | None) -> None:
        committed = [{"topic": tp.topic, "partition": tp.partition, "offset": _offset(om)}
                     for tp, om in offsets.items()]
        fields: dict[str, Any] = {"offsets": committed}
        if error is not None:
            # Java leaves "error" out when it is null; its getMessage() may itself be null.
            fields["error"] = str(error) or None
        self.print_json("offsets_committed", **fields, success=error is None)

    # -- the loop ------------------------------------------------------------------------------

    def has_limit(self) -> bool:
        return self.max_messages >= 0

    def finished(self) -> bool:
        return self.has_limit() and self.consumed >= self.max_messages

    def on_records(self, records: Sequence[ConsumerRecord]) -> dict[TopicPartition, OffsetAndMetadata]:
        """Print what one poll delivered; returns the offsets to commit (one past each last record)."""
        room = self.max_messages - self.consumed if self.has_limit() else None
        consumed = consumed_by_partition(records, room)
        for summary, taken in consumed:
            if self.verbose:
                for record in taken:
                    self.print_json("record_data", key=record.key, value=record.value, topic=record.topic,
                                    partition=record.partition, offset=record.offset)
            self.consumed += summary.count
        self.print_json("records_consumed", count=len(records), partitions=[asdict(s) for s, _ in consumed])
        return {TopicPartition(s.topic, s.partition): OffsetAndMetadata(s.maxOffset + 1) for s, _ in consumed}

    def commit_sync(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        try:
            self.consumer.commit_sync(offsets)
        except WakeupError:
            # Woken up to stop: the records are printed as consumed, so their commit is
            # still made (and reported) before the loop ends.
            self.commit_sync(offsets)
            raise
        except Exception as error:
            self.on_commit_complete(offsets, error)
        else:
            self.on_commit_complete(offsets, None)

    def run(self) -> None:
        try:
            self.print_json("startup_complete")
            self.consumer.subscribe([self.topic], listener=self)
            while not self.finished():
                records = self.consumer.poll(_POLL_SECONDS)
                if not records:
                    continue
                offsets = self.on_records(records)
                if not self.use_auto_commit:
                    if self.use_async_commit:
                        self.consumer.commit_async(offsets, self.on_commit_complete)
                    else:
                        self.commit_sync(offsets)
        except WakeupError:
            log.debug("Woken up because the consumer is shutting down")
        except Exception:
            # Errors go to the log (stderr), never stdout, which holds only JSON events.
            log.error("Error during processing, terminating consumer process", exc_info=True)
        finally:
            try:
                self.consumer.close()
            except Exception:
                # A stop request that lands after the loop ended can still wake close() up.
                log.error("Error while closing the consumer", exc_info=True)
            finally:
                self.print_json("shutdown_complete")
                self.shutdown.set()

    def stop(self) -> None:
        """Ask the loop to end (signal handlers call this; only the first request counts)."""
        if not self._stop_requested:
            self._stop_requested = True
            self.consumer.wakeup()


def _offset(value: Any) -> int:
    return value.offset if isinstance(value, OffsetAndMetadata) else int(value)


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="verifiable-consumer",
        description="This tool consumes messages from a specific topic and emits consumer events (e.g. group "
                    "rebalances, received messages, and offsets committed) as JSON objects to STDOUT.")
    group = parser.add_argument_group("Connection Group", "Group of arguments for connection to brokers")
    connection = group.add_mutually_exclusive_group(required=True)
    connection.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="REQUIRED unless --broker-list(deprecated) is specified. The server(s) to "
                                 "connect to. Comma-separated list of Kafka brokers in the form "
                                 "HOST1:PORT1,HOST2:PORT2,...")
    connection.add_argument("--broker-list", dest="broker_list", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is "
                                 "specified.  Comma-separated list of Kafka brokers in the form "
                                 "HOST1:PORT1,HOST2:PORT2,...")
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="Consumes messages from this topic.")
    parser.add_argument("--group-id", dest="group_id", required=True, metavar="GROUP_ID",
                        help="The groupId shared among members of the consumer group")
    parser.add_argument("--group-instance-id", dest="group_instance_id", metavar="GROUP_INSTANCE_ID",
                        help="A unique identifier of the consumer instance")
    parser.add_argument("--max-messages", dest="max_messages", type=INTEGER, default=-1, metavar="MAX-MESSAGES",
                        help="Consume this many messages. If -1 (the default), the consumer will consume until "
                             "the process is killed externally")
    parser.add_argument("--session-timeout", dest="session_timeout", type=INTEGER, default=30000, metavar="TIMEOUT_MS",
                        help="Set the consumer's session timeout")
    parser.add_argument("--verbose", action="store_true", help="Enable to log individual consumed records")
    parser.add_argument("--enable-autocommit", dest="use_auto_commit", action="store_true",
                        help="Enable offset auto-commit on consumer")
    parser.add_argument("--reset-policy", dest="reset_policy", default="earliest",
                        help="Set reset policy (must be either 'earliest', 'latest', or 'none'")
    parser.add_argument("--assignment-strategy", dest="assignment_strategy", default=RANGE_ASSIGNOR,
                        help="Set assignment strategy (e.g. org.apache.kafka.clients.consumer.RoundRobinAssignor)")
    parser.add_argument("--consumer.config", dest="consumer_config", metavar="CONFIG_FILE",
                        help="Consumer config properties file (config options shared with command line "
                             "parameters will be overridden).")
    return parser


def consumer_config(args: argparse.Namespace) -> dict[str, str]:
    """The consumer's configs: the --consumer.config file, then the command line on top."""
    config: dict[str, str] = {}
    if args.consumer_config:
        config.update(load_properties(args.consumer_config))
    config["partition.assignment.strategy"] = args.assignment_strategy
    config["group.id"] = args.group_id
    if args.group_instance_id is not None:
        config["group.instance.id"] = args.group_instance_id
    config["bootstrap.servers"] = args.bootstrap_server or args.broker_list
    config["enable.auto.commit"] = "true" if args.use_auto_commit else "false"
    config["auto.offset.reset"] = args.reset_policy
    config["session.timeout.ms"] = str(args.session_timeout)
    # The tool reads strings whatever the file says, as the Java tool passes its own deserializers.
    config["key.deserializer"] = STRING_DESERIALIZER
    config["value.deserializer"] = STRING_DESERIALIZER
    return config


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = _parser()
    args_list = sys.argv[1:] if argv is None else list(argv)
    if not args_list:
        parser.print_help(out)
        return 0
    args = parser.parse_args(args_list)
    try:
        config = consumer_config(args)
    except OSError as error:
        parser.error(str(error))
    tool = VerifiableConsumer(KafkaConsumer(config), args.topic, out, max_messages=args.max_messages,
                              use_auto_commit=args.use_auto_commit, verbose=args.verbose)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: tool.stop())
    tool.run()
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    run_tool(main)
