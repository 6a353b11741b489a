"""kafka-preferred-replica-election: the deprecated 2.8 tool, kept for the scripts that call it.

--bootstrap-server asks the controller through ElectLeaders (PREFERRED); --zookeeper
writes /admin/preferred_replica_election, which the controller watches, runs and
deletes, through the session the other --zookeeper tools share (cli/zookeeper_tool.py:
the SASL login and secure ACLs of a secured ZooKeeper). The lines printed are Kafka 2.8's PreferredReplicaLeaderElectionCommand's,
including its Scala collection formatting (`Set(t-0, t-1)`).
"""
from __future__ import annotations

import json
import sys
from typing import Sequence, TextIO

from kazoo.exceptions import KazooException, NodeExistsError

from kafkalike.cli.joptions import (KAFKA_COMMIT_ID, KAFKA_VERSION, JavaError, Option, options_table, parse_args,
                                    throwable)
from kafkalike.cli.leader_election import (
    ADMIN_COMMAND_FAILED,
    ADMIN_OPERATION,
    DIALECT,
    admin_config,
    parse_partitions_json,
    run_like_java_main,
)
from kafkalike.client.admin import AdminClient, KafkaAdminError
from kafkalike.protocol.errors import ErrorCode
from kafkalike.zkdata.topic_znodes import TopicPartition
from kafkalike.zkdata.znodes import PreferredReplicaElectionZNode
from kafkalike.cli.tool_main import run_tool
from kafkalike.cli.zookeeper_tool import ZooKeeperTool

DEPRECATION = "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: KAFKA-8405\n"
HELP = """This tool helps to causes leadership for each partition to be transferred back to the 'preferred replica', it can be used to balance leadership among the servers.
Option                                  Description
------                                  -----------
--admin.config <String: config file>    Admin client config properties file to
                                          pass to the admin client when --
                                          bootstrap-server is given.
--bootstrap-server <String: host:port>  A hostname and port for the broker to
                                          connect to, in the form host:port.
                                          Multiple comma-separated URLs can be
                                          given. REQUIRED unless --zookeeper is
                                          given.
--help                                  Print usage information.
--path-to-json-file <String: list of    The JSON file with the list of
  partitions for which preferred          partitions for which preferred
  replica leader election needs to be     replica leader election should be
  triggered>                              done, in the following format -
                                        {"partitions":
                                        	[{"topic": "foo", "partition": 1},
                                        	 {"topic": "foobar", "partition": 2}]
                                        }
                                        Defaults to all existing partitions
--version                               Display Kafka version.
--zookeeper <String: urls>              DEPRECATED. The connection string for
                                          the zookeeper connection in the form
                                          host:port. Multiple URLS can be
                                          given to allow fail-over. Replaced by
                                          --bootstrap-server, REQUIRED unless
                                          --bootstrap-server is given.
"""


# The options as jopt sees them (the help text is HELP above).
OPTIONS = options_table(
    Option("bootstrap-server", "", "host:port"),
    Option("zookeeper", "", "urls"),
    Option("admin.config", "", "config file"),
    Option("path-to-json-file", "", "list of partitions for which preferred replica leader election needs to be "
           "triggered"),
    Option("help", ""),
    Option("version", ""),
)


def scala_set(items: list[str]) -> str:
    """Scala 2.13's toString of an immutable Set: Set1..Set4, then a HashSet."""
    return ("Set(" if len(items) <= 4 else "HashSet(") + ", ".join(items) + ")"


def _names(partitions: list[tuple[str, int]]) -> list[str]:
    return [f"{t}-{p}" for t, p in partitions]


def elect_through_admin(admin: AdminClient, partitions: list[tuple[str, int]] | None, out: TextIO) -> None:
    """2.8's AdminClientCommand: electLeaders(PREFERRED), then the partitions moved, the ones
    whose preferred replica already led, and the failures, each kind on its own line(s).

    One deliberate difference: 2.8's "already elected" line lists the partitions that
    succeeded (a slip in its code, so it is usually empty); this one lists the partitions
    that were already led by their preferred replica, as the sentence says."""
    try:
        results = admin.elect_leaders(0, partitions)
    except KafkaAdminError as error:
        if error.code == ErrorCode.REQUEST_TIMED_OUT:
            out.write("Timeout waiting for election results\n")
            raise JavaError(ADMIN_COMMAND_FAILED, "Timeout waiting for election results", error) from None
        if error.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            out.write("Not authorized to perform leader election\n")
            raise JavaError(ADMIN_COMMAND_FAILED, "Not authorized to perform leader election", error) from None
        raise JavaError(ADMIN_COMMAND_FAILED, None, error) from None
    attempted = partitions if partitions is not None else sorted(results)
    outcome = {tp: results.get(tp, KafkaAdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)) for tp in attempted}
    succeeded = [tp for tp, error in outcome.items() if error is None]
    noop = [tp for tp, error in outcome.items() if error is not None and error.code == ErrorCode.ELECTION_NOT_NEEDED]
    failed = [tp for tp in attempted if tp not in succeeded and tp not in noop]
    if succeeded:
        out.write(f"Successfully completed preferred leader election for partitions {', '.join(_names(succeeded))}\n")
    if noop:
        out.write(f"Preferred replica already elected for partitions {', '.join(_names(noop))}\n")
    if failed:
        for tp in failed:
            out.write(f"Error completing preferred leader election for partition: {tp[0]}-{tp[1]}: "
                      f"{throwable(outcome[tp])}\n")
        raise JavaError(ADMIN_COMMAND_FAILED, f"{len(failed)} preferred replica(s) could not be elected")


def elect_through_zookeeper(zk_connect: str, partitions: list[tuple[str, int]] | None, out: TextIO) -> None:
    """Kafka's ZkCommand. Its KafkaZkClient is secured as JaasUtils.isZkSaslEnabled says,
    which is what the tools' shared session does (zookeeper_tool.py): a SASL login from the
    JAAS file KAFKA_OPTS names, and then the election znode created with the secure ACLs.
    A session that does not start escapes main unwrapped, as ZkCommand's constructor
    throws outside electPreferredLeaders; anything failing after is "Admin command failed"."""
    tool = ZooKeeperTool(zk_connect, out)
    try:
        topics = sorted({t for t, _ in partitions}) if partitions is not None else _all_topics(tool)
        existing = [(t, p) for t in topics for p in _partitions_of(tool, t)]
        if partitions is None:
            valid, invalid = existing, []
        else:
            valid = [tp for tp in partitions if tp in existing]
            invalid = [tp for tp in partitions if tp not in existing]
        znode = PreferredReplicaElectionZNode
        try:
            tool._create_recursive(znode.PATH, znode.encode(TopicPartition(t, p) for t, p in valid))
        except NodeExistsError:
            raw = tool._get(znode.PATH) or b'{"version":1,"partitions":[]}'
            running = [f"{tp.topic}-{tp.partition}" for tp in znode.decode(raw)]
            raise JavaError(ADMIN_OPERATION, f"Preferred replica leader election currently in progress for "
                                             f"{','.join(running)}. Aborting operation") from None
        except KazooException as error:
            # writePreferredReplicaElectionData: AdminOperationException(e.toString)
            raise JavaError(ADMIN_OPERATION, f"{_keeper_exception(error)}: {_keeper_message(error, znode.PATH)}") \
                from None
        out.write(f"Created preferred replica election path with {','.join(_names(valid))}\n")
        out.write(f"Successfully started preferred replica election for partitions {scala_set(_names(valid))}\n")
        for t, p in invalid:
            out.write(f"Skipping preferred replica leader election for partition {t}-{p} since it doesn't exist.\n")
    except (JavaError, KazooException) as error:
        if isinstance(error, KazooException):
            error = JavaError(_keeper_exception(error), _keeper_message(error, None))
        raise JavaError(ADMIN_COMMAND_FAILED, "Admin command failed", error) from None
    finally:
        tool.close()


# ZooKeeper's KeeperException subclasses by kazoo's names, and their codes' words.
_KEEPER = {"NoAuthError": ("NoAuthException", "NoAuth"), "NoNodeError": ("NoNodeException", "NoNode"),
           "AuthFailedError": ("AuthFailedException", "AuthFailed"),
           "ConnectionLoss": ("ConnectionLossException", "ConnectionLoss"),
           "SessionExpiredError": ("SessionExpiredException", "Session expired")}


def _keeper_exception(error: KazooException) -> str:
    name = _KEEPER.get(type(error).__name__, (type(error).__name__, ""))[0]
    return f"org.apache.zookeeper.KeeperException${name}"


def _keeper_message(error: KazooException, path: str | None) -> str:
    """KeeperException.getMessage(): "KeeperErrorCode = <code>[ for <path>]"."""
    code = _KEEPER.get(type(error).__name__, ("", type(error).__name__))[1]
    return f"KeeperErrorCode = {code}" + (f" for {path}" if path else "")


def _all_topics(tool: ZooKeeperTool) -> list[str]:
    return sorted(tool._children("/brokers/topics"))


def _partitions_of(tool: ZooKeeperTool, topic: str) -> list[int]:
    raw = tool._get(f"/brokers/topics/{topic}")
    if raw is None:
        return []
    return sorted(int(p) for p in json.loads(raw).get("partitions", {}))


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        out.write(DEPRECATION)
        opts = parse_args(OPTIONS, args, DIALECT)
        if not args or opts.has("help"):
            # CommandLineUtils.printHelpAndExitIfNeeded: usage on stderr, exit status 1.
            err.write(HELP)
            return 1
        if opts.has("version"):
            out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
            return 0
        if opts.has("bootstrap-server") == opts.has("zookeeper"):
            err.write("Exactly one of 'bootstrap-server' or 'zookeeper' must be provided\n" + HELP)
            return 1
        partitions = None
        if opts.has("path-to-json-file"):
            with open(opts.value("path-to-json-file") or "", encoding="utf-8") as f:
                partitions = parse_partitions_json(f.read(), "Preferred replica election data",
                                                   "Preferred replica election data is empty")
        if opts.has("zookeeper"):
            out.write("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.\n")
            out.write("Use --bootstrap-server instead to specify a broker to connect to.\n")
            elect_through_zookeeper(opts.value("zookeeper") or "", partitions, out)
        else:
            admin = AdminClient(admin_config(opts, "admin.config"))
            try:
                elect_through_admin(admin, partitions, out)
            finally:
                admin.close()
        return 0
    return run_like_java_main(body, out, err)


if __name__ == "__main__":
    run_tool(main)
