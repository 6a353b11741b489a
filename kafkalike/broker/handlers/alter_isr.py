"""AlterIsr (56): partition leaders ask the controller to change an ISR."""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_isr import AlterIsrRequest, AlterIsrResponse


def _error(request, version: int, code: ErrorCode, message: str | None = None) -> AlterIsrResponse:
    """AlterIsrRequest.getErrorResponse: the error at the top, no partitions."""
    return AlterIsrResponse(error_code=int(code))


@handler(56, error_response=_error)
def handle_alter_isr(ctx: RequestContext, request: AlterIsrRequest):
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.CLUSTER_ACTION)) is not None:
        return refused
    controller = ctx.controller
    if not controller.active:
        return AlterIsrResponse(error_code=int(ErrorCode.NOT_CONTROLLER))
    return controller.alter_isr(request)
