"""The controller's partition reassignments (KIP-455), as Kafka 2.8's KafkaController runs them.

Mixed into KafkaController: every entry point is a controller event (or runs inside one),
so reassignment steps never interleave with elections, ISR changes or broker changes.
The steps, for a partition moving from ORS (original replicas) to TRS (target):

U  The topic znode gets RS = TRS ++ ORS with adding_replicas AR = TRS - ORS and
   removing_replicas RR = ORS - TRS (written before memory, so a new controller can
   resume from it). Replacing or cancelling a reassignment stops the replicas that are
   no longer wanted.
A  While some target replica is not in the ISR: the leader epoch is bumped and
   LeaderAndIsr with RS, AR and RR goes to the original replicas and (as new replicas)
   to the added ones, which create their logs and follow.
B  Once every target replica is in the ISR (an AlterIsr from the leader brings the last
   one in): the leader moves to a target replica if it is being removed; the removed
   replicas are stopped, leave the ISR and have their logs deleted (StopReplica with
   delete); the topic znode gets RS = TRS with no adding/removing; the partition leaves
   /admin/reassign_partitions (deleted when empty); everybody gets UpdateMetadata.

Reassignments start through AlterPartitionReassignments or /admin/reassign_partitions,
resume on controller failover (from the topic znodes) and when a target broker comes
back, and complete through AlterIsr. ListPartitionReassignments answers from memory.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable, Iterable, Mapping, Sequence

from twisted.internet import defer

from kafkalike.controller import requests as reqs
from kafkalike.controller.context import OFFLINE, ONLINE
from kafkalike.controller.reassignment import (
    NONE,
    PARTITION_DOES_NOT_EXIST,
    ApiError,
    build_reassignment,
    is_being_reassigned,
    is_complete,
    origin_replicas,
    reassign_leader,
    remove_replica,
    target_replicas,
    validate_replicas,
)
from kafkalike.protocol.errors import ErrorCode
from kafkalike.zkdata.errors import ControllerMovedError
from kafkalike.zkdata.events import ZNodeChange
from kafkalike.zkdata.kafka_json import ZNodeDecodeError
from kafkalike.zkdata.topic_znodes import (
    LeaderIsrAndControllerEpoch,
    PartitionAssignment,
    ReplicaAssignment,
    TopicPartition,
)
from kafkalike.zkdata.znodes import ReassignPartitionsZNode

log = logging.getLogger("kafka.controller.KafkaController")
state_log = logging.getLogger("state.change.logger")

NO_LEADER = -1
WRITE_ATTEMPTS = 5


def _tp(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _assignment_text(ra: ReplicaAssignment) -> str:
    return (f"ReplicaAssignment(replicas={','.join(map(str, ra.replicas))}, "
            f"addingReplicas={','.join(map(str, ra.adding_replicas))}, "
            f"removingReplicas={','.join(map(str, ra.removing_replicas))})")


class ReassignmentSteps:
    """KafkaController's reassignment handling (uses its ctx, zk, channels and senders)."""

    # -- requests (each one an event on the controller's queue) --------------------------

    def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
                                      ) -> defer.Deferred:
        """Deferred[(top-level ApiError, {partition: ApiError})]; None as a partition's
        replicas cancels its reassignment."""
        d = defer.Deferred()
        self.put("ApiPartitionReassignment", self._api_partition_reassignment, dict(reassignments), d)
        return d

    def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None) -> defer.Deferred:
        """Deferred[(top-level ApiError, {partition: ReplicaAssignment})] of those being
        reassigned; None asks for every partition."""
        d = defer.Deferred()
        wanted = None if partitions is None else list(dict.fromkeys(partitions))
        self.put("ListPartitionReassignments", self._list_partition_reassignments, wanted, d)
        return d

    async def _api_partition_reassignment(self, reassignments: dict, d: defer.Deferred) -> None:
        if not self.active:
            d.callback((ApiError.of(ErrorCode.NOT_CONTROLLER), {}))
            return
        results: dict[TopicPartition, ApiError] = {}
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in reassignments.items():
            error = None if target is None else validate_replicas(self.ctx, tp, list(target))
            if error is not None:
                results[tp] = error
                continue
            built = build_reassignment(self.ctx, tp, None if target is None else list(target))
            if built is None:
                results[tp] = ApiError.of(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
            else:
                to_reassign[tp] = built
        try:
            # The latest reassignment wins: a partition asked for here leaves the znode's list.
            await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in to_reassign)
            results.update(await self._maybe_trigger_partition_reassignment(to_reassign))
        except ControllerMovedError:
            d.callback((ApiError.of(ErrorCode.NOT_CONTROLLER), {}))
            return
        d.callback((NONE, {tp: results[tp] for tp in reassignments if tp in results}))

    async def _list_partition_reassignments(self, wanted: list[TopicPartition] | None, d: defer.Deferred) -> None:
        if not self.active:
            d.callback((ApiError.of(ErrorCode.NOT_CONTROLLER), {}))
            return
        partitions = sorted(self.ctx.partitions_being_reassigned) if wanted is None else wanted
        found = {}
        for tp in partitions:
            full = self.ctx.full_assignment(tp)
            if is_being_reassigned(full):
                found[tp] = full
        d.callback((NONE, found))

    # -- triggers ---------------------------------------------------------------------

    async def _maybe_trigger_partition_reassignment(
            self, reassignments: Mapping[TopicPartition, ReplicaAssignment]) -> dict[TopicPartition, ApiError]:
        results = {}
        for tp, reassignment in reassignments.items():
            if tp.topic in self.ctx.topics_to_delete or tp.topic in self.ctx.deletions_waiting:
                log.info("[Controller id=%d] Skipping reassignment of %s since the topic is currently being "
                         "deleted", self.broker_id, _tp(tp))
                results[tp] = PARTITION_DOES_NOT_EXIST
            elif not self.ctx.assignments.get(tp):
                results[tp] = PARTITION_DOES_NOT_EXIST
            else:
                try:
                    await self._on_partition_reassignment(tp, reassignment)
                    results[tp] = NONE
                except ControllerMovedError:
                    log.info("[Controller id=%d] Failed completing reassignment of partition %s because "
                             "controller has moved to another broker", self.broker_id, _tp(tp))
                    raise
                except Exception:
                    log.exception("[Controller id=%d] Error completing reassignment of partition %s",
                                  self.broker_id, _tp(tp))
                    results[tp] = ApiError.of(ErrorCode.UNKNOWN_SERVER_ERROR)
        return results

    def _on_reassign_partitions_znode(self, event) -> None:
        # As Kafka's PartitionReassignmentHandler: only the znode's creation starts work (the
        # controller rewrites it itself as partitions complete).
        if event.change in (ZNodeChange.CREATED, ZNodeChange.RESYNC):
            self.put("ZkPartitionReassignment", self._zk_partition_reassignment_event)

    async def _zk_partition_reassignment_event(self) -> None:
        await self._zk_partition_reassignment()

    async def _zk_partition_reassignment(self) -> set[TopicPartition]:
        """Start what /admin/reassign_partitions lists; the partitions that started."""
        if not self.active:
            return set()
        try:
            found = await self.zk.get_partition_reassignment()
        except ZNodeDecodeError as exc:
            log.warning("[Controller id=%d] Ignoring partition reassignment due to invalid json: %s",
                        self.broker_id, exc)
            found = {}
        if found is None:
            return set()
        to_reassign = {tp: build_reassignment(self.ctx, tp, list(target)) for tp, target in found.items()}
        results = await self._maybe_trigger_partition_reassignment(to_reassign)
        failed = {tp: e for tp, e in results.items() if e.error != ErrorCode.NONE}
        if failed:
            log.warning("[Controller id=%d] Failed reassignment through zk with the following errors: %s",
                        self.broker_id, {_tp(tp): e.error.name for tp, e in failed.items()})
            await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp in results if tp not in failed}

    async def _initialize_partition_reassignments(self) -> None:
        """On failover: watch the legacy znode, start what it holds (it supersedes API
        reassignments of the same partitions), then resume the others from the topic znodes."""
        self._watches.append(await self.zk.watch_partition_reassignment(self._on_reassign_partitions_znode))
        resumed = await self._zk_partition_reassignment()
        await self._maybe_resume_reassignments(lambda tp, _: tp not in resumed)

    async def _maybe_resume_reassignments(self, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]
                                          ) -> None:
        for tp in sorted(self.ctx.partitions_being_reassigned):
            current = self.ctx.full_assignment(tp)
            if tp in self.ctx.partitions_being_reassigned and should_resume(tp, current):
                try:
                    await self._on_partition_reassignment(tp, current)
                except ControllerMovedError:
                    raise
                except Exception:
                    log.exception("[Controller id=%d] Error resuming reassignment of partition %s",
                                  self.broker_id, _tp(tp))

    async def _resume_reassignments_on(self, brokers: Iterable[int]) -> None:
        """A broker came (back): reassignments with a target replica on it go on."""
        started = set(brokers)
        await self._maybe_resume_reassignments(lambda _, ra: bool(started & set(target_replicas(ra))))

    async def _maybe_complete_reassignments(self, partitions: Iterable[TopicPartition]) -> None:
        """After ISR changes: reassignments whose target replicas are now all in sync finish."""
        for tp in partitions:
            if tp not in self.ctx.partitions_being_reassigned:
                continue
            reassignment = self.ctx.full_assignment(tp)
            if await self._is_reassignment_complete(tp, reassignment):
                log.info("[Controller id=%d] Target replicas %s have all caught up with the leader for "
                         "reassigning partition %s", self.broker_id, list(target_replicas(reassignment)), _tp(tp))
                await self._on_partition_reassignment(tp, reassignment)

    # -- the steps ----------------------------------------------------------------------

    async def _on_partition_reassignment(self, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
        await self._update_current_reassignment(tp, reassignment)
        if not await self._is_reassignment_complete(tp, reassignment):
            # A: tell ORS + TRS about the new replica set; the added replicas start following.
            await self._update_leader_epoch_and_send(tp, reassignment)
            return
        # B: done. RS = TRS in memory, the leader moves if it is being removed, the removed
        # replicas go, then the topic znode (the only persistent record of ORS) last.
        completed = ReplicaAssignment(target_replicas(reassignment))
        self.ctx.set_full_assignment(tp, completed)
        await self._move_reassigned_leader_if_required(tp, completed)
        await self._stop_removed_replicas(tp, reassignment.removing_replicas)
        await self._write_partition_assignment(tp, completed)
        await self._remove_from_reassigning_partitions(tp, completed)
        self._send_update_metadata(self.ctx.live_ids, [tp])
        if tp.topic in self.ctx.deletions_waiting and not any(
                p.topic == tp.topic for p in self.ctx.partitions_being_reassigned):
            self.put("TopicDeletion", self._on_topic_deletion)

    async def _update_current_reassignment(self, tp: TopicPartition, reassignment: ReplicaAssignment) -> None:
        current = self.ctx.full_assignment(tp)
        if current != reassignment:
            log.debug("[Controller id=%d] Updating assignment of partition %s from %s to %s", self.broker_id,
                      _tp(tp), _assignment_text(current), _assignment_text(reassignment))
            await self._write_partition_assignment(tp, reassignment)
            self.ctx.set_full_assignment(tp, reassignment)
            # Replacing (or cancelling) a reassignment: replicas it was adding that are no
            # longer wanted are stopped and deleted now.
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:
                await self._stop_removed_replicas(tp, unneeded)
        self.ctx.partitions_being_reassigned.add(tp)

    async def _is_reassignment_complete(self, tp: TopicPartition, reassignment: ReplicaAssignment) -> bool:
        if not is_being_reassigned(reassignment):
            return True
        state = (await self.zk.get_partition_states([tp])).get(tp)
        return is_complete(reassignment, None if state is None else state.isr)

    async def _write_partition_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """The topic znode with this partition's new full assignment (fenced)."""
        partitions = {p.partition: self.ctx.full_assignment(p) for p in self.ctx.partitions_of(tp.topic)}
        partitions[tp.partition] = assignment
        value = PartitionAssignment(dict(sorted(partitions.items())), self.ctx.topic_ids.get(tp.topic))
        await self.zk.set_topic_assignment(tp.topic, value, self.ctx.epoch_zk_version)
        log.info("[Controller id=%d] Successfully updated assignment of partition %s to %s", self.broker_id,
                 _tp(tp), _assignment_text(assignment))

    async def _bump_leader_epoch(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        """Kafka's updateLeaderEpoch: same leader and ISR at epoch + 1, from a fresh read."""
        for _ in range(WRITE_ATTEMPTS):
            fresh = (await self.zk.get_partition_states([tp])).get(tp)
            if fresh is None:
                raise RuntimeError(f"Cannot update leader epoch for partition {_tp(tp)} as leaderAndIsr path is "
                                   "empty. This could mean we somehow tried to reassign a partition that doesn't "
                                   "exist")
            if fresh.controller_epoch > self.ctx.epoch:
                raise RuntimeError(f"Leader and isr path written by another controller. This probably means the "
                                   f"current controller with epoch {self.ctx.epoch} went through a soft failure "
                                   f"and another controller was elected with epoch {fresh.controller_epoch}. "
                                   "Aborting state change by this controller")
            self.ctx.leadership[tp] = fresh
            wanted = replace(fresh, leader_epoch=fresh.leader_epoch + 1, controller_epoch=self.ctx.epoch)
            if await self._write_states({tp: wanted}):
                return self.ctx.leadership[tp]
        return None

    async def _update_leader_epoch_and_send(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        state = await self._bump_leader_epoch(tp)
        if state is None:
            state_log.error("[Controller id=%d epoch=%d] Failed to send LeaderAndIsr request with new replica "
                            "assignment %s to leader for partition being reassigned %s", self.broker_id,
                            self.ctx.epoch, _assignment_text(assignment), _tp(tp))
            return
        # Original replicas keep their logs; added ones are new (Kafka's isNew flag).
        self._send_leader_and_isr(set(origin_replicas(assignment)), [tp])
        self._send_leader_and_isr(set(assignment.adding_replicas), [tp], new={tp})
        self._send_update_metadata(self.ctx.live_ids, [tp])
        state_log.info("[Controller id=%d epoch=%d] Sent LeaderAndIsr request (Leader:%d,ISR:%s,LeaderEpoch:%d,"
                       "ZkVersion:%d) with new replica assignment %s to leader %d for partition being "
                       "reassigned %s", self.broker_id, self.ctx.epoch, state.leader,
                       ",".join(map(str, state.isr)), state.leader_epoch, state.zk_version,
                       _assignment_text(assignment), state.leader, _tp(tp))

    async def _move_reassigned_leader_if_required(self, tp: TopicPartition, completed: ReplicaAssignment) -> None:
        state = self.ctx.leadership.get(tp)
        if state is None:
            return
        replicas = list(completed.replicas)
        current = state.leader
        text = ",".join(map(str, replicas))
        if current in replicas and current in self.ctx.usable_ids:
            log.info("[Controller id=%d] Leader %d for partition %s being reassigned, is already in the new list "
                     "of replicas %s and is alive", self.broker_id, current, _tp(tp), text)
            await self._update_leader_epoch_and_send(tp, completed)
            return
        if current not in replicas:
            log.info("[Controller id=%d] Leader %d for partition %s being reassigned, is not in the new list of "
                     "replicas %s. Re-electing leader", self.broker_id, current, _tp(tp), text)
        else:
            log.info("[Controller id=%d] Leader %d for partition %s being reassigned, is already in the new list "
                     "of replicas %s but is dead", self.broker_id, current, _tp(tp), text)
        for _ in range(WRITE_ATTEMPTS):
            state = self.ctx.leadership[tp]
            leader = reassign_leader(self.ctx, replicas, state.isr)
            if leader is None:
                state_log.error("[Controller id=%d epoch=%d] Controller failed to elect leader for partition %s: "
                                "failed to elect leader for partition %s under strategy "
                                "ReassignPartitionLeaderElectionStrategy", self.broker_id, self.ctx.epoch,
                                _tp(tp), _tp(tp))
                return
            elected = LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, state.isr, self.ctx.epoch,
                                                  state.zk_version)
            if await self._write_states({tp: elected}):
                if self.ctx.partition_states.get(tp) in (ONLINE, OFFLINE):
                    self.ctx.set_state(tp, ONLINE)
                self._send_leader_and_isr(set(replicas), [tp])
                self._send_update_metadata(self.ctx.live_ids, [tp])
                return

    async def _stop_removed_replicas(self, tp: TopicPartition, removed: Sequence[int]) -> None:
        """Kafka's OfflineReplica then NonExistentReplica for each removed replica: StopReplica
        (no delete), out of the ISR (leader epoch + 1, LeaderAndIsr to the replicas that
        stay), then StopReplica with delete, which removes its log."""
        if not removed:
            return
        for r in removed:
            self._send_stop_replica(r, [tp], delete=False)
        shrunk = False
        for r in removed:
            shrunk = await self._remove_replica_from_isr(tp, r) or shrunk
        if shrunk and tp.topic not in self.ctx.topics_to_delete:
            staying = set(self.ctx.assignments.get(tp, ())) - set(removed)
            self._send_leader_and_isr(staying, [tp])
            self._send_update_metadata(self.ctx.live_ids, [tp])
        for r in removed:
            self._send_stop_replica(r, [tp], delete=True)
        full = self.ctx.full_assignment(tp)
        for r in removed:
            full = remove_replica(full, r)
        self.ctx.set_full_assignment(tp, full)

    async def _remove_replica_from_isr(self, tp: TopicPartition, replica: int) -> bool:
        for _ in range(WRITE_ATTEMPTS):
            state = (await self.zk.get_partition_states([tp])).get(tp)
            if state is None or replica not in state.isr:
                return False
            self.ctx.leadership[tp] = state
            leader = NO_LEADER if replica == state.leader else state.leader
            isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
            wanted = LeaderIsrAndControllerEpoch(leader, state.leader_epoch + 1, isr, self.ctx.epoch,
                                                 state.zk_version)
            if await self._write_states({tp: wanted}):
                written = self.ctx.leadership[tp]
                if written.leader == NO_LEADER and self.ctx.partition_states.get(tp) == ONLINE:
                    self.ctx.set_state(tp, OFFLINE)
                state_log.info("[Controller id=%d epoch=%d] Partition %s state changed to (Leader:%d,ISR:%s,"
                               "LeaderEpoch:%d,ControllerEpoch:%d) after removing replica %d from the ISR as part "
                               "of transition to OfflineReplica", self.broker_id, self.ctx.epoch, _tp(tp),
                               written.leader, ",".join(map(str, written.isr)), written.leader_epoch,
                               written.controller_epoch, replica)
                return True
        return False

    def _send_stop_replica(self, broker: int, partitions: list[TopicPartition], delete: bool) -> None:
        if self.channels is None or broker not in self.ctx.live_brokers:
            return
        self.channels.send(broker, reqs.stop_replica(self.ctx, self.broker_id, broker, partitions, delete),
                           reqs.STOP_REPLICA_VERSION)

    async def _remove_from_reassigning_partitions(self, tp: TopicPartition, completed: ReplicaAssignment) -> None:
        if tp not in self.ctx.partitions_being_reassigned:
            raise RuntimeError("Cannot remove a reassigning partition because it is not present in memory")
        final = tuple(completed.replicas)
        await self._maybe_remove_from_zk_reassignment(lambda p, replicas: p == tp and tuple(replicas) == final)
        self.ctx.partitions_being_reassigned.discard(tp)

    async def _maybe_remove_from_zk_reassignment(self, should_remove: Callable[[TopicPartition, Sequence[int]], bool]
                                                 ) -> None:
        """Take partitions out of /admin/reassign_partitions; delete it once it lists none."""
        if not await self.zk.reassign_partitions_in_progress():
            return
        try:
            listed = await self.zk.get_partition_reassignment() or {}
        except ZNodeDecodeError as exc:
            log.warning("[Controller id=%d] Ignoring partition reassignment due to invalid json: %s",
                        self.broker_id, exc)
            listed = {}
        removing = [tp for tp, replicas in listed.items() if should_remove(tp, replicas)]
        remaining = {tp: replicas for tp, replicas in listed.items() if tp not in removing}
        log.info("[Controller id=%d] Removing partitions %s from the list of reassigned partitions in zookeeper",
                 self.broker_id, ",".join(_tp(tp) for tp in removing))
        if not remaining:
            log.info("[Controller id=%d] No more partitions need to be reassigned. Deleting zk path %s",
                     self.broker_id, ReassignPartitionsZNode.PATH)
            await self.zk.delete_partition_reassignment(self.ctx.epoch_zk_version)
            # A reassignment written meanwhile would otherwise go unnoticed.
            self.put("ZkPartitionReassignment", self._zk_partition_reassignment_event)
        elif removing:
            await self.zk.set_or_create_partition_reassignment(remaining, self.ctx.epoch_zk_version)
