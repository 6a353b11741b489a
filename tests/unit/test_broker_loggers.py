"""BROKER_LOGGER resources (kafka-configs.sh --entity-type broker-loggers): a live broker's
log levels described and changed with Kafka 2.8's rules and error messages."""
from __future__ import annotations

import logging

import pytest

from kafkalike.broker import broker_loggers, logs
from kafkalike.broker.admin_manager import AdminError
from kafkalike.protocol.errors import ErrorCode

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def levels():
    """Every logger's level put back after the test."""
    saved = {name: logger.level for name, logger in logging.Logger.manager.loggerDict.items()
             if isinstance(logger, logging.Logger)}
    root = logging.getLogger().level
    logging.getLogger("kafka.request.logger").setLevel(logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.INFO)
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)
    logging.getLogger().setLevel(root)


def refused(call, message: str) -> None:
    with pytest.raises(AdminError) as caught:
        call()
    assert caught.value.code == ErrorCode.INVALID_REQUEST and caught.value.message == message


def test_describe_lists_loggers_with_their_levels(levels):
    described = dict(broker_loggers.describe(0, "0", None))
    assert described["kafka.request.logger"] == "WARN" and "root" in described
    assert broker_loggers.describe(0, "0", {"kafka.request.logger"}) == [("kafka.request.logger", "WARN")]
    refused(lambda: broker_loggers.describe(0, "", None), "Broker id must not be empty")
    refused(lambda: broker_loggers.describe(0, "1", None), "Unexpected broker id, expected 0 but received 1")
    refused(lambda: broker_loggers.describe(0, "x", None), "Broker id must be an integer, but it is: x")


def test_set_and_delete_a_level(levels):
    request_logger = logging.getLogger("kafka.request.logger")
    broker_loggers.alter(0, "0", [("kafka.request.logger", SET, "DEBUG")], validate_only=True)
    assert not request_logger.isEnabledFor(logging.DEBUG)
    broker_loggers.alter(0, "0", [("kafka.request.logger", SET, "DEBUG")], validate_only=False)
    assert request_logger.isEnabledFor(logging.DEBUG)
    assert dict(broker_loggers.describe(0, "0", None))["kafka.request.logger"] == "DEBUG"
    broker_loggers.alter(0, "", [("kafka.request.logger", DELETE, None)], validate_only=False)
    assert dict(broker_loggers.describe(0, "0", None))["kafka.request.logger"] == "INFO"   # kafka's, now


def test_loggers_speaking_under_a_kafka_name_follow_it(levels):
    logging.getLogger("kafka.log.Log")
    broker_loggers.alter(0, "0", [("kafka.log.Log", SET, "TRACE")], validate_only=False)
    assert logging.getLogger("kafkalike.storage.log").isEnabledFor(logs.TRACE)
    broker_loggers.alter(0, "0", [("kafka.log.Log", DELETE, None)], validate_only=False)
    assert not logging.getLogger("kafkalike.storage.log").isEnabledFor(logging.DEBUG)


def test_refusals_name_the_problem_and_change_nothing(levels):
    resource = "ConfigResource(type=BROKER_LOGGER, name='0')"
    refused(lambda: broker_loggers.alter(0, "0", [("kafka.request.logger", SET, "DEBUG"), ("no.such", SET, "DEBUG")],
                                         False),
            f"Invalid config value for resource {resource}: Logger no.such does not exist!")
    assert not logging.getLogger("kafka.request.logger").isEnabledFor(logging.DEBUG)
    refused(lambda: broker_loggers.alter(0, "0", [("kafka.request.logger", SET, "debug")], False),
            f"Invalid config value for resource {resource}: Cannot set the log level of kafka.request.logger to "
            "debug as it is not a supported log level. Valid log levels are FATAL, ERROR, WARN, INFO, DEBUG, TRACE")
    refused(lambda: broker_loggers.alter(0, "0", [("kafka", APPEND, "DEBUG")], False),
            "APPEND operation is not allowed for the BROKER_LOGGER resource")
    refused(lambda: broker_loggers.alter(0, "0", [("root", DELETE, None)], False),
            "Removing the log level of the root logger is not allowed")
    refused(lambda: broker_loggers.alter(0, "2", [("kafka", SET, "DEBUG")], False),
            "Unexpected broker id, expected 0, but received 2")
