"""The leader's AlterIsr sender: what it sends again, and what it drops, when the
controller refuses a proposal or a LeaderAndIsr overtakes it."""
from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer, task

from kafkalike.broker.alter_isr import RETRY_BACKOFF_S, AlterIsrManager, ControllerRefused, Proposal
from kafkalike.protocol.messages.alter_isr import AlterIsrResponse


class FakePartition:
    def __init__(self, topic: str, index: int):
        self.topic, self.index, self.tp = topic, index, (topic, index)
        self.isr, self.pending_isr, self.leader_epoch, self.zk_version = [0, 1], None, 3, 7

    def maybe_increment_high_watermark(self) -> bool:
        return False


def make_manager(clock: task.Clock, metadata=None, config=None, broker_epoch: int = 0) -> AlterIsrManager:
    return AlterIsrManager(0, clock, metadata, config, broker_epoch=lambda: broker_epoch,
                           is_shutting_down=lambda: False, on_isr_updated=lambda part, old_isr_size: None)


def manager_answering(answers: list) -> tuple[AlterIsrManager, task.Clock, list[dict]]:
    """A manager whose controller gives `answers` in turn (an exception is raised)."""
    clock = task.Clock()
    manager = make_manager(clock)
    sent: list[dict] = []

    async def send(batch):
        sent.append({tp: list(proposal.isr) for tp, (part, proposal) in batch.items()})
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer(batch)

    manager._send = send
    return manager, clock, sent


def accepted(batch) -> AlterIsrResponse:
    return AlterIsrResponse(topics=[AlterIsrResponse.TopicData(name=tp[0], partitions=[
        AlterIsrResponse.PartitionData(partition_index=tp[1], leader_id=0, leader_epoch=part.leader_epoch,
                                       isr=list(proposal.isr), current_isr_version=proposal.zk_version + 1)])
        for tp, (part, proposal) in batch.items()])


def test_a_refused_proposal_is_sent_again_and_then_applied():
    manager, clock, sent = manager_answering([ControllerRefused("NOT_CONTROLLER"), accepted])
    p = FakePartition("t", 0)
    assert manager.submit(p, [0, 1, 2])
    clock.advance(0)
    assert len(sent) == 1 and p.isr == [0, 1]
    clock.advance(RETRY_BACKOFF_S)
    assert sent[1] == {("t", 0): [0, 1, 2]}
    assert p.isr == [0, 1, 2] and p.pending_isr is None and p.zk_version == 8


def test_a_proposal_withdrawn_by_leader_and_isr_is_not_sent_again_but_the_others_are():
    manager, clock, sent = manager_answering([ConnectionError("refused"), accepted])
    withdrawn, kept = FakePartition("t", 0), FakePartition("t", 1)
    manager.submit(withdrawn, [0, 1, 2])
    manager.submit(kept, [0, 1, 2])
    clock.advance(0)
    assert set(sent[0]) == {("t", 0), ("t", 1)}
    withdrawn.pending_isr = None          # a LeaderAndIsr took the partition's state from the controller
    clock.advance(RETRY_BACKOFF_S)
    assert sent[1] == {("t", 1): [0, 1, 2]}
    assert kept.isr == [0, 1, 2] and withdrawn.isr == [0, 1]
    assert not manager.sending


def test_a_resigned_controller_answer_raises_a_named_refusal():
    """The top-level error of the answer, not a partition's, decides that nothing applied."""
    clock = task.Clock()
    manager = make_manager(
        clock, metadata=SimpleNamespace(controller_id=5, brokers={5: SimpleNamespace(endpoint=lambda name: object())}),
        config=SimpleNamespace(inter_broker_listener_name="PLAINTEXT", get=lambda key: 30000), broker_epoch=1)
    answer = AlterIsrResponse(error_code=41)       # NOT_CONTROLLER

    class Conn:
        closed = defer.Deferred()

        def request(self, request, version):
            return defer.succeed(answer)

    manager.conn, manager.conn_to = Conn(), 5
    p = FakePartition("t", 0)
    p.pending_isr = [0, 1, 2]
    failures = []
    defer.ensureDeferred(manager._send({p.tp: (p, Proposal(p.pending_isr, 3, 7))})).addErrback(failures.append)
    assert failures and failures[0].check(ControllerRefused) and "NOT_CONTROLLER" in str(failures[0].value)


def test_an_answer_to_a_proposal_withdrawn_in_flight_changes_nothing():
    """A LeaderAndIsr that arrives while AlterIsr is on its way (the leader was moved, or
    the controller wrote the ISR itself) is newer than the answer: the answer is dropped,
    and a proposal made since is neither applied by it nor counted as refused."""
    answers = [defer.Deferred(), defer.Deferred()]
    clock = task.Clock()
    failed = []
    manager = AlterIsrManager(0, clock, None, None, broker_epoch=lambda: 0, is_shutting_down=lambda: False,
                              on_isr_updated=lambda part, old_isr_size: None, on_isr_failed=failed.append)
    requests = []

    async def send(batch):
        requests.append({tp: list(proposal.isr) for tp, (part, proposal) in batch.items()})
        return await answers[len(requests) - 1]

    manager._send = send
    p = FakePartition("t", 0)
    manager.submit(p, [0, 1, 2])
    clock.advance(0)
    p.pending_isr = None                    # a LeaderAndIsr took the controller's state ...
    assert manager.submit(p, [0, 1, 2])     # ... and the leader proposes again at once
    answers[0].callback(AlterIsrResponse(topics=[AlterIsrResponse.TopicData(name="t", partitions=[
        AlterIsrResponse.PartitionData(partition_index=0, error_code=12)])]))     # INVALID_UPDATE_VERSION
    assert failed == [] and p.isr == [0, 1] and p.pending_isr == [0, 1, 2]
    assert len(requests) == 2           # the new proposal goes in a request of its own
    answers[1].callback(accepted({("t", 0): (p, Proposal(p.pending_isr, 3, 7))}))
    assert p.isr == [0, 1, 2] and p.pending_isr is None


def test_a_proposal_keeps_the_epoch_and_version_it_was_made_against():
    """The lab's controller-bounce failure: a proposal that waited out a controller
    failover went out with the epoch and zkVersion of the LeaderAndIsr that came since,
    and the new controller wrote an ISR the leader had not proposed against that state."""
    manager, clock, _ = manager_answering([ConnectionError("the controller was killed"), accepted])
    requests = []
    real_send = manager._send

    async def send(batch):
        requests.extend((tp, list(proposal.isr), proposal.leader_epoch, proposal.zk_version)
                        for tp, (part, proposal) in batch.items())
        return await real_send(batch)

    manager._send = send
    p = FakePartition("t", 0)
    manager.submit(p, [0, 1, 2])
    clock.advance(0)
    p.leader_epoch, p.zk_version, p.isr, p.pending_isr = 4, 9, [0], None     # the new controller's LeaderAndIsr
    manager.submit(p, [0, 1])
    clock.advance(RETRY_BACKOFF_S)
    assert requests == [(("t", 0), [0, 1, 2], 3, 7), (("t", 0), [0, 1], 4, 9)]
    assert p.isr == [0, 1] and p.zk_version == 10 and p.pending_isr is None
