"""kafka-topics: create, list, describe, alter and delete topics, as Kafka 2.8's TopicCommand.

People script against this tool's output, so it is Kafka 2.8's to the byte: the same
option checks and usage errors, `Created topic foo.`, tab-separated describe lines
(with TopicId, since 2.8), `Error while executing topic command : ...` plus the ERROR
log line on stderr, and exit status 1 on any failure.

Two back ends, as in 2.8: --bootstrap-server goes through our AdminClient (here), the
deprecated --zookeeper writes znodes itself (topics_zookeeper). The command line is
read and checked in topics_options, describe lines are made in topics_describe.
"""
from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Mapping, Sequence, TextIO

from kafkalike.cli import joptions
from kafkalike.common.versions import KAFKA_COMMIT_ID, KAFKA_VERSION
from kafkalike.properties import load as load_properties
from kafkalike.cli.joptions import JavaError
from kafkalike.cli.topics_describe import (
    DescribeFilter,
    PartitionView,
    TopicView,
    admin_describe_order,
    config_order,
    format_partition,
    format_topic,
)
from kafkalike.cli.topics_options import (
    CONFIG_EXCEPTION,
    ILLEGAL_ARGUMENT,
    KAFKA_ERRORS,
    ParsedArgs,
    TopicRequest,
    UsageError,
    VersionRequested,
    check_args,
    ensure_topic_exists,
    format_help,
    has_collision_chars,
    java_int,
    parse_args,
    topic_filter,
)
from kafkalike.cli.topics_zookeeper import ZookeeperTopicService
from kafkalike.client.admin import (
    AdminClient,
    ConfigResource,
    KafkaAdminError,
    NewPartitions,
    NewTopic,
    PartitionReassignment,
    ResourceType,
)
from kafkalike.protocol.errors import ErrorCode
from kafkalike.storage.errors import ConfigError
from kafkalike.cli.tool_main import run_tool

LOGGER_NAME = "kafka.admin.TopicCommand$"


def _java_view(error: BaseException) -> tuple[str, str | None]:
    if isinstance(error, JavaError):
        return error.java_class, error.message
    if isinstance(error, KafkaAdminError):
        return error.java_class, error.message
    if isinstance(error, ConfigError):
        text = str(error)
        if text.startswith("Unknown topic config name"):
            return KAFKA_ERRORS + "InvalidConfigurationException", text
        return CONFIG_EXCEPTION, text
    return f"{type(error).__module__}.{type(error).__qualname__}", str(error) or None


def _stack_trace(error: BaseException) -> str:
    """Utils.stackTrace: the exception line then one `at` line per frame, innermost first."""
    java_class, message = _java_view(error)
    lines = [java_class if message is None else f"{java_class}: {message}"]
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        module = os.path.splitext(os.path.basename(frame.filename))[0]
        lines.append(f"\tat {module}.{frame.name}({os.path.basename(frame.filename)}:{frame.lineno})")
    cause = getattr(error, "cause", None)
    if cause is not None:
        lines.append("Caused by: " + _stack_trace(cause).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _log_error(err: TextIO, text: str) -> None:
    """One log4j line in the tools' layout: [%d] %p %m (%c)%n."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
    err.write(f"[{stamp}] ERROR {text} ({LOGGER_NAME})\n")


# -- the AdminClient back end ------------------------------------------------------------


class AdminClientTopicService:
    """TopicCommand's AdminClientTopicService, over kafkalike's AdminClient."""

    def __init__(self, config: Mapping[str, str], out: TextIO) -> None:
        self.admin = AdminClient(config)
        self.out = out

    def close(self) -> None:
        self.admin.close()

    def get_topics(self, include: str | None, exclude_internal: bool = False) -> list[str]:
        names = sorted(t.name for t in self.admin.list_topics(include_internal=not exclude_internal))
        allowed = topic_filter(include, exclude_internal)
        return [t for t in names if allowed(t)]

    def create_topic(self, request: TopicRequest) -> None:
        partitions, replication_factor = request.partitions, request.replication_factor
        if replication_factor is not None and not 1 <= replication_factor <= 32767:
            raise JavaError(ILLEGAL_ARGUMENT, "The replication factor must be between 1 and 32767 inclusive")
        if partitions is not None and partitions < 1:
            raise JavaError(ILLEGAL_ARGUMENT, "The partitions must be greater than 0")
        new_topic = NewTopic(request.name, -1 if partitions is None else partitions,
                             -1 if replication_factor is None else replication_factor,
                             request.replica_assignment, request.configs_to_add)
        try:
            self.admin.create_topics([new_topic])
        except KafkaAdminError as error:
            if error.code == ErrorCode.TOPIC_ALREADY_EXISTS and request.if_not_exists:
                return
            raise
        self.out.write(f"Created topic {request.name}.\n")

    def list_topics(self, args: ParsedArgs) -> None:
        self.out.write("\n".join(self.get_topics(args.value("topic"), args.has("exclude-internal"))) + "\n")

    def alter_topic(self, args: ParsedArgs) -> None:
        request = TopicRequest.from_args(args, self.out)
        assignment, count = request.replica_assignment, request.partitions
        topics = self.get_topics(args.value("topic"), args.has("exclude-internal"))
        ensure_topic_exists(topics, args.value("topic"), not args.has("if-exists"))
        if not topics:
            return
        increases = {}
        existing = self.admin.describe_topics(topics) if assignment is not None else {}
        for topic in topics:
            if assignment is not None:
                start = len(existing[topic].partitions)
                added = [replicas for p, replicas in assignment.items() if p >= start]
                increases[topic] = NewPartitions(count, added)
            else:
                increases[topic] = NewPartitions(count)
        self.admin.create_partitions(increases)

    def describe_topic(self, args: ParsedArgs) -> None:
        topics = self.get_topics(args.value("topic"), args.has("exclude-internal"))
        ensure_topic_exists(topics, args.value("topic"), not args.has("if-exists"))
        if not topics:
            return
        configs = self.admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics])
        live = {b.id for b in self.admin.describe_cluster().brokers}
        descriptions = self.admin.describe_topics(topics)
        reassignments = self._reassignments(
            [(t, p.partition) for t in topics for p in descriptions[t].partitions])
        wanted = DescribeFilter.from_args(args)
        for topic in admin_describe_order(topics):
            description = descriptions[topic]
            entries = {e.name: e for e in configs[ConfigResource(ResourceType.TOPIC, topic)]}
            non_default = [(n, entries[n].value) for n in config_order(list(entries)) if not entries[n].is_default]
            min_isr_entry = entries.get("min.insync.replicas")
            min_isr = java_int(min_isr_entry.value or "") if min_isr_entry is not None else None
            views = [PartitionView(topic, p.partition, p.leader, p.replicas, p.isr,
                                   reassignments.get((topic, p.partition)), False, min_isr)
                     for p in description.partitions]
            if wanted.shows_topic(bool(non_default)) and views:
                self.out.write(format_topic(TopicView(topic, description.topic_id, len(views),
                                                      views[0].replication_factor, tuple(non_default))) + "\n")
            if wanted.describe_partitions:
                for view in views:
                    if wanted.shows_partition(view, live):
                        self.out.write(format_partition(view) + "\n")

    def _reassignments(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], PartitionReassignment]:
        """Reassignments in flight; a broker that cannot tell (old, or not authorised) has none."""
        try:
            return self.admin.list_partition_reassignments(partitions)
        except KafkaAdminError as error:
            if error.code in (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.CLUSTER_AUTHORIZATION_FAILED):
                return {}
            raise

    def delete_topic(self, args: ParsedArgs) -> None:
        topics = self.get_topics(args.value("topic"), args.has("exclude-internal"))
        ensure_topic_exists(topics, args.value("topic"), not args.has("if-exists"))
        self.admin.delete_topics(topics)


# -- main ----------------------------------------------------------------------------------


def _open_service(args: ParsedArgs, out: TextIO):
    zookeeper = args.value("zookeeper")
    if zookeeper is not None:
        return ZookeeperTopicService(zookeeper, out)
    config: dict[str, str] = {}
    command_config = args.value("command-config")
    if command_config is not None:
        try:
            config.update(load_properties(command_config))
        except OSError as error:
            raise JavaError("java.io.FileNotFoundException",
                            f"{command_config} ({error.strerror or error})") from None
    config["bootstrap.servers"] = args.value("bootstrap-server")
    try:
        return AdminClientTopicService(config, out)
    except ValueError as error:
        raise JavaError("org.apache.kafka.common.KafkaException", "Failed to create new KafkaAdminClient",
                        cause=JavaError(CONFIG_EXCEPTION, str(error))) from None


def _create(service, args: ParsedArgs, out: TextIO) -> None:
    request = TopicRequest.from_args(args, out)
    if has_collision_chars(request.name):
        out.write("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                  "could collide. To avoid issues it is best to use either, but not both.\n")
    service.create_topic(request)


def run(args: ParsedArgs, out: TextIO, err: TextIO) -> int:
    """Everything after the option checks: Kafka's main body, with its error handling."""
    with joptions.tools_logging(err, joptions.ADMIN_LOGGERS):
        return _run(args, out, err)


def _run(args: ParsedArgs, out: TextIO, err: TextIO) -> int:
    service = _open_service(args, out)
    try:
        if args.has("create"):
            _create(service, args, out)
        elif args.has("alter"):
            service.alter_topic(args)
        elif args.has("list"):
            service.list_topics(args)
        elif args.has("describe"):
            service.describe_topic(args)
        elif args.has("delete"):
            service.delete_topic(args)
        return 0
    except Exception as error:  # every failure ends as Kafka's one-line report and exit 1
        _, message = _java_view(error)
        out.write(f"Error while executing topic command : {'null' if message is None else message}\n")
        out.flush()
        _log_error(err, _stack_trace(error))
        return 1
    finally:
        service.close()


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        check_args(args)
        return run(args, out, err)
    except VersionRequested:
        out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
        return 0
    except UsageError as error:
        err.write(f"{error}\n{format_help()}")
        return 1
    except JavaError as error:  # thrown before Kafka's try block: the JVM prints it and exits 1
        err.write(f'Exception in thread "main" {_stack_trace(error)}')
        return 1
    finally:
        out.flush()


if __name__ == "__main__":
    run_tool(main)
