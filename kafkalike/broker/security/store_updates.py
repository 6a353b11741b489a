"""A listener's keystore and truststore updated on a running broker (KIP-226), so certificates
can be rotated without a restart:

    kafka-configs.sh --bootstrap-server localhost:9093 --command-config admin.properties \
        --entity-type brokers --entity-name 0 --alter \
        --add-config listener.name.ssl.ssl.keystore.location=/etc/kafka/broker-2027.p12

Only the listener-prefixed keys are dynamic, per broker, as in Kafka. A store file replaced
at the same path is reloaded the same way: alter the key to the value it already has, and
the broker reads again the files that changed since it loaded them (Kafka's
reloadUpdatedFilesWithoutConfigChange).

Before anything is written the new stores are checked as Kafka's SslFactory checks them,
against the certificate the listener serves now: the stores must load and the key match
its certificate; the new certificate must keep the subject and at least the subject
alternative names (a client verifying the broker's name must not notice); on the
inter-broker listener it must also be trusted by that listener's truststore, or the
brokers could not talk to each other. Once applied, new connections get the new
certificate; connections already open keep the session they have.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable

from cryptography import x509
from OpenSSL import crypto

from kafkalike.broker.config import ConfigError, KafkaConfig
from kafkalike.broker.dynamic_config import SECURITY_CONFIGS
from kafkalike.broker.security.listener import ListenerConfig
from kafkalike.broker.security.tls import build_context
from kafkalike.common.keystores import KeyMaterial, KeystoreError, load_keystore, load_truststore

_PREFIXED = re.compile(r"listener\.name\.([^.]+)\.(.+)\Z")
SSL_PROTOCOLS = ("SSL", "SASL_SSL")
_FILES = ("ssl.keystore.location", "ssl.truststore.location")


@dataclass(frozen=True)
class LoadedStores:
    """What a TLS listener serves: its keystore's material (None: no keystore) and the
    (path, modification time, size) of its store files when they were read."""

    material: KeyMaterial | None
    files: tuple

    @classmethod
    def read(cls, config: KafkaConfig, listener: str) -> "LoadedStores":
        lc = ListenerConfig(config, listener)
        return cls(load_keystore(lc), _file_stamps(lc))

    def files_changed(self, config: KafkaConfig, listener: str) -> bool:
        return _file_stamps(ListenerConfig(config, listener)) != self.files


def _file_stamps(lc: ListenerConfig) -> tuple:
    stamps = []
    for key in _FILES:
        path = lc.get(key)
        if path:
            try:
                st = os.stat(path)
                stamps.append((path, st.st_mtime_ns, st.st_size))
            except OSError:
                stamps.append((path, None, None))
    return tuple(stamps)


def tls_listeners(config: KafkaConfig) -> list[str]:
    return [ep.listener_name for ep in config.listeners if ep.security_protocol in SSL_PROTOCOLS]


def listeners_named(names: Iterable[str], config: KafkaConfig) -> set[str]:
    """The TLS listeners (as `listeners` names them) whose keystore or truststore keys are among `names`."""
    touched = set()
    for name in names:
        match = _PREFIXED.match(name)
        if match and match.group(2) in SECURITY_CONFIGS:
            touched.add(match.group(1))
    return {name for name in tls_listeners(config) if name.lower() in touched}


def changed_keys(current: KafkaConfig, proposed: KafkaConfig) -> set[str]:
    return {k for k in set(current.originals) | set(proposed.originals)
            if current.originals.get(k) != proposed.originals.get(k)}


def check_new_stores(serving: LoadedStores, proposed: KafkaConfig, listener: str) -> None:
    """Kafka's SslFactory.validateReconfiguration for one listener; ConfigError refuses it."""
    lc = ListenerConfig(proposed, listener)
    try:
        build_context(lc, server=True)
        material, trusted = load_keystore(lc), load_truststore(lc)
    except (ConfigError, KeystoreError) as exc:
        raise _failed(exc) from None
    if serving.material is not None and material is not None:
        _ensure_compatible(serving.material, material)
    if listener == proposed.inter_broker_listener_name and trusted is not None and material is not None:
        _ensure_trusted(listener, material, trusted)


def _failed(cause: object) -> ConfigError:
    return ConfigError(f"Validation of dynamic config update of SSLFactory failed: {cause}")


def _subject_alt_names(cert: x509.Certificate) -> set[str]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {f"{type(n).__name__}:{n.value}" for n in names}


def _ensure_compatible(old: KeyMaterial, new: KeyMaterial) -> None:
    """CertificateEntries.ensureCompatible: the same subject, and no subject alternative name lost."""
    old_cert, new_cert = old.chain[0], new.chain[0]
    old_dn, new_dn = old_cert.subject.rfc4514_string(), new_cert.subject.rfc4514_string()
    if old_dn != new_dn:
        raise _failed(f"Keystore DistinguishedName does not match: existing={{DN={old_dn}}}, new={{DN={new_dn}}}")
    old_sans, new_sans = _subject_alt_names(old_cert), _subject_alt_names(new_cert)
    if not old_sans <= new_sans:
        raise _failed(f"Keystore SubjectAltNames do not match: existing={{SAN={sorted(old_sans)}}}, "
                      f"new={{SAN={sorted(new_sans)}}}")


def _ensure_trusted(listener: str, material: KeyMaterial, trusted: list[x509.Certificate]) -> None:
    store = crypto.X509Store()
    for cert in trusted:
        store.add_cert(crypto.X509.from_cryptography(cert))
    chain = [crypto.X509.from_cryptography(c) for c in material.chain[1:]]
    try:
        crypto.X509StoreContext(store, crypto.X509.from_cryptography(material.chain[0]), chain).verify_certificate()
    except crypto.X509StoreContextError as exc:
        raise _failed(f"the new keystore's certificate is not trusted by the truststore of the inter-broker "
                      f"listener {listener}: {exc}") from None
