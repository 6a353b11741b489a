"""The client's metadata refresh after every broker was down.

A broker that has just restarted answers Metadata before the controller has told it
anything: no brokers, no topics. The producer of the unclean-election lab scenario
installed that answer, was left with no node to ask, and sent nothing more until it was
stopped. Java's DefaultMetadataUpdater ignores an answer without brokers and retries.
"""
from __future__ import annotations

from kafkalike.client.metadata import Metadata
from kafkalike.client.network import MetadataUpdater
from kafkalike.protocol.messages.metadata import MetadataResponse


class OneNodeClient:
    """Just what MetadataUpdater asks of a NetworkClient: a ready node that takes requests."""

    request_timeout = 30.0
    reconnect_backoff = 0.05

    def __init__(self) -> None:
        self.sent: list = []

    def least_loaded_node(self, now: float) -> int | None:
        return -1

    def ready(self, node_id: int, now: float) -> bool:
        return True

    def connection_delay(self, node_id: int, now: float) -> float:
        return 0.0

    def version_for(self, node_id: int, api_key: int) -> int:
        return 9

    def send(self, node_id, request, callback, now, *, version) -> int:
        self.sent.append(callback)
        return len(self.sent)


def answer(brokers: list[int], leader: int) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=b, host="127.0.0.1", port=9092 + b)
                 for b in brokers],
        cluster_id="c", controller_id=brokers[0] if brokers else -1,
        topics=[MetadataResponse.MetadataResponseTopic(
            name="t", partitions=[MetadataResponse.MetadataResponsePartition(
                partition_index=0, leader_id=leader, leader_epoch=1, replica_nodes=[0], isr_nodes=[0])])]
        if brokers else [])


def test_an_answer_without_brokers_is_ignored_and_asked_again():
    metadata = Metadata([("127.0.0.1", 9092)], retry_backoff_ms=100)
    metadata.add_topic("t", 0.0)
    client = OneNodeClient()
    updater = MetadataUpdater(client, metadata)

    updater.maybe_update(1.0)
    client.sent[-1](answer([0], leader=0), None)
    assert set(metadata.cluster.nodes) == {0}
    assert metadata.cluster.leader_for("t", 0) == 0
    version = metadata.version

    metadata.request_update()
    updater.maybe_update(2.0)
    client.sent[-1](answer([], leader=-1), None)      # a restarted broker, no UpdateMetadata yet
    assert set(metadata.cluster.nodes) == {0}         # the last good view stays
    assert metadata.cluster.leader_for("t", 0) == 0
    assert metadata.version == version
    # ...and another refresh is due once the backoff has passed.
    assert metadata.time_to_next_update(metadata._last_refresh + 0.1) == 0
