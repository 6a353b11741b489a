"""A leader's LeaderAndIsr of its own current epoch.

A new controller sends every partition's state to every broker, and during its failover
it may send the same state twice. The lab's controller-bounce scenario caught a leader
that took the second copy as news: it withdrew the ISR change it had just proposed,
ignored the controller's acceptance of it, and kept a zkVersion the controller had moved
past, so its later proposals were refused and producers got NOT_ENOUGH_REPLICAS.
"""
from __future__ import annotations

import types

from kafkalike.broker.partition import Partition


def state(epoch: int, zk_version: int, isr: list[int], leader: int = 0):
    return types.SimpleNamespace(leader=leader, leader_epoch=epoch, zk_version=zk_version, controller_epoch=7,
                                 replicas=[0, 1, 2], isr=isr)


def leader() -> Partition:
    part = Partition("t", 0, 0)
    part.maybe_increment_high_watermark = lambda: False       # no log here
    part.log = types.SimpleNamespace(assign_leader_epoch=lambda epoch, offset: None, log_end_offset=0)
    assert part.make_leader(state(4, 10, [0]), now_ms=1_000)
    part.followers[1].log_end_offset = 42
    return part


def test_the_same_state_again_keeps_the_proposal_and_the_followers_positions():
    part = leader()
    part.pending_isr = [0, 1]
    assert part.make_leader(state(4, 10, [0]), now_ms=2_000)
    assert part.pending_isr == [0, 1] and part.followers[1].log_end_offset == 42 and part.zk_version == 10


def test_an_older_zk_version_of_the_same_epoch_changes_nothing():
    part = leader()
    part.isr, part.zk_version = [0, 1], 11            # the controller accepted our proposal
    assert part.make_leader(state(4, 10, [0]), now_ms=2_000)
    assert part.isr == [0, 1] and part.zk_version == 11


def test_a_newer_zk_version_of_the_same_epoch_brings_the_controllers_isr():
    part = leader()
    part.pending_isr = [0, 1]                         # proposed against version 10: out of date now
    assert part.make_leader(state(4, 12, [0, 2]), now_ms=2_000)
    assert part.isr == [0, 2] and part.zk_version == 12 and part.pending_isr is None
    assert part.followers[1].log_end_offset == 42 and set(part.followers) == {1, 2}


def test_a_new_epoch_starts_leadership_over():
    part = leader()
    part.pending_isr = [0, 1]
    assert part.make_leader(state(5, 11, [0]), now_ms=2_000)
    assert part.pending_isr is None and part.followers[1].log_end_offset == -1
    assert not part.make_leader(state(4, 20, [0, 1, 2]), now_ms=3_000)
