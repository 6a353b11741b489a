"""TLS for the broker's listeners and its own outbound connections, on pyOpenSSL under
Twisted (the handshake and record layer run in Twisted's memory-BIO protocol, so the
reactor never blocks on them).

Kafka's keys map onto one OpenSSL context per listener: the keystore's key and chain,
the truststore as the verification store, ssl.client.auth as the verify mode,
ssl.enabled.protocols as the lowest and highest protocol version, ssl.cipher.suites
(Java/IANA names such as TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, or OpenSSL's) as the
cipher lists. A value OpenSSL refuses stops start-up naming its key.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from OpenSSL import SSL, crypto
from service_identity import VerificationError
from service_identity.hazmat import DNS_ID, IPAddress_ID, verify_service_identity
from service_identity.pyopenssl import extract_patterns
from twisted.internet.abstract import isIPAddress, isIPv6Address
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator, IOpenSSLServerConnectionCreator
from zope.interface import implementer

from kafkalike.common.cipher_names import TLS13_SUITES as _TLS13_SUITES, openssl_cipher_name
from kafkalike.common.config_def import ConfigError, invalid
from kafkalike.common.keystores import KeystoreError, load_keystore, load_truststore

_VERSIONS = {"TLSv1": SSL.TLS1_VERSION, "TLSv1.1": SSL.TLS1_1_VERSION, "TLSv1.2": SSL.TLS1_2_VERSION,
             "TLSv1.3": SSL.TLS1_3_VERSION}


@contextmanager
def _naming(key: str, value: Any) -> Iterator[None]:
    """OpenSSL's refusal of a value, as a ConfigError naming the key it came from."""
    try:
        yield
    except (SSL.Error, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise invalid(key, value, str(exc) or type(exc).__name__) from None


def build_context(get: Callable[[str], Any], *, server: bool, client_auth: str = "none") -> SSL.Context:
    """An OpenSSL context from Kafka's ssl.* keys as read through `get` (listener prefix applied)."""
    try:
        material = load_keystore(get)
        trusted = load_truststore(get)
    except KeystoreError as exc:
        raise ConfigError(str(exc)) from None
    if server and material is None:
        raise invalid("ssl.keystore.location", None, "An SSL listener needs a keystore: set ssl.keystore.location "
                      "(or ssl.keystore.certificate.chain and ssl.keystore.key with ssl.keystore.type=PEM)")
    ctx = SSL.Context(SSL.TLS_METHOD)
    ctx.set_options(SSL.OP_NO_COMPRESSION | SSL.OP_CIPHER_SERVER_PREFERENCE)
    protocols = list(get("ssl.enabled.protocols") or ())
    unknown = [p for p in protocols if p not in _VERSIONS]
    if unknown or not protocols:
        raise invalid("ssl.enabled.protocols", ",".join(protocols),
                      f"Unsupported TLS protocol {unknown[0] if unknown else '(none)'}; use TLSv1.2 and/or TLSv1.3")
    versions = sorted(_VERSIONS[p] for p in protocols)
    ctx.set_min_proto_version(versions[0])
    ctx.set_max_proto_version(versions[-1])
    suites = list(get("ssl.cipher.suites") or ())
    if suites:
        tls13 = [s for s in suites if s in _TLS13_SUITES]
        tls12 = [openssl_cipher_name(s) for s in suites if s not in _TLS13_SUITES]
        with _naming("ssl.cipher.suites", ",".join(suites)):
            if tls12:
                ctx.set_cipher_list(":".join(tls12).encode())
            elif versions[0] < SSL.TLS1_3_VERSION:
                ctx.set_min_proto_version(SSL.TLS1_3_VERSION)
            if tls13:
                ctx.set_tls13_ciphersuites(":".join(tls13).encode())
    if material is not None:
        where = get("ssl.keystore.location") or "(inline PEM)"
        with _naming("ssl.keystore.location" if get("ssl.keystore.location") else "ssl.keystore.key", where):
            ctx.use_certificate(material.chain[0])
            for extra in material.chain[1:]:
                ctx.add_extra_chain_cert(extra)
            ctx.use_privatekey(material.key)
            ctx.check_privatekey()
    store = ctx.get_cert_store()
    if trusted is not None:
        for cert in trusted:
            store.add_cert(crypto.X509.from_cryptography(cert))
    else:   # as the JVM's default truststore
        ctx.set_default_verify_paths()
    if server:
        mode = {"required": SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT,
                "requested": SSL.VERIFY_PEER}.get(client_auth, SSL.VERIFY_NONE)
        if mode != SSL.VERIFY_NONE:
            ctx.set_verify(mode, lambda conn, cert, err, depth, ok: bool(ok))
            ctx.set_session_id(b"kafkalike")
            if trusted:
                ctx.set_client_ca_list([crypto.X509.from_cryptography(c).get_subject() for c in trusted])
    return ctx


@implementer(IOpenSSLServerConnectionCreator)
class ServerTLS:
    """What Twisted's TLSMemoryBIOFactory asks for a new server-side connection."""

    def __init__(self, context: SSL.Context) -> None:
        self.context = context

    def serverConnectionForTLS(self, tls_protocol) -> SSL.Connection:
        return SSL.Connection(self.context, None)


@implementer(IOpenSSLClientConnectionCreator)
class ClientTLS:
    """A client-side connection: the peer's chain is verified against the truststore, and
    with ssl.endpoint.identification.algorithm=https its certificate must name the host
    (DNS name or IP address SAN) dialed."""

    def __init__(self, context: SSL.Context, host: str, verify_host: bool) -> None:
        self.context = context
        self.host = host
        self.verify_host = verify_host

    def clientConnectionForTLS(self, tls_protocol) -> SSL.Connection:
        conn = SSL.Connection(self.context, None)
        host = self.host
        is_ip = isIPAddress(host) or isIPv6Address(host)
        if not is_ip:
            conn.set_tlsext_host_name(host.encode("idna"))
        wanted = IPAddress_ID(host) if is_ip else DNS_ID(host)
        check_host = self.verify_host

        def verify(connection, cert, err, depth, ok):
            if not ok:
                return False
            if depth == 0 and check_host:
                try:
                    verify_service_identity(extract_patterns(cert), [wanted], [])
                except VerificationError:
                    return False
            return True
        conn.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT, verify)
        return conn
