"""OffsetForLeaderEpoch (23): where a leader epoch ends in the leader's log.

Consumers (KIP-320) and older followers ask it after a leader change to find out
whether their position lies on a history the new leader does not share.
"""
from __future__ import annotations

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.broker.replica_manager import error_for
from kafkalike.protocol.messages.offset_for_leader_epoch import (OffsetForLeaderEpochRequest,
                                                                 OffsetForLeaderEpochResponse)

_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Part = OffsetForLeaderEpochResponse.EpochEndOffset


@handler(23)
def handle_offset_for_leader_epoch(ctx: RequestContext, request: OffsetForLeaderEpochRequest):
    rm = ctx.replicas
    known = ctx.metadata.contains
    topics = []
    cluster_action = ctx.authorizer.authorize_cluster(ctx, Op.CLUSTER_ACTION, log_denied=False)
    for t in request.topics:
        parts = []
        for p in t.partitions:
            res = _Part(partition=p.partition)
            try:
                if not cluster_action:      # followers may ask for any topic, others need DESCRIBE
                    ctx.authorizer.check_topic(ctx, Op.DESCRIBE, t.topic)
                part = rm.leader_partition((t.topic, p.partition), known)
                part.check_leader_epoch(p.current_leader_epoch)
                res.leader_epoch, res.end_offset = part.log.end_offset_for_epoch(p.leader_epoch)
            except Exception as exc:
                res.error_code = int(error_for(exc))
            parts.append(res)
        topics.append(_Topic(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(topics=topics)
