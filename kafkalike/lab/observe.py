"""Looking at a running lab from outside, as an operator would.

Three sources, each the authority for something: ZooKeeper's `srvr` four-letter word for
each server's mode, ZooKeeper's znodes (read with kazoo) for who is controller, which
brokers are registered and each partition's leader and ISR as the controller wrote them,
and a broker's Metadata answer for what clients see (under-replicated and offline
partitions, as `kafka-topics.sh --describe --under-replicated-partitions` counts them).
"""
from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafkalike.client.connection import BrokerConnection
from kafkalike.lab.state import LabError
from kafkalike.lab.zookeeper import four_letter_word
from kafkalike.protocol.messages.metadata import MetadataRequest

T = TypeVar("T")


def zookeeper_mode(host: str, port: int, timeout: float = 1.0) -> str | None:
    """standalone / leader / follower from `srvr`; None when the server does not serve."""
    try:
        answer = four_letter_word(host, port, "srvr", timeout)
    except OSError:
        return None
    match = re.search(r"^Mode: (\S+)", answer, re.MULTILINE)
    return match.group(1) if match else None


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll until predicate() is truthy and return it; LabError naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise LabError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


@dataclass(frozen=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


class ZooKeeperView:
    """A short kazoo session on the lab's ZooKeeper, reading the controller's znodes."""

    def __init__(self, connect: str, timeout: float = 5.0) -> None:
        # A lab with ZooKeeper down is a normal sight: no retry chatter on stderr.
        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
        self.zk = KazooClient(hosts=connect, timeout=max(timeout, 4.0))
        try:
            self.zk.start(timeout=timeout)
        except Exception:
            self.zk.close()
            raise LabError(f"ZooKeeper at {connect} does not answer") from None

    def __enter__(self) -> ZooKeeperView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.zk.stop()
        finally:
            self.zk.close()

    def controller(self) -> int | None:
        try:
            data, _ = self.zk.get("/controller")
        except NoNodeError:
            return None
        return int(json.loads(data)["brokerid"])

    def registered(self) -> set[int]:
        try:
            return {int(child) for child in self.zk.get_children("/brokers/ids")}
        except NoNodeError:
            return set()

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        try:
            data, _ = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        except NoNodeError:
            return None
        state = json.loads(data)
        return PartitionState(state["leader"], state["leader_epoch"], tuple(state["isr"]))

    def partitions(self, topic: str) -> dict[int, PartitionState | None]:
        """Every partition of topic (from its assignment znode) with its state."""
        try:
            data, _ = self.zk.get(f"/brokers/topics/{topic}")
        except NoNodeError:
            raise LabError(f"there is no topic {topic}") from None
        assignment = json.loads(data)["partitions"]
        return {int(p): self.partition(topic, int(p)) for p in sorted(assignment, key=int)}

    def replication_factor(self, topic: str) -> int:
        data, _ = self.zk.get(f"/brokers/topics/{topic}")
        return max(len(replicas) for replicas in json.loads(data)["partitions"].values())

    def full_isr(self, topic: str) -> bool:
        """Every partition of topic has a leader and all its replicas in the ISR."""
        wanted = self.replication_factor(topic)
        states = self.partitions(topic).values()
        return all(s is not None and s.leader >= 0 and len(s.isr) == wanted for s in states)


@dataclass
class MetadataView:
    """One broker's Metadata answer for every topic, internal ones included."""

    answered_by: str
    controller_id: int
    live_brokers: set[int]
    partitions: int = 0
    under_replicated: list[tuple[str, int]] = field(default_factory=list)
    offline: list[tuple[str, int]] = field(default_factory=list)


def read_metadata(addresses: Iterable[tuple[str, int]], timeout: float = 3.0) -> MetadataView | None:
    """Metadata from the first broker of addresses that answers; None when none does."""
    for host, port in addresses:
        connection = BrokerConnection(host, port, client_id="kafkalike-lab", timeout=timeout)
        try:
            connection.connect()
            answer = connection.send(MetadataRequest(topics=None, allow_auto_topic_creation=False), version=7)
        except Exception:
            continue
        finally:
            connection.close()
        view = MetadataView(f"{host}:{port}", answer.controller_id, {b.node_id for b in answer.brokers})
        for topic in answer.topics:
            for p in topic.partitions:
                view.partitions += 1
                if p.leader_id < 0:
                    view.offline.append((topic.name, p.partition_index))
                if len(p.isr_nodes) < len(p.replica_nodes):
                    view.under_replicated.append((topic.name, p.partition_index))
        return view
    return None
