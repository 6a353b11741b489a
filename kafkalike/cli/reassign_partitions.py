"""kafka-reassign-partitions: move partition replicas between brokers, as Kafka 2.8's ReassignPartitionsCommand.

Actions: --generate (propose an assignment for some topics over some brokers), --execute
(start the reassignments of a JSON file, optionally throttled), --verify (report and,
once nothing moves any more, remove the throttles), --cancel and --list. Operators
script against the output, so the lines are Kafka 2.8's: the current assignment to save
for a rollback, `Successfully started partition reassignments for t-0,t-1`,
`Status of partition reassignment:` with one line per partition, and the same checks,
messages and exit status 1 for bad input. Failures print `Error: <message>` and a stack
trace on stdout (TerseReassignmentFailureException: the message alone), as the tool's
main does; mistakes on the command line print the message and the option table on stderr.

Two back ends, as in 2.8: --bootstrap-server goes through kafkalike's AdminClient
(AlterPartitionReassignments, ListPartitionReassignments, IncrementalAlterConfigs for the
throttles); the deprecated --zookeeper (--generate, --execute, --verify only) reads and
writes the znodes itself, starting reassignments through /admin/reassign_partitions
(reassign_partitions_zookeeper). The files, throttle values and status lines both use
are in reassign_partitions_plan.

Log dirs other than "any" in a plan move replicas between a broker's log directories as
2.8 does: --execute sends AlterReplicaLogDirs to each named broker, retrying every 100 ms
(up to --timeout) while a replica is not there yet, and sets
--replica-alter-log-dirs-throttle on those brokers; --verify and --cancel read where
each replica and its future replica are from DescribeLogDirs.

Where this differs from 2.8: Jackson's parse error texts are approximated; clearing broker-level throttles through --bootstrap-server deletes
only the throttle keys a broker reports as dynamic (Kafka sends the deletes blindly; the
outcome is the same), so it works against brokers that refuse dynamic broker configs.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable, Mapping, Sequence, TextIO

from kafkalike.cli import joptions
from kafkalike.cli.joptions import Dialect, Option, ParsedArgs, options_table, parse_args
from kafkalike.cli.reassign_partitions_plan import (
    ADMIN_COMMAND_FAILED,
    ADMIN_OPERATION,
    BROKER_FOLLOWER_THROTTLE,
    BROKER_LEADER_THROTTLE,
    BROKER_THROTTLES,
    CANNOT_EXECUTE_BECAUSE_OF_EXISTING,
    EXECUTION,
    INDEX_OUT_OF_BOUNDS,
    RUNTIME,
    TOPIC_FOLLOWER_THROTTLE,
    TOPIC_LEADER_THROTTLE,
    TOPIC_THROTTLES,
    YOU_MUST_RUN_VERIFY_PERIODICALLY,
    TerseFailure,
    JavaError,
    calculate_assignment,
    clearing_lines,
    current_assignment_text,
    follower_throttles,
    generation_text,
    leader_throttles,
    log_dir_move_state,
    move_states_text,
    moving_brokers,
    replica_name,
    sorted_replicas,
    parse_execute_json,
    parse_generate_args,
    parse_reassignment_json,
    partition_states_text,
    plural,
    proposed_move_map,
    read_file,
    reassigning_brokers,
    tp_name,
)
from kafkalike.cli.tool_main import run_tool
from kafkalike.common.versions import KAFKA_COMMIT_ID, KAFKA_VERSION
from kafkalike.properties import load as load_properties

HELP_TEXT = "This tool helps to move topic partitions between replicas."


# -- failures, as the tool reports them ---------------------------------------------------


class UsageFailure(Exception):
    """CommandLineUtils.printUsageAndDie: the message and the option table on stderr, exit 1."""


def _frames(error: BaseException) -> list[str]:
    return [f"\tat {os.path.splitext(os.path.basename(f.filename))[0]}.{f.name}"
            f"({os.path.basename(f.filename)}:{f.lineno})"
            for f in reversed(traceback.extract_tb(error.__traceback__))]


def _java_line(error: BaseException) -> str:
    java_class = getattr(error, "java_class", None)
    if not isinstance(java_class, str):
        java_class = f"{type(error).__module__}.{type(error).__qualname__}"
    message = getattr(error, "message", None) if hasattr(error, "java_class") else (str(error) or None)
    return java_class if message is None else f"{java_class}: {message}"


def stack_trace(error: BaseException) -> str:
    """Utils.stackTrace: the exception, `at` lines, then each cause."""
    lines = [_java_line(error)] + _frames(error)
    cause = getattr(error, "cause", None)
    while cause is not None:
        lines.append("Caused by: " + _java_line(cause))
        lines.extend(_frames(cause))
        cause = getattr(cause, "cause", None)
    return "\n".join(lines)


def _execution(error) -> JavaError:
    """What a KafkaFuture.get() throws for a failed admin call."""
    return JavaError(EXECUTION, f"{error.java_class}: {error.message}", error)


# -- the command line ------------------------------------------------------------------------


def _tool_option_error(java_class: str, message: str) -> Exception:
    return JavaError(java_class, message)


# ReassignPartitionsCommandOptions extends CommandDefaultOptions: parser.parse is called
# directly (jopt's exceptions escape main), values are converted when asked for, and the
# parser takes whole option names only.
_DIALECT_FIELDS = {"error": _tool_option_error, "convert_at_parse": False, "flag_values": False}
if "abbreviations" in getattr(Dialect, "__dataclass_fields__", {}):
    _DIALECT_FIELDS["abbreviations"] = False
DIALECT = Dialect(**_DIALECT_FIELDS)

OPTIONS = options_table(
    Option("verify", "Verify if the reassignment completed as specified by the --reassignment-json-file option. "
                     "If there is a throttle engaged for the replicas specified, and the rebalance has completed, "
                     "the throttle will be removed"),
    Option("generate", "Generate a candidate partition reassignment configuration. Note that this only generates "
                       "a candidate assignment, it does not execute it."),
    Option("execute", "Kick off the reassignment as specified by the --reassignment-json-file option."),
    Option("cancel", "Cancel an active reassignment."),
    Option("list", "List all active partition reassignments."),
    Option("bootstrap-server", "the server(s) to use for bootstrapping. REQUIRED if an absolute path of the log "
                               "directory is specified for any replica in the reassignment json file, or if "
                               "--zookeeper is not given.", "Server(s) to use for bootstrapping"),
    Option("command-config", "Property file containing configs to be passed to Admin Client.",
           "Admin client property file"),
    Option("zookeeper", "DEPRECATED: The connection string for the zookeeper connection in the form host:port. "
                        "Multiple URLS can be given to allow fail-over.  Please use --bootstrap-server instead.",
           "urls"),
    Option("reassignment-json-file",
           "The JSON file with the partition reassignment configurationThe format to use is - \n"
           "{\"partitions\":\n\t[{\"topic\": \"foo\",\n\t  \"partition\": 1,\n\t  \"replicas\": [1,2,3],\n\t  "
           "\"log_dirs\": [\"dir1\",\"dir2\",\"dir3\"] }],\n\"version\":1\n}\nNote that \"log_dirs\" is optional. "
           "When it is specified, its length must equal the length of the replicas list. The value in this list "
           "can be either \"any\" or the absolution path of the log directory on the broker. If absolute log "
           "directory path is specified, the replica will be moved to the specified log directory on the broker.",
           "manual assignment json file path"),
    Option("topics-to-move-json-file",
           "Generate a reassignment configuration to move the partitions of the specified topics to the list of "
           "brokers specified by the --broker-list option. The format to use is - \n{\"topics\":\n\t[{\"topic\": "
           "\"foo\"},{\"topic\": \"foo1\"}],\n\"version\":1\n}", "topics to reassign json file path"),
    Option("broker-list", "The list of brokers to which the partitions need to be reassigned in the form "
                          "\"0,1,2\". This is required if --topics-to-move-json-file is used to generate "
                          "reassignment configuration", "brokerlist"),
    Option("disable-rack-aware", "Disable rack aware replica assignment"),
    Option("throttle", "The movement of partitions between brokers will be throttled to this value (bytes/sec). "
                       "This option can be included with --execute when a reassignment is started, and it can be "
                       "altered by resubmitting the current reassignment along with the --additional flag. The "
                       "throttle rate should be at least 1 KB/s.", "throttle", "Long", "-1"),
    Option("replica-alter-log-dirs-throttle",
           "The movement of replicas between log directories on the same broker will be throttled to this value "
           "(bytes/sec). This option can be included with --execute when a reassignment is started, and it can "
           "be altered by resubmitting the current reassignment along with the --additional flag. The throttle "
           "rate should be at least 1 KB/s.", "replicaAlterLogDirsThrottle", "Long", "-1"),
    Option("timeout", "The maximum time in ms to wait for log directory replica assignment to begin.",
           "timeout", "Long", "10000"),
    Option("additional", "Execute this reassignment in addition to any other ongoing ones. This option can also "
                         "be used to change the throttle of an ongoing reassignment."),
    Option("preserve-throttles", "Do not modify broker or topic throttles."),
    Option("help", "Print usage information."),
    Option("version", "Display Kafka version."),
)

ACTIONS = ("generate", "execute", "verify", "cancel", "list")
REQUIRED = {"verify": ("reassignment-json-file",), "generate": ("topics-to-move-json-file", "broker-list"),
            "execute": ("reassignment-json-file",), "cancel": ("reassignment-json-file",), "list": ()}
PERMITTED = {
    "verify": ("bootstrap-server", "command-config", "preserve-throttles", "zookeeper"),
    "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware", "zookeeper"),
    "execute": ("additional", "bootstrap-server", "command-config", "throttle", "replica-alter-log-dirs-throttle",
                "timeout", "zookeeper"),
    "cancel": ("bootstrap-server", "command-config", "preserve-throttles", "timeout"),
    "list": ("bootstrap-server", "command-config"),
}
BOOTSTRAP_SERVER_ONLY = ("additional", "cancel", "command-config", "replica-alter-log-dirs-throttle", "list",
                         "timeout")


# Its option cells are wider than half the screen, so jopt's help table takes kafka-topics'
# geometry: two padded 39-column halves, a line separator in a description starting a line.
HELP_DIALECT = Dialect(padded_help=True, help_paragraphs=True)


def format_help() -> str:
    return joptions.format_help(OPTIONS, HELP_DIALECT)


def validate_and_parse_args(argv: Sequence[str]) -> tuple[ParsedArgs, str | None]:
    """The options and the action; (opts, None) when --version was asked for."""
    opts = parse_args(OPTIONS, argv, DIALECT)
    if not argv or opts.has("help"):
        raise UsageFailure(HELP_TEXT)
    if opts.has("version"):
        return opts, None
    given = [a for a in ACTIONS if opts.has(a)]
    if len(given) != 1:
        raise UsageFailure("Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS))
    action = given[0]
    if not opts.has("zookeeper") and not opts.has("bootstrap-server"):
        raise UsageFailure("Please specify --bootstrap-server")
    for required in REQUIRED[action]:
        if not opts.has(required):
            raise UsageFailure(f'Missing required argument "[{required}]"')
    for name in _specs_in_order(opts):
        if name != action and name not in REQUIRED[action] and name not in PERMITTED[action]:
            raise UsageFailure(f'Option "[{name}]" can\'t be used with action "[{action}]"')
    if not opts.has("bootstrap-server"):
        for name in BOOTSTRAP_SERVER_ONLY:
            if opts.has(name):
                raise JavaError(RUNTIME, f'You must specify --bootstrap-server when using "[{name}]"')
    return opts, action


def _specs_in_order(opts: ParsedArgs) -> list[str]:
    """jopt's OptionSet.specs(): the options in the order they were given."""
    seen = []
    for token in opts.argv:
        if token == "--":
            break
        if not token.startswith("-") or token == "-":
            continue
        name = token.lstrip("-").partition("=")[0]
        if name in OPTIONS and name not in seen:
            seen.append(name)
    return seen


# -- the AdminClient back end --------------------------------------------------------------


class AdminService:
    """The command's entry points over kafkalike's AdminClient (Kafka's Admin)."""

    def __init__(self, config: Mapping[str, str], out: TextIO) -> None:
        from kafkalike.client.admin import AdminClient
        self.admin = AdminClient(config)
        self.out = out

    def close(self) -> None:
        self.admin.close()

    def println(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def _get(self, call: Callable[[], Any]) -> Any:
        """A future's get(): a failed call surfaces as ExecutionException."""
        from kafkalike.client.admin import KafkaAdminError
        try:
            return call()
        except KafkaAdminError as error:
            raise _execution(error) from None

    # lookups

    def reassignments(self, partitions=None) -> dict:
        return self._get(lambda: self.admin.list_partition_reassignments(partitions))

    def node_ids(self) -> list[int]:
        return [b.id for b in self._get(self.admin.describe_cluster).brokers]

    def assignment_for_topics(self, topics: Sequence[str]) -> dict[tuple[str, int], list[int]]:
        described = self._get(lambda: self.admin.describe_topics(topics))
        return {(name, p.partition): list(p.replicas) for name, d in described.items() for p in d.partitions}

    # --generate

    def generate(self, topics_json: str, broker_list: str, rack_aware: bool) -> None:
        brokers, topics = parse_generate_args(topics_json, broker_list)
        current = self.assignment_for_topics(topics)
        wanted = set(brokers)
        nodes = [b for b in self._get(self.admin.describe_cluster).brokers if b.id in wanted]
        metadata = [(b.id, b.rack if rack_aware and b.rack is not None else None) for b in nodes]
        rackless = sum(1 for _, rack in metadata if rack is None)
        if rack_aware and rackless not in (0, len(metadata)):
            raise JavaError(ADMIN_OPERATION, "Not all brokers have rack information. Add --disable-rack-aware in "
                                             "command line to make replica assignment without rack information.")
        proposed = calculate_assignment(current, metadata)
        self.println(generation_text(current, proposed))

    # --execute

    def execute(self, additional: bool, text: str, inter_broker_throttle: int, log_dir_throttle: int,
                timeout_ms: int = 10000) -> None:
        proposed, log_dirs = parse_execute_json(text)
        current_reassignments = self.reassignments()
        if not additional and current_reassignments:
            raise TerseFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
        known = set(self.node_ids())
        for broker in dict.fromkeys(r for replicas in proposed.values() for r in replicas):
            if broker not in known:
                raise JavaError(ADMIN_COMMAND_FAILED, f"Unknown broker id {broker}")
        topics = list(dict.fromkeys(t for t, _ in proposed))
        current = {tp: r for tp, r in self.assignment_for_topics(topics).items() if tp in proposed}
        self.println(current_assignment_text(proposed, current))
        if inter_broker_throttle >= 0 or log_dir_throttle >= 0:
            self.println(YOU_MUST_RUN_VERIFY_PERIODICALLY)
            if inter_broker_throttle >= 0:
                moves = proposed_move_map(current_reassignments, proposed, current)
                self.modify_topic_throttles(leader_throttles(moves), follower_throttles(moves))
                self.modify_broker_throttles(reassigning_brokers(moves), inter_broker_throttle)
                self.println(f"The inter-broker throttle limit was set to {inter_broker_throttle} B/s")
            if log_dir_throttle >= 0:
                self.modify_log_dir_throttle(moving_brokers(log_dirs), log_dir_throttle)
                self.println(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
        errors = self._get(lambda: self.admin.alter_partition_reassignments(proposed))
        failed = {tp: e for tp, e in errors.items() if e is not None}
        if failed:
            raise TerseFailure("Error reassigning partition(s):\n" + "\n".join(
                f"{tp_name(tp)}: {failed[tp].message}" for tp in sorted(failed)))
        self.println(f"Successfully started partition reassignment{plural(len(proposed))} for "
                     + ",".join(tp_name(tp) for tp in sorted(proposed)))
        if log_dirs:
            self.execute_moves(dict(log_dirs), timeout_ms)

    # log directory moves

    def modify_log_dir_throttle(self, brokers: Sequence[int], rate: int) -> None:
        from kafkalike.client.admin import AlterConfigOp, AlterConfigOpType, ConfigResource, ResourceType
        from kafkalike.cli.reassign_partitions_plan import BROKER_LOG_DIR_THROTTLE
        changes = {ConfigResource(ResourceType.BROKER, str(b)): [
            AlterConfigOp(BROKER_LOG_DIR_THROTTLE, str(rate), AlterConfigOpType.SET)] for b in brokers}
        if changes:
            self._get(lambda: self.admin.incremental_alter_configs(changes))

    def execute_moves(self, moves: dict[tuple[str, int, int], str], timeout_ms: int) -> None:
        """executeMoves: AlterReplicaLogDirs until every replica took its dir; a replica not
        on its broker yet (REPLICA_NOT_AVAILABLE: a reassignment is still adding it) is
        asked again every 100 ms, up to the timeout."""
        import time
        deadline = time.monotonic() + timeout_ms / 1000.0
        pending = dict(moves)
        while True:
            completed = self.alter_replica_log_dirs(pending)
            if completed:
                self.println(f"Successfully started log directory move{plural(len(completed))} for: "
                             + ",".join(replica_name(r) for r in sorted_replicas(completed)))
            for replica in completed:
                pending.pop(replica, None)
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise TerseFailure(f"Timed out before log directory move{plural(len(pending))} could be started "
                                   "for: " + ",".join(replica_name(r) for r in sorted_replicas(pending)))
            time.sleep(0.1)

    def _nodes(self) -> dict:
        return {b.id: b for b in self._get(self.admin.describe_cluster).brokers}

    def alter_replica_log_dirs(self, moves: Mapping[tuple[str, int, int], str]) -> set[tuple[str, int, int]]:
        """Admin.alterReplicaLogDirs, one request per broker; the replicas whose move started."""
        from kafkalike.client.admin import KafkaAdminError
        from kafkalike.client.connection import BrokerConnection
        from kafkalike.protocol.errors import ErrorCode
        from kafkalike.protocol.messages.alter_replica_log_dirs import AlterReplicaLogDirsRequest as R
        nodes = self._nodes()
        done: set[tuple[str, int, int]] = set()
        by_broker: dict[int, dict[str, dict[str, list[int]]]] = {}
        for (topic, partition, broker), path in moves.items():
            by_broker.setdefault(broker, {}).setdefault(path, {}).setdefault(topic, []).append(partition)
        for broker, dirs in sorted(by_broker.items()):
            node = nodes.get(broker)
            if node is None:
                continue           # not up yet: asked again, as the admin client's call would wait
            request = R(dirs=[R.AlterReplicaLogDir(path=path, topics=[
                R.AlterReplicaLogDirTopic(name=t, partitions=ps) for t, ps in topics.items()])
                for path, topics in dirs.items()])
            with BrokerConnection(node.host, node.port, client_id="reassign-partitions",
                                  security=self.admin.security) as connection:
                connection.connect()
                response = connection.send(request)
            for t in response.results:
                for p in t.partitions:
                    replica = (t.topic_name, p.partition_index, broker)
                    if p.error_code == ErrorCode.NONE:
                        done.add(replica)
                    elif p.error_code != ErrorCode.REPLICA_NOT_AVAILABLE:
                        error = KafkaAdminError(p.error_code)
                        raise JavaError(ADMIN_COMMAND_FAILED, f"Failed to alter dir for {replica_name(replica)}",
                                        _execution(error))
        return done

    def log_dir_move_states(self, targets: Mapping[tuple[str, int, int], str]) -> dict[tuple[str, int, int], tuple]:
        """findLogDirMoveStates over describeReplicaLogDirs (DescribeLogDirs of each broker)."""
        from kafkalike.cli.log_dirs import describe_log_dirs
        if not targets:
            return {}
        described = describe_log_dirs(self.admin, sorted({r[2] for r in targets}), "reassign-partitions")
        states = {}
        for replica, target in targets.items():
            topic, partition, broker = replica
            current = future = None
            for log_dir, (_error, replicas) in described.get(broker, {}).items():
                for t, p, _size, _lag, is_future in replicas:
                    if (t, p) == (topic, partition):
                        if is_future:
                            future = log_dir
                        else:
                            current = log_dir
            states[replica] = log_dir_move_state(target, current, future, broker in described)
        return states

    def modify_topic_throttles(self, leaders: Mapping[str, str], followers: Mapping[str, str]) -> None:
        from kafkalike.client.admin import AlterConfigOp, AlterConfigOpType, ConfigResource, ResourceType
        changes = {}
        for topic in dict.fromkeys(list(leaders) + list(followers)):
            ops = []
            if topic in leaders:
                ops.append(AlterConfigOp(TOPIC_LEADER_THROTTLE, leaders[topic], AlterConfigOpType.SET))
            if topic in followers:
                ops.append(AlterConfigOp(TOPIC_FOLLOWER_THROTTLE, followers[topic], AlterConfigOpType.SET))
            if ops:
                changes[ConfigResource(ResourceType.TOPIC, topic)] = ops
        if changes:
            self._get(lambda: self.admin.incremental_alter_configs(changes))

    def modify_broker_throttles(self, brokers: Sequence[int], rate: int) -> None:
        from kafkalike.client.admin import AlterConfigOp, AlterConfigOpType, ConfigResource, ResourceType
        changes = {ConfigResource(ResourceType.BROKER, str(b)): [
            AlterConfigOp(BROKER_LEADER_THROTTLE, str(rate), AlterConfigOpType.SET),
            AlterConfigOp(BROKER_FOLLOWER_THROTTLE, str(rate), AlterConfigOpType.SET)] for b in brokers}
        if changes:
            self._get(lambda: self.admin.incremental_alter_configs(changes))

    def clear_all_throttles(self, targets: Sequence[tuple[tuple[str, int], Sequence[int]]]) -> None:
        brokers = sorted(set(self.node_ids()) | {r for _, replicas in targets for r in replicas})
        topics = list(dict.fromkeys(tp[0] for tp, _ in targets))
        broker_line, topic_line = clearing_lines(brokers, topics)
        self.println(broker_line)
        self.clear_broker_throttles(brokers)
        self.println(topic_line)
        self.clear_topic_throttles(topics)

    def clear_broker_throttles(self, brokers: Sequence[int]) -> None:
        from kafkalike.client.admin import (AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigSource,
                                            ResourceType)
        resources = [ConfigResource(ResourceType.BROKER, str(b)) for b in brokers]
        described = self._get(lambda: self.admin.describe_configs(resources))
        throttled = [r for r in resources if any(
            e.name in BROKER_THROTTLES and e.source == ConfigSource.DYNAMIC_BROKER_CONFIG for e in described[r])]
        changes = {r: [AlterConfigOp(name, None, AlterConfigOpType.DELETE) for name in BROKER_THROTTLES]
                   for r in throttled}
        if changes:
            self._get(lambda: self.admin.incremental_alter_configs(changes))

    def clear_topic_throttles(self, topics: Sequence[str]) -> None:
        from kafkalike.client.admin import AlterConfigOp, AlterConfigOpType, ConfigResource, ResourceType
        changes = {ConfigResource(ResourceType.TOPIC, t): [
            AlterConfigOp(name, None, AlterConfigOpType.DELETE) for name in TOPIC_THROTTLES] for t in topics}
        if changes:
            self._get(lambda: self.admin.incremental_alter_configs(changes))

    # --verify

    def verify(self, text: str, preserve_throttles: bool) -> None:
        targets, log_dirs = parse_reassignment_json(text)
        states, ongoing = self.partition_states(targets)
        self.println(partition_states_text(states))
        moves = self.log_dir_move_states(log_dirs)
        self.println(move_states_text(moves))      # empty without log dir moves, as 2.8
        ongoing = ongoing or any(state[0] != "completed" for state in moves.values())
        if not ongoing and not preserve_throttles:
            self.clear_all_throttles(targets)

    def partition_states(self, targets):
        from kafkalike.client.admin import KafkaAdminError
        from kafkalike.protocol.errors import ErrorCode
        current = self.reassignments()
        states = {}
        topics: dict[str, Any] = {}
        for tp, target in targets:
            if tp in current:
                states[tp] = (list(current[tp].replicas), target, False)
                continue
            if tp[0] not in topics:
                try:
                    topics[tp[0]] = self.admin.describe_topics([tp[0]])[tp[0]]
                except KafkaAdminError as error:
                    topics[tp[0]] = error
            described = topics[tp[0]]
            if isinstance(described, KafkaAdminError):
                if described.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    raise _execution(described)
                states[tp] = ([], target, True)
                continue
            partitions = {p.partition: p for p in described.partitions}
            count = len(described.partitions)
            if count < tp[1]:
                states[tp] = ([], target, True)
            elif tp[1] not in partitions:
                raise JavaError(INDEX_OUT_OF_BOUNDS, f"Index {tp[1]} out of bounds for length {count}")
            else:
                states[tp] = (list(partitions[tp[1]].replicas), target, True)
        return states, bool(current)

    # --cancel

    def cancel(self, text: str, preserve_throttles: bool, timeout_ms: int = 10000) -> None:
        targets, log_dirs = parse_reassignment_json(text)
        wanted = list(dict.fromkeys(tp for tp, _ in targets))
        found = self.reassignments(wanted)
        active = sorted(tp for tp, ra in found.items() if ra.adding_replicas or ra.removing_replicas)
        if active:
            results = self._get(lambda: self.admin.alter_partition_reassignments({tp: None for tp in active}))
            failed = {tp: e for tp, e in results.items() if e is not None}
            if failed:
                raise TerseFailure(f"Error cancelling partition reassignment{plural(len(failed))} for:\n"
                                   + "\n".join(f"{tp_name(tp)}: {failed[tp].message}" for tp in sorted(failed)))
            self.println(f"Successfully cancelled partition reassignment{plural(len(active))} for: "
                         + ",".join(tp_name(tp) for tp in active))
        else:
            self.println("None of the specified partition reassignments are active.")
        # Moves under way are sent back to the dir they are leaving.
        moving = {r: state[1] for r, state in self.log_dir_move_states(log_dirs).items() if state[0] == "active"}
        if moving:
            self.execute_moves(moving, timeout_ms)
        else:
            self.println("None of the specified partition moves are active.")
        if not preserve_throttles:
            self.clear_all_throttles(targets)

    # --list

    def list(self) -> None:
        current = self.reassignments()
        lines = []
        for tp in sorted(current):
            ra = current[tp]
            line = f"{tp_name(tp)}: replicas: {','.join(map(str, ra.replicas))}."
            if ra.adding_replicas:
                line += f" adding: {','.join(map(str, ra.adding_replicas))}."
            if ra.removing_replicas:
                line += f" removing: {','.join(map(str, ra.removing_replicas))}."
            lines.append(line)
        self.println("Current partition reassignments:\n" + "\n".join(lines) if lines
                     else "No partition reassignments found.")


# -- main ----------------------------------------------------------------------------------


def _run_action(service, action: str, opts: ParsedArgs, zookeeper: bool) -> None:
    """handleAction: each action's arguments are read (file first, then numbers, as Java
    evaluates them) before the action runs."""
    if action == "verify":
        text = read_file(opts.value("reassignment-json-file") or "")
        service.verify(text, opts.has("preserve-throttles"))
    elif action == "generate":
        text = read_file(opts.value("topics-to-move-json-file") or "")
        service.generate(text, opts.value("broker-list") or "", not opts.has("disable-rack-aware"))
    elif action == "execute":
        text = read_file(opts.value("reassignment-json-file") or "")
        if zookeeper:
            throttle = opts.number("throttle")
            service.execute(text, throttle)
        else:
            additional = opts.has("additional")
            throttle, log_dir_throttle = opts.number("throttle"), opts.number("replica-alter-log-dirs-throttle")
            service.execute(additional, text, throttle, log_dir_throttle, opts.number("timeout"))
    elif action == "cancel":
        text = read_file(opts.value("reassignment-json-file") or "")
        service.cancel(text, opts.has("preserve-throttles"), opts.number("timeout"))
    elif action == "list":
        service.list()
    else:
        raise JavaError(RUNTIME, "Unsupported action.")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        opts, action = validate_and_parse_args(args)
    except UsageFailure as usage:
        err.write(f"{usage}\n{format_help()}")
        return 1
    except JavaError as error:     # thrown before main's try (option checks): the JVM prints it
        err.write(f'Exception in thread "main" {error.java_class}: {error.message}\n')
        return 1
    if action is None:
        out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
        return 0

    service = None
    failed = True
    try:
        if opts.has("bootstrap-server"):
            if opts.has("zookeeper"):
                out.write("Warning: ignoring deprecated --zookeeper option because --bootstrap-server was "
                          "specified.  The --zookeeper option will be removed in a future version of Kafka.\n")
            config = dict(load_properties(opts.value("command-config") or "")) if opts.has("command-config") else {}
            config["bootstrap.servers"] = opts.value("bootstrap-server") or ""
            config.setdefault("client.id", "reassign-partitions-tool")
            service = AdminService(config, out)
            _run_action(service, action, opts, zookeeper=False)
        else:
            from kafkalike.cli.reassign_partitions_zookeeper import ZookeeperService
            out.write("Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.\n")
            service = ZookeeperService(opts.value("zookeeper") or "", out)
            _run_action(service, action, opts, zookeeper=True)
        failed = False
    except TerseFailure as terse:
        out.write(f"{terse}\n")
    except JavaError as error:
        out.write(f"Error: {error.message}\n{stack_trace(error)}\n")
    except Exception as error:   # what Java would print for any other Throwable
        message = getattr(error, "message", None) or str(error)
        out.write(f"Error: {message}\n{stack_trace(error)}\n")
    finally:
        if service is not None:
            service.close()
        out.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    run_tool(main)
