"""kafka-log-dirs: the log directories of brokers and the replicas in them, as Kafka 2.8's LogDirsCommand.

It prints `Querying brokers for log directories information`, then `Received log
directory information from brokers 0,1` and one JSON line: per broker its log dirs, each
with its error (the Java exception's class name, or null) and its replicas' size, offset
lag and whether they are future replicas. The admin client's DescribeLogDirs is asked of
each broker in turn over its own connection (all topics; --topic-list only filters the
answer, as Kafka's does). Replicas are listed by topic and partition (Java's map order is
its hash order).
"""
from __future__ import annotations

import json
import sys
from typing import Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import JavaError, Option, throwable
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.admin import AdminClient, KafkaAdminError
from kafkalike.client.connection import BrokerConnection, KafkaConnectionError
from kafkalike.properties import load as load_properties
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.describe_log_dirs import DescribeLogDirsRequest

EXECUTION = "java.util.concurrent.ExecutionException"
ERRORS = "org.apache.kafka.common.errors."
HELP_MESSAGE = "This tool helps to query log directory usage on the specified brokers."
OPTIONS = command_default.with_defaults(
    Option("bootstrap-server", "REQUIRED: the server(s) to use for bootstrapping",
           "The server(s) to use for bootstrapping"),
    Option("command-config", "Property file containing configs to be passed to Admin Client.",
           "Admin client property file"),
    Option("describe", "Describe the specified log directories on the specified brokers."),
    Option("topic-list", "The list of topics to be queried in the form \"topic1,topic2,topic3\". All topics will "
           "be queried if no topic list is specified", "Topic list", default=""),
    Option("broker-list", "The list of brokers to be queried in the form \"0,1,2\". All brokers in the cluster "
           "will be queried if no broker list is specified", "Broker list"),
)


def admin_config(opts, client_id: str) -> dict[str, str]:
    """The tool's admin client properties: --command-config, the bootstrap servers, a client id."""
    config = load_properties(opts.value("command-config")) if opts.has("command-config") else {}
    config["bootstrap.servers"] = opts.value("bootstrap-server") or ""
    config.setdefault("client.id", client_id)
    return config


def java_int(text: str) -> int:
    """String.toInt: a NumberFormatException escapes main for anything else."""
    try:
        return int(text)
    except ValueError:
        raise JavaError("java.lang.NumberFormatException", f'For input string: "{text}"') from None


def describe_log_dirs(admin: AdminClient, brokers: Sequence[int], client_id: str
                      ) -> dict[int, dict[str, tuple[str | None, list[tuple[str, int, int, int, bool]]]]]:
    """broker -> log dir -> (error class or None, [(topic, partition, size, offsetLag, isFuture)])."""
    nodes = {b.id: b for b in admin.describe_cluster().brokers}
    out: dict[int, dict[str, tuple[str | None, list]]] = {}
    for broker in brokers:
        node = nodes.get(broker)
        if node is None:
            raise JavaError(EXECUTION, f"{ERRORS}TimeoutException: Timed out waiting for a node assignment. "
                            "Call: describeLogDirs",
                            JavaError(ERRORS + "TimeoutException",
                                      "Timed out waiting for a node assignment. Call: describeLogDirs"))
        try:
            with BrokerConnection(node.host, node.port, client_id=client_id, security=admin.security) as connection:
                connection.connect()
                response = connection.send(DescribeLogDirsRequest(topics=None))
        except KafkaConnectionError as error:
            raise JavaError(EXECUTION, f"{ERRORS}DisconnectException: {error}",
                            JavaError(ERRORS + "DisconnectException", str(error))) from None
        dirs: dict[str, tuple[str | None, list]] = {}
        for result in response.results:
            error = None
            if result.error_code != ErrorCode.NONE:
                error = KafkaAdminError(result.error_code).java_class
            replicas = sorted((t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                              for t in result.topics for p in t.partitions)
            dirs[result.log_dir] = (error, replicas)
        out[broker] = dirs
    return out


def format_as_json(described, topics: set[str]) -> str:
    return json.dumps({"version": 1, "brokers": [
        {"broker": broker, "logDirs": [
            {"logDir": log_dir, "error": error, "partitions": [
                {"partition": f"{t}-{p}", "size": size, "offsetLag": lag, "isFuture": future}
                for t, p, size, lag, future in replicas if not topics or t in topics]}
            for log_dir, (error, replicas) in dirs.items()]}
        for broker, dirs in sorted(described.items())]}, separators=(",", ":"))


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, HELP_MESSAGE, ("bootstrap-server", "describe"))
        topics = {t for t in (opts.value("topic-list") or "").split(",") if t}
        config = admin_config(opts, "log-dirs-tool")
        admin = AdminClient(config)
        try:
            if opts.has("broker-list"):
                brokers = [java_int(b) for b in (opts.value("broker-list") or "").split(",") if b]
            else:
                brokers = [b.id for b in admin.describe_cluster().brokers]
            out.write("Querying brokers for log directories information\n")
            described = describe_log_dirs(admin, brokers, config["client.id"])
            out.write(f"Received log directory information from brokers {','.join(map(str, brokers))}\n")
            out.write(format_as_json(described, topics) + "\n")
        except KafkaAdminError as error:
            raise JavaError(EXECUTION, throwable(error), error) from None
        finally:
            admin.close()
        return 0
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
