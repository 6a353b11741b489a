"""kafka-topics without a cluster: option checks, value parsing and the describe lines.

Everything here fails (or prints) before the tool would talk to ZooKeeper or a broker,
so the expected text is Kafka 2.8's TopicCommand output for the same command line.
"""
from __future__ import annotations

import io
import re
import uuid

import pytest

from kafkalike.cli.topics import main
from kafkalike.cli.topics_describe import (
    DescribeFilter,
    PartitionView,
    TopicView,
    admin_describe_order,
    config_order,
    format_partition,
    format_topic,
)
from kafkalike.cli.topics_options import JavaError, parse_args, parse_replica_assignment, topic_filter
from kafkalike.client.admin import PartitionReassignment
from tests.unit.test_client_connection import dead_port

ZK = ["--zookeeper", "127.0.0.1:1"]       # never contacted: these commands fail first
BOOTSTRAP = ["--bootstrap-server", "127.0.0.1:1"]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def usage_message(err: str) -> str:
    """The line printUsageAndDie writes before the option table."""
    first, rest = err.split("\n", 1)
    assert rest.startswith("Option                                   Description")
    return first


# -- usage errors, in Kafka's order of checks ----------------------------------------------


def test_no_arguments_prints_the_usage_and_fails():
    code, out, err = run()
    assert (code, out) == (1, "")
    assert usage_message(err) == "Create, delete, describe, or change a topic."
    assert "--bootstrap-server <String: server to" in err and "--zookeeper <String: hosts>" in err


def test_help_is_the_usage_with_the_tools_description():
    code, _, err = run("--help", "--list")
    assert code == 1
    assert usage_message(err) == "This tool helps to create, delete, describe, or change a topic."


def test_version_prints_kafkas_version_and_succeeds():
    code, out, _ = run("--version", "--list")
    assert code == 0 and out.startswith("2.8.0")


@pytest.mark.parametrize("argv", [["--list", "--describe", *ZK], [*ZK, "--topic", "t"]])
def test_exactly_one_action_is_required(argv):
    code, _, err = run(*argv)
    assert code == 1
    assert usage_message(err) == ("Command must include exactly one action: --list, --describe, --create, "
                                  "--alter or --delete")


@pytest.mark.parametrize("connect", [[], [*ZK, *BOOTSTRAP]])
def test_exactly_one_of_zookeeper_and_bootstrap_server_is_required(connect):
    code, out, err = run("--list", *connect)
    assert (code, out) == (1, "")
    assert err.startswith('Exception in thread "main" java.lang.IllegalArgumentException: Only one of '
                          '--bootstrap-server or --zookeeper must be specified\n\tat ')


@pytest.mark.parametrize("argv, message", [
    (["--create", *BOOTSTRAP], 'Missing required argument "[topic]"'),
    (["--delete", *ZK], 'Missing required argument "[topic]"'),
    (["--describe", "--if-exists", *ZK], 'Missing required argument "[topic]"'),
    (["--create", "--topic", "t", *ZK], 'Missing required argument "[partitions]"'),
    (["--create", "--topic", "t", "--partitions", "1", *ZK], 'Missing required argument "[replication-factor]"'),
    (["--alter", "--topic", "t", *BOOTSTRAP], 'Missing required argument "[partitions]"'),
    (["--alter", "--topic", "t", "--config", "a=b", *BOOTSTRAP],
     'Option combination "[bootstrap-server],[config]" can\'t be used with option "[alter]" (the kafka-configs '
     'CLI supports altering topic configs with a --bootstrap-server option)'),
    (["--list", "--config", "a=b", *ZK], 'Option "[config]" can\'t be used with option "[list]"'),
    (["--alter", "--topic", "t", "--partitions", "2", "--delete-config", "a", *BOOTSTRAP],
     'Option "[delete-config]" can\'t be used with option "[bootstrap-server]"'),
    (["--alter", "--topic", "t", "--replication-factor", "2", *ZK],
     'Option "[replication-factor]" can\'t be used with option "[alter]"'),
    (["--create", "--topic", "t", "--replica-assignment", "0:1", "--partitions", "1", *BOOTSTRAP],
     'Option "[replica-assignment]" can\'t be used with option "[partitions]"'),
    (["--describe", "--under-min-isr-partitions", *ZK],
     'Option "[under-min-isr-partitions]" can\'t be used with option "[zookeeper]"'),
    (["--describe", "--under-replicated-partitions", "--unavailable-partitions", *ZK],
     'Option "[under-replicated-partitions]" can\'t be used with option "[unavailable-partitions]"'),
    (["--describe", "--topics-with-overrides", "--at-min-isr-partitions", *BOOTSTRAP],
     'Option "[at-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"'),
    (["--delete", "--topic", "t", "--if-not-exists", *ZK],
     'Option "[if-not-exists]" can\'t be used with option "[delete]"'),
    (["--create", "--topic", "t", "--if-exists", *BOOTSTRAP],
     'Option "[if-exists]" can\'t be used with option "[create]"'),
    (["--delete", "--topic", "t", "--exclude-internal", *ZK],
     'Option "[exclude-internal]" can\'t be used with option "[delete]"'),
])
def test_usage_errors_are_kafkas(argv, message):
    code, out, err = run(*argv)
    assert (code, out) == (1, "")
    assert usage_message(err) == message


# -- jopt-simple's way of reading options -----------------------------------------------------


def test_options_may_be_abbreviated_use_one_dash_or_an_equals_sign():
    args = parse_args(["--bootstrap", "h:1", "-describe", "--topic=a.b", "--exclude", "stray"])
    assert args.value("bootstrap-server") == "h:1"
    assert args.has("describe") and args.has("exclude-internal")
    assert args.value("topic") == "a.b"


@pytest.mark.parametrize("argv, expected", [
    (["--list", "--bogus"], "joptsimple.UnrecognizedOptionException: bogus is not a recognized option"),
    (["--de", "--topic", "t"], "joptsimple.UnrecognizedOptionException: de is not a recognized option"),
    (["--list", "--topic"], "joptsimple.OptionMissingRequiredArgumentException: Option topic requires an argument"),
])
def test_unreadable_command_lines_end_like_an_uncaught_jopt_exception(argv, expected):
    code, out, err = run(*argv)
    assert (code, out) == (1, "")
    assert err.startswith(f'Exception in thread "main" {expected}\n')


def test_a_non_numeric_partition_count_is_a_command_error():
    code, out, err = run("--create", "--topic", "t", "--partitions", "three", *BOOTSTRAP)
    assert code == 1
    assert out == "Error while executing topic command : Cannot parse argument 'three' of option partitions\n"
    assert "ERROR joptsimple.OptionArgumentConversionException: Cannot parse argument 'three'" in err


# -- errors from the command itself -----------------------------------------------------------


@pytest.mark.parametrize("extra, message", [
    (["--partitions", "0"], "The partitions must be greater than 0"),
    (["--replication-factor", "40000"], "The replication factor must be between 1 and 32767 inclusive"),
    (["--config", "retention.ms"], 'requirement failed: Invalid topic config: all configs to be added must be '
                                   'in the format "key=val".'),
    (["--config", "no.such.config=1"], "Unknown topic config name: no.such.config"),
    (["--config", "retention.ms=soon"], "Invalid value soon for configuration retention.ms: Not a number of type "
                                        "LONG"),
    (["--replica-assignment", "1:2,3"], None),
])
def test_bad_values_are_reported_as_kafka_reports_them(extra, message):
    code, out, err = run("--create", "--topic", "t", *extra, *BOOTSTRAP)
    assert code == 1
    if message is None:
        assert out.startswith("Error while executing topic command : Partition 1 has different replication "
                              "factor: [I@")
    else:
        assert out == f"Error while executing topic command : {message}\n"
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] ERROR \S+: .*\n(\tat .*\n)+ "
                        r"\(kafka\.admin\.TopicCommand\$\)\n", err, re.S)


def test_an_unreachable_bootstrap_server_times_out_with_the_admin_clients_message(tmp_path):
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=200\nretry.backoff.ms=20\n")
    code, out, err = run("--list", "--bootstrap-server", f"127.0.0.1:{dead_port()}", "--command-config", str(config))
    assert code == 1
    assert out == "Error while executing topic command : Timed out waiting for a node assignment. Call: listTopics\n"
    assert "ERROR org.apache.kafka.common.errors.TimeoutException: Timed out waiting" in err


def test_a_missing_command_config_file_stops_the_tool(tmp_path):
    code, out, err = run("--list", *BOOTSTRAP, "--command-config", str(tmp_path / "nope.properties"))
    assert (code, out) == (1, "")
    assert err.startswith(f'Exception in thread "main" java.io.FileNotFoundException: '
                          f'{tmp_path / "nope.properties"} (No such file or directory)')


# -- values -------------------------------------------------------------------------------------


def test_replica_assignments_are_partitions_separated_by_commas():
    assert parse_replica_assignment("0:1, 1:2 ,2:0,") == {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    assert parse_replica_assignment("3") == {0: [3]}


@pytest.mark.parametrize("text, java_class, message", [
    ("1:1,2:3", "kafka.common.AdminCommandFailedException",
     "Partition replica lists may not contain duplicate entries: 1"),
    ("1:x", "java.lang.NumberFormatException", 'For input string: "x"'),
    (",1", "java.lang.NumberFormatException", 'For input string: ""'),
])
def test_bad_replica_assignments(text, java_class, message):
    with pytest.raises(JavaError) as failure:
        parse_replica_assignment(text)
    assert (failure.value.java_class, failure.value.message) == (java_class, message)


def test_topic_patterns_are_whole_name_regexes_with_commas_for_alternatives():
    topics = ["orders", "orders-eu", "payments", "__consumer_offsets"]
    assert [t for t in topics if topic_filter("orders", False)(t)] == ["orders"]
    assert [t for t in topics if topic_filter("orders.*", False)(t)] == ["orders", "orders-eu"]
    assert [t for t in topics if topic_filter("'payments, orders'", False)(t)] == ["orders", "payments"]
    assert [t for t in topics if topic_filter(None, True)(t)] == ["orders", "orders-eu", "payments"]
    assert [t for t in topics if topic_filter("__.*", True)(t)] == []
    with pytest.raises(JavaError, match=r"orders\( is an invalid regex\."):
        topic_filter("orders(", False)


# -- describe lines ------------------------------------------------------------------------------


def test_topic_line_has_the_id_counts_and_non_default_configs():
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    view = TopicView("orders", topic_id, 3, 2, (("segment.bytes", "1073741824"), ("cleanup.policy", "compact")))
    assert format_topic(view) == ("Topic: orders\tTopicId: AAECAwQFBgcICQoLDA0ODw\tPartitionCount: 3\t"
                                  "ReplicationFactor: 2\tConfigs: segment.bytes=1073741824,cleanup.policy=compact")


def test_topic_line_without_an_id_and_marked_for_deletion():
    view = TopicView("old", uuid.UUID(int=0), 1, 1, (), marked_for_deletion=True)
    assert format_topic(view) == ("Topic: old\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \t"
                                  "MarkedForDeletion: true")
    assert format_topic(TopicView("x", None, 1, 1, (("k", None),))).endswith("Configs: k=null")


def test_partition_lines():
    assert format_partition(PartitionView("orders", 0, 1, (1, 2, 3), (1, 3))) == (
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,3")
    assert format_partition(PartitionView("orders", 4, None, (2,), (), marked_for_deletion=True)) == (
        "\tTopic: orders\tPartition: 4\tLeader: none\tReplicas: 2\tIsr: \tMarkedForDeletion: true")
    moving = PartitionView("orders", 1, 1, (1, 2, 3), (1, 2), PartitionReassignment((1, 2, 3), (3,), (2,)))
    assert format_partition(moving) == ("\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2"
                                        "\tAdding Replicas: 3\tRemoving Replicas: 2")


def test_a_reassignment_does_not_count_the_replicas_being_added():
    moving = PartitionView("t", 0, 1, (1, 2, 3), (1, 2), PartitionReassignment((1, 2, 3), (3,), ()))
    assert moving.replication_factor == 2 and not moving.under_replicated
    finished = PartitionView("t", 0, 1, (1, 2), (1,), PartitionReassignment((4, 5), (5,), ()))
    assert finished.replication_factor == 2 and finished.under_replicated


def test_report_options_pick_partitions():
    healthy = PartitionView("t", 0, 1, (1, 2), (1, 2), min_isr=2)
    lagging = PartitionView("t", 1, 2, (1, 2), (2,), min_isr=2)
    orphaned = PartitionView("t", 2, 3, (3,), (3,), min_isr=1)
    leaderless = PartitionView("t", 3, None, (1,), (), min_isr=1)
    views, live = [healthy, lagging, orphaned, leaderless], {1, 2}

    def shown(**options) -> list[int]:
        wanted = DescribeFilter(**options)
        return [v.partition for v in views if wanted.shows_partition(v, live)]
    assert shown() == [0, 1, 2, 3]
    assert shown(under_replicated=True) == [1, 3]
    assert shown(unavailable=True) == [2, 3]
    assert shown(under_min_isr=True) == [1, 3]
    assert shown(at_min_isr=True) == [0, 2]
    assert not DescribeFilter(under_replicated=True).shows_topic(has_overrides=True)
    assert DescribeFilter(overrides_only=True).shows_topic(True)
    assert not DescribeFilter(overrides_only=True).shows_topic(False)
    assert not DescribeFilter(overrides_only=True).describe_partitions


def test_admin_describe_order_is_javas_hash_map_order():
    # "a".hashCode() == 97 and "d" == 100: buckets 1 and 0 of a 4-slot table.
    assert admin_describe_order(["a", "d"]) == ["d", "a"]
    # "Q" (81) shares a's bucket in a table of 4 (sorted order wins), but not in the
    # 32-slot table 13 entries need: there a (slot 1) comes before Q (slot 17).
    assert admin_describe_order(["a", "Q"]) == ["Q", "a"]
    thirteen = admin_describe_order(["a", "Q"] + [f"t{i}" for i in range(11)])
    assert thirteen.index("a") < thirteen.index("Q")
    # "foo" is 0x18CC6 and "bar" 0x17C13: HashMap folds the high half in (h ^ h >>> 16),
    # which flips their low bits and puts bar in slot 2, foo in slot 3.
    assert admin_describe_order(["foo", "bar"]) == ["bar", "foo"]


def test_config_order_is_the_order_of_a_default_hash_map():
    assert config_order(["b", "a"]) == ["a", "b"]          # buckets 2 and 1 of 16
    assert config_order(["q", "a"]) == ["q", "a"]          # 113 and 97: both bucket 1, insertion order


def test_an_unreachable_bootstrap_server_is_reported_while_the_tool_waits(tmp_path):
    """Kafka's tools print the NetworkClient warnings while they wait, not silence."""
    port = dead_port()
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=2500\n")
    out, err = io.StringIO(), io.StringIO()
    code = main(["--bootstrap-server", f"127.0.0.1:{port}", "--list", "--command-config", str(config)],
                out=out, err=err)
    assert code == 1
    warnings = [line for line in err.getvalue().splitlines() if " WARN " in line]
    assert len(warnings) >= 2, err.getvalue()
    assert warnings[0].endswith(f"WARN [AdminClient clientId=adminclient-1] Connection to node -1 "
                                f"(127.0.0.1/127.0.0.1:{port}) could not be established. Broker may not be "
                                f"available. (org.apache.kafka.clients.NetworkClient)")
    assert "Timed out waiting for a node assignment" in out.getvalue()
