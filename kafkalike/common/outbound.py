"""Requests from a broker to another broker (controller channel, replica fetchers).

A correlation id maps to the pending Deferred; on connection loss every pending one
fails, so callers never wait on a dead socket. The connection negotiates no API
versions: the peers are brokers of this same code, so callers pick versions they know
we serve. It does speak the inter-broker listener's security: TLS through Twisted's
memory-BIO protocol with the context the broker built, then, for SASL, SaslHandshake v1
and SaslAuthenticate v1 (PLAIN or SCRAM) before `connect` hands the connection over.
The broker sets that once at start-up (`set_default_security`); every caller
(fetchers, AlterIsr, controlled shutdown, the controller's channel) then gets it.

Re-authentication (KIP-368), as Kafka's clients do it: when the last SaslAuthenticate
answer gives a session lifetime (the peer's connections.max.reauth.ms), the connection
logs in again on the same socket once a random 85-95% of that lifetime has passed, at
the first request after that point: SaslHandshake and SaslAuthenticate go out (behind
the requests in flight, which the peer answers first) and requests made meanwhile wait
for the login to finish, so the peer never sees anything else mid-login. A refused
re-authentication closes the connection (callers see ConnectionLost and connect anew).
"""
from __future__ import annotations

import itertools
import logging
import random
import time
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


# Kafka's SaslClientAuthenticator: re-authenticate after 85% of the session lifetime plus a
# random 0-10% (network latency and clock drift; no storm of simultaneous re-logins).
REAUTH_WINDOW = (0.85, 0.95)


class OutboundConnection(SizePrefixedReceiver):
    MAX_LENGTH = 1 << 30
    clock = staticmethod(time.monotonic)       # seconds; tests put a fake here

    def __init__(self, client_id: str):
        self.client_id = client_id
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int, defer.Deferred | None]] = {}
        self.closed = defer.Deferred()
        self.security: ClientSecurity | None = None    # the login, once one was made
        self.reauthenticate_at: float | None = None    # clock() time of the next re-login, if any
        self.reauthentications = 0
        self._held: list[tuple[MessageData, int, bool, defer.Deferred]] | None = None   # while re-logging in

    def request(self, body: MessageData, version: int, expect_response: bool = True) -> defer.Deferred:
        if self._held is None and self.reauthenticate_at is not None and self.clock() >= self.reauthenticate_at:
            self._begin_reauthentication()
        if self._held is not None:
            d = defer.Deferred()
            self._held.append((body, version, expect_response, d))
            return d
        return self._send(body, version, expect_response)

    def logged_in(self, security: ClientSecurity, session_lifetime_ms: int) -> None:
        """A login completed; with a session lifetime, the next re-login is due within it."""
        self.security = security
        if session_lifetime_ms > 0:
            self.reauthenticate_at = self.clock() + session_lifetime_ms / 1000 * random.uniform(*REAUTH_WINDOW)
        else:
            self.reauthenticate_at = None

    def _begin_reauthentication(self) -> None:
        self._held = []
        self.reauthenticate_at = None
        d = defer.ensureDeferred(_sasl_exchange(self, self.security, reauthentication=True))

        def done(_):
            self.reauthentications += 1
            held, self._held = self._held or [], None
            for body, version, expect_response, waiting in held:
                self._send(body, version, expect_response).chainDeferred(waiting)

        def failed(failure):
            held, self._held = self._held or [], None
            for _body, _version, _expect, waiting in held:
                waiting.errback(ConnectionLost(f"re-authentication failed: {failure.getErrorMessage()}"))
        d.addCallbacks(done, failed)

    def _send(self, body: MessageData, version: int, expect_response: bool = True) -> defer.Deferred:
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
        held, self._held = self._held or [], None
        for _body, _version, _expect, d in held:
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
    await _sasl_exchange(conn, security)
    return conn


async def _sasl_exchange(conn: OutboundConnection, security: ClientSecurity, reauthentication: bool = False) -> None:
    """KIP-152's exchange: SaslHandshake v1, then SaslAuthenticate v1 until the login
    completes; its last answer's session lifetime schedules the next one (KIP-368)."""
    from kafkalike.common.scram import ScramClientExchange, ScramError
    from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
    from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest
    lifetime = [0]

    async def step(token: bytes) -> bytes:
        resp = await conn._send(SaslAuthenticateRequest(auth_bytes=token), 1)
        if resp.error_code:
            raise AuthenticationError(resp.error_message or f"SASL error {resp.error_code}")
        lifetime[0] = resp.session_lifetime_ms
        return resp.auth_bytes

    try:
        hs = await conn._send(SaslHandshakeRequest(mechanism=security.mechanism), 1)
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
        what = "Re-authentication" if reauthentication else "Authentication"
        log.error("%s to %s failed: %s", what, conn.transport.getPeer() if conn.transport else "?", exc)
        conn.close()
        raise
    except BaseException:
        conn.close()
        raise
    conn.logged_in(security, lifetime[0])


class _QuietFactory(protocol.Factory):
    noisy = False   # one connection per factory: no "Starting factory" log lines

    def __init__(self, client_id: str):
        self.client_id = client_id

    def buildProtocol(self, addr):
        return OutboundConnection(self.client_id)
