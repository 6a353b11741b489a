"""ListOffsets (2): earliest, latest, or the first offset at or after a timestamp."""
from __future__ import annotations

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.broker.replica_manager import error_for
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse

LATEST = -1
EARLIEST = -2
_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Part = ListOffsetsResponse.ListOffsetsPartitionResponse


@handler(2)
def handle_list_offsets(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    rm = ctx.server.replica_manager
    known = ctx.server.metadata_cache.contains
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            resp = _Part(partition_index=p.partition_index)
            try:
                part = rm.leader_partition((t.name, p.partition_index), known)
                part.check_leader_epoch(p.current_leader_epoch)
                offset, ts = _lookup(part, p.timestamp, request.replica_id)
                resp.leader_epoch = part.leader_epoch
                if ctx.version == 0:
                    resp.old_style_offsets = [] if offset < 0 else [offset]
                else:
                    resp.offset, resp.timestamp = offset, ts
            except Exception as exc:
                resp.error_code = int(error_for(exc))
            parts.append(resp)
        topics.append(_Topic(name=t.name, partitions=parts))
    return ListOffsetsResponse(topics=topics)


def _lookup(part, timestamp: int, replica_id: int) -> tuple[int, int]:
    log = part.log
    if timestamp == EARLIEST:
        return log.log_start_offset, -1
    if timestamp == LATEST:
        # Consumers see the high watermark as the end; a replica (debug) sees the log end.
        return (log.log_end_offset if replica_id >= 0 else part.high_watermark), -1
    if timestamp < 0:
        raise ValueError(f"invalid timestamp {timestamp}")
    found = log.fetch_offset_by_timestamp(timestamp)
    if found is None or found.offset >= part.high_watermark:
        return -1, -1
    return found.offset, found.timestamp

