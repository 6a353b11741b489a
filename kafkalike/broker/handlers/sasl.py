"""SaslHandshake (17) and SaslAuthenticate (36) on a PLAINTEXT listener.

On a SASL listener Kafka's authenticator consumes these two before any request
reaches the API layer; what reaches the API layer is a client talking SASL on a
connection that needs none (PLAINTEXT, the only kind this broker listens on), or one
already authenticated. Kafka 2.8 answers both with ILLEGAL_SASL_STATE: the handshake
with an empty mechanism list (the enabled list is the authenticator's answer to an
unknown mechanism, UNSUPPORTED_SASL_MECHANISM, which never happens here), and
SaslAuthenticate with the sentence below and no bytes. Clients then report that the
broker does not expect SASL, which is the truth.
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


@handler(17, error_response=_handshake_error)
def handle_sasl_handshake(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return _handshake_error(request, ctx.version, ErrorCode.ILLEGAL_SASL_STATE)


@handler(36, error_response=_authenticate_error)
def handle_sasl_authenticate(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return _authenticate_error(request, ctx.version, ErrorCode.ILLEGAL_SASL_STATE, AUTHENTICATE_MESSAGE)
