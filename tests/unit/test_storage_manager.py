"""LogManager: log dirs, their root files, clean and unclean restarts."""
from __future__ import annotations

import os

import pytest

from kafkalike.storage import layout
from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import KafkaStorageError, LogDirLockedError
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.manager import LogManager, topic_configs_from
from tests.unit.test_storage_batches import BASE_TIMESTAMP, make_batch, sized_batch

NOW = BASE_TIMESTAMP + 1000
CONFIG = LogConfig(segment_bytes=2000)


def manager(dirs, **kwargs) -> LogManager:
    kwargs.setdefault("clock", lambda: NOW)
    return LogManager([str(d) for d in dirs], CONFIG, **kwargs)


def fill(log, count: int) -> None:
    for _ in range(count):
        log.append(sized_batch(500, count=2), leader_epoch=0, now_ms=NOW)


def test_layout_of_a_log_dir_after_a_clean_shutdown(shm_path):
    logs = manager([shm_path])
    orders = logs.get_or_create_log(TopicPartition("orders", 0))
    fill(orders, 5)
    orders.update_high_watermark(8)
    logs.shutdown()
    names = set(os.listdir(shm_path))
    assert {".lock", ".kafka_cleanshutdown", "recovery-point-offset-checkpoint",
            "replication-offset-checkpoint", "log-start-offset-checkpoint", "orders-0"} <= names
    assert open(shm_path / "recovery-point-offset-checkpoint").read() == "0\n1\norders 0 10\n"
    assert open(shm_path / "replication-offset-checkpoint").read() == "0\n1\norders 0 8\n"
    assert open(shm_path / "log-start-offset-checkpoint").read() == "0\n1\norders 0 0\n"
    assert sorted(os.listdir(shm_path / "orders-0")) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
        "00000000000000000008.index", "00000000000000000008.log", "00000000000000000008.timeindex",
        "leader-epoch-checkpoint"]


def test_clean_restart_skips_recovery_and_consumes_the_marker(shm_path):
    first = manager([shm_path])
    fill(first.get_or_create_log(TopicPartition("orders", 0)), 5)
    first.shutdown()
    second = manager([shm_path])
    assert second.had_clean_shutdown[str(shm_path)] is True
    assert not os.path.exists(shm_path / ".kafka_cleanshutdown")  # a crash now counts as unclean
    log = second.get_log(("orders", 0))
    assert log.recovery_stats.recovered_segments == 0
    assert log.log_end_offset == log.recovery_point == 10
    assert second.checkpointed_high_watermark(("orders", 0)) == 0
    second.shutdown()


def test_unclean_restart_recovers_from_the_checkpointed_recovery_point(shm_path):
    first = manager([shm_path])
    log = first.get_or_create_log(TopicPartition("orders", 0))
    fill(log, 5)                      # segments 0 and 8
    log.flush()
    first.checkpoint_recovery_points_and_log_start_offsets()
    fill(log, 4)                      # fills segment 8; segment 16 gets one batch; not flushed
    torn = layout.log_file_path(log.dir, 16)
    first.close_without_clean_shutdown()
    os.truncate(torn, os.path.getsize(torn) - 1)

    second = manager([shm_path])
    assert second.had_clean_shutdown[str(shm_path)] is False
    recovered = second.get_log(("orders", 0))
    assert recovered.recovery_stats.recovered_segments == 2  # from segment 8, which holds offset 10
    assert recovered.log_end_offset == 16  # segment 16's only batch was torn
    assert recovered.recovery_point == 10
    second.shutdown()


def test_new_logs_go_to_the_dir_with_fewest_partitions(shm_path):
    dirs = [shm_path / "a", shm_path / "b"]
    logs = manager(dirs)
    placed = [logs.log_dir_of(logs.get_or_create_log(TopicPartition("t", p)).topic_partition)
              for p in range(4)]
    assert sorted(placed) == [str(dirs[0]), str(dirs[0]), str(dirs[1]), str(dirs[1])]
    assert logs.get_or_create_log(TopicPartition("t", 0)) is logs.get_log(TopicPartition("t", 0))
    logs.shutdown()


def test_a_log_dir_is_locked_while_in_use(shm_path):
    logs = manager([shm_path])
    with pytest.raises(LogDirLockedError, match="Failed to acquire lock on file .lock"):
        manager([shm_path])
    logs.shutdown()
    manager([shm_path]).shutdown()  # released on shutdown


def test_the_same_dir_twice_is_refused(shm_path):
    with pytest.raises(KafkaStorageError, match="Duplicate log directory"):
        manager([shm_path, str(shm_path) + "/."])


def test_delete_log_renames_the_dir_then_removes_it(shm_path):
    scheduled = []
    logs = manager([shm_path], scheduler=lambda delay, fn: scheduled.append((delay, fn)))
    fill(logs.get_or_create_log(TopicPartition("gone", 2)), 1)
    logs.delete_log(("gone", 2))
    [pending] = [n for n in os.listdir(shm_path) if n.endswith("-delete")]
    assert pending.startswith("gone-2.") and layout.is_delete_dir(pending)
    assert logs.get_log(("gone", 2)) is None
    delay, remove = scheduled[-1]
    assert delay == CONFIG.file_delete_delay_ms
    remove()
    assert not any(n.startswith("gone-2") for n in os.listdir(shm_path))
    logs.shutdown()


def test_a_dir_pending_deletion_at_startup_is_removed(shm_path):
    stale = shm_path / "old-0.0123456789abcdef0123456789abcdef-delete"
    stale.mkdir()
    (stale / "00000000000000000000.log").write_bytes(b"")
    logs = manager([shm_path])
    assert not stale.exists() and logs.logs == {}
    logs.shutdown()


def test_a_stray_directory_stops_startup(shm_path):
    (shm_path / "not_a_partition").mkdir()
    with pytest.raises(ValueError, match="not in the form of topic-partition"):
        manager([shm_path])
    assert not os.path.exists(shm_path / ".kafka_cleanshutdown")
    # The lock was released: once the stray dir is gone the broker starts.
    os.rmdir(shm_path / "not_a_partition")
    manager([shm_path]).shutdown()


def test_topic_configs_and_periodic_work(shm_path):
    configs = topic_configs_from(CONFIG, {"short": {"retention.ms": "1000"}})
    logs = manager([shm_path], topic_configs=configs)
    short = logs.get_or_create_log(TopicPartition("short", 0))
    long = logs.get_or_create_log(TopicPartition("long", 0))
    assert short.config.retention_ms == 1000 and long.config.retention_ms == CONFIG.retention_ms
    for log in (short, long):
        for _ in range(5):
            log.append(make_batch([b"x" * 400], timestamps=[NOW]), now_ms=NOW)
        log.update_high_watermark(log.log_end_offset)
    assert logs.cleanup_logs(NOW + 5000) == 2  # both of short's segments; long keeps its data
    assert short.log_start_offset == 5 and long.log_start_offset == 0
    logs.shutdown()
    assert open(shm_path / "log-start-offset-checkpoint").read() == "0\n2\nlong 0 0\nshort 0 5\n"


def test_checkpoints_are_captured_on_the_caller_and_written_later(shm_path):
    """The broker captures on the reactor and writes on a thread: the file holds what was
    true at capture, and a write that comes after shutdown leaves the final files alone."""
    logs = manager([shm_path])
    orders = logs.get_or_create_log(TopicPartition("orders", 0))
    fill(orders, 2)
    orders.update_high_watermark(3)
    write_hw, write_recovery = logs.high_watermark_checkpoint_writer(), logs.recovery_checkpoint_writer()
    late = logs.high_watermark_checkpoint_writer()
    orders.update_high_watermark(4)                 # moves after the capture
    write_hw()
    write_recovery()
    assert open(shm_path / "replication-offset-checkpoint").read() == "0\n1\norders 0 3\n"
    assert open(shm_path / "log-start-offset-checkpoint").read() == "0\n1\norders 0 0\n"
    logs.shutdown()
    late()
    assert open(shm_path / "replication-offset-checkpoint").read() == "0\n1\norders 0 4\n"
