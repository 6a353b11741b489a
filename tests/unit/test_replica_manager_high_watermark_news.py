"""A follower's fetch that waits on the leader is answered when the high watermark moves.

With three replicas the high watermark moves when the slower follower fetches; the other
follower's fetch is then parked with nothing new to read. It is answered at once with
the new high watermark, so followers (their consumers under KIP-392, their checkpoint,
their starting point if elected) learn it within a round trip, not at the next data or
the end of replica.fetch.wait.max.ms.
"""
from __future__ import annotations

import types

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.broker.replica_manager import FetchParams, FetchSpec, ReplicaManager
from kafkalike.records.batch import encode_batch
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager

TP = ("t", 0)
LEADER, A, B = 0, 1, 2


@pytest.fixture
def leader(shm_path):
    """Broker 0 leading t-0 with ISR [0, 1, 2] and 10 records no follower has yet."""
    clock = Clock()
    clock.advance(1_700_000_000)
    now = lambda: int(clock.seconds() * 1000)  # noqa: E731
    manager = ReplicaManager(LEADER, LogManager([str(shm_path)], LogConfig(), clock=now), clock,
                             lambda topic: LogConfig(), now)
    part = manager.get_or_create_partition(TP, True)
    part.make_leader(types.SimpleNamespace(leader=LEADER, leader_epoch=1, zk_version=0, controller_epoch=1,
                                           replicas=[LEADER, A, B], isr=[LEADER, A, B]), now())
    part.append_as_leader(encode_batch([(None, b"x")] * 10), 1, 1, now())
    yield manager, part, clock
    manager.shutdown()


def fetch(manager, replica: int, offset: int):
    params = FetchParams(replica, 500, 1, 10_485_760,
                         {TP: FetchSpec(offset, 1_048_576, current_leader_epoch=1, last_fetched_epoch=1)})
    return manager.fetch(params, lambda topic: True)


def test_a_parked_follower_fetch_is_answered_when_the_high_watermark_moves(leader):
    manager, part, clock = leader
    assert fetch(manager, A, 0)[TP].high_watermark == 0      # A reads the 10 records
    waiting = fetch(manager, A, 10)                           # has them all: waits for more
    assert isinstance(waiting, defer.Deferred) and not waiting.called
    assert part.high_watermark == 0                           # B has not fetched them yet

    fetch(manager, B, 0)
    answer = fetch(manager, B, 10)                            # B has them: the high watermark moves
    assert part.high_watermark == 10
    told = []
    defer.maybeDeferred(lambda: answer).addCallback(told.append)
    assert told and told[0][TP].high_watermark == 10, "B, which moved it, is told at once too"
    assert waiting.called, "A's fetch must be answered at once, not after replica.fetch.wait.max.ms"
    got = []
    waiting.addCallback(got.append)
    assert got[0][TP].high_watermark == 10 and not got[0][TP].records

    again = fetch(manager, A, 10)                             # nothing new now: it waits
    assert isinstance(again, defer.Deferred) and not again.called
    clock.advance(0.5)
    assert again.called
