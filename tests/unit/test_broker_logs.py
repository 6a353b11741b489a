"""The broker's logging read from log4j.properties as Kafka 2.8's: the file split, the logger
names an operator greps for (kafkalike's module loggers under Kafka's names), the layout,
a file of one's own through KAFKA_LOG4J_OPTS, and DailyRollingFileAppender's rolling."""
from __future__ import annotations

import logging
import re
import time
from datetime import datetime
from pathlib import Path

import pytest

from kafkalike.broker import logs

REPO = Path(__file__).resolve().parents[2]
STAMP = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] "


def lines(path: Path) -> list[str]:
    for handler in logging.getLogger().handlers:
        handler.flush()
    return path.read_text().splitlines() if path.exists() else []


def bodies(path: Path) -> list[str]:
    out = []
    for line in lines(path):
        assert re.match(STAMP, line), line
        out.append(re.sub(STAMP, "", line, count=1))
    return out


@pytest.fixture
def stock(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_LOG4J_OPTS", raising=False)
    setup = logs.setup_logging(tmp_path, stdout=False, twisted=False)
    yield tmp_path, setup
    setup.close()


def test_the_stock_file_is_kafkas_split(stock):
    directory, setup = stock
    assert setup.files == {name: directory / file for name, file in (
        ("kafkaAppender", "server.log"), ("requestAppender", "kafka-request.log"),
        ("controllerAppender", "controller.log"), ("cleanerAppender", "log-cleaner.log"),
        ("stateChangeAppender", "state-change.log"), ("authorizerAppender", "kafka-authorizer.log"))}
    logging.getLogger("kafka.server.KafkaServer").info("[KafkaServer id=0] started")
    logging.getLogger("kafka.controller.KafkaController").info(
        "[Controller id=0] 0 successfully elected as the controller. Epoch incremented to 1 and epoch zk version is now 1")
    logging.getLogger("kafka.controller.KafkaController").log(logs.TRACE, "[Controller id=0] trace kept")
    logging.getLogger("state.change.logger").info("[Controller id=0 epoch=1] Changed partition t-0 state")
    logging.getLogger("kafka.log.LogCleaner").info("Starting the log cleaner")
    logging.getLogger("kafka.request.logger").info("Completed request: not at WARN")
    logging.getLogger("kafka.request.logger").warning("a slow request")
    logging.getLogger("kafka.cluster.Partition").info("[Partition t-0 broker=0] Shrinking ISR from 0,1,2 to 0,2")
    logging.getLogger("kafka.cluster.Partition").debug("not at INFO")
    assert bodies(directory / "server.log") == [
        "INFO [KafkaServer id=0] started (kafka.server.KafkaServer)",
        "INFO [Partition t-0 broker=0] Shrinking ISR from 0,1,2 to 0,2 (kafka.cluster.Partition)"]
    assert bodies(directory / "controller.log") == [
        "INFO [Controller id=0] 0 successfully elected as the controller. Epoch incremented to 1 and epoch zk "
        "version is now 1 (kafka.controller.KafkaController)",
        "TRACE [Controller id=0] trace kept (kafka.controller.KafkaController)"]
    assert bodies(directory / "state-change.log") == [
        "INFO [Controller id=0 epoch=1] Changed partition t-0 state (state.change.logger)"]
    assert bodies(directory / "log-cleaner.log") == ["INFO Starting the log cleaner (kafka.log.LogCleaner)"]
    assert bodies(directory / "kafka-request.log") == ["WARN a slow request (kafka.request.logger)"]


def test_module_loggers_write_under_kafkas_names(stock):
    directory, _setup = stock
    logging.getLogger("kafkalike.storage.recovery").info("[Log partition=t-0, dir=/d] Recovering unflushed segment 0")
    logging.getLogger("kafkalike.storage.manager").info("Logs loading complete in 3 ms.")
    logging.getLogger("kafkalike.storage.log").debug("below kafka.log's INFO: dropped")
    logging.getLogger("kazoo.client").warning("Connection dropped: socket connection broken")
    logging.getLogger("kazoo.protocol.connection").info("Connecting to 127.0.0.1(127.0.0.1):2181")
    assert bodies(directory / "server.log") == [
        "INFO [Log partition=t-0, dir=/d] Recovering unflushed segment 0 (kafka.log.Log)",
        "INFO Logs loading complete in 3 ms. (kafka.log.LogManager)",
        "WARN Connection dropped: socket connection broken (org.apache.zookeeper.ZooKeeper)",
        "INFO Connecting to 127.0.0.1(127.0.0.1):2181 (org.apache.zookeeper.ClientCnxn)"]
    assert logs.kafka_logger_name("kafkalike.storage.log.something") == "kafka.log.Log"
    assert logs.kafka_logger_name("kafkalike.client.producer") is None


def test_close_puts_everything_back(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_LOG4J_OPTS", raising=False)
    before = {n: (logging.getLogger(n).level, logging.getLogger(n).propagate)
              for n in ("", "kafka", "kafka.controller", "kafkalike.storage.log", "kazoo")}
    setup = logs.setup_logging(tmp_path, stdout=False, twisted=False)
    setup.close()
    assert {n: (logging.getLogger(n).level, logging.getLogger(n).propagate) for n in before} == before
    logging.getLogger("kafka.server.KafkaServer").error("after close")
    assert lines(tmp_path / "server.log") == []


def test_a_file_of_ones_own_through_kafka_log4j_opts(tmp_path, monkeypatch):
    own = tmp_path / "my-log4j.properties"
    own.write_text("log4j.rootLogger=WARN, main\n"
                   "log4j.appender.main=org.apache.log4j.FileAppender\n"
                   "log4j.appender.main.File=${kafka.logs.dir}/all.log\n"
                   "log4j.appender.main.layout=org.apache.log4j.PatternLayout\n"
                   "log4j.appender.main.layout.ConversionPattern=%d{yyyy-MM-dd} %-5p [%c{1}] %m%n\n"
                   "log4j.logger.kafka.request.logger=DEBUG\n")
    monkeypatch.setenv("KAFKA_LOG4J_OPTS", f"-Dlog4j.configuration=file:{own}")
    assert logs.config_path() == own
    setup = logs.setup_logging(tmp_path / "logs", stdout=False, twisted=False)
    try:
        logging.getLogger("kafka.server.KafkaServer").info("below the root's WARN")
        logging.getLogger("kafka.server.KafkaServer").warning("kept")
        logging.getLogger("kafka.request.logger").debug("Completed request")
    finally:
        setup.close()
    today = datetime.now().strftime("%Y-%m-%d")
    assert lines(tmp_path / "logs" / "all.log") == [f"{today} WARN  [KafkaServer] kept",
                                                    f"{today} DEBUG [logger] Completed request"]
    assert not (tmp_path / "logs" / "server.log").exists()


def test_an_unreadable_file_is_reported_and_kafkas_defaults_used(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KAFKA_LOG4J_OPTS", f"-Dlog4j.configuration=file:{tmp_path}/missing.properties")
    setup = logs.setup_logging(tmp_path, stdout=False, twisted=False)
    try:
        logging.getLogger("kafka.server.KafkaServer").info("still logged")
    finally:
        setup.close()
    assert f"log4j:ERROR Could not read configuration file from URL [file:{tmp_path}/missing.properties]" \
        in capsys.readouterr().err
    assert bodies(tmp_path / "server.log") == ["INFO still logged (kafka.server.KafkaServer)"]


def test_the_repository_file_is_the_built_in_default():
    variables = {"kafka.logs.dir": "/x"}
    from_file = logs.parse_log4j_properties((REPO / "config" / "log4j.properties").read_text(), variables)
    built_in = logs.parse_log4j_properties(logs.DEFAULT_PROPERTIES, variables)
    assert (from_file.root_level, from_file.root_appenders, from_file.loggers, from_file.additivity,
            from_file.appenders) == (built_in.root_level, built_in.root_appenders, built_in.loggers,
                                     built_in.additivity, built_in.appenders)
    assert from_file.appenders["kafkaAppender"]["DatePattern"] == "'.'yyyy-MM-dd-HH"
    assert from_file.appenders["kafkaAppender"]["File"] == "/x/server.log"


def test_daily_rolling_renames_the_ended_period_hourly_with_kafkas_date_pattern(tmp_path):
    start = datetime(2026, 11, 24, 13, 59, 58).timestamp()
    now = [start]
    handler = logs.DailyRollingFileHandler(tmp_path / "server.log", "'.'yyyy-MM-dd-HH", clock=lambda: now[0])
    handler.setFormatter(logs.Log4jFormatter())
    logger = logging.getLogger("test.rolling")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        logger.info("at 13:59")
        now[0] = start + 3                               # 14:00:01
        logger.info("at 14:00")
        now[0] = start + 5
        logger.info("still 14:00")
        now[0] = datetime(2026, 11, 24, 16, 30).timestamp()
        logger.info("at 16:30")                          # 15:xx had no line: no file for it
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "server.log", "server.log.2026-11-24-13", "server.log.2026-11-24-14"]
    assert [line.split("] ", 1)[1] for line in lines(tmp_path / "server.log.2026-11-24-13")] == [
        "INFO at 13:59 (test.rolling)"]
    assert len(lines(tmp_path / "server.log.2026-11-24-14")) == 2
    assert lines(tmp_path / "server.log")[0].endswith("INFO at 16:30 (test.rolling)")


def test_a_file_left_from_an_earlier_period_is_rolled_at_the_first_line(tmp_path):
    path = tmp_path / "server.log"
    path.write_text("old line\n")
    yesterday = datetime(2026, 11, 23, 10, 0).timestamp()
    import os
    os.utime(path, (yesterday, yesterday))
    handler = logs.DailyRollingFileHandler(path, "'.'yyyy-MM-dd", clock=time.time)
    handler.setFormatter(logs.Log4jFormatter())
    handler.emit(logging.makeLogRecord({"name": "kafka", "levelno": logging.INFO, "levelname": "INFO",
                                        "msg": "new line"}))
    handler.close()
    assert (tmp_path / "server.log.2026-11-23").read_text() == "old line\n"
    assert path.read_text().endswith("INFO new line (kafka)\n")


def test_pattern_layout_conversions():
    record = logging.makeLogRecord({"name": "kafka.server.ReplicaManager", "levelno": logging.WARNING,
                                    "levelname": "WARNING", "msg": "slow %s", "args": ("fetch",),
                                    "created": datetime(2026, 11, 24, 9, 5, 7, 89000).timestamp()})
    assert logs.PatternLayout("[%d] %p %m (%c)%n").format(record) == \
        "[2026-11-24 09:05:07,089] WARN slow fetch (kafka.server.ReplicaManager)"
    assert logs.PatternLayout("%d{ABSOLUTE} %-5p %c{2}: %m%n").format(record) == \
        "09:05:07,089 WARN  server.ReplicaManager: slow fetch"
    assert logs.PatternLayout("%d{yyyy-MM-dd'T'HH:mm} %.3p %%%n").format(record) == "2026-11-24T09:05 ARN %"
