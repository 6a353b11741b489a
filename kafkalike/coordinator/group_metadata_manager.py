"""The groups this broker coordinates, and their records in __consumer_offsets.

It owns the cache of groups, knows which partitions of __consumer_offsets are loaded
(or loading), and writes group metadata, offset commits and tombstones through the
ReplicaManager like any other append. Commits and group records wait for acks=all
before anyone is told they happened; tombstones do not wait (a lost tombstone is
written again by the next cleanup, as in Kafka).
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable

from twisted.internet import defer

from kafkalike.coordinator.config import OFFSETS_TOPIC, CoordinatorConfig
from kafkalike.coordinator.group import DEAD, EMPTY, CommitRecord, GroupMetadata, load_group
from kafkalike.coordinator.loader import PartitionLoad
from kafkalike.coordinator.records import (GroupRecord, MemberRecord, OffsetAndMetadata, group_key,
                                           group_value, offset_key, offset_value)
from kafkalike.coordinator.results import INVALID_OFFSET, FetchedOffset
from kafkalike.protocol.errors import ErrorCode
from kafkalike.records import encode_batch
from kafkalike.storage.validation import AppendOrigin
from kafkalike.zkdata.kafka_json import java_string_hash

log = logging.getLogger("kafka.coordinator.group.GroupMetadataManager")

TopicPartition = tuple[str, int]

_GROUP_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}
_OFFSET_WRITE_ERRORS = {
    **_GROUP_WRITE_ERRORS,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


def partition_for(group_id: str, num_partitions: int) -> int:
    """abs(String.hashCode) mod the partition count, with Kafka's abs(MIN_VALUE) = 0."""
    h = java_string_hash(group_id)
    return (0 if h == -2**31 else abs(h)) % num_partitions


def java_string_length(text: str) -> int:
    """String.length(): UTF-16 code units, which is what offset.metadata.max.bytes counts."""
    return len(text.encode("utf-16-le")) // 2


class GroupMetadataManager:
    def __init__(self, broker_id: int, config: CoordinatorConfig, replica_manager, reactor,
                 now_ms: Callable[[], int]):
        self.broker_id = broker_id
        self.config = config
        self.replica_manager = replica_manager
        self.reactor = reactor
        self.now_ms = now_ms
        self.groups: dict[str, GroupMetadata] = {}
        # producer id -> groups holding its uncompleted transactional offsets
        self.open_groups_for_producer: dict[int, set[str]] = {}
        self.owned_partitions: set[int] = set()
        self.loads: dict[int, PartitionLoad] = {}
        self.epochs: dict[int, int] = {}
        self.load_slice_bytes = min(config.load_buffer_size, 256 * 1024)

    # -- where groups live --------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_partitions)

    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.loads

    def is_loading(self) -> bool:
        return bool(self.loads)

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        """The cached group for its id: the given one unless one is already there."""
        return self.groups.setdefault(group.group_id, group)

    def get_or_maybe_create_group(self, group_id: str, create: bool) -> GroupMetadata | None:
        group = self.groups.get(group_id)
        if group is None and create:
            group = self.add_group(GroupMetadata(group_id, EMPTY, self.now_ms))
        return group

    def group_not_exists(self, group_id: str) -> bool:
        if not self.is_group_local(group_id):
            return False
        group = self.groups.get(group_id)
        return group is None or group.is_(DEAD)

    def current_groups(self) -> list[GroupMetadata]:
        return list(self.groups.values())

    # -- appends ------------------------------------------------------------------------

    def _leader_partition(self, partition: int):
        part = self.replica_manager.partitions.get((OFFSETS_TOPIC, partition))
        return part if part is not None and part.is_leader else None

    def _append(self, partition: int, records: list[tuple[bytes, bytes | None]], acks: int,
                callback: Callable[[ErrorCode, int], None] | None,
                producer: tuple[int, int] | None = None) -> None:
        """Append one batch; callback(error, base offset) once it is as durable as `acks` asks.
        `producer` (id, epoch) makes it a transactional batch of that producer's transaction."""
        tp = (OFFSETS_TOPIC, partition)
        if producer is None:
            batch = encode_batch(records, compression=self.config.offsets_topic_compression,
                                 base_timestamp=self.now_ms())
        else:
            # Kafka writes these with sequence 0 and appends them as the coordinator, so
            # the producer-state checks meant for clients do not apply.
            batch = encode_batch(records, compression=self.config.offsets_topic_compression,
                                 base_timestamp=self.now_ms(), producer_id=producer[0],
                                 producer_epoch=producer[1], base_sequence=0, is_transactional=True)
        result = self.replica_manager.append_records({tp: batch}, acks, self.config.commit_timeout_ms,
                                                     lambda topic: True, origin=AppendOrigin.COORDINATOR)

        def done(results) -> None:
            r = results[tp]
            if callback is not None:
                callback(r.error, r.base_offset)
            elif r.error != ErrorCode.NONE:
                log.warning("Failed to append %d tombstones to %s-%d: %s", len(records), *tp, r.error.name)

        def failed(failure) -> None:
            log.error("Append to %s-%d failed: %s", *tp, failure.getTraceback())
            if callback is not None:
                callback(ErrorCode.UNKNOWN_SERVER_ERROR, -1)

        if isinstance(result, defer.Deferred):
            result.addCallbacks(done, failed)
        else:
            done(result)

    def store_group(self, group: GroupMetadata, assignment: dict[str, bytes],
                    callback: Callable[[ErrorCode], None]) -> None:
        """Write the group's metadata record; callback(error) after acks=all."""
        partition = self.partition_for(group.group_id)
        if self._leader_partition(partition) is None:
            callback(ErrorCode.NOT_COORDINATOR)
            return
        record = GroupRecord(
            protocol_type=group.protocol_type or "", generation=group.generation_id,
            protocol=group.protocol_name, leader=group.leader_id,
            current_state_timestamp=group.current_state_timestamp,
            members=[MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                  m.rebalance_timeout_ms, m.session_timeout_ms,
                                  m.metadata(group.protocol_name), assignment.get(m.member_id, b""))
                     for m in group.members.values()])
        entry = (group_key(group.group_id), group_value(record))

        def stored(error: ErrorCode, _base_offset: int) -> None:
            if error != ErrorCode.NONE:
                log.debug("Metadata from group %s with generation %d failed when appending to log "
                          "due to %s", group.group_id, group.generation_id, error.name)
            callback(_GROUP_WRITE_ERRORS.get(error, error))
        self._append(partition, [entry], self.config.commit_required_acks, stored)

    def valid_metadata(self, metadata: str | None) -> bool:
        return metadata is None or java_string_length(metadata) <= self.config.max_metadata_size

    def store_offsets(self, group: GroupMetadata, offsets: dict[TopicPartition, OffsetAndMetadata],
                      callback: Callable[[dict[TopicPartition, ErrorCode]], None]) -> None:
        """Write commits; the cache and the answer change only after acks=all."""
        def stored(accepted: dict[TopicPartition, OffsetAndMetadata], error: ErrorCode, base_offset: int) -> None:
            for tp, o in accepted.items():
                if error == ErrorCode.NONE:
                    group.on_offset_commit_append(tp, CommitRecord(o, base_offset))
                else:
                    group.fail_pending_offset_write(tp, o)
        self._write_offsets(group, offsets, callback, group.prepare_offset_commit, stored, "Offset commit")

    def store_txn_offsets(self, group: GroupMetadata, producer_id: int, producer_epoch: int,
                          offsets: dict[TopicPartition, OffsetAndMetadata],
                          callback: Callable[[dict[TopicPartition, ErrorCode]], None]) -> None:
        """TxnOffsetCommit: a transactional batch of the producer; the offsets stay pending
        in the group until complete_transaction() hears of the transaction's marker."""
        def prepare(accepted: dict[TopicPartition, OffsetAndMetadata]) -> None:
            self.open_groups_for_producer.setdefault(producer_id, set()).add(group.group_id)
            group.prepare_txn_offset_commit(producer_id, accepted)

        def stored(accepted: dict[TopicPartition, OffsetAndMetadata], error: ErrorCode, base_offset: int) -> None:
            for tp, o in accepted.items():
                if error == ErrorCode.NONE:
                    group.on_txn_offset_commit_append(producer_id, tp, CommitRecord(o, base_offset))
                else:
                    group.fail_pending_txn_offset_commit(producer_id, tp, o)
        self._write_offsets(group, offsets, callback, prepare, stored, "Transactional offset commit",
                            producer=(producer_id, producer_epoch))

    def _write_offsets(self, group: GroupMetadata, offsets: dict[TopicPartition, OffsetAndMetadata],
                       callback: Callable[[dict[TopicPartition, ErrorCode]], None],
                       prepare: Callable[[dict[TopicPartition, OffsetAndMetadata]], None],
                       stored: Callable[[dict[TopicPartition, OffsetAndMetadata], ErrorCode, int], None],
                       what: str, producer: tuple[int, int] | None = None) -> None:
        """The path both commits share: offsets whose metadata is too large are refused, the
        rest are `prepare`d in the group, appended as one batch, and `stored` (unless the
        group died meanwhile) before the answer."""
        accepted = {tp: o for tp, o in offsets.items() if self.valid_metadata(o.metadata)}

        def answer(error: ErrorCode) -> None:
            callback({tp: error if tp in accepted else ErrorCode.OFFSET_METADATA_TOO_LARGE for tp in offsets})

        if not accepted:
            answer(ErrorCode.OFFSET_METADATA_TOO_LARGE)
            return
        partition = self.partition_for(group.group_id)
        if self._leader_partition(partition) is None:
            answer(ErrorCode.NOT_COORDINATOR)
            return
        records = [(offset_key(group.group_id, tp[0], tp[1]), offset_value(o)) for tp, o in accepted.items()]
        prepare(accepted)

        def appended(error: ErrorCode, base_offset: int) -> None:
            if not group.is_(DEAD):
                stored(accepted, error, base_offset)
            if error != ErrorCode.NONE:
                log.debug("%s for group %s failed when appending to log due to %s", what, group.group_id,
                          error.name)
            answer(_OFFSET_WRITE_ERRORS.get(error, error))
        self._append(partition, records, self.config.commit_required_acks, appended, producer=producer)

    def complete_transaction(self, producer_id: int, partitions: set[int], committed: bool) -> None:
        """Kafka's handleTxnCompletion: a marker of the producer landed on these partitions."""
        open_groups = self.open_groups_for_producer.get(producer_id)
        if not open_groups:
            return
        for group_id in list(open_groups):
            if self.partition_for(group_id) not in partitions:
                continue
            open_groups.discard(group_id)
            group = self.groups.get(group_id)
            if group is None or group.is_(DEAD) or not group.has_pending_txn_offsets_from(producer_id):
                continue
            group.complete_pending_txn_offset_commit(producer_id, committed)
            log.debug("%s transactional offsets of producer %d in group %s",
                      "Committed" if committed else "Aborted", producer_id, group_id)
        if not open_groups:
            del self.open_groups_for_producer[producer_id]

    def get_offsets(self, group_id: str, require_stable: bool,
                    partitions: list[TopicPartition] | None) -> dict[TopicPartition, FetchedOffset]:
        group = self.groups.get(group_id)
        if group is None or group.is_(DEAD):
            return {tp: INVALID_OFFSET for tp in partitions or []}
        wanted = partitions if partitions is not None else list(group.offsets)
        out = {}
        for tp in wanted:
            if require_stable and group.has_pending_offset_commit(tp):
                out[tp] = FetchedOffset(-1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
                continue
            o = group.offset(tp)
            out[tp] = INVALID_OFFSET if o is None else FetchedOffset(o.offset, o.leader_epoch, o.metadata)
        return out

    # -- removal ------------------------------------------------------------------------

    def cleanup_group_metadata(self, groups: Iterable[GroupMetadata],
                               selector: Callable[[GroupMetadata], dict]) -> int:
        """Drop what `selector` removes from each group, write tombstones for it, and bury
        groups left Empty without offsets (a group tombstone only if it ever had a
        generation: commit-only groups never wrote one)."""
        removed_count = 0
        for group in list(groups):
            removed = selector(group)
            if group.is_(EMPTY) and not group.has_offsets():
                log.info("Group %s transitioned to Dead in generation %d", group.group_id, group.generation_id)
                group.transition_to(DEAD)
            tombstones: list[tuple[bytes, None]] = [
                (offset_key(group.group_id, tp[0], tp[1]), None) for tp in removed]
            if group.is_(DEAD) and self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
                if group.generation_id > 0:
                    tombstones.append((group_key(group.group_id), None))
            partition = self.partition_for(group.group_id)
            if tombstones and self._leader_partition(partition) is not None:
                self._append(partition, tombstones, 1, None)
                removed_count += len(removed)
        return removed_count

    def cleanup_expired(self) -> int:
        now = self.now_ms()
        retention = self.config.retention_ms
        removed = self.cleanup_group_metadata(self.current_groups(),
                                              lambda g: g.remove_expired_offsets(now, retention))
        if removed:
            log.info("Removed %d expired offsets in %d milliseconds.", removed, self.now_ms() - now)
        return removed

    # -- loading and unloading ----------------------------------------------------------

    def schedule_load(self, partition: int, epoch: int,
                      on_group_loaded: Callable[[GroupMetadata], None],
                      on_loaded: Callable[[int], None] | None = None) -> bool:
        """Start replaying `partition`; False if it is loaded or loading already."""
        if epoch < self.epochs.get(partition, -1):
            log.info("Not loading offsets and group metadata for %s-%d in epoch %d since current "
                     "epoch is %d", OFFSETS_TOPIC, partition, epoch, self.epochs[partition])
            return False
        self.epochs[partition] = epoch
        if partition in self.loads or partition in self.owned_partitions:
            log.info("Already loaded or loading offsets and group metadata from %s-%d", OFFSETS_TOPIC, partition)
            return False
        log.info("Scheduling loading of offsets and group metadata from %s-%d for epoch %d",
                 OFFSETS_TOPIC, partition, epoch)
        started = self.now_ms()

        def log_of():
            part = self._leader_partition(partition)
            return part.log if part is not None else None

        def done(load: PartitionLoad) -> None:
            if self.loads.get(partition) is not load:
                return
            del self.loads[partition]
            if load.cancelled:
                log.info("Stopped loading %s-%d: no longer its leader", OFFSETS_TOPIC, partition)
                return
            self.owned_partitions.add(partition)
            if load.failed is None:
                self._install(load, on_group_loaded)
            log.info("Finished loading offsets and group metadata from %s-%d in %d milliseconds "
                     "for epoch %d (%d records in %d slices).", OFFSETS_TOPIC, partition,
                     self.now_ms() - started, epoch, load.result.records, load.slices)
            if on_loaded is not None:
                on_loaded(partition)

        load = PartitionLoad(partition, log_of, self.reactor, done, self.load_slice_bytes)
        self.loads[partition] = load
        load.start()
        return True

    def _install(self, load: PartitionLoad, on_group_loaded: Callable[[GroupMetadata], None]) -> None:
        result = load.result
        for group_id, record in result.groups.items():
            group = load_group(group_id, record, self.now_ms)
            group.initialize_offsets(result.offsets.get(group_id, {}), result.pending_for(group_id))
            self._put_loaded(group, on_group_loaded)
        pending_groups = {g for groups in result.pending_txn.values() for g in groups}
        for group_id in sorted(set(result.offsets) | pending_groups):
            if group_id not in result.groups:
                # Offsets without group metadata: a group that only stores offsets here.
                group = GroupMetadata(group_id, EMPTY, self.now_ms)
                group.initialize_offsets(result.offsets.get(group_id, {}), result.pending_for(group_id))
                self._put_loaded(group, on_group_loaded)
        for producer_id, groups in result.pending_txn.items():
            self.open_groups_for_producer.setdefault(producer_id, set()).update(groups)

    def _put_loaded(self, group: GroupMetadata, on_group_loaded) -> None:
        current = self.add_group(group)
        if current is not group:
            log.debug("Attempt to load group %s from log with generation %d failed because there is "
                      "already a cached group with generation %d", group.group_id, group.generation_id,
                      current.generation_id)
            return
        on_group_loaded(group)

    def remove_groups_for_partition(self, partition: int, epoch: int | None,
                                    on_group_unloaded: Callable[[GroupMetadata], None]) -> None:
        if epoch is not None:
            if epoch < self.epochs.get(partition, -1):
                log.info("Not removing groups of %s-%d for stale epoch %d", OFFSETS_TOPIC, partition, epoch)
                return
            self.epochs[partition] = epoch
        log.info("Scheduling unloading of offsets and group metadata from %s-%d", OFFSETS_TOPIC, partition)
        load = self.loads.pop(partition, None)
        if load is not None:
            load.cancel()
        self.owned_partitions.discard(partition)
        groups = offsets = 0
        for group in [g for g in self.groups.values() if self.partition_for(g.group_id) == partition]:
            on_group_unloaded(group)
            del self.groups[group.group_id]
            groups += 1
            offsets += len(group.offsets)
        log.info("Finished unloading %s-%d. Removed %d cached offsets and %d cached groups.",
                 OFFSETS_TOPIC, partition, offsets, groups)

    def shutdown(self) -> None:
        for load in self.loads.values():
            load.cancel()
        self.loads.clear()
        self.owned_partitions.clear()
        self.groups.clear()
