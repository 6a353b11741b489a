"""Which leader epoch wrote which offsets: Kafka's LeaderEpochFileCache.

Followers ask the leader "where did epoch N end?" (OffsetsForLeaderEpoch) and
truncate their log there instead of at the high watermark (KIP-101, KIP-279). The cache
holds one (epoch, start offset) entry per epoch, both strictly increasing, and is
checkpointed to `leader-epoch-checkpoint` after every change.
"""
from __future__ import annotations

import bisect
import logging
import os
import threading

from kafkalike.storage.checkpoints import EpochEntry, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

log = logging.getLogger(__name__)


class LeaderEpochFileCache:
    """Epoch -> start offset, kept sorted, persisted through a LeaderEpochCheckpointFile."""

    def __init__(self, checkpoint: LeaderEpochCheckpointFile | None, name: str = "") -> None:
        self._checkpoint = checkpoint
        self._name = name
        self._lock = threading.RLock()
        self._entries: list[EpochEntry] = list(checkpoint.read()) if checkpoint else []
        self._disabled = False

    # ---------------------------------------------------------------- queries
    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        entries = self._entries
        return entries[-1].epoch if entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def _epochs(self) -> list[int]:
        return [e.epoch for e in self._entries]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset`, None before the first entry."""
        with self._lock:
            starts = [e.start_offset for e in self._entries]
            i = bisect.bisect_right(starts, offset) - 1
            return self._entries[i].epoch if i >= 0 else None

    def previous_epoch(self) -> int | None:
        with self._lock:
            return self._entries[-2].epoch if len(self._entries) >= 2 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetsForLeaderEpoch answers, following Kafka 2.8:

        - undefined epoch (-1): (-1, -1)
        - the latest epoch: (epoch, log end offset)
        - older than every known epoch: (requested, start offset of the first epoch)
        - between known epochs: (largest epoch <= requested, start of the next higher epoch)
        - newer than every known epoch (or an empty cache): (-1, -1)
        """
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if self.latest_epoch == requested_epoch:
                return requested_epoch, log_end_offset
            epochs = self._epochs()
            higher = bisect.bisect_right(epochs, requested_epoch)
            if higher >= len(epochs):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if higher == 0:
                return requested_epoch, self._entries[0].start_offset
            return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    # ---------------------------------------------------------------- updates
    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that `epoch` starts at `start_offset`; returns whether anything changed.

        Same epoch at a later offset is a no-op. Any entry that would break monotonicity
        (an epoch >= the new one, or a start offset >= the new one) is removed first, as
        after a leader change the new epoch supersedes them.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._disabled:
            return False
        with self._lock:
            latest = self.latest_entry
            if latest is not None and latest.epoch == epoch and start_offset >= latest.start_offset:
                return False
            removed = []
            while self._entries and (self._entries[-1].epoch >= epoch
                                     or self._entries[-1].start_offset >= start_offset):
                removed.append(self._entries.pop())
            if len(removed) > 1 or (removed and removed[0].start_offset != start_offset):
                log.warning("%s: new epoch entry (%d, %d) caused truncation of conflicting entries %s",
                            self._name, epoch, start_offset, removed)
            self._entries.append(EpochEntry(epoch, start_offset))
            if flush:
                self.flush()
            return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there)."""
        with self._lock:
            if end_offset >= 0 and self._entries and self._entries[-1].start_offset >= end_offset:
                while self._entries and self._entries[-1].start_offset >= end_offset:
                    self._entries.pop()
                self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before `start_offset`; the last of them now starts there."""
        with self._lock:
            removed = 0
            while removed < len(self._entries) and self._entries[removed].start_offset <= start_offset:
                removed += 1
            if removed:
                last = self._entries[removed - 1]
                self._entries = [EpochEntry(last.epoch, start_offset)] + self._entries[removed:]
                self.flush()

    def clear_and_flush(self) -> None:
        with self._lock:
            self._entries = []
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._checkpoint is not None and not self._disabled:
                self._checkpoint.write(self._entries)

    def disable(self) -> None:
        """Hold no epochs, as Kafka 2.8 keeps no cache for a log whose message format predates
        v2: the entries and the checkpoint file go, and assignments are ignored."""
        with self._lock:
            if self._entries:
                log.warning("%s: Deleting non-empty leader epoch cache due to incompatible message format",
                            self._name)
            self._entries = []
            self._disabled = True
            if self._checkpoint is not None:
                try:
                    os.unlink(self._checkpoint.path)
                except FileNotFoundError:
                    pass

    def enable(self) -> None:
        """Start keeping epochs again (the format went back to v2), from an empty cache."""
        with self._lock:
            self._disabled = False
            self._entries = []
            self.flush()

    def move_to(self, partition_dir: str) -> None:
        if self._checkpoint is not None:
            self._checkpoint.move_to(partition_dir)
