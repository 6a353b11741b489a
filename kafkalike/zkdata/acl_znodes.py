"""The ACL znodes, as Kafka 2.8's ZkAclStore, ZkAclChangeStore and ResourceZNode keep them.

Literal patterns live at /kafka-acl/<ResourceType>/<name>, prefixed ones at
/kafka-acl-extended/prefixed/<ResourceType>/<name>, each holding
{"version":1,"acls":[{"principal","permissionType","operation","host"}]} with the
CamelCase names of SecurityUtils (Topic, Read, Allow). A change to a literal pattern is
announced by a sequential /kafka-acl-changes/acl_changes_N holding "TOPIC:name" (the
Java enum name, a colon and the resource name); a change to a prefixed one by
/kafka-acl-extended-changes/acl_changes_N holding {"version":1,"resourceType":"TOPIC",
"name":...,"patternType":"PREFIXED"}. Every broker re-reads the named pattern's znode.

The codecs are pure; `AclZkStore` does the broker's I/O through KafkaZkClient (kazoo
async, on the reactor); kafka-acls --authorizer-properties does the same with its own
synchronous session.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkalike.common.acls import (AccessControlEntry, AclOperation, AclPermissionType, AclResourceType,
                                   PatternType, ResourcePattern, camel_name, parse_enum)
from kafkalike.zkdata.kafka_json import ZNodeDecodeError

LITERAL_ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
LITERAL_CHANGE_PATH = "/kafka-acl-changes"
EXTENDED_CHANGE_PATH = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"

RESOURCE_TYPES = (AclResourceType.TOPIC, AclResourceType.GROUP, AclResourceType.CLUSTER,
                  AclResourceType.TRANSACTIONAL_ID, AclResourceType.DELEGATION_TOKEN)
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)


def store_path(pattern_type: PatternType) -> str:
    if pattern_type == PatternType.LITERAL:
        return LITERAL_ACL_PATH
    return f"{EXTENDED_ACL_PATH}/{pattern_type.name.lower()}"


def type_path(pattern_type: PatternType, resource_type: AclResourceType) -> str:
    return f"{store_path(pattern_type)}/{camel_name(resource_type)}"


def resource_path(pattern: ResourcePattern) -> str:
    return f"{type_path(pattern.pattern_type, pattern.resource_type)}/{pattern.name}"


def change_path(pattern_type: PatternType) -> str:
    return LITERAL_CHANGE_PATH if pattern_type == PatternType.LITERAL else EXTENDED_CHANGE_PATH


def all_paths() -> list[str]:
    """What AclAuthorizer.configure creates (KafkaZkClient.createAclPaths), parents first."""
    paths = [LITERAL_ACL_PATH, EXTENDED_ACL_PATH]
    for pattern_type in STORED_PATTERN_TYPES:
        paths.append(store_path(pattern_type))
        paths.extend(type_path(pattern_type, t) for t in RESOURCE_TYPES)
    return sorted(set(paths), key=lambda p: p.count("/")) + [LITERAL_CHANGE_PATH, EXTENDED_CHANGE_PATH]


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    acls = [{"principal": e.principal, "permissionType": camel_name(e.permission_type),
             "operation": camel_name(e.operation), "host": e.host} for e in entries]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> frozenset[AccessControlEntry]:
    if not data:
        return frozenset()
    try:
        doc = json.loads(data)
        return frozenset(AccessControlEntry(principal=a["principal"], host=a["host"],
                                            operation=parse_enum(AclOperation, a["operation"]),
                                            permission_type=parse_enum(AclPermissionType, a["permissionType"]))
                         for a in doc.get("acls", ()))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ZNodeDecodeError(f"Invalid ACL znode data: {exc}") from None


def encode_change(pattern: ResourcePattern) -> bytes:
    if pattern.pattern_type == PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return json.dumps({"version": 1, "resourceType": pattern.resource_type.name, "name": pattern.name,
                       "patternType": pattern.pattern_type.name}, separators=(",", ":")).encode()


def decode_change(pattern_type: PatternType, data: bytes) -> ResourcePattern:
    text = data.decode("utf-8", "replace")
    try:
        if pattern_type == PatternType.LITERAL:
            type_name, colon, name = text.partition(":")
            if not colon:
                raise ValueError("expected a string in format ResourceType:ResourceName")
            pattern = ResourcePattern(parse_enum(AclResourceType, type_name), name, PatternType.LITERAL)
        else:
            doc = json.loads(text)
            pattern = ResourcePattern(parse_enum(AclResourceType, doc["resourceType"]), doc["name"],
                                      parse_enum(PatternType, doc["patternType"]))
        if pattern.resource_type not in RESOURCE_TYPES or pattern.pattern_type not in STORED_PATTERN_TYPES:
            raise ValueError("unknown resource or pattern type")
        return pattern
    except (ValueError, KeyError, TypeError) as exc:
        raise ZNodeDecodeError(f"Invalid ACL change notification {text!r}: {exc}") from None


@dataclass(frozen=True)
class VersionedAcls:
    entries: frozenset[AccessControlEntry]
    zk_version: int        # -1: no znode


class AclZkStore:
    """The broker's reads and writes of ACL znodes, through KafkaZkClient's kazoo bridge."""

    def __init__(self, zk: Any) -> None:
        self.zk = zk

    async def create_paths(self) -> None:
        for path in all_paths():
            await self.zk._create_recursive(path, None, must_be_new=False)

    async def get_acls(self, pattern: ResourcePattern) -> VersionedAcls:
        found = await self.zk._get_or_none(resource_path(pattern))
        if found is None:
            return VersionedAcls(frozenset(), -1)
        return VersionedAcls(decode_acls(found[0]), found[1].version)

    async def get_all(self) -> dict[ResourcePattern, VersionedAcls]:
        """Every stored pattern's ACLs (AclAuthorizer.loadCache)."""
        out: dict[ResourcePattern, VersionedAcls] = {}
        for pattern_type in STORED_PATTERN_TYPES:
            for resource_type in RESOURCE_TYPES:
                for name in await self.zk._children(type_path(pattern_type, resource_type)):
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    try:
                        acls = await self.get_acls(pattern)
                    except ZNodeDecodeError:
                        continue
                    if acls.entries:
                        out[pattern] = acls
        return out

    async def conditional_set(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry],
                              expected_version: int) -> bool:
        """Write (or delete, when empty) the pattern's znode if it is still at expected_version;
        False when another writer got there first (the caller re-reads and retries)."""
        path = resource_path(pattern)
        kazoo = self.zk._kazoo
        try:
            if not entries:
                if expected_version >= 0:
                    await self.zk._req(lambda: kazoo.delete_async(path, expected_version))
                return True
            data = encode_acls(sorted(entries, key=str))
            if expected_version < 0:
                await self.zk._create_recursive(path, data)
            else:
                await self.zk._req(lambda: kazoo.set_async(path, data, expected_version))
            return True
        except (BadVersionError, NodeExistsError, NoNodeError):
            return False

    async def notify_change(self, pattern: ResourcePattern) -> None:
        base = change_path(pattern.pattern_type)
        await self.zk._create_recursive(base, None, must_be_new=False)
        await self.zk._create(f"{base}/{CHANGE_PREFIX}", encode_change(pattern), sequence=True)

    async def change_names(self, pattern_type: PatternType) -> list[str]:
        children = await self.zk._children(change_path(pattern_type))
        return sorted((c for c in children if c.startswith(CHANGE_PREFIX)), key=sequence_number)

    async def read_change(self, pattern_type: PatternType, name: str) -> tuple[ResourcePattern, int] | None:
        found = await self.zk._get_or_none(f"{change_path(pattern_type)}/{name}")
        if found is None or found[0] is None:
            return None
        return decode_change(pattern_type, found[0]), int(found[1].ctime)

    async def delete_change(self, pattern_type: PatternType, name: str) -> None:
        path = f"{change_path(pattern_type)}/{name}"
        try:
            await self.zk._req(lambda: self.zk._kazoo.delete_async(path))
        except NoNodeError:
            pass

    def watch_changes(self, pattern_type: PatternType, listener):
        return self.zk.watch_children(change_path(pattern_type), listener)


def sequence_number(name: str) -> int:
    try:
        return int(name[len(CHANGE_PREFIX):])
    except ValueError:
        return -1
