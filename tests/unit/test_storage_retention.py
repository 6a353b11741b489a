"""Retention: time, size and log-start-offset rules over whole segments, below the high watermark."""
from __future__ import annotations

import os

from kafkalike.storage.config import LogConfig
from kafkalike.storage.log import Log
from tests.unit.test_storage_batches import make_batch, sized_batch

DAY = 24 * 3600 * 1000


def timed_log(root, config: LogConfig, **kwargs) -> Log:
    """Three full segments of four 500-byte batches each, one per day, plus an active one."""
    log = Log(os.path.join(root, "events-0"), config, clock=lambda: 0, **kwargs)
    for day in range(4):
        for i in range(4 if day < 3 else 1):
            log.append(sized_batch(500, timestamp=day * DAY + i), now_ms=day * DAY)
    assert [s.base_offset for s in log.segments] == [0, 4, 8, 12]
    log.update_high_watermark(log.log_end_offset)
    return log


def segment_files(log: Log, suffix: str = ".log") -> list[str]:
    return sorted(n for n in os.listdir(log.dir) if n.endswith(suffix))


def test_retention_ms_deletes_segments_whose_newest_batch_is_too_old(shm_path):
    log = timed_log(shm_path, LogConfig(segment_bytes=2000, retention_ms=DAY))
    # At day 2 - 1h, day 0's segment (newest batch at 0+3 ms) is over a day old; day 1's is not.
    assert log.delete_old_segments(2 * DAY - 3_600_000) == 1
    assert [s.base_offset for s in log.segments] == [4, 8, 12]
    assert log.log_start_offset == 4
    assert segment_files(log) == ["00000000000000000004.log", "00000000000000000008.log",
                                  "00000000000000000012.log"]


def test_retention_bytes_keeps_at_least_the_limit(shm_path):
    log = timed_log(shm_path, LogConfig(segment_bytes=2000, retention_bytes=3000))
    # 6500 bytes, 3500 over the limit: the first 2000-byte segment fits in the excess, the
    # second (2000 > 1500 left) does not, so what remains stays at or above retention.bytes.
    assert log.delete_old_segments(0) == 1
    assert log.size == 4500


def test_retention_never_passes_the_high_watermark(shm_path):
    log = timed_log(shm_path, LogConfig(segment_bytes=2000, retention_ms=1))
    log.update_high_watermark(7)  # inside the second segment
    assert log.delete_old_segments(100 * DAY) == 1
    assert [s.base_offset for s in log.segments] == [4, 8, 12]


def test_an_expired_active_segment_goes_too_after_a_roll(shm_path):
    """Kafka 2.8 deletes every expired segment, active included, once it is below the
    high watermark: it rolls an empty segment first so the log keeps its end offset."""
    log = timed_log(shm_path, LogConfig(segment_bytes=2000, retention_ms=1))
    assert log.delete_old_segments(100 * DAY) == 4
    assert [s.base_offset for s in log.segments] == [13]
    assert (log.log_start_offset, log.log_end_offset) == (13, 13)
    assert log.append(make_batch([b"new"]), now_ms=100 * DAY).first_offset == 13
    # An empty active segment is never deleted.
    empty = Log(os.path.join(shm_path, "empty-0"), LogConfig(retention_ms=1), clock=lambda: 0)
    assert empty.delete_old_segments(100 * DAY) == 0


def test_compact_only_topics_ignore_time_and_size(shm_path):
    # Written while the topic deleted (its records have no keys), then made compact-only.
    log = timed_log(shm_path, LogConfig(segment_bytes=2000))
    log.update_config(LogConfig(segment_bytes=2000, retention_ms=1, retention_bytes=0, cleanup_policy=("compact",)))
    assert log.delete_old_segments(100 * DAY) == 0


def test_deleted_segments_are_renamed_then_removed_after_the_delay(shm_path):
    scheduled = []
    log = timed_log(shm_path, LogConfig(segment_bytes=2000, retention_ms=DAY, file_delete_delay_ms=60000),
                    scheduler=lambda delay, fn: scheduled.append((delay, fn)))
    piece = log.read_slice(1, 100)  # a fetch already handed out
    assert log.delete_old_segments(3 * DAY) == 2
    assert segment_files(log, ".deleted") == [
        "00000000000000000000.index.deleted", "00000000000000000000.log.deleted",
        "00000000000000000000.timeindex.deleted", "00000000000000000004.index.deleted",
        "00000000000000000004.log.deleted", "00000000000000000004.timeindex.deleted"]
    assert piece.read()  # still readable until the files really go
    [(delay, remove)] = scheduled
    assert delay == 60000
    remove()
    assert segment_files(log, ".deleted") == []
