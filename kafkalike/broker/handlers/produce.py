"""Produce (0): append to partition leaders; acks=all answers after replication.

Every version Kafka 2.8 serves, 0-9. Versions 3+ must carry record batch v2. Versions
0-2 carry what old clients write, magic 0 or 1 message sets (or v2, which Kafka takes
from them too): those are checked by Kafka's rules and up-converted to one v2 batch
(kafkalike.records.message_format), because the log holds v2 only. So are records for
a topic whose message.format.version predates 0.11, whatever the version, so that the
topic refuses what its format cannot hold (idempotence, transactions, headers) and
keeps no timestamps where magic 0 has none. Transactional batches need the request's
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED without one, as Kafka 2.8); as in
2.8, nothing else checks that the producer's transaction was begun with the coordinator:
the log opens it at the first transactional batch. Responses take their fields by version
(throttle time from v1, log append time from v2), which the codec does. A client over its
producer_byte_rate quota is told so in throttle_time_ms (client_quotas.py).
"""
from __future__ import annotations

import functools
import time

from twisted.internet import defer

from kafkalike.broker.authorizer.service import TOPIC, TRANSACTIONAL_ID, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.topics import INTERNAL_TOPICS
from kafkalike.common.versions import record_version as _record_version
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
from kafkalike.records.convert import needs_recompression, recompress, target_codec
from kafkalike.records.compression import ZSTD
from kafkalike.records.header import ATTRIBUTES, CODEC_MASK, MAGIC, TRANSACTIONAL_MASK, InvalidRecordError
from kafkalike.records.message_format import (
    ConversionError, ProduceRules, from_producer, needs_conversion,
)

_Topic = ProduceResponse.TopicProduceResponse
_Part = ProduceResponse.PartitionProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage
_LONG_MAX = (1 << 63) - 1  # message.timestamp.difference.max.ms's default: no limit
# The magic a message.format.version writes, cached: looked up for every partition produced.
_log_magic = functools.lru_cache(maxsize=64)(_record_version)


@handler(0, versions=(0, 9))
def handle_produce(ctx: RequestContext, request: ProduceRequest):
    if (not request.transactional_id or not ctx.authorizer.authorize(ctx, Op.WRITE, TRANSACTIONAL_ID,
                                                                     request.transactional_id)
            ) and _has_transactional_records(request):
        # Kafka 2.8 authorizes the transactional id first; without one there is nothing to
        # authorize, and the whole request fails (a transaction needs its id's coordinator).
        if request.acks == 0:
            ctx.connection.transport.loseConnection()
            return None
        return _answer(request, {}, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if request.acks not in (-1, 0, 1):
        return _answer(request, {}, ErrorCode.INVALID_REQUIRED_ACKS)
    entries = {}
    early = {}
    messages = {}
    writable = ctx.authorizer.filter(ctx, Op.WRITE, TOPIC, (t.name for t in request.topic_data))
    for topic in request.topic_data:
        for p in topic.partition_data:
            tp = (topic.name, p.index)
            if topic.name not in writable:
                early[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic.name in INTERNAL_TOPICS:
                early[tp] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif p.records is None or (len(p.records) == 0 and ctx.version >= 3):
                early[tp] = ErrorCode.CORRUPT_MESSAGE
            elif ctx.version >= 3 and (len(p.records) < 17 or p.records[MAGIC] != 2):
                # Produce v3+ must carry record batch v2 (magic 2), as Kafka requires.
                early[tp] = ErrorCode.INVALID_RECORD
            elif 3 <= ctx.version < 7 and _zstd_batch(p.records):
                # ZStandard came with Produce v7 (KIP-110): v3-6 asking for it are refused as
                # ProduceRequest.validateRecords refuses them (it does not look at v0-2).
                early[tp] = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
            else:
                try:
                    entries[tp] = _as_topic_stores_it(ctx, topic.name, p.records)
                except ConversionError as exc:
                    early[tp] = ErrorCode[exc.error]
                    messages[tp] = f"{exc} in topic partition {topic.name}-{p.index}."
                except InvalidRecordError:
                    early[tp] = ErrorCode.CORRUPT_MESSAGE
    # Nothing left to append (every partition refused or invalid): answered without the
    # replica manager, as KafkaApis does when authorizedRequestInfo is empty.
    result = ctx.replicas.append_records(entries, request.acks, request.timeout_ms, ctx.metadata.contains) \
        if entries else {}
    if request.acks == 0:
        # No answer is sent for acks=0; Kafka closes the connection on a failure so the
        # client notices at all.
        results = result if isinstance(result, dict) else {}
        if early or any(r.error != ErrorCode.NONE for r in results.values()):
            ctx.connection.transport.loseConnection()
        _charge_quota(ctx, request)    # no answer, but the connection is still muted when over
        return None
    if isinstance(result, defer.Deferred):
        return result.addCallback(lambda res: _charge_quota(ctx, request) or _answer(request, res, None, early, messages))
    _charge_quota(ctx, request)
    return _answer(request, result, None, early, messages)


def _charge_quota(ctx: RequestContext, request: ProduceRequest) -> None:
    """producer_byte_rate: the request's bytes, charged when it is answered (Kafka's
    sendResponseCallback); the listener puts the throttle in the answer and mutes."""
    quotas = ctx.quotas
    if quotas is not None and quotas.produce.enabled:
        size = ctx.request_size or sum(len(p.records or b"") for t in request.topic_data for p in t.partition_data)
        quotas.record_produce(ctx, size)


def _zstd_batch(records) -> bool:
    """Whether the first batch is a v2 batch compressed with zstd (its attributes' codec bits)."""
    return len(records) > ATTRIBUTES + 1 and records[MAGIC] == 2 and records[ATTRIBUTES + 1] & CODEC_MASK == ZSTD


def _has_transactional_records(request) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: the first v2 batch of any partition has the
    transactional attribute (read from the header, no records decoded)."""
    for topic in request.topic_data:
        for p in topic.partition_data:
            records = p.records
            if (records is not None and len(records) > ATTRIBUTES + 1 and records[MAGIC] == 2
                    and records[ATTRIBUTES + 1] & TRANSACTIONAL_MASK):
                return True
    return False


def _as_topic_stores_it(ctx: RequestContext, topic: str, records):
    """What the log appends for these records: converted from an old format or for an
    old-format topic, recompressed for a topic with a fixed compression.type, as Kafka does;
    otherwise the client's bytes untouched (the hot path)."""
    config = ctx.topic_configs.effective(topic)
    log_magic = _log_magic(config.message_format_version)
    codec = target_codec(config.compression_type)
    if needs_conversion(records, log_magic):
        limit = config.message_timestamp_difference_max_ms
        rules = ProduceRules(log_magic, codec, config.max_message_bytes, None if limit >= _LONG_MAX else limit,
                             config.log_append_time)
        return from_producer(records, rules, int(time.time() * 1000))
    if codec is None or not needs_recompression(records, codec):
        return records
    return recompress(records, codec)


def _answer(request, results, all_error=None, early=None, messages=None) -> ProduceResponse:
    early = early or {}
    messages = messages or {}
    topics = []
    for topic in request.topic_data:
        parts = []
        for p in topic.partition_data:
            tp = (topic.name, p.index)
            r = results.get(tp)
            if all_error is not None or r is None:
                parts.append(_Part(index=p.index, error_code=int(all_error or early.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)),
                                   base_offset=-1, error_message=messages.get(tp)))
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
