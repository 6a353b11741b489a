"""BROKER_LOGGER resources: a live broker's log levels, as Kafka 2.8's ConfigHelper and
ZkAdminManager serve them to `kafka-configs.sh --entity-type broker-loggers`.

Operators raise a logger's level on one running broker without a restart, for example
`kafka.request.logger` to DEBUG to get the request log (request_log.py) for a while, and
set it back. As in Kafka the change lives only in that process: it is not written to
ZooKeeper and a restart returns to log4j.properties.
"""
from __future__ import annotations

import logging
from typing import Iterable

from kafkalike.broker import logs
from kafkalike.broker.admin_errors import AdminError
from kafkalike.common.resources import AlterConfigOpType
from kafkalike.protocol.errors import ErrorCode

log = logging.getLogger("kafka.server.ZkAdminManager")

Op = AlterConfigOpType


def _broker_id(name: str) -> int:
    try:
        return int(name)
    except ValueError:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None


def describe(broker_id: int, resource_name: str, wanted: set[str] | None) -> list[tuple[str, str]]:
    """(logger, level) of every logger, or of those asked for (ConfigHelper: the resource
    must name this broker)."""
    if not resource_name:
        raise AdminError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if _broker_id(resource_name) != broker_id:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {broker_id} but received {resource_name}")
    return [(name, level) for name, level in logs.current_loggers().items() if wanted is None or name in wanted]


def alter(broker_id: int, resource_name: str, ops: Iterable[tuple[str, int, str | None]], validate_only: bool) -> None:
    """ZkAdminManager's BROKER_LOGGER branch: every operation is checked before any is
    applied; SET takes one of log4j's level names, DELETE gives the logger back to its
    ancestors (never the root's), APPEND and SUBTRACT are refused."""
    ops = list(ops)
    if resource_name and _broker_id(resource_name) != broker_id:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {broker_id}, but received {resource_name}")
    resource = f"ConfigResource(type=BROKER_LOGGER, name='{resource_name}')"
    for name, op, value in ops:
        if op in (Op.APPEND, Op.SUBTRACT):
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             f"{Op(op).name} operation is not allowed for the BROKER_LOGGER resource")
        if op not in (Op.SET, Op.DELETE):
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
        if not logs.logger_exists(name):
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             f"Invalid config value for resource {resource}: Logger {name} does not exist!")
        if op == Op.SET and value not in logs.VALID_LOG_LEVELS:
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             f"Invalid config value for resource {resource}: Cannot set the log level of {name} "
                             f"to {value} as it is not a supported log level. Valid log levels are "
                             f"{', '.join(logs.VALID_LOG_LEVELS)}")
        if op == Op.DELETE and name == logs.ROOT_LOGGER:
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             f"Removing the log level of the {logs.ROOT_LOGGER} logger is not allowed")
    if validate_only:
        return
    for name, op, value in ops:
        if op == Op.SET:
            log.info("Updating the log level of %s to %s", name, value)
            logs.set_logger_level(name, value)
        else:
            log.info("Unset the log level of %s", name)
            logs.set_logger_level(name, None)
