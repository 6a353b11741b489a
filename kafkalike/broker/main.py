"""`kafka-server-start.sh server.properties [--override k=v ...]`: run one broker.

SIGTERM (kafka-server-stop.sh) shuts down cleanly; a bad configuration or a failed
start-up logs why and exits with status 1, as Kafka's "Exiting Kafka." does.
"""
from __future__ import annotations

import logging
import sys

USAGE = "USAGE: kafka-server-start.sh [-daemon] server.properties [--override property=value]*"


def parse_args(argv: list[str]) -> tuple[str, list[str]]:
    if not argv or argv[0] in ("-h", "--help"):
        raise SystemExit(USAGE)
    path, rest = argv[0], argv[1:]
    overrides = []
    while rest:
        if rest[0] != "--override" or len(rest) < 2:
            raise SystemExit(f"Found non argument parameters: {rest[0]}\n{USAGE}")
        overrides.append(rest[1])
        rest = rest[2:]
    return path, overrides


def main(argv: list[str] | None = None) -> int:
    from kafkalike.broker.config import ConfigError, KafkaConfig
    from kafkalike.broker.logs import setup_logging

    path, overrides = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging()
    log = logging.getLogger("kafka.Kafka")
    try:
        config = KafkaConfig.load(path, overrides)
    except (ConfigError, OSError, ValueError) as exc:
        log.error("Exiting Kafka due to fatal exception: %s", exc)
        print(f"Error: {exc}", file=sys.stderr)
        return 1

    from twisted.internet import defer, reactor

    from kafkalike.broker.server import KafkaServer, StartupError

    server = KafkaServer(config, reactor)
    status = {"code": 0}

    def started_failed(failure):
        if failure.check(StartupError):
            log.error("Fatal error during KafkaServer startup. Prepare to shutdown: %s", failure.getErrorMessage())
        else:
            log.error("Fatal error during KafkaServer startup. Prepare to shutdown\n%s", failure.getTraceback())
        status["code"] = 1
        d = defer.ensureDeferred(server.shutdown())
        d.addBoth(lambda _: reactor.stop())

    def start():
        d = defer.ensureDeferred(server.startup())
        d.addErrback(started_failed)

    reactor.addSystemEventTrigger("before", "shutdown", lambda: defer.ensureDeferred(server.shutdown()))
    reactor.callWhenRunning(start)
    reactor.run()   # Twisted's SIGTERM/SIGINT handlers stop it, running the trigger above
    return status["code"]


if __name__ == "__main__":
    sys.exit(main())
