"""BrokerConnection against a tiny broker in a thread that speaks the real protocol.

The fake decodes requests with kafkalike.protocol and answers with the same classes,
so these tests exercise the framing, correlation ids and version negotiation a real
broker sees, plus the failures a real network produces: refusal, silence, hang-ups.
"""
from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Callable

import pytest

from kafkalike.client.connection import (
    BrokerConnection,
    KafkaConnectionError,
    KafkaTimeoutError,
    UnsupportedApiVersion,
    bootstrap,
    parse_bootstrap_servers,
)
from kafkalike.protocol.api import APIS, decode_request_header, encode_response
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.api_versions import ApiVersionsResponse
from kafkalike.protocol.messages.metadata import MetadataRequest, MetadataResponse

API_VERSIONS = 18
METADATA = 3


@dataclass
class Seen:
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    body: object


@dataclass
class FakeBroker:
    """A one-connection-at-a-time broker on a loopback port.

    versions: what ApiVersions advertises (api key -> (min, max)); ApiVersions requests
    above versions[18][1] get Kafka's v0 UNSUPPORTED_VERSION answer. handlers map api
    keys to functions (request body, version) -> response body, or None to stay silent.
    """

    versions: dict[int, tuple[int, int]] = field(default_factory=lambda: {k: s.versions for k, s in APIS.items()})
    handlers: dict[int, Callable] = field(default_factory=dict)
    advertise_on_unsupported: bool = True
    api_versions_error: Callable[[int], ErrorCode] | None = None
    correlation_offset: int = 0
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stop.set()
        conn = getattr(self, "_conn", None)
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # and the one blocked in recv()
            except OSError:
                pass
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        except OSError:
            pass
        self._listener.close()
        self._thread.join(5)

    def requests(self, api_key: int) -> list[Seen]:
        return [s for s in self.seen if s.api_key == api_key]

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with conn:
                self._conn = conn
                self._talk(conn)

    def _talk(self, conn: socket.socket) -> None:
        while True:
            size = _read(conn, 4)
            if size is None:
                return
            frame = _read(conn, struct.unpack(">i", size)[0])
            if frame is None:
                return
            header, reader = decode_request_header(frame)
            key, version = header.request_api_key, header.request_api_version
            top = self.versions.get(key, (0, -1))[1]
            body = APIS[key].request.read_from(reader, version) if version <= APIS[key].versions[1] else None
            self.seen.append(Seen(key, version, header.correlation_id, header.client_id, body))
            reply_version = version
            if key == API_VERSIONS:
                response, reply_version = self._api_versions(version, top)
            else:
                handler = self.handlers.get(key)
                response = handler(body, version) if handler else None
            if response is None:
                continue  # silence: the client must time out
            chunks = encode_response(key, reply_version, header.correlation_id + self.correlation_offset, response)
            data = b"".join(bytes(c) for c in chunks)
            conn.sendall(struct.pack(">i", len(data)) + data)

    def _api_versions(self, version: int, top: int):
        listing = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                   for k, (lo, hi) in sorted(self.versions.items())]
        if version > top:
            return ApiVersionsResponse(error_code=int(ErrorCode.UNSUPPORTED_VERSION),
                                       api_keys=listing if self.advertise_on_unsupported else []), 0
        error = self.api_versions_error(version) if self.api_versions_error else ErrorCode.NONE
        return ApiVersionsResponse(error_code=int(error), api_keys=listing), version


def _read(conn: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        try:
            chunk = conn.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return buf


def dead_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


@pytest.fixture
def fake():
    brokers = []

    def make(**kw) -> FakeBroker:
        broker = FakeBroker(**kw)
        brokers.append(broker)
        return broker
    yield make
    for broker in brokers:
        broker.close()


def metadata_answer(body, version):
    return MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=7, host="h", port=9)],
                            controller_id=7, cluster_id="c1")


# -- negotiation ------------------------------------------------------------------------


def test_connect_negotiates_with_api_versions_v3_and_records_the_brokers_ranges(fake):
    broker = fake(versions={18: (0, 3), 3: (0, 11), 0: (3, 9)})
    with BrokerConnection("127.0.0.1", broker.port, client_id="tool-1").connect() as conn:
        assert conn.broker_versions == {18: (0, 3), 3: (0, 11), 0: (3, 9)}
    (seen,) = broker.requests(API_VERSIONS)
    assert seen.version == 3
    assert seen.client_id == "tool-1"
    assert seen.body.client_software_name == "kafkalike"


def test_unsupported_api_versions_version_retries_with_the_brokers_highest(fake):
    broker = fake(versions={18: (0, 2), 3: (0, 9)})
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        assert conn.broker_versions == {18: (0, 2), 3: (0, 9)}
    assert [s.version for s in broker.requests(API_VERSIONS)] == [3, 2]


def test_unsupported_api_versions_without_a_listing_falls_back_to_v0(fake):
    broker = fake(versions={18: (0, 1), 3: (0, 5)}, advertise_on_unsupported=False)
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        assert conn.broker_versions[3] == (0, 5)
    assert [s.version for s in broker.requests(API_VERSIONS)] == [3, 0]


def test_invalid_request_at_v3_retries_at_v0_as_librdkafka_does(fake):
    broker = fake(api_versions_error=lambda v: ErrorCode.INVALID_REQUEST if v >= 3 else ErrorCode.NONE)
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        assert conn.broker_versions is not None
    assert [s.version for s in broker.requests(API_VERSIONS)] == [3, 0]


def test_other_api_versions_errors_fail_the_connection(fake):
    broker = fake(api_versions_error=lambda v: ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    conn = BrokerConnection("127.0.0.1", broker.port)
    with pytest.raises(KafkaConnectionError, match="CLUSTER_AUTHORIZATION_FAILED"):
        conn.connect()
    assert not conn.connected


# -- requests ----------------------------------------------------------------------------


def test_send_uses_the_highest_version_both_sides_support(fake):
    broker = fake(versions={18: (0, 3), 3: (0, 7)}, handlers={METADATA: metadata_answer})
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        response = conn.send(MetadataRequest(topics=[]))
    assert response.controller_id == 7
    assert response.brokers[0].host == "h"
    assert broker.requests(METADATA)[0].version == 7


def test_our_range_caps_the_version_when_the_broker_is_newer(fake):
    broker = fake(versions={18: (0, 3), 3: (0, 40)}, handlers={METADATA: metadata_answer})
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        conn.send(MetadataRequest(topics=[]))
    assert broker.requests(METADATA)[0].version == APIS[METADATA].versions[1]


def test_an_explicit_version_is_used_as_given(fake):
    broker = fake(handlers={METADATA: metadata_answer})
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        assert conn.send(MetadataRequest(topics=[]), version=1).controller_id == 7
    assert broker.requests(METADATA)[0].version == 1


def test_correlation_ids_increase_per_request(fake):
    broker = fake(handlers={METADATA: metadata_answer})
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        for _ in range(3):
            conn.send(MetadataRequest(topics=[]))
    ids = [s.correlation_id for s in broker.seen]
    assert ids == sorted(set(ids)) and len(ids) == 4


def test_no_common_version_is_reported_before_anything_is_sent(fake):
    broker = fake(versions={18: (0, 3), 3: (50, 60)})
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        with pytest.raises(UnsupportedApiVersion, match="No common version of Metadata"):
            conn.send(MetadataRequest(topics=[]))
        assert conn.connected
    assert broker.requests(METADATA) == []


def test_an_api_the_broker_lacks_is_unsupported(fake):
    broker = fake(versions={18: (0, 3)})
    with BrokerConnection("127.0.0.1", broker.port).connect() as conn:
        assert not conn.supports(METADATA)
        with pytest.raises(UnsupportedApiVersion, match="does not support Metadata"):
            conn.send(MetadataRequest(topics=[]))


def test_a_response_with_the_wrong_correlation_id_closes_the_connection(fake):
    broker = fake(correlation_offset=1)
    conn = BrokerConnection("127.0.0.1", broker.port)
    with pytest.raises(KafkaConnectionError, match="Correlation id mismatch"):
        conn.connect()
    assert not conn.connected


# -- failures ----------------------------------------------------------------------------


def test_a_silent_broker_times_out_instead_of_hanging(fake):
    broker = fake(handlers={METADATA: lambda body, version: None})
    conn = BrokerConnection("127.0.0.1", broker.port, timeout=0.3).connect()
    with pytest.raises(KafkaTimeoutError, match=r"No response to Metadata v\d+ from 127.0.0.1:\d+ within 0.3 s"):
        conn.send(MetadataRequest(topics=[]))
    assert not conn.connected
    with pytest.raises(KafkaConnectionError, match="Not connected"):
        conn.send(MetadataRequest(topics=[]))


def test_a_broker_that_hangs_up_mid_request_is_a_connection_error():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        def hang_up() -> None:
            peer, _ = server.accept()
            peer.recv(4)
            peer.close()
        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        conn = BrokerConnection("127.0.0.1", port, timeout=5)
        with pytest.raises(KafkaConnectionError, match="lost during ApiVersions v3"):
            conn.connect()
        thread.join(5)
    assert not conn.connected


def test_a_refused_connection_names_the_address():
    port = dead_port()
    with pytest.raises(KafkaConnectionError, match=f"127.0.0.1:{port} could not be established"):
        BrokerConnection("127.0.0.1", port, timeout=2).connect()


def test_bootstrap_skips_dead_servers(fake):
    broker = fake()
    dead = dead_port()
    with bootstrap(f"127.0.0.1:{dead}, {broker.address}", timeout=2) as conn:
        assert (conn.host, conn.port) == ("127.0.0.1", broker.port)
        assert conn.broker_versions is not None


def test_bootstrap_reports_every_failure_when_none_answers():
    first, second = dead_port(), dead_port()
    with pytest.raises(KafkaConnectionError) as failure:
        bootstrap(f"127.0.0.1:{first},127.0.0.1:{second}", timeout=2)
    assert f"127.0.0.1:{first}" in str(failure.value) and f"127.0.0.1:{second}" in str(failure.value)


def test_bootstrap_server_lists_are_parsed_like_kafkas():
    assert parse_bootstrap_servers(" a:9092, b.example:19092,,[::1]:9093") == [
        ("a", 9092), ("b.example", 19092), ("::1", 9093)]
    for bad in ("nohost", "h:", ":9092", "h:port", "h:70000"):
        with pytest.raises(ValueError, match="Invalid url in bootstrap.servers"):
            parse_bootstrap_servers(bad)
