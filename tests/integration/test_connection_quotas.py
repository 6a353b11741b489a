"""max.connections.per.ip on a real broker, as a client sees it.

Clients connect from 127.0.0.2 (an address of the loopback of its own, so the broker's own
connections from 127.0.0.1 do not count against it), which max.connections.per.ip.overrides
allows two connections: the third is closed before it is read, and the broker logs Kafka's
Acceptor line; once one of the two closes, a new connection is served. A dynamic change of
the overrides (kafka-configs --entity-type brokers --entity-default) applies to the next connection.

The creation rates (KIP-612): an address over its connection_creation_rate (set with
kafka-configs --entity-type ips) has its connection held unread and closed a second later;
a broker over max.connection.creation.rate answers its new connections late, never refuses
them, and keeps serving the ones it has. A connection idle for connections.max.idle.ms is
closed, and a client simply connects again.
"""
from __future__ import annotations

import select
import socket
import struct
import subprocess
import time
import urllib.request

import pytest

from kafkalike.client.admin import AdminClient, AlterConfigOp, ConfigResource, ResourceType
from kafkalike.client.producer import KafkaProducer
from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from kafkalike.protocol.api import encode_request
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from tests.conftest import REPO_ROOT
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

CLIENT_ADDRESS = "127.0.0.2"


def connect(port: int, address: str = CLIENT_ADDRESS) -> socket.socket:
    sock = socket.socket()
    sock.settimeout(5)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def served(sock: socket.socket) -> bool:
    """True if the broker answers ApiVersions on it; False if it closed the connection."""
    try:
        ask(sock)
        return answered(sock)
    except OSError:
        return False


def ask(sock: socket.socket) -> None:
    data = encode_request(18, 0, 1, "quota-probe", ApiVersionsRequest())
    sock.sendall(struct.pack(">i", len(data)) + data)


def answered(sock: socket.socket) -> bool:
    size = read_exactly(sock, 4)
    return len(size) == 4 and len(read_exactly(sock, int.from_bytes(size, "big"))) > 0


def read_exactly(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


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

    def fourth_served() -> socket.socket | None:      # once the broker has seen the close
        sock = connect(broker.port)
        if served(sock):
            return sock
        sock.close()
        return None
    fourth = wait_until(fourth_served, 10, "a connection in the slot the closed one left")
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


def kafka_configs(broker, *argv: str, logged: str) -> None:
    """Run kafka-configs.sh and wait for the broker to log that it applied the change."""
    seen = broker.server_log.read_text().count(logged)
    done = subprocess.run([str(REPO_ROOT / "bin" / "kafka-configs.sh"), "--bootstrap-server", broker.bootstrap,
                           *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    wait_until(lambda: broker.server_log.read_text().count(logged) > seen, 10, f"the broker to log {logged!r}")


def connect_and_probe(port: int, address: str = CLIENT_ADDRESS) -> tuple[bool, float]:
    """A fresh connection's ApiVersions: (answered, seconds until answered or closed)."""
    started = time.monotonic()
    with connect(port, address) as sock:
        answered = served(sock)
    return answered, time.monotonic() - started


def test_an_address_over_its_connection_creation_rate_is_held_then_closed(broker):
    ips = ("--alter", "--entity-type", "ips", "--entity-name", CLIENT_ADDRESS)
    kafka_configs(broker, *ips, "--add-config", "connection_creation_rate=1",
                  logged=f"Updating max connection rate override for /{CLIENT_ADDRESS} to 1")
    # A rate counts at least ten windows of a second: ten connections at once are within 1/s.
    assert [connect_and_probe(broker.port)[0] for _ in range(10)] == [True] * 10
    answered, seconds = connect_and_probe(broker.port)
    assert not answered and 0.7 <= seconds < 4, seconds      # held unread for a second, then closed
    assert connect_and_probe(broker.port, "127.0.0.1")[0]    # other addresses have no quota
    kafka_configs(broker, *ips, "--delete-config", "connection_creation_rate",
                  logged=f"Removing max connection rate override for /{CLIENT_ADDRESS}")
    assert connect_and_probe(broker.port)[0]


def test_over_max_connection_creation_rate_connections_are_answered_late_and_none_refused(zk_chroot, shm_path):
    metrics_port = free_ports(1)[0]
    cluster = Cluster(zk_chroot, shm_path, 1, {"max.connection.creation.rate": "2", "kafkalike.metrics.host": "127.0.0.1",
                                               "kafkalike.metrics.port": str(metrics_port)})
    try:
        cluster.start()
        port = cluster.brokers[0].port
        existing = connect(port)
        assert served(existing)
        # 2/s over ten seconds lets about 20 in at once (less the broker's own); then each
        # new one waits about half a second, up to a second.
        probes = [connect_and_probe(port) for _ in range(30)]
        assert all(answered for answered, _ in probes)
        waits = sorted(seconds for _, seconds in probes)
        assert waits[0] < 0.3 and waits[-1] >= 0.4 and sum(waits) >= 3, waits
        # The first twenty leave the rate's window as the probes go on, and new connections
        # pass again: connect until one waits, so the next arrives while the listener is
        # throttled; it waits behind that one, then its own throttle (a second at most).
        burst = []
        while not burst or select.select([burst[-1]], [], [], 0.5)[0]:
            assert len(burst) < 60, "no connection was throttled"
            burst.append(connect(port))
            ask(burst[-1])
        held = connect(port)
        asked = time.monotonic()
        ask(held)
        assert select.select([held], [], [], 0)[0] == []      # not read at all yet
        assert served(existing)            # an open connection is served meanwhile
        assert answered(held) and time.monotonic() - asked > 0.3
        scraped = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
        series = dict(line.rsplit(" ", 1) for line in scraped.splitlines() if line.startswith("kafka_server_socket"))
        assert float(series['kafka_server_socket_server_metrics_connection_accept_throttle_time{listener="PLAINTEXT"}']) > 0
        assert float(series['kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT",'
                            'networkProcessor="0"}']) >= 2          # the two open here, and the broker's own
        for sock in (existing, held, *burst):
            sock.close()
    finally:
        cluster.kill()


def test_an_idle_connection_is_closed_and_a_client_connects_again(zk_chroot, shm_path):
    from confluent_kafka import Producer

    cluster = Cluster(zk_chroot, shm_path, 1, {"connections.max.idle.ms": "2000"})
    try:
        cluster.start()
        port = cluster.brokers[0].port
        idle, busy = connect(port, "127.0.0.1"), connect(port, "127.0.0.1")
        assert served(idle)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "log.connection.close": False})
        producer.produce("idle-topic", b"before")
        assert producer.flush(30) == 0
        ours = KafkaProducer({"bootstrap.servers": cluster.bootstrap})
        ours.send("idle-topic", b"ours before").get(30)
        for _ in range(10):                 # a request every half second keeps a connection open
            assert served(busy)
            time.sleep(0.5)
        idle.settimeout(5)
        assert read_exactly(idle, 1) == b""   # closed by the broker after 2 s without traffic
        producer.produce("idle-topic", b"after")    # its connections were closed too; it reconnects
        assert producer.flush(30) == 0
        ours.send("idle-topic", b"ours after").get(30)      # and so does kafkalike's own producer
        ours.close()
        for sock in (idle, busy):
            sock.close()
    finally:
        cluster.kill()
