"""An ISR change proposed to a controller that loses its ZooKeeper session is not lost.

A chaos run found a leader that never changed an ISR again: its AlterIsr waited on a
controller that had been paused past its ZooKeeper session, whose handler then failed on
the ZooKeeper write and never answered, and the leader's AlterIsr channel waited with no
timeout. Kafka answers every queued controller request (UNKNOWN_SERVER_ERROR when its
handler fails) and its AlterIsr channel times out after controller.socket.timeout.ms,
finds the controller of the day and proposes again.

The story, on a topic with replicas [L, F, C] where C is the controller:

1. F is frozen (SIGSTOP) until L drops it from the ISR: ISR [L, C].
2. C is frozen, then F thawed: F catches up and L proposes ISR [L, C, F] to C, whose
   socket holds the request unread.
3. C's ZooKeeper session expires: L or F becomes controller.
4. With C still frozen, L's proposal must time out and reach ZooKeeper through the new
   controller.
5. C is thawed and reads the old proposal with a dead session: it must rejoin the
   cluster as a broker, and the ISR.
"""
from __future__ import annotations

import json
import os
import signal

import pytest
from confluent_kafka import Producer
from kafkalike.client.admin import AdminClient, NewTopic

from tests.fault.cluster_view import ZooKeeperView, running_cluster
from tests.waiting import wait_until

pytestmark = pytest.mark.fault

SESSION_TIMEOUT_MS = 6_000
LAG_TIME_MS = 2_000
REQUEST_TIMEOUT_MS = 4_000
TOPIC = "isr-through-controller-loss"


def produce(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5})
    for i in range(count):
        producer.produce(TOPIC, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0


def test_an_isr_expansion_waiting_on_a_controller_that_lost_its_session_is_applied(zk_chroot):
    overrides = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                 "replica.lag.time.max.ms": str(LAG_TIME_MS),
                 "controller.socket.timeout.ms": str(REQUEST_TIMEOUT_MS)}
    with running_cluster(zk_chroot, 3, overrides) as cluster:
        zk = ZooKeeperView(zk_chroot)
        frozen: list[int] = []
        try:
            c = zk.controller()
            leader, follower = [i for i in range(3) if i != c]
            pid = {b.broker_id: b.proc.pid for b in cluster.brokers}
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            admin.create_topics([NewTopic(TOPIC, replica_assignment={0: [leader, follower, c]})])
            admin.close()
            wait_until(lambda: zk.partition(TOPIC, 0).leader == leader and len(zk.partition(TOPIC, 0).isr) == 3,
                       30, f"{TOPIC}-0 led by {leader} with a full ISR")
            bootstrap = cluster.broker(leader).bootstrap

            # 1. F falls out of the ISR (the controller applies that shrink).
            os.kill(pid[follower], signal.SIGSTOP)
            frozen.append(follower)
            produce(bootstrap, 100)
            wait_until(lambda: follower not in zk.partition(TOPIC, 0).isr, 4 * LAG_TIME_MS / 1000 + 10,
                       f"{follower} dropped from the ISR")
            # Thaw F before its own session expires: only C is to lose one.
            os.kill(pid[c], signal.SIGSTOP)
            frozen.append(c)
            os.kill(pid[follower], signal.SIGCONT)
            frozen.remove(follower)

            # 2. F catches up; L's expansion goes to the frozen controller.
            produce(bootstrap, 100)
            wait_until(lambda: any(follower in isr for isr in proposals(cluster.broker(leader).server_log)[1:]),
                       30, f"{leader} proposing to add {follower} back")

            # 3. C's session expires; one of the others takes over.
            wait_until(lambda: zk.controller() not in (None, c), 3 * SESSION_TIMEOUT_MS / 1000 + 10, "a new controller")
            new_controller = zk.controller()

            # 4. L gives up on the frozen controller and proposes to the new one.
            wait_until(lambda: follower in zk.partition(TOPIC, 0).isr, REQUEST_TIMEOUT_MS / 1000 + 30,
                       f"{follower} back in the ISR through controller {new_controller}")
            # 5. C wakes with the old proposal in its socket and a dead session.
            os.kill(pid[c], signal.SIGCONT)
            frozen.remove(c)
            wait_until(lambda: zk.registered(c), 30, f"{c} registered again after its session expired")
            wait_until(lambda: set(zk.partition(TOPIC, 0).isr) == {leader, follower, c}, 60,
                       f"{c} back in the ISR too")
            assert zk.partition(TOPIC, 0).leader == leader
            assert all(b.is_running() for b in cluster.brokers)
        finally:
            for broker_id in frozen:
                os.kill(pid[broker_id], signal.SIGCONT)
            zk.close()


def proposals(server_log) -> list[list[int]]:
    """The ISRs the leader proposed, from its "Proposing ISR change from [..] to [..]" lines."""
    text = server_log.read_text(errors="replace") if server_log.exists() else ""
    return [json.loads(line.rsplit(" to ", 1)[1].split("]")[0] + "]") for line in text.splitlines()
            if "Proposing ISR change" in line and TOPIC in line]
