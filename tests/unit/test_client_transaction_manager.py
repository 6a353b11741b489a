"""The transactional producer's state machine, driven as the sender drives it, with the
coordinators' answers made by hand: which request goes out next, what each answer does
to the state, and which errors are fatal, abortable or retried (Java's TransactionManager)."""
from __future__ import annotations

import pytest

from kafkalike.client.errors import (
    IllegalStateError,
    InvalidProducerEpochError,
    KafkaError,
    KafkaTimeoutError,
    ProducerFencedError,
)
from kafkalike.client.idempotence import IdempotenceManager
from kafkalike.client.metadata import TopicPartition
from kafkalike.client.transaction_manager import State, TransactionManager
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnResponse
from kafkalike.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorResponse
from kafkalike.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

TP = TopicPartition("out", 0)
LATER = 1e12  # a `now` past every retry backoff


def manager() -> TransactionManager:
    return TransactionManager("tx", 60000, IdempotenceManager(), retry_backoff_ms=0)


def step(tm: TransactionManager, response, incomplete: bool = False):
    """Send the next request (finding the coordinator first if needed) and answer it."""
    handler = tm.next_request(incomplete, LATER)
    assert handler is not None, "nothing to send"
    if handler.coordinator is not None and tm.coordinator_for(handler) is None:
        tm.put_back(handler)
        lookup = tm.next_request(incomplete, LATER)
        assert lookup.name == "FindCoordinator"
        tm.on_response(lookup, FindCoordinatorResponse(node_id=0, host="h", port=9092), None)
        handler = tm.next_request(incomplete, LATER)
    request = handler.build()
    tm.on_response(handler, response, None)
    return request


def initialized() -> TransactionManager:
    tm = manager()
    result = tm.initialize_transactions()
    request = step(tm, InitProducerIdResponse(producer_id=7, producer_epoch=3))
    assert isinstance(request, InitProducerIdRequest) and request.transactional_id == "tx"
    assert request.transaction_timeout_ms == 60000
    result.wait(0)
    assert tm.state is State.READY and (tm.idempotence.producer_id, tm.idempotence.producer_epoch) == (7, 3)
    return tm


def added(tm: TransactionManager) -> None:
    assert tm.maybe_add_partition(TP)
    assert not tm.is_send_to_partition_allowed(TP)  # batches wait for AddPartitionsToTxn
    step(tm, AddPartitionsToTxnResponse(results=[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult(
        name="out", results=[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult(partition_index=0)])]))
    assert tm.is_send_to_partition_allowed(TP)


def test_calls_out_of_order_are_refused_with_javas_messages():
    tm = manager()
    with pytest.raises(IllegalStateError, match="Invalid transition attempted from state UNINITIALIZED to state "
                                                "IN_TRANSACTION"):
        tm.begin_transaction()
    with pytest.raises(IllegalStateError, match="before completing a call to initTransactions"):
        tm.fail_if_not_ready_for_send()
    tm = initialized()
    with pytest.raises(IllegalStateError, match="Cannot call send in state READY"):
        tm.fail_if_not_ready_for_send()
    with pytest.raises(IllegalStateError, match="from state READY to state COMMITTING_TRANSACTION"):
        tm.begin_commit()


def test_commit_waits_for_batches_then_sends_end_txn():
    tm = initialized()
    tm.begin_transaction()
    added(tm)
    result = tm.begin_commit()
    assert tm.next_request(True, LATER) is None  # batches still in flight: EndTxn waits
    request = step(tm, EndTxnResponse())
    assert isinstance(request, EndTxnRequest) and request.committed and request.producer_epoch == 3
    result.wait(0)
    assert tm.state is State.READY and not tm.partitions_in_transaction


def test_an_empty_transaction_completes_without_the_coordinator():
    tm = initialized()
    tm.begin_transaction()
    result = tm.begin_commit()
    assert tm.next_request(False, LATER) is None
    result.wait(0)
    assert tm.state is State.READY


def test_retriable_answers_are_retried_and_not_coordinator_finds_it_again():
    tm = initialized()
    tm.begin_transaction()
    added(tm)
    result = tm.begin_commit()
    step(tm, EndTxnResponse(error_code=ErrorCode.CONCURRENT_TRANSACTIONS))
    step(tm, EndTxnResponse(error_code=ErrorCode.NOT_COORDINATOR))
    assert tm.next_request(False, LATER).name == "FindCoordinator"
    assert not result.completed and tm.state is State.COMMITTING_TRANSACTION


def test_a_fenced_end_txn_is_fatal_and_every_later_call_says_so():
    tm = initialized()
    tm.begin_transaction()
    added(tm)
    result = tm.begin_commit()
    step(tm, EndTxnResponse(error_code=ErrorCode.INVALID_PRODUCER_EPOCH))  # EndTxn v<2 spelling of fenced
    with pytest.raises(ProducerFencedError):
        result.wait(0)
    assert tm.state is State.FATAL_ERROR and not tm.is_send_to_partition_allowed(TP)
    with pytest.raises(ProducerFencedError):
        tm.begin_transaction()
    with pytest.raises(KafkaError) as error:
        tm.fail_if_not_ready_for_send()
    assert isinstance(error.value.__cause__, ProducerFencedError)


def test_a_failed_batch_makes_the_transaction_abortable_and_its_abort_bumps_the_epoch():
    tm = initialized()
    tm.begin_transaction()
    added(tm)
    tm.handle_failed_batch(KafkaTimeoutError("Expiring 1 record(s)"), sequenced=True)
    assert tm.state is State.ABORTABLE_ERROR
    with pytest.raises(KafkaError, match="Cannot execute transactional method because we are in an error state"):
        tm.begin_commit()
    result = tm.begin_abort()
    request = step(tm, EndTxnResponse())
    assert isinstance(request, EndTxnRequest) and not request.committed
    assert tm.state is State.INITIALIZING
    request = step(tm, InitProducerIdResponse(producer_id=7, producer_epoch=4))
    assert (request.producer_id, request.producer_epoch) == (7, 3)  # KIP-360: bump this id's epoch
    result.wait(0)
    assert tm.state is State.READY and tm.idempotence.producer_epoch == 4


def test_an_old_epoch_at_a_partition_leader_is_abortable_until_the_coordinator_says_fenced():
    tm = initialized()
    tm.begin_transaction()
    added(tm)
    tm.handle_failed_batch(InvalidProducerEpochError(), sequenced=True)
    with pytest.raises(InvalidProducerEpochError):
        tm.begin_commit()
    result = tm.begin_abort()
    step(tm, EndTxnResponse(error_code=ErrorCode.PRODUCER_FENCED))
    with pytest.raises(ProducerFencedError):
        result.wait(0)


def test_a_timed_out_call_may_be_repeated_and_waits_on_the_same_request():
    tm = initialized()
    tm.begin_transaction()
    added(tm)
    first = tm.begin_commit()
    with pytest.raises(KafkaTimeoutError, match=r"while awaiting EndTxn\(COMMIT\)"):
        first.wait(0.01)
    assert tm.begin_commit() is first
    with pytest.raises(IllegalStateError, match="previous call to `EndTxn\\(COMMIT\\)` timed out"):
        tm.begin_transaction()
