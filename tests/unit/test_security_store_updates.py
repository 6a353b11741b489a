"""Which listeners a config change gives new stores, and Kafka's checks of a new keystore:
same subject, no subject alternative name lost, trusted on the inter-broker listener."""
from __future__ import annotations

import pytest

from kafkalike.broker.config import ConfigError, KafkaConfig
from kafkalike.broker.security.store_updates import check_store_update, listeners_with_new_stores
from tests.security_certs import PASSWORD, make_pki


def config(pki, keystore: str, **extra: str) -> KafkaConfig:
    return KafkaConfig({
        "zookeeper.connect": "z:2181", "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        "listener.name.ssl.ssl.keystore.type": "PKCS12", "listener.name.ssl.ssl.keystore.password": PASSWORD,
        "listener.name.ssl.ssl.keystore.location": pki.path(f"{keystore}.p12"),
        "listener.name.ssl.ssl.truststore.type": "PEM", "listener.name.ssl.ssl.truststore.location": pki.path("ca.pem"),
        **extra})


def test_only_tls_listeners_named_with_a_store_key_are_touched(tmp_path):
    cfg = config(make_pki(tmp_path), "broker")
    assert listeners_with_new_stores({"listener.name.ssl.ssl.keystore.location"}, cfg) == ["SSL"]
    assert listeners_with_new_stores({"listener.name.ssl.ssl.truststore.location", "log.retention.ms"}, cfg) == ["SSL"]
    assert listeners_with_new_stores({"listener.name.plaintext.ssl.keystore.location",     # not a TLS listener
                                      "listener.name.ssl.ssl.client.auth",                  # not a store key
                                      "ssl.keystore.location"}, cfg) == []                  # no listener prefix


def test_a_renewed_certificate_passes_and_a_renamed_one_does_not(tmp_path):
    pki = make_pki(tmp_path)
    current = config(pki, "broker")
    check_store_update(current, config(pki, "broker-renewed"))
    with pytest.raises(ConfigError, match="Keystore DistinguishedName does not match: "
                                          "existing={DN=CN=localhost,O=kafkalike-tests}"):
        check_store_update(current, config(pki, "broker-renamed"))


def test_a_certificate_that_loses_a_name_is_refused(tmp_path):
    pki = make_pki(tmp_path)
    with pytest.raises(ConfigError, match=r"Keystore SubjectAltNames do not match: .*IPAddress:127.0.0.1"):
        check_store_update(config(pki, "broker"), config(pki, "broker-fewer-names"))
    check_store_update(config(pki, "broker-fewer-names"), config(pki, "broker"))     # gaining one is fine


def test_the_inter_broker_listener_must_trust_the_new_certificate(tmp_path):
    pki = make_pki(tmp_path)
    with pytest.raises(ConfigError, match="not trusted by the truststore of the inter-broker listener SSL"):
        check_store_update(config(pki, "broker", **{"inter.broker.listener.name": "SSL"}),
                           config(pki, "broker-rogue", **{"inter.broker.listener.name": "SSL"}))
    check_store_update(config(pki, "broker"), config(pki, "broker-rogue"))    # another listener's: not checked


def test_a_store_that_does_not_load_is_refused_naming_it(tmp_path):
    pki = make_pki(tmp_path)
    with pytest.raises(ConfigError, match="Validation of dynamic config update of SSLFactory failed: .*missing"):
        check_store_update(config(pki, "broker"), config(pki, "missing"))
