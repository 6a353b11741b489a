"""Replaying one __consumer_offsets partition when this broker becomes its leader.

The log is read from its start to its end in slices, with a reactor turn between
slices, so a partition holding years of commits never stalls the broker's requests
for long. The last record per key wins; a tombstone deletes what came before it.
The whole log, not only up to the high watermark, is replayed: a new leader's log is
the partition's truth, as in Kafka.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from kafkalike.common.topics import OFFSETS_TOPIC
from kafkalike.coordinator.group import CommitRecord
from kafkalike.coordinator.records import (GroupKey, GroupRecord, OffsetKey, UnknownRecordKey,
                                           decode_group_value, decode_key, decode_offset_value)
from kafkalike.records import ControlRecordType, InvalidRecordError, decode_batches, parse_end_txn_marker

log = logging.getLogger("kafka.coordinator.group.GroupMetadataManager")

TopicPartition = tuple[str, int]
SLICE_BYTES = 256 * 1024


@dataclass
class LoadedPartition:
    """What a partition's log says: the live groups and every group's offsets."""

    groups: dict[str, GroupRecord] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, CommitRecord]] = field(default_factory=dict)
    # producer id -> group -> offsets of a transaction whose marker is not in the log (yet)
    pending_txn: dict[int, dict[str, dict[TopicPartition, CommitRecord]]] = field(default_factory=dict)
    records: int = 0

    def apply_txn(self, producer_id: int, key, value, batch_offset: int) -> None:
        """A TxnOffsetCommit record: held back until its transaction's marker."""
        self.records += 1
        if isinstance(key, OffsetKey):
            offset = decode_offset_value(value)
            group = self.pending_txn.setdefault(producer_id, {}).setdefault(key.group, {})
            if offset is None:
                group.pop((key.topic, key.partition), None)
            else:
                group[(key.topic, key.partition)] = CommitRecord(offset, batch_offset)

    def apply_marker(self, producer_id: int, committed: bool) -> None:
        """A commit makes the transaction's offsets the groups' unless newer ones are there."""
        pending = self.pending_txn.pop(producer_id, {})
        if not committed:
            return
        for group_id, offsets in pending.items():
            loaded = self.offsets.setdefault(group_id, {})
            for tp, record in offsets.items():
                current = loaded.get(tp)
                if current is None or current.log_offset is None or current.log_offset < record.log_offset:
                    loaded[tp] = record

    def pending_for(self, group_id: str) -> dict[int, dict[TopicPartition, CommitRecord]]:
        return {pid: groups[group_id] for pid, groups in self.pending_txn.items() if groups.get(group_id)}

    def apply(self, key, value, batch_offset: int) -> None:
        self.records += 1
        if isinstance(key, OffsetKey):
            tp = (key.topic, key.partition)
            offset = decode_offset_value(value)
            if offset is None:
                group_offsets = self.offsets.get(key.group)
                if group_offsets is not None:
                    group_offsets.pop(tp, None)
                    if not group_offsets:
                        del self.offsets[key.group]
            else:
                self.offsets.setdefault(key.group, {})[tp] = CommitRecord(offset, batch_offset)
        elif isinstance(key, GroupKey):
            record = decode_group_value(value)
            if record is None:
                self.groups.pop(key.group, None)
            else:
                self.groups[key.group] = record


class PartitionLoad:
    """One load in progress; `log_of()` returns the partition's log while we still lead it."""

    topic = OFFSETS_TOPIC

    def __init__(self, partition: int, log_of: Callable[[], object | None], reactor,
                 on_done: Callable[["PartitionLoad"], None], slice_bytes: int = SLICE_BYTES):
        self.partition = partition
        self._log_of = log_of
        self._reactor = reactor
        self._on_done = on_done
        self._slice_bytes = max(1, slice_bytes)
        self.result = self.new_result()
        self.position = -1
        self.slices = 0
        self.cancelled = False
        self.failed: Exception | None = None
        self._call = None

    def new_result(self):
        return LoadedPartition()

    def start(self) -> None:
        self._call = self._reactor.callLater(0, self._step)

    def cancel(self) -> None:
        self.cancelled = True
        if self._call is not None and self._call.active():
            self._call.cancel()

    def _step(self) -> None:
        self._call = None
        if self.cancelled:
            return
        try:
            more = self._read_slice()
        except Exception as exc:   # a corrupt log: Kafka logs it and serves what it has
            log.exception("Error loading %s-%d", self.topic, self.partition)
            self.failed = exc
            more = False
        if more:
            self._call = self._reactor.callLater(0, self._step)
        else:
            self._on_done(self)

    def _read_slice(self) -> bool:
        """Replay one slice; False when the end is reached (or the log went away)."""
        log_ = self._log_of()
        if log_ is None:
            self.cancelled = True
            return False
        end = log_.log_end_offset
        if self.position < log_.log_start_offset:
            self.position = log_.log_start_offset
        if self.position >= end:
            return False
        self.slices += 1
        data = log_.read(self.position, self._slice_bytes, max_offset=end, min_one_batch=True)
        if not data:
            return False
        for batch in decode_batches(data):
            if batch.next_offset <= self.position:
                continue
            self.replay_batch(batch)
            self.position = batch.next_offset
        return self.position < end

    def replay_batch(self, batch) -> None:
        """One batch of __consumer_offsets into the result (the transaction loader has its own)."""
        if batch.is_control:
            for record in batch.records():
                try:
                    marker = parse_end_txn_marker(record)
                except InvalidRecordError:
                    continue
                self.result.apply_marker(batch.producer_id, marker.control_type == ControlRecordType.COMMIT)
            return
        for record in batch.records():
            if record.key is None:
                raise ValueError("Group metadata/offset entry key should not be null")
            try:
                key = decode_key(record.key)
            except UnknownRecordKey as exc:
                log.warning("Skipping record at offset %d of __consumer_offsets-%d: %s",
                            record.offset, self.partition, exc)
                continue
            if batch.is_transactional:
                self.result.apply_txn(batch.producer_id, key, record.value, batch.base_offset)
            else:
                self.result.apply(key, record.value, batch.base_offset)
