"""kafka-leader-election: preferred or unclean leader elections, as Kafka 2.8's LeaderElectionCommand.

Its output is what operators grep: `Successfully completed leader election (PREFERRED)
for partitions t-0, t-1`, `Valid replica already elected for partitions ...`, one
`Error completing leader election ...` line per failure and then, as the JVM does for
the uncaught AdminCommandFailedException, `Exception in thread "main" ...` on stderr
and exit status 1. Partitions are listed sorted (Java prints them in hash order).
"""
from __future__ import annotations

import json
import sys
from typing import Callable, Sequence, TextIO

from kafkalike.cli.joptions import (KAFKA_COMMIT_ID, KAFKA_VERSION, Dialect, JavaError, Option, ParsedArgs,
                                    options_table, parse_args, throwable)
from kafkalike.properties import load as load_properties
from kafkalike.client.admin import AdminClient, KafkaAdminError
from kafkalike.protocol.errors import ErrorCode
from kafkalike.cli.tool_main import run_tool

ADMIN_COMMAND_FAILED = "kafka.common.AdminCommandFailedException"
ADMIN_OPERATION = "kafka.admin.AdminOperationException"
TIMEOUT_MS = 30000          # the command's own request.timeout.ms (30.second in main)
ELECTION_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}

HELP = """This tool attempts to elect a new leader from a set of topic partitions. The type of elections supported are preferred replicas and unclean replicas.
Option                                  Description
------                                  -----------
--admin.config <String: config file>    Configuration properties files to pass
                                          to the admin client
--all-topic-partitions                  Perform election on all of the
                                          eligible topic partitions based on
                                          the type of election (see the --
                                          election-type flag). Not allowed if
                                          --topic or --path-to-json-file is
                                          specified.
--bootstrap-server <String: host:port>  A hostname and port for the broker to
                                          connect to, in the form host:port.
                                          Multiple comma separated URLs can be
                                          given. REQUIRED.
--election-type <[PREFERRED,UNCLEAN]:   Type of election to attempt. Possible
  election type>                          values are "preferred" for preferred
                                          leader election or "unclean" for
                                          unclean leader election. If
                                          preferred election is selection, the
                                          election is only performed if the
                                          current leader is not the preferred
                                          leader for the topic partition. If
                                          unclean election is selected, the
                                          election is only performed if there
                                          are no leader for the topic
                                          partition. REQUIRED.
--help                                  Print usage information.
--partition <Integer: partition id>     Partition id for which to perform an
                                          election. REQUIRED if --topic is
                                          specified.
--path-to-json-file <String: Path to    The JSON file with the list  of
  JSON file>                              partition for which leader elections
                                          should be performed. This is an
                                          example format.
                                        {"partitions":
                                        	[{"topic": "foo", "partition": 1},
                                        	 {"topic": "foobar", "partition": 2}]
                                        }
                                        Not allowed if --all-topic-partitions
                                          or --topic flags are specified.
--topic <String: topic name>            Name of topic for which to perform an
                                          election. Not allowed if --path-to-
                                          json-file or --all-topic-partitions
                                          is specified.
--version                               Display Kafka version.
"""


# LeaderElectionCommandOptions (and the deprecated tool's options) call parser.parse
# directly: jopt's exceptions escape main, values are converted when the command asks for
# them, and CommandDefaultOptions' parser takes whole option names only.
DIALECT = Dialect(error=JavaError, convert_at_parse=False, flag_values=False, abbreviations=False)

# The options as jopt sees them (the help text is HELP above).
OPTIONS = options_table(
    Option("bootstrap-server", "", "host:port"),
    Option("admin.config", "", "config file"),
    Option("path-to-json-file", "", "Path to JSON file"),
    Option("topic", "", "topic name"),
    Option("partition", "", "partition id", "Integer"),
    Option("election-type", "", "election type", "[PREFERRED,UNCLEAN]"),
    Option("all-topic-partitions", ""),
    Option("help", ""),
    Option("version", ""),
)


def parse_partitions_json(text: str, what: str = "Replica election data",
                          missing_field: str = 'Replica election data is missing "partition" field'
                          ) -> list[tuple[str, int]]:
    """The {"partitions": [{"topic": .., "partition": ..}]} file both election tools read."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if data is None:
        raise JavaError(ADMIN_OPERATION, f"{what} is empty")
    if not isinstance(data, dict) or "partitions" not in data:
        raise JavaError(ADMIN_OPERATION, missing_field)
    partitions = [(str(p["topic"]), int(p["partition"])) for p in data["partitions"]]
    seen, duplicates = set(), []
    for tp in partitions:
        if tp in seen and tp not in duplicates:
            duplicates.append(tp)
        seen.add(tp)
    if duplicates:
        raise JavaError(ADMIN_OPERATION, f"{what} contains duplicate partitions: "
                        + ",".join(f"{t}-{p}" for t, p in duplicates))
    return partitions


def admin_config(opts: ParsedArgs, config_option: str) -> dict[str, str]:
    config = load_properties(opts.value(config_option)) if opts.has(config_option) else {}
    config["bootstrap.servers"] = opts.value("bootstrap-server") or ""
    config["request.timeout.ms"] = str(TIMEOUT_MS)
    return config


def _validate(opts: ParsedArgs) -> None:
    missing = [name for name in ("election-type", "bootstrap-server") if not opts.has(name)]
    if missing:
        raise JavaError(ADMIN_COMMAND_FAILED, f"Missing required option(s): {', '.join(missing)}")
    exclusive = ("topic", "all-topic-partitions", "path-to-json-file")
    if sum(opts.has(name) for name in exclusive) != 1:
        raise JavaError(ADMIN_COMMAND_FAILED,
                        f"One and only one of the following options is required: {', '.join(exclusive)}")
    if opts.has("topic") and not opts.has("partition"):
        raise JavaError(ADMIN_COMMAND_FAILED, "Missing required option(s): partition")
    if opts.has("partition") and not opts.has("topic"):
        raise JavaError(ADMIN_COMMAND_FAILED, "Option partition is only allowed if topic is used")


def _convert(opts: ParsedArgs) -> tuple[str, list[tuple[str, int]] | None]:
    raw = opts.value("election-type") or ""
    if raw.upper() not in ELECTION_TYPES:
        raise JavaError("joptsimple.OptionArgumentConversionException",
                        f"Cannot parse argument '{raw}' of option election-type")
    partitions = None
    if opts.has("topic"):
        try:
            partitions = [(opts.value("topic") or "", int(opts.value("partition") or ""))]
        except ValueError:
            raise JavaError("joptsimple.OptionArgumentConversionException",
                            f"Cannot parse argument '{opts.value('partition')}' of option partition") from None
    return raw.upper(), partitions


def elect(admin: AdminClient, election_type: str, partitions: list[tuple[str, int]] | None, out: TextIO) -> None:
    """The command's electLeaders: print the three kinds of outcome, raise if any failed."""
    try:
        results = admin.elect_leaders(ELECTION_TYPES[election_type], partitions)
    except KafkaAdminError as error:
        if error.code == ErrorCode.REQUEST_TIMED_OUT:
            out.write("Timeout waiting for election results\n")
        raise JavaError(ADMIN_COMMAND_FAILED, "Timeout waiting for election results", error) from None
    ordered = sorted(results)
    succeeded = [tp for tp in ordered if results[tp] is None]
    noop = [tp for tp in ordered if results[tp] is not None and results[tp].code == ErrorCode.ELECTION_NOT_NEEDED]
    failed = [tp for tp in ordered if results[tp] is not None and tp not in noop]
    if succeeded:
        out.write(f"Successfully completed leader election ({election_type}) for partitions "
                  f"{', '.join(f'{t}-{p}' for t, p in succeeded)}\n")
    if noop:
        out.write(f"Valid replica already elected for partitions {', '.join(f'{t}-{p}' for t, p in noop)}\n")
    if failed:
        for t, p in failed:
            out.write(f"Error completing leader election ({election_type}) for partition: {t}-{p}: "
                      f"{throwable(results[(t, p)])}\n")
        raise JavaError(ADMIN_COMMAND_FAILED, f"{len(failed)} replica(s) could not be elected")


def run_like_java_main(body: Callable[[], int], out: TextIO, err: TextIO) -> int:
    """Run a tool's body; what Java would let escape main is printed as the JVM prints it."""
    try:
        return body()
    except JavaError as error:
        out.flush()
        err.write(f'Exception in thread "main" {error.render()}\n')
        return 1
    except OSError as error:
        out.flush()
        err.write(f'Exception in thread "main" java.nio.file.NoSuchFileException: {error.filename}\n')
        return 1
    finally:
        out.flush()


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = parse_args(OPTIONS, args, DIALECT)
        if not args or opts.has("help"):
            # CommandLineUtils.printHelpAndExitIfNeeded: usage on stderr, exit status 1.
            err.write(HELP)
            return 1
        if opts.has("version"):
            out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
            return 0
        _validate(opts)
        election_type, partitions = _convert(opts)
        if opts.has("path-to-json-file"):
            with open(opts.value("path-to-json-file") or "", encoding="utf-8") as f:
                partitions = parse_partitions_json(f.read())
        admin = AdminClient(admin_config(opts, "admin.config"))
        try:
            elect(admin, election_type, partitions, out)
        finally:
            admin.close()
        return 0
    return run_like_java_main(body, out, err)


if __name__ == "__main__":
    run_tool(main)
