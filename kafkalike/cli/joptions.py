"""The command line layer of the console tools, as jopt-simple and Kafka's CommandLineUtils shape it.

The one parser and help-table formatter of the tools whose Kafka counterparts read their
options with jopt-simple (kafka-console-producer, kafka-console-consumer, kafka-topics,
kafka-consumer-groups, kafka-dump-log, kafka-leader-election,
kafka-preferred-replica-election): long options with one or two dashes, `--name value` or
`--name=value`, unique abbreviations of a long name (`--from-beg`) where the tool's
Dialect allows them, non-option words ignored, `--` ends the options. Presence is kept
apart from defaults ("given" vs. "has a value"), because Kafka's checks look at
`options.has(...)` and a default must never count as given. Where the tools differ (how a
jopt error surfaces, when numbers are checked, the help table's padding, ...) a tool
passes its Dialect; the default is the console tools': a usage error is reported as
CommandLineUtils.printUsageAndDie does: the message, then the option table, on stderr,
exit status 1. (The verifiable tools, argparse4j programs in Kafka, are in argparse4j.py.)

Also here: JavaError, the one exception class of all the tools (a Java exception's class,
message and cause, printed as the JVM or the tool's logger would), and log4j's tools
layout ("[%d] %p %m (%c)%n") with Java logger names, which the tools use for their log
lines on stderr.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence, TextIO

from kafkalike.client.errors import KafkaError, java_view
from kafkalike.common.versions import KAFKA_COMMIT_ID, KAFKA_VERSION



@dataclass(frozen=True)
class Option:
    name: str
    help: str
    arg: str | None = None           # jopt's describedAs; None for a flag, "" for an argument without one
    type_name: str = "String"
    default: str | None = None
    optional_arg: bool = False       # withOptionalArg: the next word may be taken as its value (Dialect)
    available_if: tuple[str, ...] = ()   # jopt's availableIf: usable only next to one of these

    def __str__(self) -> str:        # how jopt prints an OptionSpec in messages
        return f"[{self.name}]"


def options_table(*options: Option) -> dict[str, Option]:
    return {o.name: o for o in options}


ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"


class JavaError(Exception):
    """A failure a Kafka tool reports as the Java exception it would have thrown: the class,
    the message (None when Java's getMessage() is null) and the cause, if any.

    The one exception class of every tool: kafka-topics and kafka-consumer-groups print it
    as the JVM prints what escapes main (Utils.stackTrace), the console tools log it with
    `trace`, the election tools print `render`.
    """

    def __init__(self, java_class: str, message: str | None = None, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message
        self.cause = cause

    def trace(self, at: str | None = None) -> str:
        """The exception line (no ': ' without a message), where it was thrown, then its cause."""
        lines = [f"{self.java_class}: {self.message}" if self.message else self.java_class]
        if at is not None:
            lines.append(f"\tat {at}")
        if self.cause is not None:
            lines.append("Caused by: " + throwable(self.cause))
        return "\n".join(lines)

    def render(self) -> str:
        """Throwable.toString, then a `Caused by:` line per cause down the chain."""
        text = self.java_class if self.message is None else f"{self.java_class}: {self.message}"
        cause = self.cause
        while cause is not None:
            text += "\nCaused by: " + throwable(cause)
            cause = getattr(cause, "cause", None)
        return text


def throwable(error: BaseException) -> str:
    """Throwable.toString of any error a tool meets: `java.class.Name: message`, or the class
    alone when there is no message (our client's errors and the admin client's carry their
    Java class names)."""
    if isinstance(error, JavaError):
        return error.java_class if error.message is None else f"{error.java_class}: {error.message}"
    if isinstance(error, KafkaError):
        return java_view(error)
    java_class = getattr(error, "java_class", None)    # the admin client's KafkaAdminError
    if isinstance(java_class, str):
        return f"{java_class}: {getattr(error, 'message', str(error))}"
    return java_view(error)


class UsageError(Exception):
    """Printed, followed by the option table, then exit 1 (CommandLineUtils.printUsageAndDie)."""


class VersionRequested(Exception):
    """--version: the tool prints Kafka's version and exits 0, whatever else was asked
    (CommandLineUtils.printVersionAndDie)."""


def _usage_error(java_class: str, message: str) -> Exception:
    return UsageError(message)


@dataclass(frozen=True)
class Dialect:
    """Where the Kafka 2.8 tools' command lines differ, given once per tool.

    The defaults are the console tools': they parse through CommandLineUtils.tryParse, so a
    jopt OptionException becomes a usage error, and their numbers are checked as the line is
    read. kafka-topics and kafka-consumer-groups call parser.parse directly: jopt's exception
    escapes (`error` builds it from jopt's class name and message) and numbers are converted
    only when a command asks for them.
    """

    error: Callable[[str, str], Exception] = _usage_error
    convert_at_parse: bool = True        # Integer/Long values checked while parsing (else by number())
    flag_values: bool = True             # `--flag=x` accepted (x ignored); else jopt's unrecognized option
    optional_arg_yields_to: str = "dash"  # an optional value is not taken if the next word starts with
    #                                       "-" ("dash") / is a recognized option ("option")
    single_value: bool = False           # value() of an option given twice: jopt's "multiple arguments" error
    #                                       (else the last one)
    padded_help: bool = False            # help rows padded to the full width, trailing spaces kept
    help_paragraphs: bool = False        # a line separator in a description starts a new line in the help
    abbreviations: bool = True           # unique prefixes of a long name accepted (jopt's AbbreviationMap);
    #                                       else only whole names (OptionParser(false), as CommandDefaultOptions)


CONSOLE = Dialect()
JOPT = "joptsimple."


@dataclass
class ParsedArgs:
    """What jopt's OptionSet answers: presence, the values given, and defaults for absent options."""

    options: Mapping[str, Option]
    values: dict[str, list[str | None]] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    dialect: Dialect = CONSOLE
    order: list[str] = field(default_factory=list)    # each occurrence's option name, in command-line order

    def specs(self) -> list[str]:
        """jopt's OptionSet.specs(): the options given, one per occurrence, in command-line order."""
        return list(self.order)

    def has(self, name: str) -> bool:
        """Given on the command line (a default does not count)."""
        return name in self.values

    def value(self, name: str) -> str | None:
        """The last value given (the only one, in a single_value dialect), else the option's default."""
        found = self.values.get(name)
        if self.dialect.single_value and found:
            found = [v for v in found if v is not None]
            if len(found) > 1:
                raise self.dialect.error(JOPT + "MultipleArgumentsForOptionException",
                                         f"Found multiple arguments for option {name}, but you asked for only one")
        if found:
            return found[-1]
        option = self.options.get(name)
        return option.default if option is not None else None

    def all(self, name: str) -> list[str]:
        return [v for v in self.values.get(name, []) if v is not None]

    def number(self, name: str) -> int | None:
        """valueOf of an Integer/Long option: its value or default, jopt's error when malformed."""
        text = self.value(name)
        if text is None:
            return None
        if not _java_int(text, self.options[name].type_name):
            raise self.dialect.error(JOPT + "OptionArgumentConversionException",
                                     f"Cannot parse argument '{text}' of option {name}")
        return int(text)

    int_value = long_value = number


def resolve(options: Mapping[str, Option], name: str, dialect: Dialect = CONSOLE) -> Option:
    """An exact name first, then a unique abbreviation (jopt-simple's AbbreviationMap)."""
    if name in options:
        return options[name]
    matches = [o for n, o in options.items() if n.startswith(name)] if name and dialect.abbreviations else []
    if len(matches) != 1:
        raise dialect.error(JOPT + "UnrecognizedOptionException", f"{name} is not a recognized option")
    return matches[0]


def _java_int(text: str, type_name: str) -> bool:
    """Integer.valueOf / Long.valueOf: optional sign, digits, and within the type's range."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        return False
    bits = 31 if type_name == "Integer" else 63
    return -2**bits <= int(text) < 2**bits


def _takes_optional(options: Mapping[str, Option], word: str, dialect: Dialect) -> bool:
    """Whether the word after an option with an optional argument is that argument."""
    if dialect.optional_arg_yields_to == "dash":
        return not word.startswith("-")
    if not word.startswith("-") or word in ("-", "--"):
        return True
    name = word.lstrip("-").partition("=")[0]
    if not dialect.abbreviations:
        return name not in options
    return name not in options and len([n for n in options if n.startswith(name)] if name else []) != 1


def parse_args(options: Mapping[str, Option], argv: Sequence[str], dialect: Dialect = CONSOLE) -> ParsedArgs:
    parsed = ParsedArgs(options, argv=list(argv), dialect=dialect)
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            break
        if not token.startswith("-") or token == "-":
            continue
        name, sep, inline = token.lstrip("-").partition("=")
        option = resolve(options, name, dialect)
        if option.arg is None:
            if sep and not dialect.flag_values:
                raise dialect.error(JOPT + "UnrecognizedOptionException", f"{token} is not a recognized option")
            parsed.values.setdefault(option.name, [])
            parsed.order.append(option.name)
            continue
        if sep:
            value: str | None = inline
        elif option.optional_arg:
            value = None
            if i < len(argv) and _takes_optional(options, argv[i], dialect):
                value = argv[i]
                i += 1
        else:
            if i >= len(argv):
                raise dialect.error(JOPT + "OptionMissingRequiredArgumentException",
                                    f"Option {option.name} requires an argument")
            value = argv[i]
            i += 1
        if (dialect.convert_at_parse and option.type_name in ("Integer", "Long") and value is not None
                and not _java_int(value, option.type_name)):
            raise dialect.error(JOPT + "OptionArgumentConversionException",
                                f"Cannot parse argument '{value}' of option {option.name}")
        parsed.values.setdefault(option.name, []).append(value)
        parsed.order.append(option.name)
    unavailable = [n for n in parsed.values
                   if options[n].available_if and not any(parsed.has(a) for a in options[n].available_if)]
    if unavailable:
        raise dialect.error(JOPT + "UnavailableOptionException",
                            f"Option(s) [{', '.join(unavailable)}] are unavailable given other options on the "
                            "command line")
    return parsed


def format_help(options: Mapping[str, Option], dialect: Dialect = CONSOLE) -> str:
    """jopt-simple's option table (BuiltinHelpFormatter, 80 columns)."""
    width = 39

    def wrap(text: str, limit: int) -> list[str]:
        lines: list[str] = []
        for paragraph in text.split(os.linesep) if dialect.help_paragraphs else [text]:
            line = ""
            for word in paragraph.split():
                if line and len(line) + 1 + len(word) > (limit if not lines else limit - 2):
                    lines.append(line)
                    line = ""
                line = f"{line} {word}" if line else word
            lines.append(line)
        return [lines[0]] + ["  " + rest for rest in lines[1:]]

    rows = [("Option", "Description"), ("------", "-----------")]
    for name in sorted(options):
        o = options[name]
        cell = f"--{name}"
        if o.arg is not None:
            described = f"{o.type_name}: {o.arg}" if o.arg else o.type_name
            cell += f" [{described}]" if o.optional_arg else f" <{described}>"
        text = o.help + (f" (default: {o.default})" if o.default is not None else "")
        left, right = wrap(cell, width), wrap(text, width)
        for n in range(max(len(left), len(right))):
            rows.append((left[n] if n < len(left) else "", right[n] if n < len(right) else ""))
    if dialect.padded_help:
        return "".join(f"{a.ljust(width)}  {b.ljust(width)}\n" for a, b in rows)
    return "".join(f"{a.ljust(width)}  {b}".rstrip() + "\n" for a, b in rows)


def valid_host_ports(text: str | None) -> bool:
    """ToolsUtils.validatePortOrDie's test: every comma-separated entry ends in :port."""
    if not text:
        return False
    for entry in text.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not port.isdigit():
            return False
    return True


def parse_key_values(items: Sequence[str]) -> dict[str, str]:
    """CommandLineUtils.parseKeyValueArgs: split on the first '='; a missing value is ''."""
    out: dict[str, str] = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key] = value
    return out


# -- the tools' log lines ------------------------------------------------------------------------


def log_stamp(created: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) + f",{int(created * 1000) % 1000:03d}"


class ToolsLayout(logging.Formatter):
    """log4j's tools layout: [%d] %p %m (%c)%n, with Java class names for our loggers."""

    def __init__(self, java_loggers: Mapping[str, str]) -> None:
        super().__init__()
        self.java_loggers = java_loggers

    def format(self, record: logging.LogRecord) -> str:
        level = {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(record.levelname, record.levelname)
        text = (f"[{log_stamp(record.created)}] {level} {record.getMessage()} "
                f"({self.java_loggers.get(record.name, record.name)})")
        if record.exc_info and record.exc_info[1] is not None:
            text += "\n" + java_view(record.exc_info[1])
        return text


def setup_tools_logging(err: TextIO, java_loggers: Mapping[str, str]) -> logging.Handler:
    """WARN and above of our client's loggers to `err` in the tools layout (tools-log4j.properties).

    Only a handler is added (at WARN): the loggers' own levels and propagation stay as they
    were, so a program or test that runs a tool in-process keeps its logging.
    """
    handler = logging.StreamHandler(err)
    handler.setFormatter(ToolsLayout(java_loggers))
    handler.setLevel(logging.WARNING)
    logging.getLogger("kafkalike").addHandler(handler)
    return handler


@contextlib.contextmanager
def tools_logging(err: TextIO, java_loggers: Mapping[str, str]) -> Iterator[None]:
    """setup_tools_logging for the length of one tool run (tests run tools in-process)."""
    handler = setup_tools_logging(err, java_loggers)
    try:
        yield
    finally:
        logging.getLogger("kafkalike").removeHandler(handler)


# The admin client's warnings, as the Java tools print them.
ADMIN_LOGGERS = {"kafkalike.client.admin": "org.apache.kafka.clients.NetworkClient"}


def tools_error_line(message: str, logger: str, trace: str) -> str:
    """One ERROR line in the tools layout, then the exception's lines, as log4j prints error(msg, e)."""
    return f"[{log_stamp(time.time())}] ERROR {message} ({logger})\n{trace}\n"


__all__ = ["ADMIN_LOGGERS", "CONSOLE", "Dialect", "JavaError", "KAFKA_COMMIT_ID", "KAFKA_VERSION", "Option", "ParsedArgs",
           "ToolsLayout", "UsageError", "VersionRequested", "format_help", "log_stamp", "options_table", "parse_args", "parse_key_values",
           "resolve", "setup_tools_logging", "throwable", "tools_error_line", "tools_logging"]
