"""JSON bytes laid out the way Kafka's Jackson writes them, key order included.

Kafka builds each znode value as a Scala or Java map and lets Jackson serialise it
compactly, so the key order is the map's iteration order: insertion order for Scala's
small immutable maps (up to four keys), hash order for everything else. We reproduce
those orders so that `zookeeper-shell get` on our znodes shows the same bytes a Kafka
2.8 broker (the Scala 2.13 build, on Java 9 or later) would have written. Readers never
depend on key order; byte-identical values only make comparisons with Kafka trivial.

The Scala orders were checked against znodes that real Kafka brokers wrote
(/brokers/ids/N, /brokers/topics/T, the partition state znode); the Java orders
(HashMap, Properties) against a JVM's own iteration order for random key sets,
including tables that grew. Java 8, where Properties was a Hashtable, orders
/config entries differently; we follow Java 9 and later.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

_MASK = 0xFFFFFFFF


class ZNodeDecodeError(ValueError):
    """A znode value that is not what Kafka would have written there."""


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON, as Jackson writes it (no spaces, non-ASCII left as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_json(data: bytes | None) -> Any:
    """Parse a znode value; None for a null or empty znode, ZNodeDecodeError if not JSON."""
    if not data:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ZNodeDecodeError(f"znode value is not JSON: {data[:200]!r}") from error


def decode_json_object(data: bytes | None, what: str) -> dict[str, Any]:
    """Parse a znode value that must be a JSON object."""
    value = decode_json(data)
    if not isinstance(value, dict):
        raise ZNodeDecodeError(f"{what}: expected a JSON object, got {data[:200] if data else data!r}")
    return value


def _int32(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """String.hashCode(): the hash every JVM map below starts from (UTF-16 code units)."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK
    return _int32(h)


def _spread(h: int) -> int:
    """java.util.HashMap / scala.collection.mutable.HashMap: xor the high half into the low."""
    return _int32(h ^ ((h & _MASK) >> 16))


def _scala_improve(h: int) -> int:
    """scala.collection.Hashing.improve, used by the immutable HashMap (CHAMP) trie."""
    h = _int32(h + ~_int32(h << 9))
    h = _int32(h ^ ((h & _MASK) >> 14))
    h = _int32(h + _int32(h << 4))
    return _int32(h ^ ((h & _MASK) >> 10))


def _table_size_for(capacity: int) -> int:
    """scala.collection.mutable.HashMap.tableSizeFor."""
    return min((1 << (max(capacity - 1, 4).bit_length() - 1)) * 2, 1 << 30)


def scala_mutable_map_order(keys: Sequence[str], built_from: int | None = None) -> list[str]:
    """Iteration order of a Scala 2.13 mutable.HashMap holding keys (inserted in order).

    built_from is the number of pairs passed to `mutable.Map(k -> v, ...)`, which sizes
    the table up front; None means the map started empty (16 buckets). Buckets are
    walked in index order and each keeps its entries sorted by hash.
    """
    size = _table_size_for(int((built_from + 1) / 0.75)) if built_from else 16
    count = 0
    for _ in keys:
        if count + 1 >= int(size * 0.75):
            size *= 2
        count += 1
    buckets: dict[int, list[tuple[int, int, str]]] = {}
    for position, key in enumerate(keys):
        h = _spread(java_string_hash(key))
        buckets.setdefault(h & (size - 1), []).append((h, position, key))
    return [key for index in sorted(buckets) for _, _, key in sorted(buckets[index])]


def scala_immutable_map_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of `Map(k1 -> v1, ...)` in Scala 2.13.

    Up to four keys the map is a Map1..Map4 that keeps insertion order; beyond that it is
    a CHAMP trie walked depth first, each node's own entries before its sub-nodes.
    """
    if len(keys) <= 4:
        return list(keys)

    def walk(entries: list[tuple[int, int, str]], shift: int) -> list[str]:
        if shift >= 32:  # identical 32-bit hashes: a collision node in insertion order
            return [key for _, _, key in sorted(entries, key=lambda e: e[1])]
        slots: dict[int, list[tuple[int, int, str]]] = {}
        for entry in entries:
            slots.setdefault(((entry[0] & _MASK) >> shift) & 31, []).append(entry)
        own = [slot[0][2] for _, slot in sorted(slots.items()) if len(slot) == 1]
        below = [key for _, slot in sorted(slots.items()) if len(slot) > 1 for key in walk(slot, shift + 5)]
        return own + below

    return walk([(_scala_improve(java_string_hash(k)), i, k) for i, k in enumerate(keys)], 0)


def java_hash_map_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a java.util.HashMap filled in order (no treeified bins)."""
    size = 16
    for count in range(1, len(keys) + 1):
        if count > int(size * 0.75):
            size *= 2
    buckets: dict[int, list[str]] = {}
    for key in keys:
        buckets.setdefault(_spread(java_string_hash(key)) & (size - 1), []).append(key)
    return [key for index in sorted(buckets) for key in buckets[index]]


def java_properties_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of java.util.Properties (a ConcurrentHashMap since Java 9).

    Bins append at the tail; on a resize each bin splits in two, the trailing run that
    lands in one half keeps its order and the nodes before it are prepended, reversed.
    """
    size = 16
    table: list[list[tuple[int, str]]] = [[] for _ in range(size)]
    for count, key in enumerate(keys, start=1):
        h = _spread(java_string_hash(key)) & 0x7FFFFFFF
        table[h & (size - 1)].append((h, key))
        if count >= size - (size >> 2):
            table = _split_bins(table, size)
            size *= 2
    return [key for bin_ in table for _, key in bin_]


def _split_bins(table: list[list[tuple[int, str]]], size: int) -> list[list[tuple[int, str]]]:
    grown: list[list[tuple[int, str]]] = [[] for _ in range(size * 2)]
    for index, bin_ in enumerate(table):
        if not bin_:
            continue
        last_run = len(bin_) - 1
        while last_run > 0 and (bin_[last_run - 1][0] & size) == (bin_[-1][0] & size):
            last_run -= 1
        low: list[tuple[int, str]] = []
        high: list[tuple[int, str]] = []
        (high if bin_[-1][0] & size else low).extend(bin_[last_run:])
        for node in bin_[:last_run]:
            (high if node[0] & size else low).insert(0, node)
        grown[index], grown[index + size] = low, high
    return grown


def ordered(mapping: Mapping[str, Any], order: Iterable[str]) -> dict[str, Any]:
    """A dict with mapping's items in the given key order (json.dumps keeps dict order)."""
    return {key: mapping[key] for key in order}
