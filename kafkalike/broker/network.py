"""The broker's listener: Kafka framing over TCP and in-order dispatch per connection.

Kafka processes one request per connection at a time and answers in order (it mutes
the channel while a request is in flight); clients rely on that ordering. Here frames
that arrive while a request is outstanding wait in a queue, and the transport is
paused when that queue grows, so a fast producer cannot make the broker buffer
without bound.

Security (docs/security.md): on an SSL listener the transport is Twisted's TLS protocol
and the principal comes from the client's certificate once the handshake completes; on a
SASL listener the connection carries a `SaslServerAuthenticator` that admits only
ApiVersions, SaslHandshake and SaslAuthenticate until the login completes (anything else
closes the connection, as Kafka's authenticator does), takes the raw tokens that follow a
v0 handshake, and closes after a failed login once connection.failed.authentication.delay.ms
has passed. The principal ("User:ANONYMOUS" until someone is authenticated) stays on the
connection, where RequestContext.principal reads it.
"""
from __future__ import annotations

import logging
import time
from collections import deque

from twisted.internet import defer, protocol
from twisted.internet.interfaces import IHandshakeListener
from zope.interface import implementer

from kafkalike.common.framing import SizePrefixedReceiver
from kafkalike.broker.registry import HANDLERS, BrokerServices, RequestContext
from kafkalike.broker.security.authenticator import SaslServerAuthenticator, zookeeper_credentials
from kafkalike.broker.security.listener import ListenerSecurity
from kafkalike.broker.security.principal import NoMatchingRule
from kafkalike.common.keystores import principal_name
from kafkalike.protocol.api import decode_request_header, encode_response, size_prefixed
from kafkalike.protocol.errors import ErrorCode, ProtocolDecodeError

log = logging.getLogger("kafka.network.Processor")
API_VERSIONS = 18
SASL_HANDSHAKE = 17
QUEUE_PAUSE = 16
ANONYMOUS = "User:ANONYMOUS"
# Before a SASL login a frame may be at most this large (Kafka's default
# sasl.server.max.receive.size): an unauthenticated client cannot make the broker
# allocate socket.request.max.bytes per connection.
SASL_MAX_RECEIVE = 524288


@implementer(IHandshakeListener)
class KafkaConnection(SizePrefixedReceiver):
    """One client connection."""

    def __init__(self, services: BrokerServices, connections: set[KafkaConnection], max_request_size: int,
                 security: ListenerSecurity | None = None, reactor=None):
        self.services = services
        self.security = security
        self.principal = ANONYMOUS
        self.authenticator: SaslServerAuthenticator | None = None
        self._closing = False
        self._reactor = reactor
        self.connections = connections
        self._max_request_size = max_request_size
        self._queue: deque = deque()
        self._busy = False
        self._paused = False
        self.peer = "?"
        self._received = self._started = self._handled = 0.0   # the current request's times
        self._follower = False

    @property
    def MAX_LENGTH(self) -> int:  # noqa: N802 (the framing's name)
        auth = self.authenticator
        if auth is not None and not auth.complete:
            return min(self._max_request_size, SASL_MAX_RECEIVE)
        return self._max_request_size

    def connectionMade(self) -> None:
        peer = self.transport.getPeer()
        self.peer = f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}"
        self.connections.add(self)
        if self.security is not None and self.security.sasl:
            credentials = self.security.credentials or zookeeper_credentials(self.services.zk)
            self.authenticator = SaslServerAuthenticator(self.security, credentials,
                                                         "/" + self.peer.rsplit(":", 1)[0])

    def handshakeCompleted(self) -> None:
        """TLS is up: on an SSL listener a client certificate names the principal
        (Kafka's DefaultKafkaPrincipalBuilder: the subject's distinguished name, through
        ssl.principal.mapping.rules)."""
        if self.security is None or self.security.protocol != "SSL":
            return
        cert = self.transport.getPeerCertificate() if hasattr(self.transport, "getPeerCertificate") else None
        if cert is not None:
            dn = principal_name(cert.to_cryptography())
            try:
                self.principal = "User:" + self.security.principal_mapper.name(dn)
            except NoMatchingRule as exc:
                log.info("Failed authentication with /%s (%s)", self.peer.rsplit(":", 1)[0], exc)
                self.transport.abortConnection()

    def close_after_failed_authentication(self) -> None:
        """Kafka delays the close of a connection whose login failed
        (connection.failed.authentication.delay.ms) and reads nothing more from it."""
        if self._closing or self.transport is None:
            return
        self._closing = True
        self._queue.clear()
        self.transport.pauseProducing()
        delay = self.security.failed_auth_delay_ms / 1000 if self.security is not None else 0
        if self._reactor is None:
            from twisted.internet import reactor as default_reactor
            self._reactor = default_reactor
        self._reactor.callLater(delay, self._close_now)

    def _close_now(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()

    def connectionLost(self, reason=protocol.connectionDone) -> None:
        self.connections.discard(self)
        self._queue.clear()

    def lengthLimitExceeded(self, length: int) -> None:
        limit = "socket.request.max.bytes"
        if self.authenticator is not None and not self.authenticator.complete:
            limit = "the limit before SASL authentication"
        log.warning("Closing connection from %s: request of %d bytes is larger than "
                    "%s (%d)", self.peer, length, limit, self.MAX_LENGTH)
        self.transport.abortConnection()

    def stringReceived(self, frame: bytes) -> None:
        if self._closing:
            return
        self._queue.append((frame, time.monotonic()))   # arrival time: RequestQueueTimeMs
        if len(self._queue) >= QUEUE_PAUSE and not self._paused:
            self._paused = True
            self.transport.pauseProducing()
        if not self._busy:
            self._next()

    # -- dispatch ----------------------------------------------------------------------

    def _next(self) -> None:
        while self._queue and not self._busy:
            frame, self._received = self._queue.popleft()
            if self._paused and len(self._queue) < QUEUE_PAUSE // 2:
                self._paused = False
                self.transport.resumeProducing()
            self._busy = True
            d = self._dispatch(frame)
            if d is None:
                self._busy = False
                continue
            d.addBoth(self._done)

    def _done(self, _result) -> None:
        self._busy = False
        if self.transport is not None and not self.transport.disconnecting:
            self._next()

    def _dispatch(self, frame: bytes):
        """Handle one frame; returns a Deferred when the answer is not ready yet."""
        self._started = time.monotonic()
        auth = self.authenticator
        if auth is not None and auth.raw_tokens and not auth.complete:
            return self._raw_token(auth, frame)
        try:
            header, reader = decode_request_header(frame)
        except ProtocolDecodeError as exc:
            log.warning("Closing connection from %s: unreadable request header (%s)", self.peer, exc)
            self.transport.abortConnection()
            return None
        api_key, version = header.request_api_key, header.request_api_version
        reg = HANDLERS.get(api_key)
        if reg is None:
            log.warning("Closing connection from %s: unknown api key %d", self.peer, api_key)
            self.transport.abortConnection()
            return None
        if auth is not None and not self._sasl_admits(auth, api_key, reg.spec.name,
                                                      reg.min_version <= version <= reg.max_version):
            return None
        ctx = RequestContext(api_key, version, header.correlation_id, header.client_id,
                             self.peer.rsplit(":", 1)[0], self.services, self)
        if not reg.min_version <= version <= reg.max_version:
            if api_key == API_VERSIONS:
                return self._send_result(ctx, reg.handle(ctx, None), 0)
            if not reg.spec.request.SCHEMA.valid_range[0] <= version <= reg.spec.request.SCHEMA.valid_range[1]:
                log.warning("Closing connection from %s: %s v%d is not a known version",
                            self.peer, reg.spec.name, version)
                self.transport.abortConnection()
                return None
        try:
            request = reg.spec.request.read_from(reader, version)
            self._follower = getattr(request, "replica_id", -1) >= 0   # FetchFollower, not FetchConsumer
        except ProtocolDecodeError as exc:
            log.warning("Closing connection from %s: malformed %s v%d request (%s)",
                        self.peer, reg.spec.name, version, exc)
            self.transport.abortConnection()
            return None
        if not reg.min_version <= version <= reg.max_version:
            return self._send_result(ctx, reg.error_response(request, version, ErrorCode.UNSUPPORTED_VERSION), version)
        try:
            result = reg.handle(ctx, request)
        except Exception:
            log.exception("Error handling %s v%d from %s", reg.spec.name, version, self.peer)
            result = reg.error_response(request, version, ErrorCode.UNKNOWN_SERVER_ERROR)
        if isinstance(result, defer.Deferred):
            # A handler that fails later is answered like one that raised at once.
            result.addErrback(self._handler_failed, ctx, reg, request, version)
        return self._send_result(ctx, result, version)

    def _sasl_admits(self, auth: SaslServerAuthenticator, api_key: int, name: str, supported: bool) -> bool:
        if auth.complete:
            if auth.session_expired(time.monotonic()) and api_key != SASL_HANDSHAKE:
                log.info("Closing connection from %s: its SASL session expired (connections.max.reauth.ms) "
                         "and it sent %s instead of re-authenticating", self.peer, name)
                self.transport.abortConnection()
                return False
            return True
        if auth.allows(api_key):
            if api_key == API_VERSIONS and supported:
                # An unsupported version is answered with UNSUPPORTED_VERSION and the client
                # may ask again at a lower one, as Kafka's authenticator allows.
                auth.api_versions_answered()
            return True
        what = "SASL handshake" if auth.state.name.startswith("HANDSHAKE") else "SASL authentication"
        log.info("Closing connection from %s: Unexpected Kafka request of type %s during %s.",
                 self.peer, name, what)
        self.transport.abortConnection()
        return False

    def _raw_token(self, auth: SaslServerAuthenticator, frame: bytes):
        """A SASL token framed by its size alone, after a v0 SaslHandshake."""
        def reply(token):
            if self.transport is not None and token is not None:
                self.transport.write(len(token).to_bytes(4, "big") + token)

        def failed(failure):
            self.close_after_failed_authentication()
        return auth.evaluate(bytes(frame)).addCallbacks(reply, failed)

    def _handler_failed(self, failure, ctx: RequestContext, reg, request, version: int):
        log.error("Error handling %s v%d from %s: %s", reg.spec.name, version, self.peer,
                  failure.getTraceback())
        return reg.error_response(request, version, ErrorCode.UNKNOWN_SERVER_ERROR)

    def _send_result(self, ctx: RequestContext, result, version: int):
        self._handled = time.monotonic()
        if isinstance(result, defer.Deferred):
            result.addCallback(self._send, ctx, version)
            result.addErrback(self._failed, ctx)
            return result
        self._send(result, ctx, version)
        return None

    def _send(self, response, ctx: RequestContext, version: int) -> None:
        ready = time.monotonic()
        if response is None or self.transport is None:
            self._record(ctx, version, ready, ready)
            return  # acks=0 produce: Kafka sends nothing back
        chunks = encode_response(ctx.api_key, version, ctx.correlation_id, response)
        self.transport.writeSequence(size_prefixed(chunks))
        self._record(ctx, version, ready, time.monotonic())

    def _record(self, ctx: RequestContext, version: int, ready: float, sent: float) -> None:
        """Kafka's request metrics; requests on a connection are handled one at a time,
        so the times kept on the connection are this request's."""
        self.services.request_metrics.record(ctx.api_key, version, ctx.api_key == 1 and self._follower,
                                             self._received, self._started, self._handled, ready, sent)

    def _failed(self, failure, ctx: RequestContext) -> None:
        log.error("Error answering api key %d from %s: %s", ctx.api_key, self.peer,
                  failure.getTraceback())
        self.transport.abortConnection()


class KafkaServerFactory(protocol.ServerFactory):
    """One listener. It keeps its open connections, so the server can close them at
    shutdown."""

    noisy = False
    listener_name = "PLAINTEXT"

    def __init__(self, services: BrokerServices, max_request_size: int,
                 security: ListenerSecurity | None = None, reactor=None):
        self.services = services
        self.max_request_size = max_request_size
        self.security = security
        self.reactor = reactor
        self.connections: set[KafkaConnection] = set()

    def buildProtocol(self, addr):
        conn = KafkaConnection(self.services, self.connections, self.max_request_size, self.security, self.reactor)
        conn.factory = self
        return conn


def listening_factory(services: BrokerServices, max_request_size: int, security: ListenerSecurity | None,
                      listener_name: str, reactor=None) -> protocol.Factory:
    """The factory a listener's port serves: Kafka's framing, inside TLS on SSL listeners.
    Either way it answers `listener_name` and `connections`, which the server reads."""
    factory = KafkaServerFactory(services, max_request_size, security, reactor)
    factory.listener_name = listener_name
    if security is None or security.tls is None:
        return factory
    from twisted.protocols.tls import TLSMemoryBIOFactory
    tls = TLSMemoryBIOFactory(security.tls, False, factory)
    tls.noisy = False
    tls.listener_name = listener_name
    tls.connections = factory.connections
    return tls
