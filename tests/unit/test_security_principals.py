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
