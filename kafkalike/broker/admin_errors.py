"""How the admin manager refuses a change: an error code and Kafka's sentence (Kafka's
ApiError), which the handlers put in the resource's or the topic's result.

A module of its own so the admin manager's parts (admin_configs.py, broker_loggers.py)
raise it without importing the manager that uses them.
"""
from __future__ import annotations

from kafkalike.protocol.errors import ErrorCode


class AdminError(Exception):
    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message


def invalid_config_value(resource_type: str, name: str, error: Exception) -> AdminError:
    """ZkAdminManager's answer to a ConfigException: INVALID_REQUEST, resource and cause."""
    return AdminError(ErrorCode.INVALID_REQUEST,
                      f"Invalid config value for resource ConfigResource(type={resource_type}, name='{name}'): {error}")
