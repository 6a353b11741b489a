"""ListOffsets (2): earliest, latest, or the first offset at or after a timestamp.

A timestamp lookup is exact to the record, as in Kafka: the log finds the first batch
whose max timestamp reaches the target, and the records of that batch are decoded to
find the record itself. Answering with the batch's base offset instead would send
offsets_for_times users (and `kcat -Q`) to records older than they asked for.
"""
from __future__ import annotations

from typing import Iterator

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.broker.replica_manager import READ_COMMITTED, error_for
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from kafkalike.records import decode_batches

LATEST = -1
EARLIEST = -2
_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Part = ListOffsetsResponse.ListOffsetsPartitionResponse


@handler(2)
def handle_list_offsets(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    rm = ctx.replicas
    known = ctx.metadata.contains
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            resp = _Part(partition_index=p.partition_index)
            try:
                ctx.authorizer.check_topic(ctx, Op.DESCRIBE, t.name)
                part = rm.leader_partition((t.name, p.partition_index), known)
                part.check_leader_epoch(p.current_leader_epoch)
                committed = ctx.version >= 2 and request.isolation_level == READ_COMMITTED
                offset, ts, epoch = _lookup(part, p.timestamp, request.replica_id, committed)
                resp.leader_epoch = epoch
                if ctx.version == 0:
                    resp.old_style_offsets = [] if offset < 0 else [offset]
                else:
                    resp.offset, resp.timestamp = offset, ts
            except Exception as exc:
                resp.error_code = int(error_for(exc))
            parts.append(resp)
        topics.append(_Topic(name=t.name, partitions=parts))
    return ListOffsetsResponse(topics=topics)


def _lookup(part, timestamp: int, replica_id: int, committed: bool = False) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch); -1s when no record qualifies.

    A consumer's end is the high watermark, a read_committed one's the last stable offset
    (Kafka's lastFetchableOffset), for latest and for timestamp lookups alike.
    """
    log = part.log
    fetchable = log.last_stable_offset if committed else part.high_watermark
    if timestamp == EARLIEST:
        # The epoch is the one that wrote the log start offset, if the cache knows it.
        found = log.fetch_offset_by_timestamp(EARLIEST)
        return found.offset, -1, found.leader_epoch if found.leader_epoch is not None else -1
    if timestamp == LATEST:
        # Consumers see the high watermark as the end; a replica (debug) sees the log end.
        return (log.log_end_offset if replica_id >= 0 else fetchable), -1, part.leader_epoch
    # Any other timestamp, negative ones included, is a search target, as in Kafka 2.8.
    found = log.fetch_offset_by_timestamp(timestamp, record_timestamps)
    if found is None or found.offset >= fetchable:
        return -1, -1, -1
    epoch = found.leader_epoch if found.leader_epoch is not None else -1
    return found.offset, found.timestamp, epoch


def record_timestamps(raw: bytes) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of every record in one stored batch, control records included
    (Kafka's search does not skip them either)."""
    for batch in decode_batches(raw, verify_crc=False):
        for record in batch.records():
            yield record.offset, record.timestamp

