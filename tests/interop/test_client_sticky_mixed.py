"""Our sticky members and kafka-python's share an eager "sticky" group and stay sticky.

Eager members revoke everything before they rejoin, so a sticky leader knows what each
member had only from the StickyAssignor user data in its subscription. Whoever leads,
kafka-python's StickyPartitionAssignor or ours, each member must keep the partitions it
had whenever the group stays balanced that way. (kafka-python keeps its sticky state in
class attributes, so one kafka-python member per process.)
"""
from __future__ import annotations

import pytest
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from kafkalike.client.consumer import KafkaConsumer
from tests.interop.test_group_clients import SESSION_MS, ThreadMember, admin, create_topic, drive  # noqa: F401

pytestmark = pytest.mark.interop

PARTITIONS = 6


class OurMember:
    """Our KafkaConsumer, polled by the test thread between the others' steps."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.consumer = KafkaConsumer({
            "bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": "sticky",
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500, "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.owned: set[int] = set()

    def poll(self) -> None:
        self.consumer.poll(0.05)
        self.owned = {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def settled(members, sizes) -> bool:
    owned = [m.owned for m in members]
    return sorted(len(o) for o in owned) == sorted(sizes) and set().union(*owned) == set(range(PARTITIONS)) \
        and sum(map(len, owned)) == PARTITIONS


@pytest.mark.parametrize("leader", ["kafka-python", "ours"])
def test_mixed_sticky_group_keeps_partitions_with_their_owners(broker, admin, topic_name, leader):  # noqa: F811
    create_topic(admin, topic_name, PARTITIONS)
    group = f"sticky-{leader}-{topic_name}"

    def kafka_python():
        return ThreadMember(broker.bootstrap, group, topic_name, partition_assignment_strategy=[StickyPartitionAssignor])

    def ours():
        return OurMember(broker.bootstrap, group, topic_name)

    first = kafka_python() if leader == "kafka-python" else ours()  # the first member leads the group
    members = [first]
    try:
        drive(members, lambda: settled(members, [6]), what="the first member to own everything")
        members.append(ours() if leader == "kafka-python" else kafka_python())
        drive(members, lambda: settled(members, [3, 3]), what="two members at 3 partitions each")
        before = [set(m.owned) for m in members]

        members.append(ours())  # a third member joins: each old member gives one partition away
        drive(members, lambda: settled(members, [2, 2, 2]), what="three members at 2 each")
        for old, member in zip(before, members):
            assert member.owned <= old, (before, [m.owned for m in members])
        before = [set(m.owned) for m in members]

        gone = members.pop(1)  # the second member leaves: its two partitions go, nothing else moves
        gone.close()
        drive(members, lambda: settled(members, [3, 3]), what="the two left at 3 each")
        for old, member in zip(before[:1] + before[2:], members):
            assert old <= member.owned, (before, [m.owned for m in members])
    finally:
        for m in members:
            m.close()
