"""Offset commits and fetches, group deletion, offset deletion and expiry, against a
real __consumer_offsets log, with Kafka 2.8's rules per group state."""
from __future__ import annotations

import pytest

from kafkalike.coordinator.config import OFFSETS_TOPIC
from kafkalike.coordinator.records import GroupKey, OffsetAndMetadata, OffsetKey, decode_offset_value
from kafkalike.protocol.errors import ErrorCode
from tests.unit.test_coordinator_membership import Harness, fired

DAY_S = 24 * 3600


@pytest.fixture
def h(shm_path) -> Harness:
    harness = Harness(shm_path, retention_ms=7 * DAY_S * 1000, retention_check_interval_ms=600_000)
    harness.lead()
    return harness


def commit(h, group, offsets: dict, member="", generation=-1, instance=None, metadata="") -> dict:
    values = {tp: OffsetAndMetadata(o, -1, metadata, h.now()) for tp, o in offsets.items()}
    return fired(h.coordinator.commit_offsets(group, member, instance, generation, values))


def fetch(h, group, partitions=None, require_stable=False):
    error, found = h.coordinator.fetch_offsets(group, require_stable, partitions)
    assert error == ErrorCode.NONE
    return {tp: o.offset for tp, o in found.items()}


def offset_records(h, group):
    p = h.coordinator.partition_for(group)
    return [(k, decode_offset_value(v)) for k, v in h.log_records(p) if isinstance(k, OffsetKey) and k.group == group]


def test_simple_consumer_commits_without_a_group_and_reads_them_back(h):
    assert commit(h, "simple", {("t", 0): 10, ("t", 1): 20}) == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
    assert fetch(h, "simple") == {("t", 0): 10, ("t", 1): 20}
    assert fetch(h, "simple", [("t", 1), ("t", 9), ("u", 0)]) == {("t", 1): 20, ("t", 9): -1, ("u", 0): -1}
    group = h.group("simple")
    assert str(group.state) == "Empty" and group.protocol_type is None
    assert [(k.topic, k.partition, v.offset) for k, v in offset_records(h, "simple")] == [("t", 0, 10), ("t", 1, 20)]


def test_fetch_for_an_unknown_group_gives_minus_one(h):
    assert fetch(h, "nobody", [("t", 0)]) == {("t", 0): -1}
    assert fetch(h, "nobody") == {}


def test_commit_rules_per_state(h):
    (a, b), generation = h.stable_group("g", 2)
    tp = {("t", 0): 1}
    assert commit(h, "g", tp, a, generation) == {("t", 0): ErrorCode.NONE}
    assert commit(h, "g", tp, "stranger", generation) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(h, "g", tp, a, generation + 1) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert commit(h, "g", tp) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}      # "simple" commit, live group
    assert commit(h, "nobody", tp, "m", 3) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    h.join("g", a)                                                            # PreparingRebalance
    assert commit(h, "g", {("t", 0): 2}, b, generation) == {("t", 0): ErrorCode.NONE}
    fired(h.join("g", b))                                                     # CompletingRebalance
    assert commit(h, "g", tp, b, generation + 1) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    assert fetch(h, "g") == {("t", 0): 2}


def test_empty_group_id_is_allowed_for_commits_but_not_for_joins(h):
    assert commit(h, "", {("t", 0): 3}) == {("t", 0): ErrorCode.NONE}
    assert fetch(h, "") == {("t", 0): 3}


def test_metadata_over_the_limit_is_refused_per_partition(h):
    too_long = "x" * 4097
    values = {("t", 0): OffsetAndMetadata(1, -1, too_long, h.now()), ("t", 1): OffsetAndMetadata(2, -1, "ok", h.now())}
    result = fired(h.coordinator.commit_offsets("g", "", None, -1, values))
    assert result == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("t", 1): ErrorCode.NONE}
    error, found = h.coordinator.fetch_offsets("g", False, None)
    assert {tp: (o.offset, o.metadata) for tp, o in found.items()} == {("t", 1): (2, "ok")}


def test_commit_is_answered_only_after_the_follower_has_it(shm_path):
    h = Harness(shm_path, partitions=1, commit_timeout_ms=5000)
    part = h.make_leader(0, isr=(0, 1))
    h.coordinator.on_elected(0, 0)
    h.tick(0)
    d = h.coordinator.commit_offsets("g", "", None, -1, {("t", 0): OffsetAndMetadata(7, -1, "", h.now())})
    assert not d.called
    assert h.coordinator.fetch_offsets("g", True, [("t", 0)])[1][("t", 0)].error == ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert fetch(h, "g", [("t", 0)]) == {("t", 0): -1}             # not in the cache before it is replicated
    part.update_follower_position(1, part.log.log_end_offset, h.now())
    h.replicas.on_high_watermark_moved((OFFSETS_TOPIC, 0))
    assert fired(d) == {("t", 0): ErrorCode.NONE}
    assert fetch(h, "g", [("t", 0)], require_stable=True) == {("t", 0): 7}


def test_commit_that_is_not_replicated_in_time_times_out_and_is_not_cached(shm_path):
    h = Harness(shm_path, partitions=1, commit_timeout_ms=5000)
    h.make_leader(0, isr=(0, 1))
    h.coordinator.on_elected(0, 0)
    h.tick(0)
    d = h.coordinator.commit_offsets("g", "", None, -1, {("t", 0): OffsetAndMetadata(7, -1, "", h.now())})
    h.tick(5)
    assert fired(d) == {("t", 0): ErrorCode.REQUEST_TIMED_OUT}
    assert fetch(h, "g", [("t", 0)], require_stable=True) == {("t", 0): -1}


def test_commits_to_a_partition_we_no_longer_lead_get_not_coordinator(h):
    h.coordinator.on_resigned(h.coordinator.partition_for("g"))
    assert commit(h, "g", {("t", 0): 1}) == {("t", 0): ErrorCode.NOT_COORDINATOR}
    assert h.coordinator.fetch_offsets("g", False, None)[0] == ErrorCode.NOT_COORDINATOR


# -- deleting groups and offsets ----------------------------------------------------------

def test_only_empty_groups_can_be_deleted_and_their_records_get_tombstones(h):
    (a,), generation = h.stable_group("g", 1)
    commit(h, "g", {("t", 0): 5, ("t", 1): 6}, a, generation)
    assert h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NON_EMPTY_GROUP}
    h.coordinator.leave_group("g", [(a, None)])
    assert str(h.group("g").state) == "Empty"
    assert h.coordinator.delete_groups(["g", "nobody"]) == {"g": ErrorCode.NONE, "nobody": ErrorCode.GROUP_ID_NOT_FOUND}
    assert h.group("g") is None and fetch(h, "g") == {}
    p = h.coordinator.partition_for("g")
    tail = h.log_records(p)[-3:]
    assert {(k, v) for k, v in tail} == {(OffsetKey("g", "t", 0), None), (OffsetKey("g", "t", 1), None),
                                         (GroupKey("g"), None)}
    assert h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.GROUP_ID_NOT_FOUND}


def test_commit_only_groups_are_deleted_without_a_group_tombstone(h):
    commit(h, "simple", {("t", 0): 1})
    assert h.coordinator.delete_groups(["simple"]) == {"simple": ErrorCode.NONE}
    keys = [k for k, _ in h.log_records(h.coordinator.partition_for("simple"))]
    assert GroupKey("simple") not in keys and keys.count(OffsetKey("simple", "t", 0)) == 2


def test_offset_delete_refuses_topics_a_live_consumer_group_subscribes_to(h):
    (a,), generation = h.stable_group("g", 1, topics=("t",))
    commit(h, "g", {("t", 0): 1, ("other", 0): 2}, a, generation)
    error, result = h.coordinator.delete_offsets("g", [("t", 0), ("other", 0)])
    assert error == ErrorCode.NONE
    assert result == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): ErrorCode.NONE}
    assert fetch(h, "g") == {("t", 0): 1}
    assert offset_records(h, "g")[-1] == (OffsetKey("g", "other", 0), None)


def test_offset_delete_of_an_empty_group_removes_what_is_asked(h):
    commit(h, "simple", {("t", 0): 1, ("t", 1): 2})
    assert h.coordinator.delete_offsets("simple", [("t", 0)]) == (ErrorCode.NONE, {("t", 0): ErrorCode.NONE})
    assert fetch(h, "simple") == {("t", 1): 2}
    assert h.coordinator.delete_offsets("simple", [("t", 1)])[0] == ErrorCode.NONE
    assert h.group("simple") is None                      # no offsets left: Dead and gone
    assert h.coordinator.delete_offsets("simple", [("t", 1)]) == (ErrorCode.GROUP_ID_NOT_FOUND, {})


# -- expiry -------------------------------------------------------------------------------

def test_offsets_of_a_group_empty_for_the_retention_period_expire(h):
    (a,), generation = h.stable_group("g", 1)
    commit(h, "g", {("t", 0): 5}, a, generation)
    h.coordinator.leave_group("g", [(a, None)])
    h.tick(0)                                                  # the rebalance ends Empty
    h.tick(7 * DAY_S - 600)
    assert fetch(h, "g") == {("t", 0): 5}                      # last check before the 7 days
    h.tick(600)
    assert fetch(h, "g") == {} and h.group("g") is None
    assert h.coordinator.list_groups() == (ErrorCode.NONE, [])
    tail = h.log_records(h.coordinator.partition_for("g"))[-2:]
    assert tail == [(OffsetKey("g", "t", 0), None), (GroupKey("g"), None)]


def test_a_live_consumer_group_keeps_subscribed_offsets_and_loses_the_others(h):
    session = 1_800_000
    (a,), generation = h.stable_group("g", 1, topics=("t",), session=session)
    commit(h, "g", {("t", 0): 5, ("gone", 0): 6}, a, generation)
    for _ in range(7 * 24 * 60 // 25 + 1):                     # a heartbeat every 25 minutes
        h.tick(25 * 60)
        assert h.coordinator.heartbeat("g", a, None, generation) == ErrorCode.NONE
    assert fetch(h, "g") == {("t", 0): 5}
    assert str(h.group("g").state) == "Stable"


def test_offsets_of_deleted_topics_are_dropped(h):
    commit(h, "simple", {("gone", 0): 1, ("kept", 0): 2})
    assert h.coordinator.on_topics_deleted(["gone"]) == 1
    assert fetch(h, "simple") == {("kept", 0): 2}
    assert offset_records(h, "simple")[-1] == (OffsetKey("simple", "gone", 0), None)
