"""The broker's listener: Kafka framing over TCP and in-order dispatch per connection.

Kafka processes one request per connection at a time and answers in order (it mutes
the channel while a request is in flight); clients rely on that ordering. Here frames
that arrive while a request is outstanding wait in a queue, and the transport is
paused when that queue grows, so a fast producer cannot make the broker buffer
without bound.

One exception, for throughput with acks=all: once a produce has been appended and only
waits for the high watermark (its Deferred carries `appended`, set by the ReplicaManager),
the next request is handled at once if it is a produce too, up to MAX_PIPELINED of them.
Appends still happen one at a time in request order on the reactor, and responses are
written in request order, so what a client sees is what Kafka's muting gives it; any
other request waits until every earlier one is answered (docs/architecture.md).
Sockets are TCP_NODELAY, as Kafka's are: small responses are not held back by Nagle.

Produce requests are decoded, and Produce and Fetch answers encoded, by the dedicated
codecs of kafkalike.protocol.fast (through kafkalike.protocol.api), and every request
header by one struct call. On a plaintext listener the record sets of large Fetch
answers stay ranges of segment files and go out with sendfile
(kafkalike.broker.sendfile_writer), and other answers are sent to the socket at once
when nothing is buffered before them; under TLS they are read and written as bytes,
through the transport.

Security (docs/security.md): on an SSL listener the transport is Twisted's TLS protocol
and the principal comes from the client's certificate once the handshake completes (a
handshake that fails is logged as Kafka's Selector logs it, security/failures.py); on a
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

from OpenSSL import SSL
from twisted.internet import defer, protocol
from twisted.internet.interfaces import IHandshakeListener
from twisted.protocols.tls import TLSMemoryBIOFactory
from zope.interface import implementer

from kafkalike.broker import request_log
from kafkalike.common.framing import SizePrefixedReceiver
from kafkalike.broker.registry import HANDLERS, BrokerServices, RequestContext
from kafkalike.broker.security.authenticator import SaslServerAuthenticator, zookeeper_credentials
from kafkalike.broker.security.failures import SSL_HANDSHAKE_FAILED, failed_authentication, socket_server_prefix
from kafkalike.broker.connection_quotas import ConnectionQuotas
from kafkalike.broker.security.listener import ListenerSecurity
from kafkalike.broker.security.principal import NoMatchingRule
from kafkalike.common.keystores import principal_name
from kafkalike.broker.sendfile_writer import SendfileWriter, transport_supports_sendfile
from kafkalike.protocol.api import decode_request_body, encode_response, parse_request_header, size_prefixed
from kafkalike.protocol.errors import ErrorCode, ProtocolDecodeError

log = logging.getLogger("kafka.network.Processor")
# Kafka's request log (request_log.py): off unless this logger is at DEBUG.
REQUEST_LOGGER = request_log.REQUEST_LOGGER
DEBUG = logging.DEBUG
API_VERSIONS = 18
SASL_HANDSHAKE = 17
QUEUE_PAUSE = 16
# Produces of one connection appended while earlier ones wait for replication.
MAX_PIPELINED = 32
_PRODUCE_KEY = b"\x00\x00"
ANONYMOUS = "User:ANONYMOUS"
# Before a SASL login a frame may be at most this large (Kafka's default
# sasl.server.max.receive.size): an unauthenticated client cannot make the broker
# allocate socket.request.max.bytes per connection.
SASL_MAX_RECEIVE = 524288
# A Fetch answer's record set of at least this many bytes is sent with sendfile on a
# plaintext listener (kafkalike.broker.sendfile_writer); smaller ones are read, since a
# file range costs the answer an extra turn of the reactor.
SENDFILE_FROM = 65536
_FETCH = 1


class _InFlight:
    """One request handled and not yet answered, with its times (Kafka's request metrics)."""

    __slots__ = ("ctx", "version", "received", "started", "handled", "follower", "parked", "ready",
                 "response", "ready_at", "log")

    def __init__(self, received: float):
        self.received = received
        self.started = self.handled = self.ready_at = 0.0
        self.ctx: RequestContext | None = None
        self.version = 0
        self.follower = False
        self.parked = False       # appended; only waits for the high watermark
        self.ready = False
        self.response = None
        self.log = None           # the request log's entry, only while kafka.request.logger is at DEBUG


@implementer(IHandshakeListener)
class KafkaConnection(SizePrefixedReceiver):
    """One client connection."""

    frames_as_bytes = False     # a frame assembled across reads is handled as its bytearray, not copied

    def __init__(self, services: BrokerServices, connections: set[KafkaConnection], max_request_size: int,
                 security: ListenerSecurity | None = None, reactor=None):
        self.services = services
        self.security = security
        self.principal = ANONYMOUS
        self.authenticator: SaslServerAuthenticator | None = None
        self._tls_established = False       # the TLS handshake completed (TLS listeners)
        self._closing = False
        self._reactor = reactor
        self.connections = connections
        self._max_request_size = max_request_size
        self._queue: deque = deque()
        self._inflight: deque[_InFlight] = deque()   # handled, answered in this order
        self._dispatching = False
        self._paused = False
        self._muted = 0           # throttles in force (client quotas, KIP-219)
        self.peer = "?"
        self.host = "?"
        self.quotas: ConnectionQuotas | None = None     # the listener's connection quotas, which admit it
        self.listener_name = "PLAINTEXT"
        self._tcp = None            # the TCP transport (under TLS, the one below Twisted's TLS protocol)
        self.last_active = 0.0      # monotonic time of the last request read or answer written
        self.connection_id = ""
        self.client_information: tuple[str, str] | None = None   # from ApiVersions (KIP-511)
        self._files: SendfileWriter | None = None     # plaintext TCP only: answers with file ranges
        self._keep_files_from: int | None = None

    @property
    def MAX_LENGTH(self) -> int:  # noqa: N802 (the framing's name)
        auth = self.authenticator
        if auth is not None and not auth.complete:
            return min(self._max_request_size, SASL_MAX_RECEIVE)
        return self._max_request_size

    def connectionMade(self) -> None:
        transport = self.transport
        while transport is not None and not hasattr(transport, "setTcpNoDelay"):
            transport = getattr(transport, "transport", None)     # under TLS: the TCP transport below
        self._tcp = transport
        self.last_active = time.monotonic()
        if transport is not None:
            try:
                transport.setTcpNoDelay(True)
            except OSError:
                pass
        if (self.security is None or self.security.tls is None) and transport_supports_sendfile(self.transport):
            self._files = SendfileWriter(transport)
            self._keep_files_from = SENDFILE_FROM
        peer = self.transport.getPeer()
        self.peer = f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}"
        self.host = self.peer.rsplit(":", 1)[0]
        self.connection_id = request_log.connection_id(self.transport)
        self.connections.add(self)
        if self.security is not None and self.security.sasl:
            credentials = self.security.credentials or zookeeper_credentials(self.services.zk)
            self.authenticator = SaslServerAuthenticator(self.security, credentials, "/" + self.host,
                                                         socket_server_prefix(self.services.broker_id))
        if self.quotas is not None:
            self.quotas.accepted(self)      # served now, or held unread, or closed

    # -- what the connection quotas do with it (connection_quotas.Admittee) ---------------
    @property
    def ip(self) -> str:
        return self.host

    def hold(self) -> None:
        """Read nothing (not even a TLS handshake) until served."""
        if self._tcp is not None:
            self._tcp.pauseProducing()

    def serve(self) -> None:
        if self._tcp is not None and not self._closing:
            self._tcp.resumeProducing()

    def close(self) -> None:
        """Closed unread, below any TLS: the client sees the connection end."""
        self._closing = True
        if self._tcp is not None:
            self._tcp.loseConnection()

    def handshakeCompleted(self) -> None:
        """TLS is up: on an SSL listener a client certificate names the principal
        (Kafka's DefaultKafkaPrincipalBuilder: the subject's distinguished name, through
        ssl.principal.mapping.rules)."""
        self._tls_established = True
        if self.security is None or self.security.protocol != "SSL":
            return
        cert = self.transport.getPeerCertificate() if hasattr(self.transport, "getPeerCertificate") else None
        if cert is not None:
            dn = principal_name(cert.to_cryptography())
            try:
                self.principal = "User:" + self.security.principal_mapper.name(dn)
            except NoMatchingRule as exc:
                failed_authentication(socket_server_prefix(self.services.broker_id), "/" + self.host, str(exc))
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
        if self.quotas is not None:
            self.quotas.closed(self)
            self.quotas = None
        if (self.security is not None and self.security.tls is not None and not self._tls_established
                and reason is not None and reason.check(SSL.Error)):
            # The TLS handshake failed (Twisted's TLS layer hands its SSL.Error on; a client
            # that only went away mid-handshake arrives as ConnectionLost and is not logged,
            # as Kafka logs that at DEBUG): Kafka's Selector line, the library's words at DEBUG.
            log.debug("SSL handshake with %s failed: %s", self.peer, reason.getErrorMessage())
            failed_authentication(socket_server_prefix(self.services.broker_id), "/" + self.host,
                                  SSL_HANDSHAKE_FAILED)
        self.connections.discard(self)
        self._queue.clear()
        self._inflight.clear()
        if self._files is not None:
            self._files.stopProducing()      # the transport calls it too; closing twice is harmless

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
        now = self.last_active = time.monotonic()
        self._queue.append((frame, now))   # arrival time: RequestQueueTimeMs
        if len(self._queue) >= QUEUE_PAUSE and not self._paused:
            self._paused = True
            self.transport.pauseProducing()
        self._next()

    # -- dispatch ----------------------------------------------------------------------

    def _may_start(self, frame: bytes) -> bool:
        """The next frame is handled when nothing is outstanding, or when it is a produce
        and everything outstanding is appended already (waiting for replication, or
        answered and queued behind such a wait)."""
        if self._muted:
            return False
        inflight = self._inflight
        if not inflight:
            return True
        if len(inflight) >= MAX_PIPELINED or frame[:2] != _PRODUCE_KEY:
            return False
        auth = self.authenticator
        if auth is not None and not auth.complete:
            return False
        return all(slot.parked or slot.ready for slot in inflight)

    def _next(self) -> None:
        if self._dispatching:
            return          # a request answered synchronously from inside the loop below
        self._dispatching = True
        try:
            while self._queue and self.transport is not None and not self.transport.disconnecting \
                    and self._may_start(self._queue[0][0]):
                frame, received = self._queue.popleft()
                if self._paused and len(self._queue) < QUEUE_PAUSE // 2:
                    self._paused = False
                    self.transport.resumeProducing()
                slot = _InFlight(received)
                self._inflight.append(slot)
                self._dispatch(frame, slot)
        finally:
            self._dispatching = False

    def _complete(self, response, slot: _InFlight) -> None:
        """A request's answer is ready: write every answer at the head of the line."""
        slot.ready_at = time.monotonic()
        slot.response = response
        slot.ready = True
        inflight = self._inflight
        while inflight and inflight[0].ready:
            self._write(inflight.popleft())
        if not self._dispatching and self._queue:
            self._next()

    def _write(self, slot: _InFlight) -> None:
        ctx, response = slot.ctx, slot.response
        if ctx is None:
            return          # closed, or answered by its own path (raw SASL tokens)
        quotas = self.services.quotas
        throttle_ms = 0 if quotas is None else quotas.on_response(ctx, response, slot.handled - slot.started,
                                                                  slot.follower)
        if response is None or self.transport is None:
            self._record(slot, slot.ready_at, throttle_ms, slot.ready_at)
            self._mute(throttle_ms)
            return  # acks=0 produce: Kafka sends nothing back
        encoding = time.monotonic()
        files = self._files
        if files is None:
            self.transport.writeSequence(size_prefixed(
                encode_response(ctx.api_key, slot.version, ctx.correlation_id, response)))
        elif ctx.api_key == _FETCH:
            chunks = size_prefixed(encode_response(_FETCH, slot.version, ctx.correlation_id, response,
                                                   self._keep_files_from))
            if any(type(c) is not bytes for c in chunks):
                files.write(chunks)
            else:
                files.write_bytes(chunks)
        else:
            files.write_bytes(size_prefixed(encode_response(ctx.api_key, slot.version, ctx.correlation_id,
                                                            response)))
        sent = self.last_active = time.monotonic()
        self._record(slot, sent, throttle_ms, encoding)
        if quotas is not None:
            quotas.on_sent(ctx, response, sent - encoding, slot.follower)
        self._mute(throttle_ms)

    def _mute(self, throttle_ms: int) -> None:
        """KIP-219: the throttled answer is out, and nothing more of this connection is read
        or handled for the throttle time (Kafka mutes the channel)."""
        if throttle_ms <= 0 or self.transport is None:
            return
        self._muted += 1
        self.transport.pauseProducing()
        if self._reactor is None:
            from twisted.internet import reactor as default_reactor
            self._reactor = default_reactor
        self._reactor.callLater(throttle_ms / 1000.0, self._unmute)

    def _unmute(self) -> None:
        self._muted -= 1
        if self._muted or self.transport is None or self.transport.disconnecting:
            return
        if not self._paused:
            self.transport.resumeProducing()
        self._next()

    def _dispatch(self, frame: bytes, slot: _InFlight) -> None:
        """Handle one frame; `slot` is completed now or when the answer is ready."""
        slot.started = time.monotonic()
        auth = self.authenticator
        if auth is not None and auth.raw_tokens and not auth.complete:
            self._raw_token(auth, frame).addBoth(self._complete, slot)
            return
        try:
            api_key, version, correlation_id, client_id, body_at = parse_request_header(frame)
        except ProtocolDecodeError as exc:
            log.warning("Closing connection from %s: unreadable request header (%s)", self.peer, exc)
            self.transport.abortConnection()
            return self._complete(None, slot)
        reg = HANDLERS.get(api_key)
        if reg is None:
            log.warning("Closing connection from %s: unknown api key %d", self.peer, api_key)
            self.transport.abortConnection()
            return self._complete(None, slot)
        if auth is not None and not self._sasl_admits(auth, api_key, reg.spec.name,
                                                      reg.min_version <= version <= reg.max_version):
            return self._complete(None, slot)
        ctx = RequestContext(api_key, version, correlation_id, client_id, self.host, self.services, self)
        ctx.request_size = len(frame)
        if not reg.min_version <= version <= reg.max_version:
            if api_key == API_VERSIONS:
                if REQUEST_LOGGER.isEnabledFor(DEBUG):
                    slot.log = request_log.request_entry(self, ctx, None)
                return self._send_result(slot, ctx, reg.handle(ctx, None), 0)
            if not reg.spec.request.SCHEMA.valid_range[0] <= version <= reg.spec.request.SCHEMA.valid_range[1]:
                log.warning("Closing connection from %s: %s v%d is not a known version",
                            self.peer, reg.spec.name, version)
                self.transport.abortConnection()
                return self._complete(None, slot)
        try:
            request = decode_request_body(api_key, version, frame, body_at)
            slot.follower = getattr(request, "replica_id", -1) >= 0   # FetchFollower, not FetchConsumer
        except ProtocolDecodeError as exc:
            log.warning("Closing connection from %s: malformed %s v%d request (%s)",
                        self.peer, reg.spec.name, version, exc)
            self.transport.abortConnection()
            return self._complete(None, slot)
        if api_key == API_VERSIONS:
            self.client_information = request_log.client_information(request, version) or self.client_information
        if REQUEST_LOGGER.isEnabledFor(DEBUG):
            slot.log = request_log.request_entry(self, ctx, request)     # before a handler consumes it
        if not reg.min_version <= version <= reg.max_version:
            return self._send_result(slot, ctx, reg.error_response(request, version, ErrorCode.UNSUPPORTED_VERSION),
                                     version)
        try:
            result = reg.handle(ctx, request)
        except Exception:
            log.exception("Error handling %s v%d from %s", reg.spec.name, version, self.peer)
            result = reg.error_response(request, version, ErrorCode.UNKNOWN_SERVER_ERROR)
        if isinstance(result, defer.Deferred):
            # A handler that fails later is answered like one that raised at once.
            slot.parked = getattr(result, "appended", False)
            result.addErrback(self._handler_failed, ctx, reg, request, version)
        return self._send_result(slot, ctx, result, version)

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

    def _send_result(self, slot: _InFlight, ctx: RequestContext, result, version: int) -> None:
        slot.handled = time.monotonic()
        slot.ctx, slot.version = ctx, version
        if isinstance(result, defer.Deferred):
            result.addCallback(self._complete, slot)
            result.addErrback(self._failed, ctx)
            return
        self._complete(result, slot)

    def _record(self, slot: _InFlight, sent: float, throttle_ms: int, dequeued: float) -> None:
        """Kafka's request metrics, and its request log line, from the times kept with each request."""
        ctx = slot.ctx
        self.services.request_metrics.record(ctx.api_key, slot.version, ctx.api_key == 1 and slot.follower,
                                             slot.received, slot.started, slot.handled, slot.ready_at, sent,
                                             slot.response)
        if slot.log is not None:
            request_log.log_completed(self, slot.log, ctx, slot.response, slot.version,
                                      (slot.received, slot.started, slot.handled, slot.ready_at, dequeued, sent),
                                      throttle_ms)

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
                 security: ListenerSecurity | None = None, reactor=None,
                 quotas: ConnectionQuotas | None = None):
        self.services = services
        self.max_request_size = max_request_size
        self.security = security
        self.reactor = reactor
        self.connections: set[KafkaConnection] = set()
        self.quotas = quotas

    def buildProtocol(self, addr):
        conn = KafkaConnection(self.services, self.connections, self.max_request_size, self.security, self.reactor)
        conn.factory = self
        conn.quotas = self.quotas
        conn.listener_name = self.listener_name
        return conn


def listening_factory(services: BrokerServices, max_request_size: int, security: ListenerSecurity | None,
                      listener_name: str, reactor=None, quotas: ConnectionQuotas | None = None) -> protocol.Factory:
    """The factory a listener's port serves: Kafka's framing, inside TLS on SSL listeners.
    Either way it answers `listener_name` and `connections`, which the server reads, and
    each connection is admitted within `quotas` (connection_quotas.py) before it reads a
    byte, TLS handshake included."""
    factory = KafkaServerFactory(services, max_request_size, security, reactor, quotas)
    factory.listener_name = listener_name
    if security is None or security.tls is None:
        return factory
    tls = TLSMemoryBIOFactory(security.tls, False, factory)
    tls.noisy = False
    tls.listener_name = listener_name
    tls.connections = factory.connections
    return tls
