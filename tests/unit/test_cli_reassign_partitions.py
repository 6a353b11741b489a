"""kafka-reassign-partitions without a cluster: the JSON files, the throttle values, the
status lines and the command line, each as Kafka 2.8's ReassignPartitionsCommand has them."""
from __future__ import annotations

import io

import pytest

from kafkalike.cli import reassign_partitions as rp
from kafkalike.cli import reassign_partitions_plan as rpp
from kafkalike.client.admin import PartitionReassignment


def error_of(call, *args):
    with pytest.raises(rpp.JavaError) as caught:
        call(*args)
    return caught.value.java_class, caught.value.message


# -- the reassignment file -----------------------------------------------------------------


def test_a_plan_is_read_in_order_with_its_log_dirs():
    parts, dirs = rpp.parse_reassignment_json(
        '{"partitions":[{"topic":"t","partition":1,"replicas":[2,1]},'
        '{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","/d"]}]}')
    assert parts == [(("t", 1), [2, 1]), (("t", 0), [1, 2])]
    assert dirs == {("t", 0, 2): "/d"}


@pytest.mark.parametrize("text, java_class, message", [
    ('{"version":1,"partitions":[{"topic":"t","replicas":[1]}]}', rpp.JSON_MAPPING,
     "No such field exists: `partition`"),
    ('{"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}', rpp.JSON_MAPPING,
     'Expected `Int` value, received "0"'),
    ('{"partitions":[{"topic":7,"partition":0,"replicas":[1]}]}', rpp.JSON_MAPPING,
     "Expected `String` value, received 7"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":1}]}', rpp.JSON_MAPPING,
     "Expected JSON array, received 1"),
    ('[1]', rpp.JSON_MAPPING, "Expected JSON object, received [1]"),
    ('{"version":3,"partitions":[]}', rpp.ADMIN_OPERATION, "Not supported version field value 3"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}', rpp.ADMIN_COMMAND_FAILED,
     "Size of replicas list List(1, 2) is different from size of log dirs list List(any) for partition t-0"),
    ("", rpp.ADMIN_OPERATION, "The input string shouldn't be empty\n at [Source: UNKNOWN; line: -1, column: -1]"),
])
def test_malformed_plans_get_kafkas_messages(text, java_class, message):
    assert error_of(rpp.parse_reassignment_json, text) == (java_class, message)


def test_a_json_syntax_error_is_reported_as_jackson_would():
    java_class, message = error_of(rpp.parse_reassignment_json, '{"version": x}')
    assert java_class == rpp.ADMIN_OPERATION
    assert message.startswith("Unexpected character ('x' (code 120)): expected a valid value")
    assert message.endswith('at [Source: (String)"{"version": x}"; line: 1, column: 13]')


@pytest.mark.parametrize("plan, message", [
    ('{"partitions":[]}', "Partition reassignment list cannot be empty"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "Partition replica list cannot be empty"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}',
     "Partition reassignment contains duplicate topic partitions: t-0"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2,1,2]},{"topic":"u","partition":1,"replicas":[3,3]}]}',
     "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1,2. "
     "u-1 contains multiple entries for 3"),
])
def test_execute_checks_the_plan_before_sending_anything(plan, message):
    assert error_of(rpp.parse_execute_json, plan) == (rpp.ADMIN_COMMAND_FAILED, message)


def test_generate_arguments():
    assert rpp.parse_generate_args('{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}', "3,1,2,") == \
        ([3, 1, 2], ["a", "b"])
    assert error_of(rpp.parse_generate_args, '{"topics":[]}', "1,x") == (rpp.NUMBER_FORMAT, 'For input string: "x"')
    assert error_of(rpp.parse_generate_args, '{"topics":[]}', "1,1,2") == \
        (rpp.ADMIN_COMMAND_FAILED, "Broker list contains duplicate entries: 1")
    assert error_of(rpp.parse_generate_args, '{"topics":[{"topic":"a"},{"topic":"a"}]}', "1") == \
        (rpp.ADMIN_COMMAND_FAILED, "List of topics to reassign contains duplicate entries: a")
    assert error_of(rpp.parse_generate_args, "{oops", "1") == (rpp.ADMIN_OPERATION, "The input string is not a valid JSON")


def test_generated_assignments_keep_each_topics_replication_factor():
    current = {("a", 0): [0, 1], ("a", 1): [1, 0], ("b", 0): [2]}
    proposed = rpp.calculate_assignment(current, [(1, None), (2, None), (3, None)])
    assert sorted(proposed) == [("a", 0), ("a", 1), ("b", 0)]
    assert all(len(set(r)) == 2 and set(r) <= {1, 2, 3} for tp, r in proposed.items() if tp[0] == "a")
    assert len(proposed[("b", 0)]) == 1
    assert error_of(rpp.calculate_assignment, current, [(1, None)]) == (
        rpp.INVALID_REPLICATION_FACTOR, "Replication factor: 2 larger than available brokers: 1.")


def test_assignment_json_is_kafkas_layout():
    assert rpp.format_as_reassignment_json({("t", 1): [2, 1], ("t", 0): [1]}) == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"t","partition":1,"replicas":[2,1],"log_dirs":["any","any"]}]}')
    assert rpp.current_assignment_text({("t", 0): [2]}, {("t", 0): [1], ("t", 1): [1]}) == (
        "Current partition replica assignment\n\n"
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]}]}\n\n'
        "Save this to use as the --reassignment-json-file option during rollback")


# -- throttles -------------------------------------------------------------------------------


def test_throttled_replicas_name_sources_on_the_leader_side_and_new_replicas_on_the_follower_side():
    moves = rpp.proposed_move_map({}, {("t", 0): [1, 2], ("t", 10): [3, 4]}, {("t", 0): [0, 1], ("t", 10): [3, 1]})
    # Sorted as strings, as Kafka's TreeSet[String] sorts them.
    assert rpp.leader_throttles(moves) == {"t": "0:0,0:1,10:1,10:3"}
    assert rpp.follower_throttles(moves) == {"t": "0:2,10:4"}
    assert rpp.reassigning_brokers(moves) == [0, 1, 2, 3, 4]


def test_additional_reassignments_keep_the_moves_in_flight():
    in_flight = {("t", 1): PartitionReassignment((5, 3, 4), (5,), (3,)), ("u", 0): PartitionReassignment((7, 6), (7,), ())}
    moves = rpp.proposed_move_map(in_flight, {("t", 1): [4, 6]}, {("t", 1): [5, 3, 4]})
    # t-1's sources stay those of the reassignment already running; u-0 is still throttled.
    assert rpp.leader_throttles(moves) == {"t": "1:3,1:4", "u": "0:6"}
    assert rpp.follower_throttles(moves) == {"t": "1:6", "u": "0:7"}
    with pytest.raises(rpp.JavaError, match="Trying to reassign a topic partition t-9 with 0 replicas"):
        rpp.proposed_move_map({}, {("t", 9): [1]}, {})


# -- status lines ----------------------------------------------------------------------------


def test_verify_lines():
    assert rpp.partition_states_text({("t", 1): ([1, 2], [1, 2], True), ("t", 0): ([3, 1, 2], [1, 2], False),
                                     ("u", 0): ([], [1], True)}) == (
        "Status of partition reassignment:\n"
        "Reassignment of partition t-0 is still in progress.\n"
        "Reassignment of partition t-1 is complete.\n"
        "There is no active reassignment of partition u-0, but replica set is  rather than 1.")
    assert rpp.clearing_lines([3], ["a", "b"]) == ("Clearing broker-level throttles on broker 3",
                                                  "Clearing topic-level throttles on topics a,b")


# -- the command line --------------------------------------------------------------------------


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = rp.main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_help_and_version():
    code, out, err = run_main()
    assert (code, out) == (1, "")
    assert err.startswith("This tool helps to move topic partitions between replicas.\nOption ")
    assert "--reassignment-json-file <String:" in err and "--throttle <Long: throttle>" in err
    code, out, err = run_main("--version")
    assert code == 0 and out.endswith(")\n") and "(Commit:" in out


def test_whole_option_names_only_and_errors_escaping_main():
    code, out, err = run_main("--bootstrap-server", "h:1", "--lis")
    assert (code, out) == (1, "")
    assert err == 'Exception in thread "main" joptsimple.UnrecognizedOptionException: lis is not a recognized option\n'


class NoService:
    """Stands in for the admin client: these checks come before any request."""

    def __init__(self, config, out):
        self.config = config

    def close(self):
        pass


def test_a_missing_file_is_the_actions_error(tmp_path, monkeypatch):
    monkeypatch.setattr(rp, "AdminService", NoService)
    missing = str(tmp_path / "nope.json")
    code, out, err = run_main("--bootstrap-server", "h:1", "--verify", "--reassignment-json-file", missing)
    assert (code, err) == (1, "")
    assert out.startswith(f"Error: {missing}\njava.nio.file.NoSuchFileException: {missing}\n\tat ")


def test_a_bad_throttle_value_is_reported_when_it_is_read(tmp_path, monkeypatch):
    plan = tmp_path / "p.json"
    plan.write_text('{"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}')
    monkeypatch.setattr(rp, "AdminService", NoService)
    code, out, err = run_main("--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", str(plan),
                              "--throttle", "fast")
    assert code == 1
    assert out.startswith("Error: Cannot parse argument 'fast' of option throttle\n")


def test_log_dir_move_states_print_as_2_8_prints_them():
    states = {
        ("t", 0, 2): rpp.log_dir_move_state("/d2", "/d1", "/d2", True),
        ("t", 1, 1): rpp.log_dir_move_state("/d2", "/d2", None, True),
        ("a", 0, 2): rpp.log_dir_move_state("/d2", "/d1", None, True),
        ("t", 2, 1): rpp.log_dir_move_state("/d2", "/d1", "/d3", True),
        ("t", 3, 1): rpp.log_dir_move_state("/d2", None, None, True),
    }
    assert rpp.move_states_text(states) == (
        "Reassignment of replica 1-t-1 completed successfully.\n"
        "Partition t-2 on broker 1 is being moved to log dir /d3 instead of /d2.\n"
        "Partition t-3 is not found in any live log dir on broker 1. There is likely an offline log directory "
        "on the broker.\n"
        "Partition a-0 on broker 2 is not being moved from log dir /d1 to /d2.\n"
        "Reassignment of replica 2-t-0 is still in progress.")
    assert rpp.moving_brokers({("t", 0, 2): "/d", ("u", 1, 1): "/e", ("t", 1, 2): "/d"}) == [1, 2]
