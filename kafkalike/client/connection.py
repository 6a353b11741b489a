"""A blocking connection to one broker: framing, correlation ids and version negotiation.

Command-line tools and tests want one request, one answer, and a clear failure within
a deadline when the broker is dead, slow or gone; an event loop would only be in the
way. Every socket operation therefore runs against a deadline, and a connection that
timed out or broke mid-frame is closed at once, because the byte stream can no longer
be trusted to line up with the next response.

Versions are negotiated the way librdkafka does it: ApiVersions v3 first; when the
broker answers UNSUPPORTED_VERSION (always encoded as v0), retry with the highest
version both sides know, or v0 if the broker listed nothing.

One caller at a time: a BrokerConnection is not thread safe.
"""
from __future__ import annotations

import random
import socket
import struct
import time
from typing import Iterable

from kafkalike.protocol.api import APIS, API_VERSIONS, decode_response, encode_request
from kafkalike.protocol.errors import ErrorCode, ProtocolDecodeError
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkalike.protocol.schema import MessageData

_SIZE = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

SOFTWARE_NAME = "kafkalike"
SOFTWARE_VERSION = "0.1.0"
# A response bigger than this is a desynchronised stream, not a real answer.
MAX_RESPONSE_BYTES = 512 * 1024 * 1024


class KafkaConnectionError(Exception):
    """The broker could not be reached, or the connection broke or went out of step."""


class KafkaTimeoutError(KafkaConnectionError):
    """No connection or no complete answer within the deadline."""


class UnsupportedApiVersion(Exception):
    """The broker and this client share no version of an API (or the broker lacks it)."""


def parse_bootstrap_servers(servers: str) -> list[tuple[str, int]]:
    """"h1:9092, h2:9093,[::1]:9094" -> [(host, port), ...]; ValueError names a bad entry."""
    out: list[tuple[str, int]] = []
    for raw in servers.split(","):
        entry = raw.strip()
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"Invalid url in bootstrap.servers: {entry}")
        out.append((host, int(port)))
    if not out:
        raise ValueError("No resolvable bootstrap urls given in bootstrap.servers")
    return out


class BrokerConnection:
    """One TCP connection to a broker, speaking request/response one at a time."""

    def __init__(self, host: str, port: int, client_id: str | None = "kafkalike",
                 timeout: float = 30.0, security=None) -> None:
        self.security = security   # a client.security.ClientSecurity, or None for PLAINTEXT
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self.broker_versions: dict[int, tuple[int, int]] | None = None
        self._sock: socket.socket | None = None
        self._next_correlation_id = 0
        self._pending = -1  # correlation id of the request awaiting its answer
        # KIP-368: when the SASL login is due again (time.monotonic()), from the session lifetime
        # of the last SaslAuthenticate answer; the next request logs in again first.
        self.reauthenticate_at: float | None = None
        self._logging_in = False

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed"
        return f"<BrokerConnection {self.host}:{self.port} {state}>"

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def connect(self, negotiate: bool = True) -> BrokerConnection:
        """Open the socket and, unless told not to, learn the broker's API versions."""
        if self._sock is not None:
            return self
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except socket.timeout:
            raise KafkaTimeoutError(
                f"Connection to {self.address} timed out after {self.timeout:g} s") from None
        except OSError as error:
            raise KafkaConnectionError(
                f"Connection to {self.address} could not be established: {error}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        security = self.security
        if security is not None and security.tls:
            try:
                sock = security.wrap(sock, self.host)
            except (OSError, ValueError) as error:
                sock.close()
                raise KafkaConnectionError(f"SSL handshake with {self.address} failed: {error}") from None
        self._sock = sock
        if negotiate or (security is not None and security.sasl):
            try:
                self.api_versions()
                if security is not None and security.sasl:
                    self._authenticate(security)
            except BaseException:
                self.close()
                raise
        return self

    def _authenticate(self, security) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the login completes (KIP-152). The last
        answer's session lifetime (KIP-368) makes the login due again after a random 85-95% of it."""
        from kafkalike.client.security import SaslAuthenticationError
        from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
        from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest
        self._logging_in = True
        self.reauthenticate_at = None
        try:
            handshake = self.send(SaslHandshakeRequest(mechanism=security.mechanism), version=1)
            if handshake.error_code:
                raise SaslAuthenticationError(f"Client SASL mechanism '{security.mechanism}' not enabled in the "
                                              f"server, enabled mechanisms are {list(handshake.mechanisms)}")
            login = security.login()
            token: bytes | None = login.first()
            lifetime = 0
            while token is not None:
                answer = self.send(SaslAuthenticateRequest(auth_bytes=token), version=1)
                if answer.error_code:
                    raise SaslAuthenticationError(answer.error_message or "SASL authentication failed")
                lifetime = answer.session_lifetime_ms
                token = login.next(bytes(answer.auth_bytes))
        finally:
            self._logging_in = False
        if lifetime > 0:
            self.reauthenticate_at = time.monotonic() + lifetime / 1000 * random.uniform(0.85, 0.95)

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    # -- version negotiation -------------------------------------------------------

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """Ask the broker which versions it serves: api key -> (min, max)."""
        ours = APIS[API_VERSIONS].versions[1]
        version = ours
        request = ApiVersionsRequest(client_software_name=SOFTWARE_NAME,
                                     client_software_version=SOFTWARE_VERSION)
        while True:
            frame = self._exchange(API_VERSIONS, version, request)
            self._check_correlation(frame)
            if len(frame) < 6:
                self.close()
                raise KafkaConnectionError(f"Truncated ApiVersions response from {self.address}")
            error = _INT16.unpack_from(frame, 4)[0]
            if error == ErrorCode.UNSUPPORTED_VERSION:
                # The broker answers a version it does not know as v0, listing what it serves.
                answer = self._decode(ApiVersionsResponse, frame, 0)
                theirs = {k.api_key: k.max_version for k in answer.api_keys}
                fallback = min(version - 1, theirs[API_VERSIONS]) if API_VERSIONS in theirs else 0
                if fallback < 0 or fallback >= version:
                    raise UnsupportedApiVersion(f"{self.address} accepts no ApiVersions version we know")
                version = fallback
                continue
            answer = self._decode(ApiVersionsResponse, frame, version)
            if error == ErrorCode.INVALID_REQUEST and version >= 3:
                version = 0  # it disliked our software name or version: ask without them
                continue
            if error != ErrorCode.NONE:
                raise KafkaConnectionError(
                    f"ApiVersions v{version} to {self.address} failed: {_error_name(error)}")
            self.broker_versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            return dict(self.broker_versions)

    def pick_version(self, api_key: int) -> int:
        """The highest version of an API that both we and the broker support."""
        spec = APIS.get(api_key)
        if spec is None:
            raise UnsupportedApiVersion(f"Unknown api key {api_key}")
        if self.broker_versions is None:
            raise UnsupportedApiVersion(
                f"Versions of {spec.name} not negotiated with {self.address}; connect() first")
        theirs = self.broker_versions.get(api_key)
        if theirs is None:
            raise UnsupportedApiVersion(f"The broker at {self.address} does not support {spec.name}")
        low, high = max(spec.versions[0], theirs[0]), min(spec.versions[1], theirs[1])
        if low > high:
            raise UnsupportedApiVersion(
                f"No common version of {spec.name}: ours {spec.versions[0]}-{spec.versions[1]}, "
                f"broker {theirs[0]}-{theirs[1]}")
        return high

    def supports(self, api_key: int) -> bool:
        try:
            self.pick_version(api_key)
        except UnsupportedApiVersion:
            return False
        return True

    # -- requests ------------------------------------------------------------------

    def send(self, request: MessageData, version: int | None = None) -> MessageData:
        """Send one request and return the broker's decoded response.

        With version None the highest version both sides support is used.
        """
        api_key = request.API_KEY
        if api_key is None or api_key not in APIS:
            raise TypeError(f"{type(request).__name__} is not an API request")
        if version is None:
            version = self.pick_version(api_key)
        frame = self._exchange(api_key, version, request)
        try:
            correlation_id, response = decode_response(api_key, version, frame)
        except ProtocolDecodeError as error:
            self.close()
            raise KafkaConnectionError(
                f"Undecodable {APIS[api_key].name} v{version} response from {self.address}: {error}") from None
        self._expect(correlation_id)
        return response

    def _exchange(self, api_key: int, version: int, request: MessageData) -> bytes:
        """Write one request frame and read one response frame (without its size)."""
        if self._sock is None:
            raise KafkaConnectionError(f"Not connected to {self.address}")
        if (self.reauthenticate_at is not None and not self._logging_in
                and time.monotonic() >= self.reauthenticate_at):
            try:
                self._authenticate(self.security)        # re-authentication (KIP-368), then the request
            except BaseException:
                self.close()
                raise
        self._next_correlation_id = (self._next_correlation_id + 1) & 0x7FFFFFFF
        self._pending = self._next_correlation_id
        body = encode_request(api_key, version, self._pending, self.client_id, request)
        deadline = time.monotonic() + self.timeout
        what = f"{APIS[api_key].name} v{version}"
        self._send_all(_SIZE.pack(len(body)) + body, deadline, what)
        size = _SIZE.unpack(self._recv_exact(4, deadline, what))[0]
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            self.close()
            raise KafkaConnectionError(f"Invalid response size {size} from {self.address}")
        return self._recv_exact(size, deadline, what)

    def _check_correlation(self, frame: bytes) -> None:
        if len(frame) < 4:
            self.close()
            raise KafkaConnectionError(f"Truncated response from {self.address}")
        self._expect(_INT32.unpack_from(frame, 0)[0])

    def _expect(self, correlation_id: int) -> None:
        if correlation_id != self._pending:
            self.close()
            raise KafkaConnectionError(
                f"Correlation id mismatch from {self.address}: expected {self._pending}, got {correlation_id}")

    def _decode(self, cls: type[MessageData], frame: bytes, version: int) -> MessageData:
        try:
            return cls.decode(frame, version, pos=4)
        except ProtocolDecodeError as error:
            self.close()
            raise KafkaConnectionError(f"Undecodable response from {self.address}: {error}") from None

    def _send_all(self, data: bytes, deadline: float, what: str) -> None:
        view = memoryview(data)
        while view:
            sock = self._socket_until(deadline, what)
            try:
                sent = sock.send(view)
            except socket.timeout:
                self._timed_out(what)
            except OSError as error:
                self._broken(what, error)
            view = view[sent:]

    def _recv_exact(self, n: int, deadline: float, what: str) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            sock = self._socket_until(deadline, what)
            try:
                count = sock.recv_into(view[got:], n - got)
            except socket.timeout:
                self._timed_out(what)
            except OSError as error:
                self._broken(what, error)
            if count == 0:
                self._broken(what, "connection closed by the broker")
            got += count
        return bytes(buf)

    def _socket_until(self, deadline: float, what: str) -> socket.socket:
        sock = self._sock
        if sock is None:
            raise KafkaConnectionError(f"Not connected to {self.address}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            self._timed_out(what)
        sock.settimeout(remaining)
        return sock

    def _timed_out(self, what: str):
        self.close()
        raise KafkaTimeoutError(f"No response to {what} from {self.address} within {self.timeout:g} s")

    def _broken(self, what: str, error) -> None:
        self.close()
        raise KafkaConnectionError(f"Connection to {self.address} lost during {what}: {error}")


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def bootstrap(servers: str | Iterable[tuple[str, int]], client_id: str | None = "kafkalike",
              timeout: float = 30.0) -> BrokerConnection:
    """Connect to the first reachable broker of a "host:port,host:port" list."""
    addresses = parse_bootstrap_servers(servers) if isinstance(servers, str) else list(servers)
    failures = []
    for host, port in addresses:
        connection = BrokerConnection(host, port, client_id=client_id, timeout=timeout)
        try:
            return connection.connect()
        except KafkaConnectionError as error:
            failures.append(str(error))
    raise KafkaConnectionError("No bootstrap server could be reached: " + "; ".join(failures))


__all__ = ["BrokerConnection", "KafkaConnectionError", "KafkaTimeoutError", "UnsupportedApiVersion",
           "bootstrap", "parse_bootstrap_servers"]
