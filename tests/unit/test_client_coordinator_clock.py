"""The group coordinator client's timing, walked on a fake clock: no sleeps, no broker.

ConsumerCoordinator reads time only through its `clock`, and waits only through its
network (ConsumerNetworkClient's send/poll/poll_until). The fake network here makes
every wait advance the fake clock by exactly what was asked, so a test can say "at
T0 + heartbeat.interval.ms the heartbeat goes out, not a millisecond earlier". The
clock starts near 10^9 s, far from any real time.monotonic(), so a coordinator that
read the real clock anywhere would send, expire or commit at the wrong moment (or,
where it loops until a deadline, run into the fake network's request limit) and the
test would fail.
"""
from __future__ import annotations

import threading

import pytest

from kafkalike.client.assignors import RangeAssignor, Subscription, encode_assignment, encode_subscription
from kafkalike.client.consumer_network import RequestFuture
from kafkalike.client.coordinator import NO_GENERATION, ConsumerCoordinator, HeartbeatThread
from kafkalike.client.errors import KafkaTimeoutError
from kafkalike.client.fetcher import SubscriptionState
from kafkalike.client.metadata import Cluster, Node, PartitionInfo, TopicPartition, TopicView
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorResponse
from kafkalike.protocol.messages.heartbeat import HeartbeatResponse
from kafkalike.protocol.messages.join_group import JoinGroupResponse
from kafkalike.protocol.messages.leave_group import LeaveGroupResponse
from kafkalike.protocol.messages.offset_commit import OffsetCommitResponse
from kafkalike.protocol.messages.offset_fetch import OffsetFetchResponse
from kafkalike.protocol.messages.sync_group import SyncGroupResponse

T0 = 1_000_000_000.0  # exactly representable, and so are T0 + k/4 for the steps below
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


class FakeClock:
    def __init__(self, start: float = T0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def set(self, when: float) -> None:
        assert when >= self.now, "a monotonic clock never goes back"
        self.now = when


class FakeMetadata:
    def __init__(self):
        self.times: list[float] = []  # the `now` of every add_topic

    def add_topic(self, topic, now):
        self.times.append(now)

    def request_update(self):
        return 0


class FakeClient:
    def __init__(self):
        self.times: list[float] = []  # the `now` of every least_loaded_node

    def least_loaded_node(self, now):
        self.times.append(now)
        return 1


class FakeNet:
    """ConsumerNetworkClient's surface as the coordinator uses it; waiting is time passing.

    `answers` maps a request class name to a function giving its response at once, or
    None to leave the request outstanding (the test may complete it later)."""

    MAX_REQUESTS = 200  # a coordinator timing on another clock would loop past this

    def __init__(self, clock: FakeClock, answers: dict) -> None:
        self.clock = clock
        self.answers = answers
        self.sent: list[tuple[float, object, RequestFuture]] = []
        self.waits: list[float] = []
        self.metadata_waits: list[float] = []
        self.cluster = Cluster(nodes={1: Node(1, "h", 1)},
                               topics={"t": TopicView.of([PartitionInfo("t", p, 1) for p in range(2)])})
        self.metadata = FakeMetadata()
        self.client = FakeClient()
        self.all_topics = False
        self.lock = threading.RLock()

    def send(self, node, request):
        assert len(self.sent) < self.MAX_REQUESTS, "the coordinator never reached its deadline"
        future = RequestFuture()
        self.sent.append((self.clock(), request, future))
        answer = self.answers[type(request).__name__]
        if answer is not None:
            response = answer(request)
            if response is not None:
                future.complete(response, None)
        return future

    def poll(self, timeout, wakeable=True):
        self.waits.append(timeout)
        self.clock.advance(timeout)

    def poll_until(self, done, timeout):
        if not done():
            self.waits.append(timeout)
            self.clock.advance(timeout)
        return done()

    def await_metadata(self, timeout):
        """A refresh that names every broker (a coordinator the cluster did not list yet)."""
        self.metadata_waits.append(timeout)
        self.cluster = Cluster(nodes={**self.cluster.nodes, 2: Node(2, "h", 2)}, topics=self.cluster.topics)

    def coordinator_connection(self, node_id):
        return node_id

    def requests(self, kind: str) -> list[tuple[float, object, RequestFuture]]:
        return [entry for entry in self.sent if type(entry[1]).__name__ == kind]


class NoHeartbeatThread:
    """Stands in for the background thread: the tests tick heartbeats themselves."""

    def stop(self):
        pass


def join_as_leader(request):
    return JoinGroupResponse(error_code=0, generation_id=1, protocol_name="range", leader="m-1", member_id="m-1",
                             members=[JoinGroupResponse.JoinGroupResponseMember(
                                 member_id="m-1", metadata=encode_subscription(Subscription(["t"])))])


def sync_both_partitions(request):
    return SyncGroupResponse(error_code=0, assignment=encode_assignment([TP0, TP1]))


def heartbeat_ok(request):
    return HeartbeatResponse(error_code=0)


def commit_answer(code):
    def commit(request):
        return OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions]) for t in request.topics])
    return commit


def make(clock: FakeClock, *, session_timeout_ms=10000, max_poll_interval_ms=300000, heartbeat_interval_ms=3000,
         enable_auto_commit=False, auto_commit_interval_ms=5000, retry_backoff_ms=250, **answers):
    answers = {"FindCoordinatorRequest": lambda r: FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=1),
               "JoinGroupRequest": join_as_leader, "SyncGroupRequest": sync_both_partitions,
               "HeartbeatRequest": heartbeat_ok, "OffsetCommitRequest": commit_answer(ErrorCode.NONE),
               "LeaveGroupRequest": lambda r: LeaveGroupResponse(error_code=0),
               "OffsetFetchRequest": lambda r: OffsetFetchResponse(error_code=0, topics=[]), **answers}
    net = FakeNet(clock, answers)
    subs = SubscriptionState("earliest")
    coordinator = ConsumerCoordinator(
        net, subs, group_id="g", group_instance_id=None, assignors=[RangeAssignor()],
        session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=max_poll_interval_ms,
        heartbeat_interval_ms=heartbeat_interval_ms, enable_auto_commit=enable_auto_commit,
        auto_commit_interval_ms=auto_commit_interval_ms, retry_backoff_ms=retry_backoff_ms,
        default_timeout_ms=60000, clock=clock)
    coordinator._heartbeat = NoHeartbeatThread()
    return net, subs, coordinator


def joined(clock: FakeClock, **options):
    """A member that joined at T0 (every answer comes at once, so no time passes)."""
    net, subs, coordinator = make(clock, **options)
    coordinator.subscribe(["t"], None, None)
    coordinator.poll(1.0)
    assert coordinator.stable and coordinator.generation == 1 and set(subs.assignment) == {TP0, TP1}
    assert clock() == T0
    return net, subs, coordinator


def tick_at(clock: FakeClock, thread: HeartbeatThread, when: float) -> None:
    clock.set(when)
    thread.tick()


# -- heartbeats ----------------------------------------------------------------------------------


def test_the_heartbeat_goes_out_exactly_every_heartbeat_interval():
    clock = FakeClock()
    net, subs, coordinator = joined(clock)
    thread = HeartbeatThread(coordinator)  # never started: its tick() is driven here
    tick_at(clock, thread, T0 + 2.999)
    assert net.requests("HeartbeatRequest") == []
    tick_at(clock, thread, T0 + 3.0)
    [(sent_at, request, _)] = net.requests("HeartbeatRequest")
    assert sent_at == T0 + 3.0 and request.generation_id == 1 and request.member_id == "m-1"
    tick_at(clock, thread, T0 + 5.999)
    assert len(net.requests("HeartbeatRequest")) == 1
    tick_at(clock, thread, T0 + 6.0)
    assert [at for at, _, _ in net.requests("HeartbeatRequest")] == [T0 + 3.0, T0 + 6.0]


def test_no_second_heartbeat_while_one_is_unanswered_even_when_the_interval_passed():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, HeartbeatRequest=None)
    thread = HeartbeatThread(coordinator)
    tick_at(clock, thread, T0 + 3.0)
    tick_at(clock, thread, T0 + 9.0)
    [(_, _, pending)] = net.requests("HeartbeatRequest")
    pending.complete(HeartbeatResponse(error_code=0), None)
    tick_at(clock, thread, T0 + 9.0)  # answered, and T0 + 6 is long past: due at once
    assert [at for at, _, _ in net.requests("HeartbeatRequest")] == [T0 + 3.0, T0 + 9.0]


def test_the_session_expires_after_session_timeout_without_a_heartbeat_answer():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, HeartbeatRequest=None)
    thread = HeartbeatThread(coordinator)
    tick_at(clock, thread, T0 + 3.0)  # sent, never answered
    tick_at(clock, thread, T0 + 10.0)
    assert coordinator.coordinator == 1, "session.timeout.ms has not passed yet"
    tick_at(clock, thread, T0 + 10.001)
    assert coordinator.coordinator is None  # coordinator marked dead: it gets rediscovered
    assert len(net.requests("HeartbeatRequest")) == 1


@pytest.mark.parametrize("code", [ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS])
def test_a_heartbeat_answer_restarts_the_session_timeout_from_when_it_arrived(code):
    """REBALANCE_IN_PROGRESS too: the coordinator is alive, the member only has to rejoin."""
    clock = FakeClock()
    net, subs, coordinator = joined(clock, HeartbeatRequest=None)
    thread = HeartbeatThread(coordinator)
    tick_at(clock, thread, T0 + 3.0)
    clock.set(T0 + 8.0)
    net.requests("HeartbeatRequest")[0][2].complete(HeartbeatResponse(error_code=code), None)
    tick_at(clock, thread, T0 + 9.0)  # the next one goes out and stays unanswered
    tick_at(clock, thread, T0 + 18.0)
    assert coordinator.coordinator == 1, "alive until 10 s after the answer at T0 + 8"
    tick_at(clock, thread, T0 + 18.001)
    assert coordinator.coordinator is None


def test_finding_the_coordinator_restarts_the_session_clock():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, HeartbeatRequest=None)
    thread = HeartbeatThread(coordinator)
    coordinator.coordinator_dead("test")
    clock.set(T0 + 30.0)
    coordinator.ensure_coordinator(1.0)
    assert coordinator.last_heartbeat_ok == T0 + 30.0
    tick_at(clock, thread, T0 + 30.0)  # T0 + 3 passed long ago: due at once
    tick_at(clock, thread, T0 + 40.0)
    assert coordinator.coordinator == 1
    tick_at(clock, thread, T0 + 40.001)
    assert coordinator.coordinator is None


# -- max.poll.interval.ms ---------------------------------------------------------------------------


def test_no_poll_within_max_poll_interval_leaves_the_group():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, max_poll_interval_ms=60000)
    thread = HeartbeatThread(coordinator)
    for step in range(1, 21):  # heartbeats every 3 s, answered, keep the session alive
        tick_at(clock, thread, T0 + 3.0 * step)
    assert clock() == T0 + 60.0
    assert net.requests("LeaveGroupRequest") == [] and coordinator.generation == 1
    tick_at(clock, thread, T0 + 60.001)
    [(left_at, leave, _)] = net.requests("LeaveGroupRequest")
    assert left_at == T0 + 60.001 and leave.member_id == "m-1"
    assert coordinator.lost and coordinator.need_rejoin and coordinator.generation == NO_GENERATION
    assert not coordinator.stable


def test_a_member_that_joined_without_polling_counts_max_poll_interval_from_its_creation():
    clock = FakeClock()
    net, subs, coordinator = make(clock, max_poll_interval_ms=60000)
    coordinator.subscribe(["t"], None, None)
    clock.set(T0 + 1.0)
    assert coordinator.ensure_active_group(1.0)
    thread = HeartbeatThread(coordinator)
    for when in [T0 + 1.0 + 3.0 * step for step in range(1, 20)] + [T0 + 60.0]:
        tick_at(clock, thread, when)  # answered heartbeats keep the session alive
    assert net.requests("LeaveGroupRequest") == []
    tick_at(clock, thread, T0 + 60.001)
    assert len(net.requests("LeaveGroupRequest")) == 1 and coordinator.lost


def test_each_poll_restarts_the_max_poll_interval():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, max_poll_interval_ms=60000)
    thread = HeartbeatThread(coordinator)
    for step in range(1, 17):
        tick_at(clock, thread, T0 + 3.0 * step)
    coordinator.poll(0)  # at T0 + 48
    for step in range(17, 37):
        tick_at(clock, thread, T0 + 3.0 * step)
    assert clock() == T0 + 108.0 and net.requests("LeaveGroupRequest") == []
    tick_at(clock, thread, T0 + 108.001)
    assert len(net.requests("LeaveGroupRequest")) == 1 and coordinator.lost


# -- auto-commit --------------------------------------------------------------------------------------


def test_auto_commit_fires_every_auto_commit_interval_from_poll():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, enable_auto_commit=True)
    subs.seek(TP0, 11)
    subs.seek(TP1, 22)
    clock.set(T0 + 4.999)
    coordinator.poll(0)
    assert net.requests("OffsetCommitRequest") == []
    clock.set(T0 + 5.0)
    coordinator.poll(0)
    [(at, commit, _)] = net.requests("OffsetCommitRequest")
    assert at == T0 + 5.0 and commit.generation_id == 1
    assert {(p.partition_index, p.committed_offset) for t in commit.topics for p in t.partitions} == {(0, 11), (1, 22)}
    clock.set(T0 + 9.999)
    coordinator.poll(0)
    assert len(net.requests("OffsetCommitRequest")) == 1
    clock.set(T0 + 10.0)
    coordinator.poll(0)
    assert [at for at, _, _ in net.requests("OffsetCommitRequest")] == [T0 + 5.0, T0 + 10.0]


def test_auto_commit_of_assigned_partitions_counts_the_first_interval_from_creation():
    clock = FakeClock()
    net, subs, coordinator = make(clock, enable_auto_commit=True)
    subs.assign([TP0])  # KafkaConsumer.assign(): no group membership, commits still go to the group
    subs.seek(TP0, 3)
    clock.set(T0 + 4.999)
    coordinator.poll(0)
    assert net.requests("OffsetCommitRequest") == []
    clock.set(T0 + 5.0)
    coordinator.poll(0)
    [(at, commit, _)] = net.requests("OffsetCommitRequest")
    assert at == T0 + 5.0 and commit.generation_id == NO_GENERATION


def test_a_late_poll_auto_commits_once_and_counts_the_next_interval_from_then():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, enable_auto_commit=True)
    subs.seek(TP0, 1)
    clock.set(T0 + 12.0)  # two intervals missed: one commit, not two
    coordinator.poll(0)
    clock.set(T0 + 16.999)
    coordinator.poll(0)
    assert [at for at, _, _ in net.requests("OffsetCommitRequest")] == [T0 + 12.0]
    clock.set(T0 + 17.0)
    coordinator.poll(0)
    assert [at for at, _, _ in net.requests("OffsetCommitRequest")] == [T0 + 12.0, T0 + 17.0]


# -- joining, lookups and commits: deadlines and backoff -----------------------------------------------


def test_a_join_waits_exactly_its_timeout_then_carries_on_in_the_next_poll():
    clock = FakeClock()
    net, subs, coordinator = make(clock, JoinGroupRequest=None)
    coordinator.subscribe(["t"], None, None)
    assert coordinator.ensure_active_group(2.0) is False
    assert clock() == T0 + 2.0 and net.waits == [2.0]
    assert coordinator.ensure_active_group(0.5) is False
    assert clock() == T0 + 2.5 and net.waits == [2.0, 0.5]
    [(_, _, join)] = net.requests("JoinGroupRequest")  # the same JoinGroup throughout, not a new one
    join.complete(join_as_leader(None), None)
    assert coordinator.ensure_active_group(0.0) is True
    assert coordinator.last_heartbeat_ok == T0 + 2.5 and coordinator.next_heartbeat == T0 + 5.5


def test_the_coordinator_lookup_retries_every_retry_backoff_until_its_timeout():
    clock = FakeClock()
    net, subs, coordinator = make(clock, FindCoordinatorRequest=lambda r: FindCoordinatorResponse(
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, node_id=-1, host="", port=-1))
    with pytest.raises(KafkaTimeoutError, match="625ms expired before the group coordinator could be found"):
        coordinator.ensure_coordinator(0.625)
    assert [at for at, _, _ in net.requests("FindCoordinatorRequest")] == [T0, T0 + 0.25, T0 + 0.5]
    assert net.waits == [0.25, 0.25, 0.125]  # the last backoff is cut to what is left
    assert clock() == T0 + 0.625


def test_a_coordinator_missing_from_the_metadata_is_waited_for_within_the_lookup_timeout():
    clock = FakeClock()
    net, subs, coordinator = make(clock, FindCoordinatorRequest=lambda r: FindCoordinatorResponse(
        error_code=0, node_id=2, host="h", port=2))
    coordinator.ensure_coordinator(1.0)
    assert net.metadata_waits == [1.0] and coordinator.coordinator == 2


def test_a_join_that_cannot_find_the_coordinator_gives_up_at_its_timeout():
    clock = FakeClock()
    net, subs, coordinator = make(clock, FindCoordinatorRequest=lambda r: FindCoordinatorResponse(
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, node_id=-1, host="", port=-1))
    coordinator.subscribe(["t"], None, None)
    assert coordinator.ensure_active_group(0.625) is False
    assert len(net.requests("FindCoordinatorRequest")) == 3 and clock() == T0 + 0.625


def test_a_retried_join_backs_off_retry_backoff_and_stops_at_its_timeout():
    clock = FakeClock()
    net, subs, coordinator = make(clock, JoinGroupRequest=lambda r: JoinGroupResponse(
        error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, member_id="", generation_id=-1, protocol_name="",
        leader="", members=[]))
    coordinator.subscribe(["t"], None, None)
    assert coordinator.ensure_active_group(0.625) is False
    # The last JoinGroup goes out when the time is up, and its answer ends the call.
    assert [at for at, _, _ in net.requests("JoinGroupRequest")] == [T0, T0 + 0.25, T0 + 0.5, T0 + 0.625]
    assert net.waits == [0.25, 0.25, 0.125] and clock() == T0 + 0.625


def test_committed_offsets_lookup_retries_every_retry_backoff_until_its_timeout():
    clock = FakeClock()
    net, subs, coordinator = make(clock, OffsetFetchRequest=lambda r: OffsetFetchResponse(
        error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, topics=[]))
    with pytest.raises(KafkaTimeoutError, match="625ms expired before the last committed offset"):
        coordinator.committed([TP0], 0.625)
    assert [at for at, _, _ in net.requests("OffsetFetchRequest")] == [T0, T0 + 0.25, T0 + 0.5]
    assert net.waits == [0.25, 0.25, 0.125] and clock() == T0 + 0.625


def test_the_times_handed_to_the_network_and_the_metadata_come_from_the_clock():
    clock = FakeClock()
    net, subs, coordinator = make(clock)
    clock.set(T0 + 7.0)
    coordinator.subscribe(["t"], None, None)  # add_topic
    coordinator.ensure_active_group(1.0)       # least_loaded_node for the lookup; add_topic as leader
    assert net.metadata.times == [T0 + 7.0, T0 + 7.0] and net.client.times == [T0 + 7.0]


def test_the_last_rebalance_and_heartbeat_gauges_read_the_clock():
    clock = FakeClock()
    net, subs, coordinator = joined(clock)
    gauges = coordinator.sensors.metrics
    assert gauges.value("last-heartbeat-seconds-ago", "consumer-coordinator-metrics") == -1.0
    tick_at(clock, HeartbeatThread(coordinator), T0 + 3.0)
    clock.advance(1.5)
    assert gauges.value("last-rebalance-seconds-ago", "consumer-coordinator-metrics") == 4.5
    assert gauges.value("last-heartbeat-seconds-ago", "consumer-coordinator-metrics") == 1.5


def test_a_retriable_commit_error_is_retried_every_retry_backoff_until_the_timeout():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, OffsetCommitRequest=commit_answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    subs.seek(TP0, 5)
    with pytest.raises(KafkaTimeoutError, match="625ms expired before successfully committing"):
        coordinator.commit_sync(None, 0.625)
    assert [at for at, _, _ in net.requests("OffsetCommitRequest")] == [T0, T0 + 0.25, T0 + 0.5]
    assert net.waits == [0.25, 0.25, 0.125] and clock() == T0 + 0.625


def test_close_waits_for_outstanding_async_commits_no_longer_than_its_timeout():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, OffsetCommitRequest=None)
    subs.seek(TP0, 4)
    coordinator.commit_async(None, None)
    coordinator.close(2.0)
    assert net.waits[0] == 2.0 and clock() == T0 + 2.0
    assert len(net.requests("LeaveGroupRequest")) == 1  # still sent, with no time left to wait for it


def test_closing_auto_commit_retries_only_within_the_close_timeout():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, enable_auto_commit=True,
                                    OffsetCommitRequest=commit_answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    subs.seek(TP0, 4)
    coordinator.close(0.625)
    assert [at for at, _, _ in net.requests("OffsetCommitRequest")] == [T0, T0 + 0.25, T0 + 0.5]
    assert clock() == T0 + 0.625 and len(net.requests("LeaveGroupRequest")) == 1


def test_close_waits_for_the_leave_answer_no_longer_than_its_timeout():
    clock = FakeClock()
    net, subs, coordinator = joined(clock, LeaveGroupRequest=None)
    coordinator.close(2.0)
    assert len(net.requests("LeaveGroupRequest")) == 1
    assert net.waits == [2.0] and clock() == T0 + 2.0
