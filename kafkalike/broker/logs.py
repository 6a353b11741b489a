"""Broker logging laid out like Kafka's default config/log4j.properties.

Operators find a Kafka broker's story in $LOG_DIR/server.log, controller decisions in
controller.log and partition state transitions in state-change.log, with lines such as

    [2026-11-22 03:00:00,123] INFO [KafkaServer id=0] started (kafka.server.KafkaServer)

Runbooks, grep habits and log shippers depend on those names and that shape, so the
broker's loggers are named after Kafka's classes (kafka.server.KafkaServer,
kafka.controller.KafkaController, state.change.logger, ...) and this module wires them
to the same files. Twisted's own log events are forwarded into the same tree.
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twisted.logger import ILogObserver, LogBeginner, LogLevel, formatEvent, globalLogBeginner
from zope.interface import implementer

TRACE = 5
logging.addLevelName(TRACE, "TRACE")

LINE_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"

# log4j's level names differ from Python's for two levels.
_LOG4J_LEVEL_NAMES = {logging.WARNING: "WARN", logging.CRITICAL: "FATAL"}

# (logger, file, level): loggers that write only to their own file (additivity=false).
SEPARATE_LOGS: tuple[tuple[str, str, int], ...] = (
    ("kafka.controller", "controller.log", TRACE),
    ("state.change.logger", "state-change.log", logging.INFO),
    ("kafka.log.LogCleaner", "log-cleaner.log", logging.INFO),
    ("kafka.request.logger", "kafka-request.log", logging.WARNING),
    ("kafka.authorizer.logger", "kafka-authorizer.log", logging.INFO),
)
SERVER_LOG = "server.log"


class Log4jFormatter(logging.Formatter):
    """`[%d] %p %m (%c)` with log4j's WARN/FATAL names and ISO8601 date (2026-11-22 03:00:00,123)."""

    def __init__(self) -> None:
        super().__init__(LINE_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        renamed = _LOG4J_LEVEL_NAMES.get(record.levelno)
        if renamed is None:
            return super().format(record)
        original = record.levelname
        record.levelname = renamed
        try:
            return super().format(record)
        finally:
            record.levelname = original


def default_log_dir() -> Path:
    """$LOG_DIR, else <repo>/logs, as kafka-run-class.sh picks it."""
    env = os.environ.get("LOG_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "logs"


@dataclass
class LoggingSetup:
    """Handlers installed by `setup_logging`, so a test or a restart can take them away."""

    log_dir: Path
    installed: list[tuple[logging.Logger, logging.Handler]] = field(default_factory=list)
    saved: list[tuple[logging.Logger, int, bool]] = field(default_factory=list)

    def close(self) -> None:
        for logger, handler in self.installed:
            logger.removeHandler(handler)
            handler.close()
        for logger, level, propagate in self.saved:
            logger.setLevel(level)
            logger.propagate = propagate
        self.installed.clear()
        self.saved.clear()


def _file_handler(path: Path) -> logging.Handler:
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(Log4jFormatter())
    return handler


def setup_logging(log_dir: str | Path | None = None, *, stdout: bool = True,
                  level: int = logging.INFO, twisted: bool = True) -> LoggingSetup:
    """Install Kafka's default layout: root -> stdout + server.log; special loggers -> own files.

    `twisted=True` makes Twisted's global log publisher feed Python logging; leave it
    off in tests, because Twisted's global log can be started only once per process.
    """
    directory = Path(log_dir) if log_dir is not None else default_log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    setup = LoggingSetup(directory)

    def configure(logger: logging.Logger, logger_level: int, propagate: bool) -> None:
        setup.saved.append((logger, logger.level, logger.propagate))
        logger.setLevel(logger_level)
        logger.propagate = propagate

    def attach(logger: logging.Logger, handler: logging.Handler) -> None:
        logger.addHandler(handler)
        setup.installed.append((logger, handler))

    root = logging.getLogger()
    configure(root, level, root.propagate)
    if stdout:
        console = logging.StreamHandler(sys.stdout)
        console.setFormatter(Log4jFormatter())
        attach(root, console)
    attach(root, _file_handler(directory / SERVER_LOG))
    for name, filename, logger_level in SEPARATE_LOGS:
        logger = logging.getLogger(name)
        configure(logger, logger_level, False)
        attach(logger, _file_handler(directory / filename))
    # kazoo is our org.apache.zookeeper: INFO, like Kafka's log4j.logger.org.apache.zookeeper.
    configure(logging.getLogger("kazoo"), logging.INFO, True)
    if twisted:
        route_twisted_logging()
    return setup


@implementer(ILogObserver)
class TwistedToLogging:
    """Forward Twisted log events to the Python logger named after the event's namespace.

    A broker module that logs with twisted.logger.Logger(namespace="kafka.server.KafkaServer")
    therefore lands in the same file, with the same format, as one using logging directly.
    """

    _LEVELS = {
        LogLevel.debug: logging.DEBUG,
        LogLevel.info: logging.INFO,
        LogLevel.warn: logging.WARNING,
        LogLevel.error: logging.ERROR,
        LogLevel.critical: logging.CRITICAL,
    }

    def __call__(self, event: dict[str, Any]) -> None:
        level = self._LEVELS.get(event.get("log_level"), logging.INFO)  # type: ignore[arg-type]
        namespace = event.get("log_namespace") or "twisted"
        if namespace == "log_legacy":
            namespace = "twisted"
        logger = logging.getLogger(namespace)
        if not logger.isEnabledFor(level):
            return
        failure = event.get("log_failure")
        exc_info = None
        if failure is not None:
            exc_info = (failure.type, failure.value, failure.getTracebackObject())
        logger.log(level, "%s", formatEvent(event), exc_info=exc_info)


def route_twisted_logging(beginner: LogBeginner | None = None) -> TwistedToLogging:
    """Start Twisted's logging with Python logging as its only destination."""
    observer = TwistedToLogging()
    (beginner or globalLogBeginner).beginLoggingTo([observer], redirectStandardIO=False)
    return observer
