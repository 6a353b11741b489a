"""Produce (0): append to partition leaders; acks=all answers after replication.

Versions 3-9 are served (record batch v2 only); 0-2, which carry the old message
formats, get UNSUPPORTED_VERSION as Kafka 4.0 answers them (KIP-896).
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.broker.topic_configs import TopicConfigs
from kafkalike.common.topics import INTERNAL_TOPICS
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
from kafkalike.records.convert import needs_recompression, recompress, target_codec
from kafkalike.records.header import InvalidRecordError

_Topic = ProduceResponse.TopicProduceResponse
_Part = ProduceResponse.PartitionProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage


@handler(0, versions=(3, 9))
def handle_produce(ctx: RequestContext, request: ProduceRequest):
    if request.acks not in (-1, 0, 1):
        return _answer(request, {}, ErrorCode.INVALID_REQUIRED_ACKS)
    entries = {}
    early = {}
    for topic in request.topic_data:
        for p in topic.partition_data:
            tp = (topic.name, p.index)
            if topic.name in INTERNAL_TOPICS:
                early[tp] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif p.records is None or len(p.records) == 0:
                early[tp] = ErrorCode.CORRUPT_MESSAGE
            elif len(p.records) < 17 or p.records[16] != 2:
                # Produce v3+ must carry record batch v2 (magic 2), as Kafka requires.
                early[tp] = ErrorCode.INVALID_RECORD
            else:
                try:
                    entries[tp] = _as_topic_stores_it(ctx.topic_configs, topic.name, p.records)
                except InvalidRecordError:
                    early[tp] = ErrorCode.CORRUPT_MESSAGE
    result = ctx.replicas.append_records(entries, request.acks, request.timeout_ms, ctx.metadata.contains)
    if request.acks == 0:
        # No answer is sent for acks=0; Kafka closes the connection on a failure so the
        # client notices at all.
        results = result if isinstance(result, dict) else {}
        if early or any(r.error != ErrorCode.NONE for r in results.values()):
            ctx.connection.transport.loseConnection()
        return None
    if isinstance(result, defer.Deferred):
        return result.addCallback(lambda res: _answer(request, res, None, early))
    return _answer(request, result, None, early)


def _as_topic_stores_it(configs: TopicConfigs, topic: str, records):
    """Recompress for topics with a fixed compression.type, as Kafka does."""
    codec = target_codec(configs.effective(topic).compression_type)
    if codec is None or not needs_recompression(records, codec):
        return records
    return recompress(records, codec)


def _answer(request, results, all_error=None, early=None) -> ProduceResponse:
    early = early or {}
    topics = []
    for topic in request.topic_data:
        parts = []
        for p in topic.partition_data:
            tp = (topic.name, p.index)
            r = results.get(tp)
            if all_error is not None or r is None:
                parts.append(_Part(index=p.index, error_code=int(all_error or early.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)),
                                   base_offset=-1))
            else:
                parts.append(_Part(index=p.index, error_code=int(r.error),
                                   base_offset=r.base_offset if r.error == ErrorCode.NONE else -1,
                                   log_append_time_ms=r.log_append_time,
                                   log_start_offset=r.log_start_offset,
                                   error_message=r.message if r.error != ErrorCode.NONE else None,
                                   record_errors=[_RecordError(batch_index=i, batch_index_error_message=m)
                                                  for i, m in r.record_errors]))
        topics.append(_Topic(name=topic.name, partition_responses=parts))
    return ProduceResponse(responses=topics)
