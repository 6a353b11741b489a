"""Errors with a Kafka meaning; plain ZooKeeper errors stay kazoo's own exceptions.

Callers catch kazoo.exceptions (NoNodeError, NodeExistsError, BadVersionError, ...) for
ZooKeeper outcomes and these for what a Kafka broker or controller must act on.
"""
from __future__ import annotations

from kazoo.exceptions import NodeExistsError


class ControllerMovedError(Exception):
    """Another broker is controller now: our election lost, or a fenced write was refused."""


class TopicExistsError(Exception):
    """CreateTopics for a topic whose /brokers/topics znode already exists."""


class UnknownTopicError(Exception):
    """An admin action on a topic that has no /brokers/topics znode."""


class TopicAlreadyMarkedForDeletionError(Exception):
    """DeleteTopics for a topic that already waits in /admin/delete_topics."""


class EphemeralOwnedByOtherSession(NodeExistsError):
    """An ephemeral we meant to create exists and belongs to another live session.

    For /brokers/ids/N this means another broker runs with our broker.id (or our own
    previous session has not expired yet).
    """


class ZooKeeperClientTimeoutError(Exception):
    """No connection to ZooKeeper within zookeeper.connection.timeout.ms."""
