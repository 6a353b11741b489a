"""Partitioners: where a record goes, bit-exact with the Java client.

A keyed record must land where a Java (or librdkafka murmur2_random) producer would put
it, or keyed ordering and compaction break the moment two client languages share a
topic. So the keyed rule is Java's: toPositive(murmur2(key)) % number of partitions,
over all partitions whether or not they have a leader.

Records without a key follow KIP-480 (Java 2.4 to 3.2): stick to one random available
partition and move to another only when a new batch is created for it, which keeps
batches full. The producer signals that moment through `on_new_batch`.

A user partitioner (partitioner.class) may be:
- an object or class with Java's method `partition(topic, key, key_bytes, value,
  value_bytes, cluster) -> int` (and optionally `on_new_batch(topic, cluster,
  prev_partition)` and `close()`), where cluster is a metadata.Cluster;
- a plain callable `fn(key_bytes, all_partitions, available_partitions) -> int` with
  lists of partition ids, the convention kafka-python users know.
"""
from __future__ import annotations

import random
import struct
import threading
from typing import Any, Callable

from kafkalike.client.errors import ConfigError
from kafkalike.client.metadata import Cluster

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF
_BLOCK = struct.Struct("<I")  # murmur2 reads the key in little-endian 4-byte blocks


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit MurmurHash2 (Utils.murmur2) as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    m = _M
    end4 = length & ~3
    rest = length & 3
    if end4:
        for (k,) in _BLOCK.iter_unpack(data[:end4] if rest else data):
            k = (k * m) & _MASK
            k ^= k >> 24
            k = (k * m) & _MASK
            h = ((h * m) & _MASK) ^ k
    if rest == 3:
        h ^= data[end4 + 2] << 16
    if rest >= 2:
        h ^= data[end4 + 1] << 8
    if rest >= 1:
        h ^= data[end4]
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Java's Utils.toPositive: clear the sign bit (not abs(), which differs for MIN_VALUE)."""
    return number & 0x7FFFFFFF


def keyed_partition(key_bytes: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key_bytes)) % num_partitions


class StickyPartitionCache:
    """Per topic, the partition records without a key currently go to (KIP-480)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._current: dict[str, int] = {}
        self._rng = rng or random.Random()
        self._lock = threading.Lock()

    def partition(self, topic: str, cluster: Cluster) -> int:
        part = self._current.get(topic)
        if part is None:
            return self.next_partition(topic, cluster, -1)
        return part

    def next_partition(self, topic: str, cluster: Cluster, prev_partition: int) -> int:
        """Move on from `prev_partition`, unless another thread already did."""
        with self._lock:
            old = self._current.get(topic)
            if old is not None and old != prev_partition:
                return old
            view = cluster.topics.get(topic)
            available = view.available_ids if view else ()
            if not available:
                count = len(view.partitions) if view else 0
                if not count:
                    raise ValueError(f"topic {topic} has no partitions in the metadata")
                new = self._rng.randrange(count)
            elif len(available) == 1:
                new = available[0]
            else:
                new = old
                while new is None or new == old:
                    new = available[self._rng.randrange(len(available))]
            self._current[topic] = new
            return new


class DefaultPartitioner:
    """Java's DefaultPartitioner: murmur2 of the key, sticky without one."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky = StickyPartitionCache(rng)

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None,
                  cluster: Cluster) -> int:
        if key_bytes is None:
            return self._sticky.partition(topic, cluster)
        return to_positive(murmur2(key_bytes)) % len(cluster.topics[topic].partitions)

    def on_new_batch(self, topic: str, cluster: Cluster, prev_partition: int) -> None:
        self._sticky.next_partition(topic, cluster, prev_partition)

    def close(self) -> None:
        pass


class UniformStickyPartitioner:
    """Java's UniformStickyPartitioner: sticky for every record, keys ignored."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky = StickyPartitionCache(rng)

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None,
                  cluster: Cluster) -> int:
        return self._sticky.partition(topic, cluster)

    def on_new_batch(self, topic: str, cluster: Cluster, prev_partition: int) -> None:
        self._sticky.next_partition(topic, cluster, prev_partition)

    def close(self) -> None:
        pass


class RoundRobinPartitioner:
    """Java's RoundRobinPartitioner (KIP-369): each record to the next available partition, keys ignored.

    Unlike Java 2.8 it has no on_new_batch, so the producer never asks it twice for one
    record (KAFKA-9965, which made Java's skip every other partition).
    """

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._lock = threading.Lock()

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None,
                  cluster: Cluster) -> int:
        with self._lock:
            n = self._counters.get(topic, 0)
            self._counters[topic] = n + 1
        view = cluster.topics[topic]
        if view.available_ids:
            return view.available_ids[to_positive(n) % len(view.available_ids)]
        return to_positive(n) % len(view.partitions)

    def close(self) -> None:
        pass


class CallablePartitioner:
    """Adapts `fn(key_bytes, all_partitions, available_partitions) -> int`."""

    def __init__(self, fn: Callable[[bytes | None, list[int], list[int]], int]) -> None:
        self.fn = fn

    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any, value_bytes: bytes | None,
                  cluster: Cluster) -> int:
        view = cluster.topics[topic]
        return self.fn(key_bytes, [p.partition for p in view.partitions], list(view.available_ids))

    def close(self) -> None:
        pass


_NAMED = {
    "default": DefaultPartitioner,
    "murmur2": DefaultPartitioner,
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": DefaultPartitioner,
    "uniform_sticky": UniformStickyPartitioner,
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": UniformStickyPartitioner,
    "round_robin": RoundRobinPartitioner,
    "roundrobin": RoundRobinPartitioner,
    "org.apache.kafka.clients.producer.RoundRobinPartitioner": RoundRobinPartitioner,
}


def resolve_partitioner(spec: Any, configs: dict[str, Any] | None = None) -> Any:
    """A partitioner.class setting (name, Java class name, dotted path, class, object or callable)."""
    if isinstance(spec, str):
        found = _NAMED.get(spec) or _NAMED.get(spec.lower())
        if found is not None:
            return found()
        from kafkalike.client.serializers import load_object
        try:
            spec = load_object(spec)
        except (ImportError, AttributeError) as error:
            raise ConfigError(f"Invalid value {spec} for configuration partitioner.class: Class {spec} could "
                              f"not be found ({error})") from None
    if isinstance(spec, type):
        spec = spec()
        configure = getattr(spec, "configure", None)
        if callable(configure):
            configure(dict(configs or {}))
    if callable(getattr(spec, "partition", None)):
        return spec
    if callable(spec):
        return CallablePartitioner(spec)
    raise ConfigError(f"Invalid value {spec!r} for configuration partitioner.class: expected a partitioner "
                      "name, a class or object with partition(...), or a callable")


__all__ = ["CallablePartitioner", "DefaultPartitioner", "RoundRobinPartitioner", "StickyPartitionCache",
           "UniformStickyPartitioner", "keyed_partition", "murmur2", "resolve_partitioner", "to_positive"]
