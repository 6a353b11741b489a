"""kafka-consumer-groups' command line, as Kafka 2.8's ConsumerGroupCommandOptions reads and checks it.

The parsing follows jopt-simple as kafka-topics does (one or two dashes, `--name=value`,
unique abbreviations, values converted only when used), plus what this tool adds:
--state takes an optional value, and --members/--verbose/--offsets (and --state) are
only available next to --describe (or --list), which jopt enforces while parsing,
before Kafka's own checks run. checkArgs is Kafka's, check for check and in its order,
quirks included: it runs before --help is looked at, so `--help` alone is answered
with the missing --bootstrap-server.
"""
from __future__ import annotations

import os
import re
from typing import Sequence, TextIO

from kafkalike.cli import joptions
from kafkalike.cli.joptions import Dialect, JavaError, Option, ParsedArgs, UsageError

NL = os.linesep

HELP_MESSAGE = ("This tool helps to list all consumer groups, describe a consumer group, delete consumer group "
                "info, or reset consumer group offsets.")
ACTIONS_MESSAGE = ("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                   "--delete-offsets")
NO_EXECUTE_WARNING = ("WARN: No action will be performed as the --execute option is missing.In a future major "
                      "release, the default behavior of this command will be to prompt the user before executing "
                      "the reset rather than doing a dry run. You should add the --dry-run option explicitly if you "
                      "are scripting this command and want to keep the current default behavior without prompting.")


# ConsumerGroupCommandOptions calls parser.parse directly, as kafka-topics does; what differs
# is an optional argument's look-ahead (only a recognized option stops it), single values
# asked for with valueOf, an unpadded help whose descriptions keep their line breaks.
DIALECT = Dialect(error=JavaError, convert_at_parse=False, flag_values=False, optional_arg_yields_to="option",
                  single_value=True, help_paragraphs=True)


OPTIONS = {o.name: o for o in (
    Option("bootstrap-server", "REQUIRED: The server(s) to connect to.", "server to connect to"),
    Option("group", "The consumer group we wish to act on.", "consumer group"),
    Option("topic", "The topic whose consumer group information should be deleted or topic whose should be "
           "included in the reset offset process. In `reset-offsets` case, partitions can be specified using "
           "this format: `topic1:0,1,2`, where 0,1,2 are the partition to be included in the process. "
           "Reset-offsets also supports multiple topic inputs.", "topic"),
    Option("all-topics", "Consider all topics assigned to a group in the `reset-offsets` process."),
    Option("list", "List all consumer groups."),
    Option("describe", "Describe consumer group and list offset lag (number of messages not yet processed) "
           "related to given group."),
    Option("all-groups", "Apply to all consumer groups."),
    Option("delete", "Pass in groups to delete topic partition offsets and ownership information over the entire "
           "consumer group. For instance --group g1 --group g2"),
    Option("timeout", "The timeout that can be set for some use cases. For example, it can be used when "
           "describing the group to specify the maximum amount of time in milliseconds to wait before the group "
           "stabilizes (when the group is just created, or is going through some changes).", "timeout (ms)",
           "Long", default="5000"),
    Option("command-config", "Property file containing configs to be passed to Admin Client and Consumer.",
           "command config property file"),
    Option("reset-offsets", "Reset offsets of consumer group. Supports one consumer group at the time, and "
           "instances should be inactive" + NL + "Has 2 execution options: --dry-run (the default) to plan which "
           "offsets to reset, and --execute to update the offsets. Additionally, the --export option is used to "
           "export the results to a CSV format." + NL + "You must choose one of the following reset "
           "specifications: --to-datetime, --by-period, --to-earliest, --to-latest, --shift-by, --from-file, "
           "--to-current." + NL + "To define the scope use --all-topics or --topic. One scope must be specified "
           "unless you use '--from-file'."),
    Option("delete-offsets", "Delete offsets of consumer group. Supports one consumer group at the time, and "
           "multiple topics."),
    Option("dry-run", "Only show results without executing changes on Consumer Groups. Supported operations: "
           "reset-offsets."),
    Option("execute", "Execute operation. Supported operations: reset-offsets."),
    Option("export", "Export operation execution to a CSV file. Supported operations: reset-offsets."),
    Option("to-offset", "Reset offsets to a specific offset.", "offset", "Long"),
    Option("from-file", "Reset offsets to values defined in CSV file.", "path to CSV file"),
    Option("to-datetime", "Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'", "datetime"),
    Option("by-duration", "Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'",
           "duration"),
    Option("to-earliest", "Reset offsets to earliest offset."),
    Option("to-latest", "Reset offsets to latest offset."),
    Option("to-current", "Reset offsets to current offset."),
    Option("shift-by", "Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.",
           "number-of-offsets", "Long"),
    Option("members", "Describe members of the group. This option may be used with '--describe' and "
           "'--bootstrap-server' options only." + NL + "Example: --bootstrap-server localhost:9092 --describe "
           "--group group1 --members", available_if=("describe",)),
    Option("verbose", "Provide additional information, if any, when describing the group. This option may be "
           "used with '--offsets'/'--members'/'--state' and '--bootstrap-server' options only." + NL + "Example: "
           "--bootstrap-server localhost:9092 --describe --group group1 --members --verbose",
           available_if=("describe",)),
    Option("offsets", "Describe the group and list all topic partitions in the group along with their offset lag. "
           "This is the default sub-action of and may be used with '--describe' and '--bootstrap-server' options "
           "only." + NL + "Example: --bootstrap-server localhost:9092 --describe --group group1 --offsets",
           available_if=("describe",)),
    Option("state", "When specified with '--describe', includes the state of the group." + NL + "Example: "
           "--bootstrap-server localhost:9092 --describe --group group1 --state" + NL + "When specified with "
           "'--list', it displays the state of all groups. It can also be used to list groups with specific "
           "states." + NL + "Example: --bootstrap-server localhost:9092 --list --state stable,empty" + NL +
           "This option may be used with '--describe', '--list' and '--bootstrap-server' options only.", "",
           optional_arg=True, available_if=("describe", "list")),
    Option("help", "Print usage information."),
    Option("version", "Display Kafka version."),
)}

GROUP_SCOPE = ("group", "all-groups")
GROUP_LEVEL = ("list", "describe", "delete", "reset-offsets")
ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
RESET_SCENARIOS = ("to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current",
                   "from-file")
DESCRIBE_VIEWS = ("members", "offsets", "state")


def java_long(text: str) -> int | None:
    """Long.valueOf: an optional sign, decimal digits, and within 64 bits."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -2**63 <= value < 2**63 else None


def parse_args(argv: Sequence[str]) -> ParsedArgs:
    """Read the command line; jopt's parse errors (and unavailable options) raise JavaError."""
    return joptions.parse_args(OPTIONS, argv, DIALECT)


def format_help() -> str:
    """The option table jopt-simple's BuiltinHelpFormatter prints (80 columns)."""
    return joptions.format_help(OPTIONS, DIALECT)


def _names(names: Sequence[str]) -> str:
    return ", ".join(str(OPTIONS[n]) for n in names)


def check_args(args: ParsedArgs, err: TextIO) -> None:
    """ConsumerGroupCommandOptions.checkArgs of Kafka 2.8, in its order; the reset WARN goes to err."""
    if not args.has("bootstrap-server"):
        raise UsageError(f'Missing required argument "{OPTIONS["bootstrap-server"]}"')
    if args.has("describe"):
        if not args.has("group") and not args.has("all-groups"):
            raise UsageError(f"Option {OPTIONS['describe']} takes one of these options: {_names(GROUP_SCOPE)}")
        if sum(args.has(v) for v in DESCRIBE_VIEWS) > 1:
            raise UsageError(f"Option {OPTIONS['describe']} takes at most one of these options: "
                             f"{_names(DESCRIBE_VIEWS)}")
        if args.has("state") and args.all("state"):
            raise UsageError(f"Option {OPTIONS['describe']} does not take a value for {OPTIONS['state']}")
    if args.has("delete"):
        if not args.has("group") and not args.has("all-groups"):
            raise UsageError(f"Option {OPTIONS['delete']} takes one of these options: {_names(GROUP_SCOPE)}")
        if args.has("topic"):
            raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if args.has("delete-offsets"):
        if not args.has("group") or not args.has("topic"):
            raise UsageError(f"Option {OPTIONS['delete-offsets']} takes the following options: "
                             f"{_names(('group', 'topic'))}")
    if args.has("reset-offsets"):
        if args.has("dry-run") and args.has("execute"):
            raise UsageError(f"Option {OPTIONS['reset-offsets']} only accepts one of {OPTIONS['execute']} and "
                             f"{OPTIONS['dry-run']}")
        if not args.has("dry-run") and not args.has("execute"):
            err.write(NO_EXECUTE_WARNING + "\n")
        if not args.has("group") and not args.has("all-groups"):
            raise UsageError(f"Option {OPTIONS['reset-offsets']} takes one of these options: "
                             f"{_names(GROUP_SCOPE)}")
        for scenario in RESET_SCENARIOS:
            _forbid(args, scenario, [s for s in RESET_SCENARIOS if s != scenario])
    _forbid(args, "group", ["all-groups"])
    _forbid(args, "group", [a for a in GROUP_LEVEL if a not in ("describe", "delete", "reset-offsets")])
    _forbid(args, "topic", [a for a in GROUP_LEVEL if a not in ("delete", "reset-offsets")])


def _forbid(args: ParsedArgs, used: str, invalid: Sequence[str]) -> None:
    """CommandLineUtils.checkInvalidArgs."""
    if args.has(used):
        for other in invalid:
            if args.has(other):
                raise UsageError(f'Option "{OPTIONS[used]}" can\'t be used with option "{OPTIONS[other]}"')


def scenarios_text() -> str:
    """How Scala prints the Set of reset scenarios in the 'requires one of' message."""
    return "Set(" + _names(RESET_SCENARIOS) + ")"


# -- values of the options ---------------------------------------------------------------

_DATETIME = re.compile(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)(Z|[+-]\d{2}:\d{2}|[+-]\d{2}(?:\d{2})?)")


def parse_datetime(text: str) -> int:
    """Utils.getDateTime: 'yyyy-MM-ddTHH:mm:ss.SSS' with an optional zone (UTC without one),
    as epoch milliseconds. SimpleDateFormat is lenient, so out-of-range fields roll over."""
    parts = text.split("T")
    if len(parts) < 2:
        raise JavaError("java.text.ParseException",
                        "Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
    if not any(mark in parts[1] for mark in "+-Z"):
        text += "Z"
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise JavaError("java.text.ParseException", f'Unparseable date: "{text}"')
    year, month, day, hour, minute, second, millis = (int(g) for g in match.groups()[:7])
    zone = match.group(8)
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    days = _days_from_civil(year, month, 1) + day - 1
    ms = ((((days * 24 + hour) * 60 + minute) * 60 + second) * 1000) + millis
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset_minutes = int(digits[:2]) * 60 + (int(digits[2:]) if len(digits) > 2 else 0)
        ms -= sign * offset_minutes * 60000
    return ms


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?"
                       r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
                       re.IGNORECASE)


def parse_duration(text: str) -> int:
    """java.time.Duration.parse ('PnDTnHnMn.nS'), in milliseconds."""
    match = _DURATION.fullmatch(text)
    if match is None or match.group(3) == "T" or not any(match.group(i) for i in (2, 4, 5, 6)):
        raise JavaError("java.time.format.DateTimeParseException", "Text cannot be parsed to a Duration")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)) * 1000
    if fraction:
        millis = int((fraction + "000")[:3])
        total += -millis if (seconds or "").startswith("-") else millis
    return -total if sign == "-" else total


__all__ = ["ACTIONS", "ACTIONS_MESSAGE", "HELP_MESSAGE", "OPTIONS", "Option", "ParsedArgs", "check_args",
           "format_help", "java_long", "parse_args", "parse_datetime", "parse_duration", "scenarios_text"]
