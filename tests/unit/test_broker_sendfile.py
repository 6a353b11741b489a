"""Fetch answers whose record sets are segment file ranges, sent with sendfile over real
TCP sockets: partial sends continue when the socket drains, answers keep their order,
descriptors are released, and a range the file no longer holds closes the connection."""
from __future__ import annotations

import os
import socket
import struct
import time

import pytest
import pytest_twisted
from twisted.internet import defer, protocol, reactor, threads

from kafkalike.broker import sendfile_writer
from kafkalike.broker.network import KafkaServerFactory
from kafkalike.broker.registry import HANDLERS, Registration, generic_error_response, load_handlers
from kafkalike.broker.sendfile_writer import SendfileWriter
from kafkalike.protocol.api import APIS, decode_response, encode_request
from kafkalike.protocol.messages.fetch import FetchRequest, FetchResponse
from kafkalike.protocol.messages.metadata import MetadataRequest, MetadataResponse
from kafkalike.storage.log import LogSlice
from tests.unit.broker_fakes import services

load_handlers()
SEGMENT = 3_000_000


@pytest.fixture
def segment(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    data = os.urandom(SEGMENT)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, str(path), data
    os.close(fd)


@pytest.fixture
def counted_sendfile(monkeypatch):
    """os.sendfile as the writer calls it, with each call's (asked, sent) kept."""
    calls = []
    real = os.sendfile

    def sendfile(out_fd, in_fd, offset, count):
        try:
            sent = real(out_fd, in_fd, offset, count)
        except BlockingIOError:
            calls.append((count, -1))
            raise
        calls.append((count, sent))
        return sent
    monkeypatch.setattr(sendfile_writer.os, "sendfile", sendfile)
    return calls


def _slow_reader(port: int, expect: int, pause: float = 0.0005) -> bytes:
    """A client with a small receive buffer reading in small steps, so the server's
    socket fills and its sendfile calls are partial."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(20)
    got = bytearray()
    try:
        while len(got) < expect:
            try:
                chunk = sock.recv(32768)
            except OSError:
                break               # reset: the server aborted the connection
            if not chunk:
                break
            got += chunk
            time.sleep(pause)
    finally:
        sock.close()
    return bytes(got)


class _Server(protocol.Protocol):
    def connectionMade(self):
        self.transport.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
        self.factory.connected.callback(self)


def _listen(proto_class):
    factory = protocol.ServerFactory()
    factory.protocol = proto_class
    factory.connected = defer.Deferred()
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    return port, factory


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest_twisted.ensureDeferred
async def test_partial_sendfiles_continue_and_answers_keep_their_order(segment, counted_sendfile):
    fd, path, data = segment
    port, factory = _listen(_Server)
    try:
        before = _open_fds()
        expect = [b"head-1", data[10:1_000_010], b"between", data[5:1_200_005], b"tail"]
        total = sum(len(p) for p in expect)
        reading = threads.deferToThread(_slow_reader, port.getHost().port, total)
        server = await factory.connected
        assert sendfile_writer.transport_supports_sendfile(server.transport)
        writer = SendfileWriter(server.transport)
        # Three answers queued at once, as a pipelined connection would: the second and
        # third wait behind the first's file range.
        writer.write([b"head-1", LogSlice(0, 0, 10, 1_000_000, fd, path)])
        writer.write([b"between", LogSlice(0, 0, 5, 1_200_000, fd, path)])
        assert writer.busy
        writer.write([b"tail"])
        got = await reading
        assert got == b"".join(expect)
        assert writer.sent_by_sendfile == 2_200_000
        assert any(0 < sent < asked for asked, sent in counted_sendfile), "no sendfile was partial"
        assert not writer.busy and server.transport.producer is None
        assert _open_fds() <= before + 1     # the duplicated descriptors are closed (the +1: the accepted socket)
    finally:
        await port.stopListening()


@pytest_twisted.ensureDeferred
async def test_a_range_past_the_end_of_its_file_closes_the_connection(segment):
    fd, path, data = segment
    port, factory = _listen(_Server)
    try:
        reading = threads.deferToThread(_slow_reader, port.getHost().port, 10**7, 0)
        server = await factory.connected
        writer = SendfileWriter(server.transport)
        writer.write([b"size", LogSlice(0, 0, SEGMENT - 1000, 50_000, fd, path)])
        got = await reading
        # What the file held may arrive before the reset; the answer is never completed.
        assert (b"size" + data[-1000:]).startswith(got)
        assert not writer.busy
    finally:
        await port.stopListening()


@pytest_twisted.ensureDeferred
async def test_a_fetch_answer_goes_out_by_sendfile_and_the_next_answer_after_it(segment):
    """The listener itself: a Fetch handler answering with a 2 MB file range, then a
    pipelined Metadata request; the client reads both answers, in order, intact."""
    fd, path, data = segment
    record_set = LogSlice(0, 0, 777, 2_000_000, fd, path)
    connections = []

    def fetch(ctx, request):
        connections.append(ctx.connection)
        return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[
            FetchResponse.FetchablePartitionResponse(partition=0, high_watermark=9, record_set=record_set)])])
    saved = HANDLERS[1], HANDLERS[3]
    HANDLERS[1] = Registration(APIS[1], 0, 12, fetch, generic_error_response)
    HANDLERS[3] = Registration(APIS[3], 0, 11, lambda ctx, req: MetadataResponse(cluster_id="c"),
                               generic_error_response)
    factory = KafkaServerFactory(services(), 1 << 20)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    try:
        def client():
            requests = b""
            for corr, (key, version, body) in enumerate([(1, 12, FetchRequest()), (3, 9, MetadataRequest())]):
                frame = encode_request(key, version, corr, "c", body)
                requests += struct.pack(">i", len(frame)) + frame
            sock = socket.create_connection(("127.0.0.1", port.getHost().port), timeout=20)
            sock.sendall(requests)
            buf = bytearray()
            answers = []
            while len(answers) < 2:
                chunk = sock.recv(65536)
                assert chunk, "connection closed early"
                buf += chunk
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                    size = struct.unpack(">i", buf[:4])[0]
                    answers.append(bytes(buf[4:4 + size]))
                    del buf[:4 + size]
            sock.close()
            return answers
        fetch_answer, metadata_answer = await threads.deferToThread(client)
        corr, response = decode_response(1, 12, fetch_answer)
        part = response.responses[0].partition_responses[0]
        assert corr == 0 and part.high_watermark == 9 and bytes(part.record_set) == data[777:2_000_777]
        corr, metadata = decode_response(3, 9, metadata_answer)
        assert corr == 1 and metadata.cluster_id == "c"
        assert connections[0]._files.sent_by_sendfile == 2_000_000     # not read into Python
    finally:
        HANDLERS[1], HANDLERS[3] = saved
        await port.stopListening()


@pytest_twisted.ensureDeferred
async def test_a_wrapped_transport_is_never_sent_files():
    """Twisted's TLS protocol is a ProtocolWrapper: attribute lookups reach the TCP
    transport below, which has a socket and a buffer. sendfile there would put plaintext
    into the TLS stream, so only the TCP transport itself qualifies."""
    from twisted.protocols.policies import ProtocolWrapper, WrappingFactory
    port, factory = _listen(_Server)
    try:
        client = threads.deferToThread(_slow_reader, port.getHost().port, 0)
        server = await factory.connected
        wrapper = ProtocolWrapper(WrappingFactory(protocol.ServerFactory()), protocol.Protocol())
        wrapper.transport = server.transport
        assert hasattr(wrapper, "dataBuffer") and hasattr(wrapper, "socket")    # the trap
        assert sendfile_writer.transport_supports_sendfile(server.transport)
        assert not sendfile_writer.transport_supports_sendfile(wrapper)
        server.transport.loseConnection()
        await client
    finally:
        await port.stopListening()


@pytest_twisted.ensureDeferred
async def test_byte_answers_go_straight_to_the_socket_and_keep_their_place(segment, counted_sendfile):
    """A bytes-only answer is sent at once when nothing waits; what the socket does not
    take, and answers behind a file range, stay in order."""
    fd, path, data = segment
    port, factory = _listen(_Server)
    try:
        big = os.urandom(2_000_000)           # more than the socket takes at once
        expect = [b"a", big, b"b", data[:500_000], b"c", b"d"]
        reading = threads.deferToThread(_slow_reader, port.getHost().port, sum(len(p) for p in expect))
        server = await factory.connected
        writer = SendfileWriter(server.transport)
        writer.write_bytes([b"a", big])
        assert not writer.busy and 0 < sendfile_writer._buffered(server.transport) < len(big)   # a partial send
        writer.write([b"b", LogSlice(0, 0, 0, 500_000, fd, path)])     # waits behind the buffered bytes
        writer.write_bytes([b"c"])                                      # behind the file range
        writer.write_bytes([b"d"])
        assert await reading == b"".join(expect)
        assert not writer.busy
    finally:
        await port.stopListening()
