"""The principal a connection carries (issue 16): User:ANONYMOUS until someone is known,
the subject DN of a TLS client certificate on an SSL listener, User:<name> after a SASL
login, and RequestContext.principal reads it for the coming authorizer."""
from __future__ import annotations

from pathlib import Path

from cryptography import x509
from OpenSSL import crypto
from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock, StringTransport

from kafkalike.broker.network import KafkaConnection
from kafkalike.broker.registry import RequestContext
from kafkalike.broker.security.authenticator import SaslServerAuthenticator
from kafkalike.broker.security.listener import ListenerSecurity
from tests.security_certs import CLIENT_DN, make_pki
from tests.unit.broker_fakes import services


class TlsTransport(StringTransport):
    def __init__(self, cert) -> None:
        super().__init__()
        self._cert = cert

    def getPeerCertificate(self):
        return self._cert


def _connection(security: ListenerSecurity, transport) -> KafkaConnection:
    conn = KafkaConnection(services(), set(), 1 << 20, security, MemoryReactorClock())
    conn.makeConnection(transport)
    return conn


def test_a_client_certificate_names_the_principal_on_an_ssl_listener(tmp_path: Path):
    pki = make_pki(tmp_path)
    cert = x509.load_pem_x509_certificate(Path(pki.path("client-cert.pem")).read_bytes())
    conn = _connection(ListenerSecurity("SSL", "SSL"), TlsTransport(crypto.X509.from_cryptography(cert)))
    assert conn.principal == "User:ANONYMOUS"
    conn.handshakeCompleted()
    assert conn.principal == f"User:{CLIENT_DN}"
    ctx = RequestContext(3, 1, 1, "c", "127.0.0.1", conn.services, conn)
    assert ctx.principal == f"User:{CLIENT_DN}"


def test_no_certificate_is_anonymous():
    conn = _connection(ListenerSecurity("SSL", "SSL"), TlsTransport(None))
    conn.handshakeCompleted()
    assert conn.principal == "User:ANONYMOUS"


def test_a_plain_login_names_the_principal():
    security = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", mechanisms=("PLAIN",),
                                plain_users={"alice": "pw"})
    auth = SaslServerAuthenticator(security, lambda user: defer.succeed({}), "127.0.0.1:1")
    response, close = auth.handshake("PLAIN", 1)
    assert response.error_code == 0 and not close
    results = []
    auth.authenticate(b"\x00alice\x00pw", 1).addCallback(results.append)
    assert results[0][0].error_code == 0 and auth.complete and auth.principal == "User:alice"


def test_re_authentication_may_not_change_the_principal(caplog):
    """KIP-368: a re-login on a live connection must name the same principal; otherwise it is
    refused with Kafka's sentence and logged as a failed re-authentication."""
    import logging
    security = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", mechanisms=("PLAIN",),
                                plain_users={"alice": "pw", "admin": "root"}, reauth_ms=60000)
    auth = SaslServerAuthenticator(security, lambda user: defer.succeed({}), "/127.0.0.1", "[P] ")
    auth.handshake("PLAIN", 1)
    results = []
    auth.authenticate(b"\x00alice\x00pw", 1).addCallback(results.append)
    assert results[0][0].session_lifetime_ms == 60000 and auth.principal == "User:alice"
    assert auth.wants_reauthentication(17)
    response, close = auth.handshake("PLAIN", 1)
    assert response.error_code == 0 and not close
    caplog.set_level(logging.INFO, logger="org.apache.kafka.common.network.Selector")
    auth.authenticate(b"\x00admin\x00root", 1).addCallback(results.append)
    response, close = results[1]
    assert close and response.error_code == 58
    assert response.error_message == "Cannot change principals during re-authentication from User.alice: User.admin"
    assert [r.getMessage() for r in caplog.records if r.name == "org.apache.kafka.common.network.Selector"] == [
        "[P] Failed re-authentication with /127.0.0.1 "
        "(Cannot change principals during re-authentication from User.alice: User.admin)"]


def test_a_scram_login_for_an_unknown_user_fails_with_kafkas_message():
    from kafkalike.common.scram import ScramClientExchange
    security = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-512",))
    auth = SaslServerAuthenticator(security, lambda user: defer.succeed({}), "127.0.0.1:1")
    auth.handshake("SCRAM-SHA-512", 1)
    results = []
    auth.authenticate(ScramClientExchange("SCRAM-SHA-512", "ghost", "x").first(), 1).addCallback(results.append)
    response, close = results[0]
    assert close and response.error_code == 58
    assert response.error_message == ("Authentication failed during authentication due to invalid credentials "
                                      "with SASL mechanism SCRAM-SHA-512")
    assert not auth.complete and auth.principal is None


def test_principal_mapping_rules_shape_the_certificate_principal(tmp_path: Path):
    from kafkalike.broker.security.principal import SslPrincipalMapper
    pki = make_pki(tmp_path)
    cert = x509.load_pem_x509_certificate(Path(pki.path("client-cert.pem")).read_bytes())
    security = ListenerSecurity("SSL", "SSL", principal_mapper=SslPrincipalMapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^CN=([^,]*),O=(.*)$/$1@$2/U, DEFAULT"))
    transport = TlsTransport(crypto.X509.from_cryptography(cert))
    conn = _connection(security, transport)
    conn.handshakeCompleted()
    assert conn.principal == "User:ALICE-CLIENT@KAFKALIKE-TESTS"
    # A DN no rule applies to fails the connection, as Kafka's NoMatchingRule.
    strict = ListenerSecurity("SSL", "SSL", principal_mapper=SslPrincipalMapper("RULE:^CN=(.*),OU=x$/$1/"))
    transport = TlsTransport(crypto.X509.from_cryptography(cert))
    conn = _connection(strict, transport)
    conn.handshakeCompleted()
    assert conn.principal == "User:ANONYMOUS" and transport.disconnecting


def test_bad_mapping_rules_stop_start_up_naming_the_key(tmp_path: Path):
    import pytest
    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.security.listener import all_listener_security
    from kafkalike.common.config_def import ConfigError
    from tests.security_certs import PASSWORD
    pki = make_pki(tmp_path)
    config = KafkaConfig({"zookeeper.connect": "z:2181", "listeners": "SSL://127.0.0.1:9093",
                          "security.inter.broker.protocol": "SSL",
                          "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
                          "ssl.keystore.password": PASSWORD, "ssl.principal.mapping.rules": "RULE:(/x/"})
    with pytest.raises(ConfigError, match="for configuration ssl.principal.mapping.rules: Invalid rule"):
        all_listener_security(config)


def test_a_failed_login_closes_only_after_the_configured_delay():
    reactor = MemoryReactorClock()
    security = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", mechanisms=("PLAIN",), failed_auth_delay_ms=250)
    conn = KafkaConnection(services(), set(), 1 << 20, security, reactor)
    transport = StringTransport()
    conn.makeConnection(transport)
    conn.close_after_failed_authentication()
    conn.stringReceived(b"anything more is not read")
    assert not transport.disconnecting and transport.producerState == "paused"
    reactor.advance(0.2)
    assert not transport.disconnecting
    reactor.advance(0.1)
    assert transport.disconnecting


# -- a TLS handshake that fails is logged as Kafka's Selector logs it ----------------------------


def _tls_exchange(tmp_path: Path, client_cert: str | None, caplog):
    """An SSL listener with ssl.client.auth=required, and one TLS client talking to it over
    an in-memory pipe (twisted.test.iosim); the Selector's log lines."""
    import logging

    from twisted.internet import protocol
    from twisted.internet.address import IPv4Address
    from twisted.internet.ssl import Certificate, PrivateCertificate, optionsForClientTLS
    from twisted.protocols.tls import TLSMemoryBIOFactory
    from twisted.test.iosim import FakeTransport, connect

    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.network import listening_factory
    from kafkalike.broker.security.listener import all_listener_security
    from tests.security_certs import PASSWORD
    pki = make_pki(tmp_path)
    config = KafkaConfig({"zookeeper.connect": "z:2181", "listeners": "SSL://127.0.0.1:9093",
                          "security.inter.broker.protocol": "SSL", "ssl.client.auth": "required",
                          "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
                          "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PEM",
                          "ssl.truststore.location": pki.path("ca.pem")})
    security = all_listener_security(config)["SSL"]
    server_factory = listening_factory(services(config=config), 1 << 20, security, "SSL", MemoryReactorClock())
    peer = IPv4Address("TCP", "10.9.8.7", 40000)
    server = server_factory.buildProtocol(peer)
    ca = Certificate.loadPEM(Path(pki.path("ca.pem")).read_bytes())
    client_certificate = None
    if client_cert is not None:
        client_certificate = PrivateCertificate.loadPEM(
            Path(pki.path(f"{client_cert}-key.pem")).read_text() + Path(pki.path(f"{client_cert}-cert.pem")).read_text())
    options = optionsForClientTLS("localhost", trustRoot=ca, clientCertificate=client_certificate)
    lost: list = []

    class Client(protocol.Protocol):
        def connectionLost(self, reason):
            lost.append(reason)
    client = TLSMemoryBIOFactory(options, True, protocol.Factory.forProtocol(Client)).buildProtocol(None)
    caplog.set_level(logging.DEBUG, logger="org.apache.kafka.common.network.Selector")
    connect(server, FakeTransport(server, isServer=True, peerAddress=peer,
                                  hostAddress=IPv4Address("TCP", "127.0.0.1", 9093)),
            client, FakeTransport(client, isServer=False))
    lines = [r.getMessage() for r in caplog.records if r.name == "org.apache.kafka.common.network.Selector"]
    levels = {r.levelname for r in caplog.records if r.name == "org.apache.kafka.common.network.Selector"}
    return lines, levels, lost


def test_a_tls_client_without_a_certificate_is_logged_as_a_failed_authentication(tmp_path: Path, caplog):
    lines, levels, lost = _tls_exchange(tmp_path / "pki", None, caplog)
    assert lines == ["[SocketServer listenerType=ZK_BROKER, nodeId=0] Failed authentication with /10.9.8.7 "
                     "(SSL handshake failed)"]
    assert levels == {"INFO"} and lost


def test_a_certificate_no_trusted_ca_issued_is_logged_too(tmp_path: Path, caplog):
    lines, _, lost = _tls_exchange(tmp_path / "pki", "rogue", caplog)
    assert lines == ["[SocketServer listenerType=ZK_BROKER, nodeId=0] Failed authentication with /10.9.8.7 "
                     "(SSL handshake failed)"] and lost


def test_a_good_certificate_logs_no_failure(tmp_path: Path, caplog):
    lines, _, lost = _tls_exchange(tmp_path / "pki", "client", caplog)
    assert lines == [] and lost == []


def test_connections_max_reauth_ms_can_be_set_per_mechanism():
    """KIP-368: listener.name.<listener>.<mechanism>.connections.max.reauth.ms decides the
    session lifetime of a login with that mechanism; the others keep the listener's."""
    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.security.listener import all_listener_security
    config = KafkaConfig({"zookeeper.connect": "z:2181", "listeners": "SASL_PLAINTEXT://127.0.0.1:9092",
                          "security.inter.broker.protocol": "SASL_PLAINTEXT",
                          "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                          "sasl.mechanism.inter.broker.protocol": "PLAIN",
                          "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                              'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
                              'password="pw" user_alice="pw";',
                          "connections.max.reauth.ms": "60000",
                          "listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms": "5000"})
    security = all_listener_security(config)["SASL_PLAINTEXT"]
    assert (security.reauth_ms_for("PLAIN"), security.reauth_ms_for("SCRAM-SHA-256")) == (60000, 5000)
    auth = SaslServerAuthenticator(security, lambda user: defer.succeed({}), "/127.0.0.1")
    auth.handshake("PLAIN", 1)
    results = []
    auth.authenticate(b"\x00alice\x00pw", 1).addCallback(results.append)
    assert results[0][0].session_lifetime_ms == 60000
