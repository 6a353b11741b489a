"""Fetch (1): consumers read below the high watermark, followers to the log end.

Waits in the fetch purgatory for fetch.min.bytes up to fetch.max.wait.ms. Fetch
sessions (KIP-227) are not kept: every answer has session id 0, which tells clients
to send full fetch requests, as a Kafka broker with a full session cache does.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.broker.replica_manager import FetchParams, FetchSpec
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchRequest, FetchResponse

_Topic = FetchResponse.FetchableTopicResponse
_Part = FetchResponse.FetchablePartitionResponse


@handler(1, versions=(4, 12))
def handle_fetch(ctx: RequestContext, request: FetchRequest):
    params = FetchParams(request.replica_id, request.max_wait_ms, max(request.min_bytes, 0),
                         request.max_bytes)
    order = []
    for t in request.topics:
        for p in t.partitions:
            tp = (t.topic, p.partition)
            order.append(tp)
            params.partitions[tp] = FetchSpec(p.fetch_offset, p.partition_max_bytes,
                                              p.current_leader_epoch, p.log_start_offset,
                                              p.last_fetched_epoch)
    result = ctx.replicas.fetch(params, ctx.metadata.contains)
    if isinstance(result, defer.Deferred):
        return result.addCallback(_answer, order, ctx.version)
    return _answer(result, order, ctx.version)


def _answer(results, order, version: int) -> FetchResponse:
    topics: list = []
    for topic, partition in order:
        r = results[(topic, partition)]
        if not topics or topics[-1].topic != topic:
            topics.append(_Topic(topic=topic, partition_responses=[]))
        ok = r.error == ErrorCode.NONE
        topics[-1].partition_responses.append(_Part(
            partition=partition, error_code=int(r.error), high_watermark=r.high_watermark,
            last_stable_offset=r.high_watermark, log_start_offset=r.log_start_offset,
            aborted_transactions=None,
            record_set=r.records if ok and r.records is not None else b""))
        if r.diverging is not None:
            part = topics[-1].partition_responses[-1]
            part.diverging_epoch = FetchResponse.EpochEndOffset(epoch=r.diverging[0], end_offset=r.diverging[1])
    return FetchResponse(error_code=0, session_id=0, responses=topics)
