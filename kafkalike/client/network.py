"""A selectors-based network client: one non-blocking connection per broker, many requests in flight.

The producer's sender thread and the consumer's network client (consumer_network.py)
drive it; it is not thread safe, except wakeup(), so each has one thread at a time in it.
Each connection negotiates API versions first, the way librdkafka and our blocking
BrokerConnection do (ApiVersions v3, falling back on UNSUPPORTED_VERSION), and is
"ready" only after that and while fewer than max.in.flight.requests.per.connection
requests await answers. Every request is remembered by correlation id with its
callback; brokers answer in order, so an answer whose id is not the oldest one
outstanding means the stream is out of step and the connection is dropped. Dropping a
connection (broken, out of step, or a request older than request.timeout.ms) fails
every outstanding request on it with NetworkError or KafkaTimeoutError, asks for a
metadata refresh, and backs off before reconnecting (reconnect.backoff.ms doubling up
to reconnect.backoff.max.ms, with jitter, as Java does).

Requests with acks=0 expect no answer: their callback runs once their bytes are written.

MetadataUpdater is the one metadata refresh loop over a NetworkClient, shared by the
producer and the consumer (Java's DefaultMetadataUpdater inside its NetworkClient).
"""
from __future__ import annotations

import errno
import itertools
import logging
import random
import selectors
import socket
import ssl
import struct
import time
from collections import deque
from typing import Callable

from kafkalike.client.connection import SOFTWARE_NAME, SOFTWARE_VERSION
from kafkalike.client.errors import KafkaTimeoutError, NetworkError, UnsupportedFeatureError
from kafkalike.client.metadata import Metadata, Node
from kafkalike.client.security import ClientSecurity, SaslAuthenticationError
from kafkalike.protocol.api import APIS, API_VERSIONS, decode_response
from kafkalike.protocol.errors import ErrorCode, ProtocolDecodeError
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkalike.protocol.messages.headers import RequestHeader
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest
from kafkalike.protocol.schema import MessageData
from kafkalike.protocol.types import Writer

log = logging.getLogger("kafkalike.client.network")

_SIZE = struct.Struct(">i")
_CORRELATION_AND_ERROR = struct.Struct(">ih")
MAX_RESPONSE_BYTES = 512 * 1024 * 1024
_RECV_CHUNK = 256 * 1024
# Frames from this size on are received straight into a buffer of their own (see _read).
_LARGE_FRAME = 64 * 1024

ResponseCallback = Callable[["MessageData | None", "Exception | None"], None]

CONNECTING, NEGOTIATING, READY = "connecting", "negotiating", "ready"
# With security.protocol set: the TLS handshake before ApiVersions, the SASL login after it.
HANDSHAKING, AUTHENTICATING = "tls-handshaking", "authenticating"
# Seconds before a refresh that could not be sent yet is looked at again, when no
# connection event or backoff will say sooner (a node still negotiating, a v0 broker).
METADATA_RECHECK = 0.5


class InFlight:
    __slots__ = ("correlation_id", "api_key", "version", "callback", "deadline", "expect_response")

    def __init__(self, correlation_id: int, api_key: int, version: int, callback: ResponseCallback | None,
                 deadline: float, expect_response: bool) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.version = version
        self.callback = callback
        self.deadline = deadline
        self.expect_response = expect_response


class _Connection:
    def __init__(self, node: Node, sock: socket.socket, now: float, setup_timeout: float) -> None:
        self.node = node
        self.sock = sock
        self.state = CONNECTING
        self.connect_deadline = now + setup_timeout
        self.out: deque = deque()          # buffers still to write
        self.sent_marks: deque = deque()   # (InFlight, bytes queued through its end) for acks=0
        self.queued = 0                    # bytes ever queued on this connection
        self.written = 0                   # bytes ever written
        self.in_buf = bytearray()
        # A large frame being received in place: its buffer, a view of it, bytes in so far.
        self.frame: bytearray | None = None
        self.frame_view: memoryview | None = None
        self.frame_got = 0
        self.in_flight: deque[InFlight] = deque()
        self.versions: dict[int, tuple[int, int]] = {}
        self.api_versions_version = APIS[API_VERSIONS].versions[1]
        self.events = 0
        # KIP-368: when the next SASL re-login is due (time.monotonic()), and whether one runs.
        self.reauthenticate_at: float | None = None
        self.reauthenticating = False


class NetworkClient:
    def __init__(self, metadata: Metadata, *, client_id: str | None, max_in_flight: int = 5,
                 request_timeout_ms: int = 30000, reconnect_backoff_ms: int = 50,
                 reconnect_backoff_max_ms: int = 1000, connection_setup_timeout_ms: int = 10000,
                 send_buffer_bytes: int = 131072, receive_buffer_bytes: int = 32768,
                 log_prefix: str = "", security: ClientSecurity | None = None) -> None:
        self.metadata = metadata
        # (sent, received) Sensors of the client's metrics (kafkalike/client/metrics.py), or None.
        self.byte_sensors = None
        self.security = security if security is not None and security.protocol != "PLAINTEXT" else None
        self.client_id = client_id
        self.max_in_flight = max_in_flight
        self.request_timeout = request_timeout_ms / 1000
        self.reconnect_backoff = reconnect_backoff_ms / 1000
        self.reconnect_backoff_max = reconnect_backoff_max_ms / 1000
        self.setup_timeout = connection_setup_timeout_ms / 1000
        self.send_buffer = send_buffer_bytes
        self.receive_buffer = receive_buffer_bytes
        self.log_prefix = log_prefix
        self._selector = selectors.DefaultSelector()
        self._conns: dict[int, _Connection] = {}
        self._backoff_until: dict[int, float] = {}
        self._failures: dict[int, int] = {}
        self._correlation = 0
        self._completed: list[tuple[ResponseCallback, MessageData | None, Exception | None]] = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._closed = False
        self._closing = False
        self._wakeup_pending = False
        self._aliases: dict[int, int] = {}

    # -- state ---------------------------------------------------------------------------

    def is_ready(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.state == READY and len(conn.in_flight) < self.max_in_flight

    def is_connected(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.state == READY

    def ready(self, node_id: int, now: float) -> bool:
        """True if a request can go to the node now; otherwise start connecting if allowed.
        A connection whose SASL session is due for re-authentication (KIP-368) logs in again
        first: not ready until that login is done (requests in flight are still answered)."""
        conn = self._conns.get(node_id)
        if (conn is not None and conn.state == READY and conn.reauthenticate_at is not None
                and now >= conn.reauthenticate_at):
            self._start_sasl(conn, now, reauthentication=True)
            return False
        if self.is_ready(node_id):
            return True
        if node_id not in self._conns and self.connection_delay(node_id, now) == 0:
            self._connect(node_id, now)
        return False

    def connection_delay(self, node_id: int, now: float) -> float:
        """Seconds before the node may be (re)connected; inf while connected or connecting
        (only network events can change anything then)."""
        if node_id in self._conns:
            return float("inf")
        return max(0.0, self._backoff_until.get(node_id, 0.0) - now)

    def in_flight_count(self, node_id: int | None = None) -> int:
        if node_id is not None:
            conn = self._conns.get(node_id)
            return len(conn.in_flight) if conn and (conn.state == READY or conn.reauthenticating) else 0
        return sum(len(c.in_flight) for c in self._conns.values() if c.state == READY or c.reauthenticating)

    def version_for(self, node_id: int, api_key: int) -> int:
        """The highest version both sides support; UnsupportedFeatureError if none."""
        conn = self._conns[node_id]
        spec = APIS[api_key]
        theirs = conn.versions.get(api_key)
        if theirs is None:
            raise UnsupportedFeatureError(f"The broker {conn.node} does not support {spec.name}")
        low, high = max(spec.versions[0], theirs[0]), min(spec.versions[1], theirs[1])
        if low > high:
            raise UnsupportedFeatureError(f"No common version of {spec.name}: ours {spec.versions[0]}-"
                                          f"{spec.versions[1]}, broker {theirs[0]}-{theirs[1]}")
        return high

    def least_loaded_node(self, now: float) -> int | None:
        """A ready node with the fewest requests in flight, else one being connected, else one to try."""
        nodes = list(self.metadata.cluster.nodes)
        random.shuffle(nodes)
        best, best_load = None, None
        for node_id in nodes:
            conn = self._conns.get(node_id)
            if conn is not None and conn.state == READY:
                load = len(conn.in_flight)
                if load == 0:
                    return node_id
                if best_load is None or load < best_load:
                    best, best_load = node_id, load
        if best is not None:
            return best
        for node_id in nodes:
            if node_id in self._conns:
                return node_id
        for node_id in nodes:
            if self.connection_delay(node_id, now) == 0:
                return node_id
        return None

    # -- connecting ------------------------------------------------------------------------

    def add_alias(self, alias_id: int, node_id: int) -> None:
        """Let `alias_id` name a second connection to broker `node_id`.

        The consumer talks to its group coordinator this way (Java's id 2^31-1-node), so a
        commit or heartbeat never queues behind a fetch parked for fetch.max.wait.ms."""
        self._aliases[alias_id] = node_id

    def knows(self, node_id: int) -> bool:
        """Whether the id names a broker in the metadata, directly or through an alias."""
        return self._node(node_id) is not None

    def _node(self, node_id: int) -> Node | None:
        real = self._aliases.get(node_id)
        if real is None:
            return self.metadata.cluster.nodes.get(node_id)
        node = self.metadata.cluster.nodes.get(real)
        return None if node is None else Node(node_id, node.host, node.port, node.rack)

    def _connect(self, node_id: int, now: float) -> None:
        node = self._node(node_id)
        if node is None:
            return
        try:
            infos = socket.getaddrinfo(node.host, node.port, type=socket.SOCK_STREAM)
            family, _, _, _, address = infos[0]
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as error:
            self._connect_failed(node, now, error)
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.send_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        if self.receive_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer)
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            sock.close()
            self._connect_failed(node, now, OSError(code, errno.errorcode.get(code, str(code))))
            return
        conn = _Connection(node, sock, now, self.setup_timeout)
        self._conns[node_id] = conn
        self._register(conn, selectors.EVENT_WRITE)

    def _connect_failed(self, node: Node, now: float, error: BaseException) -> None:
        log.warning("%sConnection to node %d (%s) could not be established. Broker may not be available.",
                    self.log_prefix, node.id, _address_text(node))
        log.debug("connect to %s failed: %s", node, error)
        self._set_backoff(node.id, now)
        self.metadata.request_update()

    def _set_backoff(self, node_id: int, now: float) -> None:
        failures = self._failures.get(node_id, 0)
        backoff = min(self.reconnect_backoff * (2 ** failures), self.reconnect_backoff_max)
        backoff *= random.uniform(0.8, 1.2)  # Java's 20% jitter
        self._failures[node_id] = failures + 1
        self._backoff_until[node_id] = now + backoff

    def _register(self, conn: _Connection, events: int) -> None:
        if conn.events == events:
            return
        if conn.events:
            self._selector.modify(conn.sock, events, conn)
        else:
            self._selector.register(conn.sock, events, conn)
        conn.events = events

    def _connected(self, conn: _Connection, now: float) -> None:
        if self.security is not None and self.security.tls:
            self._selector.unregister(conn.sock)
            conn.events = 0
            conn.sock = self.security.wrap(conn.sock, conn.node.host, blocking=False)
            conn.state = HANDSHAKING
            self._tls_handshake(conn, now)
            return
        conn.state = NEGOTIATING
        self._send_api_versions(conn, now)

    def _tls_handshake(self, conn: _Connection, now: float) -> None:
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._register(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._register(conn, selectors.EVENT_WRITE)
            return
        conn.state = NEGOTIATING
        self._send_api_versions(conn, now)

    def _start_sasl(self, conn: _Connection, now: float, reauthentication: bool = False) -> None:
        """KIP-152: SaslHandshake v1, then SaslAuthenticate until the login completes. The last
        answer's session lifetime (KIP-368) schedules the next login on this connection at a
        random 85-95% of it, as Kafka's SaslClientAuthenticator does."""
        conn.state = AUTHENTICATING
        conn.reauthenticating = reauthentication
        conn.reauthenticate_at = None
        security = self.security
        login = security.login()

        def failed(error: Exception) -> None:
            what = "re-authentication" if conn.reauthenticating else "authentication"
            log.error("%sConnection to node %d (%s) failed %s due to: %s", self.log_prefix,
                      conn.node.id, _address_text(conn.node), what, error)
            if self._conns.get(conn.node.id) is conn:
                self._drop(conn, time.monotonic(), error, connect_failed=True)

        def authenticated(response, error) -> None:
            if error is not None or self._conns.get(conn.node.id) is not conn:
                return
            if response.error_code:
                failed(SaslAuthenticationError(response.error_message or "SASL authentication failed"))
                return
            try:
                token = login.next(bytes(response.auth_bytes))
            except SaslAuthenticationError as exc:
                failed(exc)
                return
            if token is None:
                conn.state = READY
                conn.reauthenticating = False
                lifetime = response.session_lifetime_ms
                if lifetime > 0:
                    conn.reauthenticate_at = time.monotonic() + lifetime / 1000 * random.uniform(0.85, 0.95)
                self._failures.pop(conn.node.id, None)
            else:
                self._enqueue(conn, SaslAuthenticateRequest(auth_bytes=token), 1, authenticated,
                              time.monotonic(), True)

        def handshaken(response, error) -> None:
            if error is not None or self._conns.get(conn.node.id) is not conn:
                return
            if response.error_code:
                failed(SaslAuthenticationError(f"Client SASL mechanism '{security.mechanism}' not enabled in the "
                                               f"server, enabled mechanisms are {list(response.mechanisms)}"))
                return
            self._enqueue(conn, SaslAuthenticateRequest(auth_bytes=login.first()), 1, authenticated,
                          time.monotonic(), True)

        self._enqueue(conn, SaslHandshakeRequest(mechanism=security.mechanism), 1, handshaken, now, True)

    def _send_api_versions(self, conn: _Connection, now: float) -> None:
        request = ApiVersionsRequest(client_software_name=SOFTWARE_NAME, client_software_version=SOFTWARE_VERSION)
        self._enqueue(conn, request, conn.api_versions_version, None, now, True)

    def _handle_api_versions(self, conn: _Connection, frame: bytes, version: int, now: float) -> None:
        if len(frame) < 6:
            raise ProtocolDecodeError("truncated ApiVersions response")
        error = _CORRELATION_AND_ERROR.unpack_from(frame, 0)[1]
        if error == ErrorCode.UNSUPPORTED_VERSION:
            # The broker answers a version it does not know as v0, listing what it serves.
            answer = ApiVersionsResponse.decode(frame, 0, pos=4)
            theirs = {k.api_key: k.max_version for k in answer.api_keys}
            fallback = min(version - 1, theirs.get(API_VERSIONS, 0))
            if fallback < 0:
                raise ProtocolDecodeError("the broker accepts no ApiVersions version we know")
            conn.api_versions_version = fallback
            self._send_api_versions(conn, now)
            return
        answer = ApiVersionsResponse.decode(frame, version, pos=4)
        if error == ErrorCode.INVALID_REQUEST and version >= 3:
            conn.api_versions_version = 0
            self._send_api_versions(conn, now)
            return
        if error != ErrorCode.NONE:
            raise ProtocolDecodeError(f"ApiVersions failed with error {error}")
        conn.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        if self.security is not None and self.security.sasl:
            self._start_sasl(conn, now)
            return
        conn.state = READY
        self._failures.pop(conn.node.id, None)

    # -- sending -----------------------------------------------------------------------------

    def send(self, node_id: int, request: MessageData, callback: ResponseCallback | None, now: float, *,
             version: int | None = None, expect_response: bool = True) -> int:
        """Queue a request to a ready node; returns its correlation id."""
        conn = self._conns.get(node_id)
        if conn is None or conn.state != READY:
            raise NetworkError(f"Attempt to send a request to node {node_id} which is not ready.")
        if version is None:
            version = self.version_for(node_id, request.API_KEY)
        return self._enqueue(conn, request, version, callback, now, expect_response)

    def _enqueue(self, conn: _Connection, request: MessageData, version: int, callback: ResponseCallback | None,
                 now: float, expect_response: bool) -> int:
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        correlation_id = self._correlation
        api_key = request.API_KEY
        spec = APIS[api_key]
        w = Writer()
        RequestHeader(request_api_key=api_key, request_api_version=version, correlation_id=correlation_id,
                      client_id=self.client_id).encode_into(w, spec.request_header_version(version))
        request.encode_into(w, version)
        chunks = w.chunks()
        size = len(w)
        conn.out.append(_SIZE.pack(size))
        conn.out.extend(chunks)
        conn.queued += 4 + size
        if self.byte_sensors is not None:
            self.byte_sensors[0].record(4 + size, now)
        entry = InFlight(correlation_id, api_key, version, callback, now + self.request_timeout, expect_response)
        if expect_response:
            conn.in_flight.append(entry)
        else:
            conn.sent_marks.append((entry, conn.queued))
        self._register(conn, selectors.EVENT_READ | selectors.EVENT_WRITE)
        return correlation_id

    def wakeup(self) -> None:
        """Interrupt a poll() in progress (any thread); cheap when a wakeup is already pending."""
        if self._wakeup_pending:
            return
        self._wakeup_pending = True
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, OSError):
            pass

    # -- the loop ------------------------------------------------------------------------------

    def poll(self, timeout: float) -> None:
        """Do all network work that is possible within `timeout` seconds, then run callbacks."""
        if self._closed:
            return
        events = self._selector.select(max(0.0, timeout))
        now = time.monotonic()
        for key, mask in events:
            conn = key.data
            if conn is None:
                self._wakeup_pending = False
                try:
                    while self._wake_r.recv(4096):
                        pass
                except (BlockingIOError, OSError):
                    pass
                continue
            if self._conns.get(conn.node.id) is not conn:
                continue
            try:
                if conn.state == CONNECTING:
                    if mask & selectors.EVENT_WRITE:
                        code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if code:
                            self._drop(conn, now, NetworkError(f"connect: {errno.errorcode.get(code, code)}"),
                                       connect_failed=True)
                            continue
                        self._connected(conn, now)
                    continue
                if conn.state == HANDSHAKING:
                    self._tls_handshake(conn, now)
                    continue
                if mask & selectors.EVENT_WRITE:
                    self._write(conn)
                if mask & selectors.EVENT_READ:
                    self._read(conn, now)
            except (OSError, ProtocolDecodeError) as error:
                self._drop(conn, now, NetworkError(f"Connection to node {conn.node.id} ({conn.node.host}:"
                                                   f"{conn.node.port}) failed: {error}"))
        self._check_timeouts(now)
        self._run_callbacks()

    def _write(self, conn: _Connection) -> None:
        out = conn.out
        while out:
            buffers = list(itertools.islice(out, 0, 128))
            try:
                if isinstance(conn.sock, ssl.SSLSocket):   # no sendmsg through TLS
                    sent = conn.sock.send(b"".join(buffers))
                else:
                    sent = conn.sock.sendmsg(buffers)
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                break
            conn.written += sent
            full = sent < sum(len(b) for b in buffers)
            while sent:
                head = out[0]
                if sent >= len(head):
                    sent -= len(head)
                    out.popleft()
                else:
                    out[0] = memoryview(head)[sent:]
                    sent = 0
            if full:
                break  # the socket's buffer is full: wait to be writable again
        marks = conn.sent_marks
        while marks and marks[0][1] <= conn.written:
            entry = marks.popleft()[0]
            if entry.callback is not None:
                self._completed.append((entry.callback, None, None))
        if not out:
            self._register(conn, selectors.EVENT_READ)

    def _read(self, conn: _Connection, now: float) -> None:
        """Receive what the socket has and handle every whole frame.

        Bytes arrive in chunks into the connection's buffer until a frame's size is known;
        a large frame (a fetch answer) then gets a buffer of its own that the rest of it is
        received straight into, so its bytes are copied once by the kernel and not again
        (appending chunks and cutting frames out of them copied every fetched byte twice)."""
        sock = conn.sock
        while True:
            if conn.frame is None:
                self._read_chunk(conn, now)
                if conn.frame is None or self._conns.get(conn.node.id) is not conn:
                    return
            if not self._fill_frame(conn):
                return
            frame = conn.frame
            conn.frame = conn.frame_view = None
            self._handle_frame(conn, frame, now)
            if self._conns.get(conn.node.id) is not conn:
                return
            # More bytes may wait in the kernel (the selector says so next time) or, with
            # TLS, decrypted inside the TLS object, which wakes no selector: take those now.
            if not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
                return

    def _read_chunk(self, conn: _Connection, now: float) -> None:
        try:
            chunk = conn.sock.recv(_RECV_CHUNK)
            if isinstance(conn.sock, ssl.SSLSocket):
                while conn.sock.pending():
                    chunk += conn.sock.recv(_RECV_CHUNK)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        if not chunk:
            raise OSError("connection closed by the broker")
        buf = conn.in_buf
        buf += chunk
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            size = _SIZE.unpack_from(buf, pos)[0]
            if not 0 <= size <= MAX_RESPONSE_BYTES:
                raise ProtocolDecodeError(f"invalid response size {size}")
            if end - pos - 4 < size:
                if size >= _LARGE_FRAME:
                    frame = bytearray(size)
                    have = end - pos - 4
                    frame[:have] = memoryview(buf)[pos + 4:end]
                    conn.frame = frame
                    conn.frame_view = memoryview(frame)
                    conn.frame_got = have
                    pos = end
                break
            frame = bytes(buf[pos + 4:pos + 4 + size])
            pos += 4 + size
            self._handle_frame(conn, frame, now)
            if self._conns.get(conn.node.id) is not conn:
                return
        if pos:
            del buf[:pos]

    def _fill_frame(self, conn: _Connection) -> bool:
        """Receive into the large frame under way until it is whole (True) or the socket is empty."""
        view = conn.frame_view
        size = len(view)
        got = conn.frame_got
        sock = conn.sock
        while got < size:
            try:
                n = sock.recv_into(view[got:])
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            if not n:
                raise OSError("connection closed by the broker")
            got += n
        conn.frame_got = got
        return got == size

    def _handle_frame(self, conn: _Connection, frame: bytes, now: float) -> None:
        if not conn.in_flight:
            raise ProtocolDecodeError("a response arrived with no request outstanding")
        entry = conn.in_flight[0]
        if len(frame) < 4 or _SIZE.unpack_from(frame, 0)[0] != entry.correlation_id:
            raise ProtocolDecodeError(f"correlation id mismatch: expected {entry.correlation_id}")
        conn.in_flight.popleft()
        if self.byte_sensors is not None:
            self.byte_sensors[1].record(4 + len(frame), now)
        if entry.api_key == API_VERSIONS and conn.state == NEGOTIATING:
            self._handle_api_versions(conn, frame, entry.version, now)
            return
        _, response = decode_response(entry.api_key, entry.version, frame)
        if entry.callback is not None:
            self._completed.append((entry.callback, response, None))

    def _check_timeouts(self, now: float) -> None:
        for conn in list(self._conns.values()):
            if conn.state in (CONNECTING, HANDSHAKING) and now > conn.connect_deadline:
                self._drop(conn, now, KafkaTimeoutError(f"Connection to node {conn.node.id} timed out"),
                           connect_failed=True)
            elif conn.in_flight and now > conn.in_flight[0].deadline:
                log.debug("%sDisconnecting from node %d due to request timeout.", self.log_prefix, conn.node.id)
                self._drop(conn, now, KafkaTimeoutError(
                    f"Disconnected from node {conn.node.id} due to timeout"))

    def _drop(self, conn: _Connection, now: float, error: Exception, connect_failed: bool = False) -> None:
        """Close a connection and fail everything outstanding on it."""
        node = conn.node
        if self._conns.get(node.id) is conn:
            del self._conns[node.id]
        if conn.events:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        try:
            conn.sock.close()
        except OSError:
            pass
        if self._closing:
            pass
        elif connect_failed or conn.state != READY:
            self._connect_failed(node, now, error)
        else:
            if node.id < 0:
                log.warning("%sBootstrap broker %s disconnected", self.log_prefix, node)
            self._set_backoff(node.id, now)
            self.metadata.request_update()
        pending = list(conn.in_flight) + [entry for entry, _ in conn.sent_marks]
        conn.in_flight.clear()
        conn.sent_marks.clear()
        for entry in pending:
            if entry.callback is not None:
                self._completed.append((entry.callback, None, error))

    def _run_callbacks(self) -> None:
        completed, self._completed = self._completed, []
        for callback, response, error in completed:
            callback(response, error)

    def disconnect(self, node_id: int) -> None:
        conn = self._conns.get(node_id)
        if conn is not None:
            self._drop(conn, time.monotonic(), NetworkError(f"Disconnected from node {node_id}"))
            self._run_callbacks()

    def close(self) -> None:
        if self._closed:
            return
        self._closing = True
        for conn in list(self._conns.values()):
            self._drop(conn, time.monotonic(), NetworkError("The network client was closed"))
        self._run_callbacks()
        self._closed = True
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


class MetadataUpdater:
    """Keeps a Metadata fresh through a NetworkClient's least loaded node.

    The producer and the consumer used to carry a copy each; one updater keeps their
    refresh rules (when, to whom, what to ask, how errors re-arm it) from drifting apart.
    It runs on whichever thread drives the NetworkClient, so it needs no lock.
    """

    def __init__(self, client: NetworkClient, metadata: Metadata, *, allow_auto_create: bool = True,
                 log_prefix: str = "", error_log: logging.Logger = log, log_correlation_id: bool = True) -> None:
        """`error_log` and `log_correlation_id` pick the warning's logger and wording: the
        producer's is Java's NetworkClient line, the consumer has always logged a shorter
        one under its own logger, and users' log filters may rely on either."""
        self.client = client
        self.metadata = metadata
        self.allow_auto_create = allow_auto_create
        self.all_topics = False  # a pattern subscription needs every topic's metadata
        self.log_prefix = log_prefix
        self.error_log = error_log
        self.log_correlation_id = log_correlation_id
        self.in_flight = False

    def maybe_update(self, now: float) -> float:
        """Send a Metadata request if one is due and a node can take it.

        Returns the seconds the caller may block before calling again, so a due refresh
        is never held up by a long network poll."""
        client = self.client
        if self.in_flight:
            return client.request_timeout
        wait = self.metadata.time_to_next_update(now)
        if wait > 0:
            return wait
        node = client.least_loaded_node(now)
        if node is None:
            return client.reconnect_backoff
        if not client.ready(node, now):
            return client.reconnect_backoff if client.connection_delay(node, now) else METADATA_RECHECK
        topics = self.metadata.topics(now)
        version = client.version_for(node, MetadataRequest.API_KEY)
        if version < 1 and not topics:
            return METADATA_RECHECK  # v0 cannot ask for "no topics"
        request = MetadataRequest(
            topics=None if self.all_topics else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=self.allow_auto_create)
        self.in_flight = True
        self.metadata.attempted(now)
        correlation: list[int] = []
        correlation.append(client.send(
            node, request, lambda response, error: self._handle_response(response, error, correlation[0]),
            now, version=version))
        return client.request_timeout

    def _handle_response(self, response: MessageData | None, error: Exception | None, correlation_id: int) -> None:
        self.in_flight = False
        now = time.monotonic()
        if error is not None or response is None or not response.brokers:
            # A broker that has not yet heard from the controller (just restarted) knows no
            # brokers; installing its empty answer would leave no node to ask ever again.
            # Java's DefaultMetadataUpdater ignores such a response the same way.
            self.metadata.failed(now)
            return
        errors = self.metadata.update(response, now)
        if not errors:
            return
        listed = ", ".join(f"{t}={c.name}" for t, c in errors.items())
        if self.log_correlation_id:
            self.error_log.warning("%sError while fetching metadata with correlation id %d : {%s}",
                                   self.log_prefix, correlation_id, listed)
        else:
            self.error_log.warning("%sError while fetching metadata: {%s}", self.log_prefix, listed)
        if any(c in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for c in errors.values()):
            self.metadata.request_update()  # auto-creation under way: ask again after the backoff


def _address_text(node: Node) -> str:
    """Java's InetSocketAddress.toString: host/ip:port."""
    try:
        ip = socket.getaddrinfo(node.host, node.port, type=socket.SOCK_STREAM)[0][4][0]
    except OSError:
        return f"{node.host}:{node.port}"
    host = "" if node.host == ip else node.host
    return f"{host}/{ip}:{node.port}"


__all__ = ["InFlight", "MetadataUpdater", "NetworkClient"]
