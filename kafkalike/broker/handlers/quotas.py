"""DescribeClientQuotas (48) and AlterClientQuotas (49).

The admin manager keeps quotas where Kafka 2.8 keeps them and validates as it does
(broker/admin_quotas.py); these handlers turn requests into its calls and its results
into responses. A ZooKeeper failure is answered UNKNOWN_SERVER_ERROR, as Kafka does,
not with a closed connection.
"""
from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalike.broker.admin_quotas import (UNEXPECTED, QuotaAlteration, QuotaAlterationResult, QuotaDescription,
                                           QuotaFilterComponent, QuotaOp)
from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode, default_message
from kafkalike.protocol.messages.alter_client_quotas import AlterClientQuotasRequest, AlterClientQuotasResponse
from kafkalike.protocol.messages.describe_client_quotas import (DescribeClientQuotasRequest,
                                                                DescribeClientQuotasResponse)

log = logging.getLogger("kafka.server.ZkAdminManager")


# -- DescribeClientQuotas ------------------------------------------------------------


def _describe_error(request, version: int, code: ErrorCode,
                    message: str | None = UNEXPECTED) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(error_code=int(code), error_message=message, entries=None)


@handler(48, error_response=_describe_error)
def handle_describe_client_quotas(ctx: RequestContext, request: DescribeClientQuotasRequest):
    if not ctx.authorizer.authorize_cluster(ctx, Op.DESCRIBE_CONFIGS):
        # getErrorResponse(ClusterAuthorizationException): ApiError.fromThrowable drops the default message.
        return _describe_error(request, ctx.version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    components = [QuotaFilterComponent(c.entity_type, c.match_type, c.match) for c in request.components]
    d = defer.ensureDeferred(ctx.admin.describe_client_quotas(components, request.strict))
    d.addCallback(_describe_response, request)
    return _or_unexpected(d, lambda: _describe_error(request, ctx.version, ErrorCode.UNKNOWN_SERVER_ERROR))


def _describe_response(found: QuotaDescription, request) -> DescribeClientQuotasResponse:
    if found.error != ErrorCode.NONE:
        return _describe_error(request, 0, found.error, found.message)
    R = DescribeClientQuotasResponse
    entries = [R.EntryData(entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in entry.entity],
                           values=[R.ValueData(key=k, value=v) for k, v in entry.values.items()])
               for entry in found.entries]
    return DescribeClientQuotasResponse(error_code=0, error_message=None, entries=entries)


# -- AlterClientQuotas ---------------------------------------------------------------


def _alter_error(request, version: int, code: ErrorCode,
                 message: str | None = UNEXPECTED) -> AlterClientQuotasResponse:
    R = AlterClientQuotasResponse
    return AlterClientQuotasResponse(entries=[
        R.EntryData(error_code=int(code), error_message=message,
                    entity=[R.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in (request.entries if request is not None else [])])


@handler(49, error_response=_alter_error)
def handle_alter_client_quotas(ctx: RequestContext, request: AlterClientQuotasRequest):
    if not ctx.authorizer.authorize_cluster(ctx, Op.ALTER_CONFIGS):
        # getErrorResponse: each entry with the error's message.
        return _alter_error(request, ctx.version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            default_message(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    alterations = [QuotaAlteration(entity=tuple((e.entity_type, e.entity_name) for e in entry.entity),
                                   ops=tuple(QuotaOp(op.key, op.value, op.remove) for op in entry.ops))
                   for entry in request.entries]
    d = defer.ensureDeferred(ctx.admin.alter_client_quotas(alterations, request.validate_only))
    d.addCallback(_alter_response)
    return _or_unexpected(d, lambda: _alter_error(request, ctx.version, ErrorCode.UNKNOWN_SERVER_ERROR))


def _alter_response(results: list[QuotaAlterationResult]) -> AlterClientQuotasResponse:
    R = AlterClientQuotasResponse
    return AlterClientQuotasResponse(entries=[
        R.EntryData(error_code=int(r.error), error_message=r.message,
                    entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in r.entity])
        for r in results])


def _or_unexpected(d: defer.Deferred, fallback) -> defer.Deferred:
    def failed(failure):
        log.error("Error serving client quotas: %s", failure.getTraceback())
        return fallback()
    return d.addErrback(failed)
