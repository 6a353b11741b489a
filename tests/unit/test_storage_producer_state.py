"""Idempotent producers' batches through Log.append: duplicates, gaps, zombies, reloads."""
from __future__ import annotations

import pytest

from kafkalike.storage.log import Log
from kafkalike.storage.producer_state import (InvalidProducerEpochError, OutOfOrderSequenceError,
                                              UnknownProducerIdError, last_sequence)
from tests.unit.test_storage_batches import make_batch
from tests.unit.test_storage_log import open_log


def send(log: Log, seq: int, n: int = 2, pid: int = 7, epoch: int = 0, origin=None):
    data = make_batch([b"v%d" % i for i in range(n)], producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    return log.append(data, leader_epoch=0, origin=origin)


def test_a_retried_batch_gets_its_original_offsets_and_is_not_written_again(shm_path):
    log = open_log(shm_path)
    send(log, 0)
    send(log, 2)
    send(log, 4)
    end = log.log_end_offset
    again = send(log, 2)
    assert (again.first_offset, again.last_offset) == (2, 3)
    assert log.log_end_offset == end == 6
    assert send(log, 6).first_offset == 6


def test_only_the_last_five_batches_are_recognised(shm_path):
    log = open_log(shm_path)
    for i in range(6):
        send(log, 2 * i)
    assert send(log, 2).first_offset == 2          # 2nd..6th are remembered
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 0)                                # the 1st is forgotten: a gap, not a duplicate


def test_a_gap_in_sequences_is_refused_and_nothing_is_written(shm_path):
    log = open_log(shm_path)
    send(log, 0)
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 5)
    assert log.log_end_offset == 2
    assert send(log, 2).first_offset == 2


def test_an_older_epoch_is_a_zombie_and_a_newer_one_restarts_at_zero(shm_path):
    log = open_log(shm_path)
    send(log, 0, epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        send(log, 2, epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 2, epoch=2)
    assert send(log, 0, epoch=2).first_offset == 2


def test_an_unknown_producer_must_start_at_sequence_zero(shm_path):
    log = open_log(shm_path)
    with pytest.raises(UnknownProducerIdError):
        send(log, 3)
    assert send(log, 0).first_offset == 0
    assert send(log, 0, pid=8).first_offset == 2   # producers are independent


def test_replicated_batches_update_the_state_without_checks(shm_path):
    leader, follower = open_log(shm_path, name="t-0"), open_log(shm_path, name="t-1")
    send(leader, 0)
    send(leader, 2)
    follower.append(leader.read(0, 1 << 20), assign_offsets=False)
    assert send(follower, 2).first_offset == 2     # a new leader dedupes its predecessor's batches
    assert send(follower, 4).first_offset == 4


def test_the_state_is_rebuilt_from_the_log_on_open_and_after_truncation(shm_path):
    log = open_log(shm_path)
    send(log, 0)
    send(log, 2)
    send(log, 4)
    log.close()
    reopened = open_log(shm_path)
    assert send(reopened, 4).first_offset == 4
    reopened.truncate_to(4)
    assert reopened.log_end_offset == 4
    assert send(reopened, 4).first_offset == 4     # no longer a duplicate: written again
    assert reopened.log_end_offset == 6


def test_non_idempotent_batches_are_not_tracked(shm_path):
    log = open_log(shm_path)
    log.append(make_batch([b"a"]), leader_epoch=0)
    log.append(make_batch([b"a"]), leader_epoch=0)
    assert log.log_end_offset == 2 and len(log.producer_state) == 0


def test_sequences_wrap_past_int_max():
    assert last_sequence(2**31 - 2, 3) == 1
    assert last_sequence(5, 3) == 8


# ---------------------------------------------------------------------------- snapshots

def test_close_writes_a_snapshot_that_reopening_loads_instead_of_scanning(shm_path):
    import os

    from kafkalike.storage.producer_snapshot import list_snapshots
    log = open_log(shm_path)
    send(log, 0)
    send(log, 2)
    send(log, 0, pid=8)
    log.close()
    snapshots = list_snapshots(log.dir)
    assert [offset for offset, _ in snapshots] == [6]
    assert os.path.basename(snapshots[0][1]) == "00000000000000000006.snapshot"
    reopened = open_log(shm_path)
    assert reopened.producer_state.entry(8).last_seq == 1
    assert send(reopened, 0, pid=8).first_offset == 4   # each producer's last batch is still a duplicate
    assert send(reopened, 2).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError):         # older ones are not kept in a snapshot (as in
        send(reopened, 0)                                # Kafka): proof the state came from the file
    assert send(reopened, 4).first_offset == 6


def test_a_snapshot_from_a_roll_plus_the_batches_after_it_rebuild_the_state(shm_path):
    from kafkalike.storage.producer_snapshot import list_snapshots
    log = open_log(shm_path)
    send(log, 0)
    log.roll()
    send(log, 2)
    assert [offset for offset, _ in list_snapshots(log.dir)] == [2]
    reopened = open_log(shm_path)                        # no clean close: no snapshot at 4
    assert send(reopened, 2).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        send(reopened, 6)


def test_a_corrupt_snapshot_is_deleted_and_the_log_replayed(shm_path):
    from kafkalike.storage.producer_snapshot import list_snapshots
    log = open_log(shm_path)
    send(log, 0)
    send(log, 2)
    log.close()
    (_, path), = list_snapshots(log.dir)
    with open(path, "r+b") as f:
        f.seek(10)
        f.write(b"\xff")
    reopened = open_log(shm_path)
    assert list_snapshots(log.dir) == []
    assert send(reopened, 0).first_offset == 0 and send(reopened, 2).first_offset == 2


def test_snapshots_match_kafkas_byte_layout(shm_path):
    import struct

    from crc32c import crc32c
    from kafkalike.storage.producer_snapshot import list_snapshots
    log = open_log(shm_path)
    send(log, 0, n=3, pid=4000, epoch=2)
    log.close()
    (_, path), = list_snapshots(log.dir)
    data = open(path, "rb").read()
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count, crc) == (1, 1, crc32c(data[6:]))
    assert struct.unpack_from(">qhiqiqiq", data, 10)[:5] == (4000, 2, 2, 2, 2)
    assert len(data) == 10 + 46


# ---------------------------------------------------------------------------- expiry
# Kafka 2.8: a producer with no open transaction whose last batch's timestamp is
# transactional.id.expiration.ms old is forgotten (ProducerStateManager.removeExpiredProducers,
# every ten minutes); the log start moving forgets no producer (KAFKA-7190, Kafka 2.4).

EXPIRY_MS = 60_000


def send_at(log: Log, seq: int, timestamp: int, pid: int = 7, epoch: int = 0, transactional: bool = False):
    from kafkalike.records import encode_batch
    data = encode_batch([(b"k", b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        is_transactional=transactional, base_timestamp=timestamp)
    return log.append(data, leader_epoch=0)


def commit_at(log: Log, pid: int, timestamp: int, epoch: int = 0):
    from kafkalike.records.control import encode_end_txn_marker_batch
    from kafkalike.storage.validation import AppendOrigin
    data = encode_end_txn_marker_batch(commit=True, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0,
                                       timestamp=timestamp)
    return log.append(data, leader_epoch=0, origin=AppendOrigin.COORDINATOR)


def test_an_idle_producer_expires_but_not_while_its_transaction_is_open(shm_path):
    t = 1_700_000_000_000
    log = open_log(shm_path, max_producer_id_expiration_ms=EXPIRY_MS)
    send_at(log, 0, t, pid=7)                              # idempotent
    send_at(log, 0, t, pid=8, transactional=True)          # opens a transaction
    send_at(log, 0, t + 500, pid=9)
    assert log.remove_expired_producers(now_ms=t + EXPIRY_MS - 1) == []
    assert log.remove_expired_producers(now_ms=t + EXPIRY_MS) == [7]     # idle for exactly the limit
    assert sorted(e.producer_id for e in log.active_producers()) == [8, 9]
    with pytest.raises(UnknownProducerIdError):          # forgotten: its sequence can't go on
        send_at(log, 1, t + EXPIRY_MS, pid=7)
    assert send_at(log, 0, t + EXPIRY_MS, pid=7).first_offset == 3   # a fresh start is accepted
    # The open transaction keeps producer 8 however long it lasts; its marker's timestamp
    # then counts as its last activity (KAFKA-9144).
    assert log.remove_expired_producers(now_ms=t + 10 * EXPIRY_MS) == [9, 7]
    assert log.producer_state.entry(8).current_txn_first_offset == 1
    commit_at(log, 8, t + 10 * EXPIRY_MS)
    assert log.remove_expired_producers(now_ms=t + 11 * EXPIRY_MS - 1) == []
    assert log.remove_expired_producers(now_ms=t + 11 * EXPIRY_MS) == [8]
    assert log.active_producers() == [] and log.producer_state.ongoing == {}


def test_expired_producers_are_left_out_when_a_snapshot_is_loaded(shm_path):
    from kafkalike.storage.producer_snapshot import list_snapshots
    from tests.unit.test_storage_log import FakeClock
    t = 1_700_000_000_000
    clock = FakeClock(t - 1)
    log = open_log(shm_path, clock=clock, max_producer_id_expiration_ms=EXPIRY_MS)
    send_at(log, 0, t - EXPIRY_MS, pid=7)
    send_at(log, 0, t - 1, pid=8)
    send_at(log, 0, t - EXPIRY_MS, pid=9, transactional=True)
    log.close()
    early = open_log(shm_path, clock=clock, max_producer_id_expiration_ms=EXPIRY_MS)
    assert sorted(e.producer_id for e in early.active_producers()) == [7, 8, 9]   # none expired yet
    early.close()
    assert [offset for offset, _ in list_snapshots(log.dir)] == [3]   # the state comes from the snapshot
    clock.now = t
    late = open_log(shm_path, clock=clock, max_producer_id_expiration_ms=EXPIRY_MS)
    assert sorted(e.producer_id for e in late.active_producers()) == [8, 9]    # 9's transaction is open
    assert late.producer_state.ongoing == {9: 2}


def test_moving_the_log_start_keeps_the_producers(shm_path):
    t = 1_700_000_000_000
    log = open_log(shm_path, max_producer_id_expiration_ms=EXPIRY_MS)
    send_at(log, 0, t, pid=7)
    send_at(log, 0, t, pid=8)
    log.roll()
    send_at(log, 1, t, pid=8)
    log.update_high_watermark(log.log_end_offset)
    assert log.maybe_increment_log_start_offset(2)
    assert log.delete_old_segments() == 1 and log.log_start_offset == 2
    # Producer 7's only batch is gone from the log, but Kafka 2.4+ keeps its state: its
    # next batch follows on, and a retry of its last batch is still answered as a duplicate.
    assert send_at(log, 1, t, pid=7).first_offset == 3
    assert send_at(log, 1, t, pid=7).first_offset == 3
    assert sorted(e.producer_id for e in log.active_producers()) == [7, 8]


def test_the_log_start_drops_closed_transactions_whose_marker_lies_below_it():
    from kafkalike.storage.producer_state import ProducerBatch, ProducerStateManager
    state = ProducerStateManager()
    state.update([ProducerBatch(5, 0, 0, 0, 0, 0, 1, is_transactional=True),
                  ProducerBatch(5, 0, -1, -1, 1, 1, 1, True, True, 1, 0),       # its COMMIT at 1
                  ProducerBatch(6, 0, 0, 0, 2, 2, 1, is_transactional=True),
                  ProducerBatch(6, 0, -1, -1, 3, 3, 1, True, True, 0, 0)])      # its ABORT at 3
    assert state.first_unstable_offset() == 0            # both markers wait for the high watermark
    state.on_log_start_offset_incremented(2)
    assert state.first_unstable_offset() == 2 and [t.producer_id for t in state.unreplicated] == [6]
    state.on_log_start_offset_incremented(4)
    assert state.first_unstable_offset() is None
    assert sorted(state.producers) == [5, 6]             # the producers themselves stay


def test_the_log_manager_expires_producers_of_every_log_after_transactional_id_expiration_ms(shm_path):
    from kafkalike.storage.config import LogConfig
    from kafkalike.storage.manager import PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, LogManager
    t = 1_700_000_000_000
    now = [t]
    manager = LogManager([str(shm_path / "d")], LogConfig(), clock=lambda: now[0], enable_cleaner=False,
                         max_producer_id_expiration_ms=EXPIRY_MS)
    try:
        a, b = manager.get_or_create_log(("a", 0)), manager.get_or_create_log(("b", 0))
        assert a.max_producer_id_expiration_ms == EXPIRY_MS
        send_at(a, 0, t, pid=7)
        send_at(b, 0, t, pid=7)
        send_at(b, 0, t + EXPIRY_MS, pid=8)
        now[0] = t + EXPIRY_MS
        assert manager.remove_expired_producers() == 2
        assert a.active_producers() == [] and [e.producer_id for e in b.active_producers()] == [8]
    finally:
        manager.shutdown()
    assert PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS == 600_000   # Kafka 2.8's LogManager constant


def test_the_broker_checks_every_ten_minutes_on_a_thread(monkeypatch):
    """KafkaServer._schedule: the expiry pass goes to a thread (deferToThread), never the reactor."""
    from types import SimpleNamespace

    from twisted.internet import defer, task

    from kafkalike.broker import server as server_module
    from kafkalike.broker.config import KafkaConfig
    clock = task.Clock()
    ran: list = []
    passes: list = []
    monkeypatch.setattr(server_module.threads, "deferToThread",
                        lambda fn, *a: ran.append(fn) or defer.succeed(None))
    logs = SimpleNamespace(high_watermark_checkpoint_writer=lambda: None, recovery_checkpoint_writer=lambda: None,
                           cleanup_logs=lambda: None, flush_dirty_logs=lambda: None,
                           remove_expired_producers=lambda: passes.append(clock.seconds()))
    server = SimpleNamespace(
        config=KafkaConfig({"zookeeper.connect": "localhost:2181", "log.retention.check.interval.ms": "2000000000",
                            "log.flush.offset.checkpoint.interval.ms": "2000000000",
                            "replica.high.watermark.checkpoint.interval.ms": "2000000000",
                            "log.flush.scheduler.interval.ms": str(2**63 - 1),
                            "replica.lag.time.max.ms": "4000000000"}, hostname="b"),
        reactor=clock, log_manager=logs, _tasks=[], alter_log_dirs=SimpleNamespace(start=lambda: None),
        quotas=SimpleNamespace(expire=lambda: None), replica_manager=SimpleNamespace(shrink_isrs=lambda: None))
    server_module.KafkaServer._schedule(server)
    clock.advance(599.9)
    assert logs.remove_expired_producers not in ran
    clock.advance(0.1)
    assert ran.count(logs.remove_expired_producers) == 1
    clock.advance(600)
    assert ran.count(logs.remove_expired_producers) == 2 and passes == []   # only ever through the thread
    for loop in server._tasks:
        loop.stop()
