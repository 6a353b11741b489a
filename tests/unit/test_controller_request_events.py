"""Requests the controller queues as events are answered even when their handler fails.

A ZooKeeper write that raises (a SessionExpired while a paused controller wakes up, say)
used to leave the request's Deferred uncalled: the broker that sent AlterIsr waited
forever and never changed an ISR again. Kafka answers such requests with
UNKNOWN_SERVER_ERROR; so must we.
"""
from __future__ import annotations

from kazoo.exceptions import SessionExpiredError

from kafkalike.protocol.messages.alter_isr import AlterIsrRequest, AlterIsrResponse
from tests.unit.test_controller_elect_leaders import cluster, tp  # noqa: F401  (cluster is a fixture)


def alter_isr_request(controller, new_isr):
    state = controller.ctx.leadership[tp()]
    return AlterIsrRequest(broker_id=1, broker_epoch=101, topics=[AlterIsrRequest.TopicData(name="t", partitions=[
        AlterIsrRequest.PartitionData(partition_index=0, leader_epoch=state.leader_epoch, new_isr=new_isr,
                                      current_isr_version=state.zk_version)])])


def test_an_alter_isr_whose_zookeeper_write_fails_is_answered_with_the_failure(cluster):
    controller, zk, channels, clock = cluster

    async def expired(changed, epoch_zk_version):
        raise SessionExpiredError()
    zk.set_partition_states = expired
    outcome = []
    controller.alter_isr(alter_isr_request(controller, [1, 2])).addBoth(outcome.append)
    assert len(outcome) == 1, "the AlterIsr request was never answered"
    assert isinstance(outcome[0].value, SessionExpiredError)


def test_the_queue_goes_on_after_a_failed_event(cluster):
    controller, zk, channels, clock = cluster
    real = zk.set_partition_states

    async def once(changed, epoch_zk_version):
        zk.set_partition_states = real
        raise SessionExpiredError()
    zk.set_partition_states = once
    controller.alter_isr(alter_isr_request(controller, [1, 2])).addErrback(lambda f: None)
    answers = []
    controller.alter_isr(alter_isr_request(controller, [1, 2])).addCallback(answers.append)
    [answer] = answers
    assert isinstance(answer, AlterIsrResponse) and answer.error_code == 0
    assert list(answer.topics[0].partitions[0].isr) == [1, 2]


def partition_answer(controller, request):
    answers = []
    controller.alter_isr(request).addCallback(answers.append)
    [answer] = answers
    return answer.topics[0].partitions[0]


def test_a_proposal_already_in_place_is_answered_with_the_state_whatever_version_it_names(cluster):
    """The leader's answer was lost and it proposes again, naming the version before."""
    controller, zk, channels, _ = cluster
    assert partition_answer(controller, alter_isr_request(controller, [1, 2])).error_code == 0
    writes = len(zk.writes)
    again = alter_isr_request(controller, [1, 2])
    again.topics[0].partitions[0].current_isr_version -= 1
    answer = partition_answer(controller, again)
    assert answer.error_code == 0 and list(answer.isr) == [1, 2] and answer.current_isr_version == 11
    assert len(zk.writes) == writes, "nothing new to write"


def test_a_leader_behind_the_controllers_zk_version_is_sent_the_state(cluster):
    """Refused for an old zkVersion, the leader would be refused for ever (and its acks=all
    producers with it once its ISR is below min.insync.replicas): it is sent LeaderAndIsr."""
    from kafkalike.controller import requests as reqs
    controller, zk, channels, _ = cluster
    assert partition_answer(controller, alter_isr_request(controller, [1, 2])).error_code == 0
    stale = alter_isr_request(controller, [1, 3])
    stale.topics[0].partitions[0].current_isr_version -= 1
    before = len(channels.of(reqs.LEADER_AND_ISR_VERSION))
    assert partition_answer(controller, stale).error_code == 95       # INVALID_UPDATE_VERSION
    sent = channels.of(reqs.LEADER_AND_ISR_VERSION)[before:]
    assert [b for b, _ in sent] == [1]
    [state] = [s for t in sent[0][1].topic_states for s in t.partition_states]
    assert (state.partition_index, list(state.isr), state.zk_version) == (0, [1, 2], 11)


def test_a_broker_in_controlled_shutdown_is_told_to_follow_nobody(cluster):
    """Its partitions move or shrink without it, and it gets no LeaderAndIsr, as Kafka's
    elections send only to replicas online and not shutting down: told to follow the new
    leader, it would fetch, be taken back into the ISR, and hold acks=all writes once it
    stopped. It gets StopReplica for the partitions it followed."""
    from kafkalike.controller import requests as reqs
    controller, zk, channels, _ = cluster
    answers = []
    controller.controlled_shutdown(1, 101).addCallback(answers.append)
    assert answers and answers[0][0] == 0
    told = {b for b, _ in channels.of(reqs.LEADER_AND_ISR_VERSION)}
    assert told == {2, 3}
    assert [b for b, _ in channels.of(reqs.STOP_REPLICA_VERSION)] == [1]
    assert all(1 not in zk.states[tp(p=p)].isr for p in range(3))
