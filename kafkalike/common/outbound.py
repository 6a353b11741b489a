"""Requests from a broker to another broker (controller channel, replica fetchers).

A correlation id maps to the pending Deferred; on connection loss every pending one
fails, so callers never wait on a dead socket. The connection negotiates no API
versions: the peers are brokers of this same code, so callers pick versions they know
we serve. It does speak the inter-broker listener's security: TLS through Twisted's
memory-BIO protocol with the context the broker built, then, for SASL, SaslHandshake v1
and SaslAuthenticate v1 (PLAIN or SCRAM) before `connect` hands the connection over.
The broker sets that once at start-up (`set_default_security`); every caller
(fetchers, AlterIsr, controlled shutdown, the controller's channel) then gets it.
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Any, Callable

from twisted.internet import defer, protocol, reactor as default_reactor
from twisted.internet.endpoints import TCP4ClientEndpoint, wrapClientTLS

from kafkalike.common.framing import SizePrefixedReceiver
from kafkalike.protocol.api import decode_response, encode_request
from kafkalike.protocol.schema import MessageData

log = logging.getLogger("kafka.network.Outbound")


class ConnectionLost(Exception):
    """The connection closed before the answer came."""


class AuthenticationError(Exception):
    """The peer refused our SASL login (its error message is the text)."""


@dataclass
class ClientSecurity:
    """How to reach the inter-broker listener: its security protocol, a maker of the TLS
    connection creator for a host (SSL, SASL_SSL), and the SASL login (SASL_*)."""

    protocol: str = "PLAINTEXT"
    tls: Callable[[str], Any] | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None


_default_security = ClientSecurity()


def set_default_security(security: ClientSecurity) -> None:
    global _default_security
    _default_security = security


class OutboundConnection(SizePrefixedReceiver):
    MAX_LENGTH = 1 << 30

    def __init__(self, client_id: str):
        self.client_id = client_id
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int, defer.Deferred | None]] = {}
        self.closed = defer.Deferred()

    def request(self, body: MessageData, version: int, expect_response: bool = True) -> defer.Deferred:
        corr = next(self._corr)
        api_key = body.API_KEY
        data = encode_request(api_key, version, corr, self.client_id, body)
        self.transport.write(len(data).to_bytes(4, "big") + data)
        if not expect_response:
            return defer.succeed(None)
        d = defer.Deferred()
        self._pending[corr] = (api_key, version, d)
        return d

    def stringReceived(self, frame: bytes) -> None:
        corr = int.from_bytes(frame[:4], "big", signed=True)
        entry = self._pending.pop(corr, None)
        if entry is None:
            log.warning("Response with unknown correlation id %d", corr)
            return
        api_key, version, d = entry
        try:
            _, response = decode_response(api_key, version, frame)
        except Exception as exc:  # a peer that answers garbage: fail that request
            d.errback(exc)
            self.transport.loseConnection()
            return
        d.callback(response)

    def connectionLost(self, reason=protocol.connectionDone) -> None:
        pending, self._pending = self._pending, {}
        for _api, _ver, d in pending.values():
            d.errback(ConnectionLost(str(reason.value)))
        if not self.closed.called:
            self.closed.callback(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()


def connect(host: str, port: int, client_id: str, reactor=default_reactor,
            timeout: float = 10, security: ClientSecurity | None = None) -> defer.Deferred:
    """Deferred[OutboundConnection], authenticated when the security asks for it."""
    security = security or _default_security
    endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=timeout)
    if security.tls is not None:
        endpoint = wrapClientTLS(security.tls(host), endpoint)
    d = endpoint.connect(_QuietFactory(client_id))
    if security.mechanism is not None:
        d.addCallback(lambda conn: defer.ensureDeferred(_sasl_login(conn, security)))
    return d


async def _sasl_login(conn: OutboundConnection, security: ClientSecurity) -> OutboundConnection:
    """KIP-152's exchange: SaslHandshake v1, then SaslAuthenticate until the login completes."""
    from kafkalike.common.scram import ScramClientExchange, ScramError
    from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
    from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest

    async def step(token: bytes) -> bytes:
        resp = await conn.request(SaslAuthenticateRequest(auth_bytes=token), 1)
        if resp.error_code:
            raise AuthenticationError(resp.error_message or f"SASL error {resp.error_code}")
        return resp.auth_bytes

    try:
        hs = await conn.request(SaslHandshakeRequest(mechanism=security.mechanism), 1)
        if hs.error_code:
            raise AuthenticationError(f"Unsupported SASL mechanism {security.mechanism} (the peer offers "
                                      f"{', '.join(hs.mechanisms)})")
        if security.mechanism == "PLAIN":
            await step(f"\x00{security.username}\x00{security.password}".encode("utf-8"))
        else:
            exchange = ScramClientExchange(security.mechanism, security.username, security.password)
            server_first = await step(exchange.first())
            exchange.verify(await step(exchange.final(server_first)))
    except (AuthenticationError, ScramError) as exc:
        log.error("Authentication to %s failed: %s", conn.transport.getPeer() if conn.transport else "?", exc)
        conn.close()
        raise
    except BaseException:
        conn.close()
        raise
    return conn


class _QuietFactory(protocol.Factory):
    noisy = False   # one connection per factory: no "Starting factory" log lines

    def __init__(self, client_id: str):
        self.client_id = client_id

    def buildProtocol(self, addr):
        return OutboundConnection(self.client_id)
