"""kafka-leader-election and kafka-preferred-replica-election: option checks, the JSON file,
and the lines printed for each kind of outcome (an in-memory admin answers)."""
from __future__ import annotations

import io

import pytest

from kafkalike.cli import leader_election, preferred_replica_election
from kafkalike.cli.leader_election import JavaError, elect, parse_partitions_json
from kafkalike.client.admin import KafkaAdminError
from kafkalike.protocol.errors import ErrorCode


class FakeAdmin:
    def __init__(self, results):
        self.results = results
        self.calls = []

    def elect_leaders(self, election_type, partitions):
        self.calls.append((election_type, partitions))
        return self.results


def test_outcomes_are_printed_as_kafka_does():
    admin = FakeAdmin({
        ("b", 0): None, ("a", 1): None,
        ("a", 0): KafkaAdminError(ErrorCode.ELECTION_NOT_NEEDED),
        ("c", 2): KafkaAdminError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                  "Failed to elect leader for partition c-2 under strategy "
                                  "PreferredReplicaPartitionLeaderElectionStrategy"),
    })
    out = io.StringIO()
    with pytest.raises(JavaError) as raised:
        elect(admin, "PREFERRED", None, out)
    assert out.getvalue() == (
        "Successfully completed leader election (PREFERRED) for partitions a-1, b-0\n"
        "Valid replica already elected for partitions a-0\n"
        "Error completing leader election (PREFERRED) for partition: c-2: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: Failed to elect leader for "
        "partition c-2 under strategy PreferredReplicaPartitionLeaderElectionStrategy\n")
    assert raised.value.render() == "kafka.common.AdminCommandFailedException: 1 replica(s) could not be elected"
    assert admin.calls == [(0, None)]


@pytest.mark.parametrize("argv, message", [
    (["--bootstrap-server", "h:1", "--election-type", "preferred"],
     "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file"),
    (["--all-topic-partitions"], "Missing required option(s): election-type, bootstrap-server"),
    (["--bootstrap-server", "h:1", "--election-type", "unclean", "--topic", "t"],
     "Missing required option(s): partition"),
    (["--bootstrap-server", "h:1", "--election-type", "unclean", "--all-topic-partitions", "--partition", "1"],
     "Option partition is only allowed if topic is used"),
])
def test_option_checks_fail_before_connecting(argv, message):
    out, err = io.StringIO(), io.StringIO()
    assert leader_election.main(argv, out, err) == 1
    assert err.getvalue() == f'Exception in thread "main" kafka.common.AdminCommandFailedException: {message}\n'
    assert out.getvalue() == ""


def test_unknown_election_type_is_a_conversion_error():
    err = io.StringIO()
    assert leader_election.main(["--bootstrap-server", "h:1", "--election-type", "random",
                                 "--all-topic-partitions"], io.StringIO(), err) == 1
    assert "Cannot parse argument 'random' of option election-type" in err.getvalue()


def test_json_file_rules():
    assert parse_partitions_json('{"partitions": [{"topic": "t", "partition": 1}, {"topic": "u", "partition": 0}]}') \
        == [("t", 1), ("u", 0)]
    with pytest.raises(JavaError, match="Replica election data contains duplicate partitions: t-1"):
        parse_partitions_json('{"partitions": [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 1}]}')
    with pytest.raises(JavaError, match='missing "partition" field'):
        parse_partitions_json('{"other": []}')
    with pytest.raises(JavaError, match="Replica election data is empty"):
        parse_partitions_json("not json")


def test_deprecated_tool_through_admin_lists_successes_noops_then_failures():
    admin = FakeAdmin({("t", 0): None,
                       ("t", 1): KafkaAdminError(ErrorCode.ELECTION_NOT_NEEDED,
                                                 "Leader election not needed for topic partition."),
                       ("t", 2): KafkaAdminError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                                 "Failed to elect leader for partition t-2 under strategy "
                                                 "PreferredReplicaPartitionLeaderElectionStrategy")})
    out = io.StringIO()
    with pytest.raises(JavaError, match="1 preferred replica\\(s\\) could not be elected"):
        preferred_replica_election.elect_through_admin(admin, [("t", 0), ("t", 1), ("t", 2)], out)
    assert out.getvalue() == (
        "Successfully completed preferred leader election for partitions t-0\n"
        "Preferred replica already elected for partitions t-1\n"
        "Error completing preferred leader election for partition: t-2: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: Failed to elect leader for partition "
        "t-2 under strategy PreferredReplicaPartitionLeaderElectionStrategy\n")


def test_deprecated_tool_says_when_it_is_not_authorized():
    class Refusing:
        def elect_leaders(self, election_type, partitions):
            raise KafkaAdminError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    out = io.StringIO()
    with pytest.raises(JavaError, match="Not authorized to perform leader election"):
        preferred_replica_election.elect_through_admin(Refusing(), None, out)
    assert out.getvalue() == "Not authorized to perform leader election\n"


def test_deprecated_tool_wants_exactly_one_connection_option():
    out, err = io.StringIO(), io.StringIO()
    assert preferred_replica_election.main(["--path-to-json-file", "x.json"], out, err) == 1
    assert err.getvalue().startswith("Exactly one of 'bootstrap-server' or 'zookeeper' must be provided\n")
    assert preferred_replica_election.scala_set(["a-0", "a-1"]) == "Set(a-0, a-1)"
    assert preferred_replica_election.scala_set([f"a-{i}" for i in range(5)]).startswith("HashSet(")


@pytest.mark.parametrize("tool", [leader_election, preferred_replica_election])
@pytest.mark.parametrize("argv", [[], ["--help"]])
def test_help_goes_to_stderr_with_status_1_as_kafka(tool, argv):
    out, err = io.StringIO(), io.StringIO()
    assert tool.main(argv, out=out, err=err) == 1
    assert err.getvalue() == tool.HELP
    assert tool.HELP not in out.getvalue()     # stdout keeps only the deprecation notice, if any
