"""The assignors place partitions as Kafka's do, and the protocol blobs are Kafka's bytes."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalike.client.assignors import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    decode_assignment,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_sticky_user_data,
    encode_subscription,
)
from kafkalike.client.metadata import TopicPartition as TP


def subs(**members) -> dict[str, Subscription]:
    return {m: Subscription(topics) for m, topics in members.items()}


def test_range_gives_the_first_members_the_extra_partitions_per_topic():
    out = RangeAssignor().assign({"t0": 3, "t1": 3}, subs(c0=["t0", "t1"], c1=["t0", "t1"]))
    assert out == {"c0": [TP("t0", 0), TP("t0", 1), TP("t1", 0), TP("t1", 1)], "c1": [TP("t0", 2), TP("t1", 2)]}


def test_range_orders_static_members_by_instance_id():
    members = {"b-member": Subscription(["t"], group_instance_id="i1"),
               "a-member": Subscription(["t"], group_instance_id="i2")}
    out = RangeAssignor().assign({"t": 2}, members)
    assert out == {"b-member": [TP("t", 0)], "a-member": [TP("t", 1)]}


def test_roundrobin_deals_in_turn_and_skips_unsubscribed_members():
    out = RoundRobinAssignor().assign({"t0": 3, "t1": 2}, subs(c0=["t0", "t1"], c1=["t0", "t1"]))
    assert out == {"c0": [TP("t0", 0), TP("t0", 2), TP("t1", 1)], "c1": [TP("t0", 1), TP("t1", 0)]}
    out = RoundRobinAssignor().assign({"t0": 1, "t1": 2}, subs(c0=["t0"], c1=["t0", "t1"], c2=["t1"]))
    assert out == {"c0": [TP("t0", 0)], "c1": [TP("t1", 0)], "c2": [TP("t1", 1)]}


def sticky_member(topics, partitions, generation) -> Subscription:
    """What an eager sticky member sends: owns nothing (it revoked), remembers in user data."""
    return Subscription(topics, encode_sticky_user_data(partitions, generation))


def test_sticky_keeps_previous_partitions_and_stays_balanced():
    first = StickyAssignor().assign({"t": 6}, subs(a=["t"], b=["t"]))
    members = {m: sticky_member(["t"], tps, 1) for m, tps in first.items()}
    members["c"] = Subscription(["t"])
    second = StickyAssignor().assign({"t": 6}, members)
    assert sorted(len(v) for v in second.values()) == [2, 2, 2]
    for member in ("a", "b"):
        assert set(second[member]) <= set(first[member])  # nothing moved between the old members


def test_sticky_newest_generation_wins_and_same_generation_claims_cancel():
    members = {"a": sticky_member(["t"], [TP("t", 0), TP("t", 1)], 3),   # a stale member
               "b": sticky_member(["t"], [TP("t", 0)], 5),
               "c": sticky_member(["t"], [TP("t", 1)], 5)}
    assert StickyAssignor()._current_owners(members) == {TP("t", 0): "b", TP("t", 1): "c"}
    members = {"a": sticky_member(["t"], [TP("t", 0)], 5), "b": sticky_member(["t"], [TP("t", 0)], 5)}
    assert StickyAssignor()._current_owners(members) == {}


def test_sticky_user_data_is_java_stickyassignor_bytes():
    blob = encode_sticky_user_data([TP("t", 2), TP("t", 0), TP("u", 1)], 7)
    # previous_assignment: [("t", [0, 2]), ("u", [1])], then generation 7; no version prefix
    assert blob == bytes.fromhex("00000002" "0001" "74" "00000002" "00000000" "00000002"
                                 "0001" "75" "00000001" "00000001" "00000007")
    assert decode_sticky_user_data(blob) == ([TP("t", 0), TP("t", 2), TP("u", 1)], 7)
    assert decode_sticky_user_data(blob[:-4]) == ([TP("t", 0), TP("t", 2), TP("u", 1)], None)  # version 0
    assert decode_sticky_user_data(b"\x01\x02") == ([], None)
    assert decode_sticky_user_data(None) == ([], None)


def test_sticky_member_remembers_its_assignment_for_the_next_join():
    assignor = StickyAssignor()
    assert assignor.subscription_user_data(["t"]) is None  # never assigned: no user data, as Java
    assignor.on_assignment([TP("t", 1)], 4)
    assert decode_sticky_user_data(assignor.subscription_user_data(["t"])) == ([TP("t", 1)], 4)
    assert CooperativeStickyAssignor().subscription_user_data(["t"]) is None


def test_cooperative_sticky_withholds_partitions_until_their_owner_revoked_them():
    owned = {"a": Subscription(["t"], owned_partitions=[TP("t", p) for p in range(4)]), "b": Subscription(["t"])}
    out = CooperativeStickyAssignor().assign({"t": 4}, owned)
    assert len(out["a"]) == 2 and out["b"] == []  # b waits for the follow-up rebalance
    follow_up = {"a": Subscription(["t"], owned_partitions=out["a"]), "b": Subscription(["t"])}
    out = CooperativeStickyAssignor().assign({"t": 4}, follow_up)
    assert len(out["a"]) == 2 and len(out["b"]) == 2


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.lists(st.integers(0, 9), min_size=1, max_size=4), st.integers(0, 2**32))
def test_every_partition_goes_to_exactly_one_subscribed_member(members, counts, seed):
    rng = random.Random(seed)
    topics = {f"t{i}": c for i, c in enumerate(counts)}
    subscriptions = {f"m{i}": Subscription(rng.sample(sorted(topics), rng.randint(1, len(topics))))
                     for i in range(members)}
    wanted = {TP(t, p) for s in subscriptions.values() for t in s.topics for p in range(topics[t])}
    for assignor in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor()):
        out = assignor.assign(topics, subscriptions)
        given_out = [tp for tps in out.values() for tp in tps]
        assert sorted(given_out) == sorted(wanted), assignor.name
        for member, tps in out.items():
            assert all(tp.topic in subscriptions[member].topics for tp in tps)


def test_protocol_blobs_round_trip_and_match_kafka_layout():
    blob = encode_subscription(Subscription(["a"], None, [TP("a", 1)]))
    assert blob == (b"\x00\x01" + b"\x00\x00\x00\x01\x00\x01a" + b"\xff\xff\xff\xff"
                    + b"\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x01\x00\x00\x00\x01")
    assert decode_subscription(blob).owned_partitions == [TP("a", 1)]
    v0 = b"\x00\x00" + b"\x00\x00\x00\x01\x00\x01a" + b"\xff\xff\xff\xff"
    assert decode_subscription(v0).topics == ["a"]
    assert decode_assignment(encode_assignment([TP("b", 2), TP("a", 0)])) == [TP("a", 0), TP("b", 2)]
    assert decode_assignment(b"") == []
