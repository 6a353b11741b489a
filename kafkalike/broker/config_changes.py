"""Config change notifications: Kafka 2.8's DynamicConfigManager and its
ZkNodeChangeNotificationListener, on the reactor.

Whoever changes an entity's config under /config (a broker serving AlterConfigs,
kafka-configs.sh --zookeeper, the reassignment tool's throttles) rewrites
/config/<type>/<name> and then creates a sequential /config/changes/config_change_N
holding the entity path ("topics/orders", "brokers/0", "brokers/<default>", ...).
Every broker watches /config/changes: it processes the notifications above the last
one it processed, in sequence order, re-reading each named entity from ZooKeeper (the
notification only says what to re-read), and deletes notifications older than 15
minutes (changeExpirationMs), as every Kafka broker does. At start-up every pending
notification is processed once; the initial state was read before.

Handlers by entity type: topics (the topic's overrides, for the logs this broker
hosts) and brokers (the dynamic broker configs: the default, or this broker's own;
another broker's are none of its business), users and clients (SCRAM credentials and
client quotas, client_quotas.py). IP quotas are not enforced, so theirs are only consumed.
"""
from __future__ import annotations

import logging
import time
from typing import Awaitable, Callable

from twisted.internet import defer

from kafkalike.zkdata.kafka_json import ZNodeDecodeError
from kafkalike.zkdata.znodes import ConfigEntityChangeNotificationZNode, ConfigType

log = logging.getLogger("kafka.server.DynamicConfigManager")

CHANGE_EXPIRATION_MS = 15 * 60 * 1000     # ZkNodeChangeNotificationListener's changeExpirationMs

Handler = Callable[[str], Awaitable[None]]


class ConfigChangeListener:
    """Processes /config/changes in order; `handlers` maps an entity type ("topics",
    "brokers", ...) to a coroutine function called with the entity's (sanitized) name."""

    def __init__(self, zk, handlers: dict[str, Handler], *, clock: Callable[[], float] = time.time) -> None:
        self.zk = zk
        self.handlers = handlers
        self.clock = clock
        self.last_executed = -1
        self._watch = None
        self._running = False
        self._again = False
        self._closed = False
        self.processed: defer.Deferred | None = None

    async def start(self) -> None:
        """Set the watch, then process every notification already there."""
        self._watch = await self.zk.watch_config_changes(lambda *_: self.process())
        await self._process_all()

    def close(self) -> None:
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()

    def process(self) -> defer.Deferred:
        """Run a pass now, or once more after the one running (never two at once)."""
        if self._running:
            self._again = True
            return self.processed
        self.processed = defer.ensureDeferred(self._process_all())
        return self.processed

    async def _process_all(self) -> None:
        self._running = True
        try:
            while True:
                self._again = False
                try:
                    await self._process_notifications()
                except Exception as exc:   # ZooKeeper gone for a moment: the next watch retries
                    if not self._closed:
                        log.error("Error processing config change notifications: %s", exc)
                if not self._again or self._closed:
                    break
        finally:
            self._running = False

    async def _process_notifications(self) -> None:
        names = await self.zk.get_config_change_notifications()
        now_ms = int(self.clock() * 1000)
        for name in names:
            if self._closed:
                return
            sequence = ConfigEntityChangeNotificationZNode.sequence_number(name)
            if sequence <= self.last_executed:
                continue
            try:
                found = await self.zk.get_config_change_notification(name)
            except ZNodeDecodeError as exc:
                log.error("Error processing notification %s: %s", name, exc)
                found = None
            if found is not None:
                entity_path, created_ms = found
                await self._process_one(entity_path)
                if now_ms - created_ms > CHANGE_EXPIRATION_MS:
                    await self.zk.delete_config_change_notification(name)
            self.last_executed = sequence

    async def _process_one(self, entity_path: str) -> None:
        entity_type, sep, name = entity_path.partition("/")
        if not sep or not name:
            log.error("Invalid entity path %s in a config change notification", entity_path)
            return
        if entity_type not in ConfigType.ALL:
            log.error("Unknown config type %s in a config change notification", entity_type)
            return
        handler = self.handlers.get(entity_type)
        if handler is None:
            return
        try:
            await handler(name)
        except Exception:
            log.exception("Error processing config change of %s", entity_path)
