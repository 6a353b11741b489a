"""The authorization service handlers call at their start (Kafka's AuthHelper).

Without authorizer.class.name every request is allowed and the authorized-operations
fields report every operation a resource type supports, as Kafka 2.8 without an
authorizer; `AclAuthorizer` overrides `allowed` with its ACL cache. Handlers use the
helpers here so that each check is one line: `require_cluster`/`require` answer None
when allowed, else the request's error response with the given code (the whole-request
refusals); `require_cluster_operation` is Kafka's authorizeClusterOperation, whose
refusal carries the exception message naming the request; `filter` splits names by
permission (filterByAuthorized). tests/unit/test_authorization_matrix.py holds every
API's refusal to Kafka 2.8's answer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from kafkalike.common.acls import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, AclResourceType
from kafkalike.protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kafkalike.broker.registry import RequestContext

Op = AclOperation
Type = AclResourceType
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = Type.TOPIC, Type.GROUP, Type.CLUSTER, Type.TRANSACTIONAL_ID


class Authorizer:
    """No authorizer configured: everything is allowed."""

    enabled = False

    def allowed(self, principal: str, host: str, operation: AclOperation, resource_type: AclResourceType,
                name: str, *, api: int | str = "", log_denied: bool = True) -> bool:
        return True

    def allowed_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                 resource_type: AclResourceType, *, api: int | str = "") -> bool:
        return True

    # -- what handlers call ----------------------------------------------------------

    def authorize(self, ctx: RequestContext, operation: AclOperation, resource_type: AclResourceType,
                  name: str, *, log_denied: bool = True) -> bool:
        if not self.enabled:
            return True
        return self.allowed(ctx.principal, ctx.client_host, operation, resource_type, name,
                            api=ctx.api_key, log_denied=log_denied)

    def authorize_cluster(self, ctx: RequestContext, operation: AclOperation, *, log_denied: bool = True) -> bool:
        return self.authorize(ctx, operation, CLUSTER, CLUSTER_NAME, log_denied=log_denied)

    def filter(self, ctx: RequestContext, operation: AclOperation, resource_type: AclResourceType,
               names: Iterable[str], *, log_denied: bool = True) -> set[str]:
        """The names among `names` the caller may `operation` (each checked once)."""
        unique = set(names)
        if not self.enabled:
            return unique
        return {n for n in unique if self.authorize(ctx, operation, resource_type, n, log_denied=log_denied)}

    def require(self, ctx: RequestContext, request: Any, operation: AclOperation,
                resource_type: AclResourceType, name: str, code: ErrorCode) -> Any:
        """None if allowed, else the whole request refused with `code`."""
        if self.authorize(ctx, operation, resource_type, name):
            return None
        return refuse(ctx, request, code)

    def require_cluster(self, ctx: RequestContext, request: Any, operation: AclOperation) -> Any:
        return self.require(ctx, request, operation, CLUSTER, CLUSTER_NAME, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

    def require_cluster_operation(self, ctx: RequestContext, request: Any, operation: AclOperation) -> Any:
        """Kafka's authorizeClusterOperation: None if allowed, else the request's error
        response for the ClusterAuthorizationException it throws, whose message (shown by
        responses that carry one, such as the ACL and reassignment APIs) names the request."""
        if self.authorize_cluster(ctx, operation):
            return None
        return refuse(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, request_not_authorized(ctx))

    def check_topic(self, ctx: RequestContext, operation: AclOperation, topic: str) -> None:
        """For per-partition loops whose errors are exceptions: KafkaProtocolError(TOPIC_AUTHORIZATION_FAILED)."""
        if self.enabled and not self.authorize(ctx, operation, TOPIC, topic):
            raise KafkaProtocolError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)

    def authorized_operations(self, ctx: RequestContext, resource_type: AclResourceType, name: str) -> int:
        """KIP-430's bit field: bit N set when operation code N is allowed."""
        field = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if not self.enabled or self.allowed(ctx.principal, ctx.client_host, op, resource_type, name,
                                                log_denied=False):
                field |= 1 << int(op)
        return field

    def cluster_operations(self, ctx: RequestContext) -> int:
        return self.authorized_operations(ctx, CLUSTER, CLUSTER_NAME)

    def close(self) -> None:
        pass


def refuse(ctx: RequestContext, request: Any, code: ErrorCode, message: str | None = None) -> Any:
    """The request's own error response carrying `code` (registered per API), and the
    exception's `message` where the response has room for one and Kafka puts it there."""
    from kafkalike.broker.registry import HANDLERS
    error_response = HANDLERS[ctx.api_key].error_response
    if message is None:
        return error_response(request, ctx.version, code)
    return error_response(request, ctx.version, code, message)


# Requests whose bytes Kafka 2.8 keeps until they are answered (ApiKeys.requiresDelayedAllocation:
# forwardable ones, and those with BYTES fields) among those refused by authorizeClusterOperation;
# the others' buffer is released once parsed, and prints as null.
_BUFFER_KEPT = {30, 31, 45}


def request_not_authorized(ctx: RequestContext) -> str:
    """ClusterAuthorizationException's message: "Request <RequestChannel.Request> is not
    authorized.", as Kafka prints the request (processor 0: kafkalike has no processors)."""
    connection = ctx.connection
    listener = ctx.listener_name
    security = getattr(connection, "security", None)
    protocol = security.protocol if security is not None else \
        ctx.config.listener_security_protocol_map.get(listener, "PLAINTEXT")
    size = ctx.request_size
    buffer = f"java.nio.HeapByteBuffer[pos={size} lim={size} cap={size}]" if ctx.api_key in _BUFFER_KEPT else "null"
    return (f"Request Request(processor=0, connectionId={getattr(connection, 'connection_id', '')}, "
            f"session=Session({ctx.principal},/{ctx.client_host}), listenerName=ListenerName({listener}), "
            f"securityProtocol={protocol}, buffer={buffer}, envelope=None) is not authorized.")


ALLOW_ALL = Authorizer()


def fetch_refused_topics(ctx: RequestContext, replica_id: int, topics: Iterable[str]) -> set[str]:
    """Fetch's checks (KafkaApis.handleFetchRequest): a follower needs CLUSTER_ACTION on
    the cluster, a consumer READ on each topic; the topics answered TOPIC_AUTHORIZATION_FAILED."""
    authorizer = ctx.authorizer
    if not authorizer.enabled:
        return set()
    names = set(topics)
    if replica_id >= 0:
        return set() if authorizer.authorize_cluster(ctx, Op.CLUSTER_ACTION) else names
    return names - authorizer.filter(ctx, Op.READ, TOPIC, names)
