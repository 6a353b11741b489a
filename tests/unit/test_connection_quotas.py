"""The broker's connection counts (Kafka's ConnectionQuotas): max.connections.per.ip with its
overrides refuses and logs; max.connections stops the listeners accepting, never the
inter-broker one, and starts them again when a connection closes."""
from __future__ import annotations

import logging

from kafkalike.broker.config import KafkaConfig
from kafkalike.broker.connection_quotas import ConnectionQuotas


class FakePort:
    def __init__(self) -> None:
        self.reading = True

    def stopReading(self) -> None:  # noqa: N802 (Twisted's name)
        self.reading = False

    def startReading(self) -> None:  # noqa: N802
        self.reading = True


def config(**keys: str) -> KafkaConfig:
    return KafkaConfig({"zookeeper.connect": "z:2181",
                        "listeners": "PLAINTEXT://127.0.0.1:9092,CLIENTS://127.0.0.1:9093",
                        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:PLAINTEXT", **keys})


def test_an_address_at_its_maximum_is_refused_and_logged_until_one_of_its_connections_closes(caplog):
    quotas = ConnectionQuotas(config(**{"max.connections.per.ip": "2",
                                        "max.connections.per.ip.overrides": "10.0.0.9:4,localhost:1"}), "PLAINTEXT")
    caplog.set_level(logging.INFO, logger="kafka.network.Acceptor")
    assert quotas.admit("10.0.0.1") and quotas.admit("10.0.0.1")
    assert not quotas.admit("10.0.0.1")
    assert caplog.messages == ["Rejected connection from /10.0.0.1, address already has the configured maximum "
                               "of 2 connections."]
    assert quotas.admit("10.0.0.2")                               # another address has its own count
    quotas.closed("10.0.0.1")
    assert quotas.admit("10.0.0.1")
    assert all(quotas.admit("10.0.0.9") for _ in range(4)) and not quotas.admit("10.0.0.9")   # an override
    assert quotas.admit("127.0.0.1") and not quotas.admit("127.0.0.1")                        # by host name
    assert quotas.total == 3 + 4 + 1


def test_at_max_connections_the_listeners_wait_but_the_inter_broker_one_never():
    quotas = ConnectionQuotas(config(**{"max.connections": "3"}), "PLAINTEXT")
    inter_broker, clients = FakePort(), FakePort()
    quotas.add_port("PLAINTEXT", inter_broker)
    quotas.add_port("CLIENTS", clients)
    for ip in ("10.0.0.1", "10.0.0.2"):
        assert quotas.admit(ip)
    assert clients.reading
    assert quotas.admit("10.0.0.3")
    assert not clients.reading and inter_broker.reading
    assert quotas.admit("10.0.0.4")            # what the inter-broker listener takes still counts
    quotas.closed("10.0.0.1")
    assert not clients.reading                  # 3 still open
    quotas.closed("10.0.0.2")
    assert clients.reading
    quotas.remove_port("CLIENTS")               # a listener removed (or the broker stopping) is left alone
    for ip in ("10.0.0.5", "10.0.0.6"):
        quotas.admit(ip)
    assert clients.reading
