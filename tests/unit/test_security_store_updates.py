"""Which listeners a config change gives new stores, and Kafka's checks of a new keystore
against the one a listener serves: same subject, no subject alternative name lost, trusted
on the inter-broker listener; and store files replaced at the same path noticed."""
from __future__ import annotations

import os
import shutil

import pytest

from kafkalike.broker.config import ConfigError, KafkaConfig
from kafkalike.broker.security.store_updates import LoadedStores, check_new_stores, listeners_named
from tests.security_certs import PASSWORD, make_pki


def config(pki, keystore: str, **extra: str) -> KafkaConfig:
    location = keystore if os.path.isabs(keystore) else pki.path(f"{keystore}.p12")
    return KafkaConfig({
        "zookeeper.connect": "z:2181", "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        "listener.name.ssl.ssl.keystore.type": "PKCS12", "listener.name.ssl.ssl.keystore.password": PASSWORD,
        "listener.name.ssl.ssl.keystore.location": location,
        "listener.name.ssl.ssl.truststore.type": "PEM", "listener.name.ssl.ssl.truststore.location": pki.path("ca.pem"),
        **extra})


def check(pki, serving: str, proposed: str, **extra: str) -> None:
    check_new_stores(LoadedStores.read(config(pki, serving, **extra), "SSL"), config(pki, proposed, **extra), "SSL")


def test_only_tls_listeners_named_with_a_store_key_are_touched(tmp_path):
    cfg = config(make_pki(tmp_path), "broker")
    assert listeners_named({"listener.name.ssl.ssl.keystore.location"}, cfg) == {"SSL"}
    assert listeners_named({"listener.name.ssl.ssl.truststore.location", "log.retention.ms"}, cfg) == {"SSL"}
    assert listeners_named({"listener.name.plaintext.ssl.keystore.location",     # not a TLS listener
                            "listener.name.ssl.ssl.client.auth",                  # not a store key
                            "ssl.keystore.location"}, cfg) == set()               # no listener prefix


def test_a_renewed_certificate_passes_and_a_renamed_one_does_not(tmp_path):
    pki = make_pki(tmp_path)
    check(pki, "broker", "broker-renewed")
    with pytest.raises(ConfigError, match="Keystore DistinguishedName does not match: "
                                          "existing={DN=CN=localhost,O=kafkalike-tests}"):
        check(pki, "broker", "broker-renamed")


def test_a_certificate_that_loses_a_name_is_refused(tmp_path):
    pki = make_pki(tmp_path)
    with pytest.raises(ConfigError, match=r"Keystore SubjectAltNames do not match: .*IPAddress:127.0.0.1"):
        check(pki, "broker", "broker-fewer-names")
    check(pki, "broker-fewer-names", "broker")      # gaining one is fine


def test_the_inter_broker_listener_must_trust_the_new_certificate(tmp_path):
    pki = make_pki(tmp_path)
    with pytest.raises(ConfigError, match="not trusted by the truststore of the inter-broker listener SSL"):
        check(pki, "broker", "broker-rogue", **{"inter.broker.listener.name": "SSL"})
    check(pki, "broker", "broker-rogue")            # another listener's: not checked


def test_a_store_that_does_not_load_is_refused_naming_it(tmp_path):
    pki = make_pki(tmp_path)
    with pytest.raises(ConfigError, match="Validation of dynamic config update of SSLFactory failed: .*missing"):
        check(pki, "broker", "missing")


def test_the_served_certificate_is_the_reference_even_once_its_file_is_gone(tmp_path):
    """Rotating to a new path after the old file was deleted compares with what is served."""
    pki = make_pki(tmp_path)
    live = str(tmp_path / "live.p12")
    shutil.copy(pki.path("broker.p12"), live)
    serving = LoadedStores.read(config(pki, live), "SSL")
    os.remove(live)
    check_new_stores(serving, config(pki, "broker-renewed"), "SSL")


def test_a_store_file_replaced_at_the_same_path_is_noticed(tmp_path):
    pki = make_pki(tmp_path)
    live = str(tmp_path / "live.p12")
    shutil.copy(pki.path("broker.p12"), live)
    cfg = config(pki, live)
    serving = LoadedStores.read(cfg, "SSL")
    assert not serving.files_changed(cfg, "SSL")
    shutil.copy(pki.path("broker-renewed.p12"), live)
    os.utime(live, ns=(1, 1))                  # a different modification time, whatever the clock
    assert serving.files_changed(cfg, "SSL")
