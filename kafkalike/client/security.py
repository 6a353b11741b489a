"""The client's side of security.protocol: TLS with the standard library's ssl and SASL
logins (PLAIN, SCRAM-SHA-256/512), from Java's client keys.

    security.protocol=SASL_SSL
    ssl.truststore.type=PEM            (or PKCS12 with ssl.truststore.password)
    ssl.truststore.location=/etc/kafka/ca.pem
    ssl.keystore.location / ssl.keystore.type / ssl.keystore.password / ssl.key.password
    ssl.endpoint.identification.algorithm=https   (empty turns the host name check off)
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
        username="alice" password="alice-secret";

sasl.username / sasl.password are accepted too (librdkafka's names) when no JAAS config
is given. Stores are read by kafkalike.common.keystores, as the broker reads them. Both the
blocking connection (admin, tools) and the selectors client build on `ClientSecurity`.
"""
from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any, Mapping

from kafkalike.client.errors import ConfigError, KafkaError
from kafkalike.common.cipher_names import TLS13_SUITES, openssl_cipher_name
from kafkalike.common.config_def import Password, errors_as, one_of
from kafkalike.common.jaas import parse_jaas_config
from kafkalike.common.keystores import KeystoreError, load_keystore, load_truststore
from kafkalike.common.scram import HASHES, ScramClientExchange, ScramError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class SaslAuthenticationError(KafkaError):
    """The broker refused the login: Java's SaslAuthenticationException, with the broker's message."""


def _value(v: Any) -> Any:
    return v.value if isinstance(v, Password) else v


@dataclass
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    context: ssl.SSLContext | None = None
    check_hostname: bool = True
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None

    @property
    def tls(self) -> bool:
        return self.context is not None

    @property
    def sasl(self) -> bool:
        return self.mechanism is not None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ClientSecurity":
        """Read Java's client keys (strings or Python values); ConfigError names a bad key."""
        get = lambda k: _value(config.get(k))  # noqa: E731
        protocol = str(get("security.protocol") or "PLAINTEXT").upper()
        with errors_as(ConfigError):
            one_of(*PROTOCOLS)("security.protocol", protocol)
        sec = cls(protocol)
        if protocol in ("SSL", "SASL_SSL"):
            sec.context = _ssl_context(get)
            algorithm = get("ssl.endpoint.identification.algorithm")
            sec.check_hostname = (algorithm if algorithm is not None else "https").lower() == "https"
            sec.context.check_hostname = sec.check_hostname
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            mechanism = str(get("sasl.mechanism") or "GSSAPI").upper()
            if mechanism not in MECHANISMS:
                raise ConfigError(f"Invalid value {mechanism} for configuration sasl.mechanism: kafkalike's client "
                                  f"supports {', '.join(MECHANISMS)}")
            sec.mechanism = mechanism
            jaas = get("sasl.jaas.config")
            if jaas:
                try:
                    options = parse_jaas_config(str(jaas)).options
                except ValueError as exc:
                    raise ConfigError(f"Invalid value [hidden] for configuration sasl.jaas.config: {exc}") from None
                sec.username, sec.password = options.get("username"), options.get("password")
            else:
                sec.username, sec.password = get("sasl.username"), get("sasl.password")
            if sec.username is None or sec.password is None:
                raise ConfigError(f"SASL mechanism {mechanism} needs a username and password: set sasl.jaas.config "
                                  "(username=\"...\" password=\"...\") or sasl.username and sasl.password")
        return sec

    def wrap(self, sock, host: str, *, blocking: bool = True) -> ssl.SSLSocket:
        return self.context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=blocking)

    def login(self) -> "SaslLogin":
        return SaslLogin(self.mechanism, self.username, self.password)


class SaslLogin:
    """The tokens of one login: `first()`, then `next(server_token)` until it returns None."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._scram = ScramClientExchange(mechanism, username, password) if mechanism in HASHES else None
        self._plain = f"\x00{username}\x00{password}".encode("utf-8")
        self._step = 0

    def first(self) -> bytes:
        return self._scram.first() if self._scram else self._plain

    def next(self, server_token: bytes) -> bytes | None:
        """The next token to send, or None when the login is complete."""
        self._step += 1
        if self._scram is None:
            return None
        try:
            if self._step == 1:
                return self._scram.final(server_token)
            self._scram.verify(server_token)
        except (ScramError, ValueError) as exc:
            raise SaslAuthenticationError(str(exc)) from None
        return None


def _ssl_context(get) -> ssl.SSLContext:
    try:
        material = load_keystore(get)
        trusted = load_truststore(get)
    except KeystoreError as exc:
        raise ConfigError(str(exc)) from None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    protocols = get("ssl.enabled.protocols")
    if protocols:
        names = [p.strip() for p in (protocols.split(",") if isinstance(protocols, str) else protocols)]
        versions = [_TLS_VERSIONS[n] for n in names if n in _TLS_VERSIONS]
        if not versions:
            raise ConfigError(f"Invalid value {protocols} for configuration ssl.enabled.protocols: use TLSv1.2 "
                              "and/or TLSv1.3")
        ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    suites = get("ssl.cipher.suites")
    if suites:
        names = [n.strip() for n in (suites.split(",") if isinstance(suites, str) else suites)]
        tls12 = [openssl_cipher_name(n) for n in names if n not in TLS13_SUITES]
        if tls12:   # the standard library leaves TLS 1.3 suites at OpenSSL's choice
            try:
                ctx.set_ciphers(":".join(tls12))
            except ssl.SSLError as exc:
                raise ConfigError(f"Invalid value {suites} for configuration ssl.cipher.suites: {exc}") from None
    if trusted is None:
        ctx.load_default_certs()
    else:
        from cryptography.hazmat.primitives.serialization import Encoding
        ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in trusted))
    if material is not None:
        # The standard library loads a key only from a file: a private one, removed at once.
        fd, path = tempfile.mkstemp(prefix="kafkalike-key-", suffix=".pem")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(material.key_pem() + material.chain_pem())
            ctx.load_cert_chain(path)
        finally:
            os.unlink(path)
    return ctx


__all__ = ["ClientSecurity", "SaslAuthenticationError", "SaslLogin"]
