"""kafka-consumer-groups: list, describe, delete and reset consumer groups, as Kafka 2.8's
ConsumerGroupCommand.

Its habits are kept because scripts depend on them: tables go to stdout, remarks about
a group's state ("has no active members", "is rebalancing") to stderr, and a failure
is one "Error: ..." line on stdout with the exception's stack trace on stderr, after
which the tool still exits 0. Only usage errors (printUsageAndDie) and exceptions
before the command runs exit 1. A failed admin call is reported as Kafka reports a
failed future: the message of java.util.concurrent.ExecutionException, which is the
Kafka exception's class and text.

Options are read and checked in consumer_groups_options, tables made in
consumer_groups_format; this module asks the admin client and decides what to print.
"""
from __future__ import annotations

import csv
import io
import os
import sys
import time
import traceback
from typing import Callable, Mapping, Sequence, TextIO, TypeVar

from kafkalike.cli import joptions
from kafkalike.common.versions import KAFKA_COMMIT_ID, KAFKA_VERSION
from kafkalike.properties import load as load_properties
from kafkalike.cli.consumer_groups_format import (
    MISSING,
    MemberRow,
    OffsetRow,
    StateRow,
    delete_offsets_table,
    group_states_table,
    members_table,
    offsets_table,
    reset_csv,
    reset_table,
    state_table,
)
from kafkalike.cli.consumer_groups_options import (
    ACTIONS,
    ACTIONS_MESSAGE,
    HELP_MESSAGE,
    ParsedArgs,
    check_args,
    format_help,
    java_long,
    parse_args,
    parse_datetime,
    parse_duration,
    scenarios_text,
)
from kafkalike.cli.joptions import JavaError, UsageError
from kafkalike.cli.topics_options import CONFIG_EXCEPTION
from kafkalike.client.admin import AdminClient, KafkaAdminError
from kafkalike.client.groups import (
    UNKNOWN_OFFSET,
    GroupDescription,
    OffsetSpec,
    TopicPartition,
)
from kafkalike.protocol.errors import ErrorCode
from kafkalike.cli.tool_main import run_tool

LOGGER_NAME = "kafka.admin.ConsumerGroupCommand$"
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
EXECUTION_EXCEPTION = "java.util.concurrent.ExecutionException"
T = TypeVar("T")


class FutureFailure(Exception):
    """A failed admin call as Java sees it: future.get() throws ExecutionException(cause)."""

    def __init__(self, cause: KafkaAdminError | JavaError) -> None:
        self.cause = cause
        super().__init__(_to_string(cause))


def _java_view(error: BaseException) -> tuple[str, str | None]:
    """(Java class, getMessage) of an exception."""
    if isinstance(error, FutureFailure):
        return EXECUTION_EXCEPTION, _to_string(error.cause)
    if isinstance(error, (JavaError, KafkaAdminError)):
        return error.java_class, error.message
    return f"{type(error).__module__}.{type(error).__qualname__}", str(error) or None


def _to_string(error: BaseException) -> str:
    """Throwable.toString: the class, and ": message" when there is one."""
    java_class, message = _java_view(error)
    return java_class if message is None else f"{java_class}: {message}"


def _stack_trace(error: BaseException) -> str:
    """printStackTrace: the exception, one `at` line per frame (innermost first), its cause."""
    lines = [_to_string(error)]
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        module = os.path.splitext(os.path.basename(frame.filename))[0]
        lines.append(f"\tat {module}.{frame.name}({os.path.basename(frame.filename)}:{frame.lineno})")
    cause = error.cause if isinstance(error, (FutureFailure, JavaError)) else None
    if cause is not None:
        lines.append("Caused by: " + _stack_trace(cause).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _log(err: TextIO, level: str, text: str) -> None:
    """One log4j line in the tools' layout: [%d] %p %m (%c)%n."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
    err.write(f"[{stamp}] {level} {text} ({LOGGER_NAME})\n")


def _tp(tp: TopicPartition) -> str:
    """TopicPartition.toString."""
    return f"{tp[0]}-{tp[1]}"


def _sorted(partitions) -> list[TopicPartition]:
    return sorted(partitions, key=lambda tp: (tp[0], tp[1]))


class ConsumerGroupService:
    """ConsumerGroupCommand's service: one admin client, one --timeout for every call."""

    def __init__(self, args: ParsedArgs, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out = out
        self.err = err
        config: dict[str, str] = {}
        command_config = args.value("command-config")
        if command_config is not None:
            try:
                config.update(load_properties(command_config))
            except OSError as error:
                raise JavaError("java.nio.file.NoSuchFileException", command_config) from error
        config["bootstrap.servers"] = args.value("bootstrap-server")
        # --timeout bounds every admin call. Kafka reads it only when a call is made, so a
        # malformed value fails the command (an "Error:" line), not the tool's start.
        self._timeout_error: JavaError | None = None
        try:
            timeout = args.long_value("timeout")
        except JavaError as error:
            timeout, self._timeout_error = 5000, error
        config["default.api.timeout.ms"] = str(max(timeout, 0))
        try:
            self._admin = AdminClient(config)
        except ValueError as error:
            raise JavaError("org.apache.kafka.common.KafkaException", "Failed to create new KafkaAdminClient",
                            cause=JavaError(CONFIG_EXCEPTION, str(error))) from None

    @property
    def admin(self) -> AdminClient:
        if self._timeout_error is not None:
            raise self._timeout_error
        return self._admin

    def close(self) -> None:
        self._admin.close()

    def _get(self, call: Callable[..., T], *args) -> T:
        """An admin call whose failure surfaces as Java's ExecutionException would."""
        try:
            return call(*args)
        except KafkaAdminError as error:
            raise FutureFailure(error) from None

    # -- list ---------------------------------------------------------------------------

    def list_consumer_groups(self, states: Sequence[str] = ()):
        return [g for g in self._get(self.admin.list_groups, states) if g.is_consumer_group]

    def list_groups(self) -> None:
        if self.args.has("state"):
            value = self.args.value("state")
            states = _parse_states(value) if value else []
            listings = self.list_consumer_groups(states)
            self.out.write(group_states_table([(g.group_id, g.state or "") for g in listings]))
        else:
            for listing in self.list_consumer_groups():
                self.out.write(listing.group_id + "\n")

    # -- describe -----------------------------------------------------------------------

    def _group_ids(self) -> list[str]:
        if self.args.has("all-groups"):
            return [g.group_id for g in self.list_consumer_groups()]
        return list(dict.fromkeys(self.args.all("group")))

    def describe_consumer_groups(self, group_ids: Sequence[str]) -> dict[str, GroupDescription]:
        described = self._get(self.admin.describe_groups, group_ids)
        for group_id in group_ids:
            description = described[group_id]
            if not description.is_consumer_group:
                raise FutureFailure(JavaError("java.lang.IllegalArgumentException",
                                              f"GroupId {group_id} is not a consumer group "
                                              f"({description.protocol_type})."))
        return described

    def describe_groups(self) -> None:
        group_ids = self._group_ids()
        if self.args.has("members"):
            self._print_members(group_ids, self.args.has("verbose"))
        elif self.args.has("state"):
            self._print_states(group_ids)
        else:
            self._print_offsets(group_ids)

    def _should_print(self, group_id: str, state: str | None, rows: int | None) -> bool:
        """Kafka's shouldPrintMemberState: say what is odd about the group, and whether a table follows."""
        if rows is None:
            self.print_error(f"The consumer group '{group_id}' does not exist.")
            return False
        if state == "Dead":
            self.print_error(f"Consumer group '{group_id}' does not exist.")
        elif state == "Empty":
            self.err.write(f"\nConsumer group '{group_id}' has no active members.\n")
        elif state in ("PreparingRebalance", "CompletingRebalance"):
            self.err.write(f"\nWarning: Consumer group '{group_id}' is rebalancing.\n")
        elif state != "Stable":
            raise JavaError("org.apache.kafka.common.KafkaException",
                            f"Expected a valid consumer group state, but found '{state or 'NONE'}'.")
        return state != "Dead" and rows > 0

    def collect_offsets(self, group_ids: Sequence[str]) -> dict[str, tuple[str, list[OffsetRow]]]:
        """Each group's state and rows: members' partitions (biggest assignment first), then
        committed partitions no member holds."""
        described = self.describe_consumer_groups(group_ids)
        out = {}
        for group_id in sorted(described):
            group = described[group_id]
            committed = self._get(self.admin.list_group_offsets, group_id)
            rows: list[OffsetRow] = []
            assigned: set[TopicPartition] = set()
            members = sorted((m for m in group.members if m.assignment), key=lambda m: -len(m.assignment))
            for member in members:
                partitions = _sorted(set(member.assignment))
                assigned.update(partitions)
                rows += self._offset_rows(group_id, partitions, committed, member.member_id, member.host,
                                          member.client_id)
            unassigned = _sorted(tp for tp in committed if tp not in assigned)
            if unassigned:
                rows += self._offset_rows(group_id, unassigned, committed, MISSING, MISSING, MISSING)
            out[group_id] = (group.state, rows)
        return out

    def _offset_rows(self, group_id, partitions, committed, consumer_id, host, client_id) -> list[OffsetRow]:
        ends = self.log_offsets(partitions, OffsetSpec.latest())
        rows = []
        for tp in partitions:
            offset = committed[tp].offset if tp in committed else None
            rows.append(OffsetRow(group_id, tp[0], tp[1], offset, ends.get(tp), consumer_id, host, client_id))
        return rows

    def _print_offsets(self, group_ids: Sequence[str]) -> None:
        for group_id, (state, rows) in self.collect_offsets(group_ids).items():
            if self._should_print(group_id, state, len(rows)):
                self.out.write(offsets_table(rows))

    def _print_members(self, group_ids: Sequence[str], verbose: bool) -> None:
        described = self.describe_consumer_groups(group_ids)
        for group_id in sorted(described):
            group = described[group_id]
            rows = [MemberRow(group_id, m.member_id, m.group_instance_id or "", m.host, m.client_id,
                              len(m.assignment), m.assignment if verbose else ()) for m in group.members]
            if self._should_print(group_id, group.state, len(rows)):
                self.out.write(members_table(rows, verbose))

    def _print_states(self, group_ids: Sequence[str]) -> None:
        described = self.describe_consumer_groups(group_ids)
        for group_id in sorted(described):
            group = described[group_id]
            if self._should_print(group_id, group.state, 1):
                self.out.write(state_table(StateRow(group_id, group.coordinator, group.partition_assignor,
                                                    group.state, len(group.members))))

    # -- offsets of the log -------------------------------------------------------------

    def log_offsets(self, partitions: Sequence[TopicPartition], spec: OffsetSpec) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        found = self._get(self.admin.list_offsets, {tp: spec for tp in partitions})
        return {tp: listed.offset for tp, listed in found.items()}

    def _offsets_at(self, partitions: Sequence[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
        """By timestamp; a partition with nothing that late falls back to its end, as Kafka does."""
        found = self._get(self.admin.list_offsets, {tp: OffsetSpec.for_timestamp(max(timestamp, 0))
                                                    for tp in partitions})
        out, empty = {}, []
        for tp in partitions:
            if found[tp].offset != UNKNOWN_OFFSET:
                out[tp] = found[tp].offset
            else:
                empty.append(tp)
        for topic, partition in empty:
            self.out.write(f"\nWarn: Partition {partition} from topic {topic} is empty. Falling back to latest "
                           "known offset.\n")
        out.update(self.log_offsets(empty, OffsetSpec.latest()))
        return out

    # -- reset --------------------------------------------------------------------------

    def reset_offsets(self) -> dict[str, dict[TopicPartition, int]]:
        group_ids = self._group_ids()
        described = self.describe_consumer_groups(group_ids)
        dry_run = self.args.has("dry-run") or not self.args.has("execute")
        result: dict[str, dict[TopicPartition, int]] = {}
        for group_id in group_ids:
            state = described[group_id].state
            if state not in ("Empty", "Dead"):
                self.print_error(f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
                                 f"current state is {state}.")
                result[group_id] = {}
                continue
            prepared = self._prepare(group_id, self._partitions_to_reset(group_id))
            if not dry_run:
                self._get(self.admin.alter_group_offsets, group_id, prepared)
            result[group_id] = prepared
        return result

    def _partitions_to_reset(self, group_id: str) -> list[TopicPartition]:
        if self.args.has("all-topics"):
            return _sorted(self._get(self.admin.list_group_offsets, group_id))
        if self.args.has("topic"):
            return self._topic_partitions(self.args.all("topic"))
        if self.args.has("from-file"):
            return []
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")

    def _topic_partitions(self, topic_args: Sequence[str]) -> list[TopicPartition]:
        named = [tp for arg in topic_args if ":" in arg for tp in _parse_topic_partitions(arg)]
        whole = [arg for arg in topic_args if ":" not in arg]
        described = self._get(self.admin.describe_topics, whole) if whole else {}
        return named + [(topic, p.partition) for topic in whole for p in described[topic].partitions]

    def _committed(self, group_id: str) -> dict[TopicPartition, int]:
        return {tp: o.offset for tp, o in self._get(self.admin.list_group_offsets, group_id).items()}

    def _prepare(self, group_id: str, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The new offsets, by the chosen scenario (Kafka's prepareOffsetsToReset)."""
        args = self.args
        if args.has("to-offset"):
            offset = args.long_value("to-offset")
            return self._clamped({tp: offset for tp in partitions})
        if args.has("to-earliest"):
            return self._required(partitions, self.log_offsets(partitions, OffsetSpec.earliest()),
                                  "Error getting starting offset of topic partition")
        if args.has("to-latest"):
            return self._required(partitions, self.log_offsets(partitions, OffsetSpec.latest()),
                                  "Error getting ending offset of topic partition")
        if args.has("shift-by"):
            shift = args.long_value("shift-by")
            committed = self._committed(group_id)
            wanted = {}
            for tp in partitions:
                if tp not in committed:
                    raise UsageError(f"Cannot shift offset for partition {_tp(tp)} since there is no current "
                                     "committed offset")
                wanted[tp] = committed[tp] + shift
            return self._clamped(wanted)
        if args.has("to-datetime"):
            timestamp = parse_datetime(args.value("to-datetime"))
            return self._required(partitions, self._offsets_at(partitions, timestamp),
                                  "Error getting offset by timestamp of topic partition")
        if args.has("by-duration"):
            timestamp = int(time.time() * 1000) - parse_duration(args.value("by-duration"))
            return self._required(partitions, self._offsets_at(partitions, timestamp),
                                  "Error getting offset by timestamp of topic partition")
        if args.has("from-file"):
            plan = self._plan_from_file()
            if group_id not in plan:
                self.print_error(f"No reset plan for group {group_id} found")
                return {}
            return self._clamped(plan[group_id])
        if args.has("to-current"):
            committed = self._committed(group_id)
            with_commit = {tp: committed[tp] for tp in partitions if tp in committed}
            ends = self.log_offsets([tp for tp in partitions if tp not in committed], OffsetSpec.latest())
            return {**with_commit, **ends}
        raise UsageError(f"Option '[reset-offsets]' requires one of the following scenarios: {scenarios_text()}")

    @staticmethod
    def _required(partitions, found: Mapping[TopicPartition, int], what: str) -> dict[TopicPartition, int]:
        out = {}
        for tp in partitions:
            if tp not in found:
                raise UsageError(f"{what}: {_tp(tp)}")
            out[tp] = found[tp]
        return out

    def _clamped(self, wanted: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Requested offsets brought within [log start, log end], with Kafka's warnings."""
        partitions = list(wanted)
        starts = self.log_offsets(partitions, OffsetSpec.earliest())
        ends = self.log_offsets(partitions, OffsetSpec.latest())
        out = {}
        for tp, offset in wanted.items():
            if offset > ends[tp]:
                _log(self.err, "WARN", f"New offset ({offset}) is higher than latest offset for topic partition "
                                       f"{_tp(tp)}. Value will be set to {ends[tp]}")
                offset = ends[tp]
            elif offset < starts[tp]:
                _log(self.err, "WARN", f"New offset ({offset}) is lower than earliest offset for topic partition "
                                       f"{_tp(tp)}. Value will be set to {starts[tp]}")
                offset = starts[tp]
            out[tp] = offset
        return out

    def _plan_from_file(self) -> dict[str, dict[TopicPartition, int]]:
        """The --from-file CSV: "topic,partition,offset" for one group, else with the group first."""
        path = self.args.value("from-file")
        try:
            with open(path, encoding="utf-8") as f:
                rows = [row for row in csv.reader(io.StringIO(f.read())) if row]
        except OSError:
            raise JavaError("java.nio.file.NoSuchFileException", path) from None
        single = len(self.args.all("group")) == 1
        plan: dict[str, dict[TopicPartition, int]] = {}
        old_format = bool(rows) and len(rows[0]) == 3 and _csv_number(rows[0][1]) and _csv_number(rows[0][2])
        for row in rows:
            if single and old_format:
                group, (topic, partition, offset) = self.args.value("group"), row[:3]
            elif len(row) >= 4:
                group, topic, partition, offset = row[:4]
            else:
                raise JavaError("com.fasterxml.jackson.databind.RuntimeJsonMappingException",
                                f"Not enough column values for a reset plan line: {','.join(row)}")
            plan.setdefault(group, {})[(topic, int(partition))] = int(offset)
        return plan

    def print_reset(self, plan: dict[str, dict[TopicPartition, int]]) -> None:
        ordered = {g: {tp: plan[g][tp] for tp in _sorted(plan[g])} for g in plan}
        if self.args.has("export"):
            self.out.write(reset_csv(ordered, len(self.args.all("group")) != 1) + "\n")
        else:
            self.out.write(reset_table(ordered))

    # -- delete -------------------------------------------------------------------------

    def delete_groups(self) -> dict[str, KafkaAdminError | None]:
        group_ids = self._group_ids()
        results = self._get(self.admin.delete_groups, group_ids)
        succeeded = [g for g, e in results.items() if e is None]
        failed = {g: e for g, e in results.items() if e is not None}
        if not failed:
            self.out.write(f"Deletion of requested consumer groups ({_quoted(succeeded)}) was successful.\n")
        else:
            self.print_error("Deletion of some consumer groups failed:")
            for group_id, error in failed.items():
                self.out.write(f"* Group '{group_id}' could not be deleted due to: "
                               f"{_to_string(FutureFailure(error))}\n")
            if succeeded:
                self.out.write(f"\nThese consumer groups were deleted successfully: {_quoted(succeeded)}\n")
        return results

    def delete_offsets(self) -> None:
        group_id = self.args.value("group")
        topics = self.args.all("topic")
        top_level, results = self._delete_offsets(group_id, topics)
        messages = {
            ErrorCode.NONE: None,
            ErrorCode.INVALID_GROUP_ID: f"'{group_id}' is not valid.",
            ErrorCode.GROUP_ID_NOT_FOUND: f"'{group_id}' does not exist.",
            ErrorCode.GROUP_AUTHORIZATION_FAILED: f"Access to '{group_id}' is not authorized.",
            ErrorCode.NON_EMPTY_GROUP: f"Deleting offsets of a consumer group '{group_id}' is forbidden if the "
                                       "group is not empty.",
        }
        partition_level = (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                           ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if top_level == ErrorCode.NONE:
            self.out.write(f"Request succeed for deleting offsets with topic {', '.join(topics)} group "
                           f"{group_id}\n")
        elif top_level in messages:
            self.print_error(messages[top_level])
        elif top_level in partition_level:
            self.print_error("Encounter some partition level error, see the follow-up details:")
        else:
            self.print_error(f"Encounter some unknown error: {top_level.name}")
        self.out.write(delete_offsets_table(results))

    def _delete_offsets(self, group_id: str, topics: Sequence[str]
                        ) -> tuple[ErrorCode, dict[TopicPartition, str | None]]:
        """The group-level outcome and each partition's (None: deleted, else the error's text);
        a topic that cannot be described is reported as partition -1."""
        results: dict[TopicPartition, str | None] = {}
        partitions = [tp for arg in topics if ":" in arg for tp in _parse_topic_partitions(arg)]
        for topic in (t for t in topics if ":" not in t):
            try:
                described = self.admin.describe_topics([topic])[topic]
            except KafkaAdminError as error:
                results[(topic, -1)] = _to_string(error)
                continue
            partitions += [(topic, p.partition) for p in described.partitions]
        try:
            outcome = self.admin.delete_group_offsets(group_id, partitions)
        except KafkaAdminError as error:
            results.update({tp: _to_string(error) for tp in partitions})
            return error.code, results
        top_level = next((e.code for e in outcome.values() if e is not None), ErrorCode.NONE)
        results.update({tp: None if e is None else _to_string(e) for tp, e in outcome.items()})
        return top_level, results

    # -- output -------------------------------------------------------------------------

    def print_error(self, message: str, error: BaseException | None = None) -> None:
        self.out.write(f"\nError: {message}\n")
        if error is not None:
            self.out.flush()
            self.err.write(_stack_trace(error))


def _quoted(groups: Sequence[str]) -> str:
    """Scala's mkString("'", "', '", "'"): an empty list still gives two quotes."""
    return "'" + "', '".join(groups) + "'"


def _csv_number(text: str) -> bool:
    return java_long(text.strip()) is not None


def _parse_states(value: str) -> list[str]:
    """consumerGroupStatesFromString: comma separated, case sensitive (as in 2.8)."""
    states = list(dict.fromkeys(s.strip() for s in value.split(",")))
    if any(s not in GROUP_STATES for s in states):
        raise UsageError(f"Invalid state list '{value}'. Valid states are: {', '.join(GROUP_STATES)}")
    return states


def _parse_topic_partitions(arg: str) -> list[TopicPartition]:
    """"topic:0,1,2" -> [(topic, 0), (topic, 1), (topic, 2)]."""
    parts = arg.split(":")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()                                     # String.split drops trailing empties
    if len(parts) != 2:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    topic, partitions = parts
    out = []
    for raw in partitions.split(","):
        number = java_long(raw)
        if number is None or not -2**31 <= number < 2**31:
            raise UsageError(f"Invalid partition '{raw}' specified in topic arg '{arg}''")
        out.append((topic, number))
    return out


def run(args: ParsedArgs, out: TextIO, err: TextIO) -> int:
    """Kafka's run(): any failure of the command is an "Error:" line, and the exit status stays 0."""
    with joptions.tools_logging(err, joptions.ADMIN_LOGGERS):
        return _run(args, out, err)


def _run(args: ParsedArgs, out: TextIO, err: TextIO) -> int:
    service = ConsumerGroupService(args, out, err)
    try:
        if args.has("list"):
            service.list_groups()
        elif args.has("describe"):
            service.describe_groups()
        elif args.has("delete"):
            service.delete_groups()
        elif args.has("reset-offsets"):
            service.print_reset(service.reset_offsets())
        elif args.has("delete-offsets"):
            service.delete_offsets()
    except UsageError:
        raise
    except Exception as error:  # noqa: BLE001 - Kafka catches every Throwable here
        _, message = _java_view(error)
        service.print_error(f"Executing consumer group command failed due to {message}", error)
    finally:
        service.close()
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        check_args(args, err)
        if not args.argv or args.has("help"):
            raise UsageError(HELP_MESSAGE)
        if args.has("version"):
            out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
            return 0
        if sum(args.has(a) for a in ACTIONS) != 1:
            raise UsageError(ACTIONS_MESSAGE)
        return run(args, out, err)
    except UsageError as error:
        out.flush()
        err.write(f"{error}\n{format_help()}")
        return 1
    except JavaError as error:  # outside Kafka's try blocks: the JVM prints it and exits 1
        out.flush()
        err.write(f'Exception in thread "main" {_stack_trace(error)}')
        return 1
    finally:
        out.flush()


if __name__ == "__main__":
    run_tool(main)
