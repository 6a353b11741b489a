"""The group coordinator's membership protocol on a Clock: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, rebalances, session expiry, initial delay, static members.

The coordinator runs on a real ReplicaManager and Log under /dev/shm (its records
must really land in __consumer_offsets), with twisted's Clock as its reactor, so every
timeout here is driven by clock.advance and nothing sleeps.

`Harness` is shared by the other test_coordinator_* modules.
"""
from __future__ import annotations

import types

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.coordinator.config import OFFSETS_TOPIC, CoordinatorConfig
from kafkalike.coordinator.coordinator import GroupCoordinator
from kafkalike.coordinator.records import GroupKey, decode_group_value, decode_key
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.consumer_protocol import ConsumerProtocolSubscription
from kafkalike.records import iter_records
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager

START_S = 1_700_000_000
SESSION = 10_000
REBALANCE = 30_000


def subscription(*topics: str) -> bytes:
    return b"\x00\x00" + ConsumerProtocolSubscription(topics=list(topics), user_data=None).encode(0)


def fired(d: defer.Deferred):
    """What a Deferred already fired with (fails the test if it is still waiting)."""
    out = []

    def keep(result):
        out.append(result)
        return result
    d.addBoth(keep)
    assert out, "the request has not been answered"
    if isinstance(out[0], Exception) or hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


class Harness:
    """A coordinator over a real ReplicaManager on /dev/shm, driven by a Clock."""

    def __init__(self, path, partitions: int = 4, **overrides):
        self.clock = Clock()
        self.clock.advance(START_S)
        self.path = path
        self.log_manager = LogManager([str(path)], LogConfig(), clock=self.now)
        self.replicas = ReplicaManager(0, self.log_manager, self.clock, lambda topic: LogConfig(), self.now)
        settings = dict(offsets_topic_partitions=partitions, offsets_topic_replication_factor=1,
                        initial_rebalance_delay_ms=0)
        settings.update(overrides)
        self.config = CoordinatorConfig(**settings)
        self.coordinator = self.new_coordinator()

    def now(self) -> int:
        return int(self.clock.seconds() * 1000)

    def new_coordinator(self) -> GroupCoordinator:
        coordinator = GroupCoordinator(0, self.config, self.replicas, self.clock)
        coordinator.startup()
        return coordinator

    def make_leader(self, partition: int, epoch: int = 0, isr=(0,)):
        part = self.replicas.get_or_create_partition((OFFSETS_TOPIC, partition), True)
        part.make_leader(types.SimpleNamespace(leader=0, leader_epoch=epoch, zk_version=0, controller_epoch=1,
                                               replicas=list(isr), isr=list(isr)), self.now())
        return part

    def lead(self, partition: int | None = None, epoch: int = 0, coordinator=None) -> None:
        """Lead and load `partition` (all partitions when None)."""
        coordinator = coordinator or self.coordinator
        parts = range(self.config.offsets_topic_partitions) if partition is None else [partition]
        for p in parts:
            self.make_leader(p, epoch)
            coordinator.on_elected(p, epoch)
        while coordinator.manager.loads:
            self.clock.advance(0)

    def tick(self, seconds: float) -> None:
        """Advance `seconds`, running each timer at exactly its own time (Clock.advance
        alone would run them all at the end, so timers they set would start late)."""
        target = self.clock.seconds() + seconds
        while True:
            due = [c.getTime() for c in self.clock.getDelayedCalls() if c.getTime() <= target + 1e-6]
            if not due:
                break
            self.clock.rightNow = max(self.clock.rightNow, min(due))
            self.clock.advance(0)
        self.clock.rightNow = max(self.clock.rightNow, target)

    def join(self, group: str, member_id: str = "", *, instance: str | None = None, topics=("t",),
             protocols=None, session: int = SESSION, rebalance: int = REBALANCE, require_known: bool = True,
             client: str = "client", protocol_type: str = "consumer", coordinator=None) -> defer.Deferred:
        coordinator = coordinator or self.coordinator
        if protocols is None:
            protocols = [("range", subscription(*topics))]
        return coordinator.join_group(group, member_id, instance, require_known and instance is None, client,
                                      "/127.0.0.1", rebalance, session, protocol_type, protocols)

    def new_member(self, group: str, **kwargs) -> tuple[str, defer.Deferred]:
        """A dynamic member's two JoinGroups (MEMBER_ID_REQUIRED first); returns its id and
        the Deferred of its real join."""
        first = fired(self.join(group, **kwargs))
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED
        return first.member_id, self.join(group, first.member_id, **kwargs)

    def sync(self, group: str, generation: int, member_id: str, assignments=None, instance=None,
             protocol_type=None, protocol_name=None) -> defer.Deferred:
        return self.coordinator.sync_group(group, generation, member_id, protocol_type, protocol_name, instance,
                                           assignments or {})

    def stable_group(self, group: str, count: int, **kwargs) -> tuple[list[str], int]:
        """`count` dynamic members through join and sync; returns (member ids, generation),
        leader first."""
        joins = [self.new_member(group, **kwargs) for _ in range(count)]
        self.tick(0)
        results = [fired(d) for _, d in joins]
        leader = results[0].leader_id
        generation = results[0].generation_id
        members = [leader] + [r.member_id for r in results if r.member_id != leader]
        syncs = [self.sync(group, generation, m, {x: x.encode() for x in members} if m == leader else None)
                 for m in members]
        for s in syncs:
            assert fired(s).error == ErrorCode.NONE
        return members, generation

    def group(self, group_id: str, coordinator=None):
        return (coordinator or self.coordinator).manager.get_group(group_id)

    def state(self, group_id: str) -> str:
        return str(self.group(group_id).state)

    def log_records(self, partition: int) -> list:
        log = self.replicas.partitions[(OFFSETS_TOPIC, partition)].log
        data = log.read(log.log_start_offset, 1 << 30, min_one_batch=True)
        return [(decode_key(r.key), r.value) for r in iter_records(data)]

    def group_records(self, group_id: str) -> list:
        p = self.coordinator.partition_for(group_id)
        return [decode_group_value(v) for k, v in self.log_records(p) if k == GroupKey(group_id)]


@pytest.fixture
def h(shm_path) -> Harness:
    harness = Harness(shm_path)
    harness.lead()
    return harness


# -- joining ------------------------------------------------------------------------------

def test_new_member_gets_member_id_required_then_leads_generation_one(h):
    first = fired(h.join("g", client="consumer-1"))
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("consumer-1-") and first.generation_id == -1
    d = h.join("g", first.member_id, client="consumer-1")
    assert not d.called                  # group.initial.rebalance.delay.ms (0) runs on the reactor
    h.tick(0)
    joined = fired(d)
    assert joined.error == ErrorCode.NONE
    assert (joined.generation_id, joined.protocol_type, joined.protocol_name) == (1, "consumer", "range")
    assert joined.leader_id == joined.member_id == first.member_id
    assert [(m.member_id, m.metadata) for m in joined.members] == [(first.member_id, subscription("t"))]
    assert h.state("g") == "CompletingRebalance"


def test_old_clients_join_without_the_member_id_round_trip(h):
    d = h.join("g", require_known=False)
    h.tick(0)
    joined = fired(d)
    assert joined.error == ErrorCode.NONE and joined.member_id.startswith("client-")


def test_leader_gets_every_members_metadata_and_followers_none(shm_path):
    h = Harness(shm_path, initial_rebalance_delay_ms=3000)
    h.lead()
    a, da = h.new_member("g", topics=("a",))
    b, db = h.new_member("g", topics=("b",))   # a newcomer: the 3 s delay runs once more
    h.tick(5.9)
    assert not da.called and not db.called
    h.tick(0.1)
    ra, rb = fired(da), fired(db)
    assert ra.generation_id == rb.generation_id == 1
    leader, follower = (ra, rb) if ra.leader_id == a else (rb, ra)
    assert {m.member_id: m.metadata for m in leader.members} == {a: subscription("a"), b: subscription("b")}
    assert follower.members == [] and follower.leader_id == leader.member_id


def test_followers_wait_for_the_leaders_sync_and_each_gets_its_own_assignment(h):
    a, da = h.new_member("g")
    b, db = h.new_member("g")
    h.tick(0)
    generation = fired(da).generation_id
    leader = fired(da).leader_id
    follower = b if leader == a else a
    waiting = h.sync("g", generation, follower)
    assert not waiting.called
    done = h.sync("g", generation, leader, {leader: b"for-leader", follower: b"for-follower"})
    assert fired(done).assignment == b"for-leader"
    answer = fired(waiting)
    assert (answer.error, answer.assignment, answer.protocol_name) == (ErrorCode.NONE, b"for-follower", "range")
    assert h.state("g") == "Stable"
    [record] = h.group_records("g")
    assert (record.generation, record.protocol_type, record.protocol, record.leader) == (1, "consumer", "range", leader)
    assert {m.member_id: m.assignment for m in record.members} == {leader: b"for-leader", follower: b"for-follower"}
    assert all(m.client_host == "/127.0.0.1" and m.session_timeout_ms == SESSION for m in record.members)


def test_leader_assignment_missing_a_member_gives_it_an_empty_one(h):
    (leader, follower), generation = h.stable_group("g", 2)
    assert h.group("g").get(follower).assignment == follower.encode()
    joined = [h.join("g", m) for m in (leader, follower)]
    h.tick(0)
    generation = fired(joined[0]).generation_id
    waiting = h.sync("g", generation, follower)
    fired(h.sync("g", generation, leader, {leader: b"x"}))
    assert fired(waiting).assignment == b""


def test_protocol_is_chosen_by_vote_among_protocols_every_member_supports(h):
    rr, rng, sticky = ("roundrobin", b"1"), ("range", b"2"), ("sticky", b"3")
    joins = [h.new_member("g", protocols=p)[1] for p in ([rr, rng], [rr, rng, sticky], [rng, rr])]
    h.tick(0)
    assert {fired(d).protocol_name for d in joins} == {"roundrobin"}


def test_initial_delay_extends_for_each_newcomer_but_not_past_the_rebalance_timeout(shm_path):
    h = Harness(shm_path, initial_rebalance_delay_ms=3000)
    h.lead()
    _, first = h.new_member("g", rebalance=10_000)
    h.tick(2.9)
    h.new_member("g", rebalance=10_000)            # arrives during the first delay
    h.tick(3.0)                                    # t=5.9: the second delay (3s..6s) still runs
    assert not first.called
    h.tick(0.1)
    assert fired(first).generation_id == 1         # t=6: nobody new since t=3


def test_initial_delay_is_capped_by_the_rebalance_timeout(shm_path):
    h = Harness(shm_path, initial_rebalance_delay_ms=3000)
    h.lead()
    _, first = h.new_member("g", rebalance=10_000)
    for _ in range(3):                             # a newcomer in every delay window
        h.tick(2.9)
        h.new_member("g", rebalance=10_000)
        h.tick(0.1)
    assert not first.called                        # t=9: one more second remains
    h.tick(0.9)
    assert not first.called
    h.tick(0.1)
    assert fired(first).error == ErrorCode.NONE and len(fired(first).members) == 4


def test_a_newcomer_makes_a_stable_group_rebalance_and_everyone_rejoins(h):
    (a, b), generation = h.stable_group("g", 2)
    c, dc = h.new_member("g")
    assert h.state("g") == "PreparingRebalance"
    assert h.coordinator.heartbeat("g", a, None, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    da = h.join("g", a)
    assert not da.called and not dc.called
    db = h.join("g", b)                            # the last one back completes the join at once
    results = [fired(d) for d in (da, db, dc)]
    assert {r.generation_id for r in results} == {generation + 1}
    leaders = [r for r in results if r.members]
    assert len(leaders) == 1 and {m.member_id for m in leaders[0].members} == {a, b, c}


def test_members_that_do_not_rejoin_in_time_are_dropped(h):
    (a, b), generation = h.stable_group("g", 2, rebalance=5000)
    c, dc = h.new_member("g", rebalance=5000)
    da = h.join("g", a, rebalance=5000)
    h.tick(4.9)
    assert not da.called
    h.tick(0.1)
    assert {fired(da).generation_id, fired(dc).generation_id} == {generation + 1}
    assert set(h.group("g").members) == {a, c}
    assert h.coordinator.heartbeat("g", b, None, generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_leader_that_does_not_rejoin_is_replaced_by_one_that_did(h):
    (leader, follower), _ = h.stable_group("g", 2, rebalance=5000)
    d = h.join("g", follower, rebalance=5000, topics=("other",))  # new metadata: a rebalance
    h.tick(5)
    joined = fired(d)
    assert joined.leader_id == follower and [m.member_id for m in joined.members] == [follower]


def test_rejoining_with_the_same_metadata_while_completing_gets_the_same_answer(h):
    a, da = h.new_member("g")
    h.tick(0)
    again = fired(h.join("g", a))
    assert (again.generation_id, again.leader_id, again.member_id) == (1, a, a)
    assert [m.member_id for m in again.members] == [a]
    assert h.state("g") == "CompletingRebalance"


def test_stable_follower_rejoining_unchanged_keeps_the_generation_but_a_leader_rebalances(h):
    (leader, follower), generation = h.stable_group("g", 2)
    same = fired(h.join("g", follower))
    assert (same.generation_id, same.leader_id, same.members) == (generation, leader, [])
    assert h.state("g") == "Stable"
    h.join("g", leader)
    assert h.state("g") == "PreparingRebalance"


# -- heartbeats and sessions --------------------------------------------------------------

def test_heartbeat_answers_per_state(h):
    a, da = h.new_member("g")
    assert h.coordinator.heartbeat("g", a, None, 0) == ErrorCode.REBALANCE_IN_PROGRESS
    h.tick(0)
    assert h.state("g") == "CompletingRebalance"
    assert h.coordinator.heartbeat("g", a, None, 1) == ErrorCode.NONE
    assert h.coordinator.heartbeat("g", a, None, 2) == ErrorCode.ILLEGAL_GENERATION
    assert h.coordinator.heartbeat("g", "stranger", None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.heartbeat("nobody", a, None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.heartbeat("", a, None, 1) == ErrorCode.INVALID_GROUP_ID
    fired(h.sync("g", 1, a, {a: b"x"}))
    assert h.coordinator.heartbeat("g", a, None, 1) == ErrorCode.NONE


def test_silent_member_is_removed_after_its_session_timeout_and_the_rest_rebalance(h):
    (a, b), generation = h.stable_group("g", 2)
    h.tick(SESSION / 1000 / 2)
    assert h.coordinator.heartbeat("g", a, None, generation) == ErrorCode.NONE
    h.tick(SESSION / 1000 / 2)                     # b said nothing for a whole session
    assert set(h.group("g").members) == {a}
    assert h.state("g") == "PreparingRebalance"
    assert h.coordinator.heartbeat("g", a, None, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = fired(h.join("g", a))
    assert joined.generation_id == generation + 1 and [m.member_id for m in joined.members] == [a]


def test_group_whose_members_all_expire_becomes_empty_and_records_it(h):
    members, generation = h.stable_group("g", 2)
    h.tick(SESSION / 1000)                           # both gone: the rebalance ends at once, empty
    group = h.group("g")
    assert (str(group.state), group.generation_id, group.members) == ("Empty", generation + 1, {})
    last = h.group_records("g")[-1]
    assert (last.generation, last.members, last.protocol) == (generation + 1, [], None)


def test_a_new_members_join_gives_up_after_five_minutes(h):
    # a keeps its session alive but never rejoins, so the rebalance cannot end before its
    # (long) rebalance timeout; the newcomer's JoinGroup is answered after 5 minutes.
    (a,), generation = h.stable_group("g", 1, session=6000, rebalance=600_000)
    b, db = h.new_member("g", session=6000, rebalance=600_000)
    for _ in range(99):
        h.tick(3)
        assert h.coordinator.heartbeat("g", a, None, generation) == ErrorCode.REBALANCE_IN_PROGRESS
    assert not db.called                          # t=297 s: b's own session does not apply
    h.tick(3)
    assert fired(db).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert set(h.group("g").members) == {a}


def test_pending_member_id_expires_after_the_session_timeout(h):
    first = fired(h.join("g"))
    h.tick(SESSION / 1000)
    again = fired(h.join("g", first.member_id))
    assert again.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_pending_member_holds_the_rebalance_until_it_joins_or_expires(h):
    (a,), generation = h.stable_group("g", 1)
    pending = fired(h.join("g"))                  # MEMBER_ID_REQUIRED: pending, not yet a member
    da = h.join("g", a)                           # a leader rejoin starts a rebalance
    assert not da.called                          # waiting for the pending member
    h.tick(SESSION / 1000)
    assert fired(da).generation_id == generation + 1
    assert pending.member_id not in h.group("g").members


# -- leaving ------------------------------------------------------------------------------

def test_leave_group_removes_the_member_and_rebalances_the_rest(h):
    (a, b), generation = h.stable_group("g", 2)
    result = h.coordinator.leave_group("g", [(b, None)])
    assert result.error == ErrorCode.NONE and [m.error for m in result.members] == [ErrorCode.NONE]
    assert h.state("g") == "PreparingRebalance"
    assert fired(h.join("g", a)).generation_id == generation + 1


def test_batch_leave_reports_each_member(h):
    (a, b), _ = h.stable_group("g", 2)
    result = h.coordinator.leave_group("g", [(a, None), ("ghost", None), (b, None)])
    assert [(m.member_id, m.error) for m in result.members] == [
        (a, ErrorCode.NONE), ("ghost", ErrorCode.UNKNOWN_MEMBER_ID), (b, ErrorCode.NONE)]
    h.tick(0)
    assert h.state("g") == "Empty"


def test_leave_of_unknown_group_and_of_a_pending_member(h):
    assert h.coordinator.leave_group("nobody", [("m", None)]).members[0].error == ErrorCode.UNKNOWN_MEMBER_ID
    (a,), _ = h.stable_group("g", 1)
    pending = fired(h.join("g"))
    da = h.join("g", a)
    assert not da.called
    assert h.coordinator.leave_group("g", [(pending.member_id, None)]).members[0].error == ErrorCode.NONE
    assert fired(da).error == ErrorCode.NONE     # nobody left to wait for


# -- errors -------------------------------------------------------------------------------

def test_join_errors(h):
    def error(*args, **kwargs):
        return fired(h.join(*args, **kwargs)).error
    assert error("g", session=5999) == ErrorCode.INVALID_SESSION_TIMEOUT
    assert error("g", session=1_800_001) == ErrorCode.INVALID_SESSION_TIMEOUT
    assert error("", require_known=False) == ErrorCode.INVALID_GROUP_ID
    assert error("nobody", "made-up-id") == ErrorCode.UNKNOWN_MEMBER_ID
    assert error("empty-protocols", protocols=[]) == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert error("empty-type", protocol_type="") == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    h.stable_group("g", 1)
    assert error("g", "made-up-id") == ErrorCode.UNKNOWN_MEMBER_ID
    assert error("g", protocol_type="connect") == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert error("g", protocols=[("roundrobin", b"")]) == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size(shm_path):
    h = Harness(shm_path, max_group_size=2)
    h.lead()
    (a, b), generation = h.stable_group("g", 2)
    third = fired(h.join("g", require_known=False))
    assert (third.error, third.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    assert set(h.group("g").members) == {a, b} and h.state("g") == "Stable"


def test_sync_errors(h):
    assert fired(h.sync("nobody", 1, "m")).error == ErrorCode.UNKNOWN_MEMBER_ID
    (a, b), generation = h.stable_group("g", 2)
    assert fired(h.sync("g", generation, "stranger")).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert fired(h.sync("g", generation + 1, a)).error == ErrorCode.ILLEGAL_GENERATION
    assert fired(h.sync("g", generation, a, protocol_type="connect")).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert fired(h.sync("g", generation, a, protocol_name="roundrobin")).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    stable = fired(h.sync("g", generation, b))               # Stable: what it already has
    assert (stable.error, stable.assignment) == (ErrorCode.NONE, b.encode())
    h.join("g", a)
    assert fired(h.sync("g", generation, b)).error == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_rebalance_cancels_syncs_waiting_for_the_leader(h):
    a, da = h.new_member("g")
    b, db = h.new_member("g")
    h.tick(0)
    generation = fired(da).generation_id
    follower = b if fired(da).leader_id == a else a
    waiting = h.sync("g", generation, follower)
    h.new_member("g")                                 # a newcomer before the leader synced
    assert fired(waiting).error == ErrorCode.REBALANCE_IN_PROGRESS


def test_groups_of_partitions_we_do_not_lead_get_not_coordinator(shm_path):
    h = Harness(shm_path, partitions=2)
    h.lead(0)
    group = next(g for g in (f"g{i}" for i in range(100)) if h.coordinator.partition_for(g) == 1)
    assert fired(h.join(group)).error == ErrorCode.NOT_COORDINATOR
    assert h.coordinator.heartbeat(group, "m", None, 1) == ErrorCode.NOT_COORDINATOR
    assert fired(h.sync(group, 1, "m")).error == ErrorCode.NOT_COORDINATOR


# -- static membership --------------------------------------------------------------------

def static_group(h, count: int = 2, session: int = SESSION):
    joins = [h.join("g", instance=f"i{n}", session=session) for n in range(count)]
    h.tick(0)
    results = [fired(d) for d in joins]
    leader = results[0].leader_id
    generation = results[0].generation_id
    ids = [r.member_id for r in results]
    syncs = [h.sync("g", generation, m, {x: x.encode() for x in ids} if m == leader else None,
                    instance=f"i{n}") for n, m in enumerate(ids)]
    assert all(fired(s).error == ErrorCode.NONE for s in syncs)
    return ids, leader, generation


def test_static_member_ids_start_with_the_instance_id_and_skip_member_id_required(h):
    d = h.join("g", instance="host-7")
    h.tick(0)
    assert fired(d).member_id.startswith("host-7-")


def test_restarted_static_member_takes_over_without_a_rebalance(h):
    (m0, m1), leader, generation = static_group(h)
    back = fired(h.join("g", instance="i1"))       # i1 restarted: no member id
    assert back.error == ErrorCode.NONE and back.member_id.startswith("i1-") and back.member_id != m1
    assert (back.generation_id, back.leader_id) == (generation, leader)
    assert h.state("g") == "Stable"
    assert h.coordinator.heartbeat("g", m1, "i1", generation) == ErrorCode.FENCED_INSTANCE_ID
    assert h.coordinator.heartbeat("g", back.member_id, "i1", generation) == ErrorCode.NONE
    synced = fired(h.sync("g", generation, back.member_id, instance="i1"))
    assert synced.assignment == m1.encode()        # the slot's assignment stays
    assert h.group_records("g")[-1].members[1].member_id == back.member_id


def test_static_member_with_a_stale_member_id_is_fenced(h):
    (m0, m1), _, generation = static_group(h)
    assert fired(h.join("g", "wrong-id", instance="i0")).error == ErrorCode.FENCED_INSTANCE_ID
    assert fired(h.sync("g", generation, "wrong-id", instance="i0")).error == ErrorCode.FENCED_INSTANCE_ID
    assert h.coordinator.leave_group("g", [("wrong-id", "i0")]).members[0].error == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_is_kept_through_a_rebalance_it_sits_out(h):
    (m0, m1), _, generation = static_group(h, session=60_000)
    dynamic, dd = h.new_member("g", rebalance=5000)
    d0 = h.join("g", m0, instance="i0", rebalance=5000, session=60_000)
    h.tick(REBALANCE / 1000)                       # i1 never rejoins (nor dies)
    assert set(h.group("g").members) == {m0, m1, dynamic}
    assert {fired(d0).generation_id, fired(dd).generation_id} == {generation + 1}


def test_static_member_leaves_by_instance_id(h):
    (m0, m1), _, _ = static_group(h)
    result = h.coordinator.leave_group("g", [("", "i1")])
    assert [(m.group_instance_id, m.error) for m in result.members] == [("i1", ErrorCode.NONE)]
    assert set(h.group("g").members) == {m0}
    assert h.state("g") == "PreparingRebalance"
