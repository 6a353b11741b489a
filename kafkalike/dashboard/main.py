"""bin/kafkalike-dashboard.sh: the command line, then the web site on its reactor.

The options are read as Kafka's CommandDefaultOptions tools read theirs (whole names,
`Missing required argument "[bootstrap-server]"` and the option table on stderr, exit
status 1), so it behaves like the kafka-*.sh tools beside it.
"""
from __future__ import annotations

import logging
import sys
from typing import Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import Option, UsageError
from kafkalike.cli.tool_main import run_tool
from kafkalike.properties import load as load_properties

DEFAULT_PORT = 9179
DEFAULT_HOST = "127.0.0.1"
DEFAULT_REFRESH = 5
DEFAULT_WINDOW = 10

HELP_MESSAGE = ("This tool serves a web dashboard of a Kafka cluster: brokers and the controller, topics with "
                "their partitions, leaders, replicas and ISR, consumer groups with their lag, and produce and "
                "fetch rates over the last minutes.")

OPTIONS = command_default.with_defaults(
    Option("bootstrap-server", "REQUIRED: The server(s) to connect to.", "server(s) to use for bootstrapping"),
    Option("zookeeper", "The ZooKeeper connection string of the cluster (host:port[/chroot]); when given, the "
           "controller and the registered brokers are also read from ZooKeeper.", "urls"),
    Option("port", "The HTTP port the dashboard listens on (0: any free port).", "port", "Integer",
           str(DEFAULT_PORT)),
    Option("host", "The address the dashboard listens on.", "address", "String", DEFAULT_HOST),
    Option("refresh", "Seconds between two looks at the cluster, and between two reloads of a page.",
           "seconds", "Integer", str(DEFAULT_REFRESH)),
    Option("window", "Minutes of rates the plots show.", "minutes", "Integer", str(DEFAULT_WINDOW)),
    Option("metrics-url", "A broker's Prometheus endpoint (http://host:port/metrics), repeatable or comma "
           "separated; the rates then come from the brokers' metrics rather than from offsets sampled over time.",
           "url"),
    Option("command-config", "A property file containing configs to be passed to Admin Client.", "command config "
           "property file"),
)


def _int_option(opts, name: str, low: int, high: int) -> int:
    value = opts.number(name)
    if value is None or not low <= value <= high:
        raise UsageError(f"The value of --{name} must be between {low} and {high}, not {opts.value(name)}")
    return value


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, HELP_MESSAGE, ("bootstrap-server",))
        port = _int_option(opts, "port", 0, 65535)
        refresh = _int_option(opts, "refresh", 1, 3600)
        window = _int_option(opts, "window", 1, 1440)
        urls = [u.strip() for value in opts.all("metrics-url") for u in value.split(",") if u.strip()]
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise UsageError(f"--metrics-url must be an http:// or https:// URL, not {url}")
        admin_config = {}
        if opts.has("command-config"):
            path = opts.value("command-config") or ""
            try:
                admin_config = dict(load_properties(path))
            except OSError:
                raise UsageError(f"The command config file {path} cannot be read") from None
        return serve(opts.value("bootstrap-server") or "", opts.value("zookeeper"), opts.value("host") or DEFAULT_HOST,
                     port, refresh, window * 60, urls, admin_config, out, err)
    return command_default.run_main(OPTIONS, body, out, err)


def serve(bootstrap: str, zookeeper: str | None, host: str, port: int, refresh: int, window: float,
          urls: Sequence[str], admin_config: dict[str, str], out: TextIO, err: TextIO) -> int:
    from twisted.internet import reactor
    from twisted.internet.error import CannotListenError

    from kafkalike.dashboard.collect import Collector
    from kafkalike.dashboard.server import Poller, make_state, site

    logging.basicConfig(stream=err, level=logging.WARNING,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    # The admin client warns of every unreachable broker at each look; the page shows them down.
    logging.getLogger("kafkalike.client.admin").setLevel(logging.ERROR)
    try:
        collector = Collector(bootstrap, zookeeper, urls, admin_config)
    except ValueError as error:
        raise UsageError(str(error)) from None
    state = make_state(bootstrap, refresh, window, collector.rate_source)
    try:
        listening = reactor.listenTCP(port, site(state), interface=host)
    except CannotListenError as error:
        err.write(f"Cannot listen on {host}:{port}: {error.socketError}\n")
        collector.close()
        return 1
    shown = f"[{host}]" if ":" in host else host
    out.write(f"kafkalike dashboard on http://{shown}:{listening.getHost().port}/ "
              f"(cluster {bootstrap}, looking every {refresh} s)\n")
    out.flush()
    poller = Poller(collector, state, reactor)
    reactor.callWhenRunning(poller.start)
    reactor.addSystemEventTrigger("before", "shutdown", poller.close)
    reactor.run()
    return 0


if __name__ == "__main__":
    run_tool(main)
