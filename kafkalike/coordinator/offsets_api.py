"""The coordinator's other half: offset commits and fetches, and group administration
(describe, list, delete groups and offsets), with Kafka 2.8's rules per group state."""
from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalike.coordinator.delivery import Deliveries, entry
from kafkalike.coordinator.group import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE,
                                         GroupMetadata)
from kafkalike.coordinator.records import OffsetAndMetadata
from kafkalike.coordinator.results import DEAD_GROUP, EMPTY_GROUP, FetchedOffset, GroupOverview, GroupSummary
from kafkalike.protocol.errors import ErrorCode

log = logging.getLogger("kafka.coordinator.group.GroupCoordinator")

TopicPartition = tuple[str, int]


class OffsetsApi(Deliveries):
    """Mixed into GroupCoordinator; relies on its manager, config and validation."""

    # -- OffsetCommit -------------------------------------------------------------------

    @entry
    def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                       generation_id: int, offsets: dict[TopicPartition, OffsetAndMetadata]) -> defer.Deferred:
        """Deferred[dict[tp, ErrorCode]], fired once the commit is replicated (acks=all)."""
        d = defer.Deferred()
        respond = self._responder(d)
        error = self.validate_group_status(group_id, "offset_commit")
        if error is not None:
            respond({tp: error for tp in offsets})
            return d
        group = self.manager.get_group(group_id)
        if group is None:
            if generation_id < 0:
                # Not using Kafka's group management: a "simple" consumer storing offsets.
                group = self.manager.add_group(GroupMetadata(group_id, EMPTY, self.now_ms))
            else:
                respond({tp: ErrorCode.ILLEGAL_GENERATION for tp in offsets})
                return d
        self._do_commit(group, member_id, group_instance_id, generation_id, offsets, respond)
        return d

    def _do_commit(self, group, member_id, group_instance_id, generation_id, offsets, respond) -> None:
        def fail(code: ErrorCode) -> None:
            respond({tp: code for tp in offsets})

        if group.is_(DEAD):
            fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        elif group.is_static_member_fenced(member_id, group_instance_id):
            fail(ErrorCode.FENCED_INSTANCE_ID)
        elif generation_id < 0 and group.is_(EMPTY):
            self.manager.store_offsets(group, offsets, self._guarded(respond))
        elif not group.has(member_id):
            fail(ErrorCode.UNKNOWN_MEMBER_ID)
        elif generation_id != group.generation_id:
            fail(ErrorCode.ILLEGAL_GENERATION)
        elif group.state in (STABLE, PREPARING_REBALANCE):
            # Allowed while preparing: the heartbeat tells the member about the rebalance.
            self._complete_and_schedule_next_heartbeat(group, group.get(member_id))
            self.manager.store_offsets(group, offsets, self._guarded(respond))
        elif group.is_(COMPLETING_REBALANCE):
            fail(ErrorCode.REBALANCE_IN_PROGRESS)
        else:
            fail(ErrorCode.UNKNOWN_MEMBER_ID)

    # -- TxnOffsetCommit ----------------------------------------------------------------

    @entry
    def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                           group_instance_id: str | None, generation_id: int,
                           offsets: dict[TopicPartition, OffsetAndMetadata]) -> defer.Deferred:
        """Deferred[dict[tp, ErrorCode]]: offsets written as part of the producer's
        transaction, visible once its commit marker lands (complete_transaction)."""
        d = defer.Deferred()
        respond = self._responder(d)
        error = self.validate_group_status(group_id, "txn_offset_commit")
        if error is not None:
            respond({tp: error for tp in offsets})
            return d
        group = self.manager.get_group(group_id)
        if group is None:
            group = self.manager.add_group(GroupMetadata(group_id, EMPTY, self.now_ms))

        def fail(code: ErrorCode) -> None:
            respond({tp: code for tp in offsets})

        # Kafka 2.8's doTxnCommitOffsets: v3 clients send their member and generation (KIP-447)
        if group.is_(DEAD):
            fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        elif group.is_static_member_fenced(member_id, group_instance_id):
            fail(ErrorCode.FENCED_INSTANCE_ID)
        elif member_id != "" and not group.has(member_id):
            fail(ErrorCode.UNKNOWN_MEMBER_ID)
        elif generation_id >= 0 and generation_id != group.generation_id:
            fail(ErrorCode.ILLEGAL_GENERATION)
        else:
            self.manager.store_txn_offsets(group, producer_id, producer_epoch, offsets, self._guarded(respond))
        return d

    @entry
    def complete_transaction(self, producer_id: int, partitions: set[int], committed: bool) -> None:
        """A transaction marker of `producer_id` landed on these __consumer_offsets partitions:
        the transaction's offsets in their groups become visible (commit) or are dropped (abort)."""
        self.manager.complete_transaction(producer_id, set(partitions), committed)

    # -- OffsetFetch --------------------------------------------------------------------

    @entry
    def fetch_offsets(self, group_id: str, require_stable: bool,
                      partitions: list[TopicPartition] | None = None
                      ) -> tuple[ErrorCode, dict[TopicPartition, FetchedOffset]]:
        """Offsets whatever the group's state (it may not use group management at all);
        partitions None means all the group has."""
        error = self.validate_group_status(group_id, "offset_fetch")
        if error is not None:
            return error, {}
        return ErrorCode.NONE, self.manager.get_offsets(group_id, require_stable, partitions)

    # -- DescribeGroups / ListGroups ----------------------------------------------------

    @entry
    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        error = self.validate_group_status(group_id, "describe_groups")
        if error is not None:
            return error, EMPTY_GROUP
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.NONE, DEAD_GROUP
        return ErrorCode.NONE, group.summary()

    @entry
    def list_groups(self, states: set[str] | frozenset[str] = frozenset()) -> tuple[ErrorCode, list[GroupOverview]]:
        """Groups of the loaded partitions; LOAD_IN_PROGRESS says the list may be short."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.manager.is_loading() else ErrorCode.NONE
        groups = [g.overview() for g in self.manager.current_groups()]
        if states:
            groups = [g for g in groups if g.state in states]
        return error, groups

    # -- DeleteGroups / OffsetDelete ----------------------------------------------------

    def _missing_group_error(self, group_id: str) -> ErrorCode:
        return ErrorCode.GROUP_ID_NOT_FOUND if self.manager.group_not_exists(group_id) else ErrorCode.NOT_COORDINATOR

    @entry
    def delete_groups(self, group_ids) -> dict[str, ErrorCode]:
        """Only Empty groups can go; their offsets and metadata get tombstones."""
        errors: dict[str, ErrorCode] = {}
        eligible: list[GroupMetadata] = []
        for group_id in group_ids:
            error = self.validate_group_status(group_id, "delete_groups")
            if error is not None:
                errors[group_id] = error
                continue
            group = self.manager.get_group(group_id)
            if group is None or group.is_(DEAD):
                errors[group_id] = self._missing_group_error(group_id)
            elif group.is_(EMPTY):
                group.transition_to(DEAD)
                eligible.append(group)
            else:
                errors[group_id] = ErrorCode.NON_EMPTY_GROUP
        if eligible:
            removed = self.manager.cleanup_group_metadata(eligible, lambda g: g.remove_all_offsets())
            for group in eligible:
                errors[group.group_id] = ErrorCode.NONE
            log.info("%sThe following groups were deleted: %s. A total of %d offsets were removed.",
                     self.log_prefix, ", ".join(g.group_id for g in eligible), removed)
        return errors

    @entry
    def delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                       ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """A live consumer group keeps the offsets of topics it subscribes to."""
        error = self.validate_group_status(group_id, "offset_delete")
        if error is not None:
            return error, {}
        group = self.manager.get_group(group_id)
        if group is None or group.is_(DEAD):
            return self._missing_group_error(group_id), {}
        errors: dict[TopicPartition, ErrorCode] = {}
        if group.is_(EMPTY):
            eligible = list(partitions)
        elif group.is_consumer_group:
            eligible = [tp for tp in partitions if not group.is_subscribed_to_topic(tp[0])]
            errors = {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions if tp not in eligible}
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        if eligible:
            removed = self.manager.cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            errors.update({tp: ErrorCode.NONE for tp in eligible})
            log.info("%sThe following offsets of the group %s were deleted: %s. A total of %d offsets were "
                     "removed.", self.log_prefix, group_id, ", ".join(f"{t}-{p}" for t, p in eligible), removed)
        return ErrorCode.NONE, errors

    @entry
    def on_topics_deleted(self, topics) -> int:
        """Topics were deleted: forget (and tombstone) every group's offsets for them."""
        gone = set(topics)
        removed = self.manager.cleanup_group_metadata(
            self.manager.current_groups(), lambda g: g.remove_offsets([tp for tp in g.offsets if tp[0] in gone]))
        log.info("%sRemoved %d offsets associated with deleted topics: %s.", self.log_prefix, removed,
                 ", ".join(sorted(gone)))
        return removed
