"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31) on a broker without an authorizer.

Kafka 2.8 with no `authorizer.class.name` answers every ACL request with
SECURITY_DISABLED in the shape of its response: DescribeAcls with a top-level error
and no resources, CreateAcls with one failed result per creation, DeleteAcls with one
failed result per filter and nothing matched. The two sentences differ on purpose:
DescribeAcls builds its answer by hand, while the other two carry the message of a
SecurityDisabledException, which ends with a full stop. Clients show them verbatim
(kafka-acls.sh prints "SecurityDisabledException: No Authorizer is configured on the
broker"), so they are copied exactly.
"""
from __future__ import annotations

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.create_acls import CreateAclsRequest, CreateAclsResponse
from kafkalike.protocol.messages.delete_acls import DeleteAclsRequest, DeleteAclsResponse
from kafkalike.protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse

DESCRIBE_MESSAGE = "No Authorizer is configured on the broker"
ALTER_MESSAGE = "No Authorizer is configured on the broker."


def _describe_error(request, version: int, code: ErrorCode, message: str | None = None) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=int(code), error_message=message, resources=[])


def _create_error(request, version: int, code: ErrorCode, message: str | None = None) -> CreateAclsResponse:
    creations = request.creations if request is not None else []
    return CreateAclsResponse(results=[CreateAclsResponse.AclCreationResult(error_code=int(code),
                                                                            error_message=message)
                                       for _ in creations])


def _delete_error(request, version: int, code: ErrorCode, message: str | None = None) -> DeleteAclsResponse:
    filters = request.filters if request is not None else []
    return DeleteAclsResponse(filter_results=[
        DeleteAclsResponse.DeleteAclsFilterResult(error_code=int(code), error_message=message, matching_acls=[])
        for _ in filters])


@handler(29, error_response=_describe_error)
def handle_describe_acls(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    return _describe_error(request, ctx.version, ErrorCode.SECURITY_DISABLED, DESCRIBE_MESSAGE)


@handler(30, error_response=_create_error)
def handle_create_acls(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    return _create_error(request, ctx.version, ErrorCode.SECURITY_DISABLED, ALTER_MESSAGE)


@handler(31, error_response=_delete_error)
def handle_delete_acls(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    return _delete_error(request, ctx.version, ErrorCode.SECURITY_DISABLED, ALTER_MESSAGE)
