"""The ZooKeeper session behind the tools' deprecated --zookeeper paths.

kafka-topics, kafka-configs and kafka-reassign-partitions each read and write Kafka's
znodes directly with --zookeeper, as Kafka 2.8's TopicCommand, ConfigCommand and
ReassignPartitionsCommand do through KafkaZkClient. They share the session: its start
with the errors those tools print, kazoo's chatter kept off stderr, and the znode
reads and KafkaZkClient.createRecursive they all use.
"""
from __future__ import annotations

import logging
from typing import TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kafkalike.cli.joptions import ILLEGAL_ARGUMENT, JavaError
from kafkalike.zkdata.security import ZkSecurity, ZkSecurityError

ZK_TIMEOUT_SECONDS = 30.0  # the tools' ZooKeeper session and connection timeouts


def _quiet_logger() -> logging.Logger:
    """kazoo's connection chatter would land on stderr; Kafka's tools log only WARN and up of their own."""
    logger = logging.getLogger(f"{__name__}.kazoo")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    return logger


class ZooKeeperTool:
    """A started session on `connect`, or the JavaError the Java tool would have died with."""

    def __init__(self, connect: str, out: TextIO, timeout: float = ZK_TIMEOUT_SECONDS,
                 security: ZkSecurity | None = None, session_timeout: float | None = None) -> None:
        self.out = out
        try:
            self.security = security or ZkSecurity.for_tools()
        except ZkSecurityError as error:
            java_class, _, message = str(error).partition(": ")
            raise JavaError(java_class, message) from None
        try:
            self.zk = KazooClient(hosts=connect, timeout=session_timeout or timeout, logger=_quiet_logger(),
                                  default_acl=self.security.acls("/"), **self.security.kazoo_options())
        except ValueError as error:
            raise JavaError(ILLEGAL_ARGUMENT, str(error)) from None
        try:
            self.zk.start(timeout=timeout)
        except KazooTimeoutError:
            self.close()
            raise JavaError("kafka.zookeeper.ZooKeeperClientTimeoutException",
                            "Timed out waiting for connection while in state: CONNECTING") from None

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()

    def _get(self, path: str) -> bytes | None:
        try:
            return self.zk.get(path)[0]
        except NoNodeError:
            return None

    def _children(self, path: str) -> list[str]:
        try:
            return self.zk.get_children(path)
        except NoNodeError:
            return []

    def _create_recursive(self, path: str, data: bytes | None = None, sequence: bool = False) -> str:
        """Create path, with null parents where missing (Kafka's createRecursive)."""
        acl = self.security.acls(path)
        try:
            return self.zk.create(path, data, acl=acl, sequence=sequence)
        except NoNodeError:
            try:
                self._create_recursive(path.rsplit("/", 1)[0])
            except NodeExistsError:
                pass
            return self.zk.create(path, data, acl=acl, sequence=sequence)
