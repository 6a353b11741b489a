"""Partitioners: Java's murmur2 bit for bit, keyed placement, KIP-480 stickiness, round robin."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from kafkalike.client.errors import ConfigError
from kafkalike.client.metadata import Cluster, Node, PartitionInfo, TopicView
from kafkalike.client.partitioner import (
    CallablePartitioner,
    DefaultPartitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    keyed_partition,
    murmur2,
    resolve_partitioner,
    to_positive,
)

# Apache Kafka's UtilsTest.testMurmur2 (kafka-internals-notes.md section 9).
JAVA_VECTORS = [
    ("21", -973932308),
    ("foobar", -790332482),
    ("a-little-bit-long-string", -985981536),
    ("a-little-bit-longer-string", -1486304829),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    ("abc", 479470107),
]
# librdkafka's rdmurmur2.c unit test, as unsigned 32-bit values.
LIBRDKAFKA_VECTORS = [("kafka", 0xD067CF64), ("giberish123456789", 0x8F552B0C), ("1234", 0x9FC97B14),
                      ("", 0x106E08D9)]
# kafka-python's partitioner test: the partition of each key among 1000.
KAFKA_PYTHON_MOD_1000 = [(b"", 681), (b"a", 524), (b"ab", 434), (b"abc", 107), (b"123456789", 566)]


@pytest.mark.parametrize("key,expected", JAVA_VECTORS)
def test_murmur2_matches_javas_published_vectors(key, expected):
    assert murmur2(key.encode()) == expected


@pytest.mark.parametrize("key,expected", LIBRDKAFKA_VECTORS)
def test_murmur2_matches_librdkafka_vectors(key, expected):
    assert murmur2(key.encode()) & 0xFFFFFFFF == expected


@pytest.mark.parametrize("key,expected", KAFKA_PYTHON_MOD_1000)
def test_keyed_partition_matches_kafka_pythons_placements(key, expected):
    assert keyed_partition(key, 1000) == expected


def test_to_positive_clears_the_sign_bit_like_java_not_abs():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0  # abs() would overflow in Java and differ here
    assert to_positive(12345) == 12345


def cluster(partitions: int, leaderless: tuple[int, ...] = (), topic: str = "t") -> Cluster:
    infos = [PartitionInfo(topic, p, None if p in leaderless else 0) for p in range(partitions)]
    return Cluster(nodes={0: Node(0, "h", 1)}, topics={topic: TopicView.of(infos)})


def test_keyed_records_use_murmur2_over_all_partitions_even_leaderless_ones():
    c = cluster(6, leaderless=(0, 1, 2, 3, 4))
    p = DefaultPartitioner()
    for i in range(200):
        key = f"key-{i}".encode()
        assert p.partition("t", key, key, None, b"v", c) == to_positive(murmur2(key)) % 6


def test_unkeyed_records_stick_to_one_partition_until_a_new_batch():
    c = cluster(8)
    p = DefaultPartitioner(random.Random(7))
    first = p.partition("t", None, None, None, b"v", c)
    assert all(p.partition("t", None, None, None, b"v", c) == first for _ in range(100))
    p.on_new_batch("t", c, first)
    second = p.partition("t", None, None, None, b"v", c)
    assert second != first
    assert all(p.partition("t", None, None, None, b"v", c) == second for _ in range(100))


def test_a_stale_new_batch_signal_does_not_move_the_sticky_partition():
    c = cluster(8)
    p = DefaultPartitioner(random.Random(3))
    current = p.partition("t", None, None, None, b"v", c)
    other = (current + 1) % 8
    p.on_new_batch("t", c, other)  # another thread already moved on from `other`
    assert p.partition("t", None, None, None, b"v", c) == current


def test_sticky_choices_are_available_partitions_and_spread_over_them():
    c = cluster(5, leaderless=(1, 3))
    p = UniformStickyPartitioner(random.Random(11))
    seen = Counter()
    current = p.partition("t", b"ignored", b"ignored", None, b"v", c)
    for _ in range(300):
        seen[current] += 1
        p.on_new_batch("t", c, current)
        current = p.partition("t", b"ignored", b"ignored", None, b"v", c)
    assert set(seen) == {0, 2, 4}


def test_round_robin_cycles_over_available_partitions_ignoring_keys():
    c = cluster(4, leaderless=(2,))
    p = RoundRobinPartitioner()
    got = [p.partition("t", b"same", b"same", None, b"v", c) for _ in range(9)]
    assert got == [0, 1, 3, 0, 1, 3, 0, 1, 3]


def test_round_robin_uses_all_partitions_when_none_has_a_leader():
    c = cluster(3, leaderless=(0, 1, 2))
    p = RoundRobinPartitioner()
    assert [p.partition("t", None, None, None, b"v", c) for _ in range(4)] == [0, 1, 2, 0]


def test_partitioners_resolve_from_java_names_short_names_classes_and_callables():
    assert isinstance(resolve_partitioner("org.apache.kafka.clients.producer.internals.DefaultPartitioner"),
                      DefaultPartitioner)
    assert isinstance(resolve_partitioner("org.apache.kafka.clients.producer.RoundRobinPartitioner"),
                      RoundRobinPartitioner)
    assert isinstance(resolve_partitioner("round_robin"), RoundRobinPartitioner)
    assert isinstance(resolve_partitioner(UniformStickyPartitioner), UniformStickyPartitioner)
    chosen = resolve_partitioner(lambda key, all_parts, available: all_parts[-1])
    assert isinstance(chosen, CallablePartitioner)
    assert chosen.partition("t", b"k", b"k", None, b"v", cluster(3)) == 2


def test_a_user_callable_sees_all_and_available_partition_ids():
    seen = []

    def pick(key_bytes, all_partitions, available):
        seen.append((key_bytes, all_partitions, available))
        return available[0]
    p = resolve_partitioner(pick)
    assert p.partition("t", "k", b"k", None, b"v", cluster(4, leaderless=(0,))) == 1
    assert seen == [(b"k", [0, 1, 2, 3], [1, 2, 3])]


def test_an_unknown_partitioner_name_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError, match="partitioner.class"):
        resolve_partitioner("no.such.module.Partitioner")
