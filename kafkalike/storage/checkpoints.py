"""Kafka's text checkpoint files: a version line, a count line, then one entry per line.

Used for the three log-dir root files (recovery points, high watermarks, log start
offsets: `topic partition offset`) and the per-partition `leader-epoch-checkpoint`
(`epoch startOffset`). Each write goes to `<file>.tmp`, is fsynced, and is renamed over
the old file, so a crash leaves either the old or the new checkpoint, never half of one.
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, Mapping, TypeVar

from kafkalike.storage import layout
from kafkalike.storage.errors import CorruptCheckpointError
from kafkalike.storage.layout import TopicPartition

T = TypeVar("T")
CURRENT_VERSION = 0
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


def write_atomically(path: str, text: str) -> None:
    """Write to `path.tmp`, fsync, rename over `path`, fsync the directory."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    layout.fsync_dir(os.path.dirname(os.path.abspath(path)))


class CheckpointFile(Generic[T]):
    """One checkpoint file with its line format; thread-safe writes."""

    def __init__(self, path: str, to_line: Callable[[T], str], from_line: Callable[[str], T | None],
                 version: int = CURRENT_VERSION, create: bool = True) -> None:
        self.path = path
        self.version = version
        self._to_line = to_line
        self._from_line = from_line
        self._lock = threading.Lock()
        if create and not os.path.exists(path):
            # Kafka creates the file (empty) when the checkpoint object is made.
            open(path, "a").close()

    def write(self, entries: Iterable[T]) -> None:
        items = list(entries)
        lines = [str(self.version), str(len(items))] + [self._to_line(e) for e in items]
        with self._lock:
            write_atomically(self.path, "\n".join(lines) + "\n")

    def read(self) -> list[T]:
        """Entries in file order; [] for a missing or empty file. Raises CorruptCheckpointError."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except FileNotFoundError:
            return []
        if not lines:
            return []
        try:
            version = int(lines[0].strip())
        except ValueError:
            raise CorruptCheckpointError(f"Malformed version line {lines[0]!r} in {self.path}") from None
        if version != self.version:
            raise CorruptCheckpointError(f"Unrecognized version {version} of the checkpoint file {self.path}")
        if len(lines) < 2:
            raise CorruptCheckpointError(f"Missing entry count in {self.path}")
        try:
            expected = int(lines[1].strip())
        except ValueError:
            raise CorruptCheckpointError(f"Malformed count line {lines[1]!r} in {self.path}") from None
        entries: list[T] = []
        for line in lines[2:]:
            entry = self._from_line(line)
            if entry is None:
                raise CorruptCheckpointError(f"Malformed line in checkpoint file ({self.path}): '{line}'")
            entries.append(entry)
        if len(entries) != expected:
            raise CorruptCheckpointError(
                f"Expected {expected} entries in checkpoint file ({self.path}), but found {len(entries)}")
        return entries


def _parse_offset_line(line: str) -> tuple[TopicPartition, int] | None:
    parts = _WHITESPACE.split(line.strip())
    if len(parts) != 3:
        return None
    try:
        return TopicPartition(parts[0], int(parts[1])), int(parts[2])
    except ValueError:
        return None


def _parse_epoch_line(line: str) -> EpochEntry | None:
    parts = _WHITESPACE.split(line.strip())
    if len(parts) != 2:
        return None
    try:
        return EpochEntry(int(parts[0]), int(parts[1]))
    except ValueError:
        return None


class OffsetCheckpointFile:
    """`topic partition offset` checkpoints in a log dir root, read and written as a dict."""

    def __init__(self, path: str) -> None:
        self._file: CheckpointFile[tuple[TopicPartition, int]] = CheckpointFile(
            path, lambda e: f"{e[0].topic} {e[0].partition} {e[1]}", _parse_offset_line)

    @property
    def path(self) -> str:
        return self._file.path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._file.write(sorted(offsets.items()))

    def read(self) -> dict[TopicPartition, int]:
        return dict(self._file.read())


def recovery_point_checkpoint(log_dir: str) -> OffsetCheckpointFile:
    return OffsetCheckpointFile(os.path.join(log_dir, layout.RECOVERY_POINT_CHECKPOINT_FILE))


def replication_offset_checkpoint(log_dir: str) -> OffsetCheckpointFile:
    return OffsetCheckpointFile(os.path.join(log_dir, layout.REPLICATION_OFFSET_CHECKPOINT_FILE))


def log_start_offset_checkpoint(log_dir: str) -> OffsetCheckpointFile:
    return OffsetCheckpointFile(os.path.join(log_dir, layout.LOG_START_OFFSET_CHECKPOINT_FILE))


class LeaderEpochCheckpointFile:
    """`leader-epoch-checkpoint` in a partition dir: `epoch startOffset` lines."""

    def __init__(self, partition_dir: str) -> None:
        self._file: CheckpointFile[EpochEntry] = CheckpointFile(
            os.path.join(partition_dir, layout.LEADER_EPOCH_CHECKPOINT_FILE),
            lambda e: f"{e.epoch} {e.start_offset}", _parse_epoch_line)

    @property
    def path(self) -> str:
        return self._file.path

    def move_to(self, partition_dir: str) -> None:
        """Follow a renamed partition dir."""
        self._file.path = os.path.join(partition_dir, layout.LEADER_EPOCH_CHECKPOINT_FILE)

    def write(self, entries: Iterable[EpochEntry]) -> None:
        self._file.write(entries)

    def read(self) -> list[EpochEntry]:
        return self._file.read()
