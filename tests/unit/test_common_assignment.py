"""Replica assignment matches Kafka's AdminUtils layout."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from kafkalike.common.assignment import (InvalidPartitions, InvalidReplicationFactor,
                                         assign_replicas, rack_alternated)


def test_kafka_documented_example_five_brokers_ten_partitions():
    # The layout AdminUtils' documentation draws for start index 0.
    got = assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0)
    assert got == {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                   5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


@pytest.mark.parametrize("brokers,parts,rf", [([0, 1, 2], 6, 3), ([1, 5, 9, 12], 40, 2), ([7], 5, 1)])
def test_leaders_spread_evenly_and_replicas_distinct(brokers, parts, rf):
    got = assign_replicas(brokers, parts, rf, rng=random.Random(1))
    assert sorted(got) == list(range(parts))
    for replicas in got.values():
        assert len(replicas) == rf == len(set(replicas))
        assert set(replicas) <= set(brokers)
    leaders = Counter(r[0] for r in got.values())
    assert max(leaders.values()) - min(leaders.values()) <= 1


def test_rack_aware_puts_each_replica_on_another_rack():
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    assert rack_alternated(list(racks), racks) == [0, 2, 4, 1, 3, 5]
    got = assign_replicas(list(racks), 12, 3, racks, rng=random.Random(7))
    for replicas in got.values():
        assert len({racks[r] for r in replicas}) == 3


def test_new_partitions_continue_the_layout():
    first = assign_replicas([0, 1, 2], 3, 2, start_index=0)
    more = assign_replicas([0, 1, 2], 3, 2, start_index=0, start_partition=3)
    assert sorted(more) == [3, 4, 5]
    assert set(first) | set(more) == set(range(6))


def test_bad_requests():
    with pytest.raises(InvalidReplicationFactor, match="larger than available brokers: 2"):
        assign_replicas([0, 1], 1, 3)
    with pytest.raises(InvalidPartitions):
        assign_replicas([0, 1], 0, 1)
    with pytest.raises(ValueError, match="rack information"):
        assign_replicas([0, 1], 1, 1, {0: "a"})
