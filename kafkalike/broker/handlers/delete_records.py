"""DeleteRecords (21): move a partition's log start offset forward."""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.broker.replica_manager import error_for
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.delete_records import DeleteRecordsRequest, DeleteRecordsResponse

HIGH_WATERMARK = -1


@handler(21)
def handle_delete_records(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    rm = ctx.replicas
    known = ctx.metadata.contains
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            res = DeleteRecordsResponse.DeleteRecordsPartitionResult(partition_index=p.partition_index,
                                                                     low_watermark=-1)
            try:
                ctx.authorizer.check_topic(ctx, Op.DELETE, t.name)
                part = rm.leader_partition((t.name, p.partition_index), known)
                target = part.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if target < 0 or target > part.high_watermark:
                    res.error_code = int(ErrorCode.OFFSET_OUT_OF_RANGE)
                elif ctx.topic_configs.effective(t.name).compact and not ctx.topic_configs.effective(t.name).delete:
                    res.error_code = int(ErrorCode.POLICY_VIOLATION)
                else:
                    part.log.maybe_increment_log_start_offset(target)
                    res.low_watermark = part.log.log_start_offset
            except Exception as exc:
                res.error_code = int(error_for(exc))
            parts.append(res)
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    return DeleteRecordsResponse(topics=topics)
