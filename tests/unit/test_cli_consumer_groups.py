"""kafka-consumer-groups without a cluster: option checks, value parsing and the tables.

The expected text is what Kafka 2.8's ConsumerGroupCommand prints for the same command
line or the same group: usage errors on stderr with the option table and exit 1,
tables padded column by column as Kafka pads them, "-" for what is unknown.
"""
from __future__ import annotations

import io

import pytest

from kafkalike.cli.consumer_groups import _parse_states, _parse_topic_partitions, main
from kafkalike.cli.consumer_groups_format import (
    MemberRow,
    OffsetRow,
    StateRow,
    assignment_text,
    delete_offsets_table,
    group_states_table,
    members_table,
    offsets_table,
    reset_csv,
    reset_table,
    state_table,
)
from kafkalike.cli.consumer_groups_options import parse_args, parse_datetime, parse_duration
from kafkalike.cli.topics_options import JavaError, UsageError
from kafkalike.client.groups import CoordinatorNode, decode_assignment, encode_assignment
from kafkalike.protocol.errors import ProtocolDecodeError
from tests.unit.test_client_connection import dead_port

BOOTSTRAP = ["--bootstrap-server", "127.0.0.1:1"]     # never contacted: these commands fail first


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def usage_message(err: str) -> str:
    """The line printUsageAndDie writes before the option table."""
    first, rest = err.split("\n", 1)
    assert rest.startswith("Option                                   Description\n------")
    return first


# -- usage errors, in Kafka's order of checks ----------------------------------------------


@pytest.mark.parametrize("argv", [[], ["--help"], ["--list"]])
def test_the_bootstrap_server_is_checked_before_anything_else_even_help(argv):
    code, out, err = run(*argv)
    assert (code, out) == (1, "")
    assert usage_message(err) == 'Missing required argument "[bootstrap-server]"'


def test_help_prints_the_tools_description_and_every_option():
    code, out, err = run(*BOOTSTRAP, "--help")
    assert (code, out) == (1, "")
    assert usage_message(err) == ("This tool helps to list all consumer groups, describe a consumer group, delete "
                                  "consumer group info, or reset consumer group offsets.")
    for cell in ("--state [String]", "--to-offset <Long: offset>", "--shift-by <Long: number-of-offsets>",
                 "--group <String: consumer group>", "--reset-offsets", "--delete-offsets", "--all-groups"):
        assert cell in err
    assert "(default: 5000)" in err


def test_version_prints_kafkas_version():
    assert run(*BOOTSTRAP, "--version")[:2] == (0, "2.8.0 (Commit:kafkalike)\n")


@pytest.mark.parametrize("argv, message", [
    (["--group", "g"], "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                       "--delete-offsets"),
    (["--list", "--describe", "--all-groups"], "Command must include exactly one action: --list, --describe, "
                                             "--delete, --reset-offsets, --delete-offsets"),
    (["--describe"], "Option [describe] takes one of these options: [group], [all-groups]"),
    (["--describe", "--group", "g", "--members", "--state"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (["--describe", "--group", "g", "--state", "Stable"], "Option [describe] does not take a value for [state]"),
    (["--delete"], "Option [delete] takes one of these options: [group], [all-groups]"),
    (["--delete", "--group", "g", "--topic", "t"],
     "The consumer does not support topic-specific offset deletion from a consumer group."),
    (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--reset-offsets", "--group", "g", "--dry-run", "--execute"],
     "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
    (["--reset-offsets", "--all-topics", "--dry-run"],
     "Option [reset-offsets] takes one of these options: [group], [all-groups]"),
    (["--reset-offsets", "--group", "g", "--dry-run", "--to-earliest", "--to-latest"],
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
    (["--describe", "--group", "g", "--all-groups"], 'Option "[group]" can\'t be used with option "[all-groups]"'),
    (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
    (["--describe", "--group", "g", "--topic", "t"], 'Option "[topic]" can\'t be used with option "[describe]"'),
])
def test_usage_errors_are_kafkas(argv, message):
    code, out, err = run(*BOOTSTRAP, *argv)
    assert (code, out) == (1, "")
    assert usage_message(err) == message


def test_a_reset_without_execute_or_dry_run_warns_before_anything_else_is_checked():
    code, _, err = run(*BOOTSTRAP, "--reset-offsets", "--to-earliest")
    assert code == 1
    warning, usage = err.split("\n", 1)
    assert warning.startswith("WARN: No action will be performed as the --execute option is missing.In a future")
    assert usage_message(usage) == "Option [reset-offsets] takes one of these options: [group], [all-groups]"


@pytest.mark.parametrize("argv, java_class, message", [
    (["--list", "--members"], "joptsimple.UnavailableOptionException",
     "Option(s) [members] are unavailable given other options on the command line"),
    (["--list", "--nope"], "joptsimple.UnrecognizedOptionException", "nope is not a recognized option"),
    (["--list", "--to"], "joptsimple.UnrecognizedOptionException", "to is not a recognized option"),
    (["--describe", "--group"], "joptsimple.OptionMissingRequiredArgumentException",
     "Option group requires an argument"),
])
def test_parse_errors_escape_as_the_jvm_prints_them(argv, java_class, message):
    code, out, err = run(*BOOTSTRAP, *argv)
    assert (code, out) == (1, "")
    assert err.startswith(f'Exception in thread "main" {java_class}: {message}\n\tat ')


def test_options_are_read_as_jopt_reads_them():
    args = parse_args(["--bootstrap=h:1", "--describe", "--state", "--group", "a", "--group", "b", "extra"])
    assert args.value("bootstrap-server") == "h:1"              # an abbreviation and an inline value
    assert args.has("state") and args.all("state") == []        # the optional value was not taken
    assert args.all("group") == ["a", "b"]
    listed = parse_args(["--list", "--state", "Stable,Empty"])
    assert listed.value("state") == "Stable,Empty"
    shifted = parse_args(["--reset-offsets", "--shift-by", "-3"])
    assert shifted.long_value("shift-by") == -3 and shifted.long_value("timeout") == 5000
    with pytest.raises(JavaError, match="Cannot parse argument 'soon' of option timeout"):
        parse_args(["--list", "--timeout", "soon"]).long_value("timeout")


def test_state_filters_are_case_sensitive_as_in_kafka_2_8():
    assert _parse_states("Stable, Empty") == ["Stable", "Empty"]
    with pytest.raises(UsageError, match=r"^Invalid state list 'stable'. Valid states are: PreparingRebalance, "
                                         r"CompletingRebalance, Stable, Dead, Empty$"):
        _parse_states("stable")


def test_topic_arguments_with_partitions():
    assert _parse_topic_partitions("orders:0,2") == [("orders", 0), ("orders", 2)]
    with pytest.raises(UsageError, match=r"^Invalid partition 'x' specified in topic arg 'orders:x''$"):
        _parse_topic_partitions("orders:x")
    with pytest.raises(UsageError, match=r"^Invalid topic arg 'a:1:2', expected topic name and partitions$"):
        _parse_topic_partitions("a:1:2")


def test_datetimes_and_durations_are_read_as_java_reads_them():
    assert parse_datetime("2021-03-04T05:06:07.089") == 1614834367089          # no zone: UTC
    assert parse_datetime("2021-03-04T07:06:07.089+02:00") == 1614834367089
    assert parse_datetime("2021-03-04T00:06:07.089-0500") == 1614834367089
    assert parse_datetime("2021-13-01T00:00:00.000") == parse_datetime("2022-01-01T00:00:00.000")   # lenient
    with pytest.raises(JavaError, match="It does not contain a 'T'"):
        parse_datetime("2021-03-04")
    with pytest.raises(JavaError, match='Unparseable date: "2021-03-04T05:06Z"'):
        parse_datetime("2021-03-04T05:06")
    assert parse_duration("PT1H30M") == 5400000
    assert parse_duration("P2DT0.25S") == 2 * 86400000 + 250
    assert parse_duration("-PT1M") == -60000
    with pytest.raises(JavaError, match="Text cannot be parsed to a Duration"):
        parse_duration("P1H")


def test_an_unreachable_cluster_is_an_error_line_and_exit_status_0():
    code, out, err = run("--bootstrap-server", f"127.0.0.1:{dead_port()}", "--list", "--timeout", "300")
    assert code == 0
    assert out == ("\nError: Executing consumer group command failed due to org.apache.kafka.common.errors."
                   "TimeoutException: Timed out waiting for a node assignment. Call: listGroups\n")
    # The NetworkClient warnings while it waited come first, then the stack Kafka's tool prints.
    warnings = [line for line in err.splitlines() if " WARN [AdminClient clientId=adminclient-1] Connection to node -1 "
                in line]
    assert warnings and err.splitlines()[:len(warnings)] == warnings
    trace = "\n".join(err.splitlines()[len(warnings):])
    assert trace.startswith("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.TimeoutException")
    assert "Caused by: org.apache.kafka.common.errors.TimeoutException" in trace


def test_a_malformed_timeout_fails_the_command_not_the_start():
    code, out, _ = run("--bootstrap-server", f"127.0.0.1:{dead_port()}", "--list", "--timeout", "soon")
    assert (code, out) == (0, "\nError: Executing consumer group command failed due to Cannot parse argument "
                              "'soon' of option timeout\n")


# -- tables ----------------------------------------------------------------------------------


def test_offsets_table_pads_like_kafka_and_marks_the_unknown():
    rows = [OffsetRow("g", "orders", 0, 4, 10, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
            OffsetRow("g", "orders", 1, None, 10, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
            OffsetRow("g", "a-much-longer-topic-name", 2, 3, None, "-", "-", "-")]
    assert offsets_table(rows) == (
        "\n"
        "GROUP           TOPIC                    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
        "CONSUMER-ID     HOST            CLIENT-ID\n"
        "g               orders                   0          4               10              6               "
        "consumer-1-abc  /127.0.0.1      consumer-1\n"
        "g               orders                   1          -               10              -               "
        "consumer-1-abc  /127.0.0.1      consumer-1\n"
        "g               a-much-longer-topic-name 2          3               -               -               "
        "-               -               -\n")


def test_lag_needs_a_commit_and_an_end():
    assert OffsetRow("g", "t", 0, 3, 10, None, None, None).lag == 7
    assert OffsetRow("g", "t", 0, -1, 10, None, None, None).lag is None
    assert OffsetRow("g", "t", 0, 3, None, None, None, None).lag is None


def test_members_table_keeps_kafkas_trailing_padding_and_adds_instance_ids_only_for_static_members():
    dynamic = [MemberRow("g", "c-1", "", "/10.0.0.1", "c", 2, (("t", 1), ("t", 0), ("s", 4))),
               MemberRow("g", "c-2", "", "/10.0.0.2", "c", 0)]
    assert members_table(dynamic, verbose=False) == (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
        "g               c-1             /10.0.0.1       c               2               \n"
        "g               c-2             /10.0.0.2       c               0               \n")
    assert members_table(dynamic, verbose=True).splitlines()[1:] == [
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT",
        "g               c-1             /10.0.0.1       c               2               s(4), t(0,1)",
        "g               c-2             /10.0.0.2       c               0               -"]
    static = [MemberRow("g", "c-1", "pod-0", "/10.0.0.1", "c", 1)]
    assert members_table(static, verbose=False).splitlines()[1] == (
        "GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     ")


def test_assignment_text_sorts_partitions_and_topics():
    assert assignment_text([("b", 2), ("a", 10), ("b", 0), ("a", 9)]) == "a(9,10), b(0,2)"
    assert assignment_text([]) == "-"


def test_state_table_sizes_the_group_column_by_the_coordinator_as_kafka_2_8_does():
    row = StateRow("payments", CoordinatorNode(2, "broker-2.example.com", 9092), "range", "Stable", 3)
    coordinator = "broker-2.example.com:9092 (2)"           # 29 wide: wider than the 25 minimum
    assert state_table(row) == (
        f"\n{'GROUP':<29} {'COORDINATOR (ID)':<25} {'ASSIGNMENT-STRATEGY':<20} {'STATE':<15} #MEMBERS"
        f"\n{'payments':<29} {coordinator:<25} {'range':<20} {'Stable':<15} 3\n")


def test_group_states_table_has_no_leading_empty_line():
    assert group_states_table([("a-rather-long-group-name", "Empty"), ("g", "Stable")]) == (
        "GROUP                    STATE\na-rather-long-group-name Empty\ng                        Stable\n")


def test_reset_table_and_export():
    plan = {"g": {("orders", 0): 0, ("orders", 1): 12}}
    assert reset_table(plan) == (
        f"\n{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}\n"
        f"{'g':<30} {'orders':<30} {'0':<10} {'0':<15}\n"
        f"{'g':<30} {'orders':<30} {'1':<10} {'12':<15}\n")
    assert reset_table({"g": {}}).count("\n") == 2             # the header even with nothing to reset
    assert reset_table({}) == ""
    assert reset_csv(plan, with_group=False) == "orders,0,0\norders,1,12\n"
    assert reset_csv(plan, with_group=True) == "g,orders,0,0\ng,orders,1,12\n"


def test_delete_offsets_table_sorts_as_kafka_and_names_undescribable_topics():
    results = {("orders", 10): None, ("orders", 2): "org.apache.kafka.common.errors.GroupSubscribedToTopicException:"
                                                    " Deleting offsets of a topic is forbidden while the consumer "
                                                    "group is actively subscribed to it.",
               ("missing", -1): "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: x"}
    lines = delete_offsets_table(results).splitlines()
    assert lines[1] == f"{'TOPIC':<30} {'PARTITION':<15} {'STATUS':<15}"
    assert [line.split()[:2] for line in lines[2:]] == [["missing", "Not"], ["orders", "10"], ["orders", "2"]]
    assert lines[3] == f"{'orders':<30} {'10':<15} {'Successful':<15}"


# -- the consumer protocol blobs -------------------------------------------------------------


def test_assignments_decode_at_every_version_and_later_ones_read_as_the_newest():
    partitions = (("orders", 0), ("orders", 3), ("refunds", 1))
    assert decode_assignment(encode_assignment(partitions, 0)) == partitions
    assert decode_assignment(encode_assignment(partitions, 1)) == partitions
    future = b"\x00\x07" + encode_assignment(partitions, 1)[2:] + b"extra fields of a later version"
    assert decode_assignment(future) == partitions
    assert decode_assignment(b"") == ()
    with pytest.raises(ProtocolDecodeError, match="Unsupported assignment version: -1"):
        decode_assignment(b"\xff\xff" + encode_assignment(partitions)[2:])
