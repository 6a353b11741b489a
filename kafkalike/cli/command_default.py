"""The command line of the Kafka 2.8 tools built on kafka.utils.CommandDefaultOptions.

kafka-log-dirs, kafka-delete-records and kafka-broker-api-versions read their options with
an `OptionParser(false)` (whole option names only) and parse them directly, so a jopt
error escapes main and the JVM prints it; `--help` (or no arguments at all) prints the
tool's message and the option table on stderr with exit status 1; `--version` prints
Kafka's version; CommandLineUtils.checkRequiredArgs reports the first missing option as
`Missing required argument "[name]"` followed by the table, exit status 1.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence, TextIO

from kafkalike.cli import joptions
from kafkalike.cli.joptions import (KAFKA_COMMIT_ID, KAFKA_VERSION, Dialect, JavaError, Option, ParsedArgs,
                                    UsageError, VersionRequested)

DIALECT = Dialect(error=JavaError, convert_at_parse=False, flag_values=False, abbreviations=False)
HELP_OPTIONS = (Option("help", "Print usage information."), Option("version", "Display Kafka version."))


def with_defaults(*options: Option) -> dict[str, Option]:
    return joptions.options_table(*options, *HELP_OPTIONS)


def parse(options: Mapping[str, Option], argv: Sequence[str], help_message: str,
          required: Sequence[str] = ()) -> ParsedArgs:
    """parser.parse, printHelpAndExitIfNeeded, then checkRequiredArgs."""
    opts = joptions.parse_args(options, argv, DIALECT)
    if not argv or opts.has("help"):
        raise UsageError(help_message)
    if opts.has("version"):
        raise VersionRequested()
    check_required(opts, required)
    return opts


def parse_plain(options: Mapping[str, Option], argv: Sequence[str], required: Sequence[str] = ()) -> ParsedArgs:
    """The same for a tool on a bare OptionParser(false), without --help and --version
    (GetOffsetShell): parser.parse, then checkRequiredArgs."""
    opts = joptions.parse_args(options, argv, DIALECT)
    check_required(opts, required)
    return opts


def check_required(opts: ParsedArgs, required: Sequence[str]) -> None:
    """CommandLineUtils.checkRequiredArgs: the first missing option is the usage error."""
    for name in required:
        if not opts.has(name):
            raise UsageError(f'Missing required argument "[{name}]"')


def run_main(options: Mapping[str, Option], body: Callable[[], int], out: TextIO, err: TextIO) -> int:
    """A tool's main as the JVM runs it: usage errors with the table, escaped exceptions printed."""
    try:
        return body()
    except VersionRequested:
        out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
        return 0
    except UsageError as error:
        out.flush()
        err.write(f"{error}\n{joptions.format_help(options, DIALECT)}")
        return 1
    except JavaError as error:
        out.flush()
        err.write(f'Exception in thread "main" {error.render()}\n')
        return 1
    finally:
        out.flush()


__all__ = ["DIALECT", "VersionRequested", "check_required", "parse", "parse_plain", "run_main", "with_defaults"]
