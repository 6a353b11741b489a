"""A controller that takes over cleans up after brokers that died without a controller.

When the controller itself is killed, the brokers lost with it (the old controller at
least) are never handled by anyone: the new controller must find them in the ISRs it
loads and take them out, electing from the live ISR where they led, as Kafka's
ReplicaStateMachine.startup does. Otherwise a dead replica keeps holding back the high
watermark, and every acks=all write, of partitions whose leader survived.
"""
from __future__ import annotations

import dataclasses

from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock

from kafkalike.controller.controller import KafkaController
from kafkalike.controller.context import ONLINE, ControllerContext
from kafkalike.zkdata import (FeatureZNodeValue, BrokerAndEpoch, BrokerRegistration, EndPoint, LeaderIsrAndControllerEpoch,
                              PartitionAssignment, TopicPartition)


class FakeZk:
    """The reads and conditional writes a controller makes on failover, in memory."""

    def __init__(self, live: list[int], assignment: dict[int, list[int]],
                 states: dict[int, LeaderIsrAndControllerEpoch]):
        self.live = live
        self.assignment = PartitionAssignment.of(assignment)
        self.states = {TopicPartition("t", p): s for p, s in states.items()}
        self.feature = None
        self.assignment_writes = []

    async def _watch(self, *_args):
        return defer.Deferred()    # anything with cancel(); never fires here

    watch_broker_changes = watch_topic_changes = watch_topic_deletions = _watch
    watch_partition_modifications = watch_partition_reassignment = watch_data = _watch

    async def get_partition_reassignment(self):
        return None     # no /admin/reassign_partitions

    async def get_all_brokers_and_epochs(self):
        return [BrokerAndEpoch(BrokerRegistration(b, (EndPoint("PLAINTEXT", "127.0.0.1", 9092 + b, "PLAINTEXT"),)),
                               100 + b) for b in self.live]

    async def get_all_topics(self):
        return ["t"]

    async def get_topic_assignments(self, topics):
        return {"t": self.assignment}

    async def get_partition_states(self, partitions):
        return {tp: self.states[tp] for tp in partitions if tp in self.states}

    async def get_topic_deletions(self):
        return []

    async def get_feature_znode(self):
        return self.feature, (-1 if self.feature is None else 0)

    async def create_or_set_feature_znode(self, value, exists):
        assert exists == (self.feature is not None)
        self.feature = value

    async def set_topic_assignment(self, topic, assignment, controller_epoch_zk_version):
        assert controller_epoch_zk_version >= 0, "unfenced write"
        self.assignment_writes.append((topic, assignment))
        self.assignment = assignment

    async def set_partition_states(self, changed, epoch_zk_version):
        out = {}
        for tp, state in changed.items():
            assert state.zk_version == self.states[tp].zk_version, "unconditional write"
            self.states[tp] = out[tp] = dataclasses.replace(state, zk_version=state.zk_version + 1)
        return out


def state(leader: int, epoch: int, isr: tuple[int, ...]) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(leader, epoch, isr, controller_epoch=1, zk_version=5)


def take_over(zk: FakeZk) -> KafkaController:
    controller = KafkaController(0, zk, MemoryReactorClock())
    controller.ctx = ControllerContext(epoch=2, epoch_zk_version=2)
    controller.active = True
    failures = []
    d = defer.ensureDeferred(controller._on_failover()).addErrback(failures.append)
    assert d.called and not failures, failures
    return controller


def test_new_controller_removes_brokers_that_died_before_it_took_over():
    # Broker 2 was the controller and was killed; brokers 0 and 1 are registered.
    zk = FakeZk(live=[0, 1], assignment={0: [2, 0, 1], 1: [0, 2, 1], 2: [1, 2, 0]},
                states={0: state(2, 4, (2, 0, 1)), 1: state(0, 4, (0, 2, 1)), 2: state(1, 4, (1, 2))})
    controller = take_over(zk)

    now = {tp.partition: (s.leader, s.isr, s.leader_epoch) for tp, s in zk.states.items()}
    # Led by the dead broker: the first live ISR member in assignment order leads.
    assert now[0] == (0, (0, 1), 5)
    # Led by a live broker: the dead one leaves the ISR, with a new leader epoch as
    # Kafka's removal from the ISR has.
    assert now[1] == (0, (0, 1), 5)
    assert now[2] == (1, (1,), 5)
    assert all(controller.ctx.partition_states[tp] == ONLINE for tp in zk.states)


def test_takeover_with_every_replica_alive_writes_nothing():
    before = {0: state(0, 4, (0, 1, 2)), 1: state(1, 4, (1, 2, 0))}
    zk = FakeZk(live=[0, 1, 2], assignment={0: [0, 1, 2], 1: [1, 2, 0]}, states=dict(before))
    take_over(zk)
    assert {tp.partition: s for tp, s in zk.states.items()} == before


def test_a_topic_without_an_id_gets_one_and_feature_versioning_is_enabled():
    """As a 2.8 controller: ids for topics made by --zookeeper tools, and /feature enabled with
    no finalized features (written once: a second failover finds it as wanted)."""
    zk = FakeZk([0, 1], {0: [0, 1]}, {0: state(0, 3, (0, 1))})
    controller = take_over(zk)
    [(topic, written)] = zk.assignment_writes
    assert topic == "t" and written.topic_id is not None
    assert controller.ctx.topic_ids["t"] == written.topic_id
    assert zk.feature == FeatureZNodeValue(True, {})
    take_over(zk)
    assert len(zk.assignment_writes) == 1


def test_an_older_inter_broker_protocol_writes_no_ids_and_disables_features():
    zk = FakeZk([0], {0: [0]}, {0: state(0, 3, (0,))})
    zk.feature = FeatureZNodeValue(True, {})
    controller = KafkaController(0, zk, MemoryReactorClock(), uses_topic_ids=False, feature_versioning=False)
    controller.ctx = ControllerContext(epoch=2, epoch_zk_version=2)
    controller.active = True
    defer.ensureDeferred(controller._on_failover())
    assert zk.assignment_writes == [] and "t" not in controller.ctx.topic_ids
    assert zk.feature == FeatureZNodeValue(False, {})
