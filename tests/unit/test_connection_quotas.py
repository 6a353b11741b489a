"""The broker's connection quotas (Kafka's ConnectionQuotas).

Counts: max.connections.per.ip with its overrides refuses and logs; max.connections and a
listener's max.connections stop the listener accepting (never the inter-broker one for the
broker-wide cap), hold what arrives meanwhile, and let it in, in order, when a slot frees.
Rates (KIP-612): max.connection.creation.rate delays a connection (and its listener) by
Kafka's throttle time; an IP's connection_creation_rate holds the connection unread and
closes it after that time, without counting it."""
from __future__ import annotations

import logging
import ssl

import pytest_twisted
from twisted.internet.task import Clock

from kafkalike.broker.config import KafkaConfig
from kafkalike.broker.connection_quotas import IP_DEFAULT, ConnectionQuotas
from kafkalike.broker.network import listening_factory
from kafkalike.broker.security.listener import ListenerSecurity
from kafkalike.broker.security.tls import ServerTLS, build_context
from tests.security_certs import PASSWORD, make_pki
from tests.unit.broker_fakes import services


class FakePort:
    def __init__(self) -> None:
        self.reading = True

    def stopReading(self) -> None:  # noqa: N802 (Twisted's name)
        self.reading = False

    def startReading(self) -> None:  # noqa: N802
        self.reading = True


class Conn:
    """A connection as the quotas see it; `state` is what the client would notice."""

    def __init__(self, quotas: ConnectionQuotas, ip: str, listener: str = "CLIENTS") -> None:
        self.quotas, self.ip, self.listener_name = quotas, ip, listener
        self.state = "new"
        self.last_active = quotas.clock()
        quotas.accepted(self)

    def hold(self) -> None:
        self.state = "held"

    def serve(self) -> None:
        self.state = "served"

    def close(self) -> None:
        if self.state != "closed":
            self.state = "closed"
            self.quotas.closed(self)      # as connectionLost does

    def hang_up(self) -> None:
        """The client goes away."""
        self.close()


def config(**keys: str) -> KafkaConfig:
    return KafkaConfig({"zookeeper.connect": "z:2181",
                        "listeners": "PLAINTEXT://127.0.0.1:9092,CLIENTS://127.0.0.1:9093",
                        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:PLAINTEXT", **keys})


def quotas_of(**keys: str) -> tuple[ConnectionQuotas, Clock, FakePort, FakePort]:
    clock = Clock()
    quotas = ConnectionQuotas(config(**keys), "PLAINTEXT", reactor=clock, clock=clock.seconds)
    inter_broker, clients = FakePort(), FakePort()
    quotas.add_port("PLAINTEXT", inter_broker)
    quotas.add_port("CLIENTS", clients)
    return quotas, clock, inter_broker, clients


def test_an_address_at_its_maximum_is_refused_and_logged_until_one_of_its_connections_closes(caplog):
    quotas, *_ = quotas_of(**{"max.connections.per.ip": "2",
                              "max.connections.per.ip.overrides": "10.0.0.9:4,localhost:1"})
    caplog.set_level(logging.INFO, logger="kafka.network.Acceptor")
    first, second, third = (Conn(quotas, "10.0.0.1") for _ in range(3))
    assert (first.state, second.state, third.state) == ("served", "served", "closed")
    assert caplog.messages == ["Rejected connection from /10.0.0.1, address already has the configured maximum "
                               "of 2 connections."]
    assert Conn(quotas, "10.0.0.2").state == "served"              # another address has its own count
    first.hang_up()
    assert Conn(quotas, "10.0.0.1").state == "served"
    overridden = [Conn(quotas, "10.0.0.9", "PLAINTEXT") for _ in range(5)]   # counted over every listener
    assert [c.state for c in overridden] == ["served"] * 4 + ["closed"]
    by_name = [Conn(quotas, "127.0.0.1") for _ in range(2)]
    assert [c.state for c in by_name] == ["served", "closed"]
    assert quotas.total == 3 + 4 + 1


def test_at_max_connections_the_listeners_wait_but_the_inter_broker_one_never():
    quotas, _, inter_broker, clients = quotas_of(**{"max.connections": "3"})
    first, second = Conn(quotas, "10.0.0.1"), Conn(quotas, "10.0.0.2")
    assert clients.reading
    Conn(quotas, "10.0.0.3")
    assert not clients.reading and inter_broker.reading
    assert Conn(quotas, "10.0.0.4", "PLAINTEXT").state == "served"    # still counts toward the total
    # Twisted's port accepts a burst in one read: what comes after the cap waits, unread.
    late = Conn(quotas, "10.0.0.5")
    assert late.state == "held"
    first.hang_up()
    assert late.state == "held" and not clients.reading               # 4 still open
    second.hang_up()
    assert late.state == "served" and not clients.reading             # its slot, and the cap again
    quotas.remove_port("CLIENTS")               # a listener removed (or the broker stopping) is left alone
    waiting = Conn(quotas, "10.0.0.6")
    assert waiting.state == "held"
    quotas.closed(late)
    assert not clients.reading


def test_a_listener_cap_holds_that_listener_only_and_a_dynamic_raise_lets_its_waiters_in():
    cfg_quotas, _, inter_broker, clients = quotas_of(**{"listener.name.clients.max.connections": "1"})
    Conn(cfg_quotas, "10.0.0.1")
    waiting = Conn(cfg_quotas, "10.0.0.2")
    assert waiting.state == "held" and not clients.reading
    assert Conn(cfg_quotas, "10.0.0.3", "PLAINTEXT").state == "served" and inter_broker.reading
    cfg_quotas.config.apply_dynamic({"listener.name.clients.max.connections": "2"}, {})
    cfg_quotas.reconfigured()
    assert waiting.state == "served" and not clients.reading


def test_a_lowered_max_connections_closes_the_least_recently_active_unprotected_ones():
    quotas, clock, _, clients = quotas_of()
    conns = []
    for i in range(4):
        conns.append(Conn(quotas, f"10.0.0.{i}"))
        clock.advance(1)
    inter_broker = Conn(quotas, "10.0.0.9", "PLAINTEXT")
    inter_broker.last_active = 0            # the oldest, but protected
    conns[0].last_active = clock.seconds()  # it just sent a request
    quotas.config.apply_dynamic({"max.connections": "3"}, {})
    quotas.reconfigured()
    assert [c.state for c in conns] == ["served", "closed", "closed", "served"]
    assert inter_broker.state == "served" and quotas.total == 3 and not clients.reading


def test_the_broker_creation_rate_delays_the_connection_over_it_and_its_listener():
    """Eleven windows of a second, counted as at least ten seconds: 2/s lets 20 in at once;
    the 21st takes the rate to 2.1, (2.1 - 2) / 2 x 10 s = 500 ms of delay, the 22nd to
    2.2 and 1 s, the longest a throttle lasts (one window)."""
    quotas, clock, inter_broker, clients = quotas_of(**{"max.connection.creation.rate": "2"})
    assert all(Conn(quotas, f"10.0.1.{i}").state == "served" for i in range(20))
    delayed = Conn(quotas, "10.0.0.21")
    assert delayed.state == "held" and not clients.reading
    after = Conn(quotas, "10.0.0.22")              # accepted in the same burst: waits its turn
    assert after.state == "held"
    assert Conn(quotas, "10.0.0.99", "PLAINTEXT").state == "served"   # the inter-broker listener is exempt
    clock.advance(0.499)
    assert delayed.state == "held"
    clock.advance(0.002)
    assert delayed.state == "served" and after.state == "held"        # now the 22nd's own delay
    clock.advance(1.0)
    assert after.state == "served" and clients.reading
    assert quotas.total == 23


def test_a_connection_that_goes_away_while_delayed_is_not_counted():
    quotas, clock, _, clients = quotas_of(**{"max.connection.creation.rate": "1"})
    for i in range(10):
        Conn(quotas, f"10.0.1.{i}")
    gone = Conn(quotas, "10.0.0.11")
    assert gone.state == "held"
    gone.hang_up()
    assert not clients.reading                     # the listener still waits the throttle out
    clock.advance(1.0)
    assert quotas.total == 10 and clients.reading


def test_an_ip_over_its_creation_rate_is_held_then_closed_and_not_counted(caplog):
    quotas, clock, _, clients = quotas_of()
    caplog.set_level(logging.DEBUG, logger="kafka.network.Acceptor")
    quotas.set_ip_connection_rate("10.0.0.7", 1)
    served = [Conn(quotas, "10.0.0.7") for _ in range(10)]
    assert all(c.state == "served" for c in served)
    throttled = Conn(quotas, "10.0.0.7")
    assert throttled.state == "held" and clients.reading       # the listener goes on accepting
    assert Conn(quotas, "10.0.0.8").state == "served"          # other addresses have no quota
    clock.advance(0.999)
    assert throttled.state == "held"
    clock.advance(0.002)
    assert throttled.state == "closed"
    assert "Delaying closing of connection from /10.0.0.7 for 1000 ms" in caplog.messages
    assert quotas.by_ip["10.0.0.7"] == 10
    assert Conn(quotas, "10.0.0.7").state == "held"     # 11 in the 10 s a rate counts at least
    clock.advance(10.0)                  # the throttled ones were taken back: 11 in 11 s is within 1/s
    assert Conn(quotas, "10.0.0.7").state == "served"


def test_the_default_ip_quota_applies_to_addresses_without_their_own():
    quotas, clock, _, _ = quotas_of()
    quotas.set_ip_connection_rate(IP_DEFAULT, 1)
    quotas.set_ip_connection_rate("10.0.0.8", 100)
    assert [Conn(quotas, "10.0.0.7").state for _ in range(11)][-1] == "held"
    assert [Conn(quotas, "10.0.0.8").state for _ in range(11)][-1] == "served"
    quotas.set_ip_connection_rate(IP_DEFAULT, None)
    assert Conn(quotas, "10.0.0.7").state == "served"
    clock.advance(12)
    quotas.expire()
    assert quotas._ip_rates == {}


def _tls_handshake(port: int, ca: str):
    """A client's TLS handshake (blocking, for a thread): the socket, or the error."""
    import socket
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    raw = None
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)    # a quick refusal can reset it here
        return context.wrap_socket(raw)
    except (OSError, ssl.SSLError) as exc:
        if raw is not None:
            raw.close()
        return exc


@pytest_twisted.ensureDeferred
async def test_on_a_tls_listener_a_refused_connection_ends_before_any_tls_is_spoken(tmp_path):
    """The quotas decide below Twisted's TLS layer: over the cap the client's handshake finds
    the connection closed, with no server hello; a slot freed lets the next one in."""
    from twisted.internet import reactor, task, threads

    pki = make_pki(tmp_path)
    keys = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
            "ssl.keystore.password": PASSWORD, "ssl.enabled.protocols": ("TLSv1.2", "TLSv1.3"),
            "ssl.cipher.suites": ()}
    security = ListenerSecurity("CLIENTS", "SSL", tls=ServerTLS(build_context(keys.get, server=True)))
    quotas = ConnectionQuotas(config(**{"max.connections.per.ip": "1"}), "PLAINTEXT", reactor)
    port = reactor.listenTCP(0, listening_factory(services(), 1 << 20, security, "CLIENTS", reactor, quotas),
                             interface="127.0.0.1")
    quotas.add_port("CLIENTS", port)
    number = port.getHost().port
    try:
        first = await threads.deferToThread(_tls_handshake, number, pki.path("ca.pem"))
        assert not isinstance(first, Exception), first
        refused = await threads.deferToThread(_tls_handshake, number, pki.path("ca.pem"))
        assert isinstance(refused, (ConnectionError, ssl.SSLError)), refused
        first.close()
        for _ in range(100):
            if not quotas.total:
                break
            await task.deferLater(reactor, 0.02, lambda: None)
        third = await threads.deferToThread(_tls_handshake, number, pki.path("ca.pem"))
        assert not isinstance(third, Exception), third
        third.close()
    finally:
        await port.stopListening()
        for conn in list(port.factory.connections):
            conn.transport.abortConnection()


def test_the_socket_server_metrics_count_connections_rates_and_throttles():
    quotas, clock, _, _ = quotas_of(**{"max.connection.creation.rate": "1"})
    quotas.set_ip_connection_rate("10.0.0.7", 100)
    for i in range(11):                        # the 11th is delayed (1 s, the longest)
        Conn(quotas, f"10.0.1.{i}")
    clock.advance(1.5)

    def value(attribute: str, listener: str | None = "CLIENTS") -> float:
        return next(r.value for r in quotas.readings() if r.name.name == attribute
                    and (listener is None or ("listener", listener) in r.name.tags))
    assert value("connection-count") == 11 and value("connection-count", "PLAINTEXT") == 0
    assert value("connection-accept-rate") == 11 / 10.5      # at least ten windows, plus the half elapsed
    assert value("connection-accept-throttle-time") == 1000
    assert value("broker-connection-accept-rate", None) == 11 / 10.5
    names = {r.name.name for r in quotas.readings()}
    assert "ip-connection-accept-throttle-time" in names
