"""GroupMetadata on its own: Kafka's state table, protocol votes, subscriptions, and
which offsets expire when (KIP-211 retention)."""
from __future__ import annotations

import itertools

import pytest

from kafkalike.coordinator.group import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE,
                                         CommitRecord, GroupMetadata, GroupState, IllegalGroupTransition,
                                         MemberMetadata)
from kafkalike.coordinator.records import OffsetAndMetadata
from tests.unit.test_coordinator_membership import subscription

# Kafka 2.8 GroupMetadata.scala: target -> valid previous states
ALLOWED = {
    (STABLE, PREPARING_REBALANCE), (COMPLETING_REBALANCE, PREPARING_REBALANCE), (EMPTY, PREPARING_REBALANCE),
    (PREPARING_REBALANCE, COMPLETING_REBALANCE),
    (COMPLETING_REBALANCE, STABLE),
    (PREPARING_REBALANCE, EMPTY),
} | {(s, DEAD) for s in GroupState}

DAY_MS = 24 * 3600 * 1000


class Time:
    def __init__(self, ms: int = 1_000_000):
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def member(member_id: str, protocols, instance=None) -> MemberMetadata:
    return MemberMetadata(member_id, instance, "client", "/127.0.0.1", 30000, 10000, "consumer", list(protocols))


@pytest.mark.parametrize("source,target", list(itertools.product(GroupState, GroupState)))
def test_every_transition_follows_kafkas_table(source, target):
    group = GroupMetadata("g", source, Time())
    if (source, target) in ALLOWED:
        group.transition_to(target)
        assert group.state is target
    else:
        with pytest.raises(IllegalGroupTransition):
            group.transition_to(target)
        assert group.state is source


def test_state_names_are_the_ones_kafka_prints():
    assert [str(s) for s in GroupState] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


def test_transitions_stamp_the_state_time():
    time = Time(5)
    group = GroupMetadata("g", EMPTY, time)
    time.ms = 99
    group.transition_to(PREPARING_REBALANCE)
    assert group.current_state_timestamp == 99


def test_empty_group_accepts_any_protocols_then_only_ones_all_members_share():
    group = GroupMetadata("g", EMPTY, Time())
    assert group.supports_protocols("consumer", {"range"})
    assert not group.supports_protocols("", {"range"}) and not group.supports_protocols("consumer", set())
    group.add(member("a", [("range", b""), ("roundrobin", b"")]))
    group.transition_to(PREPARING_REBALANCE)
    assert group.protocol_type == "consumer"
    assert group.supports_protocols("consumer", {"roundrobin", "sticky"})
    assert not group.supports_protocols("consumer", {"sticky"})
    assert not group.supports_protocols("connect", {"range"})


def test_protocol_vote_prefers_each_members_order():
    group = GroupMetadata("g", EMPTY, Time())
    group.add(member("a", [("roundrobin", b""), ("range", b"")]))
    group.add(member("b", [("range", b""), ("roundrobin", b"")]))
    group.add(member("c", [("range", b""), ("sticky", b"")]))
    assert group.select_protocol() == "range"          # roundrobin is not supported by c


def test_leader_moves_to_another_member_when_it_leaves():
    group = GroupMetadata("g", EMPTY, Time())
    group.add(member("a", [("range", b"")]))
    group.add(member("b", [("range", b"")]))
    assert group.leader_id == "a"
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("b")
    assert group.leader_id is None


def test_subscribed_topics_come_from_the_chosen_protocols_metadata():
    group = GroupMetadata("g", EMPTY, Time())
    group.add(member("a", [("range", subscription("x", "y"))], ))
    group.add(member("b", [("range", subscription("z"))]))
    group.transition_to(PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.subscribed_topics == {"x", "y", "z"}
    assert group.is_subscribed_to_topic("x") and not group.is_subscribed_to_topic("w")


def test_unreadable_subscriptions_count_as_subscribed_to_everything():
    group = GroupMetadata("g", EMPTY, Time())
    group.add(member("a", [("range", b"\x00")]))
    group.transition_to(PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.subscribed_topics is None and group.is_subscribed_to_topic("anything")


def test_non_consumer_groups_have_no_subscription():
    group = GroupMetadata("g", EMPTY, Time())
    group.add(MemberMetadata("a", None, "c", "h", 1, 1, "connect", [("default", subscription("x"))]))
    group.transition_to(PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.subscribed_topics is None


def offset(value: int, committed_at: int, expire: int | None = None) -> OffsetAndMetadata:
    return OffsetAndMetadata(value, -1, "", committed_at, expire)


def test_empty_groups_offsets_expire_retention_after_the_group_became_empty():
    time = Time(10 * DAY_MS)
    group = GroupMetadata("g", EMPTY, time)
    group.protocol_type = "consumer"
    group.initialize_offsets({("t", 0): CommitRecord(offset(5, committed_at=0), 0)})
    group.current_state_timestamp = 9 * DAY_MS            # Empty for one day
    assert group.remove_expired_offsets(time(), 7 * DAY_MS) == {}
    time.ms = 16 * DAY_MS
    assert group.remove_expired_offsets(time(), 7 * DAY_MS) == {("t", 0): offset(5, 0)}
    assert not group.has_offsets()


def test_simple_consumers_offsets_expire_retention_after_their_commit():
    group = GroupMetadata("g", EMPTY, Time())             # protocol type None: offsets only
    group.initialize_offsets({("t", 0): CommitRecord(offset(1, committed_at=0), 0),
                              ("t", 1): CommitRecord(offset(2, committed_at=5 * DAY_MS), 1)})
    expired = group.remove_expired_offsets(8 * DAY_MS, 7 * DAY_MS)
    assert list(expired) == [("t", 0)] and list(group.offsets) == [("t", 1)]


def test_live_consumer_group_keeps_offsets_of_topics_it_subscribes_to():
    group = GroupMetadata("g", EMPTY, Time())
    group.add(member("a", [("range", subscription("kept"))]))
    group.transition_to(PREPARING_REBALANCE)
    group.init_next_generation()
    group.transition_to(STABLE)
    group.initialize_offsets({("kept", 0): CommitRecord(offset(1, 0), 0),
                              ("dropped", 0): CommitRecord(offset(1, 0), 1)})
    assert list(group.remove_expired_offsets(30 * DAY_MS, 7 * DAY_MS)) == [("dropped", 0)]


def test_explicit_expire_timestamps_of_old_clients_win():
    group = GroupMetadata("g", EMPTY, Time())
    group.initialize_offsets({("t", 0): CommitRecord(offset(1, committed_at=0, expire=100), 0)})
    assert group.remove_expired_offsets(99, 7 * DAY_MS) == {}
    assert list(group.remove_expired_offsets(100, 7 * DAY_MS)) == [("t", 0)]


def test_pending_commits_never_expire_and_newer_log_positions_win():
    group = GroupMetadata("g", EMPTY, Time())
    first, second = offset(1, 0), offset(2, 0)
    group.prepare_offset_commit({("t", 0): first})
    group.prepare_offset_commit({("t", 0): second})
    assert group.remove_expired_offsets(30 * DAY_MS, DAY_MS) == {}
    group.on_offset_commit_append(("t", 0), CommitRecord(second, 20))
    group.on_offset_commit_append(("t", 0), CommitRecord(first, 10))   # written earlier, answered later
    assert group.offset(("t", 0)) == second and not group.has_pending_offset_commit(("t", 0))
