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
