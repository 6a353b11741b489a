"""Preferred and unclean elections and the auto leader rebalance, on a controller whose
ZooKeeper and broker channels are in-memory fakes (the znode writes and the requests
sent are what the tests look at)."""
from __future__ import annotations

from dataclasses import replace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.broker.authorizer import ALLOW_ALL
from kafkalike.broker.handlers.elect_leaders import handle_elect_leaders
from kafkalike.controller import requests as reqs
from kafkalike.controller.context import OFFLINE, ONLINE, ControllerContext
from kafkalike.controller.controller import KafkaController
from kafkalike.controller.leader_election import ElectionType, imbalance_ratios
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.elect_leaders import ElectLeadersRequest
from kafkalike.zkdata.topic_znodes import LeaderIsrAndControllerEpoch, TopicPartition

EPOCH = 7


class FakeRegistration:
    endpoints = ()
    rack = None

    def endpoint(self, listener):
        return None


class FakeZk:
    """Partition-state znodes with conditional writes on their zkVersion."""

    def __init__(self):
        self.states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.writes: list[dict] = []
        self.bump_before_write: set[TopicPartition] = set()

    async def set_partition_states(self, changed, epoch_zk_version):
        self.writes.append(dict(changed))
        out = {}
        for tp, state in changed.items():
            current = self.states[tp]
            if tp in self.bump_before_write:     # someone else wrote it first
                self.bump_before_write.discard(tp)
                self.states[tp] = current = replace(current, zk_version=current.zk_version + 1)
            if current.zk_version != state.zk_version:
                out[tp] = Exception("BadVersion")
            else:
                self.states[tp] = out[tp] = replace(state, zk_version=state.zk_version + 1)
        return out

    async def get_partition_states(self, tps):
        return {tp: self.states[tp] for tp in tps}


class FakeChannels:
    def __init__(self):
        self.sent: list[tuple[int, object, int]] = []

    def send(self, broker_id, request, version):
        self.sent.append((broker_id, request, version))
        return defer.succeed(None)

    def shutdown(self):
        pass

    def of(self, version):
        return [(b, r) for b, r, v in self.sent if v == version]


def tp(topic="t", p=0):
    return TopicPartition(topic, p)


@pytest.fixture
def cluster():
    """A controller for brokers 1-3 with topic t: p0 on [1,2,3], p1 on [2,3,1], p2 on [3,1,2]."""
    zk, channels, clock = FakeZk(), FakeChannels(), Clock()
    controller = KafkaController(1, zk, clock, leader_imbalance_check_interval_seconds=5)
    ctx = ControllerContext(epoch=EPOCH, epoch_zk_version=3)
    for b in (1, 2, 3):
        ctx.live_brokers[b] = FakeRegistration()
        ctx.broker_epochs[b] = 100 + b
    for p, replicas in enumerate([(1, 2, 3), (2, 3, 1), (3, 1, 2)]):
        ctx.assignments[tp(p=p)] = replicas
        state = LeaderIsrAndControllerEpoch(replicas[0], 4, replicas, EPOCH, 10)
        ctx.leadership[tp(p=p)] = zk.states[tp(p=p)] = state
        ctx.partition_states[tp(p=p)] = ONLINE
    controller.ctx, controller.channels, controller.active = ctx, channels, True
    defer.ensureDeferred(controller._loop())
    yield controller, zk, channels, clock
    controller.shutdown()


def set_leader(controller, zk, partition, leader, isr=None):
    t = tp(p=partition)
    state = replace(controller.ctx.leadership[t], leader=leader,
                    isr=tuple(isr) if isr is not None else controller.ctx.leadership[t].isr)
    controller.ctx.leadership[t] = zk.states[t] = state


def elect(controller, partitions, election_type):
    results = []
    controller.elect_leaders(partitions, election_type).addCallback(results.append)
    assert results, "the election event did not complete"
    return results[0]


def test_preferred_election_moves_leadership_back_to_the_head_of_the_assignment(cluster):
    controller, zk, channels, _ = cluster
    set_leader(controller, zk, 0, 2)
    results = elect(controller, [tp(p=0)], ElectionType.PREFERRED)
    assert results[tp(p=0)].error == ErrorCode.NONE and results[tp(p=0)].leader == 1
    written = zk.states[tp(p=0)]
    assert (written.leader, written.leader_epoch, written.isr, written.controller_epoch) == (1, 5, (1, 2, 3), EPOCH)
    leader_and_isr = channels.of(reqs.LEADER_AND_ISR_VERSION)
    assert sorted(b for b, _ in leader_and_isr) == [1, 2, 3]
    state = leader_and_isr[0][1].topic_states[0].partition_states[0]
    assert (state.leader, state.leader_epoch) == (1, 5)
    assert sorted(b for b, _ in channels.of(reqs.UPDATE_METADATA_VERSION)) == [1, 2, 3]


def test_preferred_election_not_needed_when_the_preferred_replica_leads(cluster):
    controller, zk, channels, _ = cluster
    results = elect(controller, [tp(p=1)], ElectionType.PREFERRED)
    assert results[tp(p=1)].error == ErrorCode.ELECTION_NOT_NEEDED
    assert results[tp(p=1)].message is None
    assert zk.writes == [] and channels.sent == []


@pytest.mark.parametrize("why", ["out of the ISR", "dead", "shutting down"])
def test_preferred_leader_not_available(cluster, why):
    controller, zk, _, _ = cluster
    if why == "out of the ISR":
        set_leader(controller, zk, 0, 2, isr=(2, 3))
    else:
        set_leader(controller, zk, 0, 2)
        if why == "dead":
            del controller.ctx.live_brokers[1]
        else:
            controller.ctx.shutting_down.add(1)
    results = elect(controller, [tp(p=0)], ElectionType.PREFERRED)
    assert results[tp(p=0)].error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert results[tp(p=0)].message == ("Failed to elect leader for partition t-0 under strategy "
                                        "PreferredReplicaPartitionLeaderElectionStrategy")
    assert zk.states[tp(p=0)].leader == 2 and zk.writes == []


def test_unclean_election_picks_the_first_live_replica_when_no_isr_member_lives(cluster):
    controller, zk, _, _ = cluster
    del controller.ctx.live_brokers[1]
    set_leader(controller, zk, 0, -1, isr=(1,))
    controller.ctx.partition_states[tp(p=0)] = OFFLINE
    results = elect(controller, [tp(p=0), tp(p=1)], ElectionType.UNCLEAN)
    assert results[tp(p=0)].error == ErrorCode.NONE and results[tp(p=0)].leader == 2
    assert (zk.states[tp(p=0)].leader, zk.states[tp(p=0)].isr, zk.states[tp(p=0)].leader_epoch) == (2, (2,), 5)
    assert controller.ctx.partition_states[tp(p=0)] == ONLINE
    assert results[tp(p=1)].error == ErrorCode.ELECTION_NOT_NEEDED   # its leader (2) is alive


def test_unclean_election_without_any_live_replica(cluster):
    controller, zk, _, _ = cluster
    controller.ctx.assignments[tp(p=0)] = (1,)
    del controller.ctx.live_brokers[1]
    set_leader(controller, zk, 0, -1, isr=(1,))
    results = elect(controller, [tp(p=0)], ElectionType.UNCLEAN)
    assert results[tp(p=0)].error == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert results[tp(p=0)].message == ("Failed to elect leader for partition t-0 under strategy "
                                        "OfflinePartitionLeaderElectionStrategy(true)")


def test_unknown_and_deleted_partitions(cluster):
    controller, _, _, _ = cluster
    controller.ctx.assignments[tp("gone", 0)] = (1, 2)
    controller.ctx.leadership[tp("gone", 0)] = LeaderIsrAndControllerEpoch(2, 0, (1, 2), EPOCH, 0)
    controller.ctx.topics_to_delete.add("gone")
    results = elect(controller, [tp("nope", 0), tp(p=9), tp("gone", 0)], ElectionType.PREFERRED)
    assert results[tp("nope", 0)].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert results[tp(p=9)].message == "The partition does not exist."
    assert (results[tp("gone", 0)].error, results[tp("gone", 0)].message) == (
        ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")


def test_no_partitions_means_all_of_them(cluster):
    controller, zk, _, _ = cluster
    set_leader(controller, zk, 0, 2)
    set_leader(controller, zk, 2, 1)
    results = elect(controller, None, ElectionType.PREFERRED)
    assert {t: r.error for t, r in results.items()} == {
        tp(p=0): ErrorCode.NONE, tp(p=1): ErrorCode.ELECTION_NOT_NEEDED, tp(p=2): ErrorCode.NONE}
    assert [zk.states[tp(p=p)].leader for p in range(3)] == [1, 2, 3]


def test_a_state_written_meanwhile_is_planned_again_from_zookeeper(cluster):
    controller, zk, _, _ = cluster
    set_leader(controller, zk, 0, 2)
    zk.bump_before_write.add(tp(p=0))
    results = elect(controller, [tp(p=0)], ElectionType.PREFERRED)
    assert results[tp(p=0)].error == ErrorCode.NONE
    assert len(zk.writes) == 2 and zk.states[tp(p=0)].leader == 1
    assert zk.states[tp(p=0)].zk_version == 12     # re-read at 11, written to 12


def test_not_controller(cluster):
    controller, _, _, _ = cluster
    controller.active = False
    results = elect(controller, [tp(p=0)], ElectionType.PREFERRED)
    assert results[tp(p=0)].error == ErrorCode.NOT_CONTROLLER


def test_imbalance_ratio_counts_preferred_partitions_led_elsewhere(cluster):
    controller, zk, _, _ = cluster
    set_leader(controller, zk, 0, 2)
    assert imbalance_ratios(controller.ctx) == {1: 1.0, 2: 0.0, 3: 0.0}


def test_auto_rebalance_runs_every_interval_while_controller(cluster):
    controller, zk, _, clock = cluster
    controller._start_auto_rebalance()
    set_leader(controller, zk, 0, 2)
    set_leader(controller, zk, 2, 1, isr=(1, 2))      # broker 3 is out of p2's ISR: cannot lead
    clock.advance(4.9)
    assert zk.writes == []
    clock.advance(0.1)
    assert zk.states[tp(p=0)].leader == 1
    assert zk.states[tp(p=2)].leader == 1 and len(zk.writes) == 1
    controller._resign()
    assert clock.getDelayedCalls() == []           # the check stops with the controllership
    clock.advance(10)
    assert len(zk.writes) == 1


def test_auto_rebalance_leaves_brokers_within_the_imbalance_threshold(cluster):
    controller, zk, _, clock = cluster
    controller.leader_imbalance_percentage = 50
    controller.ctx.assignments[tp(p=1)] = (1, 2, 3)           # broker 1 prefers p0 and p1
    set_leader(controller, zk, 1, 1)
    set_leader(controller, zk, 0, 2)                           # ratio 0.5, not above 0.5
    controller._start_auto_rebalance()
    clock.advance(5)
    assert zk.writes == []


class FakeRequestContext:
    def __init__(self, controller, version):
        self.controller = controller
        self.metadata = None
        self.version = version
        self.authorizer = ALLOW_ALL


def test_handler_leaves_out_partitions_needing_no_election_when_asked_for_all(cluster):
    controller, zk, _, _ = cluster
    set_leader(controller, zk, 0, 2)
    answers = []
    handle_elect_leaders(FakeRequestContext(controller, 2),
                         ElectLeadersRequest(election_type=0, topic_partitions=None)).addCallback(answers.append)
    [topic] = answers[0].replica_election_results
    assert topic.topic == "t"
    assert [(p.partition_id, p.error_code) for p in topic.partition_result] == [(0, 0)]

    answers.clear()
    request = ElectLeadersRequest(election_type=0, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic="t", partition_id=[0, 1])])
    handle_elect_leaders(FakeRequestContext(controller, 2), request).addCallback(answers.append)
    [topic] = answers[0].replica_election_results
    assert [(p.partition_id, p.error_code) for p in topic.partition_result] == [
        (0, int(ErrorCode.ELECTION_NOT_NEEDED)), (1, int(ErrorCode.ELECTION_NOT_NEEDED))]


def test_handler_on_a_broker_that_is_not_controller(cluster):
    controller, _, _, _ = cluster
    controller.active = False
    request = ElectLeadersRequest(election_type=1, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic="t", partition_id=[2])])
    response = handle_elect_leaders(FakeRequestContext(controller, 1), request)
    [topic] = response.replica_election_results
    assert [(p.partition_id, p.error_code) for p in topic.partition_result] == [(2, int(ErrorCode.NOT_CONTROLLER))]
