"""Replica fetchers and the AlterIsr sender drop a connection the other broker closed.

Between two uses, a peer may stop or restart on the same address (a rolling restart
does exactly that). A request written to the closed connection would never be
answered, so the next use must connect again; these tests drive both with a fake
connection and Twisted's Clock, no sockets.
"""
from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer
from twisted.internet.task import Clock

from kafkalike.broker import alter_isr as alter_isr_module
from kafkalike.broker import replica_fetcher as fetcher_module
from kafkalike.broker.alter_isr import AlterIsrManager
from kafkalike.broker.metadata_cache import BrokerInfo, Endpoint
from kafkalike.broker.partition import Partition
from kafkalike.broker.replica_fetcher import FetchState, ReplicaFetcher
from kafkalike.protocol.messages.alter_isr import AlterIsrResponse
from kafkalike.protocol.messages.fetch import FetchResponse


class FakeConnection:
    def __init__(self):
        self.requests: list[tuple[object, defer.Deferred]] = []
        self.closed = defer.Deferred()

    def request(self, body, version):
        d = defer.Deferred()
        self.requests.append((body, d))
        return d

    def close(self):
        if not self.closed.called:
            self.closed.callback(None)


class FakeConnector:
    """Stands in for outbound.connect: a new FakeConnection per call."""

    def __init__(self):
        self.made: list[FakeConnection] = []

    def __call__(self, host, port, client_id, reactor, timeout=10):
        conn = FakeConnection()
        self.made.append(conn)
        return defer.succeed(conn)


CONFIG = {"replica.fetch.wait.max.ms": 500, "replica.fetch.min.bytes": 1,
          "replica.fetch.response.max.bytes": 10 << 20, "replica.fetch.max.bytes": 1 << 20,
          "replica.fetch.backoff.ms": 1000, "replica.socket.timeout.ms": 30000}


def test_fetcher_reconnects_after_the_leader_closed_its_idle_connection(monkeypatch):
    connector = FakeConnector()
    monkeypatch.setattr(fetcher_module.outbound, "connect", connector)
    fetcher = ReplicaFetcher(0, SimpleNamespace(get=CONFIG.__getitem__), Clock(), SimpleNamespace(partitions={}),
                             1, "127.0.0.1", 9092)

    fetcher.add(("t", 0), FetchState(0, 1))
    [first] = connector.made
    [(_, answer)] = first.requests
    fetcher.remove(("t", 0))                   # leadership moved away meanwhile
    answer.callback(FetchResponse(responses=[]))
    assert not fetcher.running                 # nothing left to fetch: the loop ended
    first.closed.callback(None)                # then the leader stopped

    fetcher.add(("t", 0), FetchState(0, 2))    # it is leader again, restarted
    assert len(connector.made) == 2, "the fetcher wrote to the connection the leader had closed"
    assert len(first.requests) == 1 and len(connector.made[1].requests) == 1


ALTER_ISR_CONFIG = {"controller.socket.timeout.ms": 30000}


def alter_isr_manager(monkeypatch, clock: Clock) -> tuple[AlterIsrManager, FakeConnector]:
    connector = FakeConnector()
    monkeypatch.setattr(alter_isr_module.outbound, "connect", connector)
    controller = BrokerInfo(1, (Endpoint("PLAINTEXT", "127.0.0.1", 9093),))
    manager = AlterIsrManager(
        0, clock, SimpleNamespace(controller_id=1, brokers={1: controller}),
        SimpleNamespace(inter_broker_listener_name="PLAINTEXT", get=ALTER_ISR_CONFIG.__getitem__),
        broker_epoch=lambda: 7, is_shutting_down=lambda: False, on_isr_updated=lambda part, old_isr_size: None)
    return manager, connector


def leader_without_log(isr: list[int], replicas: list[int]) -> Partition:
    """A leader whose accepted ISR changes nothing else (it has no log to move a high watermark in)."""
    part = Partition("t", 0, 0, leader_id=0, leader_epoch=3, isr=isr, replicas=replicas)
    part.maybe_increment_high_watermark = lambda: False
    return part


def test_an_unanswered_alter_isr_is_proposed_again_after_the_controller_socket_timeout(monkeypatch):
    clock = Clock()
    manager, connector = alter_isr_manager(monkeypatch, clock)
    part = leader_without_log([0], [0, 1])
    assert manager.submit(part, [0, 1])
    clock.advance(0)
    [first] = connector.made
    clock.advance(29)
    assert len(connector.made) == 1 and len(first.requests) == 1
    clock.advance(1)                                   # no answer in 30 s: drop the connection,
    clock.advance(alter_isr_module.RETRY_BACKOFF_S)    # back off, connect again, propose again
    assert first.closed.called
    assert len(connector.made) == 2
    [(request, answer)] = connector.made[1].requests
    assert list(request.topics[0].partitions[0].new_isr) == [0, 1]
    answer.callback(AlterIsrResponse(error_code=0, topics=[AlterIsrResponse.TopicData(name="t", partitions=[
        AlterIsrResponse.PartitionData(partition_index=0, leader_id=0, leader_epoch=3, isr=[0, 1],
                                       current_isr_version=1)])]))
    assert part.isr == [0, 1] and part.pending_isr is None


def test_alter_isr_reconnects_after_the_controller_closed_its_idle_connection(monkeypatch):
    clock = Clock()
    manager, connector = alter_isr_manager(monkeypatch, clock)
    part = leader_without_log([0, 1], [0, 1, 2])

    assert manager.submit(part, [0, 1, 2])
    clock.advance(0)
    [first] = connector.made
    [(request, answer)] = first.requests
    assert list(request.topics[0].partitions[0].new_isr) == [0, 1, 2]
    answer.callback(AlterIsrResponse(topics=[AlterIsrResponse.TopicData(name="t", partitions=[
        AlterIsrResponse.PartitionData(partition_index=0, leader_id=0, leader_epoch=3, isr=[0, 1, 2],
                                       current_isr_version=1)])]))
    assert part.pending_isr is None and part.isr == [0, 1, 2] and not manager.sending
    first.closed.callback(None)                # the controller restarted on the same address

    assert manager.submit(part, [0, 1])
    clock.advance(0)
    assert len(connector.made) == 2, "AlterIsr was written to the connection the controller had closed"
    assert len(connector.made[1].requests) == 1
