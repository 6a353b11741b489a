"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51).

Kafka 2.8 stores SCRAM credentials in ZooKeeper whether or not any listener speaks
SASL/SCRAM: a user's znode /config/users/<user> holds, next to its quotas, one entry
per mechanism, "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>". The
client sends only the salted password (the password never leaves it); the broker
derives the stored and server keys from it (RFC 5802) and writes the entry with a
change notification, so kafka-configs.sh --describe and a Kafka broker reading the
same ZooKeeper see the same credentials. Describing reports mechanisms and
iterations, never keys. Validation, result order and sentences follow Kafka 2.8's
ZkAdminManager; only the controller takes alterations, as there.

This broker authenticates nobody (PLAINTEXT only): the credentials are kept for the
day it does, and for clusters that share the ZooKeeper.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
from collections import Counter

from twisted.internet import defer

from kafkalike.broker.handlers.quotas import UNEXPECTED, desanitize, fetch_entity, sanitize
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_user_scram_credentials import (AlterUserScramCredentialsRequest,
                                                                      AlterUserScramCredentialsResponse)
from kafkalike.protocol.messages.describe_user_scram_credentials import (DescribeUserScramCredentialsRequest,
                                                                         DescribeUserScramCredentialsResponse)
from kafkalike.zkdata.znodes import ConfigType

# Mechanism type on the wire -> (name in the znode, hash); 0 is UNKNOWN.
MECHANISMS = {1: ("SCRAM-SHA-256", hashlib.sha256), 2: ("SCRAM-SHA-512", hashlib.sha512)}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384

EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW, TOO_MANY = "Too few iterations", "Too many iterations"
NOT_CONTROLLER = "This is not the correct controller for this cluster."

_Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_Info = DescribeUserScramCredentialsResponse.CredentialInfo
_AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


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


# -- DescribeUserScramCredentials ------------------------------------------------------


def _describe_error(request, version: int, code: ErrorCode,
                    message: str | None = UNEXPECTED) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(error_code=int(code), error_message=message, results=[])


@handler(50, error_response=_describe_error)
def handle_describe_user_scram_credentials(ctx: RequestContext, request: DescribeUserScramCredentialsRequest):
    return defer.ensureDeferred(describe_user_scram_credentials(ctx.zk, request))


async def describe_user_scram_credentials(zk, request) -> DescribeUserScramCredentialsResponse:
    users = None if request.users is None else [u.name for u in request.users]
    results: dict[str, _Result] = {}
    try:
        if not users:
            for name in await zk.get_entity_names(ConfigType.USER):
                _add_if_credentialed(results, desanitize(name), await fetch_entity(zk, ConfigType.USER, name))
            ordered = [results[u] for u in sorted(results)]
        else:
            counts = Counter(users)
            for user in users:
                if user in results:
                    continue
                if user == "":
                    results[user] = _Result(user=user, error_code=int(ErrorCode.RESOURCE_NOT_FOUND),
                                            error_message=EMPTY_USER, credential_infos=[])
                elif counts[user] > 1:
                    results[user] = _Result(
                        user=user, error_code=int(ErrorCode.DUPLICATE_RESOURCE), credential_infos=[],
                        error_message=f"Cannot describe SCRAM credentials for the same user twice in a "
                                      f"single request: {user}")
                else:
                    props = await fetch_entity(zk, ConfigType.USER, sanitize(user))
                    _add_if_credentialed(results, user, props, explicit=True)
            ordered = [results[u] for u in dict.fromkeys(users)]
    except Exception:
        return _describe_error(request, 0, ErrorCode.UNKNOWN_SERVER_ERROR)
    return DescribeUserScramCredentialsResponse(error_code=0, error_message=None, results=ordered)


def _add_if_credentialed(results: dict, user: str, props: dict[str, str], explicit: bool = False) -> None:
    present = [(t, name) for t, (name, _) in sorted(MECHANISMS.items()) if name in props]
    result = _Result(user=user, error_code=0, error_message=None, credential_infos=[])
    if present:
        try:
            result.credential_infos = [_Info(mechanism=t, iterations=credential_iterations(props[n]))
                                       for t, n in present]
        except ValueError:
            result.error_code, result.error_message = int(ErrorCode.UNKNOWN_SERVER_ERROR), UNEXPECTED
            result.credential_infos = []
        results[user] = result
    elif explicit:
        result.error_code = int(ErrorCode.RESOURCE_NOT_FOUND)
        result.error_message = f"Attempt to describe a user credential that does not exist: {user}"
        results[user] = result


# -- AlterUserScramCredentials ---------------------------------------------------------


def _alter_error(request, version: int, code: ErrorCode,
                 message: str | None = UNEXPECTED) -> AlterUserScramCredentialsResponse:
    if request is None:
        return AlterUserScramCredentialsResponse(results=[])
    users = sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
    return AlterUserScramCredentialsResponse(results=[
        _AlterResult(user=u, error_code=int(code), error_message=message) for u in users])


@handler(51, error_response=_alter_error)
def handle_alter_user_scram_credentials(ctx: RequestContext, request: AlterUserScramCredentialsRequest):
    if not ctx.controller.active:
        return _alter_error(request, ctx.version, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER)
    return defer.ensureDeferred(_alter_or_fail(ctx.zk, request))


async def _alter_or_fail(zk, request) -> AlterUserScramCredentialsResponse:
    try:
        return await alter_user_scram_credentials(zk, request)
    except Exception:
        return _alter_error(request, 0, ErrorCode.UNKNOWN_SERVER_ERROR)


async def alter_user_scram_credentials(zk, request) -> AlterUserScramCredentialsResponse:
    upsertions, deletions = request.upsertions, request.deletions
    results: list = []

    def fail(user: str, code: ErrorCode, message: str) -> None:
        results.append(_AlterResult(user=user, error_code=int(code), error_message=message))

    # Requests that are wrong in themselves fail the whole user.
    illegal: dict[str, str] = {}
    for d in deletions:
        if d.name == "" or d.mechanism not in MECHANISMS:
            illegal[d.name] = EMPTY_USER if d.name == "" else UNKNOWN_MECHANISM
    for u in upsertions:
        if u.name == "":
            illegal[u.name] = EMPTY_USER
        elif u.mechanism not in MECHANISMS:
            illegal[u.name] = UNKNOWN_MECHANISM
        elif not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
            illegal[u.name] = TOO_MANY if u.iterations > MAX_ITERATIONS else TOO_FEW
    for user, message in illegal.items():
        fail(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM if message == UNKNOWN_MECHANISM
             else ErrorCode.UNACCEPTABLE_CREDENTIAL, message)

    pairs = ([(u.name, u.mechanism) for u in upsertions if u.name not in illegal]
             + [(d.name, d.mechanism) for d in deletions if d.name not in illegal])
    twice = list(dict.fromkeys(user for (user, _), n in Counter(pairs).items() if n > 1))
    for user in twice:
        fail(user, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
    candidates = list(dict.fromkeys(user for user, _ in pairs if user not in twice))

    stored = {user: dict(await fetch_entity(zk, ConfigType.USER, sanitize(user))) for user in candidates}
    missing = list(dict.fromkeys(d.name for d in deletions
                                 if d.name in stored and MECHANISMS[d.mechanism][0] not in stored[d.name]))
    for user in missing:
        fail(user, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")

    to_alter = [user for user in candidates if user not in missing]
    for d in deletions:
        if d.name in to_alter:
            stored[d.name].pop(MECHANISMS[d.mechanism][0], None)
    for u in upsertions:
        if u.name in to_alter:
            stored[u.name][MECHANISMS[u.mechanism][0]] = credential_string(
                u.mechanism, u.salt, u.salted_password, u.iterations)
    written = []
    for user in to_alter:
        try:
            await zk.change_entity_config(ConfigType.USER, sanitize(user), stored[user])
            written.append(user)
        except Exception:
            fail(user, ErrorCode.UNKNOWN_SERVER_ERROR, UNEXPECTED)
    results.extend(_AlterResult(user=user, error_code=0, error_message=None) for user in written)
    return AlterUserScramCredentialsResponse(results=results)
