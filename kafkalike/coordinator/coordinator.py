"""The group coordinator: Kafka 2.8's membership protocol and rebalance.

JoinGroup, SyncGroup, Heartbeat and LeaveGroup drive each group through Empty ->
PreparingRebalance -> CompletingRebalance -> Stable (group.py holds the table). A
rebalance waits for every known member to rejoin, up to the largest rebalance
timeout; an Empty group's first rebalance waits group.initial.rebalance.delay.ms
more, extended for each newcomer. Sessions expire on timers of the injected reactor,
so tests drive them with twisted.internet.task.Clock.

Answers that wait (JoinGroup, SyncGroup, commits) are Deferreds. They are fired only
once the coordinator has finished the change that produced them: firing one sends a
response, and a connection may then hand its next queued request straight back to
us, which must find the groups in a consistent state.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from twisted.internet import defer, task

from kafkalike.coordinator.config import OFFSETS_TOPIC, CoordinatorConfig
from kafkalike.coordinator.group import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE,
                                         GroupMetadata, MemberMetadata)
from kafkalike.coordinator.group_metadata_manager import GroupMetadataManager
from kafkalike.coordinator.delivery import entry
from kafkalike.coordinator.offsets_api import OffsetsApi
from kafkalike.coordinator.results import JoinResult, LeaveResult, MemberLeave, SyncResult
from kafkalike.protocol.errors import ErrorCode

log = logging.getLogger("kafka.coordinator.group.GroupCoordinator")

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
UNKNOWN_MEMBER_ID = ""
# APIs that accept an empty group id (for old clients, and to inspect or delete it)
_EMPTY_GROUP_ID_OK = frozenset({"offset_commit", "offset_fetch", "describe_groups", "delete_groups"})


@dataclass(eq=False)
class RebalanceDelay:
    """The running wait of a PreparingRebalance group (Kafka's DelayedJoin and
    InitialDelayedJoin). An initial delay never completes early."""

    delay_ms: int
    initial: bool = False
    remaining_ms: int = 0
    timer: Any = None
    completed: bool = False


class GroupCoordinator(OffsetsApi):
    def __init__(self, broker_id: int, config: CoordinatorConfig, replica_manager, reactor,
                 now_ms: Callable[[], int] | None = None):
        self.broker_id = broker_id
        self.config = config
        self.reactor = reactor
        super().__init__()
        self.now_ms = now_ms or (lambda: int(reactor.seconds() * 1000))
        self.manager = GroupMetadataManager(broker_id, config, replica_manager, reactor, self.now_ms)
        self.active = False
        self._expiry_loop: task.LoopingCall | None = None
        self.log_prefix = f"[GroupCoordinator {broker_id}]: "

    # -- lifecycle ----------------------------------------------------------------------

    def startup(self, enable_metadata_expiration: bool = True) -> None:
        log.info("%sStarting up.", self.log_prefix)
        if enable_metadata_expiration:
            loop = task.LoopingCall(self._expire_offsets)
            loop.clock = self.reactor
            loop.start(self.config.retention_check_interval_ms / 1000.0, now=False).addErrback(
                lambda f: log.error("Offset expiration failed: %s", f.getTraceback()))
            self._expiry_loop = loop
        self.active = True
        log.info("%sStartup complete.", self.log_prefix)

    def shutdown(self) -> None:
        log.info("%sShutting down.", self.log_prefix)
        self.active = False
        if self._expiry_loop is not None and self._expiry_loop.running:
            self._expiry_loop.stop()
        for group in self.manager.current_groups():
            self._cancel_timers(group)
        self.manager.shutdown()
        self._outbox.clear()
        log.info("%sShutdown complete.", self.log_prefix)

    def partition_for(self, group_id: str) -> int:
        return self.manager.partition_for(group_id)

    def offsets_topic_configs(self) -> dict[str, str]:
        return self.config.offsets_topic_configs()

    @entry
    def on_elected(self, partition_index: int, leader_epoch: int = -1) -> None:
        """This broker now leads __consumer_offsets-<partition_index>: load its groups."""
        self.manager.schedule_load(partition_index, leader_epoch, self._guarded(self._on_group_loaded))

    @entry
    def on_resigned(self, partition_index: int, leader_epoch: int | None = None) -> None:
        """This broker no longer leads the partition: drop its groups."""
        self.manager.remove_groups_for_partition(partition_index, leader_epoch, self._on_group_unloaded)

    @entry
    def _expire_offsets(self) -> None:
        self.manager.cleanup_expired()

    def validate_group_status(self, group_id: str | None, api: str) -> ErrorCode | None:
        if group_id is None or (not group_id and api not in _EMPTY_GROUP_ID_OK):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.manager.is_group_loading(group_id):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if not self.manager.is_group_local(group_id):
            return ErrorCode.NOT_COORDINATOR
        return None

    # -- JoinGroup ----------------------------------------------------------------------

    @entry
    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                   require_known_member_id: bool, client_id: str, client_host: str,
                   rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]]) -> defer.Deferred:
        """Deferred[JoinResult], fired when the rebalance completes (or at once on error)."""
        d = defer.Deferred()
        respond = self._responder(d)
        error = self.validate_group_status(group_id, "join_group")
        if error is not None:
            respond(JoinResult(member_id, error))
            return d
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            respond(JoinResult(member_id, ErrorCode.INVALID_SESSION_TIMEOUT))
            return d
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.manager.get_or_maybe_create_group(group_id, is_unknown)
        if group is None:
            respond(JoinResult(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
            return d
        args = (group_instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                protocol_type, protocols, respond)
        if not self._accept_joining_member(group, member_id):
            if group.has(member_id):
                self._cancel_heartbeat(group.get(member_id))
            group.remove(member_id)
            group.remove_static_member(group_instance_id)
            respond(JoinResult(UNKNOWN_MEMBER_ID, ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif is_unknown:
            self._join_unknown_member(group, require_known_member_id, *args)
        else:
            self._join_known_member(group, member_id, *args)
        if group.is_(PREPARING_REBALANCE):
            self._check_join(group)
        return d

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        limit = self.config.max_group_size
        if group.state in (EMPTY, DEAD):
            return True
        if group.is_(PREPARING_REBALANCE):
            # Awaiting members, not all members: lets a shrunk limit shed the last rejoiners.
            return (group.has(member_id) and group.get(member_id).is_awaiting_join) or group.num_awaiting_join < limit
        return group.has(member_id) or group.size < limit

    def _join_unknown_member(self, group, require_known_member_id, group_instance_id, client_id, client_host,
                             rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, respond) -> None:
        if group.is_(DEAD):
            respond(JoinResult(UNKNOWN_MEMBER_ID, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, {p for p, _ in protocols}):
            respond(JoinResult(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_member_id = group.generate_member_id(client_id, group_instance_id)
        if group.has_static_member(group_instance_id):
            self._update_static_member_and_rebalance(group, new_member_id, group_instance_id, protocols, respond)
        elif require_known_member_id:
            log.debug("Dynamic member with unknown member id joins group %s in %s state. Created a new "
                      "member id %s and request the member to rejoin with this id.",
                      group.group_id, group.state, new_member_id)
            group.pending_members.add(new_member_id)
            group.pending_timers[new_member_id] = self.reactor.callLater(
                session_timeout_ms / 1000.0, self._on_pending_member_expired, group, new_member_id)
            respond(JoinResult(new_member_id, ErrorCode.MEMBER_ID_REQUIRED))
        else:
            log.info("%sMember with unknown member id joins group %s in %s state. Created a new member id "
                     "%s for this member and add to the group.", "Static " if group_instance_id else "Dynamic ",
                     group.group_id, group.state, new_member_id)
            self._add_member_and_rebalance(group, new_member_id, group_instance_id, client_id, client_host,
                                           rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                           respond)

    def _join_known_member(self, group, member_id, group_instance_id, client_id, client_host,
                           rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, respond) -> None:
        if group.is_(DEAD):
            respond(JoinResult(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, {p for p, _ in protocols}):
            respond(JoinResult(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.is_pending_member(member_id):
            # The second JoinGroup of a MEMBER_ID_REQUIRED exchange (never a static member).
            self._add_member_and_rebalance(group, member_id, None, client_id, client_host, rebalance_timeout_ms,
                                           session_timeout_ms, protocol_type, protocols, respond)
            return
        if group.is_static_member_fenced(member_id, group_instance_id):
            respond(JoinResult(member_id, ErrorCode.FENCED_INSTANCE_ID))
            return
        if not group.has(member_id) or (group_instance_id is not None
                                        and not group.has_static_member(group_instance_id)):
            respond(JoinResult(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
            return
        member = group.get(member_id)
        if group.is_(PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, protocols, respond,
                                              f"Member {member_id} joining group during {group.state}")
        elif group.is_(COMPLETING_REBALANCE):
            if member.matches(protocols):
                # It missed our JoinGroup answer: the same answer again.
                respond(self._join_answer(group, member))
            else:
                self._update_member_and_rebalance(group, member, protocols, respond,
                                                  f"Updating metadata for member {member_id} during {group.state}")
        elif group.is_(STABLE):
            if group.is_leader(member_id):
                # A leader's rejoin asks for a new assignment (its topic metadata changed).
                self._update_member_and_rebalance(group, member, protocols, respond,
                                                  f"leader {member_id} re-joining group during {group.state}")
            elif not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, respond,
                                                  f"Updating metadata for member {member_id} during {group.state}")
            else:
                respond(JoinResult(member_id, ErrorCode.NONE, group.generation_id, group.protocol_type,
                                   group.protocol_name, group.leader_id or ""))
        else:
            log.warning("Attempt to add rejoining member %s of group %s in unexpected group state %s",
                        member_id, group.group_id, group.state)
            respond(JoinResult(member_id, ErrorCode.UNKNOWN_MEMBER_ID))

    def _join_answer(self, group: GroupMetadata, member: MemberMetadata) -> JoinResult:
        """The leader gets every member's metadata for the chosen protocol; others none."""
        members = group.current_member_metadata() if group.is_leader(member.member_id) else []
        return JoinResult(member.member_id, ErrorCode.NONE, group.generation_id, group.protocol_type,
                          group.protocol_name, group.leader_id or "", members)

    def _add_member_and_rebalance(self, group, member_id, group_instance_id, client_id, client_host,
                                  rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                  respond) -> None:
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, list(protocols), is_new=True)
        if group.is_(PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, respond)
        # New members cannot heartbeat yet, and a client that gave up on its JoinGroup may
        # retry under a new id: give them a long but finite time to complete the join.
        self._schedule_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        if member.is_static:
            log.info("Adding new static member %s to group %s with member id %s.",
                     group_instance_id, group.group_id, member_id)
            group.static_members[group_instance_id] = member_id
        else:
            group.pending_members.discard(member_id)
            timer = group.pending_timers.pop(member_id, None)
            if timer is not None and timer.active():
                timer.cancel()
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                             f"{group_instance_id}")

    def _update_member_and_rebalance(self, group, member, protocols, respond, reason: str) -> None:
        group.update_member(member, protocols, respond)
        self._maybe_prepare_rebalance(group, reason)

    def _update_static_member_and_rebalance(self, group: GroupMetadata, new_member_id: str,
                                            group_instance_id: str, protocols, respond) -> None:
        """A static member rejoined without its member id: it takes over its old slot."""
        old_member_id = group.static_members[group_instance_id]
        log.info("Static member %s of group %s with unknown member id rejoins, assigning new member id %s, "
                 "while old member id %s will be removed.", group_instance_id, group.group_id,
                 new_member_id, old_member_id)
        current_leader = group.leader_id or ""
        member = group.replace_group_instance(old_member_id, new_member_id, group_instance_id)
        self._complete_and_schedule_next_heartbeat(group, member)
        old_protocols = list(member.protocols)
        group.update_member(member, protocols, respond)
        if group.is_(STABLE):
            if group.protocol_name == group.select_protocol():
                # Same protocol: persist the new member id, no rebalance. The old leader id is
                # returned so that even a returning leader does not compute an assignment a
                # Stable group would not hand out.
                assignment = {m.member_id: m.assignment for m in group.members.values()}

                def stored(error: ErrorCode) -> None:
                    if error != ErrorCode.NONE:
                        log.warning("Failed to persist metadata for group %s: %s", group.group_id, error.name)
                        group.update_member(member, old_protocols, None)
                        old = group.replace_group_instance(new_member_id, old_member_id, group_instance_id)
                        self._complete_and_schedule_next_heartbeat(group, old)
                        respond(JoinResult(UNKNOWN_MEMBER_ID, error, group.generation_id, group.protocol_type,
                                           group.protocol_name, current_leader))
                    else:
                        group.maybe_invoke_join_callback(member, JoinResult(
                            new_member_id, ErrorCode.NONE, group.generation_id, group.protocol_type,
                            group.protocol_name, current_leader))
                self.manager.store_group(group, assignment, self._guarded(stored))
            else:
                self._maybe_prepare_rebalance(group, f"Group's selectedProtocol will change because static "
                                                     f"member {new_member_id} with instance id "
                                                     f"{group_instance_id} joined with change of protocol")
        elif group.is_(COMPLETING_REBALANCE):
            # The leader may already be assigning to the old member id: start over.
            self._prepare_rebalance(group, f"Updating metadata for static member {new_member_id} with "
                                           f"instance id {group_instance_id}")

    # -- the rebalance ------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        if group.is_(EMPTY):
            initial = self.config.initial_rebalance_delay_ms
            delay = RebalanceDelay(initial, initial=True,
                                   remaining_ms=max(group.rebalance_timeout_ms() - initial, 0))
        else:
            delay = RebalanceDelay(group.rebalance_timeout_ms())
        group.transition_to(PREPARING_REBALANCE)
        log.info("%sPreparing to rebalance group %s in state %s with old generation %d (%s-%d) (reason: %s)",
                 self.log_prefix, group.group_id, group.state, group.generation_id, OFFSETS_TOPIC,
                 self.partition_for(group.group_id), reason)
        self._watch_rebalance(group, delay)

    def _watch_rebalance(self, group: GroupMetadata, delay: RebalanceDelay) -> None:
        previous = group.rebalance_op
        if previous is not None and previous.timer is not None and previous.timer.active():
            previous.timer.cancel()
        group.rebalance_op = delay
        if not delay.initial and group.has_all_members_joined():
            self._complete_rebalance_delay(group, delay)
            return
        delay.timer = self.reactor.callLater(delay.delay_ms / 1000.0, self._rebalance_delay_expired, group, delay)

    def _check_join(self, group: GroupMetadata) -> None:
        """Everyone is back: end the wait early (an initial delay always runs its course)."""
        delay = group.rebalance_op
        if delay is not None and not delay.completed and not delay.initial and group.has_all_members_joined():
            self._complete_rebalance_delay(group, delay)

    @entry
    def _rebalance_delay_expired(self, group: GroupMetadata, delay: RebalanceDelay) -> None:
        delay.timer = None
        self._complete_rebalance_delay(group, delay)

    def _complete_rebalance_delay(self, group: GroupMetadata, delay: RebalanceDelay) -> None:
        if delay.completed:
            return
        delay.completed = True
        if delay.timer is not None and delay.timer.active():
            delay.timer.cancel()
        if group.rebalance_op is delay:
            group.rebalance_op = None
        if delay.initial and group.new_member_added and delay.remaining_ms != 0:
            group.new_member_added = False
            wait = min(self.config.initial_rebalance_delay_ms, delay.remaining_ms)
            self._watch_rebalance(group, RebalanceDelay(wait, initial=True,
                                                        remaining_ms=max(delay.remaining_ms - delay.delay_ms, 0)))
            return
        self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        gone = [m for m in group.not_yet_rejoined_members() if not m.is_static]
        if gone:
            log.info("%sGroup %s remove dynamic members who haven't joined: %s", self.log_prefix,
                     group.group_id, [m.member_id for m in gone])
        for member in gone:
            self._remove_heartbeat_for_leaving_member(member)
            group.remove(member.member_id)
        if group.is_(DEAD):
            log.info("%sGroup %s is dead, skipping rebalance stage", self.log_prefix, group.group_id)
        elif not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another round until the sessions of the silent ones expire.
            log.error("%sGroup %s could not complete rebalance because no members rejoined",
                      self.log_prefix, group.group_id)
            self._watch_rebalance(group, RebalanceDelay(group.rebalance_timeout_ms()))
        else:
            group.init_next_generation()
            partition = self.partition_for(group.group_id)
            if group.is_(EMPTY):
                log.info("%sGroup %s with generation %d is now empty (%s-%d)", self.log_prefix,
                         group.group_id, group.generation_id, OFFSETS_TOPIC, partition)

                def stored(error: ErrorCode) -> None:
                    if error != ErrorCode.NONE:
                        log.warning("Failed to write empty metadata for group %s: %s", group.group_id, error.name)
                self.manager.store_group(group, {}, self._guarded(stored))
            else:
                log.info("%sStabilized group %s generation %d (%s-%d) with %d members", self.log_prefix,
                         group.group_id, group.generation_id, OFFSETS_TOPIC, partition, group.size)
                for member in list(group.members.values()):
                    group.maybe_invoke_join_callback(member, self._join_answer(group, member))
                    self._complete_and_schedule_next_heartbeat(group, member)
                    member.is_new = False

    # -- SyncGroup ----------------------------------------------------------------------

    @entry
    def sync_group(self, group_id: str, generation_id: int, member_id: str, protocol_type: str | None,
                   protocol_name: str | None, group_instance_id: str | None,
                   assignments: dict[str, bytes]) -> defer.Deferred:
        """Deferred[SyncResult]; members wait until the leader's assignment is stored."""
        d = defer.Deferred()
        respond = self._responder(d)
        error = self.validate_group_status(group_id, "sync_group")
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # The rebalance state was lost with the old coordinator: make the member rejoin.
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif error is not None:
            respond(SyncResult(error))
        else:
            group = self.manager.get_group(group_id)
            if group is None:
                respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            else:
                self._do_sync_group(group, generation_id, member_id, protocol_type, protocol_name,
                                    group_instance_id, assignments, respond)
        return d

    def _do_sync_group(self, group, generation_id, member_id, protocol_type, protocol_name, group_instance_id,
                       assignments, respond) -> None:
        if group.is_(DEAD):
            respond(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        elif group.is_static_member_fenced(member_id, group_instance_id):
            respond(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        elif not group.has(member_id):
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif generation_id != group.generation_id:
            respond(SyncResult(ErrorCode.ILLEGAL_GENERATION))
        elif ((protocol_type is not None and group.protocol_type != protocol_type)
              or (protocol_name is not None and group.protocol_name != protocol_name)):
            respond(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        elif group.is_(EMPTY):
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.is_(PREPARING_REBALANCE):
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_(COMPLETING_REBALANCE):
            group.get(member_id).awaiting_sync = respond
            if group.is_leader(member_id):
                log.info("%sAssignment received from leader for group %s for generation %d",
                         self.log_prefix, group.group_id, group.generation_id)
                assignment = {m: assignments.get(m, b"") for m in group.members}
                missing = [m for m in group.members if m not in assignments]
                if missing:
                    log.warning("Setting empty assignments for members %s of %s for generation %d",
                                missing, group.group_id, group.generation_id)

                def stored(error: ErrorCode) -> None:
                    # Someone may have joined meanwhile: only the same generation, still
                    # awaiting its assignment, may become Stable.
                    if group.is_(COMPLETING_REBALANCE) and generation_id == group.generation_id:
                        if error != ErrorCode.NONE:
                            self._reset_and_propagate_assignment_error(group, error)
                            self._maybe_prepare_rebalance(group, f"error when storing group assignment "
                                                                 f"during SyncGroup (member: {member_id})")
                        else:
                            self._set_and_propagate_assignment(group, assignment)
                            group.transition_to(STABLE)
                self.manager.store_group(group, assignment, self._guarded(stored))
        else:   # Stable: the assignment it already has
            member = group.get(member_id)
            respond(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._complete_and_schedule_next_heartbeat(group, member)

    def _set_and_propagate_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self._propagate_assignment(group, ErrorCode.NONE)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            result = SyncResult(error, group.protocol_type if ok else None, group.protocol_name if ok else None,
                                member.assignment)
            if group.maybe_invoke_sync_callback(member, result):
                # Its session may have run out while it waited for the leader: restart it.
                self._complete_and_schedule_next_heartbeat(group, member)

    # -- Heartbeat ----------------------------------------------------------------------

    @entry
    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> ErrorCode:
        error = self.validate_group_status(group_id, "heartbeat")
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE          # still loading: answer blindly, as Kafka does
        if error is not None:
            return error
        group = self.manager.get_group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._complete_and_schedule_next_heartbeat(group, group.get(member_id))
        if group.is_(PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        # Stable, or CompletingRebalance (members may heartbeat between JoinGroup and SyncGroup)
        return ErrorCode.NONE

    def _schedule_expiration(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int) -> None:
        self._cancel_heartbeat(member)
        member.heartbeat_timer = self.reactor.callLater(timeout_ms / 1000.0, self._heartbeat_expired, group, member)

    def _complete_and_schedule_next_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._schedule_expiration(group, member, member.session_timeout_ms)

    @staticmethod
    def _cancel_heartbeat(member: MemberMetadata) -> None:
        timer, member.heartbeat_timer = member.heartbeat_timer, None
        if timer is not None and timer.active():
            timer.cancel()

    def _remove_heartbeat_for_leaving_member(self, member: MemberMetadata) -> None:
        member.is_leaving = True
        self._cancel_heartbeat(member)

    @entry
    def _heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.heartbeat_timer = None
        if group.is_(DEAD):
            log.info("%sReceived notification of heartbeat expiration for member %s after group %s had "
                     "already been unloaded or deleted.", self.log_prefix, member.member_id, group.group_id)
        elif group.members.get(member.member_id) is not member or member.is_leaving:
            log.debug("Member %s has already been removed from the group.", member.member_id)
        elif member.is_new or not (member.is_awaiting_join or member.is_awaiting_sync):
            # Members waiting in a rebalance count as alive; new ones only until their join completes.
            log.info("%sMember %s in group %s has failed, removing it from the group", self.log_prefix,
                     member.member_id, group.group_id)
            self._remove_member_and_update_group(group, member,
                                                 f"removing member {member.member_id} on heartbeat expiration")

    @entry
    def _on_pending_member_expired(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_timers.pop(member_id, None)
        if group.is_(DEAD) or group.has(member_id):
            return
        log.info("%sPending member %s in group %s has been removed after session timeout expiration.",
                 self.log_prefix, member_id, group.group_id)
        self._remove_pending_member_and_update_group(group, member_id)

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_members.discard(member_id)
        timer = group.pending_timers.pop(member_id, None)
        if timer is not None and timer.active():
            timer.cancel()
        if group.is_(PREPARING_REBALANCE):
            self._check_join(group)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        # A new member may time out with its JoinGroup still pending: tell it to rejoin.
        group.maybe_invoke_join_callback(member, JoinResult(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        self._cancel_heartbeat(member)
        group.remove(member.member_id)
        group.remove_static_member(member.group_instance_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_(PREPARING_REBALANCE):
            self._check_join(group)

    # -- LeaveGroup ---------------------------------------------------------------------

    @entry
    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> LeaveResult:
        """members: (member id, group instance id) pairs; v0-2 clients send one."""
        error = self.validate_group_status(group_id, "leave_group")
        if error is not None:
            return LeaveResult(error)
        group = self.manager.get_group(group_id)
        if group is None:
            return LeaveResult(ErrorCode.NONE, [MemberLeave(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in members])
        if group.is_(DEAD):
            return LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return LeaveResult(ErrorCode.NONE, [MemberLeave(m, i, self._leave_one(group, m, i)) for m, i in members])

    def _leave_one(self, group: GroupMetadata, member_id: str, group_instance_id: str | None) -> ErrorCode:
        if member_id != UNKNOWN_MEMBER_ID and group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if group.is_pending_member(member_id):
            log.info("%sPending member %s is leaving group %s.", self.log_prefix, member_id, group.group_id)
            self._remove_pending_member_and_update_group(group, member_id)
            return ErrorCode.NONE
        if group.has_static_member(group_instance_id):
            member = group.get(group.static_members[group_instance_id])
        elif group.has(member_id):
            member = group.get(member_id)
        else:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._remove_heartbeat_for_leaving_member(member)
        log.info("%sMember[group.instance.id %s, member.id %s] in group %s has left, removing it from the group",
                 self.log_prefix, member.group_instance_id, member.member_id, group.group_id)
        self._remove_member_and_update_group(group, member, f"removing member {member.member_id} on LeaveGroup")
        return ErrorCode.NONE

    # -- loading ------------------------------------------------------------------------

    def _on_group_loaded(self, group: GroupMetadata) -> None:
        log.info("%sLoading group metadata for %s with generation %d", self.log_prefix, group.group_id,
                 group.generation_id)
        if group.size > self.config.max_group_size:
            self._prepare_rebalance(group, f"Freshly-loaded group is over capacity "
                                           f"({self.config.max_group_size}). Rebalancing in order to give a "
                                           f"chance for consumers to commit offsets")
        for member in list(group.members.values()):
            self._complete_and_schedule_next_heartbeat(group, member)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        log.info("%sUnloading group metadata for %s with generation %d", self.log_prefix, group.group_id,
                 group.generation_id)
        previous = group.state
        group.transition_to(DEAD)
        if previous is PREPARING_REBALANCE:
            for member in list(group.members.values()):
                group.maybe_invoke_join_callback(member, JoinResult(member.member_id, ErrorCode.NOT_COORDINATOR))
        elif previous in (STABLE, COMPLETING_REBALANCE):
            for member in list(group.members.values()):
                group.maybe_invoke_sync_callback(member, SyncResult(ErrorCode.NOT_COORDINATOR))
        self._cancel_timers(group)

    def _cancel_timers(self, group: GroupMetadata) -> None:
        for member in group.members.values():
            self._cancel_heartbeat(member)
        delay, group.rebalance_op = group.rebalance_op, None
        if delay is not None:
            delay.completed = True
            if delay.timer is not None and delay.timer.active():
                delay.timer.cancel()
        for timer in group.pending_timers.values():
            if timer.active():
                timer.cancel()
        group.pending_timers.clear()
