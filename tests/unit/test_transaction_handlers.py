"""The transaction handlers' translation of the coordinator's answers per request version:
clients older than KIP-588 get INVALID_PRODUCER_EPOCH where newer ones get
PRODUCER_FENCED; unknown partitions fail AddPartitionsToTxn before the coordinator is
asked; AddOffsetsToTxn adds the group's __consumer_offsets partition."""
from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer

from kafkalike.broker.authorizer import ALLOW_ALL
from kafkalike.broker.handlers.init_producer_id import handle_init_producer_id
from kafkalike.broker.handlers.transactions import (handle_add_offsets_to_txn, handle_add_partitions_to_txn,
                                                    handle_end_txn)
from kafkalike.coordinator.transaction.coordinator import InitProducerIdResult
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kafkalike.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kafkalike.protocol.messages.end_txn import EndTxnRequest
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest
from tests.unit.test_coordinator_membership import fired


class FencingCoordinator:
    """Answers every request PRODUCER_FENCED, and remembers what it was asked."""

    active = True

    def __init__(self) -> None:
        self.added: list = []

    def init_producer_id(self, txn_id, timeout_ms, expected):
        return defer.succeed(InitProducerIdResult(-1, -1, ErrorCode.PRODUCER_FENCED))

    def add_partitions_to_transaction(self, txn_id, pid, epoch, partitions):
        self.added.append(partitions)
        return defer.succeed(ErrorCode.PRODUCER_FENCED)

    def end_transaction(self, txn_id, pid, epoch, committed):
        return defer.succeed(ErrorCode.PRODUCER_FENCED)


def ctx(version: int, coordinator=None):
    known = {("t", 0), ("t", 1)}
    metadata = SimpleNamespace(partition=lambda t, p: object() if (t, p) in known else None)
    groups = SimpleNamespace(partition_for=lambda group: 7, active=True)
    return SimpleNamespace(version=version, transactions=coordinator or FencingCoordinator(), metadata=metadata,
                           groups=groups, authorizer=ALLOW_ALL)


def answer(result):
    return fired(result) if isinstance(result, defer.Deferred) else result


def test_producer_fenced_becomes_invalid_producer_epoch_for_old_clients():
    end = EndTxnRequest(transactional_id="x", producer_id=1, producer_epoch=0, committed=True)
    assert [answer(handle_end_txn(ctx(v), end)).error_code for v in range(4)] == [
        ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED,
        ErrorCode.PRODUCER_FENCED]
    init = InitProducerIdRequest(transactional_id="x", transaction_timeout_ms=1000)
    assert [answer(handle_init_producer_id(ctx(v), init)).error_code for v in range(5)] == [
        ErrorCode.INVALID_PRODUCER_EPOCH] * 4 + [ErrorCode.PRODUCER_FENCED]
    add = AddOffsetsToTxnRequest(transactional_id="x", producer_id=1, producer_epoch=0, group_id="g")
    assert answer(handle_add_offsets_to_txn(ctx(1), add)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_add_offsets_adds_the_groups_offsets_partition():
    coordinator = FencingCoordinator()
    add = AddOffsetsToTxnRequest(transactional_id="x", producer_id=1, producer_epoch=0, group_id="g")
    answer(handle_add_offsets_to_txn(ctx(3, coordinator), add))
    assert coordinator.added == [{("__consumer_offsets", 7)}]


def test_unknown_partitions_fail_add_partitions_before_the_coordinator():
    R = AddPartitionsToTxnRequest
    coordinator = FencingCoordinator()
    request = R(transactional_id="x", producer_id=1, producer_epoch=0,
                topics=[R.AddPartitionsToTxnTopic(name="t", partitions=[0, 9])])
    resp = answer(handle_add_partitions_to_txn(ctx(3, coordinator), request))
    assert {p.partition_index: p.error_code for t in resp.results for p in t.results} == {
        0: ErrorCode.OPERATION_NOT_ATTEMPTED, 9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert coordinator.added == []
    request.topics[0].partitions = [0, 1]
    resp = answer(handle_add_partitions_to_txn(ctx(1, coordinator), request))
    assert {p.error_code for t in resp.results for p in t.results} == {ErrorCode.INVALID_PRODUCER_EPOCH}
    assert coordinator.added == [{("t", 0), ("t", 1)}]


def test_txn_offset_commit_goes_to_the_group_coordinator_with_kip_447_fields_from_v3():
    from kafkalike.broker.handlers.transactions import handle_txn_offset_commit
    from kafkalike.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest as R
    calls = []

    def commit_txn_offsets(group, pid, epoch, member, instance, generation, offsets):
        calls.append((group, pid, epoch, member, instance, generation, {tp: o.offset for tp, o in offsets.items()}))
        return defer.succeed({tp: ErrorCode.NONE for tp in offsets})
    c = ctx(3)
    c.groups = SimpleNamespace(active=True, now_ms=lambda: 5, commit_txn_offsets=commit_txn_offsets)
    part = R.TxnOffsetCommitRequestPartition
    request = R(transactional_id="x", group_id="g", producer_id=3, producer_epoch=1, member_id="m",
                generation_id=4, topics=[R.TxnOffsetCommitRequestTopic(name="t", partitions=[
                    part(partition_index=0, committed_offset=10), part(partition_index=9, committed_offset=1)])])

    def errors(version):
        c.version = version
        resp = answer(handle_txn_offset_commit(c, request))
        return [(p.partition_index, p.error_code) for t in resp.topics for p in t.partitions]
    assert errors(3) == [(0, ErrorCode.NONE), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert errors(2) == [(0, ErrorCode.NONE), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert calls == [("g", 3, 1, "m", None, 4, {("t", 0): 10}), ("g", 3, 1, "", None, -1, {("t", 0): 10})]
    request.group_id = ""
    assert errors(3) == [(0, ErrorCode.INVALID_GROUP_ID), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
