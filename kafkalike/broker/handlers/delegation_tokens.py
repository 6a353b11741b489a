"""CreateDelegationToken (38), Renew (39), Expire (40), DescribeDelegationToken (41).

This broker has no delegation token support (no `delegation.token.master.key`), and
Kafka 2.8 checks the connection before the feature (KafkaApis.allowTokenRequests): tokens
may only be requested over an authenticated channel, so on PLAINTEXT, and on SSL without
a client certificate (principal User:ANONYMOUS), every token request is
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED. Over SASL, or SSL with a client certificate, the
request is allowed and meets the disabled feature instead: DELEGATION_TOKEN_AUTH_DISABLED
(after CreateDelegationToken's check that every renewer is a User). The failed create
still names its owner, the connection's principal (User:ANONYMOUS without a login).
Timestamps that cannot exist are -1, as Kafka writes them.
"""
from __future__ import annotations

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.create_delegation_token import (CreateDelegationTokenRequest,
                                                                 CreateDelegationTokenResponse)
from kafkalike.protocol.messages.describe_delegation_token import (DescribeDelegationTokenRequest,
                                                                   DescribeDelegationTokenResponse)
from kafkalike.protocol.messages.expire_delegation_token import (ExpireDelegationTokenRequest,
                                                                 ExpireDelegationTokenResponse)
from kafkalike.protocol.messages.renew_delegation_token import (RenewDelegationTokenRequest,
                                                                RenewDelegationTokenResponse)

ANONYMOUS = ("User", "ANONYMOUS")
NO_TIMESTAMP = -1


def listener_protocol(ctx: RequestContext) -> str:
    """The security protocol of the listener the request came in on."""
    listener = ctx.listener_name
    config = ctx.config
    mapping = config.listener_security_protocol_map if config is not None else {}
    return mapping.get(listener, listener)


def _token_error(ctx: RequestContext) -> ErrorCode:
    protocol = listener_protocol(ctx)
    if protocol == "PLAINTEXT" or (protocol == "SSL" and ctx.principal == "User:ANONYMOUS"):
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


def _create_error(request, version: int, code: ErrorCode,
                  owner: tuple[str, str] = ANONYMOUS) -> CreateDelegationTokenResponse:
    return CreateDelegationTokenResponse(
        error_code=int(code), principal_type=owner[0], principal_name=owner[1],
        issue_timestamp_ms=NO_TIMESTAMP, expiry_timestamp_ms=NO_TIMESTAMP, max_timestamp_ms=NO_TIMESTAMP,
        token_id="", hmac=b"")


def _owner(ctx: RequestContext) -> tuple[str, str]:
    """The request's principal as KafkaPrincipal's type and name ("User:CN=a,O=b" -> User, CN=a,O=b)."""
    principal_type, _, name = ctx.principal.partition(":")
    return principal_type, name


def _renew_error(request, version: int, code: ErrorCode) -> RenewDelegationTokenResponse:
    return RenewDelegationTokenResponse(error_code=int(code), expiry_timestamp_ms=NO_TIMESTAMP)


def _expire_error(request, version: int, code: ErrorCode) -> ExpireDelegationTokenResponse:
    return ExpireDelegationTokenResponse(error_code=int(code), expiry_timestamp_ms=NO_TIMESTAMP)


def _describe_error(request, version: int, code: ErrorCode) -> DescribeDelegationTokenResponse:
    return DescribeDelegationTokenResponse(error_code=int(code), tokens=[])


@handler(38, error_response=_create_error)
def handle_create_delegation_token(ctx: RequestContext,
                                   request: CreateDelegationTokenRequest) -> CreateDelegationTokenResponse:
    code = _token_error(ctx)
    if code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED and any(
            r.principal_type != "User" for r in request.renewers):
        code = ErrorCode.INVALID_PRINCIPAL_TYPE
    return _create_error(request, ctx.version, code, _owner(ctx))


@handler(39, error_response=_renew_error)
def handle_renew_delegation_token(ctx: RequestContext,
                                  request: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse:
    return _renew_error(request, ctx.version, _token_error(ctx))


@handler(40, error_response=_expire_error)
def handle_expire_delegation_token(ctx: RequestContext,
                                   request: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse:
    return _expire_error(request, ctx.version, _token_error(ctx))


@handler(41, error_response=_describe_error)
def handle_describe_delegation_token(ctx: RequestContext,
                                     request: DescribeDelegationTokenRequest) -> DescribeDelegationTokenResponse:
    return _describe_error(request, ctx.version, _token_error(ctx))
