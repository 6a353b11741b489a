"""Partition reassignment (KIP-455) step by step, on a controller whose ZooKeeper and broker
channels are in-memory fakes: the znode writes and the requests sent are what is checked.

The partition t-0 starts on [0, 1] with 0 leading, ISR [0, 1]; brokers 0, 1 and 2 are live.
"""
from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.controller import requests as reqs
from kafkalike.controller.context import ONLINE, ControllerContext
from kafkalike.controller.controller import KafkaController
from kafkalike.controller.reassignment import origin_replicas, reassign_to, target_replicas
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_isr import AlterIsrRequest
from kafkalike.zkdata.events import DataChanged, ZNodeChange
from kafkalike.zkdata.kafka_json import ZNodeDecodeError
from kafkalike.zkdata.topic_znodes import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from kafkalike.zkdata.znodes import ReassignPartitionsZNode
from tests.unit.test_controller_elect_leaders import FakeChannels, FakeRegistration, FakeZk

EPOCH = 7
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
TOPIC_ID = uuid.UUID(int=42)


class ReassigningZk(FakeZk):
    """Adds the topic znode and /admin/reassign_partitions to the state-znode fake."""

    def __init__(self):
        super().__init__()
        self.topic_writes: list[tuple[str, object]] = []
        self.reassign_znode: dict | None = None
        self.reassign_znode_raw: bytes | None = None

    async def set_topic_assignment(self, topic, assignment, epoch_zk_version):
        self.topic_writes.append((topic, assignment))

    async def reassign_partitions_in_progress(self):
        return self.reassign_znode is not None or self.reassign_znode_raw is not None

    async def get_partition_reassignment(self):
        if self.reassign_znode_raw is not None:
            return ReassignPartitionsZNode.decode(self.reassign_znode_raw)
        return None if self.reassign_znode is None else dict(self.reassign_znode)

    async def set_or_create_partition_reassignment(self, reassignments, epoch_zk_version):
        self.reassign_znode_raw = None
        self.reassign_znode = {tp: tuple(r) for tp, r in reassignments.items()}

    async def delete_partition_reassignment(self, epoch_zk_version):
        self.reassign_znode = self.reassign_znode_raw = None

    async def watch_partition_reassignment(self, listener):
        class Watch:
            def cancel(self):
                pass
        return Watch()


@pytest.fixture
def cluster():
    zk, channels = ReassigningZk(), FakeChannels()
    controller = KafkaController(0, zk, Clock(), auto_leader_rebalance_enable=False)
    ctx = ControllerContext(epoch=EPOCH, epoch_zk_version=3)
    for b in (0, 1, 2):
        ctx.live_brokers[b] = FakeRegistration()
        ctx.broker_epochs[b] = 100 + b
    ctx.topic_ids["t"] = TOPIC_ID
    for tp, replicas in ((T0, (0, 1)), (T1, (1, 0))):
        ctx.assignments[tp] = replicas
        state = LeaderIsrAndControllerEpoch(replicas[0], 4, replicas, EPOCH, 10)
        ctx.leadership[tp] = zk.states[tp] = state
        ctx.partition_states[tp] = ONLINE
    controller.ctx, controller.channels, controller.active = ctx, channels, True
    defer.ensureDeferred(controller._loop())
    yield controller, zk, channels
    controller.shutdown()


def alter(controller, reassignments):
    answers = []
    controller.alter_partition_reassignments(reassignments).addCallback(answers.append)
    assert answers, "the AlterPartitionReassignments event did not complete"
    return answers[0]


def listed(controller, partitions=None):
    answers = []
    controller.list_partition_reassignments(partitions).addCallback(answers.append)
    top, found = answers[0]
    assert top.error == ErrorCode.NONE
    return found


def leader_and_isr_states(channels, tp=T0):
    """(broker, partition state) of every LeaderAndIsr sent for tp, in order."""
    out = []
    for broker, request in channels.of(reqs.LEADER_AND_ISR_VERSION):
        for topic in request.topic_states:
            for s in topic.partition_states:
                if (topic.topic_name, s.partition_index) == tp:
                    out.append((broker, s))
    return out


def stop_replicas(channels):
    return [(b, p.partition_index, p.delete_partition) for b, r in channels.of(reqs.STOP_REPLICA_VERSION)
            for t in r.topic_states for p in t.partition_states]


def last_topic_write(zk, partition=0):
    topic, assignment = zk.topic_writes[-1]
    assert topic == "t" and assignment.topic_id == TOPIC_ID
    return assignment.partitions[partition]


def alter_isr(controller, zk, leader, isr, tp=T0):
    state = zk.states[tp]
    request = AlterIsrRequest(broker_id=leader, broker_epoch=100 + leader, topics=[AlterIsrRequest.TopicData(
        name=tp.topic, partitions=[AlterIsrRequest.PartitionData(
            partition_index=tp.partition, leader_epoch=state.leader_epoch, new_isr=list(isr),
            current_isr_version=state.zk_version)])])
    answers = []
    controller.alter_isr(request).addCallback(answers.append)
    assert answers and answers[0].topics[0].partitions[0].error_code == 0
    return answers[0]


# -- the rules -------------------------------------------------------------------------


def test_reassign_to_keeps_target_order_then_the_original_replicas():
    # Kafka's own example: [1,2,3] -> [3,4,2] is encoded as [3,4,2,1] while in flight.
    ra = reassign_to(ReplicaAssignment((1, 2, 3)), [3, 4, 2])
    assert (ra.replicas, ra.adding_replicas, ra.removing_replicas) == ((3, 4, 2, 1), (4,), (1,))
    assert origin_replicas(ra) == (3, 2, 1) and target_replicas(ra) == (3, 4, 2)
    # A new target replaces the one in flight, starting again from the original replicas.
    again = reassign_to(ra, [5, 1])
    assert (again.replicas, again.adding_replicas, again.removing_replicas) == ((5, 1, 3, 2), (5,), (3, 2))


# -- starting, completing, cancelling ----------------------------------------------------


def test_a_reassignment_starts_with_the_union_of_replicas_and_new_replicas_following(cluster):
    controller, zk, channels = cluster
    top, results = alter(controller, {T0: [1, 2]})
    assert top.error == ErrorCode.NONE and results[T0].error == ErrorCode.NONE and results[T0].message is None

    written = last_topic_write(zk)
    assert (written.replicas, written.adding_replicas, written.removing_replicas) == ((1, 2, 0), (2,), (0,))
    # The untouched partition is written as it was.
    assert last_topic_write(zk, 1) == ReplicaAssignment((1, 0))
    state = zk.states[T0]
    assert (state.leader, state.leader_epoch, state.isr) == (0, 5, (0, 1))

    sent = leader_and_isr_states(channels)
    assert sorted(b for b, _ in sent) == [0, 1, 2]
    for broker, s in sent:
        assert (s.replicas, s.adding_replicas, s.removing_replicas) == ([1, 2, 0], [2], [0])
        assert (s.leader, s.leader_epoch, s.isr) == (0, 5, [0, 1])
        assert s.is_new == (broker == 2)
    assert sorted(b for b, _ in channels.of(reqs.UPDATE_METADATA_VERSION)) == [0, 1, 2]
    assert stop_replicas(channels) == []

    found = listed(controller)
    assert found == {T0: ReplicaAssignment((1, 2, 0), (2,), (0,))}
    assert listed(controller, [T0, T1, TopicPartition("nope", 0)]) == found


def test_the_new_replica_joining_the_isr_completes_it_and_moves_a_removed_leader(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [1, 2]})
    channels.sent.clear()

    alter_isr(controller, zk, leader=0, isr=[0, 1, 2])

    # B3: leader 0 is being removed, so the first target replica in the ISR leads.
    # B4: 0 then leaves the ISR; B5: its log is deleted.
    elections = [s for _, s in leader_and_isr_states(channels)]
    assert (elections[0].leader, elections[0].leader_epoch, elections[0].isr) == (1, 6, [0, 1, 2])
    assert elections[0].replicas == [1, 2] and elections[0].adding_replicas == []
    assert sorted(b for b, s in leader_and_isr_states(channels) if s.leader_epoch == 6) == [1, 2]
    final = zk.states[T0]
    assert (final.leader, final.leader_epoch, final.isr) == (1, 7, (1, 2))
    assert sorted(b for b, s in leader_and_isr_states(channels) if s.leader_epoch == 7) == [1, 2]
    assert stop_replicas(channels) == [(0, 0, False), (0, 0, True)]
    assert last_topic_write(zk) == ReplicaAssignment((1, 2))
    assert controller.ctx.assignments[T0] == (1, 2) and T0 not in controller.ctx.reassigning
    assert listed(controller) == {}


def test_a_kept_leader_gets_a_new_epoch_and_the_removed_follower_is_stopped(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [0, 2]})
    channels.sent.clear()
    alter_isr(controller, zk, leader=0, isr=[0, 1, 2])
    final = zk.states[T0]
    assert (final.leader, final.isr) == (0, (0, 2))
    assert stop_replicas(channels) == [(1, 0, False), (1, 0, True)]
    assert last_topic_write(zk) == ReplicaAssignment((0, 2))


def test_a_partial_isr_expansion_leaves_it_in_progress(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [2, 1]})
    alter_isr(controller, zk, leader=0, isr=[0, 1])       # 2 not there yet
    assert T0 in listed(controller)
    assert stop_replicas(channels) == []


def test_shrinking_to_replicas_already_in_sync_completes_at_once(cluster):
    controller, zk, channels = cluster
    top, results = alter(controller, {T0: [0]})
    assert results[T0].error == ErrorCode.NONE
    assert last_topic_write(zk) == ReplicaAssignment((0,))
    assert zk.states[T0].isr == (0,)
    assert stop_replicas(channels) == [(1, 0, False), (1, 0, True)]
    assert listed(controller) == {}


def test_cancel_reverts_to_the_original_replicas_and_deletes_the_added_ones(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [1, 2]})
    channels.sent.clear()
    top, results = alter(controller, {T0: None})
    assert results[T0].error == ErrorCode.NONE
    # The original replicas, in the order the in-flight list kept them (TRS ++ ORS put 1
    # first): Kafka 2.8 cannot restore the original order either.
    assert last_topic_write(zk) == ReplicaAssignment((1, 0))
    assert stop_replicas(channels) == [(2, 0, False), (2, 0, True)]
    assert zk.states[T0].leader == 0
    assert listed(controller) == {}
    # Nothing left to cancel now.
    _, results = alter(controller, {T0: None})
    assert results[T0].error == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert results[T0].message == "No partition reassignment is in progress."


def test_a_new_target_replaces_the_one_in_flight(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [1, 2]})
    channels.sent.clear()
    alter(controller, {T0: [0, 1, 2]})
    assert last_topic_write(zk) == ReplicaAssignment((0, 1, 2), (2,), ())
    assert stop_replicas(channels) == []     # 2 is still wanted


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("replicas, code, message", [
    ([], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."),
    ([1, 1], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(1, 1)"),
    ([1, -3], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Invalid broker id in replica list: ArrayBuffer(1, -3)"),
    ([1, 9], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Replica assignment has brokers that are not alive. Replica list: ArrayBuffer(9), "
     "live broker list: Set(0, 1, 2)"),
])
def test_bad_replica_lists_are_refused_with_kafkas_messages(cluster, replicas, code, message):
    controller, zk, channels = cluster
    top, results = alter(controller, {T0: replicas})
    assert top.error == ErrorCode.NONE
    assert (results[T0].error, results[T0].message) == (code, message)
    assert zk.topic_writes == [] and channels.sent == []


def test_unknown_partitions_and_a_non_controller(cluster):
    controller, zk, _ = cluster
    _, results = alter(controller, {TopicPartition("t", 7): [1, 2], TopicPartition("nope", 0): [0]})
    assert {tp: (e.error, e.message) for tp, e in results.items()} == {
        TopicPartition("t", 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
        TopicPartition("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")}
    controller.active = False
    top, results = alter(controller, {T0: [1, 2]})
    assert (top.error, results) == (ErrorCode.NOT_CONTROLLER, {})
    answers = []
    controller.list_partition_reassignments(None).addCallback(answers.append)
    assert answers[0][0].error == ErrorCode.NOT_CONTROLLER


def test_a_topic_marked_for_deletion_waits_for_its_reassignment(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [1, 2]})

    async def marked():
        return ["t"]
    zk.get_topic_deletions = marked
    controller.put("TopicDeletion", controller._on_topic_deletion)
    assert controller.ctx.deletions_waiting == {"t"} and "t" not in controller.ctx.topics_to_delete
    _, results = alter(controller, {T1: [0, 1]})
    assert results[T1].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- the legacy znode, failover and restarts ---------------------------------------------


def test_the_legacy_znode_starts_reassignments_and_is_deleted_when_they_are_done(cluster):
    controller, zk, channels = cluster
    zk.reassign_znode = {T0: (1, 2), TopicPartition("gone", 0): (0,)}
    controller._on_reassign_partitions_znode(DataChanged(ReassignPartitionsZNode.PATH, ZNodeChange.CREATED))
    # The unknown partition failed and left the znode; t-0 is in flight.
    assert zk.reassign_znode == {T0: (1, 2)}
    assert T0 in listed(controller)
    alter_isr(controller, zk, leader=0, isr=[0, 1, 2])
    assert zk.reassign_znode is None
    assert last_topic_write(zk) == ReplicaAssignment((1, 2))


def test_an_api_reassignment_takes_its_partition_out_of_the_legacy_znode(cluster):
    controller, zk, channels = cluster
    zk.reassign_znode = {T0: (1, 2), T1: (1, 0)}
    alter(controller, {T0: [0, 2]})
    assert zk.reassign_znode == {T1: (1, 0)}


def test_an_unreadable_legacy_znode_is_ignored_until_a_reassignment_clears_it(cluster):
    controller, zk, channels = cluster
    zk.reassign_znode_raw = b"not json"
    with pytest.raises(ZNodeDecodeError):
        ReassignPartitionsZNode.decode(zk.reassign_znode_raw)
    controller._on_reassign_partitions_znode(DataChanged(ReassignPartitionsZNode.PATH, ZNodeChange.CREATED))
    assert zk.topic_writes == []
    alter(controller, {T0: [0]})
    assert zk.reassign_znode is None and zk.reassign_znode_raw is None


def test_a_new_controller_resumes_from_the_topic_znode(cluster):
    controller, zk, channels = cluster
    # As loaded from /brokers/topics/t by a controller that took over mid-way.
    controller.ctx.set_full_assignment(T0, ReplicaAssignment((1, 2, 0), (2,), (0,)))
    controller.ctx.partitions_being_reassigned = set(controller.ctx.reassigning)
    controller.put("Resume", controller._maybe_resume_reassignments, lambda tp, ra: True)
    sent = leader_and_isr_states(channels)
    assert sorted(b for b, _ in sent) == [0, 1, 2] and all(s.leader_epoch == 5 for _, s in sent)
    alter_isr(controller, zk, leader=0, isr=[0, 1, 2])
    assert last_topic_write(zk) == ReplicaAssignment((1, 2))


def test_a_target_broker_that_comes_back_gets_the_reassignment_again(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [1, 2]})
    channels.sent.clear()
    controller.put("Resume", controller._resume_reassignments_on, [2])
    assert sorted(b for b, _ in leader_and_isr_states(channels)) == [0, 1, 2]
    channels.sent.clear()
    controller.put("Resume", controller._resume_reassignments_on, [0])     # not a target: nothing
    assert leader_and_isr_states(channels) == []


def test_the_legacy_znode_codec_is_kafkas():
    data = ReassignPartitionsZNode.encode({T0: [1, 2]})
    assert data == b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    assert ReassignPartitionsZNode.decode(data) == {T0: (1, 2)}
    for bad in (b'{"version":1}', b'{"partitions":[{"topic":"t","partition":0,"replicas":"x"}]}', b"[]"):
        with pytest.raises(ZNodeDecodeError):
            ReassignPartitionsZNode.decode(bad)


def test_leader_and_isr_without_a_reassignment_has_empty_adding_and_removing(cluster):
    controller, _, _ = cluster
    request = reqs.leader_and_isr(controller.ctx, 0, 1, [T1])
    s = request.topic_states[0].partition_states[0]
    assert (s.replicas, s.adding_replicas, s.removing_replicas) == ([1, 0], [], [])


def test_state_of_zk_drives_completion_not_memory(cluster):
    controller, zk, channels = cluster
    alter(controller, {T0: [1, 2]})
    # ZooKeeper already shows 2 in sync (written by an AlterIsr this controller handled).
    zk.states[T0] = replace(zk.states[T0], isr=(0, 1, 2))
    controller.put("Complete", controller._maybe_complete_reassignments, [T0])
    assert last_topic_write(zk) == ReplicaAssignment((1, 2))
