"""The SCRAM credentials of every user, cached as Kafka's CredentialCache.

Loaded from /config/users at start-up, before any listener opens, and refreshed per user
from the config change notifications (`users/<name>`) that AlterUserScramCredentials and
kafka-configs write, so a login reads no ZooKeeper and a changed password counts as soon as
the notification is processed. A user the cache has never heard of is looked up in
ZooKeeper once more (a notification may still be on its way), asynchronously.
"""
from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalike.broker.admin_quotas import desanitize, fetch_entity, sanitize
from kafkalike.common.scram import HASHES
from kafkalike.zkdata.znodes import ConfigType

log = logging.getLogger("kafka.server.DynamicConfigManager")


class ScramCredentialCache:
    def __init__(self, zk) -> None:
        self.zk = zk
        self._users: dict[str, dict[str, str]] = {}

    @staticmethod
    def _scram_only(props: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in props.items() if k in HASHES}

    async def load_all(self) -> None:
        for name in await self.zk.get_entity_names(ConfigType.USER):
            props = self._scram_only(await fetch_entity(self.zk, ConfigType.USER, name))
            if props:
                self._users[desanitize(name)] = props

    async def reload(self, name: str) -> None:
        """A change notification for users/<name> (a user/client quota path is not a user's)."""
        if "/" in name:
            return
        user = desanitize(name)
        props = self._scram_only(await fetch_entity(self.zk, ConfigType.USER, name))
        if props:
            self._users[user] = props
        else:
            self._users.pop(user, None)

    def fetch(self, user: str) -> defer.Deferred:
        """Deferred[dict of the user's SCRAM entries]."""
        cached = self._users.get(user)
        if cached is not None:
            return defer.succeed(cached)

        async def miss() -> dict[str, str]:
            props = self._scram_only(await fetch_entity(self.zk, ConfigType.USER, sanitize(user)))
            if props:
                self._users.setdefault(user, props)
            return props
        return defer.ensureDeferred(miss())
