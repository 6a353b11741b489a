"""Producer-state snapshots: `<offset>.snapshot` files in Kafka 2.8's format.

A snapshot holds the producer state as of `offset` (the log end offset when it was
taken), so opening a log replays only the batches after it instead of the whole log.
Layout, all big-endian: version int16 (1), crc uint32 (CRC-32C of everything after
it), int32 count, then per producer: producer id int64, epoch int16, last sequence
int32, last offset int64, offset delta int32 (last offset minus the batch's first),
timestamp int64, coordinator epoch int32 (-1 before any marker), first offset of the
producer's open transaction int64 (-1 when none), so a reload knows which transactions
are still open and where the last stable offset stands.

Only each producer's last batch is stored, as in Kafka: after a restart a retry of
that batch is still recognised, older in-flight retries are not.
"""
from __future__ import annotations

import os
import struct

from crc32c import crc32c

from kafkalike.storage import layout
from kafkalike.storage.errors import CorruptCheckpointError
from kafkalike.storage.producer_state import INT_MAX, BatchMetadata, ProducerStateEntry, ProducerStateManager

VERSION = 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")


def snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{layout.SNAPSHOT_SUFFIX}")


def list_snapshots(directory: str) -> list[tuple[int, str]]:
    """(offset, path) of every snapshot file in the partition dir, oldest first."""
    found = []
    for name in os.listdir(directory):
        stem, dot, suffix = name.partition(".")
        if dot and "." + suffix == layout.SNAPSHOT_SUFFIX and stem.isdigit():
            found.append((int(stem), os.path.join(directory, name)))
    return sorted(found)


def encode(manager: ProducerStateManager) -> bytes:
    """Every producer, as Kafka writes them: one without data batches (only markers so far)
    has last sequence and last offset -1, and its open transaction's first offset or -1."""
    entries = list(manager.producers.values())
    packed = []
    for e in entries:
        last = e.batches[-1] if e.batches else None
        packed.append(_ENTRY.pack(
            e.producer_id, e.epoch, last.last_seq if last else -1, last.last_offset if last else -1,
            last.last_offset - last.first_offset if last else 0, last.timestamp if last else e.last_timestamp,
            e.coordinator_epoch, e.current_txn_first_offset))
    body = _COUNT.pack(len(entries)) + b"".join(packed)
    return _HEAD.pack(VERSION, crc32c(body)) + body


def decode(data: bytes) -> dict[int, ProducerStateEntry]:
    """The entries of a snapshot; CorruptCheckpointError for a bad version, size or CRC."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise CorruptCheckpointError("producer snapshot too short")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptCheckpointError(f"producer snapshot has unknown version {version}")
    body = memoryview(data)[_HEAD.size:]
    if crc32c(body) != crc:
        raise CorruptCheckpointError("producer snapshot CRC mismatch")
    count = _COUNT.unpack_from(body, 0)[0]
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise CorruptCheckpointError(f"producer snapshot size does not match its {count} entries")
    entries: dict[int, ProducerStateEntry] = {}
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn_first = _ENTRY.unpack_from(
            body, _COUNT.size + i * _ENTRY.size)
        entry = ProducerStateEntry(pid, epoch, last_timestamp=ts, coordinator_epoch=coordinator_epoch,
                                   current_txn_first_offset=txn_first if txn_first >= 0 else -1)
        if last_offset >= 0:
            first_seq = last_seq - delta if last_seq >= delta else INT_MAX - (delta - last_seq) + 1
            entry.batches.append(BatchMetadata(first_seq, last_seq, last_offset - delta, last_offset, ts))
        entries[pid] = entry
    return entries


def write_snapshot(directory: str, offset: int, manager: ProducerStateManager, fsync: bool = False) -> str:
    """Write atomically (temp file, rename): a torn snapshot must never be loaded."""
    path = snapshot_path(directory, offset)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(encode(manager))
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def delete_snapshots(directory: str, *, below: int | None = None, above: int | None = None) -> None:
    for offset, path in list_snapshots(directory):
        if (below is not None and offset < below) or (above is not None and offset > above):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
