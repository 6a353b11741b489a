"""AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26) and TxnOffsetCommit (28).

The first three go to the transaction coordinator (kafkalike/coordinator/transaction),
TxnOffsetCommit to the group coordinator, as in Kafka 2.8's KafkaApis. Answers wait
for the coordinator's write to __transaction_state (or __consumer_offsets).

Clients older than KIP-588 (AddPartitionsToTxn and AddOffsetsToTxn and EndTxn before
v2) do not know PRODUCER_FENCED: they get INVALID_PRODUCER_EPOCH, which they treat
the same way (fatal). WriteTxnMarkers, which partition leaders serve, is in
write_txn_markers.py.
"""
from __future__ import annotations

from twisted.internet import defer

from kafkalike.broker.authorizer.service import GROUP, TOPIC, TRANSACTIONAL_ID, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.topics import INTERNAL_TOPICS
from kafkalike.coordinator.config import OFFSETS_TOPIC
from kafkalike.coordinator.records import NO_LEADER_EPOCH, OffsetAndMetadata
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from kafkalike.protocol.messages.add_partitions_to_txn import (AddPartitionsToTxnRequest,
                                                               AddPartitionsToTxnResponse)
from kafkalike.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from kafkalike.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse


def transaction_coordinator(ctx: RequestContext):
    """The broker's TransactionCoordinator, or None while it does not run."""
    coordinator = ctx.transactions
    return coordinator if coordinator is not None and coordinator.active else None


def fenced_for(version: int, first_version_with_producer_fenced: int, error: ErrorCode) -> ErrorCode:
    if error == ErrorCode.PRODUCER_FENCED and version < first_version_with_producer_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def _known(ctx: RequestContext, topic: str, partition: int) -> bool:
    return ctx.metadata.partition(topic, partition) is not None


def _coordinator_error(transactional_id: str | None) -> ErrorCode:
    return ErrorCode.INVALID_REQUEST if not transactional_id else ErrorCode.COORDINATOR_NOT_AVAILABLE


# -- AddPartitionsToTxn ----------------------------------------------------------------


def _add_partitions_response(errors: dict[str, dict[int, ErrorCode]]) -> AddPartitionsToTxnResponse:
    R = AddPartitionsToTxnResponse
    return R(results=[R.AddPartitionsToTxnTopicResult(name=topic, results=[
        R.AddPartitionsToTxnPartitionResult(partition_index=p, error_code=int(code)) for p, code in parts.items()])
        for topic, parts in errors.items()])


def _add_partitions_error(request, version: int, code: ErrorCode) -> AddPartitionsToTxnResponse:
    topics = request.topics if request is not None else []
    return _add_partitions_response({t.name: {p: code for p in t.partitions} for t in topics})


@handler(24, error_response=_add_partitions_error)
def handle_add_partitions_to_txn(ctx: RequestContext, request: AddPartitionsToTxnRequest):
    # Unknown and unauthorized partitions fail the whole request before the coordinator hears of it.
    if (refused := ctx.authorizer.require(ctx, request, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id,
                                          ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)) is not None:
        return refused
    # Internal topics are never authorized here (KafkaApis filters them out first), super users or not.
    writable = ctx.authorizer.filter(ctx, Op.WRITE, TOPIC, (t.name for t in request.topics
                                                            if t.name not in INTERNAL_TOPICS))
    errors: dict[str, dict[int, ErrorCode]] = {}
    unknown = False
    for t in request.topics:
        for p in t.partitions:
            known = _known(ctx, t.name, p) and t.name in writable
            unknown |= not known
            errors.setdefault(t.name, {})[p] = (
                ErrorCode.OPERATION_NOT_ATTEMPTED if known else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if t.name not in writable else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if unknown:
        return _add_partitions_response(errors)
    coordinator = transaction_coordinator(ctx)
    if coordinator is None:
        return _add_partitions_error(request, ctx.version, _coordinator_error(request.transactional_id))
    partitions = {(t.name, p) for t in request.topics for p in t.partitions}
    d = coordinator.add_partitions_to_transaction(request.transactional_id, request.producer_id,
                                                  request.producer_epoch, partitions)
    return d.addCallback(lambda error: _add_partitions_error(request, ctx.version, fenced_for(ctx.version, 2, error)))


# -- AddOffsetsToTxn, EndTxn -----------------------------------------------------------


@handler(25)
def handle_add_offsets_to_txn(ctx: RequestContext, request: AddOffsetsToTxnRequest):
    if not ctx.authorizer.authorize(ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    if not ctx.authorizer.authorize(ctx, Op.READ, GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    coordinator = transaction_coordinator(ctx)
    groups = ctx.groups
    if coordinator is None or groups is None:
        return AddOffsetsToTxnResponse(error_code=int(_coordinator_error(request.transactional_id)))
    partition = (OFFSETS_TOPIC, groups.partition_for(request.group_id))
    d = coordinator.add_partitions_to_transaction(request.transactional_id, request.producer_id,
                                                  request.producer_epoch, {partition})
    return d.addCallback(lambda error: AddOffsetsToTxnResponse(error_code=int(fenced_for(ctx.version, 2, error))))


@handler(26)
def handle_end_txn(ctx: RequestContext, request: EndTxnRequest):
    if not ctx.authorizer.authorize(ctx, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return EndTxnResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    coordinator = transaction_coordinator(ctx)
    if coordinator is None:
        return EndTxnResponse(error_code=int(_coordinator_error(request.transactional_id)))
    d = coordinator.end_transaction(request.transactional_id, request.producer_id, request.producer_epoch,
                                    request.committed)
    return d.addCallback(lambda error: EndTxnResponse(error_code=int(fenced_for(ctx.version, 2, error))))


# -- TxnOffsetCommit -------------------------------------------------------------------


def _txn_commit_answer(request, errors: dict[tuple[str, int], ErrorCode]) -> TxnOffsetCommitResponse:
    R = TxnOffsetCommitResponse
    return R(topics=[R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
        R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                           error_code=int(errors.get((t.name, p.partition_index), ErrorCode.NONE)))
        for p in t.partitions]) for t in request.topics])


def _txn_commit_error(request, version: int, code: ErrorCode) -> TxnOffsetCommitResponse:
    if request is None:
        return TxnOffsetCommitResponse(topics=[])
    return _txn_commit_answer(request, {(t.name, p.partition_index): code
                                        for t in request.topics for p in t.partitions})


@handler(28, error_response=_txn_commit_error)
def handle_txn_offset_commit(ctx: RequestContext, request: TxnOffsetCommitRequest):
    errors: dict[tuple[str, int], ErrorCode] = {}
    wanted = {}
    if (refused := ctx.authorizer.require(ctx, request, Op.WRITE, TRANSACTIONAL_ID, request.transactional_id,
                                          ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)) is not None:
        return refused
    if (refused := ctx.authorizer.require(ctx, request, Op.READ, GROUP, request.group_id,
                                          ErrorCode.GROUP_AUTHORIZATION_FAILED)) is not None:
        return refused
    readable = ctx.authorizer.filter(ctx, Op.READ, TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif _known(ctx, *tp):
                wanted[tp] = p
            else:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not request.group_id:
        return _txn_commit_answer(request, {**errors, **{tp: ErrorCode.INVALID_GROUP_ID for tp in wanted}})
    if not wanted:
        return _txn_commit_answer(request, errors)
    groups = ctx.groups
    if groups is None or not groups.active:
        return _txn_commit_answer(request, {**errors, **{tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in wanted}})
    now = groups.now_ms()
    offsets = {tp: OffsetAndMetadata(
        offset=p.committed_offset,
        leader_epoch=p.committed_leader_epoch if ctx.version >= 2 else NO_LEADER_EPOCH,
        metadata=p.committed_metadata if p.committed_metadata is not None else "",
        commit_timestamp=now) for tp, p in wanted.items()}
    v3 = ctx.version >= 3
    d: defer.Deferred = groups.commit_txn_offsets(
        request.group_id, request.producer_id, request.producer_epoch, request.member_id if v3 else "",
        request.group_instance_id if v3 else None, request.generation_id if v3 else -1, offsets)
    return d.addCallback(lambda done: _txn_commit_answer(request, {**errors, **done}))
