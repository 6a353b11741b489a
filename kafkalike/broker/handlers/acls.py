"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31).

With authorizer.class.name set they are served by the AclAuthorizer (broker/authorizer):
describing needs DESCRIBE on the cluster, creating and deleting ALTER (else the whole
request is refused with CLUSTER_AUTHORIZATION_FAILED and the message of Kafka's
authorizeClusterOperation, "Request Request(...) is not authorized.", on the top level
or on each creation and filter, as KafkaApis does). Filters match
as Kafka's AclBindingFilter: null strings and ANY codes match anything, the MATCH pattern
type also finds the wildcard and prefixed patterns that apply to a literal name. A
creation that is not a definite binding is refused with INVALID_REQUEST naming the
indefinite field, as 2.8's handleCreateAcls.

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

from twisted.internet import defer

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.acls import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AclResourceType, PatternType, ResourcePattern)
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


def _enum(cls, code: int):
    try:
        return cls(code)
    except ValueError:
        return cls.UNKNOWN


def _filter(f) -> AclBindingFilter:
    return AclBindingFilter(
        resource_type=_enum(AclResourceType, f.resource_type_filter), name=f.resource_name_filter,
        pattern_type=_enum(PatternType, f.pattern_type_filter), principal=f.principal_filter, host=f.host_filter,
        operation=_enum(AclOperation, f.operation), permission_type=_enum(AclPermissionType, f.permission_type))


@handler(29, error_response=_describe_error)
def handle_describe_acls(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    if not ctx.authorizer.enabled:
        return _describe_error(request, ctx.version, ErrorCode.SECURITY_DISABLED, DESCRIBE_MESSAGE)
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.DESCRIBE)) is not None:
        return refused
    wanted = _filter(request)
    if AclOperation.UNKNOWN in (wanted.operation,) or wanted.resource_type == AclResourceType.UNKNOWN or \
            wanted.pattern_type == PatternType.UNKNOWN or wanted.permission_type == AclPermissionType.UNKNOWN:
        return _describe_error(request, ctx.version, ErrorCode.INVALID_REQUEST, "The filter contains UNKNOWN elements")
    resources: dict[ResourcePattern, list] = {}
    for binding in ctx.authorizer.acls(wanted):
        e = binding.entry
        resources.setdefault(binding.pattern, []).append(DescribeAclsResponse.AclDescription(
            principal=e.principal, host=e.host, operation=int(e.operation), permission_type=int(e.permission_type)))
    return DescribeAclsResponse(error_code=0, resources=[
        DescribeAclsResponse.DescribeAclsResource(resource_type=int(p.resource_type), resource_name=p.name,
                                                  pattern_type=int(p.pattern_type), acls=acls)
        for p, acls in resources.items()])


@handler(30, error_response=_create_error)
def handle_create_acls(ctx: RequestContext, request: CreateAclsRequest):
    if not ctx.authorizer.enabled:
        return _create_error(request, ctx.version, ErrorCode.SECURITY_DISABLED, ALTER_MESSAGE)
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.ALTER)) is not None:
        return refused
    return defer.ensureDeferred(_create(ctx, request))


async def _create(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    results: list = [None] * len(request.creations)
    bindings, where = [], []
    for i, c in enumerate(request.creations):
        as_filter = AclBindingFilter(
            resource_type=_enum(AclResourceType, c.resource_type), name=c.resource_name,
            pattern_type=_enum(PatternType, c.resource_pattern_type), principal=c.principal, host=c.host,
            operation=_enum(AclOperation, c.operation), permission_type=_enum(AclPermissionType, c.permission_type))
        problem = as_filter.find_indefinite_field()
        if problem is not None:
            results[i] = (ErrorCode.INVALID_REQUEST, f"Invalid ACL creation: {problem}")
            continue
        bindings.append(AclBinding(ResourcePattern(as_filter.resource_type, c.resource_name, as_filter.pattern_type),
                                   AccessControlEntry(c.principal, c.host, as_filter.operation,
                                                      as_filter.permission_type)))
        where.append(i)
    for i, outcome in zip(where, await ctx.authorizer.create_acls(bindings)):
        if outcome is None:
            results[i] = (ErrorCode.NONE, None)
        else:
            results[i] = (ErrorCode.INVALID_REQUEST if type(outcome).__name__ == "InvalidAclError"
                          else ErrorCode.UNKNOWN_SERVER_ERROR, str(outcome))
    return CreateAclsResponse(results=[CreateAclsResponse.AclCreationResult(error_code=int(code), error_message=msg)
                                       for code, msg in results])


@handler(31, error_response=_delete_error)
def handle_delete_acls(ctx: RequestContext, request: DeleteAclsRequest):
    if not ctx.authorizer.enabled:
        return _delete_error(request, ctx.version, ErrorCode.SECURITY_DISABLED, ALTER_MESSAGE)
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.ALTER)) is not None:
        return refused
    return defer.ensureDeferred(_delete(ctx, request))


async def _delete(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    matched = await ctx.authorizer.delete_acls([_filter(f) for f in request.filters])
    out = []
    for found in matched:
        out.append(DeleteAclsResponse.DeleteAclsFilterResult(error_code=0, matching_acls=[
            DeleteAclsResponse.DeleteAclsMatchingAcl(
                error_code=0, resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
                pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal, host=b.entry.host,
                operation=int(b.entry.operation), permission_type=int(b.entry.permission_type))
            for b in found]))
    return DeleteAclsResponse(filter_results=out)
