"""Becoming and ceasing to be a coordinator: replaying __consumer_offsets on election
(in slices, answering COORDINATOR_LOAD_IN_PROGRESS meanwhile) and dropping groups on
resignation."""
from __future__ import annotations

import pytest

from kafkalike.coordinator.records import OffsetAndMetadata
from kafkalike.protocol.errors import ErrorCode
from tests.unit.test_coordinator_membership import SESSION, Harness, fired


@pytest.fixture
def h(shm_path) -> Harness:
    harness = Harness(shm_path, partitions=1)
    harness.lead()
    return harness


def commit(coordinator, group, offsets, member="", generation=-1, now=0):
    values = {tp: OffsetAndMetadata(o, -1, f"m{o}", now) for tp, o in offsets.items()}
    return fired(coordinator.commit_offsets(group, member, None, generation, values))


def fail_over(h: Harness):
    """The partition's leadership moves to a fresh coordinator (as after a restart)."""
    h.coordinator.on_resigned(0)
    fresh = h.new_coordinator()
    fresh.on_elected(0, 1)
    return fresh


def finish_loading(h: Harness, coordinator) -> int:
    turns = 0
    while coordinator.manager.loads:
        h.clock.advance(0)
        turns += 1
    return turns


def test_a_new_coordinator_restores_groups_and_offsets_from_the_log(h):
    (a, b), generation = h.stable_group("live", 2)
    commit(h.coordinator, "live", {("t", 0): 11, ("t", 1): 12}, a, generation, h.now())
    commit(h.coordinator, "live", {("t", 0): 13}, b, generation, h.now())
    commit(h.coordinator, "simple", {("u", 0): 5}, now=h.now())
    (c,), _ = h.stable_group("deleted", 1)
    h.coordinator.leave_group("deleted", [(c, None)])
    h.tick(0)
    assert h.coordinator.delete_groups(["deleted"]) == {"deleted": ErrorCode.NONE}

    fresh = fail_over(h)
    finish_loading(h, fresh)
    error, summary = fresh.describe_group("live")
    assert (error, summary.state, summary.protocol) == (ErrorCode.NONE, "Stable", "range")
    assert {m.member_id: m.assignment for m in summary.members} == {a: a.encode(), b: b.encode()}
    assert fresh.manager.get_group("live").generation_id == generation
    assert {tp: o.offset for tp, o in fresh.fetch_offsets("live", False)[1].items()} == {("t", 0): 13, ("t", 1): 12}
    assert fresh.fetch_offsets("live", False, [("t", 0)])[1][("t", 0)].metadata == "m13"
    assert {tp: o.offset for tp, o in fresh.fetch_offsets("simple", False)[1].items()} == {("u", 0): 5}
    assert fresh.describe_group("deleted")[1].state == "Dead"
    error, groups = fresh.list_groups()
    assert error == ErrorCode.NONE and {g.group_id: g.state for g in groups} == {"live": "Stable", "simple": "Empty"}
    # The restored members carry on: the generation and assignment they have are still good.
    assert fresh.heartbeat("live", a, None, generation) == ErrorCode.NONE
    assert fired(fresh.sync_group("live", generation, b, None, None, None, {})).assignment == b.encode()


def test_restored_members_that_never_come_back_expire(h):
    (a,), generation = h.stable_group("g", 1)
    fresh = fail_over(h)
    finish_loading(h, fresh)
    h.tick(SESSION / 1000)
    assert str(fresh.manager.get_group("g").state) == "Empty"


def test_requests_during_the_load_are_told_to_wait(h):
    (a,), generation = h.stable_group("g", 1)
    fresh = fail_over(h)
    assert fired(h.join("g", coordinator=fresh)).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert fresh.fetch_offsets("g", False)[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert fresh.describe_group("g")[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert fresh.list_groups()[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    # Heartbeats are answered blindly; a sync must start over (its rebalance state is lost).
    assert fresh.heartbeat("g", a, None, generation) == ErrorCode.NONE
    assert fired(fresh.sync_group("g", generation, a, None, None, None, {})).error == ErrorCode.REBALANCE_IN_PROGRESS
    finish_loading(h, fresh)
    assert fresh.describe_group("g")[0] == ErrorCode.NONE


def test_a_big_partition_loads_in_slices_and_the_last_commit_wins(shm_path):
    h = Harness(shm_path, partitions=1, load_buffer_size=4096)
    h.lead()
    for i in range(300):
        commit(h.coordinator, "g", {("t", i % 7): i}, now=h.now())
    fresh = fail_over(h)
    load = fresh.manager.loads[0]
    finish_loading(h, fresh)
    assert load.slices > 5                              # many reactor turns, not one long one
    found = {tp: o.offset for tp, o in fresh.fetch_offsets("g", False)[1].items()}
    assert found == {("t", p): max(i for i in range(300) if i % 7 == p) for p in range(7)}


def test_tombstoned_offsets_stay_deleted_after_a_reload(h):
    commit(h.coordinator, "g", {("t", 0): 1, ("t", 1): 2})
    h.coordinator.delete_offsets("g", [("t", 0)])
    fresh = fail_over(h)
    finish_loading(h, fresh)
    assert {tp: o.offset for tp, o in fresh.fetch_offsets("g", False)[1].items()} == {("t", 1): 2}


def test_resigning_answers_waiting_joins_with_not_coordinator(h):
    (a, b), generation = h.stable_group("g", 2)
    waiting = h.join("g", a)                        # the leader rejoins; b has not yet
    h.coordinator.on_resigned(0)
    assert fired(waiting).error == ErrorCode.NOT_COORDINATOR
    assert h.coordinator.heartbeat("g", b, None, generation) == ErrorCode.NOT_COORDINATOR
    assert fired(h.join("g", b)).error == ErrorCode.NOT_COORDINATOR
    h.tick(60)                                      # the old group's timers are gone with it
    assert h.coordinator.manager.groups == {}


def test_resigning_answers_waiting_syncs_with_not_coordinator(h):
    a, da = h.new_member("g")
    b, db = h.new_member("g")
    h.tick(0)
    follower = b if fired(da).leader_id == a else a
    waiting = h.sync("g", 1, follower)
    h.coordinator.on_resigned(0)
    assert fired(waiting).error == ErrorCode.NOT_COORDINATOR


def test_resigning_during_the_load_cancels_it(h):
    commit(h.coordinator, "g", {("t", 0): 1})
    fresh = fail_over(h)
    fresh.on_resigned(0)
    finish_loading(h, fresh)
    h.tick(1)
    assert fresh.fetch_offsets("g", False)[0] == ErrorCode.NOT_COORDINATOR
    assert fresh.manager.groups == {}


def test_election_of_an_older_epoch_is_ignored(h):
    fresh = h.new_coordinator()
    fresh.on_elected(0, 5)
    finish_loading(h, fresh)
    fresh.on_resigned(0, 4)                         # a late message from epoch 4
    assert fresh.fetch_offsets("g", False)[0] == ErrorCode.NONE
