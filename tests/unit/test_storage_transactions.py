"""Transactions in the log: open transactions, markers, the LSO, `.txnindex` files, snapshots, recovery."""
from __future__ import annotations

import glob
import os
import struct

import pytest

from kafkalike.records import encode_batch
from kafkalike.records.control import encode_end_txn_marker_batch
from kafkalike.storage.config import LogConfig
from kafkalike.storage.log import Log
from kafkalike.storage.producer_state import (InvalidProducerEpochError, InvalidTxnStateError,
                                              TransactionCoordinatorFencedError)
from kafkalike.storage.transaction_index import AbortedTxn
from kafkalike.storage.validation import AppendOrigin
from tests.unit.test_storage_log import NOW, open_log

COORDINATOR = AppendOrigin.COORDINATOR


def txn(log: Log, pid: int, seq: int, n: int = 3, epoch: int = 0, transactional: bool = True):
    data = encode_batch([(b"k", b"v%d" % i) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, is_transactional=transactional, base_timestamp=NOW)
    return log.append(data, leader_epoch=0)


def marker(log: Log, pid: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0):
    data = encode_end_txn_marker_batch(commit=commit, producer_id=pid, producer_epoch=epoch,
                                       coordinator_epoch=coordinator_epoch, timestamp=NOW)
    return log.append(data, leader_epoch=0, origin=COORDINATOR)


def replicated(log: Log) -> None:
    log.update_high_watermark(log.log_end_offset)


def txn_index_files(log: Log) -> dict[str, bytes]:
    out = {}
    for path in sorted(glob.glob(os.path.join(log.dir, "*.txnindex"))):
        with open(path, "rb") as f:
            out[os.path.basename(path)] = f.read()
    return out


def test_an_open_transaction_holds_the_lso_until_its_commit_is_replicated(shm_path):
    log = open_log(shm_path)
    log.append(encode_batch([(None, b"plain")], base_timestamp=NOW), leader_epoch=0)   # offset 0
    txn(log, pid=5, seq=0)                                                                 # 1-3
    replicated(log)
    assert (log.high_watermark, log.last_stable_offset) == (4, 1)
    assert log.producer_state.entry(5).current_txn_first_offset == 1
    marker(log, 5, commit=True)                                                           # 4
    assert log.last_stable_offset == 1           # the marker is not below the high watermark yet
    replicated(log)
    assert log.last_stable_offset == log.high_watermark == 5
    assert log.collect_aborted_transactions(0, 5) == []
    assert txn_index_files(log) == {}            # commits leave no index entry, and no file


def test_an_abort_is_indexed_in_kafkas_format_and_collected_for_fetches(shm_path):
    log = open_log(shm_path)
    txn(log, pid=5, seq=0)                       # 0-2
    txn(log, pid=6, seq=0, n=2)                  # 3-4: another producer's transaction, still open
    marker(log, 5, commit=False)                 # 5
    replicated(log)
    assert log.last_stable_offset == 3
    expected = AbortedTxn(producer_id=5, first_offset=0, last_offset=5, last_stable_offset=3)
    assert log.collect_aborted_transactions(0, 3) == [expected]
    assert log.collect_aborted_transactions(6, 7) == []
    files = txn_index_files(log)
    assert files == {"00000000000000000000.txnindex": struct.pack(">hqqqq", 0, 5, 0, 5, 3)}
    marker(log, 6, commit=False)                 # 6: nothing else open, LSO after it is 7
    replicated(log)
    assert log.last_stable_offset == 7
    assert log.collect_aborted_transactions(0, 7)[1] == AbortedTxn(6, 3, 6, 7)


def test_markers_from_a_fenced_coordinator_or_producer_epoch_are_refused(shm_path):
    log = open_log(shm_path)
    txn(log, pid=5, seq=0, epoch=2)
    marker(log, 5, commit=True, epoch=2, coordinator_epoch=3)
    txn(log, pid=5, seq=3, epoch=2)
    end = log.log_end_offset
    with pytest.raises(TransactionCoordinatorFencedError):
        marker(log, 5, commit=False, epoch=2, coordinator_epoch=2)
    with pytest.raises(InvalidProducerEpochError):
        marker(log, 5, commit=False, epoch=1, coordinator_epoch=3)
    assert log.log_end_offset == end and log.producer_state.entry(5).current_txn_first_offset == 4
    # A marker for a producer with no open transaction (a retried one) is written and changes nothing.
    marker(log, 5, commit=True, epoch=2, coordinator_epoch=3)
    marker(log, 5, commit=True, epoch=2, coordinator_epoch=3)
    assert log.producer_state.ongoing == {}
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []


def test_a_plain_batch_inside_an_open_transaction_is_refused(shm_path):
    log = open_log(shm_path)
    txn(log, pid=5, seq=0)
    with pytest.raises(InvalidTxnStateError):
        txn(log, pid=5, seq=3, transactional=False)
    assert log.log_end_offset == 3


def test_clients_cannot_write_markers(shm_path):
    from kafkalike.storage.errors import InvalidRecordError
    log = open_log(shm_path)
    txn(log, pid=5, seq=0)
    with pytest.raises(InvalidRecordError):
        log.append(encode_end_txn_marker_batch(commit=True, producer_id=5, producer_epoch=0,
                                               coordinator_epoch=0, timestamp=NOW), leader_epoch=0)


def test_a_clean_reopen_keeps_open_transactions_through_the_snapshot(shm_path):
    log = open_log(shm_path)
    txn(log, pid=5, seq=0)
    txn(log, pid=6, seq=0)
    marker(log, 6, commit=False)
    log.close()
    snapshots = glob.glob(os.path.join(log.dir, "*.snapshot"))
    assert len(snapshots) == 1
    with open(snapshots[0], "rb") as f:
        data = f.read()
    # per producer: id, epoch, last seq, last offset, delta, timestamp, coordinator epoch, txn first offset
    entries = {struct.unpack_from(">q", data, 10 + i * 46)[0]: struct.unpack_from(">qhiqiqiq", data, 10 + i * 46)
               for i in range(2)}
    assert entries[5][6:] == (-1, 0) and entries[6][6:] == (0, -1)
    again = open_log(shm_path, had_clean_shutdown=True, recovery_point=log.log_end_offset)
    again.update_high_watermark(again.log_end_offset)
    assert again.producer_state.ongoing == {5: 0}
    assert again.last_stable_offset == 0
    assert again.collect_aborted_transactions(0, 7) == [AbortedTxn(6, 3, 6, 0)]   # 5 was still open
    again.close()


def test_recovery_after_a_crash_rebuilds_the_txn_index_and_the_lso(shm_path):
    config = LogConfig(segment_bytes=400)
    log = open_log(shm_path, config)
    for round_ in range(6):                       # several segments, each with aborts and commits
        txn(log, pid=5, seq=round_ * 3)
        txn(log, pid=6, seq=round_ * 3)
        marker(log, 5, commit=bool(round_ % 2))
        marker(log, 6, commit=False)
    txn(log, pid=7, seq=0)                        # left open by the "crash"
    end = log.log_end_offset
    assert len(log.segments) > 2
    before = txn_index_files(log)
    assert len(before) > 2
    for segment in log.segments:                  # a kill -9: nothing closed, no snapshot at the end
        segment.close_without_trim()
    for path in glob.glob(os.path.join(log.dir, "*.txnindex")) + glob.glob(os.path.join(log.dir, "*.snapshot")):
        os.unlink(path)
    again = open_log(shm_path, config)
    again.update_high_watermark(again.log_end_offset)
    assert again.log_end_offset == end
    assert txn_index_files(again) == before
    assert again.producer_state.ongoing == {7: end - 3}
    assert again.last_stable_offset == end - 3
    again.close()


def test_a_torn_producer_snapshot_after_an_os_crash_is_rebuilt_from_the_log(shm_path):
    """Snapshots written at a roll are not fsynced; after an OS crash the newest may be a
    few bytes, though the recovery point (checkpointed) says the log is whole up to its
    end. The torn file is not trusted: the open transaction is found again in the log."""
    config = LogConfig(segment_bytes=400)
    log = open_log(shm_path, config)
    for round_ in range(6):
        txn(log, pid=5, seq=round_ * 3)
        marker(log, 5, commit=bool(round_ % 2))
    txn(log, pid=7, seq=0)
    end = log.log_end_offset
    for segment in log.segments:
        segment.close_without_trim()
    newest = sorted(glob.glob(os.path.join(log.dir, "*.snapshot")))[-1]
    with open(newest, "r+b") as f:
        f.truncate(7)
    again = open_log(shm_path, config, recovery_point=end)
    again.update_high_watermark(again.log_end_offset)
    assert again.log_end_offset == end
    assert again.producer_state.ongoing == {7: end - 3}
    assert again.last_stable_offset == end - 3
    again.close()


def test_truncation_cuts_the_txn_index_and_reopens_the_transaction(shm_path):
    log = open_log(shm_path)
    txn(log, pid=5, seq=0)                        # 0-2
    marker(log, 5, commit=False)                  # 3
    assert len(log.collect_aborted_transactions(0, 4)) == 1
    log.truncate_to(3)
    assert log.collect_aborted_transactions(0, 4) == []
    assert txn_index_files(log) == {"00000000000000000000.txnindex": b""}
    assert log.producer_state.ongoing == {5: 0}
    replicated(log)
    assert log.last_stable_offset == 0


def test_deleted_segments_take_their_txn_index_with_them(shm_path):
    log = open_log(shm_path, LogConfig(segment_bytes=300))
    txn(log, pid=5, seq=0)
    marker(log, 5, commit=False)
    first = log.segments[0].base_offset
    for seq in range(3, 30, 3):
        txn(log, pid=5, seq=seq)
        marker(log, 5, commit=True)
    replicated(log)
    assert f"{first:020d}.txnindex" in txn_index_files(log)
    log.maybe_increment_log_start_offset(log.segments[1].base_offset)
    log.delete_old_segments()
    assert f"{first:020d}.txnindex" not in txn_index_files(log)
    assert not glob.glob(os.path.join(log.dir, f"{first:020d}.txnindex*"))


# ---------------------------------------------------------------------- the cleaner

def compacted_log(shm_path, **config):
    """A compacted log (tests/unit/test_storage_cleaner.py's settings) whose producers expire after a minute."""
    from dataclasses import replace

    from tests.unit.test_storage_cleaner import CONFIG
    from tests.unit.test_storage_cleaner import open_log as open_compacted
    return open_compacted(shm_path, replace(CONFIG, **config), max_producer_id_expiration_ms=CLEANER_EXPIRY_MS)


CLEANER_EXPIRY_MS = 60_000


def test_the_cleaner_drops_aborted_data_first_and_its_marker_later(shm_path):
    from tests.unit.test_storage_cleaner import Rec, append, headers, read_all, set_mtimes, settle
    from kafkalike.storage.cleaner import LogCleaner
    from tests.unit.test_storage_cleaner import NOW as CLEAN_NOW
    log = compacted_log(shm_path, delete_retention_ms=10_000)

    def end(commit: bool) -> None:
        log.append(encode_end_txn_marker_batch(commit=commit, producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                               timestamp=CLEAN_NOW), leader_epoch=0, origin=COORDINATOR)

    def pass_with_new_data(value: bytes) -> None:
        append(log, [(b"z", value)])
        settle(log)
        cleaner.clean_once()

    def producer_7():
        return [(h.base_offset, h.records_count, h.is_control) for h in headers(log) if h.producer_id == 7]

    append(log, [(b"k", b"committed")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    end(commit=True)                                                                            # 1
    append(log, [(b"k", b"aborted"), (b"j", b"aborted")], producer_id=7, producer_epoch=0, base_sequence=1,
           is_transactional=True)                                                               # 2-3
    end(commit=False)                                                                           # 4
    big = b"f" * 900                    # a segment of its own: the markers' segment stays apart
    append(log, [(b"filler", big)])                                                             # 5
    settle(log)
    cleaner = LogCleaner([log], clock=lambda: CLEAN_NOW)
    cleaner.clean_once()
    # The aborted records are gone and never shadowed the committed value of their key. The
    # batch holding them is producer 7's last data batch, so it stays, emptied, for the
    # producer's sequence (Kafka's RETAIN_EMPTY); a consumer still meets it, so its marker
    # stays too, indexed in the cleaned segment.
    assert read_all(log) == [Rec(0, b"k", b"committed"), Rec(5, b"filler", big)]
    assert producer_7() == [(0, 1, False), (1, 1, True), (2, 0, False), (4, 1, True)]
    assert log.collect_aborted_transactions(0, 6) == [AbortedTxn(7, 2, 4, 5)]
    pass_with_new_data(b"plain")
    assert producer_7() == [(0, 1, False), (1, 1, True), (2, 0, False), (4, 1, True)]   # as long as 7 is active
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [AbortedTxn(7, 2, 4, 5)]
    # Producer 7 expires: nothing holds its last batch any more.
    assert log.remove_expired_producers(now_ms=CLEAN_NOW + CLEANER_EXPIRY_MS) == [7]
    pass_with_new_data(b"plain-2")
    assert producer_7() == [(0, 1, False), (1, 1, True), (4, 1, True)]   # the marker saw its last batch go
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [AbortedTxn(7, 2, 4, 5)]
    pass_with_new_data(b"plain-3")
    # Nothing of the transaction is left to skip: the marker leaves the index, but stays
    # until its segment is past the delete horizon (consumers that are behind may need it).
    assert producer_7() == [(0, 1, False), (1, 1, True), (4, 1, True)]
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []
    append(log, [(b"z", b"plain-4")])
    settle(log)
    set_mtimes(log, step_s=20)          # the markers' segment is now past the delete horizon
    cleaner.clean_once()
    # The abort marker goes outright (no producer state rests on it); the commit marker
    # stays while its transaction's record does.
    assert producer_7() == [(0, 1, False), (1, 1, True)]
    assert read_all(log) == [Rec(0, b"k", b"committed"), Rec(5, b"filler", big), Rec(9, b"z", b"plain-4")]


def test_a_commit_marker_goes_once_its_data_is_compacted_away_and_delete_retention_ms_passed(shm_path):
    from tests.unit.test_storage_cleaner import Rec, append, headers, read_all, set_mtimes, settle
    from kafkalike.storage.cleaner import LogCleaner
    from tests.unit.test_storage_cleaner import NOW as CLEAN_NOW
    log = compacted_log(shm_path, delete_retention_ms=10_000)

    def commit() -> None:
        log.append(encode_end_txn_marker_batch(commit=True, producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                               timestamp=CLEAN_NOW), leader_epoch=0, origin=COORDINATOR)

    def markers():
        return [(h.base_offset, h.records_count) for h in headers(log) if h.is_control]

    append(log, [(b"k", b"old")], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)  # 0
    commit()                                                                                                # 1
    append(log, [(b"j", b"kept")], producer_id=7, producer_epoch=0, base_sequence=1, is_transactional=True)  # 2
    commit()                                                                                                # 3
    append(log, [(b"k", b"new")])                                                                           # 4
    big = b"f" * 900                    # a segment of its own: the markers' segment stays apart
    append(log, [(b"filler", big)])                                                                         # 5
    settle(log)
    cleaner = LogCleaner([log], clock=lambda: CLEAN_NOW)
    cleaner.clean_once()
    # k@0 is overwritten and its batch is not producer 7's last (2 is): the batch goes whole.
    # Its marker was read after it in this pass, so it stays for now.
    assert [(h.base_offset, h.records_count) for h in headers(log) if not h.is_control][:2] == [(2, 1), (4, 1)]
    assert markers() == [(1, 1), (3, 1)]
    append(log, [(b"z", b"1")])
    settle(log)
    cleaner.clean_once()
    assert markers() == [(1, 1), (3, 1)]        # its transaction left nothing, but delete.retention.ms holds it
    append(log, [(b"z", b"2")])
    settle(log)
    set_mtimes(log, step_s=20)
    cleaner.clean_once()
    # Past the delete horizon the empty transaction's COMMIT goes outright (it is not what
    # producer 7's state rests on); the other stays with its record.
    assert markers() == [(3, 1)]
    assert read_all(log) == [Rec(2, b"j", b"kept"), Rec(4, b"k", b"new"), Rec(5, b"filler", big), Rec(7, b"z", b"2")]


def test_a_producers_last_marker_is_kept_empty_until_the_producer_expires(shm_path):
    """Kafka 2.8's isBatchLastRecordOfProducer for a producer with no data batch in its
    epoch: its markers of that epoch are kept (emptied) for the epoch; an expired
    producer's are not."""
    from tests.unit.test_storage_cleaner import append, headers, set_mtimes, settle
    from kafkalike.storage.cleaner import LogCleaner
    from tests.unit.test_storage_cleaner import NOW as CLEAN_NOW
    log = compacted_log(shm_path, delete_retention_ms=10_000)
    append(log, [(b"k", b"aborted")], producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True)  # 0
    # A fenced producer's transaction: the coordinator aborts it with the bumped epoch.
    log.append(encode_end_txn_marker_batch(commit=False, producer_id=9, producer_epoch=1, coordinator_epoch=0,
                                           timestamp=CLEAN_NOW), leader_epoch=0, origin=COORDINATOR)       # 1
    append(log, [(b"p", b"plain")])     # 2: the marker's segment goes on past it (see cleaner.py's doc)
    append(log, [(b"f", b"f" * 900)])   # 3: a segment of its own
    settle(log)
    assert log.last_records_of_active_producers() == {9: (-1, 1)}

    def producer_9():
        return [(h.base_offset, h.records_count, h.is_control, h.producer_epoch)
                for h in headers(log) if h.producer_id == 9]

    cleaner = LogCleaner([log], clock=lambda: CLEAN_NOW)
    cleaner.clean_once()
    assert producer_9() == [(1, 1, True, 1)]      # aborted data dropped (not the producer's last data batch)
    for value in (b"1", b"2"):
        append(log, [(b"z", value)])
        settle(log)
        set_mtimes(log, step_s=20)
        cleaner.clean_once()
    # Past the horizon and with nothing left to abort, the marker would go; it is the
    # producer's last record in its current epoch, so it stays as an empty control batch.
    assert producer_9() == [(1, 0, True, 1)]
    assert log.remove_expired_producers(now_ms=CLEAN_NOW + CLEANER_EXPIRY_MS) == [9]
    append(log, [(b"z", b"3")])
    settle(log)
    set_mtimes(log, step_s=20)
    cleaner.clean_once()
    assert producer_9() == []


def test_the_cleaner_stops_at_the_last_stable_offset(shm_path):
    from tests.unit.test_storage_cleaner import Rec, append, read_all, settle
    from tests.unit.test_storage_cleaner import open_log as open_compacted
    from kafkalike.storage.cleaner import LogCleaner
    from tests.unit.test_storage_cleaner import NOW as CLEAN_NOW
    log = open_compacted(shm_path)
    append(log, [(b"a", b"1")])
    log.roll()
    append(log, [(b"a", b"open")], producer_id=8, producer_epoch=0, base_sequence=0, is_transactional=True)
    log.roll()
    append(log, [(b"a", b"3")])
    settle(log)
    assert log.last_stable_offset == 1 < log.high_watermark
    LogCleaner([log], clock=lambda: CLEAN_NOW).clean_once()
    assert read_all(log) == [Rec(0, b"a", b"1"), Rec(1, b"a", b"open"), Rec(2, b"a", b"3")]


def test_a_follower_replicating_the_batches_builds_the_same_state_and_index(shm_path):
    leader = open_log(shm_path, name="topic-0")
    txn(leader, pid=5, seq=0)
    txn(leader, pid=6, seq=0)
    marker(leader, 5, commit=False)
    txn(leader, pid=5, seq=3)
    follower = open_log(shm_path / "follower", name="topic-0")
    follower.append_as_follower(leader.read(0, 1 << 20))
    assert txn_index_files(follower) == txn_index_files(leader) != {}
    assert follower.producer_state.ongoing == leader.producer_state.ongoing == {6: 3, 5: 7}
    follower.update_high_watermark(follower.log_end_offset)
    assert follower.last_stable_offset == 3
