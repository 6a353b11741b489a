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
    decode_subscription,
    encode_assignment,
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


def test_sticky_keeps_owned_partitions_and_stays_balanced():
    first = StickyAssignor().assign({"t": 6}, subs(a=["t"], b=["t"]))
    owned = {m: Subscription(["t"], owned_partitions=tps) for m, tps in first.items()}
    owned["c"] = Subscription(["t"])
    second = StickyAssignor().assign({"t": 6}, owned)
    assert sorted(len(v) for v in second.values()) == [2, 2, 2]
    for member in ("a", "b"):
        assert set(second[member]) <= set(first[member])  # nothing moved between the old members


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
