"""SaslHandshake (17) and SaslAuthenticate (36).

On a SASL listener they go to the connection's authenticator
(broker/security/authenticator.py): the login, and with connections.max.reauth.ms a
re-authentication (KIP-368). A failed login is answered, then the connection is closed
after connection.failed.authentication.delay.ms.

Otherwise (a PLAINTEXT or SSL listener, or a SASL connection already authenticated and
not re-authenticating) Kafka 2.8's KafkaApis answers both with ILLEGAL_SASL_STATE: the
handshake with an empty mechanism list, SaslAuthenticate with the sentence below and no
bytes. Clients then report that the broker does not expect SASL, which is the truth.
"""
from __future__ import annotations

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

AUTHENTICATE_MESSAGE = "SaslAuthenticate request received after successful authentication"


def _handshake_error(request, version: int, code: ErrorCode) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=int(code), mechanisms=[])


def _authenticate_error(request, version: int, code: ErrorCode,
                        message: str | None = None) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=int(code), error_message=message, auth_bytes=b"",
                                    session_lifetime_ms=0)


def _authenticator(ctx: RequestContext):
    return getattr(ctx.connection, "authenticator", None)


@handler(17, error_response=_handshake_error)
def handle_sasl_handshake(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    auth = _authenticator(ctx)
    if auth is None or (auth.complete and not auth.wants_reauthentication(17)):
        return _handshake_error(request, ctx.version, ErrorCode.ILLEGAL_SASL_STATE)
    response, close = auth.handshake(request.mechanism, ctx.version)
    if close:
        ctx.connection.close_after_failed_authentication()
    return response


@handler(36, error_response=_authenticate_error)
def handle_sasl_authenticate(ctx: RequestContext, request: SaslAuthenticateRequest):
    auth = _authenticator(ctx)
    if auth is None or auth.complete:
        return _authenticate_error(request, ctx.version, ErrorCode.ILLEGAL_SASL_STATE, AUTHENTICATE_MESSAGE)

    def answer(result):
        response, close = result
        if response is None:          # Kafka answers nothing and closes at once (REAUTH_BAD_MECHANISM)
            ctx.connection.transport.loseConnection()
        elif close:
            ctx.connection.close_after_failed_authentication()
        return response
    return auth.authenticate(bytes(request.auth_bytes), ctx.version).addCallback(answer)
