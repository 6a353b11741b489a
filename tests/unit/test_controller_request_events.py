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
