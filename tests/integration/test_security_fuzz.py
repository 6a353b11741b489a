"""Garbage on secured listeners and replayed SCRAM messages (issue 16).

The SSL listener's stores are JKS files made by keytool. Random bytes, truncated TLS and SASL exchanges and oversized frames on the SASL_PLAINTEXT
and SSL listeners, and real TLS ClientHellos cut short or followed by garbage, never log
anyone in and never take the broker down; a SCRAM
client-final message replayed on a new connection (where the server's nonce differs) is
refused with SASL_AUTHENTICATION_FAILED, and the connection it came on cannot then be used.
After all of it an honest SCRAM client still logs in and the broker still serves.
With connections.max.reauth.ms (KIP-368) the session lifetime is announced, the same
principal may re-authenticate on the live connection, another may not, and a connection
that lets its session expire is closed at its next request. A v0 handshake is followed by
raw SASL tokens, as Kafka accepts from old clients.
"""
from __future__ import annotations

import random
import time
import shutil
import socket
import ssl
import struct

import pytest

from kafkalike.common.scram import ScramClientExchange
from kafkalike.lab.cluster import BrokerProcess
from kafkalike.lab.zookeeper import free_ports
from kafkalike.protocol.api import decode_response, encode_request
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.conftest import scratch_dir
from tests.security_certs import JAAS_PLAIN, PASSWORD, make_jks, make_pki

USER, SECRET = "fuzzer", "fuzz-secret"
REAUTH_MS = 1500


@pytest.fixture(scope="module")
def target(module_zk_chroot):
    base = scratch_dir("secfuzz")
    pki = make_pki(base / "pki")
    make_jks(pki)
    plain, sasl_port, ssl_port = free_ports(3)
    broker = BrokerProcess(0, module_zk_chroot, base, plain, {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                     f"SSL://127.0.0.1:{ssl_port}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN,
        # Java's own store format, Kafka's default type (made by keytool).
        "ssl.keystore.location": pki.path("broker.jks"),
        "ssl.keystore.password": PASSWORD, "ssl.client.auth": "required",
        "ssl.truststore.location": pki.path("truststore.jks"), "ssl.truststore.password": PASSWORD,
        "connection.failed.authentication.delay.ms": "10",
        "listener.name.sasl_plaintext.connections.max.reauth.ms": str(REAUTH_MS),
    })
    try:
        broker.start()
        broker.wait_ready(60)
        from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                           UserScramCredentialUpsertion)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), SECRET.encode())]).values():
            f.result(30)
        yield broker, sasl_port, ssl_port, pki
    finally:
        broker.kill()
        shutil.rmtree(base, ignore_errors=True)


class Raw:
    """A bare socket speaking Kafka frames, for exchanges no client would send."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.corr = 0

    def request(self, body, version: int):
        self.corr += 1
        data = encode_request(body.API_KEY, version, self.corr, "fuzz", body)
        self.sock.sendall(struct.pack(">i", len(data)) + data)
        size = struct.unpack(">i", self._exactly(4))[0]
        return decode_response(body.API_KEY, version, self._exactly(size))[1]

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def _scram_login(port: int, exchange: ScramClientExchange, final: bytes | None = None):
    """Handshake and both SCRAM steps; returns (connection, client-final sent, last response)."""
    raw = Raw(port)
    assert raw.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1).error_code == 0
    first = raw.request(SaslAuthenticateRequest(auth_bytes=exchange.first()), 1)
    assert first.error_code == 0
    final = final if final is not None else exchange.final(first.auth_bytes)
    return raw, final, raw.request(SaslAuthenticateRequest(auth_bytes=final), 1)


def _metadata_refused(raw: Raw) -> bool:
    try:
        raw.request(MetadataRequest(topics=[]), 1)
    except (ConnectionError, OSError):
        return True
    return False


def test_a_replayed_scram_client_final_message_logs_nobody_in(target):
    broker, sasl_port, _, _ = target
    exchange = ScramClientExchange("SCRAM-SHA-256", USER, SECRET)
    raw, final, ok = _scram_login(sasl_port, exchange)
    assert ok.error_code == 0 and ok.session_lifetime_ms == REAUTH_MS
    exchange.verify(ok.auth_bytes)
    raw.request(MetadataRequest(topics=[]), 1)    # logged in: served
    raw.close()
    # The same client-first and client-final on a new connection: the server's nonce differs.
    replay, _, refused = _scram_login(sasl_port, exchange, final)
    assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert refused.error_message == ("Authentication failed during authentication due to invalid credentials "
                                     "with SASL mechanism SCRAM-SHA-256")
    assert _metadata_refused(replay)
    replay.close()


def _client_hello() -> bytes:
    """The first flight of a real TLS client (OpenSSL's ClientHello), to cut and spoil."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    with pytest.raises(ssl.SSLWantReadError):
        ctx.wrap_bio(incoming, outgoing, server_hostname="localhost").do_handshake()
    hello = outgoing.read()
    assert hello[:1] == b"\x16"        # a TLS handshake record
    return hello


def test_garbage_and_truncated_exchanges_never_log_in_nor_take_the_broker_down(target):
    broker, sasl_port, ssl_port, pki = target
    rnd = random.Random(16)
    hello = _client_hello()
    for i in range(72):
        kind = i % 6
        port = ssl_port if kind >= 4 else rnd.choice([sasl_port, ssl_port])
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            if kind == 0:      # random bytes
                sock.sendall(rnd.randbytes(rnd.randint(1, 4000)))
            elif kind == 1:    # a frame announcing more than it sends, then the socket closes
                sock.sendall(struct.pack(">i", 5000) + rnd.randbytes(100))
            elif kind == 2:    # an oversized frame
                sock.sendall(struct.pack(">i", 2 ** 31 - 1))
            elif kind == 4:    # a TLS ClientHello cut short, then the socket closes
                sock.sendall(hello[:rnd.randint(1, len(hello) - 1)])
            elif kind == 5:    # a whole ClientHello, then garbage where the handshake goes on
                sock.sendall(hello + rnd.randbytes(rnd.randint(1, 2000)))
            else:              # a valid handshake, then garbage as SASL bytes
                data = encode_request(17, 1, 1, "fuzz", SaslHandshakeRequest(mechanism="PLAIN"))
                sock.sendall(struct.pack(">i", len(data)) + data)
                body = encode_request(36, 1, 2, "fuzz", SaslAuthenticateRequest(auth_bytes=rnd.randbytes(50)))
                sock.sendall(struct.pack(">i", len(body)) + body[:rnd.randint(0, len(body))])
        except OSError:
            pass
        finally:
            sock.close()
    # Before a login a frame may not exceed 512 KiB, whatever socket.request.max.bytes says.
    big = Raw(sasl_port)
    big.sock.sendall(struct.pack(">i", 600_000) + b"\x00" * 1000)
    with pytest.raises((ConnectionError, OSError)):
        big._exactly(4)
    big.close()
    assert "larger than the limit before SASL authentication (524288)" in broker.server_log.read_text()
    # Garbage after a PLAIN handshake is a failed login, and the connection serves nothing.
    raw = Raw(sasl_port)
    assert raw.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    bad = raw.request(SaslAuthenticateRequest(auth_bytes=b"\x00admin"), 1)
    assert bad.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert _metadata_refused(raw)
    raw.close()
    # A TLS client with a certificate the JKS truststore's CA signed is served.
    ctx = ssl.create_default_context(cafile=pki.path("ca.pem"))
    ctx.load_cert_chain(pki.path("client-cert.pem"), pki.path("client-key.pem"))
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", ssl_port), timeout=5),
                         server_hostname="localhost") as tls:
        data = encode_request(3, 1, 1, "fuzz", MetadataRequest(topics=[]))
        tls.sendall(struct.pack(">i", len(data)) + data)
        assert len(tls.recv(4)) == 4
    # A TLS client without a certificate gets nothing from the mTLS listener.
    ctx = ssl.create_default_context(cafile=pki.path("ca.pem"))
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", ssl_port), timeout=5),
                             server_hostname="localhost") as tls:
            data = encode_request(3, 1, 1, "fuzz", MetadataRequest(topics=[]))
            tls.sendall(struct.pack(">i", len(data)) + data)
            if not tls.recv(4):
                raise ConnectionError("closed")
    # Still up, and an honest client still logs in.
    assert broker.is_running()
    raw, _, ok = _scram_login(sasl_port, ScramClientExchange("SCRAM-SHA-256", USER, SECRET))
    assert ok.error_code == 0
    assert raw.request(MetadataRequest(topics=[]), 1).brokers
    raw.close()
    assert "Traceback" not in broker.server_log.read_text()


def test_reauthentication_keeps_the_mechanism_and_an_expired_session_is_closed(target):
    broker, sasl_port, _, _ = target
    raw, _, ok = _scram_login(sasl_port, ScramClientExchange("SCRAM-SHA-256", USER, SECRET))
    assert ok.session_lifetime_ms == REAUTH_MS
    # The same user again on the same connection: accepted, and the connection still serves.
    assert raw.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1).error_code == 0
    again = ScramClientExchange("SCRAM-SHA-256", USER, SECRET)
    first = raw.request(SaslAuthenticateRequest(auth_bytes=again.first()), 1)
    final = raw.request(SaslAuthenticateRequest(auth_bytes=again.final(first.auth_bytes)), 1)
    assert final.error_code == 0
    assert raw.request(MetadataRequest(topics=[]), 1).brokers
    # Re-authentication must keep the mechanism. As Kafka's REAUTH_BAD_MECHANISM: another enabled
    # one is answered at the handshake, and its first token closes the connection unanswered.
    assert raw.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    with pytest.raises((ConnectionError, OSError)):
        raw.request(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret"), 1)
    raw.close()
    line = ("Failed re-authentication with /127.0.0.1 (SASL mechanism 'PLAIN' requested by client is not supported "
            "for re-authentication of mechanism 'SCRAM-SHA-256') (org.apache.kafka.common.network.Selector)")
    deadline = time.monotonic() + 5
    while line not in broker.server_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert line in broker.server_log.read_text()
    raw, _, ok = _scram_login(sasl_port, ScramClientExchange("SCRAM-SHA-256", USER, SECRET))
    time.sleep(REAUTH_MS / 1000 + 0.3)
    assert _metadata_refused(raw)
    raw.close()


def test_a_v0_handshake_takes_raw_sasl_tokens(target):
    _, sasl_port, _, _ = target
    raw = Raw(sasl_port)
    assert raw.request(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
    token = b"\x00alice\x00alice-secret"
    raw.sock.sendall(struct.pack(">i", len(token)) + token)
    assert raw._exactly(4) == b"\x00\x00\x00\x00"     # PLAIN's empty answer, framed by its size
    assert raw.request(MetadataRequest(topics=[]), 1).brokers
    raw.close()
    bad = Raw(sasl_port)
    assert bad.request(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
    token = b"\x00alice\x00wrong"
    bad.sock.sendall(struct.pack(">i", len(token)) + token)
    with pytest.raises(ConnectionError):
        bad._exactly(4)
    bad.close()


def test_a_changed_scram_password_counts_from_the_next_login(target):
    """The broker's credential cache follows the config change notification that
    AlterUserScramCredentials writes."""
    broker, sasl_port, _, _ = target
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
    plain = broker.port
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})

    def set_password(user: str, password: str) -> None:
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password.encode())]).values():
            f.result(30)

    def login(user: str, password: str) -> int:
        raw, _, answer = _scram_login(sasl_port, ScramClientExchange("SCRAM-SHA-256", user, password))
        raw.close()
        return answer.error_code

    set_password("rotating", "first")
    deadline = time.monotonic() + 15
    while login("rotating", "first") != 0:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    set_password("rotating", "second")
    deadline = time.monotonic() + 15
    while login("rotating", "second") != 0:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert login("rotating", "first") == ErrorCode.SASL_AUTHENTICATION_FAILED
