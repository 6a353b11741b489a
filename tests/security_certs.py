"""Certificates the security tests make for themselves: a CA, a broker certificate (SAN
127.0.0.1 and localhost), a client certificate and one from a CA nobody trusts, written as
PEM and PKCS12 files, plus a broker's listener settings for every security protocol."""
from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

PASSWORD = "store-secret"
CLIENT_DN = "CN=alice-client,O=kafkalike-tests"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkalike-tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: x509.Name, key, issuer: x509.Name, issuer_key, *, ca: bool = False, sans=()):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@dataclass
class Pki:
    dir: Path

    def path(self, name: str) -> str:
        return str(self.dir / name)


def make_pki(directory: Path) -> Pki:
    """ca.pem; broker.p12 / broker.pem (key+chain); client.p12 / client.pem; rogue.pem (untrusted
    CA's client); truststore.p12 (the CA); broker-renewed, broker-renamed, broker-fewer-names
    and broker-rogue (.p12 and .pem) for keystore updates."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("kafkalike-test-ca")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)  # noqa: E731
    (directory / "ca.pem").write_bytes(pem(ca))
    enc = serialization.BestAvailableEncryption(PASSWORD.encode())
    (directory / "truststore.p12").write_bytes(
        pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(ca, b"ca")], enc))

    def leaf(stem: str, cn: str, sans, issuer=ca, issuer_name=ca_name, issuer_key=ca_key):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _cert(_name(cn), key, issuer_name, issuer_key, sans=sans)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)
        (directory / f"{stem}.pem").write_bytes(key_pem + pem(cert) + pem(issuer))
        (directory / f"{stem}-cert.pem").write_bytes(pem(cert))
        (directory / f"{stem}-key.pem").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        (directory / f"{stem}.p12").write_bytes(
            pkcs12.serialize_key_and_certificates(stem.encode(), key, cert, [issuer], enc))

    broker_sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    leaf("broker", "localhost", broker_sans)
    leaf("client", "alice-client", [])
    rogue_key = ec.generate_private_key(ec.SECP256R1())
    rogue_name = _name("rogue-ca")
    rogue_ca = _cert(rogue_name, rogue_key, rogue_name, rogue_key, ca=True)
    leaf("rogue", "mallory", [], rogue_ca, rogue_name, rogue_key)
    # For keystore updates: the broker's certificate renewed, one naming another host, one
    # without its IP address, and one with the broker's names from the CA nobody trusts.
    leaf("broker-renewed", "localhost", broker_sans)
    leaf("broker-renamed", "elsewhere", broker_sans)
    leaf("broker-fewer-names", "localhost", broker_sans[:1])
    leaf("broker-rogue", "localhost", broker_sans, rogue_ca, rogue_name, rogue_key)
    return Pki(directory)


def make_jks(pki: Pki) -> None:
    """broker.jks and truststore.jks, made by Java's keytool from the PKCS12 files (keytool
    comes with the Java that ZooKeeper needs); a missing keytool fails the test."""
    keytool = shutil.which("keytool")
    assert keytool, "keytool not found: ./scripts/setup.sh installs Java (zk/install.sh)"
    subprocess.run([keytool, "-importkeystore", "-srckeystore", pki.path("broker.p12"), "-srcstoretype", "PKCS12",
                    "-srcstorepass", PASSWORD, "-destkeystore", pki.path("broker.jks"), "-deststoretype", "JKS",
                    "-deststorepass", PASSWORD, "-destkeypass", PASSWORD, "-noprompt"],
                   check=True, capture_output=True, timeout=60)
    subprocess.run([keytool, "-importcert", "-file", pki.path("ca.pem"), "-alias", "ca", "-keystore",
                    pki.path("truststore.jks"), "-storetype", "JKS", "-storepass", PASSWORD, "-noprompt"],
                   check=True, capture_output=True, timeout=60)


JAAS_PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
JAAS_SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
              'password="admin-secret";')
