"""AlterIsr (56): partition leaders ask the controller to change an ISR."""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_isr import AlterIsrRequest, AlterIsrResponse


@handler(56)
def handle_alter_isr(ctx: RequestContext, request: AlterIsrRequest):
    if (refused := ctx.authorizer.require_cluster(ctx, request, Op.CLUSTER_ACTION)) is not None:
        return refused
    controller = ctx.controller
    if not controller.active:
        return AlterIsrResponse(error_code=int(ErrorCode.NOT_CONTROLLER))
    return controller.alter_isr(request)
