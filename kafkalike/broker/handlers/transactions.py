"""AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers (27),
TxnOffsetCommit (28), on a broker with no transaction coordinator yet.

Kafka 2.8 always runs one; this broker answers as a Kafka broker whose coordinator
owns no partition of __transaction_state, the state of every Kafka broker that is not
the coordinator for a given transactional id:

- AddPartitionsToTxn, AddOffsetsToTxn, EndTxn: NOT_COORDINATOR (INVALID_REQUEST for an
  empty transactional id, checked first as the coordinator does). AddPartitionsToTxn
  first fails the whole request if a partition is unknown: UNKNOWN_TOPIC_OR_PARTITION
  for those and OPERATION_NOT_ATTEMPTED for the rest, as KafkaApis does. The client
  looks for the coordinator again and retries until its transaction times out; nothing
  is written anywhere.
- TxnOffsetCommit goes to the group coordinator, which in Kafka writes transactional
  offsets that only the transaction's markers make visible. Without markers that
  cannot be done safely, so the known partitions get COORDINATOR_NOT_AVAILABLE, what
  Kafka answers while the group coordinator is not running (retriable: no offset is
  stored, none is lost); unknown ones get UNKNOWN_TOPIC_OR_PARTITION and an empty group
  id INVALID_GROUP_ID, as in Kafka.
- WriteTxnMarkers comes from a transaction coordinator, or from an admin client
  aborting a hanging transaction (KIP-664). Writing markers without producer state
  would be half a transaction protocol, so every partition is answered
  UNSUPPORTED_VERSION, which is what Kafka answers when its inter-broker protocol
  cannot carry transactions, and no marker is appended. Since no producer of this
  cluster can start a transaction, there is no transaction a marker could end.
"""
from __future__ import annotations

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from kafkalike.protocol.messages.add_partitions_to_txn import (AddPartitionsToTxnRequest,
                                                               AddPartitionsToTxnResponse)
from kafkalike.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from kafkalike.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafkalike.protocol.messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse


def _coordinator_error(transactional_id: str | None) -> ErrorCode:
    if not transactional_id:
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NOT_COORDINATOR


def _known(ctx: RequestContext, topic: str, partition: int) -> bool:
    return ctx.metadata.partition(topic, partition) is not None


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
def handle_add_partitions_to_txn(ctx: RequestContext, request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    errors: dict[str, dict[int, ErrorCode]] = {}
    for t in request.topics:
        for p in t.partitions:
            errors.setdefault(t.name, {})[p] = (ErrorCode.OPERATION_NOT_ATTEMPTED if _known(ctx, t.name, p)
                                                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if all(code == ErrorCode.OPERATION_NOT_ATTEMPTED for parts in errors.values() for code in parts.values()):
        return _add_partitions_error(request, ctx.version, _coordinator_error(request.transactional_id))
    return _add_partitions_response(errors)


# -- AddOffsetsToTxn, EndTxn -----------------------------------------------------------


@handler(25)
def handle_add_offsets_to_txn(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(error_code=int(_coordinator_error(request.transactional_id)))


@handler(26)
def handle_end_txn(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    return EndTxnResponse(error_code=int(_coordinator_error(request.transactional_id)))


# -- TxnOffsetCommit -------------------------------------------------------------------


def _txn_commit_error(request, version: int, code: ErrorCode) -> TxnOffsetCommitResponse:
    R = TxnOffsetCommitResponse
    topics = request.topics if request is not None else []
    return R(topics=[R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
        R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=int(code))
        for p in t.partitions]) for t in topics])


@handler(28, error_response=_txn_commit_error)
def handle_txn_offset_commit(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    coordinator_error = ErrorCode.INVALID_GROUP_ID if not request.group_id else ErrorCode.COORDINATOR_NOT_AVAILABLE
    response = _txn_commit_error(request, ctx.version, coordinator_error)
    for topic in response.topics:
        for p in topic.partitions:
            if not _known(ctx, topic.name, p.partition_index):
                p.error_code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return response


# -- WriteTxnMarkers -------------------------------------------------------------------


def _markers_error(request, version: int, code: ErrorCode) -> WriteTxnMarkersResponse:
    R = WriteTxnMarkersResponse
    markers = request.markers if request is not None else []
    return R(markers=[R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        R.WritableTxnMarkerTopicResult(name=t.name, partitions=[
            R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=int(code))
            for p in t.partition_indexes]) for t in m.topics]) for m in markers])


@handler(27, error_response=_markers_error)
def handle_write_txn_markers(ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    return _markers_error(request, ctx.version, ErrorCode.UNSUPPORTED_VERSION)
