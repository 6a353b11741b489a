"""Replica assignment for new topics and partitions, as Kafka's AdminUtils does it.

Kafka's scheme: the first replica of each partition walks round the sorted broker list
from a random start, and followers are placed at a shift that grows every full lap,
so leaders spread evenly and followers of one broker's leaders do not all land on the
same other broker. With broker.rack set, the broker list is first interleaved by rack
and followers skip racks (and brokers) that already hold a replica, while any remain.
"""
from __future__ import annotations

import random


class InvalidReplicationFactor(ValueError):
    """More replicas asked for than there are live brokers (or fewer than one)."""


class InvalidPartitions(ValueError):
    pass


def assign_replicas(brokers: list[int], num_partitions: int, replication_factor: int,
                    racks: dict[int, str] | None = None, *, start_index: int = -1,
                    start_partition: int = -1, rng: random.Random | None = None) -> dict[int, list[int]]:
    """Partition id -> replica list. `start_index` fixes the random start (tests)."""
    if num_partitions <= 0:
        raise InvalidPartitions("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactor(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    rng = rng or random.Random()
    racks = racks or {}
    if not racks:
        return _rack_unaware(sorted(brokers), num_partitions, replication_factor,
                             start_index, start_partition, rng)
    if any(b not in racks for b in brokers):
        raise ValueError("Not all brokers have rack information for replica rack aware assignment.")
    return _rack_aware(brokers, racks, num_partitions, replication_factor,
                       start_index, start_partition, rng)


def _shifted(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_unaware(brokers, num_partitions, rf, start_index, start_partition, rng):
    n = len(brokers)
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    pid = max(0, start_partition)
    out = {}
    for _ in range(num_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        out[pid] = [brokers[first]] + [brokers[_shifted(first, shift, j, n)] for j in range(rf - 1)]
        pid += 1
    return out


def rack_alternated(brokers: list[int], racks: dict[int, str]) -> list[int]:
    """Brokers interleaved by rack: r1b1, r2b1, r3b1, r1b2, ... (racks sorted)."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers):
        by_rack.setdefault(racks[b], []).append(b)
    order = sorted(by_rack)
    out = []
    i = 0
    while len(out) < len(brokers):
        for r in order:
            if i < len(by_rack[r]):
                out.append(by_rack[r][i])
        i += 1
    return out


def _rack_aware(brokers, racks, num_partitions, rf, start_index, start_partition, rng):
    arranged = rack_alternated(brokers, racks)
    n = len(arranged)
    num_racks = len(set(racks[b] for b in brokers))
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    pid = max(0, start_partition)
    out = {}
    for _ in range(num_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        leader = arranged[first]
        replicas = [leader]
        used_racks = {racks[leader]}
        used_brokers = {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                b = arranged[_shifted(first, shift, k, n)]
                k += 1
                rack_ok = racks[b] not in used_racks or len(used_racks) == num_racks
                broker_ok = b not in used_brokers or len(used_brokers) == n
                if rack_ok and broker_ok:
                    replicas.append(b)
                    used_racks.add(racks[b])
                    used_brokers.add(b)
                    break
        out[pid] = replicas
        pid += 1
    return out
