"""kafka-verifiable-consumer's events, line by line, as a system test reads them.

A scripted consumer stands in for the group (the integration tier runs the real one):
each poll hands back the records or the error the script says, and every commit is
recorded, so the tests can check what the tool prints and commits for a given poll.
"""
from __future__ import annotations

import io
import json

import pytest

from kafkalike.cli.verifiable_consumer import VerifiableConsumer, _parser, consumer_config, main
from kafkalike.client.consumer import ConsumerRecord, OffsetAndMetadata, TopicPartition
from kafkalike.client.errors import CommitFailedError, WakeupError


def record(partition: int, offset: int, topic: str = "t") -> ConsumerRecord:
    return ConsumerRecord(topic, partition, offset, 1_700_000_000_000, 0, None, f"v{partition}.{offset}")


class ScriptedConsumer:
    """Plays a list of poll outcomes (record lists or exceptions), then raises WakeupError."""

    def __init__(self, polls: list, commit_errors: list | None = None) -> None:
        self.polls = list(polls)
        self.commit_errors = list(commit_errors or [])
        self.commits: list[dict] = []
        self.subscribed: tuple | None = None
        self.closed = False
        self.wakeups = 0

    def subscribe(self, topics, listener=None) -> None:
        self.subscribed = (list(topics), listener)

    def poll(self, timeout: float):
        outcome = self.polls.pop(0) if self.polls else WakeupError()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def commit_sync(self, offsets) -> None:
        error = self.commit_errors.pop(0) if self.commit_errors else None
        if error is not None:
            raise error
        self.commits.append({tp: om.offset for tp, om in offsets.items()})

    def commit_async(self, offsets, callback) -> None:
        self.commits.append({tp: om.offset for tp, om in offsets.items()})
        callback(offsets, None)

    def wakeup(self) -> None:
        self.wakeups += 1

    def close(self) -> None:
        self.closed = True


def events(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def tool(consumer=None, **options) -> tuple[VerifiableConsumer, io.StringIO]:
    out = io.StringIO()
    return VerifiableConsumer(consumer or ScriptedConsumer([]), "t", out, **options), out


def test_records_consumed_summarizes_each_partition_and_returns_next_offsets():
    verifiable, out = tool()
    offsets = verifiable.on_records([record(1, 5), record(1, 6), record(0, 0), record(1, 7), record(0, 1)])
    (event,) = events(out)
    assert list(event) == ["timestamp", "name", "count", "partitions"]
    assert event["name"] == "records_consumed" and isinstance(event["timestamp"], int)
    assert event["count"] == 5
    assert event["partitions"] == [
        {"topic": "t", "partition": 1, "count": 3, "minOffset": 5, "maxOffset": 7},
        {"topic": "t", "partition": 0, "count": 2, "minOffset": 0, "maxOffset": 1},
    ]
    assert {tp: om.offset for tp, om in offsets.items()} == {TopicPartition("t", 1): 8, TopicPartition("t", 0): 2}
    assert verifiable.consumed == 5


def test_max_messages_cuts_the_summary_but_count_is_the_whole_poll():
    verifiable, out = tool(max_messages=4)
    verifiable.on_records([record(0, 0), record(0, 1)])
    offsets = verifiable.on_records([record(2, 10), record(2, 11), record(2, 12), record(0, 2)])
    second = events(out)[1]
    assert second["count"] == 4
    assert second["partitions"] == [{"topic": "t", "partition": 2, "count": 2, "minOffset": 10, "maxOffset": 11}]
    assert {tp: om.offset for tp, om in offsets.items()} == {TopicPartition("t", 2): 12}
    assert verifiable.finished()


def test_verbose_prints_record_data_before_the_summary():
    verifiable, out = tool(verbose=True, max_messages=2)
    verifiable.on_records([record(0, 3), record(1, 9), record(0, 4)])
    printed = events(out)
    assert [e["name"] for e in printed] == ["record_data", "record_data", "records_consumed"]
    assert list(printed[0]) == ["timestamp", "name", "key", "value", "topic", "partition", "offset"]
    assert [(e["key"], e["value"], e["topic"], e["partition"], e["offset"]) for e in printed[:2]] == [
        (None, "v0.3", "t", 0, 3), (None, "v0.4", "t", 0, 4)]


def test_rebalance_events_list_topic_and_partition():
    verifiable, out = tool()
    verifiable.on_partitions_assigned({TopicPartition("t", 2), TopicPartition("t", 0)})
    verifiable.on_partitions_revoked({TopicPartition("t", 1)})
    verifiable.on_partitions_lost(set())
    assigned, revoked, lost = events(out)
    assert (assigned["name"], assigned["partitions"]) == (
        "partitions_assigned", [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 2}])
    assert (revoked["name"], revoked["partitions"]) == ("partitions_revoked", [{"topic": "t", "partition": 1}])
    assert (lost["name"], lost["partitions"]) == ("partitions_revoked", [])


def test_offsets_committed_has_error_only_on_failure():
    verifiable, out = tool()
    offsets = {TopicPartition("t", 0): OffsetAndMetadata(12)}
    verifiable.on_commit_complete(offsets, None)
    verifiable.on_commit_complete(offsets, CommitFailedError("the group rebalanced"))
    ok, failed = events(out)
    assert list(ok) == ["timestamp", "name", "offsets", "success"]
    assert ok["offsets"] == [{"topic": "t", "partition": 0, "offset": 12}] and ok["success"] is True
    assert list(failed) == ["timestamp", "name", "offsets", "error", "success"]
    assert (failed["error"], failed["success"]) == ("the group rebalanced", False)


def test_run_commits_each_poll_and_brackets_the_output():
    consumer = ScriptedConsumer([[record(0, 0), record(0, 1)], [], [record(1, 0)]])
    verifiable, out = tool(consumer)
    verifiable.run()
    printed = events(out)
    assert [e["name"] for e in printed] == ["startup_complete", "records_consumed", "offsets_committed",
                                            "records_consumed", "offsets_committed", "shutdown_complete"]
    assert consumer.subscribed == (["t"], verifiable) and consumer.closed
    assert consumer.commits == [{TopicPartition("t", 0): 2}, {TopicPartition("t", 1): 1}]
    assert verifiable.shutdown.is_set()


def test_run_stops_at_max_messages_without_being_woken():
    consumer = ScriptedConsumer([[record(0, i) for i in range(3)], [record(0, 3), record(0, 4)],
                                 [record(0, 5)]])
    verifiable, out = tool(consumer, max_messages=4)
    verifiable.run()
    assert consumer.commits == [{TopicPartition("t", 0): 3}, {TopicPartition("t", 0): 4}]
    assert consumer.polls == [[record(0, 5)]]
    assert events(out)[-1]["name"] == "shutdown_complete"


def test_failed_commit_is_reported_and_consuming_goes_on():
    consumer = ScriptedConsumer([[record(0, 0)], [record(0, 1)]], commit_errors=[CommitFailedError("rebalanced")])
    verifiable, out = tool(consumer)
    verifiable.run()
    commits = [e for e in events(out) if e["name"] == "offsets_committed"]
    assert [(c["success"], c.get("error")) for c in commits] == [(False, "rebalanced"), (True, None)]
    assert consumer.commits == [{TopicPartition("t", 0): 2}]


def test_wakeup_during_commit_still_commits_then_shuts_down():
    consumer = ScriptedConsumer([[record(0, 0)], [record(0, 1)]], commit_errors=[WakeupError()])
    verifiable, out = tool(consumer)
    verifiable.run()
    names = [e["name"] for e in events(out)]
    assert names == ["startup_complete", "records_consumed", "offsets_committed", "shutdown_complete"]
    assert consumer.commits == [{TopicPartition("t", 0): 1}]
    assert consumer.polls == [[record(0, 1)]]


def test_async_commits_report_through_the_callback():
    consumer = ScriptedConsumer([[record(0, 0)]])
    verifiable, out = tool(consumer, use_async_commit=True)
    verifiable.run()
    assert [e["name"] for e in events(out)][2] == "offsets_committed"
    assert consumer.commits == [{TopicPartition("t", 0): 1}]


def test_auto_commit_makes_no_commits_of_its_own():
    consumer = ScriptedConsumer([[record(0, 0)]])
    verifiable, out = tool(consumer, use_auto_commit=True)
    verifiable.run()
    assert "offsets_committed" not in [e["name"] for e in events(out)] and consumer.commits == []


def test_an_unexpected_error_still_closes_and_says_so():
    consumer = ScriptedConsumer([RuntimeError("boom")])
    verifiable, out = tool(consumer)
    verifiable.run()
    assert [e["name"] for e in events(out)] == ["startup_complete", "shutdown_complete"] and consumer.closed


def test_stop_wakes_the_consumer_once():
    consumer = ScriptedConsumer([])
    verifiable, _ = tool(consumer)
    verifiable.stop()
    verifiable.stop()
    assert consumer.wakeups == 1


def test_command_line_overrides_the_config_file(tmp_path):
    config_file = tmp_path / "consumer.properties"
    config_file.write_text("group.id=from-file\nsession.timeout.ms=1\nfetch.min.bytes=7\n"
                           "value.deserializer=org.apache.kafka.common.serialization.ByteArrayDeserializer\n")
    args = _parser().parse_args(["--broker-list", "h:9092", "--topic", "t", "--group-id", "g",
                                 "--consumer.config", str(config_file), "--session-timeout", "6000",
                                 "--group-instance-id", "i1", "--reset-policy", "latest",
                                 "--assignment-strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor"])
    config = consumer_config(args)
    assert config["group.id"] == "g" and config["session.timeout.ms"] == "6000"
    assert config["fetch.min.bytes"] == "7"
    assert config["bootstrap.servers"] == "h:9092" and config["group.instance.id"] == "i1"
    assert config["auto.offset.reset"] == "latest" and config["enable.auto.commit"] == "false"
    assert config["partition.assignment.strategy"] == "org.apache.kafka.clients.consumer.RoundRobinAssignor"
    assert config["value.deserializer"].endswith("StringDeserializer")


def test_defaults_match_the_java_tool():
    args = _parser().parse_args(["--bootstrap-server", "h:9092", "--topic", "t", "--group-id", "g"])
    config = consumer_config(args)
    assert args.max_messages == -1 and not args.verbose
    assert config["session.timeout.ms"] == "30000" and config["auto.offset.reset"] == "earliest"
    assert config["partition.assignment.strategy"] == "org.apache.kafka.clients.consumer.RangeAssignor"
    assert "group.instance.id" not in config


def test_group_id_is_required_and_no_arguments_prints_help(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["--bootstrap-server", "h:9092", "--topic", "t"])
    out = io.StringIO()
    assert main([], out=out) == 0
    assert "--group-id" in out.getvalue() and "--enable-autocommit" in out.getvalue()
