"""AclAuthorizer's decisions and the ACL znode codecs, on a cache filled by hand (the
ZooKeeper side runs in tests/integration/test_acls.py)."""
from __future__ import annotations

import json

import pytest

from kafkalike.broker.authorizer.acl_authorizer import AclAuthorizer, InvalidAclError, validate
from kafkalike.common.acls import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AclResourceType, PatternType, ResourcePattern)
from kafkalike.zkdata import acl_znodes

Op, Perm, T, P = AclOperation, AclPermissionType, AclResourceType, PatternType


def entry(principal="User:alice", op=Op.READ, perm=Perm.ALLOW, host="*"):
    return AccessControlEntry(principal, host, op, perm)


def authorizer(acls, **kw) -> AclAuthorizer:
    a = AclAuthorizer(super_users=kw.pop("super_users", {"User:admin"}), **kw)
    for pattern, entries in acls.items():
        a._set_cache(pattern, frozenset(entries))
    return a


def allowed(a, op, name="orders", principal="User:alice", host="10.0.0.1", rtype=T.TOPIC):
    return a.allowed(principal, host, op, rtype, name)


def test_literal_allow_and_implied_describe_but_nothing_else():
    a = authorizer({ResourcePattern(T.TOPIC, "orders", P.LITERAL): [entry(op=Op.READ)]})
    assert allowed(a, Op.READ) and allowed(a, Op.DESCRIBE)
    assert not allowed(a, Op.WRITE) and not allowed(a, Op.DESCRIBE_CONFIGS)
    assert not allowed(a, Op.READ, principal="User:bob")
    assert not allowed(a, Op.READ, name="other")          # no ACLs there, allow.everyone off


def test_deny_wins_over_allow_from_any_pattern():
    a = authorizer({ResourcePattern(T.TOPIC, "*", P.LITERAL): [entry(principal="User:*", op=Op.ALL)],
                    ResourcePattern(T.TOPIC, "ord", P.PREFIXED): [entry(op=Op.WRITE, perm=Perm.DENY)]})
    assert allowed(a, Op.READ) and allowed(a, Op.READ, principal="User:bob")
    assert not allowed(a, Op.WRITE) and allowed(a, Op.WRITE, name="payments")
    assert allowed(a, Op.WRITE, principal="User:bob")


def test_prefixed_patterns_hosts_super_users_and_allow_everyone():
    a = authorizer({ResourcePattern(T.GROUP, "team-", P.PREFIXED): [entry(host="10.0.0.1")],
                    ResourcePattern(T.CLUSTER, "kafka-cluster", P.LITERAL): [entry(op=Op.ALTER_CONFIGS)]})
    assert allowed(a, Op.READ, name="team-a", rtype=T.GROUP)
    assert not allowed(a, Op.READ, name="team-a", rtype=T.GROUP, host="10.0.0.2")
    assert not allowed(a, Op.READ, name="tea", rtype=T.GROUP)
    assert allowed(a, Op.DESCRIBE_CONFIGS, name="kafka-cluster", rtype=T.CLUSTER)
    assert allowed(a, Op.CLUSTER_ACTION, name="kafka-cluster", rtype=T.CLUSTER, principal="User:admin")
    everyone = authorizer({ResourcePattern(T.TOPIC, "orders", P.LITERAL): [entry()]},
                          allow_everyone_if_no_acl_found=True)
    assert allowed(everyone, Op.WRITE, name="unguarded", principal="User:bob")
    assert not allowed(everyone, Op.WRITE, name="orders", principal="User:bob")


def test_authorize_by_resource_type_for_idempotent_producers():
    a = authorizer({ResourcePattern(T.TOPIC, "pre-", P.PREFIXED): [entry(op=Op.WRITE)],
                    ResourcePattern(T.TOPIC, "pre-", P.LITERAL): [entry(principal="User:bob", op=Op.WRITE)],
                    ResourcePattern(T.TOPIC, "*", P.LITERAL): [entry(principal="User:bob", op=Op.WRITE,
                                                                     perm=Perm.DENY)]})
    assert a.allowed_by_resource_type("User:alice", "h", Op.WRITE, T.TOPIC)
    assert not a.allowed_by_resource_type("User:bob", "h", Op.WRITE, T.TOPIC)
    assert not a.allowed_by_resource_type("User:carol", "h", Op.WRITE, T.TOPIC)
    dominated = authorizer({ResourcePattern(T.TOPIC, "pre-x", P.LITERAL): [entry(op=Op.WRITE)],
                            ResourcePattern(T.TOPIC, "pre-", P.PREFIXED): [entry(op=Op.ALL, perm=Perm.DENY)]})
    assert not dominated.allowed_by_resource_type("User:alice", "h", Op.WRITE, T.TOPIC)
    everyone = authorizer({}, allow_everyone_if_no_acl_found=True)
    assert everyone.allowed_by_resource_type("User:carol", "h", Op.WRITE, T.TOPIC)


def test_filters_as_kafka_matches_them():
    lit = AclBinding(ResourcePattern(T.TOPIC, "orders", P.LITERAL), entry())
    pre = AclBinding(ResourcePattern(T.TOPIC, "ord", P.PREFIXED), entry(op=Op.WRITE))
    wild = AclBinding(ResourcePattern(T.TOPIC, "*", P.LITERAL), entry(principal="User:bob"))
    match = AclBindingFilter(T.TOPIC, "orders", P.MATCH)
    assert all(match.matches(b) for b in (lit, pre, wild))
    assert [b for b in (lit, pre, wild) if AclBindingFilter(T.TOPIC, "orders", P.ANY).matches(b)] == [lit]
    assert [b for b in (lit, pre, wild) if AclBindingFilter(principal="User:bob").matches(b)] == [wild]
    assert AclBindingFilter(T.TOPIC, "x", P.LITERAL).find_indefinite_field() == "Principal is NULL"
    with pytest.raises(InvalidAclError, match="kafka-cluster"):
        validate(AclBinding(ResourcePattern(T.CLUSTER, "mine", P.LITERAL), entry(op=Op.ALTER)))


def test_znode_codecs_are_kafkas():
    assert acl_znodes.resource_path(ResourcePattern(T.TRANSACTIONAL_ID, "tx", P.LITERAL)) == \
        "/kafka-acl/TransactionalId/tx"
    assert acl_znodes.resource_path(ResourcePattern(T.TOPIC, "pre-", P.PREFIXED)) == \
        "/kafka-acl-extended/prefixed/Topic/pre-"
    data = acl_znodes.encode_acls([entry(op=Op.IDEMPOTENT_WRITE, perm=Perm.DENY)])
    assert json.loads(data) == {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Deny",
                                                        "operation": "IdempotentWrite", "host": "*"}]}
    assert acl_znodes.decode_acls(data) == {entry(op=Op.IDEMPOTENT_WRITE, perm=Perm.DENY)}
    literal = ResourcePattern(T.GROUP, "g:1", P.LITERAL)
    assert acl_znodes.encode_change(literal) == b"GROUP:g:1"
    assert acl_znodes.decode_change(P.LITERAL, b"GROUP:g:1") == literal
    prefixed = ResourcePattern(T.TOPIC, "pre-", P.PREFIXED)
    assert json.loads(acl_znodes.encode_change(prefixed)) == {"version": 1, "resourceType": "TOPIC", "name": "pre-",
                                                              "patternType": "PREFIXED"}
    assert acl_znodes.decode_change(P.PREFIXED, acl_znodes.encode_change(prefixed)) == prefixed


class FakeStore:
    """The ACL znodes in memory, for the notification processing."""

    def __init__(self):
        self.acls: dict[ResourcePattern, frozenset] = {}
        self.changes: dict[P, dict[str, tuple[bytes, int]]] = {P.LITERAL: {}, P.PREFIXED: {}}
        self.deleted: list[str] = []

    async def change_names(self, pattern_type):
        return sorted(self.changes[pattern_type], key=acl_znodes.sequence_number)

    async def read_change(self, pattern_type, name):
        data, ctime = self.changes[pattern_type][name]
        return acl_znodes.decode_change(pattern_type, data), ctime

    async def get_acls(self, pattern):
        return acl_znodes.VersionedAcls(self.acls.get(pattern, frozenset()), 0)

    async def delete_change(self, pattern_type, name):
        self.deleted.append(name)
        del self.changes[pattern_type][name]


def drive(coroutine):
    """Run a coroutine whose awaits all complete at once (the fake store's)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the coroutine waited")


def test_change_notifications_update_the_cache_in_order_and_expire():
    import time as clock
    a = authorizer({})
    store = a.store = FakeStore()
    orders = ResourcePattern(T.TOPIC, "orders", P.LITERAL)
    store.acls[orders] = frozenset({entry()})
    now = int(clock.time() * 1000)
    store.changes[P.LITERAL] = {"acl_changes_0000000001": (b"TOPIC:orders", now - 16 * 60 * 1000),
                                "acl_changes_0000000002": (b"\xff-not-a-type", now)}
    drive(a.process_changes(P.LITERAL))
    assert allowed(a, Op.READ)
    assert store.deleted == ["acl_changes_0000000001"]      # older than 15 minutes
    assert a._last_executed[P.LITERAL] == 2
    del store.acls[orders]                                  # the ACL removed, a new notification
    store.changes[P.LITERAL]["acl_changes_0000000003"] = (b"TOPIC:orders", now)
    drive(a.process_changes(P.LITERAL))
    assert not allowed(a, Op.READ) and orders not in a.cache
    prefixed = ResourcePattern(T.GROUP, "team-", P.PREFIXED)
    store.acls[prefixed] = frozenset({entry()})
    store.changes[P.PREFIXED]["acl_changes_0000000000"] = (acl_znodes.encode_change(prefixed), now)
    drive(a.process_changes(P.PREFIXED))
    assert allowed(a, Op.READ, name="team-blue", rtype=T.GROUP)
