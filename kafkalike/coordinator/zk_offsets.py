"""Offsets of OffsetCommit/OffsetFetch v0, which Kafka 2.8 still keeps in ZooKeeper.

v0 predates Kafka-stored offsets: the broker writes the offset as a decimal string to
/consumers/<group>/offsets/<topic>/<partition>, the znode the old Scala consumer
used, and reads it back from there. It shares nothing with __consumer_offsets.
(The znode belongs in kafkalike.zkdata's catalogue; it lives here until it moves.)
"""
from __future__ import annotations

from kazoo.exceptions import NoNodeError


def consumer_offset_path(group: str, topic: str, partition: int) -> str:
    return f"/consumers/{group}/offsets/{topic}/{partition}"


async def get_consumer_offset(zk, group: str, topic: str, partition: int) -> int | None:
    """The stored offset, or None if nothing was ever committed there."""
    session = zk.session
    path = consumer_offset_path(group, topic, partition)
    try:
        data, _stat = await session.request(lambda: session.kazoo.get_async(path))
    except NoNodeError:
        return None
    if not data:
        return None
    return int(data.decode("ascii"))


async def set_consumer_offset(zk, group: str, topic: str, partition: int, offset: int) -> None:
    session = zk.session
    path = consumer_offset_path(group, topic, partition)
    data = str(offset).encode("ascii")
    try:
        await session.request(lambda: session.kazoo.set_async(path, data, -1))
    except NoNodeError:
        await session.request(lambda: session.kazoo.create_async(path, data, makepath=True))
