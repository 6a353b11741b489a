"""The server side of SASL on one connection: Kafka's SaslServerAuthenticator.

States, as Kafka 2.8 keeps them: before the handshake a client may ask ApiVersions (once)
and must then send SaslHandshake; any other request closes the connection. A v0
handshake is followed by raw SASL tokens, each framed by its size alone (no Kafka
header); a v1 handshake by SaslAuthenticate requests. PLAIN completes in one token,
SCRAM in two. A failed login is answered (SASL_AUTHENTICATION_FAILED with Kafka's
message, or UNSUPPORTED_SASL_MECHANISM), logged as Kafka's Selector logs it (failures.py),
and the connection is closed only after connection.failed.authentication.delay.ms,
reading nothing meanwhile. With
connections.max.reauth.ms set, the session lifetime goes back in the last
SaslAuthenticate answer (KIP-368) and a later SaslHandshake on the live connection starts a
re-authentication, which must keep the mechanism and the principal.

SCRAM credentials come from the server's ScramCredentialCache (credentials.py), fed by the
config change notifications as Kafka's CredentialCache; `zookeeper_credentials` reads
/config/users/<user> per login (kazoo's async API) where no cache is given.
"""
from __future__ import annotations

import hmac
import logging
import time
from enum import Enum
from typing import TYPE_CHECKING, Callable

from twisted.internet import defer

from kafkalike.broker.admin_quotas import fetch_entity, sanitize
from kafkalike.broker.security.failures import failed_authentication
from kafkalike.common.scram import ScramCredential, ScramError, ScramServerExchange
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeResponse
from kafkalike.zkdata.znodes import ConfigType

if TYPE_CHECKING:
    from kafkalike.broker.security.listener import ListenerSecurity

log = logging.getLogger("org.apache.kafka.common.security.authenticator.SaslServerAuthenticator")

PLAIN_FAILED = "Authentication failed: Invalid username or password"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


class AuthenticationFailed(Exception):
    """A login refused; `client_message` is what the client is told."""

    def __init__(self, client_message: str, detail: str | None = None) -> None:
        super().__init__(detail or client_message)
        self.client_message = client_message


class State(Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class SaslServerAuthenticator:
    def __init__(self, security: ListenerSecurity, fetch_credentials: Callable[[str], defer.Deferred],
                 peer: str, log_prefix: str = "") -> None:
        self.security = security
        self.fetch_credentials = fetch_credentials   # user -> Deferred[dict of the user znode]
        self.peer = peer
        self.log_prefix = log_prefix        # the SocketServer's, which Kafka's Selector logs failures with
        self.state = State.HANDSHAKE_OR_VERSIONS
        self.raw_tokens = False             # after a v0 handshake
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.session_expires: float | None = None   # monotonic seconds
        self._reauthenticating = False
        self._previous_principal: str | None = None
        self._exchange: ScramServerExchange | None = None
        self.client_supports_reauth = False
        self._bad_mechanism: str | None = None     # a re-authentication that asked for another mechanism

    # -- what the network layer asks ---------------------------------------------------

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    def allows(self, api_key: int) -> bool:
        """Whether a request of this api key may be handled in the current state."""
        if self.state is State.HANDSHAKE_OR_VERSIONS:
            return api_key in (17, 18)
        if self.state is State.HANDSHAKE:
            return api_key == 17
        if self.state is State.AUTHENTICATE:
            return api_key == 36 and not self.raw_tokens
        return self.state is State.COMPLETE

    def api_versions_answered(self) -> None:
        if self.state is State.HANDSHAKE_OR_VERSIONS:
            self.state = State.HANDSHAKE

    def session_expired(self, now: float) -> bool:
        return self.session_expires is not None and now > self.session_expires

    def wants_reauthentication(self, api_key: int) -> bool:
        """A SaslHandshake on an authenticated connection starts re-authentication (KIP-368)."""
        return (self.state is State.COMPLETE and api_key == 17 and self.security.reauth_ms_for(self.mechanism) > 0
                and self.client_supports_reauth)

    # -- handshake ---------------------------------------------------------------------

    def handshake(self, mechanism: str, version: int) -> tuple[SaslHandshakeResponse, bool]:
        """The answer and whether the connection must be closed after it."""
        if self.state is State.COMPLETE:   # a re-authentication begins
            self._reauthenticating = True
            self._previous_principal = self.principal
            self.state = State.HANDSHAKE
        enabled = list(self.security.mechanisms)
        if mechanism not in enabled:
            failed_authentication(self.log_prefix, self.peer, f"Unsupported SASL mechanism {mechanism}",
                                  reauthentication=self._reauthenticating)
            self.state = State.FAILED
            return SaslHandshakeResponse(error_code=int(ErrorCode.UNSUPPORTED_SASL_MECHANISM),
                                         mechanisms=enabled), True
        if self._reauthenticating and mechanism != self.mechanism:
            # Kafka's REAUTH_BAD_MECHANISM: the handshake is answered as usual, and the next
            # token fails the re-authentication (no answer, the connection closed).
            self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                   f"re-authentication of mechanism '{self.mechanism}'")
            self.raw_tokens = version == 0
            self.state = State.AUTHENTICATE
            return SaslHandshakeResponse(error_code=0, mechanisms=enabled), False
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        self._exchange = None
        self.state = State.AUTHENTICATE
        return SaslHandshakeResponse(error_code=0, mechanisms=enabled), False

    # -- tokens ------------------------------------------------------------------------

    def authenticate(self, token: bytes, version: int) -> defer.Deferred:
        """Deferred[(SaslAuthenticateResponse, close_after)] for a SaslAuthenticate request;
        (None, True) when Kafka closes the connection without an answer."""
        if version > 0:
            self.client_supports_reauth = True
        if self._bad_mechanism is not None:
            self.state = State.FAILED
            failed_authentication(self.log_prefix, self.peer, self._bad_mechanism, reauthentication=True)
            return defer.succeed((None, True))
        d = self.evaluate(token)

        def ok(reply: bytes | None):
            lifetime = self._session_lifetime_ms() if self.complete else 0
            return SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=reply or b"",
                                            session_lifetime_ms=lifetime), False

        def failed(failure):
            failure.trap(AuthenticationFailed)
            return SaslAuthenticateResponse(error_code=int(ErrorCode.SASL_AUTHENTICATION_FAILED),
                                            error_message=failure.value.client_message, auth_bytes=b"",
                                            session_lifetime_ms=0), True

        return d.addCallbacks(ok, failed)

    def evaluate(self, token: bytes) -> defer.Deferred:
        """Deferred[bytes | None]: the server's next token; fails with AuthenticationFailed."""
        if self._bad_mechanism is not None:      # raw tokens after a v0 re-authentication handshake
            self.state = State.FAILED
            failed_authentication(self.log_prefix, self.peer, self._bad_mechanism, reauthentication=True)
            return defer.fail(AuthenticationFailed(self._bad_mechanism))
        try:
            if self.mechanism == "PLAIN":
                return defer.succeed(self._plain(token))
            if self.mechanism in SCRAM_MECHANISMS:
                return self._scram(token)
            raise AuthenticationFailed(self._generic_failure(), f"Unsupported mechanism {self.mechanism}")
        except AuthenticationFailed as exc:
            return defer.fail(self._fail(exc))

    def _fail(self, exc: AuthenticationFailed) -> AuthenticationFailed:
        """Logged as Kafka logs it: the client's message by the Selector at INFO, the
        detail (which user, what was wrong) by this authenticator at DEBUG."""
        self.state = State.FAILED
        what = "re-authentication" if self._reauthenticating else "authentication"
        log.debug("Failed during %s: %s", what, exc)
        failed_authentication(self.log_prefix, self.peer, exc.client_message, reauthentication=self._reauthenticating)
        return exc

    def _generic_failure(self) -> str:
        what = "re-authentication" if self._reauthenticating else "authentication"
        return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {self.mechanism}"

    def _succeed(self, user: str) -> None:
        principal = f"User:{user}"
        if self._reauthenticating and principal != self._previous_principal:
            # KafkaPrincipal type and name joined by a dot, as ReauthInfo.ensurePrincipalUnchanged formats them.
            raise AuthenticationFailed("Cannot change principals during re-authentication from "
                                       f"{self._previous_principal.replace(':', '.', 1)}: {principal.replace(':', '.', 1)}")
        self.principal = principal
        self.state = State.COMPLETE
        self._reauthenticating = False
        self.raw_tokens = False
        lifetime = self._session_lifetime_ms()
        if lifetime > 0:
            self.session_expires = time.monotonic() + lifetime / 1000

    def _session_lifetime_ms(self) -> int:
        return max(self.security.reauth_ms_for(self.mechanism), 0)

    # PlainSaslServer: authzid NUL authcid NUL password, checked against the JAAS users.
    def _plain(self, token: bytes) -> bytes:
        try:
            parts = token.decode("utf-8").split("\x00")
        except UnicodeDecodeError:
            raise AuthenticationFailed(self._generic_failure(), "Invalid SASL/PLAIN response: not UTF-8") from None
        if len(parts) != 3:
            raise AuthenticationFailed(self._generic_failure(),
                                       f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self.security.plain_users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed(PLAIN_FAILED, f"{PLAIN_FAILED} (user {username})")
        if authzid and authzid != username:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        self._succeed(username)
        return b""

    def _scram(self, token: bytes) -> defer.Deferred:
        if self._exchange is None:
            exchange = self._exchange = ScramServerExchange(self.mechanism)
            try:
                user = exchange.client_first(token)
            except ScramError as exc:
                raise AuthenticationFailed(self._generic_failure(), str(exc)) from None
            d = self.fetch_credentials(user)

            def found(props: dict):
                text = props.get(self.mechanism)
                if text is None:
                    raise AuthenticationFailed(self._generic_failure(),
                                               f"Authentication failed: Invalid user credentials (user {user})")
                try:
                    credential = ScramCredential.parse(text)
                except (KeyError, ValueError):
                    raise AuthenticationFailed(self._generic_failure(), f"Unreadable credential of user {user}") \
                        from None
                if self.state is not State.AUTHENTICATE:
                    raise AuthenticationFailed(self._generic_failure(), "Connection state changed")
                return exchange.server_first(credential)

            def lookup_failed(failure):
                if failure.check(AuthenticationFailed):
                    raise self._fail(failure.value)
                raise self._fail(AuthenticationFailed(self._generic_failure(),
                                                      f"Credential lookup failed: {failure.getErrorMessage()}"))
            return d.addCallback(found).addErrback(lookup_failed)
        exchange = self._exchange
        try:
            reply = exchange.client_final(token)
        except ScramError as exc:
            raise AuthenticationFailed(self._generic_failure(), str(exc)) from None
        self._succeed(exchange.username)
        return defer.succeed(reply)


def zookeeper_credentials(zk) -> Callable[[str], defer.Deferred]:
    """The user znode's entries, read with kazoo's async API through the broker's client."""
    def fetch(user: str) -> defer.Deferred:
        return defer.ensureDeferred(fetch_entity(zk, ConfigType.USER, sanitize(user)))
    return fetch
