"""SCRAM (RFC 5802) with SHA-256 and SHA-512 (RFC 7677), both ends, as Kafka speaks it.

Kafka's ScramSaslServer checks the client's proof against the stored key kept in
/config/users/<user> (salt, stored_key, server_key, iterations); the password itself is
never stored. The server nonce is fresh per exchange, so a client-final message
replayed on another connection carries the wrong nonce and fails. Kafka accepts no
channel binding (gs2 flag 'n' or 'y') and an authorization id only when it equals the
user name. The client half serves the broker's own inter-broker logins and our client.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from dataclasses import dataclass

HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MIN_ITERATIONS = {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}
_PRINTABLE = re.compile(r"[\x21-\x2b\x2d-\x7e]+\Z")


class ScramError(Exception):
    """The exchange failed; the message is for the log, never for the client."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def nonce() -> str:
    """Kafka's ScramFormatter.secureRandomString: 130 random bits written in base 36."""
    value = int.from_bytes(os.urandom(17), "big") >> 6
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while value:
        value, r = divmod(value, 36)
        out = digits[r] + out
    return out or "0"


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism]().name, password.encode("utf-8"), salt, iterations)


def _hmac(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, HASHES[mechanism]).digest()


def _h(mechanism: str, data: bytes) -> bytes:
    return HASHES[mechanism](data).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def encode_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def decode_name(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise ScramError("Invalid username: " + name)
    return name.replace("=2C", ",").replace("=3D", "=")


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def parse(cls, text: str) -> "ScramCredential":
        """The form admin_scram writes (Kafka's ScramCredentialUtils.credentialToString)."""
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        return cls(unb64(fields["salt"]), unb64(fields["stored_key"]), unb64(fields["server_key"]),
                   int(fields["iterations"]))


def _attributes(message: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"Invalid SCRAM message attribute: {part!r}")
        attrs.setdefault(part[0], part[2:])
    return attrs


class ScramServerExchange:
    """One server-side exchange: client-first -> server-first -> client-final -> server-final."""

    def __init__(self, mechanism: str) -> None:
        self.mechanism = mechanism
        self.username: str | None = None
        self._client_nonce = ""
        self._first_bare = ""
        self._gs2 = ""
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None

    def client_first(self, message: bytes) -> str:
        """Parse the client-first message; returns the user name whose credential is needed."""
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("Invalid SCRAM client first message: not UTF-8") from None
        m = re.match(r"([ny]|p=[^,]*),(a=[^,]*)?,(.*)\Z", text, re.S)
        if m is None:
            raise ScramError("Invalid SCRAM client first message")
        if m.group(1).startswith("p="):
            raise ScramError("Channel binding is not supported")
        self._gs2 = text[:m.start(3)]
        self._first_bare = m.group(3)
        attrs = _attributes(self._first_bare)
        if "m" in attrs:
            raise ScramError("Mandatory SCRAM extension not supported")
        if "n" not in attrs or "r" not in attrs or not _PRINTABLE.match(attrs["r"]):
            raise ScramError("Invalid SCRAM client first message")
        self.username = decode_name(attrs["n"])
        authzid = m.group(2)
        if authzid and decode_name(authzid[2:]) != self.username:
            raise ScramError("Authentication failed: Client requested an authorization id that is different "
                             "from username")
        self._client_nonce = attrs["r"]
        return self.username

    def server_first(self, credential: ScramCredential) -> bytes:
        self._credential = credential
        self._nonce = self._client_nonce + nonce()
        self._server_first = f"r={self._nonce},s={b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode("ascii")

    def client_final(self, message: bytes) -> bytes:
        """Check the proof; returns the server-final message."""
        if self._credential is None:
            raise ScramError("Unexpected SCRAM client final message")
        try:
            text = message.decode("ascii")
            without_proof, _, proof_text = text.rpartition(",p=")
            attrs = _attributes(without_proof)
            proof = unb64(proof_text)
            binding = unb64(attrs["c"]).decode("ascii")
        except (UnicodeDecodeError, ValueError, KeyError, ScramError):
            raise ScramError("Invalid SCRAM client final message") from None
        # librdkafka before 2.6.1 (kcat on Debian 12 among them) sends the client nonce once
        # more in front; Kafka (3.8.1's CVE-2024-56128 fix) accepts a nonce that ends with the
        # server's, as here. The proof covers the server-first message, so a replayed
        # client-final message fails either way.
        if not attrs.get("r", "").endswith(self._nonce):
            raise ScramError("Invalid client nonce in the final client message.")
        if binding != self._gs2:
            raise ScramError("Invalid channel binding in the final client message.")
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode("utf-8")
        cred = self._credential
        signature = _hmac(self.mechanism, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("Invalid client credentials")
        client_key = _xor(proof, signature)
        if not hmac.compare_digest(_h(self.mechanism, client_key), cred.stored_key):
            raise ScramError("Invalid client credentials")
        self._credential = None   # an exchange completes once
        return ("v=" + b64(_hmac(self.mechanism, cred.server_key, auth_message))).encode("ascii")


class ScramClientExchange:
    """The client's side, for our client and the broker's inter-broker logins."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism, self.username, self.password = mechanism, username, password
        self._nonce = nonce()
        self._first_bare = f"n={encode_name(username)},r={self._nonce}"
        self._auth_message = b""
        self._salted = b""

    def first(self) -> bytes:
        return ("n,," + self._first_bare).encode("utf-8")

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8")
        attrs = _attributes(text)
        if not attrs.get("r", "").startswith(self._nonce) or "s" not in attrs or "i" not in attrs:
            raise ScramError("Invalid server first message")
        iterations = int(attrs["i"])
        if iterations < MIN_ITERATIONS[self.mechanism]:
            raise ScramError(f"Requested iterations {iterations} is less than the minimum")
        self._salted = salted_password(self.mechanism, self.password, unb64(attrs["s"]), iterations)
        without_proof = f"c={b64(b'n,,')},r={attrs['r']}"
        self._auth_message = f"{self._first_bare},{text},{without_proof}".encode("utf-8")
        client_key = _hmac(self.mechanism, self._salted, b"Client Key")
        signature = _hmac(self.mechanism, _h(self.mechanism, client_key), self._auth_message)
        return f"{without_proof},p={b64(_xor(client_key, signature))}".encode("ascii")

    def verify(self, server_final: bytes) -> None:
        attrs = _attributes(server_final.decode("utf-8"))
        if "e" in attrs:
            raise ScramError(f"Sasl authentication using {self.mechanism} failed with error: {attrs['e']}")
        server_key = _hmac(self.mechanism, self._salted, b"Server Key")
        expected = _hmac(self.mechanism, server_key, self._auth_message)
        if not hmac.compare_digest(unb64(attrs.get("v", "")), expected):
            raise ScramError("Invalid server signature in server final message")
