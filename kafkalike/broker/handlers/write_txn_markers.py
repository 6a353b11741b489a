"""WriteTxnMarkers (27): a transaction coordinator ends a transaction on the partition leaders.

As Kafka 2.8's KafkaApis.handleWriteTxnMarkersRequest: each marker (one producer's
COMMIT or ABORT, its producer epoch and the coordinator's epoch) becomes one control
batch per partition, appended as the leader with origin COORDINATOR (internal topics
allowed; the log checks the producer and coordinator epochs, answering
INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED) and acks=all: a partition is
answered once its marker is replicated to the ISR, or with its error
(NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT after
request.timeout.ms...). A partition this broker does not host is
UNKNOWN_TOPIC_OR_PARTITION and one whose topic's message format predates transactions
UNSUPPORTED_FOR_MESSAGE_FORMAT, both without an append. A marker for a producer with
no open transaction on the partition is written and changes nothing, as in Kafka (the
coordinator retries markers). Once a marker lands on partitions of __consumer_offsets,
the group coordinator makes the transaction's offsets visible (commit) or drops them
(abort). The response has one entry per producer id. Below inter.broker.protocol.version
0.11.0 every partition is UNSUPPORTED_VERSION, as Kafka's ensureInterBrokerVersion.
"""
from __future__ import annotations

import logging
import time

from twisted.internet import defer

from kafkalike.broker.authorizer.service import Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.common.topics import OFFSETS_TOPIC
from kafkalike.common.versions import api_version_at_least, record_version
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from kafkalike.records.control import encode_end_txn_marker_batch
from kafkalike.storage.validation import AppendOrigin

log = logging.getLogger("kafka.server.KafkaApis")
_R = WriteTxnMarkersResponse
TRANSACTIONS_SINCE = "0.11.0-IV0"
Errors = dict[int, dict[tuple[str, int], ErrorCode]]   # producer id -> partition -> error


def _markers_error(request, version: int, code: ErrorCode, message: str | None = None) -> WriteTxnMarkersResponse:
    errors: Errors = {}
    for m in (request.markers if request is not None else []):
        for t in m.topics:
            for p in t.partition_indexes:
                errors.setdefault(m.producer_id, {})[(t.name, p)] = code
    return _response(errors)


def _response(errors: Errors) -> WriteTxnMarkersResponse:
    markers = []
    for producer_id, parts in errors.items():
        topics: dict[str, list] = {}
        for (topic, partition), code in parts.items():
            topics.setdefault(topic, []).append(
                _R.WritableTxnMarkerPartitionResult(partition_index=partition, error_code=int(code)))
        markers.append(_R.WritableTxnMarkerResult(producer_id=producer_id, topics=[
            _R.WritableTxnMarkerTopicResult(name=name, partitions=parts_) for name, parts_ in topics.items()]))
    return WriteTxnMarkersResponse(markers=markers)


@handler(27, error_response=_markers_error)
def handle_write_txn_markers(ctx: RequestContext, request: WriteTxnMarkersRequest):
    if not api_version_at_least(ctx.config.inter_broker_protocol_version, TRANSACTIONS_SINCE):
        # Kafka's ensureInterBrokerVersion, before anything else: this cluster's protocol
        # cannot carry transactions.
        return _markers_error(request, ctx.version, ErrorCode.UNSUPPORTED_VERSION)
    if (refused := ctx.authorizer.require_cluster_operation(ctx, request, Op.CLUSTER_ACTION)) is not None:
        return refused
    errors: Errors = {}
    pending = []
    timeout_ms = ctx.config.get("request.timeout.ms")
    for marker in request.markers:
        producer_id = marker.producer_id
        mine = errors.setdefault(producer_id, {})
        entries = {}
        for topic in marker.topics:
            for index in topic.partition_indexes:
                tp = (topic.name, index)
                if ctx.replicas.partitions.get(tp) is None:
                    mine[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif record_version(ctx.topic_configs.effective(topic.name).message_format_version) < 2:
                    mine[tp] = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
                else:
                    entries[tp] = encode_end_txn_marker_batch(
                        commit=marker.transaction_result, producer_id=producer_id,
                        producer_epoch=marker.producer_epoch, coordinator_epoch=marker.coordinator_epoch,
                        timestamp=int(time.time() * 1000))
        if not entries:
            continue
        result = ctx.replicas.append_records(entries, -1, timeout_ms, lambda _topic: True,
                                             origin=AppendOrigin.COORDINATOR)
        done = _Appended(ctx, producer_id, bool(marker.transaction_result), mine)
        if isinstance(result, defer.Deferred):
            pending.append(result.addCallback(done))
        else:
            done(result)
    if not pending:
        return _response(errors)
    return defer.gatherResults(pending, consumeErrors=True).addCallback(lambda _: _response(errors))


class _Appended:
    """Kafka's maybeSendResponseCallback for one marker: record the errors and hand the
    group coordinator the __consumer_offsets partitions the marker reached."""

    def __init__(self, ctx: RequestContext, producer_id: int, committed: bool,
                 errors: dict[tuple[str, int], ErrorCode]) -> None:
        self.ctx = ctx
        self.producer_id = producer_id
        self.committed = committed
        self.errors = errors

    def __call__(self, results) -> None:
        for tp, r in results.items():
            self.errors[tp] = r.error
        offsets = {tp for tp, r in results.items() if tp[0] == OFFSETS_TOPIC and r.error == ErrorCode.NONE}
        if not offsets:
            return
        try:
            self.ctx.groups.complete_transaction(self.producer_id, {p for _, p in offsets}, self.committed)
        except Exception:
            log.exception("Received an exception while trying to update the offsets cache on transaction "
                          "marker append")
            for tp in offsets:
                self.errors[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
