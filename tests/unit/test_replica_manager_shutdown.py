"""A broker that stops never acknowledges what its followers do not have.

Seen in the lab's rolling-restart scenario: the leader's controlled shutdown moved its
leaderships to a follower that had not yet fetched the last records, then the stopping
leader's purgatory completed the acks=all produces still waiting for the high watermark,
and answered them with success. The new leader never had those records: acknowledged
writes lost. Kafka's purgatory shutdown answers nothing; the clients see the connection
close and retry.
"""
from __future__ import annotations

import types

from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.protocol.errors import ErrorCode
from kafkalike.records.batch import encode_batch
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager

TP = ("t", 0)


def test_a_waiting_acks_all_produce_is_not_answered_with_success_at_shutdown(shm_path):
    clock = Clock()
    clock.advance(1_700_000_000)
    now = lambda: int(clock.seconds() * 1000)  # noqa: E731
    manager = ReplicaManager(0, LogManager([str(shm_path)], LogConfig(), clock=now), clock,
                             lambda topic: LogConfig(), now)
    part = manager.get_or_create_partition(TP, True)
    part.make_leader(types.SimpleNamespace(leader=0, leader_epoch=1, zk_version=0, controller_epoch=1,
                                           replicas=[0, 1, 2], isr=[0, 1, 2]), now())
    waiting = manager.append_records({TP: encode_batch([(None, b"x")] * 3)}, -1, 30_000, lambda topic: True)
    assert isinstance(waiting, defer.Deferred) and not waiting.called     # no follower has them
    answers = []
    waiting.addCallback(answers.append)

    manager.shutdown()
    clock.advance(60)                       # nor later, when its timeout would have passed
    assert not any(r[TP].error == ErrorCode.NONE for r in answers), "acknowledged records no follower has"
    assert answers == []
