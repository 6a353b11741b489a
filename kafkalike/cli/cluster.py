"""kafka-cluster: the cluster tool of Kafka 2.8 (kafka.tools.ClusterTool), on argparse4j.

`cluster-id` prints the ID the brokers keep in ZooKeeper's /cluster/id (`Cluster ID: ...`),
asked through DescribeCluster; `unregister --id N` is KRaft's broker unregistration, which a
ZooKeeper-mode cluster does not offer: the tool says so and exits 0, as 2.8's does against
one. --config names the admin client's properties (security settings, for instance).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence, TextIO

from kafkalike.cli.argparse4j import INTEGER, ArgumentParser
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.admin import AdminClient, KafkaAdminError
from kafkalike.properties import load as load_properties
from kafkalike.protocol.errors import ErrorCode


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="kafka-cluster", description="The Kafka cluster tool.",
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="{cluster-id,unregister}")
    cluster_id = commands.add_parser("cluster-id", help="Get information about the ID of a cluster.")
    unregister = commands.add_parser("unregister", help="Unregister a broker.")
    for sub in (cluster_id, unregister):
        sub.add_argument("--bootstrap-server", "-b",
                         help="A list of host/port pairs to use for establishing the connection to the kafka "
                              "cluster.")
        sub.add_argument("--config", "-c", help="A property file containing configs to passed to AdminClient.")
    unregister.add_argument("--id", "-i", type=INTEGER, required=True, help="The ID of the broker to unregister.")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = _parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    if args.command is None:
        parser.error("too few arguments")
    config = load_properties(args.config) if args.config else {}
    if args.bootstrap_server:
        config["bootstrap.servers"] = args.bootstrap_server
    if not config.get("bootstrap.servers"):
        err.write("Please specify --bootstrap-server.\n")     # TerseFailure
        return 1
    with AdminClient(config) as admin:
        if args.command == "cluster-id":
            cluster_id = admin.describe_cluster().cluster_id
            out.write(f"Cluster ID: {cluster_id}\n" if cluster_id is not None
                      else "No cluster ID found. The Kafka version is probably too old.\n")
            return 0
        try:
            admin.unregister_broker(args.id)
        except KafkaAdminError as error:
            if error.code != ErrorCode.UNSUPPORTED_VERSION:
                raise
            out.write("The target cluster does not support the broker unregistration API.\n")
            return 0
        out.write(f"Broker {args.id} is no longer registered.\n")
    return 0


if __name__ == "__main__":
    run_tool(main)
