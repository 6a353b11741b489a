"""ControlledShutdown (7): a stopping broker asks the controller to move its leaders away."""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse


def _error(request, version: int, code: ErrorCode, message: str | None = None) -> ControlledShutdownResponse:
    """ControlledShutdownRequest.getErrorResponse: the error, no partitions."""
    return ControlledShutdownResponse(error_code=int(code))


@handler(7, error_response=_error)
def handle_controlled_shutdown(ctx: RequestContext, request: ControlledShutdownRequest):
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.CLUSTER_ACTION)) is not None:
        return refused
    controller = ctx.controller
    if not controller.active:
        return ControlledShutdownResponse(error_code=int(ErrorCode.NOT_CONTROLLER))
    d = controller.controlled_shutdown(request.broker_id, request.broker_epoch)

    def answer(result) -> ControlledShutdownResponse:
        error, remaining = result
        return ControlledShutdownResponse(error_code=int(error), remaining_partitions=[
            ControlledShutdownResponse.RemainingPartition(topic_name=tp.topic, partition_index=tp.partition)
            for tp in remaining])
    return d.addCallback(answer)
