"""SCRAM credentials in ZooKeeper, the admin manager's part Kafka 2.8 keeps in ZkAdminManager.

Kafka 2.8 stores SCRAM credentials in ZooKeeper whether or not any listener speaks
SASL/SCRAM: a user's znode /config/users/<user> holds, next to its quotas, one entry
per mechanism, "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>". The
client sends only the salted password (the password never leaves it); the broker
derives the stored and server keys from it (RFC 5802) and writes the entry with a
change notification, so kafka-configs.sh --describe and a Kafka broker reading the
same ZooKeeper see the same credentials. Describing reports mechanisms and
iterations, never keys. Validation, result order and sentences follow Kafka 2.8.

Calls take plain values and answer with plain per-user results; a ZooKeeper failure
that is not one user's is raised, for the caller to answer as Kafka does. This broker
authenticates nobody (PLAINTEXT only): the credentials are kept for the day it does,
and for clusters that share the ZooKeeper.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from kafkalike.broker.admin_quotas import UNEXPECTED, desanitize, fetch_entity, sanitize
from kafkalike.protocol.errors import ErrorCode
from kafkalike.zkdata.znodes import ConfigType

if TYPE_CHECKING:
    from kafkalike.zkdata import KafkaZkClient

# Kafka's ScramMechanism type -> (name in the znode, hash); 0 is UNKNOWN.
MECHANISMS = {1: ("SCRAM-SHA-256", hashlib.sha256), 2: ("SCRAM-SHA-512", hashlib.sha512)}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384

EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW, TOO_MANY = "Too few iterations", "Too many iterations"


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: int
    iterations: int


@dataclass
class UserScramCredentials:
    """A user's credentials as described, or why they could not be."""

    user: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    credentials: list[ScramCredentialInfo] = field(default_factory=list)


@dataclass(frozen=True)
class ScramUpsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class ScramDeletion:
    user: str
    mechanism: int


@dataclass(frozen=True)
class ScramAlterationResult:
    user: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


def credential_string(mechanism: int, salt: bytes, salted_password: bytes, iterations: int) -> str:
    """Kafka's ScramCredentialUtils.credentialToString of ScramFormatter.generateCredential."""
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    stored_key = digest(client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
    return f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},iterations={iterations}"


def credential_iterations(text: str) -> int:
    """The iteration count of a stored credential; ValueError if it is not one."""
    fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
    if not {"salt", "stored_key", "server_key", "iterations"} <= fields.keys():
        raise ValueError("Credentials not valid")
    for key in ("salt", "stored_key", "server_key"):
        base64.b64decode(fields[key], validate=True)
    return int(fields["iterations"])


# -- describe --------------------------------------------------------------------------


async def describe_user_scram_credentials(zk: KafkaZkClient, users: Sequence[str] | None
                                          ) -> list[UserScramCredentials]:
    """Every credentialed user, by name, when users is None or empty; else the asked-for
    users in the order first asked, each with its own error."""
    results: dict[str, UserScramCredentials] = {}
    if not users:
        for name in await zk.get_entity_names(ConfigType.USER):
            _add_if_credentialed(results, desanitize(name), await fetch_entity(zk, ConfigType.USER, name))
        return [results[u] for u in sorted(results)]
    counts = Counter(users)
    for user in users:
        if user in results:
            continue
        if user == "":
            results[user] = UserScramCredentials(user, ErrorCode.RESOURCE_NOT_FOUND, EMPTY_USER)
        elif counts[user] > 1:
            results[user] = UserScramCredentials(
                user, ErrorCode.DUPLICATE_RESOURCE,
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}")
        else:
            props = await fetch_entity(zk, ConfigType.USER, sanitize(user))
            _add_if_credentialed(results, user, props, explicit=True)
    return [results[u] for u in dict.fromkeys(users)]


def _add_if_credentialed(results: dict[str, UserScramCredentials], user: str, props: dict[str, str],
                         explicit: bool = False) -> None:
    present = [(t, name) for t, (name, _) in sorted(MECHANISMS.items()) if name in props]
    if present:
        try:
            infos = [ScramCredentialInfo(t, credential_iterations(props[n])) for t, n in present]
            results[user] = UserScramCredentials(user, credentials=infos)
        except ValueError:
            results[user] = UserScramCredentials(user, ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED)
    elif explicit:
        results[user] = UserScramCredentials(
            user, ErrorCode.RESOURCE_NOT_FOUND, f"Attempt to describe a user credential that does not exist: {user}")


# -- alter -----------------------------------------------------------------------------


async def alter_user_scram_credentials(zk: KafkaZkClient, upsertions: Sequence[ScramUpsertion],
                                       deletions: Sequence[ScramDeletion]) -> list[ScramAlterationResult]:
    """Failures first (illegal requests, duplicates, missing deletions), then the users
    written, as Kafka orders them; a user fails or changes as a whole."""
    results: list[ScramAlterationResult] = []

    def fail(user: str, code: ErrorCode, message: str) -> None:
        results.append(ScramAlterationResult(user, code, message))

    # Requests that are wrong in themselves fail the whole user.
    illegal: dict[str, str] = {}
    for d in deletions:
        if d.user == "" or d.mechanism not in MECHANISMS:
            illegal[d.user] = EMPTY_USER if d.user == "" else UNKNOWN_MECHANISM
    for u in upsertions:
        if u.user == "":
            illegal[u.user] = EMPTY_USER
        elif u.mechanism not in MECHANISMS:
            illegal[u.user] = UNKNOWN_MECHANISM
        elif not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
            illegal[u.user] = TOO_MANY if u.iterations > MAX_ITERATIONS else TOO_FEW
    for user, message in illegal.items():
        fail(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM if message == UNKNOWN_MECHANISM
             else ErrorCode.UNACCEPTABLE_CREDENTIAL, message)

    pairs = ([(u.user, u.mechanism) for u in upsertions if u.user not in illegal]
             + [(d.user, d.mechanism) for d in deletions if d.user not in illegal])
    twice = list(dict.fromkeys(user for (user, _), n in Counter(pairs).items() if n > 1))
    for user in twice:
        fail(user, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
    candidates = list(dict.fromkeys(user for user, _ in pairs if user not in twice))

    stored = {user: dict(await fetch_entity(zk, ConfigType.USER, sanitize(user))) for user in candidates}
    missing = list(dict.fromkeys(d.user for d in deletions
                                 if d.user in stored and MECHANISMS[d.mechanism][0] not in stored[d.user]))
    for user in missing:
        fail(user, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")

    to_alter = [user for user in candidates if user not in missing]
    for d in deletions:
        if d.user in to_alter:
            stored[d.user].pop(MECHANISMS[d.mechanism][0], None)
    for u in upsertions:
        if u.user in to_alter:
            stored[u.user][MECHANISMS[u.mechanism][0]] = credential_string(
                u.mechanism, u.salt, u.salted_password, u.iterations)
    written = []
    for user in to_alter:
        try:
            await zk.change_entity_config(ConfigType.USER, sanitize(user), stored[user])
            written.append(user)
        except Exception:
            fail(user, ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED)
    results.extend(ScramAlterationResult(user) for user in written)
    return results
