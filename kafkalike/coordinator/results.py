"""What the coordinator answers: plain results the API handlers turn into responses."""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkalike.protocol.errors import ErrorCode

NO_GENERATION = -1
NO_LEADER = ""
NO_PROTOCOL = ""
NO_STATE = ""


@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass
class JoinResult:
    member_id: str
    error: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = NO_LEADER
    members: list[JoinedMember] = field(default_factory=list)


@dataclass
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class MemberLeave:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass
class LeaveResult:
    error: ErrorCode
    members: list[MemberLeave] = field(default_factory=list)


@dataclass(frozen=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary] = field(default_factory=list)


@dataclass(frozen=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True)
class FetchedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode = ErrorCode.NONE


INVALID_OFFSET = FetchedOffset(-1, -1, "", ErrorCode.NONE)
EMPTY_GROUP = GroupSummary(NO_STATE, "", NO_PROTOCOL)
DEAD_GROUP = GroupSummary("Dead", "", NO_PROTOCOL)
