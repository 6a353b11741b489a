"""TxnOffsetCommit in the group coordinator: offsets written as part of a transaction
stay invisible until the transaction's marker lands (complete_transaction), an abort
drops them, and a coordinator loading the log replays the markers the same way."""
from __future__ import annotations

import pytest

from kafkalike.coordinator.config import OFFSETS_TOPIC
from kafkalike.coordinator.records import OffsetAndMetadata
from kafkalike.protocol.errors import ErrorCode
from kafkalike.records import ControlRecordType, EndTransactionMarker, decode_batches, encode_batch
from kafkalike.storage.validation import AppendOrigin
from tests.unit.test_coordinator_membership import Harness, fired

PID, EPOCH = 4000, 0


@pytest.fixture
def h(shm_path) -> Harness:
    harness = Harness(shm_path, partitions=1)
    harness.lead()
    return harness


def txn_commit(h, group, offsets, pid=PID, member="", generation=-1, coordinator=None):
    values = {tp: OffsetAndMetadata(o, -1, "", h.now()) for tp, o in offsets.items()}
    coordinator = coordinator or h.coordinator
    return fired(coordinator.commit_txn_offsets(group, pid, EPOCH, member, None, generation, values))


def fetch(coordinator, group, require_stable=False):
    error, found = coordinator.fetch_offsets(group, require_stable, [("t", 0)])
    assert error == ErrorCode.NONE
    return {tp: (o.offset if o.error == ErrorCode.NONE else o.error) for tp, o in found.items()}


def write_marker(h, pid: int, committed: bool) -> None:
    """What the WriteTxnMarkers handler appends to __consumer_offsets before it calls us."""
    marker = EndTransactionMarker(ControlRecordType.COMMIT if committed else ControlRecordType.ABORT, 0)
    batch = encode_batch([(marker.key(), marker.value())], producer_id=pid, producer_epoch=EPOCH,
                         is_transactional=True, is_control=True)
    result = h.replicas.append_records({(OFFSETS_TOPIC, 0): batch}, 1, 1000, lambda t: True,
                                       origin=AppendOrigin.COORDINATOR)
    assert result[(OFFSETS_TOPIC, 0)].error == ErrorCode.NONE


def test_offsets_are_invisible_until_commit_and_written_as_a_transactional_batch(h):
    assert txn_commit(h, "g", {("t", 0): 7}) == {("t", 0): ErrorCode.NONE}
    assert fetch(h.coordinator, "g") == {("t", 0): -1}
    assert fetch(h.coordinator, "g", require_stable=True) == {("t", 0): ErrorCode.UNSTABLE_OFFSET_COMMIT}
    part = h.replicas.partitions[(OFFSETS_TOPIC, 0)]
    batches = list(decode_batches(part.log.read(0, 1 << 20, max_offset=part.log.log_end_offset)))
    assert [(b.is_transactional, b.producer_id, b.producer_epoch) for b in batches] == [(True, PID, EPOCH)]
    # a second commit of the same transaction is not taken for a duplicate of the first
    assert txn_commit(h, "g", {("t", 0): 9}) == {("t", 0): ErrorCode.NONE}
    write_marker(h, PID, True)
    h.coordinator.complete_transaction(PID, {0}, True)
    assert fetch(h.coordinator, "g", require_stable=True) == {("t", 0): 9}


def test_abort_drops_the_offsets(h):
    txn_commit(h, "g", {("t", 0): 7})
    h.coordinator.complete_transaction(PID, {0}, False)
    assert fetch(h.coordinator, "g", require_stable=True) == {("t", 0): -1}


def test_a_marker_for_other_partitions_leaves_the_offsets_pending(h):
    txn_commit(h, "g", {("t", 0): 7})
    h.coordinator.complete_transaction(PID, {3}, True)
    assert fetch(h.coordinator, "g", require_stable=True) == {("t", 0): ErrorCode.UNSTABLE_OFFSET_COMMIT}


def test_a_newer_plain_commit_wins_over_an_older_transaction(h):
    txn_commit(h, "g", {("t", 0): 7})
    values = {("t", 0): OffsetAndMetadata(20, -1, "", h.now())}
    fired(h.coordinator.commit_offsets("g", "", None, -1, values))
    h.coordinator.complete_transaction(PID, {0}, True)
    assert fetch(h.coordinator, "g") == {("t", 0): 20}


def test_member_checks_of_kip_447(h):
    (a, _b), generation = h.stable_group("live", 2)
    assert txn_commit(h, "live", {("t", 0): 1}, member="stranger", generation=generation) == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert txn_commit(h, "live", {("t", 0): 1}, member=a, generation=generation + 1) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert txn_commit(h, "live", {("t", 0): 1}, member=a, generation=generation) == {("t", 0): ErrorCode.NONE}


def test_a_new_coordinator_replays_commit_and_abort_markers(h):
    txn_commit(h, "committed", {("t", 0): 5}, pid=1)
    txn_commit(h, "aborted", {("t", 0): 6}, pid=2)
    txn_commit(h, "open", {("t", 0): 8}, pid=3)
    write_marker(h, 1, True)
    write_marker(h, 2, False)
    h.coordinator.on_resigned(0)
    fresh = h.new_coordinator()
    fresh.on_elected(0, 1)
    while fresh.manager.loads:
        h.clock.advance(0)
    assert fetch(fresh, "committed") == {("t", 0): 5}
    assert fetch(fresh, "aborted") == {("t", 0): -1}
    assert fetch(fresh, "open", require_stable=True) == {("t", 0): ErrorCode.UNSTABLE_OFFSET_COMMIT}
    write_marker(h, 3, True)
    fresh.complete_transaction(3, {0}, True)
    assert fetch(fresh, "open") == {("t", 0): 8}
