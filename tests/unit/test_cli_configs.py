"""kafka-configs' command line, as Kafka 2.8's ConfigCommandOptions reads and checks it
(no broker, no ZooKeeper: every case here fails or is decided before connecting)."""
from __future__ import annotations

import io

import pytest

from kafkalike.cli.configs import (configs_to_add, configs_to_delete, entity_names, entity_types, main,
                                   parse_args)
from kafkalike.cli.configs_zookeeper import parse_entity
from kafkalike.common.versions import KAFKA_COMMIT_ID, KAFKA_VERSION

BS = ["--bootstrap-server", "localhost:1"]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv, message", [
    (BS + ["--describe"], "At least one entity type must be specified"),
    (BS + ["--entity-type", "nope", "--describe"],
     "Invalid entity type nope, the entity type must be one of topics,clients,users,brokers,ips,broker-loggers with "
     "the --bootstrap-server argument"),
    (["--zookeeper", "z:1", "--entity-type", "broker-loggers", "--describe"],
     "Invalid entity type broker-loggers, the entity type must be one of topics,clients,users,brokers,ips with the "
     "--zookeeper argument"),
    (BS + ["--entity-type", "users", "--entity-type", "users", "--describe"], "Duplicate entity type(s) specified: users"),
    (BS + ["--entity-type", "topics", "--entity-type", "brokers", "--describe"],
     "Only 'users' and 'clients' entity types may be specified together"),
    (BS + ["--entity-name", "x", "--broker", "0", "--describe"],
     "--entity-{type,name,default} should not be used in conjunction with specific entity flags"),
    (["--broker", "0", "--describe"], "One of the required --bootstrap-server or --zookeeper arguments must be specified"),
    (BS + ["--zookeeper", "z:1", "--broker", "0", "--describe"],
     "Only one of --bootstrap-server or --zookeeper must be specified"),
    (["--zookeeper", "z:1", "--broker", "0", "--describe", "--all"], "--bootstrap-server must be specified for --all"),
    (BS + ["--broker", "zero", "--describe"],
     "The entity name for brokers must be a valid integer broker id, but it is: zero"),
    (BS + ["--entity-type", "topics", "--alter", "--add-config", "a=b"],
     "an entity name must be specified with --alter of topics"),
    (BS + ["--entity-type", "clients", "--alter", "--add-config", "a=b"],
     "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
    (BS + ["--topic", "t", "--alter", "--add-config", "a=b", "--add-config-file", "f"],
     "Only one of --add-config or --add-config-file must be specified"),
    (BS + ["--topic", "t", "--alter"],
     "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"),
    (BS + ["--topic", "t", "--describe", "--nope"], "nope is not a recognized option"),
    (BS + ["--topic", "t", "--desc"], "desc is not a recognized option"),     # no abbreviations
    (BS + ["--topic", "t", "--alter", "--add-config", "a"],
     'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".'),
])
def test_bad_command_lines_print_kafkas_message_and_exit_1(argv, message):
    assert run(*argv) == (1, "", message + "\n")


def test_usage_errors_print_the_option_table():
    code, out, err = run(*BS, "--topic", "t")
    assert (code, out) == (1, "")
    assert err.startswith("Command must include exactly one action: --describe, --alter\nOption")
    code, _, err = run(*BS, "--topic", "t", "--describe", "--add-config", "a=b")
    assert err.startswith('Option "[describe]" can\'t be used with option "[add-config]"\n')
    code, _, err = run()
    assert code == 1 and err.startswith("This tool helps to manipulate and describe entity config for a topic, "
                                        "client, user, broker or ip\n")
    assert run("--version") == (0, f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n", "")


def test_entity_names_follow_the_command_line_order():
    args = parse_args(BS + ["--entity-type", "users", "--entity-default", "--entity-type", "clients",
                            "--entity-name", "app", "--describe"])
    assert entity_types(args) == ["users", "clients"]
    assert entity_names(args) == ["", "app"]
    args = parse_args(BS + ["--user", "alice", "--client-defaults", "--describe"])
    assert (entity_types(args), entity_names(args)) == (["users", "clients"], ["alice", ""])
    entity = parse_entity(parse_args(["--zookeeper", "z", "--entity-type", "clients", "--entity-name", "c 1",
                                      "--entity-type", "users", "--entity-name", "a*b", "--alter",
                                      "--add-config", "x=1"]))
    assert (entity.root.entity_type, entity.full_sanitized_name) == ("users", "a%2Ab/clients/c%201")
    assert str(entity) == "user-principal 'a*b', client-id 'c 1'"
    assert str(parse_entity(parse_args(["--zookeeper", "z", "--broker-defaults", "--describe"]))) == "default brokers"


def test_configs_to_add_and_delete():
    out = io.StringIO()
    args = parse_args(BS + ["--topic", "t", "--alter", "--add-config",
                            "cleanup.policy=[compact,delete], retention.ms = 10,empty=,message.format.version=0.10",
                            "--delete-config", "a,b", "--delete-config", " c "])
    assert configs_to_add(args, out) == {"cleanup.policy": "compact,delete", "retention.ms": "10", "empty": "",
                                         "message.format.version": "0.10"}
    assert out.getvalue().startswith("WARNING: The configuration message.format.version=0.10 is specified.")
    assert configs_to_delete(args) == ["a", "b", "c"]


def test_add_config_file(tmp_path):
    path = tmp_path / "more.properties"
    path.write_text("log.retention.ms=1000\n# comment\nlog.segment.bytes = 2000000\n")
    args = parse_args(BS + ["--broker", "0", "--alter", "--add-config-file", str(path)])
    assert configs_to_add(args, io.StringIO()) == {"log.retention.ms": "1000", "log.segment.bytes": "2000000"}
