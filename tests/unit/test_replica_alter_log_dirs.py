"""The copier of moves between log dirs on a Clock: throttled by its quota, following the
current log's truncation, dropped with its partition, resumed for a future log found at
start-up."""
from __future__ import annotations

from twisted.internet.task import Clock

from kafkalike.broker.replica_alter_log_dirs import ReplicaAlterLogDirsManager
from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.broker.replication_quota import Rate, ReplicationQuota
from kafkalike.records.batch import encode_batch
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager

TP = ("t", 0)


def setup(root, quota=None):
    logs = LogManager([str(root / "a"), str(root / "b")], LogConfig(), enable_cleaner=False)
    replicas = ReplicaManager(0, logs, None, lambda t: LogConfig(), lambda: 0)
    clock = Clock()
    mover = ReplicaAlterLogDirsManager(0, replicas, logs, clock, quota, chunk_bytes=1)
    part = replicas.get_or_create_partition(TP, is_new=True)
    for i in range(10):
        part.log.append(encode_batch([(b"k%d" % i, b"v" * 100)], base_timestamp=1_650_000_000_000), leader_epoch=0)
    part.log.update_high_watermark(10)
    other = next(d for d in logs.log_dirs if d != logs.log_dir_of(TP))
    logs.maybe_update_preferred_log_dir(TP, other)
    logs.get_or_create_log(TP, is_future=True)
    return logs, replicas, clock, mover, part, other


def test_the_quota_holds_the_copy_back(shm_path):
    seconds = Clock()
    batch = len(encode_batch([(b"k0", b"v" * 100)], base_timestamp=1_650_000_000_000))
    quota = ReplicationQuota(0, lambda: 2 * batch, lambda t: ("*",), Rate(2, 1.0, clock=seconds.seconds))
    logs, _replicas, clock, mover, part, other = setup(shm_path, quota)
    try:
        mover.add(TP)
        clock.advance(0)
        future = logs.get_future_log(TP)
        # Over at least one window, 2 batches a second: a burst of about 2, then nothing.
        assert 1 <= future.log_end_offset <= 3
        copied = future.log_end_offset
        clock.advance(1)
        assert future.log_end_offset == copied
        for _ in range(8):
            seconds.advance(1)
            clock.advance(0.1)
        assert logs.log_dir_of(TP) == other and part.log.log_end_offset == 10
    finally:
        mover.shutdown()
        logs.shutdown()


def test_a_future_log_ahead_of_the_current_one_is_cut_back_then_swapped(shm_path):
    logs, _replicas, clock, mover, part, other = setup(shm_path)
    try:
        future = logs.get_future_log(TP)
        future.append_as_follower(part.log.read(0, 1 << 20))
        part.log.truncate_to(7)                     # the current log lost its tail (a new leader)
        part.log.append(encode_batch([(b"new", b"x")], base_timestamp=1_650_000_000_000), leader_epoch=1)
        mover.add(TP)
        clock.advance(0)
        assert logs.log_dir_of(TP) == other and part.log is logs.get_log(TP)
        assert part.log.log_end_offset == 8 and part.log.leader_epoch_cache.latest_epoch == 1
    finally:
        mover.shutdown()
        logs.shutdown()


def test_deleting_the_partition_drops_the_move(shm_path):
    logs, replicas, clock, mover, _part, other = setup(shm_path)
    try:
        mover.add(TP)
        replicas.remove_partition(TP, delete=True)
        clock.advance(0)
        assert mover.moving == [] and logs.get_future_log(TP) is None and logs.get_log(TP) is None
    finally:
        mover.shutdown()
        logs.shutdown()


def test_a_future_log_found_at_start_up_resumes_once_its_partition_is_hosted(shm_path):
    logs, replicas, clock, mover, part, other = setup(shm_path)
    logs.shutdown()
    logs = LogManager([str(shm_path / "a"), str(shm_path / "b")], LogConfig(), enable_cleaner=False)
    replicas = ReplicaManager(0, logs, None, lambda t: LogConfig(), lambda: 0)
    mover = ReplicaAlterLogDirsManager(0, replicas, logs, clock)
    try:
        mover.start()
        assert mover.moving == [] and logs.get_future_log(TP) is not None
        replicas.get_or_create_partition(TP, is_new=False)       # LeaderAndIsr
        clock.advance(1.0)                                        # the copier's next look
        clock.advance(0)
        assert logs.log_dir_of(TP) == other and logs.get_log(TP).log_end_offset == 10
    finally:
        mover.shutdown()
        logs.shutdown()


def test_another_target_drops_the_copy_under_way(shm_path):
    from twisted.internet import defer
    logs, _replicas, clock, mover, part, other = setup(shm_path)
    mover._run_blocking = defer.maybeDeferred
    here = logs.log_dir_of(TP)
    try:
        mover.add(TP)
        assert mover.moving == [TP]
        answer = defer.ensureDeferred(mover.alter_replica_log_dirs({TP: here}, lambda tp: True))
        assert answer.result == {TP: 0}
        assert mover.moving == [] and logs.get_future_log(TP) is None and TP not in logs.preferred_log_dirs
        answer = defer.ensureDeferred(mover.alter_replica_log_dirs({TP: other}, lambda tp: True))
        assert answer.result == {TP: 0} and logs.future_log_dir_of(TP) == other and mover.moving == [TP]
        clock.advance(0)
        assert logs.log_dir_of(TP) == other and part.log.log_end_offset == 10
    finally:
        mover.shutdown()
        logs.shutdown()
