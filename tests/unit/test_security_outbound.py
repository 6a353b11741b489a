"""The broker's own TLS connections (common/outbound.py with broker/security/tls.py): the
peer's chain is checked against the truststore, and with
ssl.endpoint.identification.algorithm=https its certificate must name the address dialed.
The peer here is a TLS server on loopback made from the test's own certificates; the broker
certificate names 127.0.0.1 and localhost, not 127.0.0.2."""
from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import protocol, reactor
from twisted.protocols.tls import TLSMemoryBIOFactory

from kafkalike.broker.security.tls import ClientTLS, ServerTLS, build_context
from kafkalike.common import outbound
from kafkalike.protocol.api import encode_response, size_prefixed
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from tests.security_certs import PASSWORD, make_pki


class _Answer(protocol.Protocol):
    """Answers every frame with an empty ApiVersions v0 response of the same correlation id."""

    def dataReceived(self, data: bytes) -> None:
        corr = int.from_bytes(data[8:12], "big", signed=True)
        chunks = encode_response(18, 0, corr, ApiVersionsResponse(error_code=0, api_keys=[]))
        self.transport.writeSequence(size_prefixed(chunks))


@pytest.fixture
def tls_server(tmp_path):
    pki = make_pki(tmp_path)
    server_keys = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
                   "ssl.keystore.password": PASSWORD, "ssl.enabled.protocols": ("TLSv1.2", "TLSv1.3"),
                   "ssl.cipher.suites": ()}
    factory = TLSMemoryBIOFactory(ServerTLS(build_context(server_keys.get, server=True)), False,
                                  protocol.Factory.forProtocol(_Answer))
    port = reactor.listenTCP(0, factory, interface="0.0.0.0")
    client_keys = {"ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem"),
                   "ssl.enabled.protocols": ("TLSv1.2", "TLSv1.3"), "ssl.cipher.suites": ()}
    yield port.getHost().port, build_context(client_keys.get, server=False)
    port.stopListening()


async def _ask(host: str, port: int, context, verify_host: bool):
    security = outbound.ClientSecurity("SSL", tls=lambda h: ClientTLS(context, h, verify_host))
    conn = await outbound.connect(host, port, "test", reactor, timeout=5, security=security)
    try:
        return await conn.request(ApiVersionsRequest(), 0)
    finally:
        conn.close()


@pytest_twisted.ensureDeferred
async def test_the_certificate_must_name_the_address_dialed(tls_server):
    port, context = tls_server
    assert (await _ask("127.0.0.1", port, context, verify_host=True)).error_code == 0
    with pytest.raises(outbound.ConnectionLost, match="certificate verify failed"):
        await _ask("127.0.0.2", port, context, verify_host=True)
    # ssl.endpoint.identification.algorithm empty: only the chain is checked.
    assert (await _ask("127.0.0.2", port, context, verify_host=False)).error_code == 0


# -- re-authentication (KIP-368) on the broker's own connections -----------------------------


class _Clock:
    """time.monotonic for the broker's listener and authenticator, and the outbound connection's clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def _sasl_pair(monkeypatch, reauth_ms: int, users=None):
    """A broker's SASL_PLAINTEXT listener connection and an outbound connection logged in to it as
    admin, over an in-memory pipe (twisted.test.iosim); the pump, the clock, both ends."""
    from twisted.internet import defer
    from twisted.internet.address import IPv4Address
    from twisted.internet.testing import MemoryReactorClock
    from twisted.test.iosim import FakeTransport, connect

    from kafkalike.broker import network
    from kafkalike.broker.registry import load_handlers
    from kafkalike.broker.security import authenticator
    from kafkalike.broker.security.listener import ListenerSecurity
    from tests.unit.broker_fakes import services
    load_handlers()
    clock = _Clock()
    monkeypatch.setattr(network, "time", clock)
    monkeypatch.setattr(authenticator, "time", clock)
    monkeypatch.setattr(outbound.OutboundConnection, "clock", staticmethod(clock.monotonic))
    security = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", mechanisms=("PLAIN",),
                                plain_users=users or {"admin": "admin-secret"}, reauth_ms=reauth_ms)
    factory = network.KafkaServerFactory(services(), 1 << 20, security, MemoryReactorClock())
    factory.listener_name = "SASL_PLAINTEXT"
    server = factory.buildProtocol(None)
    client = outbound.OutboundConnection("broker-1-fetcher-0")
    pump = connect(server, FakeTransport(server, isServer=True, peerAddress=IPv4Address("TCP", "127.0.0.1", 5)),
                   client, FakeTransport(client, isServer=False), greet=False)
    pump.flush()
    login = outbound.ClientSecurity("SASL_PLAINTEXT", mechanism="PLAIN", username="admin", password="admin-secret")
    done = []
    defer.ensureDeferred(outbound._sasl_login(client, login)).addBoth(done.append)
    pump.flush()
    assert done == [client], done
    return pump, clock, server, client


def _ask_versions(pump, client):
    got = []
    client.request(ApiVersionsRequest(), 0).addBoth(got.append)
    pump.flush()
    return got


def test_the_brokers_own_connections_log_in_again_before_their_session_ends(monkeypatch):
    pump, clock, server, client = _sasl_pair(monkeypatch, reauth_ms=10_000)
    assert 1000 + 8.5 <= client.reauthenticate_at <= 1000 + 9.5       # 85-95% of the lifetime
    assert _ask_versions(pump, client)[0].error_code == 0
    clock.now = 1000 + 9.6            # past the re-login point, before the session ends
    assert _ask_versions(pump, client)[0].error_code == 0           # answered after the re-login
    assert client.reauthentications == 1 and server.authenticator.complete
    assert server.authenticator.session_expires == 1000 + 9.6 + 10
    clock.now = 1000 + 15             # the first session would have ended: the connection lives on
    got = _ask_versions(pump, client)
    assert got[0].error_code == 0 and not server.transport.disconnecting
    clock.now = 1000 + 40             # long idle: the next request re-logs in first, then goes out
    assert _ask_versions(pump, client)[0].error_code == 0 and client.reauthentications == 2


def test_requests_made_during_the_re_login_wait_for_it(monkeypatch):
    pump, clock, server, client = _sasl_pair(monkeypatch, reauth_ms=10_000)
    clock.now = 1000 + 9.6
    first, second = [], []
    client.request(ApiVersionsRequest(), 0).addBoth(first.append)   # starts the re-login
    client.request(ApiVersionsRequest(), 0).addBoth(second.append)  # held behind it
    assert client._held is not None and len(client._held) == 2
    pump.flush()
    assert first[0].error_code == 0 and second[0].error_code == 0 and client._held is None


def test_without_a_session_lifetime_nothing_is_scheduled(monkeypatch):
    pump, clock, server, client = _sasl_pair(monkeypatch, reauth_ms=0)
    assert client.reauthenticate_at is None
    clock.now = 1000 + 3600
    assert _ask_versions(pump, client)[0].error_code == 0 and client.reauthentications == 0
