"""Kafka's ACL vocabulary: resource patterns, access control entries and the filters
that match them, with their wire codes and the names Kafka writes and prints.

The broker's authorizer, the ZooKeeper ACL store, the ACL APIs and kafka-acls.sh all
speak it, so it lives on the common floor. Three spellings of each name exist in Kafka
and each has its place: the wire code, the Java enum name (TOPIC, READ, ALLOW: what
kafka-acls prints and the extended change notifications hold) and the CamelCase name of
SecurityUtils (Topic, Read, Allow: what the ACL znodes hold).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class AclResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


def camel_name(member: IntEnum) -> str:
    """SecurityUtils' names: TRANSACTIONAL_ID -> TransactionalId, IDEMPOTENT_WRITE -> IdempotentWrite."""
    return "".join(part.capitalize() for part in member.name.split("_"))


def parse_enum(enum_cls, text: str):
    """Kafka's fromString: the enum name in any case, or SecurityUtils' CamelCase; UNKNOWN otherwise."""
    key = text.strip().upper().replace("-", "_")
    if key in enum_cls.__members__:
        return enum_cls[key]
    for member in enum_cls:
        if camel_name(member).upper() == key:
            return member
    return enum_cls.UNKNOWN


# The operations each resource type can have ACLs for (AclEntry.supportedOperations), in
# Kafka's order; kafka-acls refuses others, authorized-operation fields report them.
SUPPORTED_OPERATIONS: dict[AclResourceType, tuple[AclOperation, ...]] = {
    AclResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                            AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                            AclOperation.ALTER_CONFIGS),
    AclResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    AclResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                              AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                              AclOperation.DESCRIBE),
    AclResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    AclResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
}


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: AclResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")


@dataclass(frozen=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True)
class AclBindingFilter:
    """None in a field matches anything, as the ANY codes and null strings on the wire."""

    resource_type: AclResourceType = AclResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        """ResourcePatternFilter.matches: MATCH also finds wildcard and prefixed patterns
        that would apply to a literal name."""
        if self.resource_type not in (AclResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        return pattern.pattern_type == PatternType.PREFIXED and self.name.startswith(pattern.name)

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and self.operation in (AclOperation.ANY, entry.operation)
                and self.permission_type in (AclPermissionType.ANY, entry.permission_type))

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)

    def find_indefinite_field(self) -> str | None:
        """Why this filter cannot be made into a binding (CreateAcls), as Kafka words it; None if it can."""
        if self.resource_type in (AclResourceType.ANY, AclResourceType.UNKNOWN):
            return "Resource type is " + self.resource_type.name
        if self.pattern_type in (PatternType.ANY, PatternType.MATCH, PatternType.UNKNOWN):
            return "Resource pattern type is " + self.pattern_type.name
        if self.name is None:
            return "Resource name is NULL"
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return "Operation is " + self.operation.name
        if self.permission_type in (AclPermissionType.ANY, AclPermissionType.UNKNOWN):
            return "Permission type is " + self.permission_type.name
        return None
