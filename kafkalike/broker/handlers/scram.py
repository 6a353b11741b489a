"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51).

The admin manager derives and stores the credentials as Kafka 2.8 does
(broker/admin_scram.py); these handlers turn requests into its calls and its results
into responses. Only the controller takes alterations, as in Kafka 2.8; a ZooKeeper
failure is answered UNKNOWN_SERVER_ERROR for the whole request.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.admin_quotas import UNEXPECTED
from kafkalike.broker.admin_scram import (ScramAlterationResult, ScramDeletion, ScramUpsertion,
                                          UserScramCredentials)
from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_user_scram_credentials import (AlterUserScramCredentialsRequest,
                                                                      AlterUserScramCredentialsResponse)
from kafkalike.protocol.messages.describe_user_scram_credentials import (DescribeUserScramCredentialsRequest,
                                                                         DescribeUserScramCredentialsResponse)

NOT_CONTROLLER = "This is not the correct controller for this cluster."

_Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_Info = DescribeUserScramCredentialsResponse.CredentialInfo
_AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


# -- DescribeUserScramCredentials ------------------------------------------------------


def _describe_error(request, version: int, code: ErrorCode,
                    message: str | None = UNEXPECTED) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(error_code=int(code), error_message=message, results=[])


@handler(50, error_response=_describe_error)
def handle_describe_user_scram_credentials(ctx: RequestContext, request: DescribeUserScramCredentialsRequest):
    if not ctx.authorizer.authorize_cluster(ctx, Op.DESCRIBE):
        # getErrorResponse(ClusterAuthorizationException): ApiError.fromThrowable drops the default message.
        return _describe_error(request, ctx.version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    users = None if request.users is None else [u.name for u in request.users]
    d = defer.ensureDeferred(ctx.admin.describe_user_scram_credentials(users))
    return d.addCallbacks(_describe_response,
                          lambda _: _describe_error(request, 0, ErrorCode.UNKNOWN_SERVER_ERROR))


def _describe_response(results: list[UserScramCredentials]) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(error_code=0, error_message=None, results=[
        _Result(user=r.user, error_code=int(r.error), error_message=r.message,
                credential_infos=[_Info(mechanism=c.mechanism, iterations=c.iterations) for c in r.credentials])
        for r in results])


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
    if not ctx.controller.active:      # before authorization, as KafkaApis
        return _alter_error(request, ctx.version, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER)
    if not ctx.authorizer.authorize_cluster(ctx, Op.ALTER):
        return _alter_error(request, ctx.version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    upsertions = [ScramUpsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
                  for u in request.upsertions]
    deletions = [ScramDeletion(d.name, d.mechanism) for d in request.deletions]
    d = defer.ensureDeferred(ctx.admin.alter_user_scram_credentials(upsertions, deletions))
    return d.addCallbacks(_alter_response, lambda _: _alter_error(request, 0, ErrorCode.UNKNOWN_SERVER_ERROR))


def _alter_response(results: list[ScramAlterationResult]) -> AlterUserScramCredentialsResponse:
    return AlterUserScramCredentialsResponse(results=[
        _AlterResult(user=r.user, error_code=int(r.error), error_message=r.message) for r in results])
