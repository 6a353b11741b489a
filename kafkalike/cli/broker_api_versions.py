"""kafka-broker-api-versions: what each broker serves, as Kafka 2.8's BrokerApiVersionsCommand prints it.

For every broker in the cluster (by id): `host:port (id: 0 rack: null) -> (`, then one line
per API in api key order as NodeApiVersions.toString(true) writes it:
`\\tProduce(0): 0 to 9 [usable: 9],` (one number when min = max), `[unusable: node too
new]` / `[unusable: node too old]` when no version is common, `UNSUPPORTED` for the APIs
Kafka 2.8's client knows and the broker does not list, `UNKNOWN(n): ...` for api keys the
client does not know, and `)`. The client's side is Kafka 2.8's Java client, whose max
versions are those of Kafka's JSON message definitions: the ones kafkalike's protocol
declarations are held to (`kafkalike.protocol.api.APIS`), which cover exactly the APIs
2.8's ApiKeys.enabledApis() lists. A broker that cannot be asked gets
`host:port (id: 0 rack: null) -> ERROR: <exception>`.
"""
from __future__ import annotations

import sys
from typing import Mapping, Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import JavaError, Option, throwable
from kafkalike.cli.log_dirs import admin_config
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.admin import AdminClient, KafkaAdminError
from kafkalike.client.connection import BrokerConnection, KafkaConnectionError, UnsupportedApiVersion
from kafkalike.protocol.api import APIS

HELP_MESSAGE = "This tool helps to retrieve broker version information."
OPTIONS = command_default.with_defaults(
    Option("command-config", "A property file containing configs to be passed to Admin Client.",
           "command config property file"),
    Option("bootstrap-server", "REQUIRED: The server to connect to.", "server(s) to use for bootstrapping"),
)

# Kafka 2.8's Java client: api key -> (name, oldest, latest).
CLIENT_APIS: dict[int, tuple[str, int, int]] = {k: (s.name, *s.versions) for k, s in APIS.items()}


def api_line(key: int, low: int, high: int, client: Mapping[int, tuple[str, int, int]] = CLIENT_APIS) -> str:
    """NodeApiVersions.apiVersionToText."""
    known = client.get(key)
    text = f"{known[0]}({key}): " if known else f"UNKNOWN({key}): "
    text += str(low) if low == high else f"{low} to {high}"
    if known:
        _, oldest, latest = known
        if latest < low:
            text += " [unusable: node too new]"
        elif high < oldest:
            text += " [unusable: node too old]"
        else:
            text += f" [usable: {min(latest, high)}]"
    return text


def format_versions(broker: Mapping[int, tuple[int, int]],
                    client: Mapping[int, tuple[str, int, int]] = CLIENT_APIS) -> str:
    """NodeApiVersions.toString(lineBreaks = true)."""
    lines = {key: api_line(key, low, high, client) for key, (low, high) in broker.items()}
    for key, (name, _, _) in client.items():
        lines.setdefault(key, f"{name}({key}): UNSUPPORTED")
    return "(\n\t" + ",\n\t".join(lines[k] for k in sorted(lines)) + "\n)"


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, HELP_MESSAGE, ("bootstrap-server",))
        config = admin_config(opts, "broker-api-versions-tool")
        admin = AdminClient(config)
        try:
            brokers = sorted(admin.describe_cluster().brokers, key=lambda b: b.id)
        except KafkaAdminError as error:
            raise JavaError("java.lang.RuntimeException", f"Request METADATA failed on brokers "
                            f"{opts.value('bootstrap-server')}", error) from None
        finally:
            admin.close()
        for node in brokers:
            name = f"{node.host}:{node.port} (id: {node.id} rack: {node.rack if node.rack else 'null'})"
            try:
                with BrokerConnection(node.host, node.port, client_id=config["client.id"],
                                      security=admin.security) as connection:
                    versions = connection.connect(negotiate=False).api_versions()
                out.write(f"{name} -> {format_versions(versions)}\n")
            except (KafkaConnectionError, UnsupportedApiVersion) as error:
                out.write(f"{name} -> ERROR: {throwable(error)}\n")
        return 0
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
