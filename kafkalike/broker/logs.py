"""Broker logging as Kafka 2.8 sets it up: config/log4j.properties read the way log4j 1.x reads it.

Operators find a Kafka broker's story in $LOG_DIR/server.log, controller decisions in
controller.log and partition state transitions in state-change.log, with lines such as

    [2026-11-22 03:00:00,123] INFO [KafkaServer id=0] started (kafka.server.KafkaServer)

Runbooks, grep habits and log shippers depend on those file names, logger names and that
shape, so the broker reads the same log4j.properties a Kafka broker does (which file,
from `-Dlog4j.configuration=` in KAFKA_LOG4J_OPTS, else config/log4j.properties) with
its appenders (console, plain and rolling files, DailyRollingFileAppender rolling on its
DatePattern), layouts, levels and additivity, `${kafka.logs.dir}` being LOG_DIR.

Most broker loggers are already named after Kafka's classes. The few modules that log
under their Python name are given Kafka's name in one table (`KAFKA_LOGGER_NAMES`)
rather than in each module: their records are re-dispatched under that name, so a line
from kafkalike's log recovery says `(kafka.log.Log)` and follows `log4j.logger.kafka`.
Twisted's own log events are forwarded into the same tree.
"""
from __future__ import annotations

import logging
import logging.handlers
import os
import re
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from twisted.logger import ILogObserver, LogBeginner, LogLevel, formatEvent, globalLogBeginner
from zope.interface import implementer

from kafkalike.properties import loads

TRACE = 5
logging.addLevelName(TRACE, "TRACE")

LINE_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
KAFKA_PATTERN = "[%d] %p %m (%c)%n"

# log4j's level names, and the two that differ from Python's.
_LOG4J_LEVEL_NAMES = {logging.WARNING: "WARN", logging.CRITICAL: "FATAL"}
LEVELS = {"ALL": 1, "TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "ERROR": logging.ERROR, "FATAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}

# (logger, file, level): Kafka 2.8's loggers that write only to their own file (additivity=false).
SEPARATE_LOGS: tuple[tuple[str, str, int], ...] = (
    ("kafka.controller", "controller.log", TRACE),
    ("state.change.logger", "state-change.log", logging.INFO),
    ("kafka.log.LogCleaner", "log-cleaner.log", logging.INFO),
    ("kafka.request.logger", "kafka-request.log", logging.WARNING),
    ("kafka.authorizer.logger", "kafka-authorizer.log", logging.INFO),
)
SERVER_LOG = "server.log"

# kafkalike's loggers named after a module (and their children) -> the Kafka 2.8 logger
# that writes the same lines, so `(kafka.log.Log)` and log4j.logger.kafka.log apply to them.
KAFKA_LOGGER_NAMES: dict[str, str] = {
    "kafkalike.storage.log": "kafka.log.Log",
    "kafkalike.storage.recovery": "kafka.log.Log",
    "kafkalike.storage.manager": "kafka.log.LogManager",
    "kafkalike.storage.leader_epoch": "kafka.server.epoch.LeaderEpochFileCache",
    "kafkalike.coordinator.producer_id_manager": "kafka.coordinator.transaction.ProducerIdManager",
    "kafkalike.zkdata.session": "kafka.zookeeper.ZooKeeperClient",
    "kafkalike.zkdata.watches": "kafka.zookeeper.ZooKeeperClient",
    "kazoo.protocol.connection": "org.apache.zookeeper.ClientCnxn",
    "kazoo": "org.apache.zookeeper.ZooKeeper",
}

# Kafka 2.8's config/log4j.properties, used when no file is found (an installed package).
DEFAULT_PROPERTIES = """\
log4j.rootLogger=INFO, stdout, kafkaAppender
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
""" + "".join(f"""\
log4j.appender.{name}=org.apache.log4j.DailyRollingFileAppender
log4j.appender.{name}.DatePattern='.'yyyy-MM-dd-HH
log4j.appender.{name}.File=${{kafka.logs.dir}}/{file}
log4j.appender.{name}.layout=org.apache.log4j.PatternLayout
log4j.appender.{name}.layout.ConversionPattern=[%d] %p %m (%c)%n
""" for name, file in (("kafkaAppender", "server.log"), ("stateChangeAppender", "state-change.log"),
                       ("requestAppender", "kafka-request.log"), ("cleanerAppender", "log-cleaner.log"),
                       ("controllerAppender", "controller.log"), ("authorizerAppender", "kafka-authorizer.log"))) + """\
log4j.logger.org.apache.zookeeper=INFO
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger=WARN, requestAppender
log4j.additivity.kafka.request.logger=false
log4j.logger.kafka.network.RequestChannel$=WARN, requestAppender
log4j.additivity.kafka.network.RequestChannel$=false
log4j.logger.kafka.controller=TRACE, controllerAppender
log4j.additivity.kafka.controller=false
log4j.logger.kafka.log.LogCleaner=INFO, cleanerAppender
log4j.additivity.kafka.log.LogCleaner=false
log4j.logger.state.change.logger=INFO, stateChangeAppender
log4j.additivity.state.change.logger=false
log4j.logger.kafka.authorizer.logger=INFO, authorizerAppender
log4j.additivity.kafka.authorizer.logger=false
"""


# ---------------------------------------------------------------------------------- layouts

_CONVERSION = re.compile(r"%(-?\d+)?(?:\.(\d+))?([a-zA-Z%])(?:\{([^}]*)\})?")


def _java_date(fmt: str, when: float) -> str:
    """java.text.SimpleDateFormat for the letters log4j patterns use (y M d H h m s S E a), quotes as literals.

    Every log line formats its date, so the text of the current second is kept per format
    and only the milliseconds are filled in per call."""
    second = int(when)
    cached = _DATE_CACHE.get(fmt)
    if cached is None or cached[0] != second:
        cached = (second, _date_parts(fmt, second))
        _DATE_CACHE[fmt] = cached
    parts = cached[1]
    if len(parts) == 1 and isinstance(parts[0], str):
        return parts[0]
    millis = int(when * 1000) % 1000
    return "".join(p if isinstance(p, str) else f"{millis:0{max(p, 3)}d}"[:max(p, 3)] for p in parts)


_DATE_CACHE: dict[str, tuple[int, list]] = {}


def _date_parts(fmt: str, second: int) -> list:
    """The date's text for one second: strings, and the width (an int) where milliseconds go."""
    moment = datetime.fromtimestamp(second)
    out: list = []
    text: list[str] = []
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "'":
            end = fmt.find("'", i + 1)
            end = len(fmt) if end < 0 else end
            text.append("'" if end == i + 1 else fmt[i + 1:end])
            i = end + 1
            continue
        j = i
        while j < len(fmt) and fmt[j] == ch:
            j += 1
        n = j - i
        if ch == "y":
            text.append(f"{moment.year % 100:02d}" if n == 2 else f"{moment.year:0{n}d}")
        elif ch == "M":
            text.append(moment.strftime("%B" if n >= 4 else "%b") if n >= 3 else f"{moment.month:0{n}d}")
        elif ch in "dHms":
            value = {"d": moment.day, "H": moment.hour, "m": moment.minute, "s": moment.second}[ch]
            text.append(f"{value:0{n}d}")
        elif ch == "h":
            text.append(f"{(moment.hour % 12) or 12:0{n}d}")
        elif ch == "S":
            out.append("".join(text))
            text = []
            out.append(n)
        elif ch == "E":
            text.append(moment.strftime("%A" if n >= 4 else "%a"))
        elif ch == "a":
            text.append("AM" if moment.hour < 12 else "PM")
        else:
            text.append(fmt[i:j])
        i = j
    out.append("".join(text))
    return [p for p in out if p != ""] or [""]


_NAMED_DATES = {"ISO8601": "yyyy-MM-dd HH:mm:ss,SSS", "ABSOLUTE": "HH:mm:ss,SSS", "DATE": "dd MMM yyyy HH:mm:ss,SSS"}


class PatternLayout(logging.Formatter):
    """log4j 1.x's PatternLayout: %d{...} %p %c{n} %C %m %n %t %r %% with width and truncation.

    `[%d] %p %m (%c)%n` writes `[2026-11-22 03:00:00,123] INFO message (kafka.server.KafkaServer)`.
    """

    def __init__(self, pattern: str = KAFKA_PATTERN) -> None:
        super().__init__()
        self.pattern = pattern
        self._parts: list[tuple[str, Any]] = []
        pos = 0
        for m in _CONVERSION.finditer(pattern):
            if m.start() > pos:
                self._parts.append(("text", pattern[pos:m.start()]))
            self._parts.append(("conv", (m.group(1), m.group(2), m.group(3), m.group(4))))
            pos = m.end()
        if pos < len(pattern):
            self._parts.append(("text", pattern[pos:]))
        self._ends_with_newline = pattern.endswith("%n")
        self._start = time.time()

    def _value(self, record: logging.LogRecord, conv: str, option: str | None) -> str:
        if conv == "d":
            fmt = _NAMED_DATES.get(option or "ISO8601", option or "")
            return _java_date(fmt, record.created)
        if conv == "p":
            return _LOG4J_LEVEL_NAMES.get(record.levelno, record.levelname)
        if conv in "cC":
            name = record.name if conv == "c" else f"{record.module}"
            if option and option.isdigit():
                name = ".".join(name.split(".")[-int(option):])
            return name
        if conv == "m":
            return record.getMessage()
        if conv == "n":
            return "\n"
        if conv == "t":
            return record.threadName or ""
        if conv == "r":
            return str(int((record.created - self._start) * 1000))
        if conv == "%":
            return "%"
        if conv == "L":
            return str(record.lineno)
        if conv == "F":
            return record.filename
        if conv == "M":
            return record.funcName or ""
        return ""

    def format(self, record: logging.LogRecord) -> str:
        out = []
        for kind, part in self._parts:
            if kind == "text":
                out.append(part)
                continue
            width, limit, conv, option = part
            value = self._value(record, conv, option)
            if limit:
                value = value[-int(limit):]
            if width:
                n = int(width)
                value = value.ljust(-n) if n < 0 else value.rjust(n)
            out.append(value)
        text = "".join(out)
        if self._ends_with_newline:
            text = text[:-1]          # the handler adds the line's end
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class Log4jFormatter(PatternLayout):
    """Kafka's `[%d] %p %m (%c)` with log4j's WARN/FATAL names and ISO8601 dates (2026-11-22 03:00:00,123)."""

    def __init__(self) -> None:
        super().__init__(KAFKA_PATTERN)


# ---------------------------------------------------------------------------------- appenders

def _period_unit(date_pattern: str) -> str:
    """The smallest unit a DatePattern names, which is how often DailyRollingFileAppender rolls."""
    letters = set(re.sub(r"'[^']*'", "", date_pattern))
    for unit, found in (("minute", "m"), ("hour", "Hhk"), ("halfday", "a"), ("day", "dDE"),
                        ("week", "wW"), ("month", "M")):
        if letters & set(found):
            return unit
    return "day"


def _next_boundary(unit: str, when: float) -> float:
    moment = datetime.fromtimestamp(when)
    if unit == "minute":
        start = moment.replace(second=0, microsecond=0)
        step = 60
    elif unit == "hour":
        start = moment.replace(minute=0, second=0, microsecond=0)
        step = 3600
    elif unit == "halfday":
        start = moment.replace(hour=0 if moment.hour < 12 else 12, minute=0, second=0, microsecond=0)
        step = 43200
    elif unit == "week":
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        step = 86400 * (7 - start.weekday())
    elif unit == "month":
        first = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        following = first.replace(year=first.year + 1, month=1) if first.month == 12 else \
            first.replace(month=first.month + 1)
        return following.timestamp()
    else:
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        step = 86400
    # Stepping in local wall-clock time, as log4j's RollingCalendar does.
    return datetime.fromtimestamp(start.timestamp() + step).replace(microsecond=0).timestamp()


class DailyRollingFileHandler(logging.FileHandler):
    """log4j's DailyRollingFileAppender: at the first line of a new period (the DatePattern's
    smallest unit: Kafka's `'.'yyyy-MM-dd-HH` rolls hourly) the file is renamed with the
    ended period appended (server.log.2026-11-24-13) and a new one is begun. The period of a
    file found at start-up is that of its last change, as log4j takes it."""

    def __init__(self, path: Path, date_pattern: str = "'.'yyyy-MM-dd", clock: Callable[[], float] = time.time,
                 append: bool = True) -> None:
        super().__init__(path, mode="a" if append else "w", encoding="utf-8")
        self.date_pattern = date_pattern
        self.clock = clock
        self._unit = _period_unit(date_pattern)
        started = path.stat().st_mtime if append and path.exists() and path.stat().st_size else clock()
        self._suffix = _java_date(date_pattern, started)
        self._next = _next_boundary(self._unit, started)

    def emit(self, record: logging.LogRecord) -> None:
        now = self.clock()
        if now >= self._next:
            self._roll(now)
        super().emit(record)

    def _roll(self, now: float) -> None:
        suffix = _java_date(self.date_pattern, now)
        self._next = _next_boundary(self._unit, now)
        if suffix == self._suffix:
            return
        if self.stream is not None:
            self.stream.close()
            self.stream = None  # type: ignore[assignment]
        target = Path(self.baseFilename + self._suffix)
        try:
            if target.exists():
                target.unlink()
            os.replace(self.baseFilename, target)
        except OSError as error:
            sys.stderr.write(f"log4j:ERROR Failed to rename [{self.baseFilename}] to [{target}]. {error}\n")
        self._suffix = suffix
        self.stream = self._open()


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(KB|MB|GB)?\s*", text, re.IGNORECASE)
    if not m:
        return 10 * 1024 * 1024
    return int(m.group(1)) * {"": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}[(m.group(2) or "").upper()]


# ---------------------------------------------------------------------------------- the configuration

@dataclass
class Log4jConfig:
    """log4j.properties as read: the root's level and appenders, each logger's, additivity, appenders."""

    root_level: int = logging.INFO
    root_appenders: list[str] = field(default_factory=list)
    loggers: dict[str, tuple[int | None, list[str]]] = field(default_factory=dict)
    additivity: dict[str, bool] = field(default_factory=dict)
    appenders: dict[str, dict[str, str]] = field(default_factory=dict)
    source: str = "built-in defaults"


def _substitute(value: str, variables: dict[str, str]) -> str:
    """${name}: a system property (kafka.logs.dir), else an environment variable, else empty, as log4j."""
    return re.sub(r"\$\{([^}]*)\}", lambda m: variables.get(m.group(1), os.environ.get(m.group(1), "")), value)


def _level_and_appenders(value: str) -> tuple[int | None, list[str]]:
    parts = [p.strip() for p in value.split(",")]
    level_name = parts[0].upper()
    level = LEVELS.get(level_name) if level_name and level_name != "INHERITED" and level_name != "NULL" else None
    if level_name and level_name not in LEVELS and level_name not in ("INHERITED", "NULL"):
        sys.stderr.write(f'log4j:WARN No such level "{parts[0]}"; DEBUG used instead.\n')
        level = logging.DEBUG
    return level, [p for p in parts[1:] if p]


def parse_log4j_properties(text: str, variables: dict[str, str], source: str = "") -> Log4jConfig:
    props = loads(text)
    config = Log4jConfig(source=source or "built-in defaults")
    for key, raw in props.items():
        value = _substitute(raw, variables).strip()
        if key in ("log4j.rootLogger", "log4j.rootCategory"):
            level, appenders = _level_and_appenders(value)
            config.root_level = level if level is not None else logging.DEBUG
            config.root_appenders = appenders
        elif key.startswith(("log4j.logger.", "log4j.category.")):
            config.loggers[key.split(".", 2)[2]] = _level_and_appenders(value)
        elif key.startswith("log4j.additivity."):
            config.additivity[key[len("log4j.additivity."):]] = value.lower() != "false"
        elif key.startswith("log4j.appender."):
            rest = key[len("log4j.appender."):]
            name, _, option = rest.partition(".")
            config.appenders.setdefault(name, {})["class" if not option else option] = value
    return config


def config_path() -> Path | None:
    """-Dlog4j.configuration=file:PATH in KAFKA_LOG4J_OPTS (as kafka-run-class.sh passes it),
    else config/log4j.properties beside bin/ when it exists."""
    opts = os.environ.get("KAFKA_LOG4J_OPTS", "")
    m = re.search(r"-Dlog4j\.configuration=(\S+)", opts)
    if m:
        location = m.group(1).strip("'\"")
        return Path(location[len("file:"):] if location.startswith("file:") else location)
    stock = Path(__file__).resolve().parents[2] / "config" / "log4j.properties"
    return stock if stock.exists() else None


def load_config(log_dir: Path, path: Path | None = None) -> Log4jConfig:
    variables = {"kafka.logs.dir": str(log_dir)}
    path = path if path is not None else config_path()
    if path is not None:
        try:
            return parse_log4j_properties(path.read_text(encoding="utf-8"), variables, str(path))
        except OSError:
            sys.stderr.write(f"log4j:ERROR Could not read configuration file from URL [file:{path}].\n"
                             "log4j:ERROR Ignoring configuration file [file:{path}].\n".format(path=path))
    return parse_log4j_properties(DEFAULT_PROPERTIES, variables)


def default_log_dir() -> Path:
    """$LOG_DIR, else <repo>/logs, as kafka-run-class.sh picks it."""
    env = os.environ.get("LOG_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "logs"


# ---------------------------------------------------------------------------------- installing it

@dataclass
class LoggingSetup:
    """Handlers installed by `setup_logging`, so a test or a restart can take them away."""

    log_dir: Path
    installed: list[tuple[logging.Logger, logging.Handler]] = field(default_factory=list)
    saved: list[tuple[logging.Logger, int, bool]] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)      # appender name -> its file

    def close(self) -> None:
        for logger, handler in self.installed:
            logger.removeHandler(handler)
            handler.close()
        for logger, level, propagate in reversed(self.saved):
            logger.setLevel(level)
            logger.propagate = propagate
        self.installed.clear()
        self.saved.clear()


def kafka_logger_name(name: str) -> str | None:
    """Kafka's logger for a kafkalike logger named after its module (the nearest entry in the table)."""
    probe = name
    while probe:
        if probe in KAFKA_LOGGER_NAMES:
            return KAFKA_LOGGER_NAMES[probe]
        probe = probe.rpartition(".")[0]
    return None


class KafkaNameHandler(logging.Handler):
    """Hands a record to Kafka's logger of the same lines, under that name."""

    def emit(self, record: logging.LogRecord) -> None:
        target = kafka_logger_name(record.name)
        if target is None:
            return
        logger = logging.getLogger(target)
        if not logger.isEnabledFor(record.levelno):
            return
        renamed = logging.makeLogRecord(record.__dict__)
        renamed.name = target
        logger.handle(renamed)


def _make_handler(name: str, spec: dict[str, str], stdout: bool, log_dir: Path,
                  clock: Callable[[], float]) -> tuple[logging.Handler | None, Path | None]:
    cls = spec.get("class", "").rpartition(".")[2]
    path = None
    if cls == "ConsoleAppender":
        if not stdout:
            return None, None
        target = spec.get("Target", spec.get("target", "System.out"))
        handler: logging.Handler = logging.StreamHandler(sys.stderr if target == "System.err" else sys.stdout)
    elif cls in ("FileAppender", "DailyRollingFileAppender", "RollingFileAppender"):
        file = spec.get("File") or spec.get("file")
        if not file:
            sys.stderr.write(f'log4j:ERROR File option not set for appender [{name}].\n')
            return None, None
        path = Path(file)
        if not path.is_absolute():
            path = Path.cwd() / path
        path.parent.mkdir(parents=True, exist_ok=True)
        append = spec.get("Append", spec.get("append", "true")).lower() != "false"
        if cls == "DailyRollingFileAppender":
            handler = DailyRollingFileHandler(path, spec.get("DatePattern", "'.'yyyy-MM-dd"), clock, append)
        elif cls == "RollingFileAppender":
            handler = logging.handlers.RotatingFileHandler(
                path, mode="a" if append else "w", maxBytes=_size(spec.get("MaxFileSize", "10MB")),
                backupCount=int(spec.get("MaxBackupIndex", "1") or 1), encoding="utf-8")
        else:
            handler = logging.FileHandler(path, mode="a" if append else "w", encoding="utf-8")
    else:
        sys.stderr.write(f"log4j:ERROR Could not instantiate class [{spec.get('class', '')}].\n")
        return None, None
    pattern = spec.get("layout.ConversionPattern", KAFKA_PATTERN)
    handler.setFormatter(PatternLayout(pattern))
    threshold = spec.get("Threshold") or spec.get("threshold")
    if threshold and threshold.upper() in LEVELS:
        handler.setLevel(LEVELS[threshold.upper()])
    return handler, path


def setup_logging(log_dir: str | Path | None = None, *, stdout: bool = True, level: int | None = None,
                  twisted: bool = True, config: str | Path | None = None,
                  clock: Callable[[], float] = time.time) -> LoggingSetup:
    """Install log4j.properties (`config`, else KAFKA_LOG4J_OPTS's, else config/log4j.properties,
    else Kafka's defaults) with `${kafka.logs.dir}` = log_dir (default $LOG_DIR).

    `stdout=False` leaves the console appenders out; `level` overrides the root's level.
    `twisted=True` makes Twisted's global log publisher feed Python logging; leave it
    off in tests, because Twisted's global log can be started only once per process.
    """
    directory = Path(log_dir) if log_dir is not None else default_log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    parsed = load_config(directory, Path(config) if config is not None else None)
    setup = LoggingSetup(directory)

    def configure(logger: logging.Logger, logger_level: int | None, propagate: bool) -> None:
        setup.saved.append((logger, logger.level, logger.propagate))
        if logger_level is not None:
            logger.setLevel(logger_level)
        logger.propagate = propagate

    def attach(logger: logging.Logger, handler: logging.Handler) -> None:
        logger.addHandler(handler)
        setup.installed.append((logger, handler))

    handlers: dict[str, logging.Handler | None] = {}

    def handler_for(name: str) -> logging.Handler | None:
        if name not in handlers:
            spec = parsed.appenders.get(name)
            if spec is None:
                sys.stderr.write(f'log4j:ERROR Could not find value for key log4j.appender.{name}\n')
                handlers[name] = None
            else:
                handlers[name], path = _make_handler(name, spec, stdout, directory, clock)
                if path is not None:
                    setup.files[name] = path
        return handlers[name]

    root = logging.getLogger()
    configure(root, level if level is not None else parsed.root_level, root.propagate)
    for name in parsed.root_appenders:
        handler = handler_for(name)
        if handler is not None:
            attach(root, handler)
    for name, (logger_level, appenders) in parsed.loggers.items():
        logger = logging.getLogger(name)
        configure(logger, logger_level, parsed.additivity.get(name, True))
        for appender in appenders:
            handler = handler_for(appender)
            if handler is not None:
                attach(logger, handler)
    for name, additive in parsed.additivity.items():
        if name not in parsed.loggers:
            configure(logging.getLogger(name), None, additive)
    # kafkalike's module-named loggers speak under Kafka's names (one table, KAFKA_LOGGER_NAMES).
    renamer = KafkaNameHandler()
    for source, target in KAFKA_LOGGER_NAMES.items():
        logger = logging.getLogger(source)
        configure(logger, logging.getLogger(target).getEffectiveLevel(), False)
        attach(logger, renamer)
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


# ---------------------------------------------------------------------------------- levels at run time

# Kafka's Log4jController and LogLevelConfig, behind DescribeConfigs/IncrementalAlterConfigs
# on BROKER_LOGGER resources (kafka-configs.sh --entity-type broker-loggers): an operator
# turns a logger up on a live broker, e.g. kafka.request.logger to DEBUG for the request log.
ROOT_LOGGER = "root"
VALID_LOG_LEVELS = ("FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")
_LEVEL_NAMES = {value: name for name, value in LEVELS.items()}


def level_name(level: int) -> str:
    """log4j's name for a level (WARN, FATAL, TRACE)."""
    return _LEVEL_NAMES.get(level) or logging.getLevelName(level)


def _existing(name: str) -> logging.Logger | None:
    if name == ROOT_LOGGER:
        return logging.getLogger()
    found = logging.Logger.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None


def logger_exists(name: str) -> bool:
    """log4j's LogManager.exists: a logger the broker has made (or the root)."""
    return _existing(name) is not None


def current_loggers() -> dict[str, str]:
    """Log4jController.loggers: every logger the broker has made with its level, a logger
    without one given its nearest ancestor's."""
    levels = {ROOT_LOGGER: level_name(logging.getLogger().level)}
    for name, logger in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            levels[name] = level_name(logger.getEffectiveLevel())
    return levels


def set_logger_level(name: str, level: str | None) -> bool:
    """Log4jController.logLevel (or, with None, unsetLogLevel: the logger follows its
    ancestors again). Loggers that speak under a Kafka name (KAFKA_LOGGER_NAMES) follow
    that name's new level. False for a logger that does not exist."""
    logger = _existing(name)
    if logger is None or not name.strip():
        return False
    if level is None:
        logger.setLevel(logging.NOTSET)
    else:
        logger.setLevel(LEVELS.get(level.strip().upper(), logging.DEBUG))
    for source, target in KAFKA_LOGGER_NAMES.items():
        if target == name or target.startswith(name + ".") or name == ROOT_LOGGER:
            logging.getLogger(source).setLevel(logging.getLogger(target).getEffectiveLevel())
    return True
