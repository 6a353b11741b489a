"""The group coordinator client's join, heartbeat and commit logic over a scripted fake network.

Each request type is answered by a test-provided function at once, so the join state
machine (MEMBER_ID_REQUIRED, leader assignment, rebalance errors) and the reactions to
heartbeat and commit errors are checked without a broker or real time passing.
"""
from __future__ import annotations

import pytest

from kafkalike.client.assignors import RangeAssignor, Subscription, decode_assignment, encode_subscription
from kafkalike.client.coordinator import ConsumerCoordinator, OffsetAndMetadata
from kafkalike.client.errors import CommitFailedError, FencedInstanceIdError, RebalanceInProgressError
from kafkalike.client.fetcher import SubscriptionState
from kafkalike.client.metadata import Cluster, Node, PartitionInfo, TopicPartition, TopicView
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorResponse
from kafkalike.protocol.messages.heartbeat import HeartbeatResponse
from kafkalike.protocol.messages.join_group import JoinGroupResponse
from kafkalike.protocol.messages.offset_commit import OffsetCommitResponse
from kafkalike.protocol.messages.sync_group import SyncGroupResponse
from tests.unit.test_client_consumer_fetcher import FakeFuture, FakeMetadata


class FakeClient:
    def least_loaded_node(self, now):
        return 1


class ScriptedNet:
    def __init__(self, answers):
        self.answers = answers  # request class name -> fn(request) -> response
        self.cluster = Cluster(nodes={1: Node(1, "h", 1)},
                               topics={"t": TopicView.of([PartitionInfo("t", p, 1) for p in range(4)])})
        self.metadata = FakeMetadata()
        self.client = FakeClient()
        self.requests = []
        self.all_topics = False

    def send(self, node, request):
        self.requests.append(request)
        future = FakeFuture()
        future.complete(self.answers[type(request).__name__](request))
        return future

    def poll(self, timeout, wakeable=True):
        pass

    def poll_until(self, done, timeout):
        return done()

    def await_metadata(self, timeout):
        pass

    def coordinator_connection(self, node_id):
        return node_id


def coordinator_answer(request):
    return FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=1)


def make(answers, assignment=()):
    answers = {"FindCoordinatorRequest": coordinator_answer, **answers}
    net = ScriptedNet(answers)
    subs = SubscriptionState("earliest")
    subs.assign(assignment)
    coordinator = ConsumerCoordinator(
        net, subs, group_id="g", group_instance_id=None, assignors=[RangeAssignor()], session_timeout_ms=10000,
        rebalance_timeout_ms=300000, heartbeat_interval_ms=3000, enable_auto_commit=False,
        auto_commit_interval_ms=5000, retry_backoff_ms=0, default_timeout_ms=1000)
    coordinator._heartbeat = object()  # no background thread in unit tests
    return net, subs, coordinator


def test_the_leader_assigns_by_range_and_installs_its_share():
    members = {"m-a": ["t"], "m-b": ["t"]}
    joins = []

    def join(request):
        joins.append(request.member_id)
        if not request.member_id:
            return JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="m-a", generation_id=-1,
                                     protocol_name="", leader="", members=[])
        return JoinGroupResponse(error_code=0, generation_id=3, protocol_name="range", leader="m-a",
                                 member_id="m-a", members=[
                                     JoinGroupResponse.JoinGroupResponseMember(
                                         member_id=m, metadata=encode_subscription(Subscription(ts)))
                                     for m, ts in members.items()])
    synced = {}

    def sync(request):
        synced.update({a.member_id: decode_assignment(a.assignment) for a in request.assignments})
        return SyncGroupResponse(error_code=0, assignment=[a for a in request.assignments
                                                           if a.member_id == "m-a"][0].assignment)

    net, subs, coordinator = make({"JoinGroupRequest": join, "SyncGroupRequest": sync})
    coordinator.subscribe(["t"], None, None)
    assert coordinator.ensure_active_group(1.0)
    assert joins == ["", "m-a"]  # KIP-394: the first join only learns the member id
    assert synced == {"m-a": [TopicPartition("t", 0), TopicPartition("t", 1)],
                      "m-b": [TopicPartition("t", 2), TopicPartition("t", 3)]}
    assert set(subs.assignment) == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert coordinator.generation == 3 and not coordinator.need_rejoin


def test_a_slow_revoke_listener_keeps_heartbeating_and_may_commit():
    """Eager rebalance: until the JoinGroup goes out the member is still in its generation."""
    seen = []

    def commit(request):
        seen.append(("commit", request.generation_id))
        return commit_answer(ErrorCode.NONE)(request)

    def join(request):
        seen.append(("join", coordinator.stable))
        return JoinGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS, member_id="m", generation_id=-1,
                                 protocol_name="", leader="", members=[])

    net, subs, coordinator = make({"JoinGroupRequest": join, "OffsetCommitRequest": commit,
                                   "HeartbeatRequest": lambda r: HeartbeatResponse(error_code=0)},
                                  assignment=[TopicPartition("t", 0)])

    class CommitOnRevoke:
        def on_partitions_revoked(self, revoked):
            seen.append(("revoked", coordinator.stable))
            coordinator.heartbeat_tick(coordinator.last_poll)  # the heartbeat thread, mid-listener
            coordinator.commit_sync({TopicPartition("t", 0): OffsetAndMetadata(9)}, 1.0)

        def on_partitions_assigned(self, assigned):
            pass

    coordinator.subscribe(["t"], None, CommitOnRevoke())
    coordinator.coordinator, coordinator.generation, coordinator.member_id, coordinator.stable = 1, 5, "m", True
    coordinator.ensure_active_group(0.0)
    assert seen[:3] == [("revoked", True), ("commit", 5), ("join", False)]
    assert any(type(r).__name__ == "HeartbeatRequest" for r in net.requests)


def test_heartbeat_errors_mark_rejoin_or_lost_partitions():
    codes = iter([ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.UNKNOWN_MEMBER_ID])
    net, subs, coordinator = make({"HeartbeatRequest": lambda r: HeartbeatResponse(error_code=next(codes))},
                                  assignment=[TopicPartition("t", 0)])
    coordinator.coordinator, coordinator.generation, coordinator.member_id = 1, 5, "m"
    coordinator.stable = True
    coordinator.heartbeat_tick(coordinator.last_poll)
    assert coordinator.need_rejoin and not coordinator.lost and coordinator.generation == 5
    coordinator.heartbeat_tick(coordinator.last_poll + 3.5)
    assert coordinator.lost and coordinator.generation == -1 and coordinator.member_id == ""


def test_a_commit_after_the_group_moved_on_fails_for_good():
    def commit(request):
        return OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(name="t", partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=0,
                                                               error_code=ErrorCode.ILLEGAL_GENERATION)])])
    net, subs, coordinator = make({"OffsetCommitRequest": commit}, assignment=[TopicPartition("t", 0)])
    coordinator.subscribe(["t"], None, None)
    coordinator.generation, coordinator.member_id, coordinator.stable = 5, "m", True
    subs.seek(TopicPartition("t", 0), 42)
    with pytest.raises(CommitFailedError):
        coordinator.commit_sync(None, 1.0)
    [request] = [r for r in net.requests if type(r).__name__ == "OffsetCommitRequest"]
    assert request.generation_id == 5 and request.topics[0].partitions[0].committed_offset == 42
    assert coordinator.need_rejoin and coordinator.generation == -1
    # Out of the group now: the next commit is refused without asking the broker.
    with pytest.raises(CommitFailedError, match="not part of an active group"):
        coordinator.commit_sync(None, 1.0)
    assert len([r for r in net.requests if type(r).__name__ == "OffsetCommitRequest"]) == 1


def commit_answer(code):
    def commit(request):
        return OffsetCommitResponse(topics=[OffsetCommitResponse.OffsetCommitResponseTopic(name="t", partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=0, error_code=code)])])
    return commit


def test_a_commit_during_a_rebalance_is_not_fatal():
    net, subs, coordinator = make({"OffsetCommitRequest": commit_answer(ErrorCode.REBALANCE_IN_PROGRESS)},
                                  assignment=[TopicPartition("t", 0)])
    coordinator.subscribe(["t"], None, None)
    coordinator.generation, coordinator.member_id, coordinator.stable = 5, "m", True
    subs.seek(TopicPartition("t", 0), 7)
    with pytest.raises(RebalanceInProgressError):
        coordinator.commit_sync(None, 1.0)
    assert coordinator.need_rejoin and coordinator.generation == 5  # still a member
    coordinator.stable, coordinator._joining = False, True          # JoinGroup sent: refused up front
    with pytest.raises(RebalanceInProgressError, match="undergoing a rebalance"):
        coordinator.commit_sync(None, 1.0)


def test_a_fenced_static_member_is_told_on_every_poll_and_commit():
    net, subs, coordinator = make({"HeartbeatRequest": lambda r: HeartbeatResponse(
        error_code=ErrorCode.FENCED_INSTANCE_ID)}, assignment=[TopicPartition("t", 0)])
    coordinator.group_instance_id = "instance-1"
    coordinator.subscribe(["t"], None, None)
    coordinator.coordinator, coordinator.generation, coordinator.member_id, coordinator.stable = 1, 5, "m", True
    coordinator.heartbeat_tick(coordinator.last_poll)
    assert not coordinator.stable  # no more heartbeats
    for _ in range(2):
        with pytest.raises(FencedInstanceIdError, match="instance-1"):
            coordinator.poll(0)
    subs.seek(TopicPartition("t", 0), 3)
    with pytest.raises(FencedInstanceIdError):
        coordinator.commit_sync(None, 1.0)


def test_a_second_thread_inside_the_consumer_is_refused():
    import threading
    import time

    from kafkalike.client.consumer import KafkaConsumer
    from kafkalike.client.errors import ConcurrentModificationError, WakeupError

    consumer = KafkaConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})  # nothing listens there
    consumer.assign([TopicPartition("t", 0)])
    outcome = []

    def poll():
        try:
            consumer.poll(3)
        except WakeupError as error:
            outcome.append(error)

    worker = threading.Thread(target=poll)
    worker.start()
    deadline = time.monotonic() + 5
    while consumer._owner is None and time.monotonic() < deadline:
        time.sleep(0.001)
    with pytest.raises(ConcurrentModificationError, match="not safe for multi-threaded access"):
        consumer.pause([TopicPartition("t", 0)])
    consumer.wakeup()  # the one call other threads may make
    worker.join(5)
    assert len(outcome) == 1
    consumer.pause([TopicPartition("t", 0)])  # free again once the other thread is out
    consumer.close()
