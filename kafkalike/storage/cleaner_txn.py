"""What the log cleaner knows of transactions while it rewrites segments (Kafka 2.8's
CleanedTransactionMetadata).

The cleaner walks batches in offset order. The aborted transactions of the range (from
the txn indexes) are fed in by first offset; once the walk reaches a transaction's first
offset, that producer's transactional batches are aborted data and are dropped. Its
ABORT marker is kept, and its index entry written to the cleaned segment's index, for
as long as batches of the transaction were still seen: a consumer must go on being told
to skip what a later pass has not yet removed. A marker whose transaction left nothing
(no batch seen), a COMMIT marker whose transaction's batches are all gone, and a control
batch already emptied may be dropped, once the segment is past the delete horizon (the
cleaner's tombstone rule, which keeps markers around for consumers that are behind).
"""
from __future__ import annotations

import heapq

from kafkalike.records.control import ControlRecordType, parse_control_key
from kafkalike.records.header import InvalidRecordError
from kafkalike.storage.transaction_index import AbortedTxn, TransactionIndex


class CleanedTransactions:
    """Transaction state of one cleaning pass; `cleaned_index` is the current output segment's."""

    def __init__(self) -> None:
        self._aborted: list[tuple[int, int, AbortedTxn]] = []   # heap by first offset
        self._seq = 0
        self._ongoing_aborted: dict[int, list] = {}             # producer id -> [txn, saw a batch]
        self._ongoing_committed: set[int] = set()
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted(self, txns) -> None:
        for txn in txns:
            heapq.heappush(self._aborted, (txn.first_offset, self._seq, txn))
            self._seq += 1

    def _reach(self, offset: int) -> None:
        aborted = self._aborted
        while aborted and aborted[0][0] <= offset:
            txn = heapq.heappop(aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, [txn, False])

    def on_batch(self, batch) -> bool:
        """A data batch was read; True when it belongs to an aborted transaction (drop it)."""
        header = batch.header
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(header.producer_id)
        if ongoing is not None:
            ongoing[1] = True
            return True
        self._ongoing_committed.add(header.producer_id)
        return False

    def on_control_batch(self, batch) -> bool:
        """A control batch was read; True when it may be dropped (its transaction left nothing)."""
        header = batch.header
        self._reach(header.last_offset)
        records = batch.records()
        if not records:
            return True                      # emptied by an earlier pass
        try:
            control_type = parse_control_key(records[0].key).type
        except InvalidRecordError:
            return False
        pid = header.producer_id
        if control_type == ControlRecordType.ABORT:
            ongoing = self._ongoing_aborted.pop(pid, None)
            if ongoing is not None and ongoing[1]:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(ongoing[0])
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False
