"""kafka-topics' command line, as Kafka 2.8's TopicCommandOptions reads and checks it.

jopt-simple's habits are kept because scripts rely on them: long options with one or
two dashes, `--name=value`, unique abbreviations, values converted only when a command
asks for them (so a bad --partitions is reported as a command error), and the usage
errors of CommandLineUtils, checked in Kafka's order so the same mistake gets the same
message. Values are parsed here too, with Kafka's messages for bad ones; a failure is a
JavaError naming the Java exception Kafka would have thrown.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TextIO

from kafkalike.cli import joptions
from kafkalike.cli.joptions import (ILLEGAL_ARGUMENT, Dialect, JavaError, Option, ParsedArgs, UsageError,
                                    VersionRequested)
from kafkalike.common.topics import INTERNAL_TOPICS, include_list_regex
from kafkalike.storage.config import CONFIG_KEYS, KEYS_BY_NAME, LogConfig

# -- Java's exceptions, as the tool reports them ---------------------------------------

ADMIN_OPERATION = "kafka.admin.AdminOperationException"
KAFKA_ERRORS = "org.apache.kafka.common.errors."
CONFIG_EXCEPTION = "org.apache.kafka.common.config.ConfigException"


# -- options, parsed by joptions the way jopt-simple parses them ---------------------------

# TopicCommandOptions calls parser.parse directly: jopt's exceptions escape (the JVM prints
# them), values are converted when used, `--flag=x` is refused, valueOf wants one value.
DIALECT = Dialect(error=JavaError, convert_at_parse=False, flag_values=False, single_value=True,
                  padded_help=True)

_NL = os.linesep
OPTIONS = {o.name: o for o in (
    Option("bootstrap-server", "REQUIRED: The Kafka server to connect to. In case of providing this, a direct "
           "Zookeeper connection won't be required.", "server to connect to"),
    Option("command-config", "Property file containing configs to be passed to Admin Client. This is used only "
           "with --bootstrap-server option for describing and altering broker configs.",
           "command config property file"),
    Option("zookeeper", "DEPRECATED, The connection string for the zookeeper connection in the form host:port. "
           "Multiple hosts can be given to allow fail-over.", "hosts"),
    Option("list", "List all available topics."),
    Option("create", "Create a new topic."),
    Option("delete", "Delete a topic"),
    Option("alter", "Alter the number of partitions, replica assignment, and/or configuration for the topic."),
    Option("describe", "List details for the given topics."),
    Option("topic", "The topic to create, alter, describe or delete. It also accepts a regular expression, "
           "except for --create option. Put topic name in double quotes and use the '\\' prefix to escape "
           "regular expression symbols; e.g. \"test\\.topic\".", "topic"),
    Option("config", "A topic configuration override for the topic being created or altered. The following is "
           "a list of valid configurations: " + _NL + _NL.join("\t" + n for n in sorted(k.name for k in CONFIG_KEYS))
           + _NL + "See the Kafka documentation for full details on the topic configs. It is supported only in "
           "combination with --create if --bootstrap-server option is used (the kafka-configs CLI supports "
           "altering topic configs with a --bootstrap-server option).", "name=value"),
    Option("delete-config", "A topic configuration override to be removed for an existing topic (see the list of "
           "configurations under the --config option). Not supported with the --bootstrap-server option.", "name"),
    Option("partitions", "The number of partitions for the topic being created or altered (WARNING: If "
           "partitions are increased for a topic that has a key, the partition logic or ordering of the messages "
           "will be affected). If not supplied for create, defaults to the cluster default.", "# of partitions",
           "Integer"),
    Option("replication-factor", "The replication factor for each partition in the topic being created. If not "
           "supplied, defaults to the cluster default.", "replication factor", "Integer"),
    Option("replica-assignment", "A list of manual partition-to-broker assignments for the topic being created "
           "or altered.", "broker_id_for_part1_replica1 : broker_id_for_part1_replica2 , "
           "broker_id_for_part2_replica1 : broker_id_for_part2_replica2 , ..."),
    Option("under-replicated-partitions", "if set when describing topics, only show under replicated partitions"),
    Option("unavailable-partitions", "if set when describing topics, only show partitions whose leader is not "
           "available"),
    Option("under-min-isr-partitions", "if set when describing topics, only show partitions whose isr count is "
           "less than the configured minimum. Not supported with the --zookeeper option."),
    Option("at-min-isr-partitions", "if set when describing topics, only show partitions whose isr count is "
           "equal to the configured minimum. Not supported with the --zookeeper option."),
    Option("topics-with-overrides", "if set when describing topics, only show topics that have overridden "
           "configs"),
    Option("if-exists", "if set when altering or deleting or describing topics, the action will only execute if "
           "the topic exists."),
    Option("if-not-exists", "if set when creating topics, the action will only execute if the topic does not "
           "already exist."),
    Option("disable-rack-aware", "Disable rack aware replica assignment"),
    Option("force", "Suppress console prompts"),
    Option("exclude-internal", "exclude internal topics when running list or describe command. The internal "
           "topics will be listed by default"),
    Option("help", "Print usage information."),
    Option("version", "Display Kafka version."),
)}
ACTIONS = ("create", "list", "alter", "describe", "delete")
REPORTS = ("under-replicated-partitions", "under-min-isr-partitions", "at-min-isr-partitions",
           "unavailable-partitions")


def parse_args(argv: Sequence[str]) -> ParsedArgs:
    """Long options with one or two dashes, `--name=value`, abbreviations; the rest is ignored."""
    return joptions.parse_args(OPTIONS, argv, DIALECT)


def format_help() -> str:
    """The option table jopt-simple's BuiltinHelpFormatter prints (80 columns)."""
    return joptions.format_help(OPTIONS, DIALECT)


def check_args(args: ParsedArgs) -> None:
    """TopicCommandOptions.checkArgs of Kafka 2.8, check for check, in its order."""
    if not args.argv:
        raise UsageError("Create, delete, describe, or change a topic.")
    if args.has("help"):
        raise UsageError("This tool helps to create, delete, describe, or change a topic.")
    if args.has("version"):
        raise VersionRequested()
    if sum(args.has(a) for a in ACTIONS) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    if args.has("bootstrap-server") == args.has("zookeeper"):
        raise JavaError(ILLEGAL_ARGUMENT, "Only one of --bootstrap-server or --zookeeper must be specified")
    if args.has("describe") and args.has("if-exists"):
        _require(args, "topic")
    if not args.has("list") and not args.has("describe"):
        _require(args, "topic")
    if args.has("create") and not args.has("replica-assignment") and args.has("zookeeper"):
        _require(args, "partitions", "replication-factor")
    if args.has("bootstrap-server") and args.has("alter"):
        if args.has("config"):
            raise UsageError('Option combination "[bootstrap-server],[config]" can\'t be used with option '
                             '"[alter]" (the kafka-configs CLI supports altering topic configs with a '
                             '--bootstrap-server option)')
        _require(args, "partitions")
    actions = set(ACTIONS)
    reports = set(REPORTS)
    _forbid(args, "config", actions - {"alter", "create"})
    _forbid(args, "delete-config", actions - {"alter"} | {"bootstrap-server"})
    _forbid(args, "partitions", actions - {"alter", "create"})
    _forbid(args, "replication-factor", actions - {"create"})
    _forbid(args, "replica-assignment", actions - {"create", "alter"})
    if args.has("create"):
        _forbid(args, "replica-assignment", {"partitions", "replication-factor"})
    for report in REPORTS:
        extra = {"zookeeper"} if "min-isr" in report else set()
        _forbid(args, report, actions - {"describe"} | reports - {report} | {"topics-with-overrides"} | extra)
    _forbid(args, "topics-with-overrides", actions - {"describe"} | reports)
    _forbid(args, "if-exists", actions - {"alter", "delete", "describe"})
    _forbid(args, "if-not-exists", actions - {"create"})
    _forbid(args, "exclude-internal", actions - {"list", "describe"})


def _require(args: ParsedArgs, *names: str) -> None:
    for name in names:
        if not args.has(name):
            raise UsageError(f'Missing required argument "{OPTIONS[name]}"')


def _forbid(args: ParsedArgs, used: str, invalid: Iterable[str]) -> None:
    if args.has(used):
        for other in sorted(invalid):
            if args.has(other):
                raise UsageError(f'Option "{OPTIONS[used]}" can\'t be used with option "{OPTIONS[other]}"')


# -- values of the options ---------------------------------------------------------------


def java_int(text: str) -> int | None:
    """Integer.parseInt: optional sign, digits, and within 32 bits."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -2**31 <= value < 2**31 else None


def _java_split(text: str, pattern: str) -> list[str]:
    """String.split: trailing empty strings are dropped, unless nothing matched at all."""
    parts = re.split(pattern, text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """"0:1,1:2" -> {0: [0, 1], 1: [1, 2]}: one entry per partition, replicas separated by ':'."""
    assignment: dict[int, list[int]] = {}
    for partition, entry in enumerate(_java_split(text, ",")):
        brokers = []
        for raw in _java_split(entry, ":"):
            number = java_int(raw.strip())
            if number is None:
                raise JavaError("java.lang.NumberFormatException", f'For input string: "{raw.strip()}"')
            brokers.append(number)
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise JavaError("kafka.common.AdminCommandFailedException",
                            "Partition replica lists may not contain duplicate entries: "
                            + ",".join(map(str, duplicates)))
        assignment[partition] = brokers
        if len(brokers) != len(assignment[0]):
            # Kafka formats the Scala Array[Int] itself here, so Java's "[I@<hash>" it is.
            raise JavaError(ADMIN_OPERATION, f"Partition {partition} has different replication factor: "
                                             f"[I@{id(brokers) & 0xFFFFFFF:x}")
    return assignment


def parse_topic_configs(args: ParsedArgs, out: TextIO) -> dict[str, str]:
    """--config k=v values, validated as topic configs (LogConfig.validate)."""
    pairs = [_java_split(raw, r"\s*=\s*") for raw in args.all("config")]
    if not all(len(pair) == 2 for pair in pairs):
        raise JavaError(ILLEGAL_ARGUMENT, 'requirement failed: Invalid topic config: all configs to be added '
                                          'must be in the format "key=val".')
    configs = {k.strip(): v.strip() for k, v in pairs}
    LogConfig.from_props(configs)
    if "message.format.version" in configs:
        out.write(f"WARNING: The configuration message.format.version={configs['message.format.version']} is "
                  "specified. This configuration will be ignored if the version is newer than the "
                  "inter.broker.protocol.version specified in the broker.\n")
    return configs


def parse_configs_to_delete(args: ParsedArgs) -> list[str]:
    """--delete-config names; only the names are checked (LogConfig.validateNames)."""
    names = [n.strip() for n in args.all("delete-config")]
    for name in names:
        if name not in KEYS_BY_NAME:
            raise JavaError(KAFKA_ERRORS + "InvalidConfigurationException", f"Unknown topic config name: {name}")
    return names


@dataclass(frozen=True)
class TopicRequest:
    """The options of a create or alter, converted and checked (Kafka's CommandTopicPartition).

    Built in Kafka's order, so that of two bad options the same one is reported.
    """

    name: str
    partitions: int | None
    replication_factor: int | None
    replica_assignment: dict[int, list[int]] | None
    configs_to_add: dict[str, str]
    configs_to_delete: list[str]
    rack_aware: bool
    if_not_exists: bool

    @classmethod
    def from_args(cls, args: ParsedArgs, out: TextIO) -> TopicRequest:
        name = args.value("topic")
        partitions = args.number("partitions")
        replication_factor = args.number("replication-factor")
        text = args.value("replica-assignment")
        assignment = parse_replica_assignment(text) if text else None
        return cls(name, partitions, replication_factor, assignment, parse_topic_configs(args, out),
                   parse_configs_to_delete(args), not args.has("disable-rack-aware"), args.has("if-not-exists"))


def topic_filter(include: str | None, exclude_internal: bool) -> Callable[[str], bool]:
    """Kafka's IncludeList: commas mean '|', quotes and spaces are dropped, the whole name must match."""
    if include is None:
        return lambda topic: not (exclude_internal and topic in INTERNAL_TOPICS)
    regex = include_list_regex(include)
    try:
        pattern = re.compile(regex)
    except re.error:
        raise JavaError("java.lang.RuntimeException", f"{regex} is an invalid regex.") from None
    return lambda topic: bool(pattern.fullmatch(topic)) and not (exclude_internal and topic in INTERNAL_TOPICS)


def has_collision_chars(topic: str) -> bool:
    return "." in topic or "_" in topic


def ensure_topic_exists(found: Sequence[str], requested: str | None, require: bool) -> None:
    if requested is not None and require and not found:
        raise JavaError(ILLEGAL_ARGUMENT, f"Topic '{requested}' does not exist as expected")
