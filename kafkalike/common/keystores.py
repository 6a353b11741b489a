"""Kafka's keystore and truststore keys read into keys and certificates.

Kafka's SslFactory loads `ssl.keystore.*` and `ssl.truststore.*` through a Java
KeyStore of type JKS, PKCS12 or, since KIP-651, PEM (a file, or the PEM text itself in
ssl.keystore.certificate.chain / ssl.keystore.key / ssl.truststore.certificates). The
broker (pyOpenSSL under Twisted) and the client (the standard library's ssl) both start
from what is read here, so a store that one side accepts the other accepts too. JKS,
Java's own format and Kafka's default type, is read here too (`_read_jks`): its entries,
its keyed SHA-1 integrity digest, and private keys under Sun's key protector. JCEKS and
other types are refused with a sentence naming the key.
"""
from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12


class KeystoreError(ValueError):
    """A store that cannot be read; `key` is the configuration key the operator must fix."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {key}: {reason}")
        self.key = key


@dataclass
class KeyMaterial:
    """A private key and its certificate chain (leaf first)."""

    key: object
    chain: list[x509.Certificate] = field(default_factory=list)

    def chain_pem(self) -> bytes:
        return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in self.chain)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())


def _text(value: object) -> str | None:
    """Password keys arrive as Password objects (str() hides them) or plain strings."""
    if value is None:
        return None
    return getattr(value, "value", value) if not isinstance(value, str) else value


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        store = "truststore" if "truststore" in key else "keystore"
        raise KeystoreError(key, location, f"Failed to load SSL {store} {location}: "
                            f"{exc.strerror or exc}") from None


def _pem_certs(data: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(data) if b"-----BEGIN CERTIFICATE-----" in data else []


def _pem_key(data: bytes, password: str | None):
    start = data.find(b"-----BEGIN")
    while start >= 0:
        end = data.find(b"-----END", start)
        block_end = data.find(b"-----", end + 8) + 5
        block = data[start:block_end]
        if b"PRIVATE KEY" in block[:40]:
            pw = password.encode() if password else None
            try:
                return serialization.load_pem_private_key(block, pw)
            except TypeError:   # encrypted key without password, or a password for a clear key
                return serialization.load_pem_private_key(block, None if pw else b"")
        start = data.find(b"-----BEGIN", block_end)
    return None


def load_keystore(get: Callable[[str], object]) -> KeyMaterial | None:
    """The key material the keys read through `get` describe; None when no keystore is set."""
    store_type = (_text(get("ssl.keystore.type")) or "JKS").upper()
    location = _text(get("ssl.keystore.location"))
    password = _text(get("ssl.keystore.password"))
    key_password = _text(get("ssl.key.password"))
    inline_chain = _text(get("ssl.keystore.certificate.chain"))
    inline_key = _text(get("ssl.keystore.key"))
    if inline_chain or inline_key:
        if store_type != "PEM":
            raise KeystoreError("ssl.keystore.type", store_type, "Inline key and certificate "
                                "(ssl.keystore.key, ssl.keystore.certificate.chain) need ssl.keystore.type=PEM")
        if location:
            raise KeystoreError("ssl.keystore.location", location, "Both ssl.keystore.location and "
                                "ssl.keystore.key or ssl.keystore.certificate.chain are set; set one of them")
        if not (inline_chain and inline_key):
            missing = "ssl.keystore.key" if not inline_key else "ssl.keystore.certificate.chain"
            raise KeystoreError(missing, None, "Both ssl.keystore.key and ssl.keystore.certificate.chain "
                                "must be set for an inline PEM keystore")
        return _pem_material("ssl.keystore.key", "(inline)", inline_chain.encode() + b"\n" + inline_key.encode(),
                             key_password)
    if not location:
        return None
    if store_type not in ("PEM", "PKCS12", "JKS"):
        raise _unsupported("ssl.keystore.type", store_type, "ssl.keystore.location", location)
    data = _read("ssl.keystore.location", location)
    if store_type == "JKS":
        keys, _ = _read_jks("ssl.keystore.location", location, data, password, key_password or password)
        if not keys:
            raise KeystoreError("ssl.keystore.location", location,
                                f"SSL keystore {location} holds no private key with its certificate")
        return keys[0]
    if store_type == "PEM":
        # KIP-651: a PEM key file's key is encrypted with ssl.key.password.
        return _pem_material("ssl.keystore.location", location, data, key_password)
    if store_type == "PKCS12":
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(
                data, password.encode() if password is not None else None)
        except (ValueError, TypeError) as exc:
            raise KeystoreError("ssl.keystore.location", location, f"Failed to load SSL keystore {location} "
                                f"of type PKCS12: keystore password was incorrect or the file is not a "
                                f"PKCS12 store ({exc})") from None
        if key is None or cert is None:
            raise KeystoreError("ssl.keystore.location", location,
                                f"SSL keystore {location} holds no private key with its certificate")
        return KeyMaterial(key, [cert, *extra])
    raise _unsupported("ssl.keystore.type", store_type, "ssl.keystore.location", location)


def _pem_material(key: str, where: str, data: bytes, password: str | None) -> KeyMaterial:
    try:
        certs = _pem_certs(data)
        private = _pem_key(data, password)
    except (ValueError, TypeError) as exc:
        raise KeystoreError(key, where, f"Failed to load PEM keystore: {exc}") from None
    if private is None or not certs:
        raise KeystoreError(key, where, "A PEM keystore needs one private key and its certificate chain")
    return KeyMaterial(private, certs)


def load_truststore(get: Callable[[str], object]) -> list[x509.Certificate] | None:
    """The trusted certificates; None when no truststore is set (the system's roots apply)."""
    store_type = (_text(get("ssl.truststore.type")) or "JKS").upper()
    location = _text(get("ssl.truststore.location"))
    password = _text(get("ssl.truststore.password"))
    inline = _text(get("ssl.truststore.certificates"))
    if inline:
        if store_type != "PEM":
            raise KeystoreError("ssl.truststore.type", store_type,
                                "ssl.truststore.certificates needs ssl.truststore.type=PEM")
        certs = _pem_certs(inline.encode())
        if not certs:
            raise KeystoreError("ssl.truststore.certificates", "(inline)", "No certificate found")
        return certs
    if not location:
        return None
    if store_type not in ("PEM", "PKCS12", "JKS"):
        raise _unsupported("ssl.truststore.type", store_type, "ssl.truststore.location", location)
    data = _read("ssl.truststore.location", location)
    if store_type == "JKS":
        _, certs = _read_jks("ssl.truststore.location", location, data, password, None)
        if not certs:
            raise KeystoreError("ssl.truststore.location", location, "No certificate found in the truststore")
        return certs
    if store_type == "PEM":
        try:
            certs = _pem_certs(data)
        except ValueError as exc:
            raise KeystoreError("ssl.truststore.location", location, f"Failed to load PEM truststore: {exc}") from None
        if not certs:
            raise KeystoreError("ssl.truststore.location", location, "No certificate found in the PEM truststore")
        return certs
    if store_type == "PKCS12":
        try:
            stores = pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
        except (ValueError, TypeError) as exc:
            raise KeystoreError("ssl.truststore.location", location, f"Failed to load SSL truststore {location} "
                                f"of type PKCS12: truststore password was incorrect or the file is not a "
                                f"PKCS12 store ({exc})") from None
        certs = [c.certificate for c in stores.additional_certs]
        if stores.cert is not None:
            certs.insert(0, stores.cert.certificate)
        if not certs:
            raise KeystoreError("ssl.truststore.location", location, "No certificate found in the truststore")
        return certs
    raise _unsupported("ssl.truststore.type", store_type, "ssl.truststore.location", location)


def _unsupported(type_key: str, store_type: str, location_key: str, location: str | None) -> KeystoreError:
    return KeystoreError(type_key, store_type, f"Supported types are JKS, PKCS12 and PEM ({location_key}="
                         f"{location}); convert other stores with `keytool -importkeystore -deststoretype PKCS12`")


# -- JKS ------------------------------------------------------------------------------------
#
# magic 0xFEEDFEED, version 1 or 2, entry count; entries tagged 1 (private key: alias,
# timestamp, protected key, certificate chain) or 2 (trusted certificate: alias, timestamp,
# certificate); certificates are preceded by their type ("X.509") in version 2. The file
# ends with SHA-1(password as UTF-16BE + "Mighty Aphrodite" + everything before).
# A private key is an EncryptedPrivateKeyInfo whose data is salt(20) + key XOR keystream +
# SHA-1(password + key), the keystream being SHA-1(password + previous block) from the salt.

_JKS_MAGIC = 0xFEEDFEED
_SUN_KEY_PROTECTOR = bytes.fromhex("2b060104012a02110101")   # OID 1.3.6.1.4.1.42.2.17.1.1


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated JKS store")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def u16(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack(">I", self.take(4))[0]

    def utf(self) -> str:
        return self.take(self.u16()).decode("utf-8", "replace")


def _der(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at pos."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER element")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    if pos + length > len(data):
        raise ValueError("truncated DER element")
    return tag, pos, pos + length


def _jks_private_key(protected: bytes, password: str):
    # EncryptedPrivateKeyInfo ::= SEQUENCE { AlgorithmIdentifier { OID, params }, OCTET STRING }
    _, start, _ = _der(protected, 0)
    _, alg_start, alg_end = _der(protected, start)
    _, oid_start, oid_end = _der(protected, alg_start)
    if protected[oid_start:oid_end] != _SUN_KEY_PROTECTOR:
        raise ValueError("the private key is not protected by Sun's JKS key protector")
    _, data_start, data_end = _der(protected, alg_end)
    blob = protected[data_start:data_end]
    if len(blob) < 41:
        raise ValueError("truncated protected key")
    salt, encrypted, check = blob[:20], blob[20:-20], blob[-20:]
    secret = password.encode("utf-16-be")
    stream = bytearray()
    block = salt
    while len(stream) < len(encrypted):
        block = hashlib.sha1(secret + block).digest()
        stream += block
    plain = bytes(a ^ b for a, b in zip(encrypted, stream))
    if not hmac.compare_digest(hashlib.sha1(secret + plain).digest(), check):
        raise ValueError("Cannot recover key: the key password is wrong")
    return serialization.load_der_private_key(plain, None)


def _read_jks(key: str, location: str, data: bytes, password: str | None,
              key_password: str | None) -> tuple[list[KeyMaterial], list[x509.Certificate]]:
    """The private key entries (when a key password is given) and the trusted certificates."""
    store = "truststore" if "truststore" in key else "keystore"

    def fail(reason: str) -> KeystoreError:
        return KeystoreError(key, location, f"Failed to load SSL {store} {location} of type JKS: {reason}")
    try:
        r = _Reader(data)
        if r.u32() != _JKS_MAGIC:
            raise fail("not a JKS store")
        version = r.u32()
        if version not in (1, 2):
            raise fail(f"unknown JKS version {version}")
        protected_keys: list[tuple[bytes, list[x509.Certificate]]] = []
        trusted: list[x509.Certificate] = []

        def certificate() -> x509.Certificate:
            if version == 2:
                r.utf()
            return x509.load_der_x509_certificate(r.take(r.u32()))
        for _ in range(r.u32()):
            tag = r.u32()
            r.utf()
            r.take(8)
            if tag == 1:
                protected = r.take(r.u32())
                protected_keys.append((protected, [certificate() for _ in range(r.u32())]))
            elif tag == 2:
                trusted.append(certificate())
            else:
                raise fail(f"unknown entry tag {tag}")
        body_end = r.pos
        digest = r.take(20)
    except KeystoreError:
        raise
    except (ValueError, TypeError) as exc:
        raise fail(str(exc)) from None
    if password is not None:
        expected = hashlib.sha1(password.encode("utf-16-be") + b"Mighty Aphrodite" + data[:body_end]).digest()
        if not hmac.compare_digest(expected, digest):
            raise fail("Keystore was tampered with, or password was incorrect")
    keys: list[KeyMaterial] = []
    if key_password is not None:
        try:
            keys = [KeyMaterial(_jks_private_key(p, key_password), chain) for p, chain in protected_keys]
        except (ValueError, TypeError) as exc:
            raise fail(str(exc)) from None
    return keys, trusted


def principal_name(cert: x509.Certificate) -> str:
    """The subject as Java's X500Principal.getName() writes it (RFC 2253), which
    Kafka's default principal builder makes the SSL principal's name."""
    return cert.subject.rfc4514_string()
