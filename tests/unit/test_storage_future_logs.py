"""Future logs in the LogManager (KIP-113): made in the preferred dir, loaded at start-up
next to the current log, swapped in with their files renamed, dropped on cancellation."""
from __future__ import annotations

import os

import pytest

from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import KafkaStorageError
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.manager import LogManager
from tests.unit.test_storage_manager import fill

TP = TopicPartition("t", 0)


def two_dirs(root) -> list[str]:
    return [str(root / "a"), str(root / "b")]


def test_a_future_log_needs_a_preferred_dir_other_than_the_current_one(shm_path):
    m = LogManager(two_dirs(shm_path), LogConfig(), enable_cleaner=False)
    try:
        current = m.get_or_create_log(TP)
        here = m.log_dir_of(TP)
        with pytest.raises(KafkaStorageError):
            m.get_or_create_log(TP, is_future=True)
        m.maybe_update_preferred_log_dir(TP, here)          # already there: not remembered
        assert TP not in m.preferred_log_dirs
        other = next(d for d in m.log_dirs if d != here)
        m.maybe_update_preferred_log_dir(TP, other)
        future = m.get_or_create_log(TP, is_future=True)
        assert m.future_log_dir_of(TP) == other and os.path.dirname(future.dir) == other
        assert future.dir.endswith("-future") and future is not current
        assert m.delete_future_log(TP) and m.get_future_log(TP) is None
        assert not [n for n in os.listdir(other) if n.startswith("t-0")]
    finally:
        m.shutdown()


def test_a_restart_loads_the_future_log_and_the_swap_renames_it_into_place(shm_path):
    m = LogManager(two_dirs(shm_path), LogConfig(), enable_cleaner=False)
    fill(m.get_or_create_log(TP), 4)
    other = next(d for d in m.log_dirs if d != m.log_dir_of(TP))
    m.maybe_update_preferred_log_dir(TP, other)
    future = m.get_or_create_log(TP, is_future=True)
    future.append_as_follower(m.get_log(TP).read(0, 1 << 20))
    m.close_without_clean_shutdown()                    # as kill -9 mid-move

    m = LogManager(two_dirs(shm_path), LogConfig(), enable_cleaner=False)
    try:
        assert m.get_log(TP).log_end_offset == 8 and m.get_future_log(TP).log_end_offset == 8
        assert m.future_log_dir_of(TP) == other
        old = m.log_dir_of(TP)
        swapped = m.replace_current_with_future(TP)
        assert m.get_log(TP) is swapped and m.log_dir_of(TP) == other and m.get_future_log(TP) is None
        assert swapped.dir == os.path.join(other, "t-0")
        assert all(os.path.dirname(s.log_path) == swapped.dir for s in swapped.segments)
        fill(swapped, 1)                                  # appends and rolls land in the new dir
        swapped.roll()
        assert len(swapped.read(0, 1 << 20)) == swapped.size
        assert not [n for n in os.listdir(old) if n.startswith("t-0")]
    finally:
        m.shutdown()
    m = LogManager(two_dirs(shm_path), LogConfig(), enable_cleaner=False)
    try:
        assert m.log_dir_of(TP) == other and m.get_log(TP).log_end_offset == 10 and not m.future_logs
    finally:
        m.shutdown()


def test_two_current_dirs_of_one_partition_refuse_to_start(shm_path):
    dirs = two_dirs(shm_path)
    for d in dirs:
        os.makedirs(os.path.join(d, "t-0"))
    with pytest.raises(KafkaStorageError, match="Duplicate log directories for t-0"):
        LogManager(dirs, LogConfig(), enable_cleaner=False)


def test_two_future_dirs_of_one_partition_refuse_to_start(shm_path):
    dirs = two_dirs(shm_path)
    os.makedirs(os.path.join(dirs[0], "t-0"))
    for d, uid in zip(dirs, ("a" * 32, "b" * 32)):
        os.makedirs(os.path.join(d, f"t-0.{uid}-future"))
    with pytest.raises(KafkaStorageError, match="Duplicate log directories found: "):
        LogManager(dirs, LogConfig(), enable_cleaner=False)
