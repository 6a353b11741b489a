"""The aborted-transaction index: a `.txnindex` file next to each segment, as Kafka 2.8 writes it.

A read_committed consumer must learn which records of a fetch belong to aborted
transactions without the broker decoding them. So when an ABORT marker lands in a
segment, one 34-byte entry is appended to that segment's index (all big-endian):
version int16 (0), producer id int64, first offset int64 (the transaction's first
record), last offset int64 (the marker) and last stable offset int64 (the LSO right
after the marker: where the next still-open transaction begins, else the marker + 1).
A fetch collects the entries whose range overlaps what it returns, searching later
segments until an entry's last stable offset passes the fetch's upper bound: every
transaction that could overlap is then known, since its first offset is below
that LSO.

The file is created at the first abort, so most segments have none (as in Kafka). The
entries are also kept in memory: they are few (one per aborted transaction) and a
fetch reads them on the hot path. Entries are appended in marker order; recovery and
truncation cut the index back to a marker offset and replay the log from there.
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple

from kafkalike.storage.errors import CorruptIndexError

VERSION = 0
ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    complete: bool   # an entry's LSO reached the upper bound: later segments cannot add more


class TransactionIndex:
    """One segment's `.txnindex`; not thread-safe (the Log's lock guards it)."""

    def __init__(self, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd = -1
        self.entries: list[AbortedTxn] = []
        if os.path.exists(path):
            self._open()
            self.entries = self._read_all()

    def _open(self) -> None:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)

    def _read_all(self) -> list[AbortedTxn]:
        size = os.fstat(self._fd).st_size
        data = os.pread(self._fd, size, 0)
        entries = []
        whole = size - size % ENTRY_SIZE
        for pos in range(0, whole, ENTRY_SIZE):
            version, pid, first, last, lso = ENTRY.unpack_from(data, pos)
            if version != VERSION:
                raise CorruptIndexError(f"Unexpected aborted transaction version {version} in transaction "
                                        f"index {self.path}, current version is {VERSION}")
            entries.append(AbortedTxn(pid, first, last, lso))
        if whole != size:  # a torn last entry: recovery replays the marker it came from
            os.ftruncate(self._fd, whole)
        return entries

    @property
    def last_offset(self) -> int | None:
        return self.entries[-1].last_offset if self.entries else None

    def append(self, txn: AbortedTxn) -> None:
        last = self.last_offset
        if last is not None and txn.last_offset < last:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{txn.last_offset} is not greater than current last offset {last} of index {self.path}")
        if self._fd < 0:
            self._open()
        os.write(self._fd, ENTRY.pack(VERSION, *txn))
        self.entries.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of markers at or after `offset` (their batches are being cut or replayed)."""
        keep = len(self.entries)
        while keep and self.entries[keep - 1].last_offset >= offset:
            keep -= 1
        if keep == len(self.entries):
            return
        del self.entries[keep:]
        if self._fd >= 0:
            os.ftruncate(self._fd, keep * ENTRY_SIZE)

    def reset(self) -> None:
        self.truncate_to(-1)

    def collect(self, fetch_offset: int, upper_bound: int) -> TxnSearchResult:
        """Aborted transactions overlapping [fetch_offset, upper_bound) (Kafka's collectAbortedTxns)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return TxnSearchResult(found, True)
        return TxnSearchResult(found, False)

    # ---------------------------------------------------------------- files
    def dup_fd(self) -> int | None:
        return os.dup(self._fd) if self._fd >= 0 else None

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def rename(self, path: str) -> None:
        if self._fd >= 0 or os.path.exists(self.path):
            try:
                os.rename(self.path, path)
            except FileNotFoundError:
                pass
        self.path = path

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
