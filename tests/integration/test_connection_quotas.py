"""max.connections.per.ip on a real broker, as a client sees it.

Clients connect from 127.0.0.2 (an address of the loopback of its own, so the broker's own
connections from 127.0.0.1 do not count against it), which max.connections.per.ip.overrides
allows two connections: the third is closed before it is read, and the broker logs Kafka's
Acceptor line; once one of the two closes, a new connection is served. A dynamic change of
the overrides (kafka-configs --entity-type brokers --entity-default) applies to the next connection.
"""
from __future__ import annotations

import socket
import struct
import time

import pytest

from kafkalike.client.admin import AdminClient, AlterConfigOp, ConfigResource, ResourceType
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.api import encode_request
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

CLIENT_ADDRESS = "127.0.0.2"


def connect(port: int) -> socket.socket:
    sock = socket.socket()
    sock.settimeout(5)
    sock.bind((CLIENT_ADDRESS, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def served(sock: socket.socket) -> bool:
    """True if the broker answers ApiVersions on it; False if it closed the connection."""
    data = encode_request(18, 0, 1, "quota-probe", ApiVersionsRequest())
    try:
        sock.sendall(struct.pack(">i", len(data)) + data)
        return len(sock.recv(4)) == 4
    except OSError:
        return False


@pytest.fixture
def broker(zk_chroot, shm_path):
    cluster = Cluster(zk_chroot, shm_path, 1, {"max.connections.per.ip.overrides": f"{CLIENT_ADDRESS}:2"})
    try:
        cluster.start()
        yield cluster.brokers[0]
    finally:
        cluster.kill()


def test_an_address_gets_its_maximum_of_connections_and_no_more(broker):
    first, second = connect(broker.port), connect(broker.port)
    assert served(first) and served(second)
    third = connect(broker.port)           # the kernel accepts it; the broker closes it unread
    assert not served(third)
    third.close()
    line = (f"Rejected connection from /{CLIENT_ADDRESS}, address already has the configured maximum of 2 "
            "connections. (kafka.network.Acceptor)")
    wait_until(lambda: line in broker.server_log.read_text(), 10, "the broker's refusal line")
    first.close()
    time.sleep(0.2)                        # the broker sees the close
    fourth = connect(broker.port)
    assert served(fourth)
    for sock in (second, fourth):
        sock.close()


def test_a_dynamic_change_applies_to_the_next_connection(broker):
    """The overrides changed live for the whole cluster (kafka-configs --entity-default):
    CLIENT_ADDRESS, down to one connection, keeps the one it has and gets no second."""
    first = connect(broker.port)
    assert served(first)
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.incremental_alter_configs({ConfigResource(ResourceType.BROKER, ""): [
            AlterConfigOp("max.connections.per.ip.overrides", f"{CLIENT_ADDRESS}:1")]})

    def second_refused() -> bool:
        probe = connect(broker.port)
        try:
            return not served(probe)
        finally:
            probe.close()
    wait_until(second_refused, 10, "the new override to refuse a second connection")
    assert served(first)
    first.close()
