"""SCRAM against RFC 7677's worked example, the JAAS grammar Kafka reads, and the
keystore loader's refusals (issue 16)."""
from __future__ import annotations

import pytest

from kafkalike.common import scram
from kafkalike.common.jaas import parse_jaas_config, plain_users
from kafkalike.common.keystores import KeystoreError, load_keystore, load_truststore

RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha_256_client_matches_rfc_7677(monkeypatch):
    monkeypatch.setattr(scram, "nonce", lambda: "rOprNGfwEbeRWgbNEkqO")
    client = scram.ScramClientExchange("SCRAM-SHA-256", "user", "pencil")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_server_accepts_the_password_and_refuses_others(mechanism):
    salt = b"0123456789abcdef"
    salted = scram.salted_password(mechanism, "secret", salt, 4096)
    digest = scram.HASHES[mechanism]
    import hmac
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    cred = scram.ScramCredential(salt, digest(client_key).digest(),
                                 hmac.new(salted, b"Server Key", digest).digest(), 4096)
    for password, ok in (("secret", True), ("wrong", False)):
        client = scram.ScramClientExchange(mechanism, "u=,ser", password)
        server = scram.ScramServerExchange(mechanism)
        assert server.client_first(client.first()) == "u=,ser"
        final = client.final(server.server_first(cred))
        if ok:
            client.verify(server.client_final(final))
        else:
            with pytest.raises(scram.ScramError, match="Invalid client credentials"):
                server.client_final(final)


def test_scram_server_refuses_a_foreign_authorization_id_and_channel_binding():
    with pytest.raises(scram.ScramError, match="authorization id"):
        scram.ScramServerExchange("SCRAM-SHA-256").client_first(b"n,a=admin,n=alice,r=abc")
    with pytest.raises(scram.ScramError, match="Channel binding"):
        scram.ScramServerExchange("SCRAM-SHA-256").client_first(b"p=tls-unique,,n=alice,r=abc")


def test_jaas_config_as_kafka_reads_it():
    module = parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule required\n'
                               ' username="admin" password="a;b \\"c\\"" user_admin="x" user_bob=y;')
    assert module.flag == "required" and module.options["password"] == 'a;b "c"'
    assert plain_users(module) == {"admin": "x", "bob": "y"}
    with pytest.raises(ValueError, match="should be 1 module"):
        parse_jaas_config("a.B required; c.D optional;")
    with pytest.raises(ValueError, match="Value not specified for key 'x'"):
        parse_jaas_config("a.B required x=;")
    with pytest.raises(ValueError, match="control flag"):
        parse_jaas_config("a.B username=x;")


def test_keystores_refuse_unknown_types_and_missing_files_naming_the_key(tmp_path):
    with pytest.raises(KeystoreError, match="configuration ssl.keystore.type: Supported types are JKS"):
        load_keystore({"ssl.keystore.location": str(tmp_path / "k.jks"), "ssl.keystore.type": "JCEKS"}.get)
    with pytest.raises(KeystoreError, match="configuration ssl.truststore.location"):
        load_truststore({"ssl.truststore.location": str(tmp_path / "none.pem"), "ssl.truststore.type": "PEM"}.get)
    with pytest.raises(KeystoreError, match="ssl.keystore.key"):
        load_keystore({"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": "x"}.get)
    assert load_keystore({}.get) is None


def test_jks_stores_made_by_keytool_are_read_and_checked(tmp_path):
    from tests.security_certs import PASSWORD, make_jks, make_pki
    pki = make_pki(tmp_path)
    make_jks(pki)
    keys = {"ssl.keystore.type": "JKS", "ssl.keystore.location": pki.path("broker.jks"),
            "ssl.keystore.password": PASSWORD}
    material = load_keystore(keys.get)
    assert material.chain[0].subject.rfc4514_string() == "CN=localhost,O=kafkalike-tests"
    assert material.key.public_key() == material.chain[0].public_key()
    trust = load_truststore({"ssl.truststore.type": "JKS", "ssl.truststore.location": pki.path("truststore.jks"),
                             "ssl.truststore.password": PASSWORD}.get)
    assert [c.subject.rfc4514_string() for c in trust] == ["CN=kafkalike-test-ca,O=kafkalike-tests"]
    with pytest.raises(KeystoreError, match="Keystore was tampered with, or password was incorrect"):
        load_keystore({**keys, "ssl.keystore.password": "wrong"}.get)
    with pytest.raises(KeystoreError, match="Cannot recover key"):
        load_keystore({**keys, "ssl.key.password": "wrong"}.get)
    tampered = tmp_path / "tampered.jks"
    data = bytearray(open(pki.path("broker.jks"), "rb").read())
    data[100] ^= 1
    tampered.write_bytes(bytes(data))
    with pytest.raises(KeystoreError, match="ssl.keystore.location"):
        load_keystore({**keys, "ssl.keystore.location": str(tampered)}.get)


def test_tls_settings_openssl_refuses_name_their_key(tmp_path):
    from kafkalike.broker.security.tls import build_context
    from kafkalike.common.config_def import ConfigError
    from tests.security_certs import PASSWORD, make_pki
    pki = make_pki(tmp_path)
    base = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
            "ssl.keystore.password": PASSWORD, "ssl.enabled.protocols": ("TLSv1.2", "TLSv1.3"),
            "ssl.cipher.suites": ()}
    build_context({**base, "ssl.cipher.suites": ("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                                                 "TLS_AES_256_GCM_SHA384")}.get, server=True)
    with pytest.raises(ConfigError, match="for configuration ssl.cipher.suites"):
        build_context({**base, "ssl.cipher.suites": ("TLS_NO_SUCH_SUITE_WITH_NOTHING",)}.get, server=True)
    with pytest.raises(ConfigError, match="for configuration ssl.enabled.protocols"):
        build_context({**base, "ssl.enabled.protocols": ("SSLv3",)}.get, server=True)
    with pytest.raises(ConfigError, match="for configuration ssl.keystore.location"):
        build_context({**base, "ssl.keystore.password": "wrong"}.get, server=True)
