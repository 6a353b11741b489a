"""Offset APIs: OffsetCommit (8), OffsetFetch (9), OffsetDelete (47).

v1+ commits go to the group's __consumer_offsets partition through the coordinator and
are answered once replicated. v0, as in Kafka 2.8, reads and writes the old
ZooKeeper location instead (/consumers/<group>/offsets/<topic>/<partition>).
"""
from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalike.broker.handlers.groups import coordinator_of
from kafkalike.broker.authorizer.service import GROUP, TOPIC, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.coordinator.group_metadata_manager import java_string_length
from kafkalike.coordinator.records import NO_LEADER_EPOCH, OffsetAndMetadata
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from kafkalike.protocol.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from kafkalike.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse

log = logging.getLogger("kafka.server.KafkaApis")

TopicPartition = tuple[str, int]


def _known(ctx: RequestContext, tp: TopicPartition) -> bool:
    return ctx.metadata.partition(*tp) is not None


def _by_topic(pairs) -> dict[str, list]:
    out: dict[str, list] = {}
    for (topic, partition), value in pairs:
        out.setdefault(topic, []).append((partition, value))
    return out


# -- OffsetCommit ------------------------------------------------------------------------

@handler(8, versions=(0, 8))
def handle_offset_commit(ctx: RequestContext, request: OffsetCommitRequest):
    errors: dict[TopicPartition, ErrorCode] = {}
    wanted: dict[TopicPartition, object] = {}
    if not ctx.authorizer.authorize(ctx, Op.READ, GROUP, request.group_id):
        return _commit_answer(request, {(t.name, p.partition_index): ErrorCode.GROUP_AUTHORIZATION_FAILED
                                        for t in request.topics for p in t.partitions})
    readable = ctx.authorizer.filter(ctx, Op.READ, TOPIC, (t.name for t in request.topics))
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topic.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif _known(ctx, tp):
                wanted[tp] = p
            else:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not wanted:
        return _commit_answer(request, errors)
    if ctx.version == 0:
        d = defer.ensureDeferred(_commit_to_zookeeper(ctx, request.group_id, wanted))
        return d.addCallback(lambda done: _commit_answer(request, {**errors, **done}))
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        return _commit_answer(request, {**errors, **{tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in wanted}})
    now = coordinator.now_ms()
    retention = request.retention_time_ms if 2 <= ctx.version <= 4 else -1
    offsets = {}
    for tp, p in wanted.items():
        commit_ts = p.commit_timestamp if ctx.version == 1 and p.commit_timestamp != -1 else now
        offsets[tp] = OffsetAndMetadata(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if ctx.version >= 6 else NO_LEADER_EPOCH,
            metadata=p.committed_metadata if p.committed_metadata is not None else "",
            commit_timestamp=commit_ts,
            expire_timestamp=now + retention if retention != -1 else None)
    d = coordinator.commit_offsets(request.group_id, request.member_id,
                                   request.group_instance_id if ctx.version >= 7 else None,
                                   request.generation_id, offsets)
    return d.addCallback(lambda done: _commit_answer(request, {**errors, **done}))


async def _commit_to_zookeeper(ctx: RequestContext, group_id: str, wanted: dict) -> dict[TopicPartition, ErrorCode]:
    limit = ctx.config.get("offset.metadata.max.bytes")
    out = {}
    for tp, p in wanted.items():
        if p.committed_metadata is not None and java_string_length(p.committed_metadata) > limit:
            out[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            continue
        try:
            await ctx.zk.set_consumer_offset(group_id, tp, p.committed_offset)
            out[tp] = ErrorCode.NONE
        except Exception:
            log.exception("Error committing offset of %s-%d for group %s to ZooKeeper", *tp, group_id)
            out[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
    return out


def _commit_answer(request: OffsetCommitRequest, errors: dict[TopicPartition, ErrorCode]) -> OffsetCommitResponse:
    topics = []
    for topic in request.topics:
        parts = [OffsetCommitResponse.OffsetCommitResponsePartition(
            partition_index=p.partition_index,
            error_code=int(errors.get((topic.name, p.partition_index), ErrorCode.UNKNOWN_SERVER_ERROR)))
            for p in topic.partitions]
        topics.append(OffsetCommitResponse.OffsetCommitResponseTopic(name=topic.name, partitions=parts))
    return OffsetCommitResponse(topics=topics)


# -- OffsetFetch -------------------------------------------------------------------------

@handler(9, versions=(0, 7))
def handle_offset_fetch(ctx: RequestContext, request: OffsetFetchRequest):
    requested = None if request.topics is None else [
        (t.name, p) for t in request.topics for p in t.partition_indexes]
    if not ctx.authorizer.authorize(ctx, Op.DESCRIBE, GROUP, request.group_id):
        return _fetch_answer(ctx.version, [] if ctx.version >= 2 else [
            (tp, (-1, -1, "", ErrorCode.GROUP_AUTHORIZATION_FAILED)) for tp in requested or []],
            ErrorCode.GROUP_AUTHORIZATION_FAILED)
    refused: list[TopicPartition] = []
    if ctx.authorizer.enabled and requested is not None:
        describable = ctx.authorizer.filter(ctx, Op.DESCRIBE, TOPIC, (t for t, _ in requested))
        refused = [tp for tp in requested if tp[0] not in describable]
        requested = [tp for tp in requested if tp[0] in describable]
    if ctx.version == 0:
        d = defer.ensureDeferred(_fetch_from_zookeeper(ctx, request.group_id, requested or []))
        return d.addCallback(lambda found: _fetch_answer(ctx.version, found.items()))
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        error, found = ErrorCode.COORDINATOR_NOT_AVAILABLE, {}
    else:
        require_stable = bool(request.require_stable) if ctx.version >= 7 else False
        error, found = coordinator.fetch_offsets(request.group_id, require_stable, requested)
    if error != ErrorCode.NONE:
        if ctx.version >= 2:
            return _fetch_answer(ctx.version, [], error)
        # v0-1 have no top-level error: every asked-for partition carries it.
        return _fetch_answer(ctx.version, [(tp, (-1, -1, "", error)) for tp in requested or []])
    if ctx.authorizer.enabled and request.topics is None:     # all the group's offsets: only describable topics
        describable = ctx.authorizer.filter(ctx, Op.DESCRIBE, TOPIC, (t for t, _ in found))
        found = {tp: o for tp, o in found.items() if tp[0] in describable}
    return _fetch_answer(ctx.version, [(tp, (o.offset, o.leader_epoch, o.metadata, o.error))
                                       for tp, o in found.items()]
                         + [(tp, (-1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for tp in refused])


async def _fetch_from_zookeeper(ctx: RequestContext, group_id: str, requested: list[TopicPartition]):
    out = {}
    for tp in requested:
        if not _known(ctx, tp):
            out[tp] = (-1, -1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        try:
            offset = await ctx.zk.get_consumer_offset(group_id, tp)
        except Exception:
            log.exception("Error reading offset of %s-%d for group %s from ZooKeeper", *tp, group_id)
            out[tp] = (-1, -1, "", ErrorCode.UNKNOWN_SERVER_ERROR)
            continue
        out[tp] = (-1, -1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) if offset is None else \
            (offset, -1, "", ErrorCode.NONE)
    return out


def _fetch_answer(version: int, entries, error: ErrorCode = ErrorCode.NONE) -> OffsetFetchResponse:
    topics = []
    for topic, parts in _by_topic(entries).items():
        topics.append(OffsetFetchResponse.OffsetFetchResponseTopic(name=topic, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=p, committed_offset=offset, committed_leader_epoch=epoch, metadata=metadata,
                error_code=int(code))
            for p, (offset, epoch, metadata, code) in parts]))
    return OffsetFetchResponse(topics=topics, error_code=int(error))


# -- OffsetDelete ------------------------------------------------------------------------

@handler(47, versions=(0, 0))
def handle_offset_delete(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    errors: dict[TopicPartition, ErrorCode] = {}
    eligible: list[TopicPartition] = []
    if not ctx.authorizer.authorize(ctx, Op.DELETE, GROUP, request.group_id):
        return OffsetDeleteResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    readable = ctx.authorizer.filter(ctx, Op.READ, TOPIC, (t.name for t in request.topics))
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topic.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif _known(ctx, tp):
                eligible.append(tp)
            else:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    coordinator = coordinator_of(ctx)
    if coordinator is None:
        group_error, found = ErrorCode.COORDINATOR_NOT_AVAILABLE, {}
    else:
        group_error, found = coordinator.delete_offsets(request.group_id, eligible)
    if group_error != ErrorCode.NONE:
        return OffsetDeleteResponse(error_code=int(group_error))
    errors.update(found)
    return OffsetDeleteResponse(topics=[
        OffsetDeleteResponse.OffsetDeleteResponseTopic(name=topic, partitions=[
            OffsetDeleteResponse.OffsetDeleteResponsePartition(partition_index=p, error_code=int(code))
            for p, code in parts])
        for topic, parts in _by_topic(errors.items()).items()])
