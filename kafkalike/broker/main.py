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


def fatal_cause(failure) -> str | None:
    """One line naming why start-up failed, for the causes an operator can fix; None otherwise.

    Kafka prints one FATAL line for these (port in use, ZooKeeper unreachable, a broker.id
    already registered, a wrong cluster or broker id in meta.properties), not a stack.
    """
    from twisted.internet.error import CannotListenError

    from kafkalike.broker.server import StartupError
    from kafkalike.zkdata.errors import EphemeralOwnedByOtherSession, ZooKeeperClientTimeoutError

    error = failure.value
    if isinstance(error, StartupError):
        return str(error)
    if isinstance(error, CannotListenError):
        reason = getattr(error.socketError, "strerror", None) or str(error.socketError)
        return (f"org.apache.kafka.common.KafkaException: Socket server failed to bind to "
                f"{error.interface or '0.0.0.0'}:{error.port}: {reason}.")
    if isinstance(error, ZooKeeperClientTimeoutError):
        return f"kafka.zookeeper.ZooKeeperClientTimeoutException: {error}"
    if isinstance(error, EphemeralOwnedByOtherSession):
        return (f"org.apache.zookeeper.KeeperException$NodeExistsException: {error}. Another broker is "
                "registered with this broker.id, or this broker restarted before its old ZooKeeper session "
                "expired.")
    return None


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

    from kafkalike.broker.heap_freezer import HeapFreezer
    from kafkalike.broker.server import KafkaServer

    server = KafkaServer(config, reactor)
    HeapFreezer(reactor.callFromThread).install()
    status = {"code": 0}

    def started_failed(failure):
        cause = fatal_cause(failure)
        if cause is not None:
            log.error("Fatal error during KafkaServer startup. Prepare to shutdown: %s", cause)
        else:   # not a condition we know: a bug, so the trace is the useful part
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
