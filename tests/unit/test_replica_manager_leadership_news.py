"""Which LeaderAndIsr changes reach the coordinators: as Kafka's makeLeaders reports only
a newly made leader, a leader epoch bump of a partition this broker already leads (the
controller shrinking its ISR) must not make the group or transaction coordinator reload
the partition and drop the work it has in flight (a transaction's markers)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest_twisted
from twisted.internet.task import Clock

from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.broker.topic_configs import TopicConfigs
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager

TOPIC = "__transaction_state"


def state(leader: int, epoch: int, isr: list[int]):
    return SimpleNamespace(partition_index=0, leader=leader, leader_epoch=epoch, isr=isr, replicas=[0, 1, 2],
                           zk_version=epoch, controller_epoch=1, is_new=epoch == 0, adding_replicas=[],
                           removing_replicas=[])


@pytest_twisted.ensureDeferred
async def test_only_a_new_leadership_or_a_followership_is_reported(shm_path):
    logs = LogManager([str(shm_path / "data")], LogConfig(), enable_cleaner=False)
    configs = TopicConfigs(LogConfig())
    configs.set_overrides(TOPIC, {})
    news: list[tuple[bool, int | None]] = []
    fetchers = SimpleNamespace(add=lambda *a, **k: None, remove=lambda *a, **k: None)
    replicas = ReplicaManager(0, logs, Clock(), lambda t: LogConfig(), lambda: 0, topic_configs=configs,
                              fetchers=fetchers,
                              on_leadership_change=lambda t, p, leader, epoch: news.append((leader, epoch)))

    async def leader_and_isr(s) -> None:
        await replicas.become_leader_or_follower(1, 1, [(TOPIC, None, [s])], {1: ("127.0.0.1", 1)})

    await leader_and_isr(state(0, 0, [0, 1, 2]))
    assert news == [(True, 0)]
    await leader_and_isr(state(0, 1, [0, 1]))          # still the leader: the ISR shrank
    assert news == [(True, 0)]
    assert replicas.partitions[(TOPIC, 0)].leader_epoch == 1
    await leader_and_isr(state(1, 2, [1, 0]))           # leadership moved away
    assert news[-1] == (False, 2)
    await leader_and_isr(state(0, 3, [0, 1]))           # and back: a new leadership, reloaded
    assert news[-1] == (True, 3)
