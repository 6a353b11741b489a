"""Fetch (1): consumers read below the high watermark, followers to the log end.

isolation_level 1 (read_committed, v4+) stops consumers at the last stable offset and
lists the aborted transactions overlapping what was read (from the segments' txn
indexes), so the client drops their records without the broker decoding any; every
answer carries the partition's last stable offset, as Kafka's does.

Waits in the fetch purgatory for fetch.min.bytes up to fetch.max.wait.ms.

Fetch v7+ may use incremental fetch sessions (KIP-227, kafkalike/broker/fetch_session.py):
a full fetch (epoch 0) opens a session when the cache has a slot, an incremental one
reads every partition of its session but lists only the partitions with news, and a
session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) is answered
with no partitions. A sessionless fetch (session id 0, epoch -1: every fetch before v7,
and librdkafka's) takes the same path as before sessions existed.

Every version Kafka 2.8 serves, 0-12. Fetch v0-1 clients read only magic 0 message
sets and v2-3 only magic 1, so their answers are down-converted from the stored v2
batches as Kafka 2.8 does (kafkalike.records.message_format.down_convert); the fields
the old versions lack are left out by the codec. As in Kafka, versions below 10 get
UNSUPPORTED_COMPRESSION_TYPE from a topic whose compression.type is zstd, a topic with
message.downconversion.enable=false answers UNSUPPORTED_VERSION where Kafka would have
to convert, and v0-5 see KAFKA_STORAGE_ERROR as NOT_LEADER_OR_FOLLOWER.

A consumer over its consumer_byte_rate quota gets an empty answer with throttle_time_ms
set, as Kafka's throttled fetch (client_quotas.py); followers are not charged.
"""
from __future__ import annotations

import functools
import logging

from twisted.internet import defer

from kafkalike.broker.authorizer.service import fetch_refused_topics
from kafkalike.broker.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, FetchContext, SessionlessContext
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.broker.replica_manager import FetchParams, FetchResult, FetchSpec
from kafkalike.common.versions import record_version as _record_version
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchRequest, FetchResponse
from kafkalike.records.message_format import ConversionError, down_convert

_Topic = FetchResponse.FetchableTopicResponse
_Part = FetchResponse.FetchablePartitionResponse
_Aborted = FetchResponse.AbortedTransaction
log = logging.getLogger("kafka.server.KafkaApis")
_REFUSED = FetchResult(error=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
_SESSIONLESS = SessionlessContext()
_log_magic = functools.lru_cache(maxsize=64)(_record_version)  # magic of a message.format.version


@handler(1, versions=(0, 12))
def handle_fetch(ctx: RequestContext, request: FetchRequest):
    max_bytes, min_bytes = request.max_bytes, max(request.min_bytes, 0)
    quotas = ctx.quotas if request.replica_id < 0 else None
    if quotas is not None and quotas.fetch.enabled:
        # Kafka bounds a consumer's fetch by what its quota lets through in one window set,
        # so a low consumer_byte_rate cannot be answered with more than it may ever take.
        window_bytes = quotas.fetch_max_bytes(ctx)
        if window_bytes < max_bytes:
            max_bytes = max(int(window_bytes), 0)
            min_bytes = min(min_bytes, max_bytes)
    params = FetchParams(request.replica_id, request.max_wait_ms, min_bytes,
                         max_bytes, isolation_level=request.isolation_level if ctx.version >= 4 else 0,
                         leader_only=request.replica_id >= 0 or ctx.version < 11,
                         hard_max_bytes_limit=ctx.version <= 2)
    context = _session_context(ctx, request)
    if context is not None and context.error is not None:
        return context.finish(None)          # a session error: no partitions are read
    if context is None or context.partitions is None:
        order = []
        refused = fetch_refused_topics(ctx, request.replica_id, (t.topic for t in request.topics))
        for t in request.topics:
            for p in t.partitions:
                tp = (t.topic, p.partition)
                order.append(tp)
                if t.topic in refused:
                    continue          # answered TOPIC_AUTHORIZATION_FAILED by _answer
                params.partitions[tp] = FetchSpec(p.fetch_offset, p.partition_max_bytes,
                                                  p.current_leader_epoch, p.log_start_offset,
                                                  p.last_fetched_epoch)
    else:
        # A session's partitions, in the session's order (an incremental fetch reads them all).
        order = list(context.partitions)
        refused = fetch_refused_topics(ctx, request.replica_id, {topic for topic, _ in order})
        params.partitions = {tp: spec for tp, spec in context.partitions.items() if tp[0] not in refused}
    # Nothing to read (every partition refused, or none asked for): answered at once without
    # the replica manager, as KafkaApis does when no partition is left to fetch.
    result = ctx.replicas.fetch(params, ctx.metadata.contains) if params.partitions else {}
    convert = _Conversion(ctx, request, params) if ctx.version < 10 else None
    if context is None:
        if isinstance(result, defer.Deferred):
            result = result.addCallback(_answer, order, ctx.version, convert)
            return result if quotas is None else result.addCallback(_finish, ctx, quotas, None)
        response = _answer(result, order, ctx.version, convert)
        return response if quotas is None else _finish(response, ctx, quotas, None)
    if isinstance(result, defer.Deferred):
        return result.addCallback(_answer_in_session, order, ctx.version, convert, context).addCallback(
            _finish, ctx, quotas, context)
    return _finish(_answer_in_session(result, order, ctx.version, convert, context), ctx, quotas, context)


def _answer_in_session(results, order, version: int, convert, context: FetchContext) -> FetchResponse:
    """An incremental fetch's answer is built only for the partitions with news (an
    answer that down-converts is built whole, as conversion may add errors)."""
    if convert is None:
        order = context.with_news(results, order, _REFUSED)
    return _answer(results, order, version, convert)


def _session_context(ctx: RequestContext, request: FetchRequest) -> FetchContext | None:
    """The fetch's session context (KIP-227), or None for a sessionless fetch (session id
    0, epoch -1: every fetch before v7 and every one from librdkafka), which is handled
    exactly as before sessions existed."""
    if request.session_id == INVALID_SESSION_ID and request.session_epoch == FINAL_EPOCH:
        return None
    sessions = ctx.fetch_sessions
    if sessions is None:
        return None
    fetch_data = {(t.topic, p.partition): FetchSpec(p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                                                    p.log_start_offset, p.last_fetched_epoch)
                  for t in request.topics for p in t.partitions}
    forgotten = [(t.topic, p) for t in request.forgotten_topics_data or () for p in t.partitions]
    return sessions.new_context(request.session_id, request.session_epoch, fetch_data, forgotten,
                                privileged=request.replica_id >= 0)


def _finish(response: FetchResponse, ctx: RequestContext, quotas, context: FetchContext | None) -> FetchResponse:
    """consumer_byte_rate: the bytes answered are charged; a consumer now over its quota
    gets an empty answer instead, and those bytes are taken back (Kafka's
    unrecordQuotaSensor), so the next fetch after the throttle reads them. The listener
    puts the throttle in throttle_time_ms and mutes the connection. Then the session, if
    any, learns what it told and leaves out what did not change."""
    context = context or _SESSIONLESS
    if quotas is not None and quotas.fetch.enabled:
        size = context.response_size(response)
        if quotas.record_fetch(ctx, size) > 0:
            quotas.unrecord_fetch(ctx, size)
            return context.throttled(response)
    return context.finish(response)


class _Conversion:
    """What Kafka's KafkaApis.maybeConvertFetchedData does to each partition of an old fetch."""

    def __init__(self, ctx: RequestContext, request: FetchRequest, params: FetchParams):
        self.ctx = ctx
        self.version = ctx.version
        self.params = params
        self.from_follower = request.replica_id >= 0
        # Fetch v0-1 read magic 0, v2-3 magic 1; v4+ read v2 as stored.
        self.magic = 0 if self.version <= 1 else 1 if self.version <= 3 else None

    def apply(self, topic: str, partition: int, r) -> tuple[ErrorCode, object, bool]:
        """(error, records, valid offsets) for one partition's answer."""
        config = self.ctx.topic_configs.effective(topic)
        if config.compression_type == "zstd":
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, b"", False
        records = r.records if r.error == ErrorCode.NONE and r.records is not None else b""
        if self.magic is None or not records:
            return r.error, records, True
        log_magic = _log_magic(config.message_format_version)
        # Kafka converts only when the topic's format is newer than the client reads: an
        # older-format log already holds magic 0/1 entries the client reads, sent as they are.
        if log_magic <= self.magic:
            spec = self.params.partitions[(topic, partition)]
            if self.version <= 2 and len(records) > spec.max_bytes:
                # Kafka's read for v0-2 stops at the partition's max bytes, mid-message if need
                # be: a partial message is how the old client learns its fetch size is too small.
                records = bytes(records)[:spec.max_bytes]
            return r.error, records, True
        if not self.from_follower and not config.message_downconversion_enable:
            return ErrorCode.UNSUPPORTED_VERSION, b"", False
        spec = self.params.partitions[(topic, partition)]
        try:
            converted = down_convert(bytes(records), self.magic, spec.fetch_offset,
                                     hard_limit=spec.max_bytes if self.version <= 2 else None)
        except ConversionError as exc:
            log.debug("Down-conversion of %s-%d for a Fetch v%d failed: %s", topic, partition, self.version, exc)
            return ErrorCode[exc.error], b"", False
        return r.error, converted, True


def _answer(results, order, version: int, convert: _Conversion | None = None) -> FetchResponse:
    topics: list = []
    for topic, partition in order:
        r = results.get((topic, partition), _REFUSED)
        error, records, offsets_valid = r.error, r.records, True
        if convert is not None and r is not _REFUSED:     # nothing about a refused topic is told
            error, records, offsets_valid = convert.apply(topic, partition, r)
        if error == ErrorCode.KAFKA_STORAGE_ERROR and version <= 5:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER  # older clients do not retry the storage error
        if not topics or topics[-1].topic != topic:
            topics.append(_Topic(topic=topic, partition_responses=[]))
        ok = error == ErrorCode.NONE
        hw = r.high_watermark if offsets_valid else -1
        lso = r.last_stable_offset if offsets_valid and ok else -1
        aborted = None
        if r.aborted_transactions is not None and ok:
            aborted = [_Aborted(producer_id=pid, first_offset=first) for pid, first in r.aborted_transactions]
        topics[-1].partition_responses.append(_Part(
            partition=partition, error_code=int(error), high_watermark=hw,
            last_stable_offset=lso, log_start_offset=r.log_start_offset if offsets_valid else -1,
            aborted_transactions=aborted,
            record_set=records if ok and records is not None else b""))
        if r.diverging is not None:
            part = topics[-1].partition_responses[-1]
            part.diverging_epoch = FetchResponse.EpochEndOffset(epoch=r.diverging[0], end_offset=r.diverging[1])
    return FetchResponse(error_code=0, session_id=0, responses=topics)
