"""DescribeLogDirs (35) and AlterReplicaLogDirs (34): the broker's log.dirs and what is in them.

DescribeLogDirs answers, as Kafka 2.8's ReplicaManager.describeLogDirs does, one
result per configured log dir (its absolute path), listing every topic with a log in
that dir and, under it, the requested partitions (all of them for a null topic list;
a topic with logs there but none requested is listed with no partitions, as 2.8 does).
Sizes are the bytes of the partition's segments; the offset lag of a current replica
is how far its log end lags its high watermark, never negative, that of a future
replica (a move between dirs, is_future_key true) how far its log end lags the
current log's, and -1 for a log no partition owns.

AlterReplicaLogDirs is answered per partition in Kafka's order of checks: a topic too
long for a "-future" dir name is INVALID_TOPIC_EXCEPTION, a dir that is not one of
log.dirs LOG_DIR_NOT_FOUND, one that is not usable (gone or not writable: Kafka's
offline dir) KAFKA_STORAGE_ERROR. Then the move itself (broker/replica_alter_log_dirs.py):
a partition this broker does not host yet gets the dir remembered for when it is
created and is answered REPLICA_NOT_AVAILABLE (2.8 keeps that code here rather than
NOT_LEADER_OR_FOLLOWER, "for compatibility"; UNKNOWN_TOPIC_OR_PARTITION for an unknown
topic); a replica already in the target dir is a successful no-op; any other starts
(or redirects) the copy to a future log in the target dir and answers NONE.
"""
from __future__ import annotations

import os
from collections import defaultdict

from twisted.internet import defer

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
        by_dir[ctx.logs.log_dir_of(tp)][tp[0]].append((tp, log, False))
    for tp, log in sorted(ctx.logs.future_logs.items()):
        by_dir[ctx.logs.future_log_dir_of(tp)][tp[0]].append((tp, log, True))
    results = []
    for absolute, real in configured_log_dirs(ctx):
        topics = [_D.DescribeLogDirsTopic(name=topic, partitions=[
            _D.DescribeLogDirsPartition(partition_index=tp[1], partition_size=log.size,
                                        offset_lag=_offset_lag(ctx, tp, log, future), is_future_key=future)
            for tp, log, future in entries if tp in wanted])
            for topic, entries in by_dir.get(real, {}).items()]
        results.append(_D.DescribeLogDirsResult(error_code=0, log_dir=absolute, topics=topics))
    return DescribeLogDirsResponse(results=results)


def _offset_lag(ctx: RequestContext, tp, log, future: bool = False) -> int:
    part = ctx.replicas.partitions.get(tuple(tp))
    if part is None:
        return INVALID_OFFSET_LAG
    if future:
        return part.log.log_end_offset - log.log_end_offset
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
    moves: dict[tuple[str, int], str] = {}
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                tp = (t.name, p)
                code = _check(tp, d.path, dirs)
                if code is None:
                    moves[tp] = dirs[d.path]
                    errors.pop(tp, None)
                else:
                    moves.pop(tp, None)
                    errors[tp] = code
    if not moves:
        return _alter_response(errors)
    mover = ctx.services.alter_log_dirs
    if mover is None:            # services built without a mover (unit tests)
        return _alter_response({**errors, **{tp: ErrorCode.KAFKA_STORAGE_ERROR for tp in moves}})

    async def run() -> AlterReplicaLogDirsResponse:
        done = await mover.alter_replica_log_dirs(moves, lambda tp: ctx.metadata.partition(*tp) is not None)
        return _alter_response({**errors, **done})
    return defer.ensureDeferred(run())


def _check(tp: tuple[str, int], destination: str, dirs: dict[str, str]) -> ErrorCode | None:
    if len(f"{tp[0]}-{tp[1]}") + _FUTURE_SUFFIX_LEN > MAX_DIR_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if destination not in dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if not os.path.isdir(dirs[destination]) or not os.access(dirs[destination], os.W_OK):
        return ErrorCode.KAFKA_STORAGE_ERROR
    return None
