"""A leader's handling of follower fetches: positions, ISR admission and divergence.

Kafka 2.8's ReplicaManager records a follower's fetch offset as its log end only when
the read succeeded without a diverging epoch. A follower that comes back with a tail
the leader does not have must first truncate; counting its old log end as its position
would let it into the ISR with records nobody acknowledged, and a later election of it
would drop records that were acknowledged with acks=all.
"""
from __future__ import annotations

import types

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.broker.replica_manager import FetchParams, FetchSpec, ReplicaManager
from kafkalike.protocol.errors import ErrorCode
from kafkalike.records.batch import encode_batch
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager

TP = ("t", 0)
LEADER, FOLLOWER = 0, 1


class Proposals:
    """Stands in for the AlterIsr channel: records what the leader proposes."""

    def __init__(self) -> None:
        self.submitted: list[list[int]] = []

    def submit(self, part, isr: list[int]) -> None:
        self.submitted.append(list(isr))


@pytest.fixture
def leader(shm_path):
    """Broker 0 leading t-0 at epoch 5 with ISR [0]: epoch 3 wrote offsets 0-9, epoch 5 wrote 10-14.

    Broker 1, a replica outside the ISR, once led at epoch 4 and appended 20 records
    after offset 10 that nobody else has.
    """
    clock = Clock()
    clock.advance(1_700_000_000)
    now = lambda: int(clock.seconds() * 1000)  # noqa: E731
    manager = ReplicaManager(LEADER, LogManager([str(shm_path)], LogConfig(), clock=now), clock,
                             lambda topic: LogConfig(), now)
    manager.alter_isr = Proposals()
    part = manager.get_or_create_partition(TP, True)
    state = lambda epoch: types.SimpleNamespace(leader=LEADER, leader_epoch=epoch, zk_version=0,  # noqa: E731
                                                controller_epoch=1, replicas=[LEADER, FOLLOWER],
                                                isr=[LEADER])
    part.make_leader(state(3), now())
    part.append_as_leader(encode_batch([(None, b"x")] * 10), 1, 1, now())
    part.make_leader(state(5), now())
    part.append_as_leader(encode_batch([(None, b"y")] * 5), 1, 1, now())
    assert part.high_watermark == 15
    yield manager, part
    manager.shutdown()


def follower_fetch(manager, offset: int, last_epoch: int, min_bytes: int = 1_048_576, wait_ms: int = 3000):
    params = FetchParams(FOLLOWER, wait_ms, min_bytes, 10_485_760,
                         {TP: FetchSpec(offset, 1_048_576, current_leader_epoch=5, last_fetched_epoch=last_epoch)})
    return manager.fetch(params, lambda topic: True)


def test_a_diverging_follower_is_answered_at_once_and_not_admitted_to_the_isr(leader):
    manager, part = leader
    result = follower_fetch(manager, 30, last_epoch=4)

    assert not isinstance(result, defer.Deferred), "a diverging fetch must not wait for fetch.min.bytes"
    assert result[TP].error == ErrorCode.NONE
    assert result[TP].diverging == (3, 10)
    assert manager.alter_isr.submitted == []
    assert part.followers[FOLLOWER].log_end_offset == -1
    assert part.high_watermark == 15


def test_a_failed_read_does_not_move_the_followers_position(leader):
    manager, part = leader
    result = follower_fetch(manager, 40, last_epoch=-1)     # past the leader's log end

    assert result[TP].error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert manager.alter_isr.submitted == []
    assert part.followers[FOLLOWER].log_end_offset == -1


def test_the_follower_joins_the_isr_only_after_truncating_and_catching_up(leader):
    manager, part = leader
    follower_fetch(manager, 30, last_epoch=4)
    # Truncated to offset 10 (the end of epoch 3): behind the high watermark, so not yet.
    parked = follower_fetch(manager, 10, last_epoch=3)
    assert isinstance(parked, defer.Deferred)
    assert part.followers[FOLLOWER].log_end_offset == 10
    assert manager.alter_isr.submitted == []
    # Caught up to the leader's log end: now it is proposed.
    follower_fetch(manager, 15, last_epoch=5)
    assert manager.alter_isr.submitted == [[LEADER, FOLLOWER]]
    assert part.high_watermark == 15


def test_a_negative_partition_max_bytes_is_answered_with_one_log_line_a_minute(leader, caplog):
    manager, part = leader
    params = FetchParams(-1, 0, 1, 1 << 20, {TP: FetchSpec(0, -1)})
    with caplog.at_level("WARNING"):
        answers = [manager.fetch(params, lambda topic: True)[TP] for _ in range(50)]
    assert {a.error for a in answers} == {ErrorCode.UNKNOWN_SERVER_ERROR}
    assert answers[0].high_watermark == 15
    logged = [r for r in caplog.records if "negative partition max bytes" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is None
