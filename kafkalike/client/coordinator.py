"""Consumer group membership and offset commits: Java's ConsumerCoordinator, in one thread plus a heartbeat.

The user's thread does everything that calls user code or may take long: finding the
coordinator, JoinGroup and SyncGroup (the leader runs the assignor), the rebalance
listener, fetching committed offsets for new partitions, and commits. A background
heartbeat thread only sends Heartbeat while the member is stable, notices a session the
broker must consider gone, and leaves the group when poll() was not called within
max.poll.interval.ms (as Java does, so the group moves on without a stuck member); it
reports what it saw through flags the next poll() acts on.

Two locks, never held together in the wrong order: `lock` guards this object's state
for short updates only and is never held while waiting on the network; the network
client's lock is taken by whoever polls (the heartbeat thread only tries, never waits).

Eager protocols (range, roundrobin, sticky) revoke every partition before joining;
cooperative-sticky keeps its partitions through the rebalance, revokes only those the
leader took away and then joins again so they can go to their new owner (KIP-429).
A member with group.instance.id (static membership) does not leave the group on close,
so a restart within session.timeout.ms gets its partitions back without a rebalance.

Time is read only through the injectable `clock` (time.monotonic by default, as Java
passes its Time around), so tests can walk the session, heartbeat, poll-interval,
backoff and auto-commit timing on a fake clock through a fake network.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from kafkalike.client.assignors import (
    COOPERATIVE,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkalike.client.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    KafkaError,
    KafkaTimeoutError,
    RebalanceInProgressError,
    WakeupError,
    error_for_code,
)
from kafkalike.client.metadata import TopicPartition
from kafkalike.common.topics import INTERNAL_TOPICS
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from kafkalike.client.metrics import CoordinatorMetrics, Metrics
from kafkalike.protocol.messages.heartbeat import HeartbeatRequest
from kafkalike.protocol.messages.join_group import JoinGroupRequest
from kafkalike.protocol.messages.leave_group import LeaveGroupRequest
from kafkalike.protocol.messages.offset_commit import OffsetCommitRequest
from kafkalike.protocol.messages.offset_fetch import OffsetFetchRequest
from kafkalike.protocol.messages.sync_group import SyncGroupRequest

log = logging.getLogger("kafkalike.client.coordinator")

NO_GENERATION = -1
UNKNOWN_MEMBER = ""
_COORDINATOR_ERRORS = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.REQUEST_TIMED_OUT}
_MEMBER_GONE = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION}


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class ConsumerRebalanceListener:
    """Base for subscribe(listener=...); duck typing works too. Called from poll() only."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.on_partitions_revoked(lost)


def _code(value: int) -> ErrorCode:
    return ErrorCode(value) if value in ErrorCode._value2member_map_ else ErrorCode.UNKNOWN_SERVER_ERROR


class ConsumerCoordinator:
    def __init__(self, net, subscriptions, *, group_id: str, group_instance_id: str | None, assignors: list,
                 session_timeout_ms: int, rebalance_timeout_ms: int, heartbeat_interval_ms: int,
                 enable_auto_commit: bool, auto_commit_interval_ms: int, retry_backoff_ms: int,
                 default_timeout_ms: int, exclude_internal_topics: bool = True, leave_on_close: bool = True,
                 log_prefix: str = "", clock: Callable[[], float] = time.monotonic,
                 sensors: CoordinatorMetrics | None = None) -> None:
        """`clock` (seconds, monotonic) times every decision this class makes: session and
        poll timeouts, the heartbeat interval, join, commit and lookup deadlines, backoffs
        and auto-commits. Tests pass a fake one to walk that timing without sleeping; in
        use it must be the clock the network layer measures with (time.monotonic), since
        the `now` handed to the network and the metadata comes from it too."""
        self.clock = clock
        self.net = net
        self.subscriptions = subscriptions
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.assignors = assignors
        self.session_timeout = session_timeout_ms / 1000
        self.rebalance_timeout = rebalance_timeout_ms / 1000
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.auto_commit = enable_auto_commit
        self.auto_commit_interval = auto_commit_interval_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.default_timeout = default_timeout_ms / 1000
        self.exclude_internal = exclude_internal_topics
        self.leave_on_close = leave_on_close
        self.log_prefix = log_prefix
        self.lock = threading.RLock()
        self.coordinator: int | None = None
        self.generation = NO_GENERATION
        self.member_id = UNKNOWN_MEMBER
        self.protocol: str | None = None
        self.topics: set[str] = set()       # what the member subscribes to (pattern matches included)
        self.pattern: re.Pattern | None = None
        self.listener: Any = ConsumerRebalanceListener()
        self.need_rejoin = False
        self.lost = False                   # the group dropped us: partitions are lost, not revoked
        self.stable = False
        self.last_poll = self.clock()
        self.last_heartbeat_ok = self.clock()
        self.next_heartbeat = 0.0
        self.heartbeat_in_flight = False
        self.next_auto_commit = self.clock() + self.auto_commit_interval
        self._completions: deque[Callable[[], None]] = deque()
        self._heartbeat: HeartbeatThread | None = None
        self._joining = False
        self._pending: tuple[str, Any] | None = None  # ("join" | "sync", future) while a join is under way
        self._leave_future = None
        self._join_topics: set[str] = set()
        # As leader: the partition count of every topic the group subscribed to when we assigned.
        self._assignment_snapshot: dict[str, int] | None = None
        self._snapshot_topics: set[str] = set()
        self._async_commits = 0             # commit_async requests awaiting an answer
        self._fenced: FencedInstanceIdError | None = None
        self._closed = False
        # Java's coordinator metrics (commit, join, sync, rebalance, heartbeat latencies).
        self.sensors = sensors if sensors is not None else CoordinatorMetrics(
            Metrics("consumer"), lambda: len(subscriptions.assignment), clock=clock)
        self._rebalance_started = 0.0
        self._join_sent = 0.0
        self._heartbeat_sent = 0.0

    # -- subscription ------------------------------------------------------------------------

    @property
    def group_managed(self) -> bool:
        return bool(self.topics) or self.pattern is not None

    def subscribe(self, topics: Iterable[str] | None, pattern: "re.Pattern | None", listener: Any) -> None:
        with self.lock:
            self.pattern = pattern
            self.topics = set(topics or ())
            if listener is not None:
                self.listener = listener
            self.net.all_topics = pattern is not None
            now = self.clock()
            for topic in self.topics:
                self.net.metadata.add_topic(topic, now)
            if pattern is not None:
                self.net.metadata.request_update()
            self.need_rejoin = True

    def unsubscribe(self) -> None:
        if self.group_managed:
            self._invoke("on_partitions_revoked", set(self.subscriptions.assignment))
            self.maybe_leave_group("the consumer unsubscribed from all topics")
        with self.lock:
            self.topics, self.pattern = set(), None
            self.net.all_topics = False
            self.subscriptions.assign([])

    def _update_pattern_topics(self) -> None:
        if self.pattern is None:
            return
        matched = {t for t in self.net.cluster.topics if self.pattern.fullmatch(t)
                   and not (self.exclude_internal and t in INTERNAL_TOPICS)}
        if matched != self.topics:
            log.info("%sSubscribed to pattern: '%s' -> %s", self.log_prefix, self.pattern.pattern, sorted(matched))
            self.topics = matched
            self.need_rejoin = True

    def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        cluster = self.net.cluster
        return {t: cluster.partition_count(t) for t in topics if cluster.partition_count(t)}

    def _check_assignment_snapshot(self) -> None:
        """The leader rejoins when a subscribed topic gained partitions, appeared or went (as Java's does)."""
        snapshot = self._assignment_snapshot
        if snapshot is None or self._joining:
            return
        counts = self._partition_counts(self._snapshot_topics)
        if counts != snapshot:
            log.info("%sRequesting to re-join the group: the partitions of subscribed topics changed from %s "
                     "to %s since the last assignment", self.log_prefix, snapshot, counts)
            self._assignment_snapshot = None
            self.need_rejoin = True

    # -- the user's poll -----------------------------------------------------------------------

    def poll(self, timeout: float) -> None:
        """Everything group related that is due: completions, rejoining (up to `timeout`), auto commit."""
        self.last_poll = self.clock()
        self._run_completions()
        if self._fenced is not None:
            raise self._fenced
        if self.group_managed:
            self._update_pattern_topics()
            self._check_assignment_snapshot()
            if self.need_rejoin or self.generation == NO_GENERATION or self.lost or self._joining:
                self.ensure_active_group(timeout)
        if self.auto_commit and self.clock() >= self.next_auto_commit:
            self.next_auto_commit = self.clock() + self.auto_commit_interval
            if self.subscriptions.assignment:
                self.commit_async(None, self._log_auto_commit)

    def _log_auto_commit(self, offsets, error) -> None:
        if error is not None:
            log.warning("%sAsynchronous auto-commit of offsets %s failed: %s", self.log_prefix, offsets, error)

    def _run_completions(self) -> None:
        while self._completions:
            self._completions.popleft()()

    def _invoke(self, method: str, partitions: set[TopicPartition]) -> None:
        try:
            getattr(self.listener, method)(set(partitions))
        except Exception:
            log.error("%sUser provided listener failed on invocation of %s for partitions %s", self.log_prefix,
                      method, sorted(partitions), exc_info=True)
            raise

    # -- the coordinator -----------------------------------------------------------------------

    def ensure_coordinator(self, timeout: float) -> None:
        deadline = self.clock() + timeout
        while self.coordinator is None:
            left = deadline - self.clock()
            if left <= 0:
                raise KafkaTimeoutError(f"Timeout of {int(timeout * 1000)}ms expired before the group coordinator "
                                        "could be found")
            node = self.net.client.least_loaded_node(self.clock())
            if node is None:
                self.net.poll(min(left, self.retry_backoff))
                continue
            future = self.net.send(node, FindCoordinatorRequest(key=self.group_id, key_type=0))
            self.net.poll_until(lambda: future.done, left)
            if not future.done:
                continue
            response = future.value
            if future.exception is None and response.error_code == ErrorCode.NONE:
                if response.node_id not in self.net.cluster.nodes:
                    self.net.await_metadata(max(0.0, deadline - self.clock()))
                if response.node_id in self.net.cluster.nodes:
                    self.coordinator = self.net.coordinator_connection(response.node_id)
                    log.info("%sDiscovered group coordinator %s:%d (id: %d rack: null)", self.log_prefix,
                             response.host, response.port, self.coordinator)
                    self.last_heartbeat_ok = self.clock()
                    return
            self.net.poll(min(self.retry_backoff, max(0.0, deadline - self.clock())))

    def coordinator_dead(self, why: str) -> None:
        if self.coordinator is not None:
            log.info("%sGroup coordinator %s is unavailable or invalid due to cause: %s. Rediscovery will be "
                     "attempted.", self.log_prefix, self.coordinator, why)
        self.coordinator = None

    def _send_to_coordinator(self, request, timeout: float):
        """Send and wait; returns the response or raises the network's error."""
        self.ensure_coordinator(timeout)
        future = self.net.send(self.coordinator, request)
        if not self.net.poll_until(lambda: future.done, timeout):
            raise KafkaTimeoutError(f"{type(request).__name__} got no answer within {int(timeout * 1000)}ms")
        if future.exception is not None:
            self.coordinator_dead(str(future.exception))
            raise future.exception
        return future.value

    # -- joining ---------------------------------------------------------------------------------

    def _reset_generation(self) -> None:
        with self.lock:
            self.generation, self.member_id, self.protocol = NO_GENERATION, UNKNOWN_MEMBER, None
            self.stable = False

    def ensure_active_group(self, timeout: float) -> bool:
        """Advance the join (JoinGroup, then SyncGroup) for at most `timeout` seconds; True once stable.

        The exchange continues across calls, so poll(0) never blocks on a rebalance that
        waits for other members (which may be polled by this very thread)."""
        deadline = self.clock() + timeout
        if self._heartbeat is None:
            self._heartbeat = HeartbeatThread(self)
            self._heartbeat.start()
        if not self._joining:
            self._rebalance_started = self.clock()
            self._prepare_join()
            self._joining = True
        while True:
            if self._pending is None:
                try:
                    self.ensure_coordinator(max(0.0, deadline - self.clock()))
                except KafkaTimeoutError:
                    return False
                self._pending = ("join", self._send_join())
                self._join_sent = self.clock()
            kind, future = self._pending
            if not future.done and not self.net.poll_until(lambda: future.done,
                                                           max(0.0, deadline - self.clock())):
                return False
            self._pending = None
            if future.exception is not None:
                self.coordinator_dead(str(future.exception))
                log.info("%s%s failed: %s", self.log_prefix, "JoinGroup" if kind == "join" else "SyncGroup",
                         future.exception)
                self.sensors.failed_rebalance.record()
            elif kind == "join":
                sync = self._handle_join(future.value)
                if sync is not None:
                    now = self.clock()
                    self.sensors.join.record((now - self._join_sent) * 1000)
                    self._pending = ("sync", self.net.send(self.coordinator, sync))
                    self._join_sent = now
                    continue
                self.sensors.failed_rebalance.record()
            else:
                assigned = self._handle_sync(future.value)
                if assigned is not None:
                    now = self.clock()
                    sensors = self.sensors
                    sensors.sync.record((now - self._join_sent) * 1000)
                    sensors.rebalance.record((now - self._rebalance_started) * 1000)
                    sensors.last_rebalance = self.clock()
                    self._joining = False
                    self._join_complete(assigned)
                    return True
                self.sensors.failed_rebalance.record()
            if self.clock() >= deadline:
                return False
            self.net.poll(min(self.retry_backoff, max(0.0, deadline - self.clock())))

    def _prepare_join(self) -> None:
        """Before joining: report lost partitions, or (eager protocols) commit and revoke them all."""
        with self.lock:
            lost, self.lost = self.lost, False
            self._assignment_snapshot = None
        owned = set(self.subscriptions.assignment)
        try:
            if lost and owned:
                self._invoke("on_partitions_lost", owned)
                self.subscriptions.assign([])
                owned = set()
            if owned and not self._cooperative():
                if self.auto_commit:
                    self._commit_quietly(min(self.rebalance_timeout, self.default_timeout))
                self._invoke("on_partitions_revoked", owned)
                self.subscriptions.assign([])
        finally:
            # Heartbeats (and commits, as from a revoke listener) go on until the JoinGroup is sent.
            with self.lock:
                self.stable = False

    def _cooperative(self) -> bool:
        if self.protocol is not None:
            return any(a.name == self.protocol and a.protocols[0] == COOPERATIVE for a in self.assignors)
        return all(COOPERATIVE in a.protocols for a in self.assignors)

    def _subscription_blob(self, assignor) -> bytes:
        """One per assignor: each may add its own user data (the sticky one its last assignment)."""
        topics = sorted(self.topics)
        user_data = getattr(assignor, "subscription_user_data", lambda topics: None)(topics)
        return encode_subscription(Subscription(topics, user_data, list(self.subscriptions.assignment)))

    def _send_join(self):
        self._join_topics = set(self.topics)
        request = JoinGroupRequest(
            group_id=self.group_id, session_timeout_ms=int(self.session_timeout * 1000),
            rebalance_timeout_ms=int(self.rebalance_timeout * 1000), member_id=self.member_id,
            group_instance_id=self.group_instance_id, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=a.name, metadata=self._subscription_blob(a))
                       for a in self.assignors])
        log.info("%s(Re-)joining group", self.log_prefix)
        return self.net.send(self.coordinator, request)

    def _handle_join(self, response):
        """The SyncGroup request to send next, or None when the join must be tried again."""
        code = _code(response.error_code)
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            return None
        if code != ErrorCode.NONE:
            return self._join_error("JoinGroup", code)
        with self.lock:
            self.generation, self.member_id, self.protocol = (response.generation_id, response.member_id,
                                                              response.protocol_name)
        assignments = self._lead(response) if response.leader == response.member_id else []
        log.info("%sSuccessfully joined group with generation %d", self.log_prefix, self.generation)
        return SyncGroupRequest(group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
                                group_instance_id=self.group_instance_id, protocol_type="consumer",
                                protocol_name=self.protocol, assignments=assignments)

    def _handle_sync(self, answer) -> list[TopicPartition] | None:
        code = _code(answer.error_code)
        if code != ErrorCode.NONE:
            return self._join_error("SyncGroup", code)
        return decode_assignment(answer.assignment)

    def _join_error(self, what: str, code: ErrorCode) -> None:
        log.info("%s%s failed: %s", self.log_prefix, what, code.name)
        if code in _COORDINATOR_ERRORS:
            self.coordinator_dead(code.name)
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._reset_generation()
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            raise self._fence()
        elif code not in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            raise error_for_code(code)
        return None

    def _assignor(self):
        return next(a for a in self.assignors if a.name == self.protocol)

    def _lead(self, response) -> list:
        assignor = self._assignor()
        members = {m.member_id: decode_subscription(m.metadata, m.group_instance_id) for m in response.members}
        topics = {t for s in members.values() for t in s.topics}
        now = self.clock()
        missing = [t for t in topics if t not in self.net.cluster.topics]
        for topic in topics:
            self.net.metadata.add_topic(topic, now)
        if missing:
            try:
                self.net.await_metadata(self.default_timeout)
            except KafkaTimeoutError:
                log.warning("%sNo metadata for %s; assigning what is known", self.log_prefix, missing)
        counts = self._partition_counts(topics)
        self._snapshot_topics, self._assignment_snapshot = topics, counts
        plan = assignor.assign(counts, members)
        log.info("%sFinished assignment for group at generation %d: %s", self.log_prefix, response.generation_id,
                 {m: [str(tp) for tp in tps] for m, tps in plan.items()})
        return [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(tps))
                for m, tps in plan.items()]

    def _join_complete(self, assigned: list[TopicPartition]) -> None:
        on_assignment = getattr(self._assignor(), "on_assignment", None)
        if on_assignment is not None:
            on_assignment(list(assigned), self.generation)
        new = set(assigned)
        owned = set(self.subscriptions.assignment)
        log.info("%sAdding newly assigned partitions: %s", self.log_prefix, ", ".join(sorted(map(str, new - owned))))
        with self.lock:
            self.stable = True
            # A pattern that matched new topics while the join was out needs another round.
            self.need_rejoin = self.topics != self._join_topics
            self.last_heartbeat_ok = self.clock()
            self.next_heartbeat = self.clock() + self.heartbeat_interval
        if self._cooperative():
            revoked = owned - new
            self.subscriptions.assign([tp for tp in self.subscriptions.assignment if tp in new])
            if revoked:
                self._invoke("on_partitions_revoked", revoked)
            self.subscriptions.assign(list(self.subscriptions.assignment) + sorted(new - owned))
            self._invoke("on_partitions_assigned", new - owned)
            if revoked:
                self.need_rejoin = True  # the follow-up rebalance hands the revoked ones to their new owner
        else:
            self.subscriptions.assign(sorted(new))
            self._invoke("on_partitions_assigned", new)

    # -- committed offsets ---------------------------------------------------------------------------

    def committed(self, partitions: Iterable[TopicPartition], timeout: float) -> dict[TopicPartition, Any]:
        tps = list(partitions)
        deadline = self.clock() + timeout
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = OffsetFetchRequest(group_id=self.group_id, require_stable=True, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
        while True:
            left = deadline - self.clock()
            if left <= 0:
                raise KafkaTimeoutError(f"Timeout of {int(timeout * 1000)}ms expired before the last committed "
                                        f"offset for partitions {sorted(map(str, tps))} could be determined.")
            try:
                response = self._send_to_coordinator(request, left)
            except (KafkaTimeoutError, WakeupError):
                raise
            except KafkaError:
                self.net.poll(min(self.retry_backoff, left))
                continue
            top = _code(getattr(response, "error_code", 0))
            retry = top in _COORDINATOR_ERRORS or top == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            if top in _COORDINATOR_ERRORS:
                self.coordinator_dead(top.name)
            elif top not in (ErrorCode.NONE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                raise error_for_code(top)
            out: dict[TopicPartition, Any] = {}
            for topic in response.topics:
                for p in topic.partitions:
                    code = _code(p.error_code)
                    if code in (ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                        retry = True
                    elif code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                        raise error_for_code(code)
                    tp = TopicPartition(topic.name, p.partition_index)
                    out[tp] = (OffsetAndMetadata(p.committed_offset, p.metadata or "",
                                                 p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None)
                               if p.committed_offset >= 0 else None)
            if not retry:
                return {tp: out.get(tp) for tp in tps}
            self.net.poll(min(self.retry_backoff, max(0.0, deadline - self.clock())))

    def refresh_committed_offsets(self, timeout: float) -> None:
        """Give partitions without a position their committed offset; the rest are left to the reset policy."""
        missing = self.subscriptions.missing_positions()
        if not missing:
            return
        found = self.committed(missing, timeout)
        for tp, committed in found.items():
            state = self.subscriptions.assignment.get(tp)
            if committed is not None and state is not None and state.position is None:
                log.info("%sSetting offset for partition %s to the committed offset FetchPosition{offset=%d}",
                         self.log_prefix, tp, committed.offset)
                self.subscriptions.seek(tp, committed.offset)

    # -- committing ------------------------------------------------------------------------------------

    def _current_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: OffsetAndMetadata(s.position) for tp, s in self.subscriptions.assignment.items()
                if s.position is not None}

    def _commit_request(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]):
        by_topic: dict[str, list] = {}
        for tp, om in offsets.items():
            by_topic.setdefault(tp.topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=om.offset,
                committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
                commit_timestamp=-1, committed_metadata=om.metadata))
        with self.lock:
            generation = self.generation if self.group_managed else NO_GENERATION
            member = self.member_id if self.group_managed else UNKNOWN_MEMBER
        return OffsetCommitRequest(
            group_id=self.group_id, generation_id=generation, member_id=member,
            group_instance_id=self.group_instance_id if self.group_managed else None, retention_time_ms=-1,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()])

    def _commit_outcome(self, response) -> Exception | None:
        """None on success; a retriable error, or a fatal one (CommitFailedError after a rebalance)."""
        for topic in response.topics:
            for p in topic.partitions:
                code = _code(p.error_code)
                if code == ErrorCode.NONE:
                    continue
                if code in _COORDINATOR_ERRORS:
                    self.coordinator_dead(code.name)
                    return error_for_code(code)
                if code == ErrorCode.FENCED_INSTANCE_ID:
                    return self._fence()
                if code == ErrorCode.REBALANCE_IN_PROGRESS:
                    self.need_rejoin = True
                    return RebalanceInProgressError(
                        "Offset commit cannot be completed since the consumer group is executing a rebalance at the "
                        "moment. You can try completing the rebalance by calling poll() and then retry commit again")
                if code in _MEMBER_GONE:
                    self._reset_generation()
                    self.need_rejoin = True
                    return CommitFailedError(
                        "Commit cannot be completed since the group has already rebalanced and assigned the "
                        "partitions to another member. This means that the time between subsequent calls to poll() "
                        "was longer than the configured max.poll.interval.ms, which typically implies that the poll "
                        "loop is spending too much time message processing.")
                return error_for_code(code)
        return None

    def _not_committable(self) -> KafkaError | None:
        """Why a group member cannot commit now (Java's generationIfStable() check), or None."""
        if self._fenced is not None:
            return self._fenced
        if not self.group_managed or (self.stable and self.generation != NO_GENERATION):
            return None
        if self._joining:
            return RebalanceInProgressError(
                "Offset commit cannot be completed since the consumer is undergoing a rebalance for auto partition "
                "assignment. You can try completing the rebalance by calling poll() and then retry the operation.")
        return CommitFailedError(
            "Offset commit cannot be completed since the consumer is not part of an active group for auto partition "
            "assignment; it is likely that the consumer was kicked out of the group.")

    def _fence(self) -> FencedInstanceIdError:
        """A newer member took our group.instance.id: fatal, every later poll and commit says so."""
        log.error("%sReceived fatal exception: group.instance.id gets fenced", self.log_prefix)
        with self.lock:
            self._fenced = FencedInstanceIdError(
                f"The broker rejected this static consumer since another consumer with the same "
                f"group.instance.id {self.group_instance_id} has registered with a different member.id.")
            self.stable = False
        return self._fenced

    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None, timeout: float) -> None:
        offsets = self._current_offsets() if offsets is None else dict(offsets)
        if not offsets:
            return
        refused = self._not_committable()
        if refused is not None:
            raise refused
        started = self.clock()
        deadline = started + timeout
        request = self._commit_request(offsets)
        while True:
            left = deadline - self.clock()
            if left <= 0:
                raise KafkaTimeoutError(f"Timeout of {int(timeout * 1000)}ms expired before successfully "
                                        f"committing offsets {offsets}")
            try:
                error = self._commit_outcome(self._send_to_coordinator(request, left))
            except KafkaTimeoutError:
                raise
            except KafkaError as failure:
                error = failure
            if error is None:
                self.sensors.commit.record((self.clock() - started) * 1000)
                self._run_completions()
                return
            if not error.retriable:
                raise error
            self.net.poll(min(self.retry_backoff, max(0.0, deadline - self.clock())))

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
                     callback: Callable[[dict, Exception | None], None] | None) -> None:
        offsets = self._current_offsets() if offsets is None else dict(offsets)
        if not offsets:
            return

        def finish(error: Exception | None) -> None:
            if callback is not None:
                self._completions.append(lambda: callback(offsets, error))

        refused = self._not_committable()
        if refused is not None:
            finish(refused)
            return
        if self.coordinator is None:
            try:
                self.ensure_coordinator(0.0 if self._completions else self.retry_backoff)
            except KafkaTimeoutError as error:
                finish(error)
                return
        future = self.net.send(self.coordinator, self._commit_request(offsets))
        sent = self.clock()
        with self.lock:
            self._async_commits += 1

        def done(response, exception) -> None:
            with self.lock:
                self._async_commits -= 1
            if exception is None:
                self.sensors.commit.record((self.clock() - sent) * 1000)
            if exception is not None:
                self.coordinator_dead(str(exception))
                finish(exception)
            else:
                finish(self._commit_outcome(response))
        future.add_callback(done)

    def _commit_quietly(self, timeout: float) -> None:
        try:
            self.commit_sync(None, timeout)
        except KafkaError as error:
            log.warning("%sSynchronous auto-commit of offsets failed: %s", self.log_prefix, error)

    # -- heartbeats and leaving -------------------------------------------------------------------------

    def heartbeat_tick(self, now: float) -> None:
        """Runs on the heartbeat thread: send what is due, notice what expired."""
        with self.lock:
            if not self.stable or self.coordinator is None or self._closed:
                return
            if now - self.last_poll > self.rebalance_timeout:
                log.warning("%sconsumer poll timeout has expired. This means the time between subsequent calls to "
                            "poll() was longer than the configured max.poll.interval.ms, which typically implies "
                            "that the poll loop is spending too much time processing messages.", self.log_prefix)
                self.maybe_leave_group("consumer poll timeout has expired.")
                self.lost = True
                return
            if now - self.last_heartbeat_ok > self.session_timeout:
                self.coordinator_dead("session timed out without receiving a heartbeat response")
                return
            if self.heartbeat_in_flight or now < self.next_heartbeat:
                return
            self.heartbeat_in_flight = True
            self.next_heartbeat = now + self.heartbeat_interval
            request = HeartbeatRequest(group_id=self.group_id, generation_id=self.generation,
                                       member_id=self.member_id, group_instance_id=self.group_instance_id)
            future = self.net.send(self.coordinator, request)
            self._heartbeat_sent = now
            self.sensors.last_heartbeat = self.clock()
        future.add_callback(self._heartbeat_done)

    def _heartbeat_done(self, response, error) -> None:
        with self.lock:
            self.heartbeat_in_flight = False
            self.sensors.heartbeat.record((self.clock() - self._heartbeat_sent) * 1000)
            if error is not None:
                self.coordinator_dead(str(error))
                return
            code = _code(response.error_code)
            if code == ErrorCode.NONE:
                self.last_heartbeat_ok = self.clock()
            elif code == ErrorCode.REBALANCE_IN_PROGRESS:
                log.info("%sAttempt to heartbeat failed since group is rebalancing", self.log_prefix)
                self.last_heartbeat_ok = self.clock()
                self.need_rejoin = True
            elif code == ErrorCode.FENCED_INSTANCE_ID:
                self._fence()
            elif code in _MEMBER_GONE:
                log.info("%sAttempt to heartbeat failed: %s", self.log_prefix, code.name)
                self._reset_generation()
                self.lost = True
                self.need_rejoin = True
            elif code in _COORDINATOR_ERRORS:
                self.coordinator_dead(code.name)

    def maybe_leave_group(self, reason: str) -> None:
        with self.lock:
            send = (self.coordinator is not None and self.generation != NO_GENERATION
                    and self.group_instance_id is None and self.member_id != UNKNOWN_MEMBER)
            if send:
                log.info("%sMember %s sending LeaveGroup request to coordinator due to %s", self.log_prefix,
                         self.member_id, reason)
                request = LeaveGroupRequest(group_id=self.group_id, member_id=self.member_id, members=[
                    LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=None)])
                future = self.net.send(self.coordinator, request)
            self._reset_generation()
            self.need_rejoin = True
            self._pending, self._joining = None, False
        if send:
            self._leave_future = future

    def close(self, timeout: float) -> None:
        deadline = self.clock() + timeout
        try:
            if self.auto_commit and self.subscriptions.assignment:
                self._commit_quietly(max(0.0, deadline - self.clock()))
            # Commits sent with commit_async still count: wait for their answers (as Java does).
            self.net.poll_until(lambda: self._async_commits == 0, max(0.0, deadline - self.clock()))
            if self.group_managed and self.generation != NO_GENERATION:
                self._invoke("on_partitions_revoked", set(self.subscriptions.assignment))
            if self.leave_on_close:
                self._leave_future = None
                self.maybe_leave_group("the consumer is being closed")
                future = self._leave_future
                if future is not None:
                    self.net.poll_until(lambda: future.done, max(0.0, min(5.0, deadline - self.clock())))
        finally:
            with self.lock:
                self._closed = True
            if self._heartbeat is not None:
                self._heartbeat.stop()
            self._run_completions()


class HeartbeatThread(threading.Thread):
    """Sends heartbeats while the user is busy between polls; never waits on the network lock."""

    def __init__(self, coordinator: ConsumerCoordinator) -> None:
        super().__init__(name=f"kafka-coordinator-heartbeat-thread | {coordinator.group_id}", daemon=True)
        self.coordinator = coordinator
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.05):
            try:
                self.tick()
            except Exception:  # the thread must outlive any one bad tick
                log.exception("Heartbeat thread failed a tick")

    def tick(self) -> None:
        """One round of the thread's work, apart from the loop so tests can drive it on a fake clock."""
        coordinator = self.coordinator
        coordinator.heartbeat_tick(coordinator.clock())
        net = coordinator.net
        if net.lock.acquire(blocking=False):
            try:
                net.poll(0, wakeable=False)
            finally:
                net.lock.release()

    def stop(self) -> None:
        self._stop_event.set()
        if self is not threading.current_thread():
            self.join(5)


__all__ = ["ConsumerCoordinator", "ConsumerRebalanceListener", "HeartbeatThread", "OffsetAndMetadata"]
