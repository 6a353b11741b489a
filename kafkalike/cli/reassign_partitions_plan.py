"""kafka-reassign-partitions' plans: the JSON files, the throttle values and the status lines.

Everything here is a function of plain values, shared by the AdminClient back end
(reassign_partitions) and the ZooKeeper one (reassign_partitions_zookeeper). The JSON is
read as Kafka's Json/JsonValue reads it, so a bad file fails with the exception class
and message Kafka 2.8's tool prints (Jackson's parse error texts are approximated);
throttle values are computed as ReassignPartitionsCommand's move map computes them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from kafkalike.cli.joptions import JavaError
from kafkalike.common.assignment import InvalidReplicationFactor, assign_replicas

ANY_LOG_DIR = "any"

ADMIN_COMMAND_FAILED = "kafka.common.AdminCommandFailedException"
ADMIN_OPERATION = "kafka.admin.AdminOperationException"
JSON_MAPPING = "com.fasterxml.jackson.databind.JsonMappingException"
JSON_PARSE = "com.fasterxml.jackson.core.JsonParseException"
EXECUTION = "java.util.concurrent.ExecutionException"
NUMBER_FORMAT = "java.lang.NumberFormatException"
RUNTIME = "java.lang.RuntimeException"
NO_SUCH_FILE = "java.nio.file.NoSuchFileException"
INDEX_OUT_OF_BOUNDS = "java.lang.IndexOutOfBoundsException"
INVALID_REPLICATION_FACTOR = "org.apache.kafka.common.errors.InvalidReplicationFactorException"

BROKER_LEADER_THROTTLE = "leader.replication.throttled.rate"
BROKER_FOLLOWER_THROTTLE = "follower.replication.throttled.rate"
BROKER_LOG_DIR_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
BROKER_THROTTLES = (BROKER_LEADER_THROTTLE, BROKER_FOLLOWER_THROTTLE, BROKER_LOG_DIR_THROTTLE)
TOPIC_LEADER_THROTTLE = "leader.replication.throttled.replicas"
TOPIC_FOLLOWER_THROTTLE = "follower.replication.throttled.replicas"
TOPIC_THROTTLES = (TOPIC_LEADER_THROTTLE, TOPIC_FOLLOWER_THROTTLE)

CANNOT_EXECUTE_BECAUSE_OF_EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this and "
    "create a new partition assignment in addition to the existing one. The --additional flag can also be used "
    "to change the throttle by resubmitting the current reassignment.")
YOU_MUST_RUN_VERIFY_PERIODICALLY = ("Warning: You must run --verify periodically, until the reassignment "
                                    "completes, to ensure the throttle is removed.")



# -- failures, as the tool reports them ---------------------------------------------------


class TerseFailure(Exception):
    """TerseReassignmentFailureException: the message alone, on stdout."""


# -- the reassignment JSON files ----------------------------------------------------------


def _node(value: Any) -> str:
    """How a Jackson JsonNode prints itself in Kafka's messages."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _mapping_error(message: str) -> JavaError:
    return JavaError(JSON_MAPPING, message)


def as_object(value: Any) -> dict:
    if not isinstance(value, dict):
        raise _mapping_error(f"Expected JSON object, received {_node(value)}")
    return value


def field_of(obj: dict, name: str) -> Any:
    if name not in obj:
        raise _mapping_error(f"No such field exists: `{name}`")
    return obj[name]


def to_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -2**31 <= value < 2**31:
        raise _mapping_error(f"Expected `Int` value, received {_node(value)}")
    return value


def to_string(value: Any) -> str:
    if not isinstance(value, str):
        raise _mapping_error(f"Expected `String` value, received {_node(value)}")
    return value


def to_list(value: Any, element: Callable[[Any], Any]) -> list:
    if not isinstance(value, list):
        raise _mapping_error(f"Expected JSON array, received {_node(value)}")
    return [element(v) for v in value]


def _jackson_error(text: str, error: json.JSONDecodeError) -> JavaError:
    """A JsonParseException's text for what the parser stumbled on (close to Jackson's)."""
    source = text if len(text) <= 500 else text[:500] + "[truncated]"
    where = f'\n at [Source: (String)"{source}"; line: {error.lineno}, column: {error.colno}]'
    if error.pos >= len(text):
        return JavaError(JSON_PARSE, "Unexpected end-of-input" + where)
    char = text[error.pos]
    return JavaError(JSON_PARSE, f"Unexpected character ('{char}' (code {ord(char)})): expected a valid value "
                                 "(JSON String, Number, Array, Object or token 'null', 'true' or 'false')" + where)


def _parse_json(text: str) -> Any:
    """Kafka's Json.tryParseFull; the Jackson failure as AdminOperationException's cause."""
    if not text:
        cause = JavaError(JSON_PARSE, "The input string shouldn't be empty\n at [Source: UNKNOWN; line: -1, "
                                      "column: -1]")
        raise JavaError(ADMIN_OPERATION, cause.message, cause)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        cause = _jackson_error(text, error)
        raise JavaError(ADMIN_OPERATION, cause.message, cause) from None


def _version(obj: dict) -> int:
    return to_int(obj["version"]) if "version" in obj else 1


def parse_reassignment_json(text: str) -> tuple[list[tuple[tuple[str, int], list[int]]], dict[tuple, str]]:
    """parsePartitionReassignmentData: [(partition, replicas)] as listed (duplicates kept,
    so they can be refused), and {(topic, partition, broker): log dir} for dirs not "any"."""
    root = as_object(_parse_json(text))
    version = _version(root)
    if version != 1:
        raise JavaError(ADMIN_OPERATION, f"Not supported version field value {version}")
    parts: list[tuple[tuple[str, int], list[int]]] = []
    log_dirs: dict[tuple, str] = {}
    for p in (to_list(root["partitions"], lambda v: v) if "partitions" in root else []):
        fields = as_object(p)
        topic = to_string(field_of(fields, "topic"))
        partition = to_int(field_of(fields, "partition"))
        replicas = to_list(field_of(fields, "replicas"), to_int)
        dirs = to_list(fields["log_dirs"], to_string) if "log_dirs" in fields else [ANY_LOG_DIR] * len(replicas)
        if len(replicas) != len(dirs):
            raise JavaError(ADMIN_COMMAND_FAILED,
                            f"Size of replicas list {scala_list(replicas)} is different from size of log dirs list "
                            f"{scala_list(dirs)} for partition {topic}-{partition}")
        parts.append(((topic, partition), replicas))
        for replica, log_dir in zip(replicas, dirs):
            if log_dir != ANY_LOG_DIR:
                log_dirs[(topic, partition, replica)] = log_dir
    return parts, log_dirs


def scala_list(values: Sequence[Any]) -> str:
    return f"List({', '.join(map(str, values))})"


def _duplicates(values: Sequence[Any]) -> list[Any]:
    counts: dict[Any, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return [v for v, n in counts.items() if n > 1]


def tp_name(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def parse_execute_json(text: str) -> tuple[dict[tuple[str, int], list[int]], dict[tuple, str]]:
    """parseExecuteAssignmentArgs: the reassignment file's checks before anything is sent."""
    parts, log_dirs = parse_reassignment_json(text)
    if not parts:
        raise JavaError(ADMIN_COMMAND_FAILED, "Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise JavaError(ADMIN_COMMAND_FAILED, "Partition replica list cannot be empty")
    duplicated = _duplicates([tp for tp, _ in parts])
    if duplicated:
        raise JavaError(ADMIN_COMMAND_FAILED, "Partition reassignment contains duplicate topic partitions: "
                        + ",".join(tp_name(tp) for tp in duplicated))
    entries = [(tp, _duplicates(replicas)) for tp, replicas in parts]
    entries = [(tp, dups) for tp, dups in entries if dups]
    if entries:
        text = ". ".join(f"{tp_name(tp)} contains multiple entries for {','.join(map(str, dups))}"
                         for tp, dups in entries)
        raise JavaError(ADMIN_COMMAND_FAILED, f"Partition replica lists may not contain duplicate entries: {text}")
    return dict(parts), log_dirs


def parse_topics_json(text: str) -> list[str]:
    """parseTopicsData: {"topics": [{"topic": "foo"}, ...], "version": 1}."""
    try:
        value = json.loads(text) if text else None
    except json.JSONDecodeError:
        value = None
    if value is None and text.strip() != "null":
        raise JavaError(ADMIN_OPERATION, "The input string is not a valid JSON")
    root = as_object(value)
    version = _version(root)
    if version != 1:
        raise JavaError(ADMIN_OPERATION, f"Not supported version field value {version}")
    topics = to_list(root["topics"], lambda v: v) if "topics" in root else []
    return [to_string(field_of(as_object(t), "topic")) for t in topics]


def java_int(text: str) -> int:
    """Integer.parseInt, with its NumberFormatException text."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit() or not -2**31 <= int(text) < 2**31:
        raise JavaError(NUMBER_FORMAT, f'For input string: "{text}"')
    return int(text)


def parse_generate_args(topics_json: str, broker_list: str) -> tuple[list[int], list[str]]:
    items = broker_list.split(",")
    while items and items[-1] == "":     # Java's split drops trailing empty strings
        items.pop()
    brokers = [java_int(b) for b in items]
    duplicated = _duplicates(brokers)
    if duplicated:
        raise JavaError(ADMIN_COMMAND_FAILED,
                        f"Broker list contains duplicate entries: {','.join(map(str, duplicated))}")
    topics = parse_topics_json(topics_json)
    duplicated_topics = _duplicates(topics)
    if duplicated_topics:
        raise JavaError(ADMIN_COMMAND_FAILED,
                        f"List of topics to reassign contains duplicate entries: {','.join(duplicated_topics)}")
    return brokers, topics


def format_as_reassignment_json(assignment: Mapping[tuple[str, int], Sequence[int]],
                                log_dirs: Mapping[tuple, str] | None = None) -> str:
    log_dirs = log_dirs or {}
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp[0], "partition": tp[1], "replicas": list(assignment[tp]),
         "log_dirs": [log_dirs.get((tp[0], tp[1], r), ANY_LOG_DIR) for r in assignment[tp]]}
        for tp in sorted(assignment)]}, separators=(",", ":"), ensure_ascii=False)


def current_assignment_text(proposed: Mapping[tuple[str, int], Sequence[int]],
                            current: Mapping[tuple[str, int], Sequence[int]]) -> str:
    shown = {tp: replicas for tp, replicas in current.items() if tp in proposed}
    return ("Current partition replica assignment\n\n" + format_as_reassignment_json(shown)
            + "\n\nSave this to use as the --reassignment-json-file option during rollback")


def plural(count: int) -> str:
    return "" if count == 1 else "s"


def calculate_assignment(current: Mapping[tuple[str, int], Sequence[int]],
                         brokers: Sequence[tuple[int, str | None]]) -> dict[tuple[str, int], list[int]]:
    """calculateAssignment: each topic spread again over the brokers, its replication factor kept."""
    by_topic: dict[str, list[tuple[tuple[str, int], Sequence[int]]]] = {}
    for tp, replicas in current.items():
        by_topic.setdefault(tp[0], []).append((tp, replicas))
    ids = [b for b, _ in brokers]
    racks = {b: r for b, r in brokers if r is not None}
    proposed: dict[tuple[str, int], list[int]] = {}
    for topic, parts in by_topic.items():
        replication_factor = len(parts[0][1])
        try:
            placed = assign_replicas(ids, len(parts), replication_factor, racks or None)
        except InvalidReplicationFactor as error:
            raise JavaError(INVALID_REPLICATION_FACTOR, str(error)) from None
        for partition, replicas in placed.items():
            proposed[(topic, partition)] = replicas
    return proposed


def generation_text(current: Mapping, proposed: Mapping) -> str:
    return (f"Current partition replica assignment\n{format_as_reassignment_json(current)}\n\n"
            f"Proposed partition reassignment configuration\n{format_as_reassignment_json(proposed)}")


# -- throttles ------------------------------------------------------------------------------


@dataclass
class PartitionMove:
    sources: set[int] = field(default_factory=set)
    destinations: set[int] = field(default_factory=set)


MoveMap = dict[str, dict[int, PartitionMove]]


def current_move_map(reassignments: Mapping[tuple[str, int], Any]) -> MoveMap:
    """calculateCurrentMoveMap: moves of the reassignments in flight (replicas less the
    ones being added are the sources)."""
    moves: MoveMap = {}
    for (topic, partition), ra in reassignments.items():
        adding = set(ra.adding_replicas)
        moves.setdefault(topic, {})[partition] = PartitionMove({r for r in ra.replicas if r not in adding}, adding)
    return moves


def proposed_move_map(reassignments: Mapping[tuple[str, int], Any],
                      proposed: Mapping[tuple[str, int], Sequence[int]],
                      current: Mapping[tuple[str, int], Sequence[int]]) -> MoveMap:
    moves = current_move_map(reassignments)
    for (topic, partition), replicas in proposed.items():
        partition_moves = moves.setdefault(topic, {})
        if partition in partition_moves:
            sources = set(partition_moves[partition].sources)
        elif (topic, partition) in current:
            sources = set(current[(topic, partition)])
        else:
            raise JavaError(RUNTIME, f"Trying to reassign a topic partition {topic}-{partition} with 0 replicas")
        partition_moves[partition] = PartitionMove(sources, {r for r in replicas if r not in sources})
    return moves


def leader_throttles(moves: MoveMap) -> dict[str, str]:
    """leader.replication.throttled.replicas per topic: partition:source for every source."""
    return {topic: ",".join(sorted({f"{p}:{s}" for p, move in parts.items() for s in move.sources}))
            for topic, parts in moves.items()}


def follower_throttles(moves: MoveMap) -> dict[str, str]:
    """follower.replication.throttled.replicas per topic: partition:destination."""
    return {topic: ",".join(sorted({f"{p}:{d}" for p, move in parts.items() for d in move.destinations
                                    if d not in move.sources}))
            for topic, parts in moves.items()}


def reassigning_brokers(moves: MoveMap) -> list[int]:
    return sorted({b for parts in moves.values() for move in parts.values()
                   for b in move.sources | move.destinations})


def partition_states_text(states: Mapping[tuple[str, int], tuple[Sequence[int], Sequence[int], bool]]) -> str:
    lines = ["Status of partition reassignment:"]
    for tp in sorted(states):
        current, target, done = states[tp]
        if not done:
            lines.append(f"Reassignment of partition {tp_name(tp)} is still in progress.")
        elif list(current) == list(target):
            lines.append(f"Reassignment of partition {tp_name(tp)} is complete.")
        else:
            lines.append(f"There is no active reassignment of partition {tp_name(tp)}, but replica set is "
                         f"{','.join(map(str, current))} rather than {','.join(map(str, target))}.")
    return "\n".join(lines)


def clearing_lines(brokers: Sequence[int], topics: Sequence[str]) -> tuple[str, str]:
    return (f"Clearing broker-level throttles on broker{plural(len(brokers))} {','.join(map(str, brokers))}",
            f"Clearing topic-level throttles on topic{plural(len(topics))} {','.join(topics)}")


# -- log directory moves (TopicPartitionReplica keys: (topic, partition, broker)) ------------


def replica_name(replica: tuple[str, int, int]) -> str:
    """TopicPartitionReplica.toString: broker-topic-partition."""
    return f"{replica[2]}-{replica[0]}-{replica[1]}"


def sorted_replicas(replicas) -> list[tuple[str, int, int]]:
    """compareTopicPartitionReplicas: by broker, then topic, then partition."""
    return sorted(replicas, key=lambda r: (r[2], r[0], r[1]))


def moving_brokers(log_dirs: Mapping[tuple, str]) -> list[int]:
    """calculateMovingBrokers: the brokers named by a log dir move."""
    return sorted({r[2] for r in log_dirs})


def log_dir_move_state(target: str, current: str | None, future: str | None, found: bool) -> tuple:
    """findLogDirMoveStates' cases: missing-replica, missing-log-dir, completed, cancelled, active."""
    if not found:
        return ("missing-replica", target)
    if current is None:
        return ("missing-log-dir", target)
    if future is None:
        return ("completed", target) if current == target else ("cancelled", current, target)
    return ("active", current, target, future)


def move_states_text(states: Mapping[tuple[str, int, int], tuple]) -> str:
    """replicaMoveStatesToString, one line per replica in Kafka's order."""
    lines = []
    for replica in sorted_replicas(states):
        state = states[replica]
        topic, partition, broker = replica
        kind = state[0]
        if kind == "missing-log-dir":
            lines.append(f"Partition {topic}-{partition} is not found in any live log dir on broker {broker}. "
                         "There is likely an offline log directory on the broker.")
        elif kind == "missing-replica":
            lines.append(f"Partition {topic}-{partition} cannot be found in any live log directory on broker "
                         f"{broker}.")
        elif kind == "active":
            _, _, target, future = state
            if target == future:
                lines.append(f"Reassignment of replica {replica_name(replica)} is still in progress.")
            else:
                lines.append(f"Partition {topic}-{partition} on broker {broker} is being moved to log dir "
                             f"{future} instead of {target}.")
        elif kind == "cancelled":
            lines.append(f"Partition {topic}-{partition} on broker {broker} is not being moved from log dir "
                         f"{state[1]} to {state[2]}.")
        else:
            lines.append(f"Reassignment of replica {replica_name(replica)} completed successfully.")
    return "\n".join(lines)


def read_file(path: str) -> str:
    """Utils.readFileAsString."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise JavaError(NO_SUCH_FILE, path) from None
    except OSError as error:
        raise JavaError("java.io.IOException", str(error)) from None
