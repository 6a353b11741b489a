"""Kafka 2.8's AclAuthorizer: ACLs in ZooKeeper, cached on every broker.

At start-up the broker creates the ACL paths and reads every stored pattern into its
cache (loadCache), then follows /kafka-acl-changes and /kafka-acl-extended-changes: each
notification names a pattern whose znode it re-reads (ZkNodeChangeNotificationListener,
in sequence order, never two passes at once; notifications older than 15 minutes are
deleted). All of it is kazoo async on the reactor. CreateAcls/DeleteAcls served by this
broker write the znode with its version (another writer in between: re-read and retry),
update the cache at once and leave a notification for the others.

A decision (authorizeAction): super.users are allowed everything; otherwise the ACLs of
the literal name, the wildcard `*` and every prefixed pattern the name starts with are
gathered; none at all -> allow.everyone.if.no.acl.found; a matching DENY (principal or
User:*, host or *, operation or ALL) refuses; else a matching ALLOW is needed, where
READ/WRITE/DELETE/ALTER imply DESCRIBE and ALTER_CONFIGS implies DESCRIBE_CONFIGS.
Each decision is written to kafka.authorizer.logger (kafka-authorizer.log) as Kafka
words it: denials at INFO, grants at DEBUG.
"""
from __future__ import annotations

import logging
import time

from twisted.internet import defer

from kafkalike.broker.authorizer.service import Authorizer
from kafkalike.common.acls import (WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AccessControlEntry,
                                   AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AclResourceType,
                                   PatternType, ResourcePattern, camel_name)
from kafkalike.common.config_def import ConfigError, ConfigType, parse_value
from kafkalike.zkdata.acl_znodes import STORED_PATTERN_TYPES, AclZkStore, sequence_number
from kafkalike.zkdata.kafka_json import ZNodeDecodeError

audit = logging.getLogger("kafka.authorizer.logger")
log = logging.getLogger("kafka.security.authorizer.AclAuthorizer")

CLASS_NAMES = ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")
CHANGE_EXPIRATION_MS = 15 * 60 * 1000

_IMPLIED = {
    AclOperation.DESCRIBE: (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                            AclOperation.ALTER),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
}


class InvalidAclError(Exception):
    """Kafka's InvalidRequestException for a binding AclAuthorizer will not store."""


def from_config(config) -> Authorizer | None:
    """The configured AclAuthorizer, or None when authorizer.class.name is empty."""
    name = (config.get("authorizer.class.name") or "").strip()
    if not name:
        return None
    if name not in CLASS_NAMES:
        raise ConfigError(f"Invalid value {name} for configuration authorizer.class.name: kafkalike provides "
                          f"only {CLASS_NAMES[0]}")
    supers = config.originals.get("super.users") or ""
    everyone = parse_value("allow.everyone.if.no.acl.found", ConfigType.BOOLEAN,
                           config.originals.get("allow.everyone.if.no.acl.found", "false"))
    return AclAuthorizer(super_users={s.strip() for s in str(supers).split(";") if s.strip()},
                         allow_everyone_if_no_acl_found=everyone)


class AclAuthorizer(Authorizer):
    enabled = True

    def __init__(self, *, super_users: set[str], allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = super_users
        self.allow_everyone = allow_everyone_if_no_acl_found
        self.cache: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        # The prefixed patterns again, by resource type and prefix: a decision looks up each
        # prefix of the name instead of walking the cache (Kafka walks a sorted map's range).
        self._prefixed: dict[AclResourceType, dict[str, frozenset[AccessControlEntry]]] = {}
        self.store: AclZkStore | None = None
        self._last_executed = {t: -1 for t in STORED_PATTERN_TYPES}
        self._running: dict[PatternType, bool] = {t: False for t in STORED_PATTERN_TYPES}
        self._again: dict[PatternType, bool] = {t: False for t in STORED_PATTERN_TYPES}
        self._watches: list = []
        self._lock = defer.DeferredLock()
        self._closed = False

    # -- start-up and notifications ---------------------------------------------------

    async def start(self, zk) -> None:
        self.store = AclZkStore(zk)
        await self.store.create_paths()
        for pattern, acls in (await self.store.get_all()).items():
            self._set_cache(pattern, acls.entries)
        for pattern_type in STORED_PATTERN_TYPES:
            self._watches.append(await self.store.watch_changes(
                pattern_type, lambda *_, t=pattern_type: defer.ensureDeferred(self.process_changes(t))))
            await self.process_changes(pattern_type)

    def close(self) -> None:
        self._closed = True
        for watch in self._watches:
            watch.cancel()

    async def process_changes(self, pattern_type: PatternType) -> None:
        if self._running[pattern_type]:
            self._again[pattern_type] = True
            return
        self._running[pattern_type] = True
        try:
            while not self._closed:
                self._again[pattern_type] = False
                try:
                    await self._process_once(pattern_type)
                except Exception as exc:     # ZooKeeper away for a moment: the next watch retries
                    log.error("Error processing ACL change notifications: %s", exc)
                if not self._again[pattern_type]:
                    break
        finally:
            self._running[pattern_type] = False

    async def _process_once(self, pattern_type: PatternType) -> None:
        now_ms = int(time.time() * 1000)
        for name in await self.store.change_names(pattern_type):
            sequence = sequence_number(name)
            if sequence <= self._last_executed[pattern_type] or self._closed:
                continue
            try:
                found = await self.store.read_change(pattern_type, name)
                if found is not None:
                    await self._refresh(found[0])
            except ZNodeDecodeError as exc:       # logged and passed over, as Kafka's listener does
                log.error("Error processing notification %s: %s", name, exc)
                found = None
            if found is not None:
                created_ms = found[1]
                if now_ms - created_ms > CHANGE_EXPIRATION_MS:
                    await self.store.delete_change(pattern_type, name)
            self._last_executed[pattern_type] = sequence

    async def _refresh(self, pattern: ResourcePattern) -> None:
        acls = await self.store.get_acls(pattern)
        self._set_cache(pattern, acls.entries)
        log.info("Processing Acl change notification for %s, versionedAcls : %s, zkVersion : %d",
                 pattern, sorted(map(str, acls.entries)), acls.zk_version)

    def _set_cache(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry]) -> None:
        if entries:
            self.cache[pattern] = entries
        else:
            self.cache.pop(pattern, None)
        if pattern.pattern_type == PatternType.PREFIXED:
            by_prefix = self._prefixed.setdefault(pattern.resource_type, {})
            if entries:
                by_prefix[pattern.name] = entries
            else:
                by_prefix.pop(pattern.name, None)

    # -- decisions --------------------------------------------------------------------

    def _matching(self, resource_type: AclResourceType, name: str) -> list[AccessControlEntry]:
        found: list[AccessControlEntry] = []
        for key in (ResourcePattern(resource_type, name, PatternType.LITERAL),
                    ResourcePattern(resource_type, WILDCARD_RESOURCE, PatternType.LITERAL)):
            found.extend(self.cache.get(key, ()))
        by_prefix = self._prefixed.get(resource_type)
        if by_prefix:
            for end in range(1, len(name) + 1):
                entries = by_prefix.get(name[:end])
                if entries:
                    found.extend(entries)
        return found

    @staticmethod
    def _exists(acls, operation: AclOperation, principal: str, host: str, permission: AclPermissionType) -> bool:
        return any(e.permission_type == permission
                   and e.principal in (principal, WILDCARD_PRINCIPAL)
                   and e.operation in (operation, AclOperation.ALL)
                   and e.host in (host, WILDCARD_HOST)
                   for e in acls)

    def allowed(self, principal: str, host: str, operation: AclOperation, resource_type: AclResourceType,
                name: str, *, api: int | str = "", log_denied: bool = True) -> bool:
        if principal in self.super_users:
            result = True
        else:
            acls = self._matching(resource_type, name)
            if not acls:
                result = self.allow_everyone
            elif self._exists(acls, operation, principal, host, AclPermissionType.DENY):
                result = False
            else:
                result = any(self._exists(acls, op, principal, host, AclPermissionType.ALLOW)
                             for op in _IMPLIED.get(operation, (operation,)))
        level = logging.DEBUG if result or not log_denied else logging.INFO
        if audit.isEnabledFor(level):
            audit.log(level, "Principal = %s is %s Operation = %s from host = %s on resource = %s:LITERAL:%s "
                      "for request = %s with resourceRefCount = 1", principal, "Allowed" if result else "Denied",
                      camel_name(operation), host, camel_name(resource_type), name, _api_name(api))
        return result

    def allowed_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                 resource_type: AclResourceType, *, api: int | str = "") -> bool:
        """KIP-679's authorizeByResourceType (AclAuthorizer's): may the principal
        `operation` some resource of the type? No if a DENY on the literal `*` applies;
        yes if allow.everyone.if.no.acl.found; else yes when an ALLOW (literal or
        prefixed) applies to a name that no DENY of the same literal or of a prefix covers.
        A super user is allowed without a word; any other decision is logged as Kafka
        logs it, on the resource `<Type>:UNKNOWN:NONE` with resourceRefCount 0."""
        if principal in self.super_users:
            return True
        result = self._by_resource_type(principal, host, operation, resource_type)
        level = logging.DEBUG if result else logging.INFO
        if audit.isEnabledFor(level):
            audit.log(level, "Principal = %s is %s Operation = %s from host = %s on resource = %s:UNKNOWN:NONE "
                      "for request = %s with resourceRefCount = 0", principal, "Allowed" if result else "Denied",
                      camel_name(operation), host, camel_name(resource_type), _api_name(api))
        return result

    def _by_resource_type(self, principal: str, host: str, operation: AclOperation,
                          resource_type: AclResourceType) -> bool:
        def names(permission: AclPermissionType, pattern_type: PatternType) -> set[str]:
            return {p.name for p, entries in self.cache.items()
                    if p.resource_type == resource_type and p.pattern_type == pattern_type
                    and self._exists(entries, operation, principal, host, permission)}
        deny_literals = names(AclPermissionType.DENY, PatternType.LITERAL)
        if WILDCARD_RESOURCE in deny_literals:
            return False
        if self.allow_everyone:
            return True
        deny_prefixes = names(AclPermissionType.DENY, PatternType.PREFIXED)

        def dominated(name: str) -> bool:
            return any(name.startswith(prefix) for prefix in deny_prefixes)
        if any(n not in deny_literals and not dominated(n)
               for n in names(AclPermissionType.ALLOW, PatternType.LITERAL)):
            return True
        return any(not dominated(n) for n in names(AclPermissionType.ALLOW, PatternType.PREFIXED))

    # -- the ACL APIs -----------------------------------------------------------------

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        return [AclBinding(p, e) for p, entries in sorted(self.cache.items()) for e in sorted(entries, key=str)
                if binding_filter.matches(AclBinding(p, e))]

    async def create_acls(self, bindings: list[AclBinding]) -> list[Exception | None]:
        """Store each binding; per binding None or the error Kafka answers."""
        results: list[Exception | None] = [None] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            try:
                validate(binding)
            except InvalidAclError as exc:
                results[i] = exc
                continue
            by_pattern.setdefault(binding.pattern, []).append(i)
        await self._lock.acquire()
        try:
            for pattern, indexes in by_pattern.items():
                try:
                    await self._update(pattern, lambda cur, ix=indexes: cur | {bindings[i].entry for i in ix})
                except Exception as exc:
                    for i in indexes:
                        results[i] = exc
        finally:
            self._lock.release()
        return results

    async def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding] | Exception]:
        """For each filter the bindings it removed (Kafka's AclDeleteResult)."""
        await self._lock.acquire()
        try:
            matched: list[list[AclBinding]] = [self.acls(f) for f in filters]
            patterns = {b.pattern for found in matched for b in found}
            for pattern in sorted(patterns):
                await self._update(pattern, lambda cur, p=pattern: frozenset(
                    e for e in cur if not any(f.matches(AclBinding(p, e)) for f in filters)))
            return matched
        finally:
            self._lock.release()

    async def _update(self, pattern: ResourcePattern, change) -> None:
        for _ in range(10):
            current = await self.store.get_acls(pattern)
            wanted = frozenset(change(current.entries))
            if wanted == current.entries:
                self._set_cache(pattern, wanted)
                return
            if await self.store.conditional_set(pattern, wanted, current.zk_version):
                self._set_cache(pattern, wanted)
                await self.store.notify_change(pattern)
                return
        raise RuntimeError(f"Failed to update ACLs for {pattern} after retries")


def _api_name(api: int | str) -> str:
    from kafkalike.protocol.api import APIS
    spec = APIS.get(api) if isinstance(api, int) else None
    return spec.name if spec is not None else str(api)


def validate(binding: AclBinding) -> None:
    """AclAuthorizer's checks before a binding is stored."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid ACL: {pattern}")
    if pattern.resource_type == AclResourceType.CLUSTER and pattern.name != "kafka-cluster":
        raise InvalidAclError("The only valid name for the CLUSTER resource is kafka-cluster")
    if not pattern.name:
        raise InvalidAclError("Invalid empty resource name")
    if ":" not in entry.principal:
        raise InvalidAclError(f"Could not parse principal from `{entry.principal}` (no colon is present "
                              "separating the principal type from the principal name)")
    if pattern.pattern_type == PatternType.PREFIXED and pattern.name == WILDCARD_RESOURCE:
        raise InvalidAclError(f"Invalid ACL: {pattern}")
