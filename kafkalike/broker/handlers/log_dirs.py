"""DescribeLogDirs (35) and AlterReplicaLogDirs (34): the broker's log.dirs and what is in them.

DescribeLogDirs answers, as Kafka 2.8's ReplicaManager.describeLogDirs does, one
result per configured log dir (its absolute path), listing every topic with a log in
that dir and, under it, the requested partitions (all of them for a null topic list;
a topic with logs there but none requested is listed with no partitions, as 2.8 does).
Sizes are the bytes of the partition's segments; the offset lag of a current replica
is how far its log end lags its high watermark, never negative, and -1 for a log no
partition owns; no replica is ever a "future" one because this broker never moves logs.

AlterReplicaLogDirs is answered per partition in Kafka's order of checks: a topic too
long for a "-future" dir name is INVALID_TOPIC_EXCEPTION, a dir that is not one of
log.dirs LOG_DIR_NOT_FOUND, a partition this broker does not host REPLICA_NOT_AVAILABLE
(UNKNOWN_TOPIC_OR_PARTITION for an unknown topic), and a replica already in the
target dir is a successful no-op. Moving a replica to another of this broker's dirs
is not implemented (Kafka copies it through a "-future" log); that is answered
KAFKA_STORAGE_ERROR, Kafka's answer when it cannot start a move, and nothing moves.
"""
from __future__ import annotations

import os
from collections import defaultdict

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.alter_replica_log_dirs import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse
from kafkalike.protocol.messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse

INVALID_OFFSET_LAG = -1
MAX_DIR_NAME = 255
_FUTURE_SUFFIX_LEN = len(".") + 32 + len("-future")   # "<topic>-<p>.<uuid hex>-future"

_D = DescribeLogDirsResponse
_A = AlterReplicaLogDirsResponse


def configured_log_dirs(ctx: RequestContext) -> list[tuple[str, str]]:
    """(absolute path as configured, real path the log manager uses) for each log dir."""
    return [(os.path.abspath(d), os.path.realpath(d)) for d in ctx.config.log_dirs]


# -- DescribeLogDirs -------------------------------------------------------------------


@handler(35)
def handle_describe_log_dirs(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not ctx.authorizer.authorize_cluster(ctx, Op.DESCRIBE):
        return DescribeLogDirsResponse(results=[])      # Kafka 2.8 answers no log dirs (no error field before v3)
    logs = ctx.logs.logs
    if request.topics is None:
        wanted = set(logs)
    else:
        wanted = {(t.topic, p) for t in request.topics for p in t.partition_index}
    by_dir: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for tp, log in sorted(logs.items()):
        by_dir[ctx.logs.log_dir_of(tp)][tp[0]].append((tp, log))
    results = []
    for absolute, real in configured_log_dirs(ctx):
        topics = [_D.DescribeLogDirsTopic(name=topic, partitions=[
            _D.DescribeLogDirsPartition(partition_index=tp[1], partition_size=log.size,
                                        offset_lag=_offset_lag(ctx, tp, log), is_future_key=False)
            for tp, log in entries if tp in wanted])
            for topic, entries in by_dir.get(real, {}).items()]
        results.append(_D.DescribeLogDirsResult(error_code=0, log_dir=absolute, topics=topics))
    return DescribeLogDirsResponse(results=results)


def _offset_lag(ctx: RequestContext, tp, log) -> int:
    part = ctx.replicas.partitions.get(tp)
    if part is None:
        return INVALID_OFFSET_LAG
    return max(part.high_watermark - log.log_end_offset, 0)


# -- AlterReplicaLogDirs ---------------------------------------------------------------


def _alter_error(request, version: int, code: ErrorCode) -> AlterReplicaLogDirsResponse:
    topics: dict[str, list[int]] = {}
    for d in (request.dirs if request is not None else []):
        for t in d.topics:
            topics.setdefault(t.name, []).extend(t.partitions)
    return _alter_response({(name, p): code for name, parts in topics.items() for p in parts})


def _alter_response(errors: dict[tuple[str, int], ErrorCode]) -> AlterReplicaLogDirsResponse:
    by_topic: dict[str, list] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(_A.AlterReplicaLogDirPartitionResult(partition_index=partition,
                                                                                   error_code=int(code)))
    return AlterReplicaLogDirsResponse(results=[_A.AlterReplicaLogDirTopicResult(topic_name=t, partitions=p)
                                                for t, p in by_topic.items()])


@handler(34, error_response=_alter_error)
def handle_alter_replica_log_dirs(ctx: RequestContext,
                                  request: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse:
    if (refused := ctx.authorizer.require_cluster(ctx, request, Op.ALTER)) is not None:
        return refused
    dirs = {absolute: real for absolute, real in configured_log_dirs(ctx)}
    errors: dict[tuple[str, int], ErrorCode] = {}
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                errors[(t.name, p)] = _alter_one(ctx, (t.name, p), d.path, dirs)
    return _alter_response(errors)


def _alter_one(ctx: RequestContext, tp: tuple[str, int], destination: str, dirs: dict[str, str]) -> ErrorCode:
    if len(f"{tp[0]}-{tp[1]}") + _FUTURE_SUFFIX_LEN > MAX_DIR_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if destination not in dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if ctx.replicas.partitions.get(tp) is None:
        if ctx.metadata.partition(*tp) is not None:
            return ErrorCode.REPLICA_NOT_AVAILABLE
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if ctx.logs.log_dir_of(tp) == dirs[destination]:
        return ErrorCode.NONE
    return ErrorCode.KAFKA_STORAGE_ERROR
