"""A group's membership and committed offsets, with Kafka 2.8's state table.

The coordinator decides; this module only keeps the books and refuses transitions the
table does not allow, so a wrong turn in the coordinator fails loudly instead of
leaving a group in a state no client can get out of.
"""
from __future__ import annotations

import enum
import struct
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from kafkalike.coordinator.records import OffsetAndMetadata
from kafkalike.coordinator.results import (NO_PROTOCOL, GroupOverview, GroupSummary, JoinedMember, JoinResult,
                                           MemberSummary, SyncResult)
from kafkalike.protocol.errors import ErrorCode, ProtocolDecodeError
from kafkalike.protocol.messages.consumer_protocol import ConsumerProtocolSubscription
from kafkalike.protocol.types import Reader

CONSUMER_PROTOCOL_TYPE = "consumer"
TopicPartition = tuple[str, int]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:      # the names Kafka's tools print
        return self.value


EMPTY = GroupState.EMPTY
PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# state -> the states it may be entered from (Kafka's validPreviousStates)
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    EMPTY: frozenset({PREPARING_REBALANCE}),
    DEAD: frozenset(GroupState),
}


class IllegalGroupTransition(RuntimeError):
    """A transition the state table forbids: a coordinator bug, never a client error."""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: JoinCallback | None = None
    awaiting_sync: SyncCallback | None = None
    is_new: bool = False
    is_leaving: bool = False
    heartbeat_timer: Any = None     # the member's session expiry (an IDelayedCall)

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return len(protocols) == len(self.protocols) and all(
            a[0] == b[0] and bytes(a[1]) == bytes(b[1]) for a, b in zip(protocols, self.protocols))

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name, _ in self.protocols if name in candidates)

    def summary(self, protocol: str | None) -> MemberSummary:
        if protocol is None:
            return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                                 b"", b"")
        return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                             self.metadata(protocol), self.assignment)


@dataclass
class CommitRecord:
    """A cached offset and where its record sits in the log (None while unwritten), so
    an older write can never overwrite a newer one."""

    offset: OffsetAndMetadata
    log_offset: int | None = None


def subscribed_topics_of(metadata: bytes) -> set[str]:
    """Topics of a consumer protocol subscription, read with the v0 layout every version
    starts with (so later versions parse too)."""
    r = Reader(metadata)
    r.int16()
    return set(ConsumerProtocolSubscription.read_from(r, 0).topics)


class GroupMetadata:
    def __init__(self, group_id: str, initial_state: GroupState, now_ms: Callable[[], int]):
        self.group_id = group_id
        self.state = initial_state
        self._now_ms = now_ms
        self.current_state_timestamp: int | None = now_ms()
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}        # group.instance.id -> member id
        self.pending_members: set[str] = set()           # ids handed out with MEMBER_ID_REQUIRED
        self.num_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.offsets: dict[TopicPartition, CommitRecord] = {}
        self.pending_offset_commits: dict[TopicPartition, OffsetAndMetadata] = {}
        # TxnOffsetCommit: producer id -> offsets its open transaction wrote (log offset
        # None until the append is acknowledged); visible only once its marker commits them.
        self.pending_txn_offset_commits: dict[int, dict[TopicPartition, CommitRecord]] = {}
        self.subscribed_topics: set[str] | None = None
        self.new_member_added = False
        # Coordinator-owned timers: the running rebalance delay and pending members' expiries.
        self.rebalance_op: Any = None
        self.pending_timers: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (f"GroupMetadata(group_id={self.group_id!r}, generation={self.generation_id}, "
                f"protocol_type={self.protocol_type!r}, state={self.state}, members={list(self.members)})")

    # -- state --------------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[PREPARING_REBALANCE]

    def transition_to(self, target: GroupState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            allowed = ",".join(sorted(str(s) for s in VALID_PREVIOUS_STATES[target]))
            raise IllegalGroupTransition(
                f"Group {self.group_id} should be in the {allowed} states before moving to {target} "
                f"state. Instead it is in {self.state} state")
        self.state = target
        self.current_state_timestamp = self._now_ms()

    # -- members ------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def add(self, member: MemberMetadata, callback: JoinCallback | None = None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        for name, _ in member.protocols:
            self.supported_protocols[name] += 1
        member.awaiting_join = callback
        if callback is not None:
            self.num_awaiting_join += 1

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            for name, _ in member.protocols:
                self.supported_protocols[name] -= 1
            if member.is_awaiting_join:
                self.num_awaiting_join -= 1
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]],
                      callback: JoinCallback | None) -> None:
        for name, _ in member.protocols:
            self.supported_protocols[name] -= 1
        for name, _ in protocols:
            self.supported_protocols[name] += 1
        member.protocols = list(protocols)
        if callback is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.awaiting_join = callback

    def maybe_invoke_join_callback(self, member: MemberMetadata, result: JoinResult) -> None:
        if member.awaiting_join is not None:
            callback, member.awaiting_join = member.awaiting_join, None
            self.num_awaiting_join -= 1
            callback(result)

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: SyncResult) -> bool:
        if member.awaiting_sync is None:
            return False
        callback, member.awaiting_sync = member.awaiting_sync, None
        callback(result)
        return True

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick any member that did; False if none did
        (or the group has no leader at all)."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def replace_group_instance(self, old_member_id: str, new_member_id: str,
                               group_instance_id: str) -> MemberMetadata:
        """A static member came back under a new member id: the old id is fenced at once."""
        member = self.members.pop(old_member_id)
        self.maybe_invoke_join_callback(member, JoinResult(old_member_id, ErrorCode.FENCED_INSTANCE_ID))
        self.maybe_invoke_sync_callback(member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members and member_id not in self.members

    def has_static_member(self, group_instance_id: str | None) -> bool:
        return group_instance_id is not None and group_instance_id in self.static_members

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        return (self.has_static_member(group_instance_id)
                and self.static_members[group_instance_id] != member_id)

    def remove_static_member(self, group_instance_id: str | None) -> None:
        if group_instance_id is not None:
            self.static_members.pop(group_instance_id, None)

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    # -- protocols ----------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        if self.is_(EMPTY):
            return bool(protocol_type) and bool(protocols)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols[p] == len(self.members) for p in protocols))

    def select_protocol(self) -> str:
        """Each member votes for its favourite protocol that every member supports."""
        if not self.members:
            raise IllegalGroupTransition("Cannot select protocol for empty group")
        candidates = {p for p, n in self.supported_protocols.items() if n == len(self.members)}
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda p: votes[p])   # ties: the first protocol voted for

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        try:
            topics: set[str] = set()
            for m in self.members.values():
                topics |= subscribed_topics_of(m.metadata(self.protocol_name))
            return topics
        except (ProtocolDecodeError, struct.error, KeyError):
            return None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Unknown subscriptions count as subscribed, to be safe (as Kafka does)."""
        return self.subscribed_topics is None or topic in self.subscribed_topics

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY)

    def current_member_metadata(self) -> list[JoinedMember]:
        if self.state in (DEAD, PREPARING_REBALANCE):
            raise IllegalGroupTransition(f"Cannot obtain member metadata for group in state {self.state}")
        return [JoinedMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]

    def summary(self) -> GroupSummary:
        """Metadata and assignments are shown only when the group is Stable, as Kafka does."""
        if self.is_(STABLE):
            members = [m.summary(self.protocol_name) for m in self.members.values()]
            return GroupSummary(str(self.state), self.protocol_type or "", self.protocol_name, members)
        members = [m.summary(None) for m in self.members.values()]
        return GroupSummary(str(self.state), self.protocol_type or "", NO_PROTOCOL, members)

    def overview(self) -> GroupOverview:
        return GroupOverview(self.group_id, self.protocol_type or "", str(self.state))

    # -- offsets ------------------------------------------------------------------------

    def initialize_offsets(self, offsets: dict[TopicPartition, CommitRecord],
                           pending_txn: dict[int, dict[TopicPartition, CommitRecord]] | None = None) -> None:
        self.offsets.update(offsets)
        for producer_id, pending in (pending_txn or {}).items():
            self.pending_txn_offset_commits.setdefault(producer_id, {}).update(pending)

    def prepare_offset_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self.pending_offset_commits.update(offsets)

    def on_offset_commit_append(self, tp: TopicPartition, record: CommitRecord) -> None:
        if tp in self.pending_offset_commits:
            current = self.offsets.get(tp)
            if current is None or current.log_offset is None or current.log_offset < record.log_offset:
                self.offsets[tp] = record
        if self.pending_offset_commits.get(tp) == record.offset:
            del self.pending_offset_commits[tp]

    def fail_pending_offset_write(self, tp: TopicPartition, offset: OffsetAndMetadata) -> None:
        if self.pending_offset_commits.get(tp) == offset:
            del self.pending_offset_commits[tp]

    def has_pending_offset_commit(self, tp: TopicPartition) -> bool:
        return tp in self.pending_offset_commits or any(
            tp in offsets for offsets in self.pending_txn_offset_commits.values())

    # -- transactional offsets (KIP-98) ------------------------------------------------------

    def prepare_txn_offset_commit(self, producer_id: int, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        pending = self.pending_txn_offset_commits.setdefault(producer_id, {})
        for tp, o in offsets.items():
            pending[tp] = CommitRecord(o, None)

    def on_txn_offset_commit_append(self, producer_id: int, tp: TopicPartition, record: CommitRecord) -> None:
        """The write landed: remember where, so a later plain commit outranks it on completion."""
        pending = self.pending_txn_offset_commits.get(producer_id)
        if pending is not None and tp in pending and pending[tp].log_offset is None \
                and pending[tp].offset == record.offset:
            pending[tp] = record

    def fail_pending_txn_offset_commit(self, producer_id: int, tp: TopicPartition,
                                       offset: OffsetAndMetadata) -> None:
        pending = self.pending_txn_offset_commits.get(producer_id)
        if pending is not None and tp in pending and pending[tp].offset == offset:
            del pending[tp]
            if not pending:
                del self.pending_txn_offset_commits[producer_id]

    def has_pending_txn_offsets_from(self, producer_id: int) -> bool:
        return producer_id in self.pending_txn_offset_commits

    def complete_pending_txn_offset_commit(self, producer_id: int, committed: bool) -> None:
        """The transaction's marker is written: its acknowledged offsets become the group's
        (unless a newer commit is already there), or are dropped on abort."""
        pending = self.pending_txn_offset_commits.pop(producer_id, None)
        if not pending or not committed:
            return
        for tp, record in pending.items():
            if record.log_offset is None:
                continue    # never acknowledged: not in the log, so not part of the transaction
            current = self.offsets.get(tp)
            if current is None or current.log_offset is None or current.log_offset < record.log_offset:
                self.offsets[tp] = record

    def remove_offsets(self, tps) -> dict[TopicPartition, OffsetAndMetadata]:
        removed = {}
        for tp in list(tps):
            self.pending_offset_commits.pop(tp, None)
            for pending in self.pending_txn_offset_commits.values():
                pending.pop(tp, None)
            record = self.offsets.pop(tp, None)
            if record is not None:
                removed[tp] = record.offset
        return removed

    def remove_all_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.remove_offsets(list(self.offsets))

    def remove_expired_offsets(self, now_ms: int, retention_ms: int) -> dict[TopicPartition, OffsetAndMetadata]:
        """Kafka 2.1+ retention (KIP-211): an Empty group's offsets expire retention_ms after
        it became Empty; a consumer group's offsets of topics it no longer subscribes to
        expire retention_ms after their commit; explicit expire timestamps win."""
        def expired(base, skip_topics=frozenset()):
            out = {}
            for tp, record in self.offsets.items():
                if tp[0] in skip_topics or tp in self.pending_offset_commits:
                    continue
                o = record.offset
                if o.expire_timestamp is not None:
                    if now_ms >= o.expire_timestamp:
                        out[tp] = o
                elif now_ms - base(o) >= retention_ms:
                    out[tp] = o
            return out

        if self.protocol_type is not None and self.is_(EMPTY):
            state_ts = self.current_state_timestamp
            found = expired(lambda o: state_ts if state_ts is not None else o.commit_timestamp)
        elif self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None:
            found = expired(lambda o: o.commit_timestamp, self.subscribed_topics)
        elif self.protocol_type is None:
            found = expired(lambda o: o.commit_timestamp)
        else:
            found = {}
        for tp in found:
            del self.offsets[tp]
        return found

    def offset(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        record = self.offsets.get(tp)
        return record.offset if record is not None else None

    def all_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: r.offset for tp, r in self.offsets.items()}

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_offset_commits) or bool(self.pending_txn_offset_commits)


def load_group(group_id: str, record, now_ms: Callable[[], int]) -> GroupMetadata:
    """Rebuild a group from its metadata record: Stable if it had members, else Empty."""
    group = GroupMetadata(group_id, STABLE if record.members else EMPTY, now_ms)
    group.generation_id = record.generation
    group.protocol_type = record.protocol_type or None
    group.protocol_name = record.protocol
    group.leader_id = record.leader
    group.current_state_timestamp = record.current_state_timestamp
    for m in record.members:
        member = MemberMetadata(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
            session_timeout_ms=m.session_timeout_ms, protocol_type=record.protocol_type,
            protocols=[(record.protocol, m.subscription)], assignment=m.assignment)
        group.add(member)
        if member.is_static:
            group.static_members[member.group_instance_id] = member.member_id
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
