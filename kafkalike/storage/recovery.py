"""Loading a partition directory into segments, and recovering it after a crash.

Follows Kafka 2.8's Log.loadSegments/recoverLog:

1. Leftovers of interrupted work: `.deleted` and `.cleaned` files are removed, index
   files without a `.log` are removed, and a `.swap` segment (a cleaner result that was
   committed but not yet installed) replaces the segments it covers.
2. Every `.log` file becomes a segment. Indexes that are missing or fail their sanity
   check are rebuilt from the log, even after a clean shutdown.
3. Without a clean shutdown, every segment from the recovery point on is rescanned:
   indexes are rebuilt and each batch is checked (CRC, offsets, leader epoch). At the
   first bad batch the segment is truncated there and every later segment is deleted.

Two fields of a batch lie outside its CRC: baseOffset and partitionLeaderEpoch. Beyond
Kafka's range check, recovery therefore requires offsets to be contiguous (logs that
are never compacted) and epochs to agree with `leader-epoch-checkpoint`, which is
fsynced on every change and so is more durable than the unflushed tail it checks.
4. A log whose end is before its start offset is emptied; an empty dir gets one
   segment at the log start offset.
"""
from __future__ import annotations

import bisect
import logging
import os
import random
from dataclasses import dataclass, field
from typing import Callable

from kafkalike.storage import layout
from kafkalike.storage.checkpoints import EpochEntry
from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import CorruptIndexError
from kafkalike.storage.segment import LogSegment

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RecoveryStats:
    """What loading did; tests and operators use it to tell a clean load from a rescan."""

    recovered_segments: int = 0       # rescanned because the shutdown was unclean
    rebuilt_index_segments: int = 0   # indexes missing or corrupt, rebuilt from the log
    truncated_bytes: int = 0
    deleted_segments: int = 0         # dropped after a corrupt batch or start > end
    removed_temp_files: int = 0
    completed_swaps: int = 0
    reasons: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LoadedLog:
    segments: list[LogSegment]
    log_end_offset: int
    recovery_point: int
    log_start_offset: int
    stats: RecoveryStats


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _remove_temp_files(directory: str, stats: RecoveryStats) -> list[str]:
    """Delete `.deleted`/`.cleaned` files and swapped indexes; return `.log.swap` paths."""
    swaps = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.endswith(layout.DELETED_SUFFIX) or name.endswith(layout.CLEANED_SUFFIX):
            _unlink(path)
            stats.removed_temp_files += 1
        elif name.endswith(layout.SWAP_SUFFIX):
            if name.endswith(layout.LOG_SUFFIX + layout.SWAP_SUFFIX):
                swaps.append(path)
            elif name.endswith(layout.TXN_INDEX_SUFFIX + layout.SWAP_SUFFIX):
                pass  # kept: the log cannot rebuild it; installed with its log swap or removed after
            else:  # index swaps are rebuilt from the swapped log
                _unlink(path)
                stats.removed_temp_files += 1
    return swaps


def _remove_orphan_indexes(directory: str, stats: RecoveryStats) -> None:
    for name in os.listdir(directory):
        if name.endswith(layout.INDEX_SUFFIX) or name.endswith(layout.TIME_INDEX_SUFFIX) \
                or name.endswith(layout.TXN_INDEX_SUFFIX):
            try:
                base = layout.offset_from_file_name(name)
            except ValueError:
                continue
            if not os.path.exists(layout.log_file_path(directory, base)):
                log.warning("Found an orphaned index file %s, with no corresponding log file.",
                            os.path.join(directory, name))
                _unlink(os.path.join(directory, name))
                stats.removed_temp_files += 1


def _delete_segment(segment: LogSegment) -> None:
    segment.delete_files()


class EpochValidator:
    """Checks each recovered batch's leader epoch against the checkpointed epoch cache.

    Epochs along a log never decrease, and the checkpoint names the epoch of every
    offset it covers. A batch may carry an epoch newer than the checkpoint's latest
    (the crash came before the checkpoint was written), but such an "unvouched" epoch
    followed by an older, checkpointed one is impossible: then the unvouched batch is
    the damaged one, and `cut_back` names where it began so recovery cuts there.
    """

    def __init__(self, entries: list[EpochEntry]) -> None:
        self._starts = [e.start_offset for e in entries]
        self._epochs = [e.epoch for e in entries]
        self._latest = self._epochs[-1] if entries else None
        self._previous = -1
        self._unvouched: tuple[int, int, int] | None = None  # (segment base, position, epoch)
        self.segment_base = 0
        self.cut_back: tuple[int, int, str] | None = None

    def _checkpointed_epoch(self, offset: int) -> int | None:
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def _vouched(self, epoch: int, offset: int) -> bool:
        """The checkpoint says this offset belongs to this epoch (or precedes its first entry)."""
        if self._latest is None or epoch > self._latest:
            return False
        known = self._checkpointed_epoch(offset)
        return epoch == known if known is not None else epoch <= self._epochs[0]

    def __call__(self, epoch: int, offset: int, position: int) -> str | None:
        if epoch == -1:
            return None
        if epoch < -1:
            return f"batch at offset {offset} has an invalid leader epoch {epoch}"
        if epoch < self._previous:
            if self._unvouched is not None and self._vouched(epoch, offset):
                base, pos, bad = self._unvouched
                self.cut_back = (base, pos, f"leader epoch {bad} at position {pos} of segment {base} "
                                            f"is in no checkpoint and is followed by epoch {epoch}")
            return f"batch at offset {offset} has leader epoch {epoch} after epoch {self._previous}"
        if self._latest is not None and epoch <= self._latest and not self._vouched(epoch, offset):
            return (f"batch at offset {offset} has leader epoch {epoch} but leader-epoch-checkpoint "
                    f"says {self._checkpointed_epoch(offset)}")
        if self._latest is not None and epoch > self._latest and epoch > self._previous \
                and self._unvouched is None:
            self._unvouched = (self.segment_base, position, epoch)
        self._previous = epoch
        return None


class SegmentLoader:
    """Builds the segment list of one partition dir; see the module docstring for the steps."""

    def __init__(self, directory: str, config: LogConfig, *, now_ms: int,
                 rng: random.Random | None = None,
                 assign_epoch: Callable[[int, int], None] | None = None,
                 epoch_entries: list[EpochEntry] | None = None,
                 name: str = "") -> None:
        self.directory = directory
        self.config = config
        self.now_ms = now_ms
        self.rng = rng or random.Random()
        self.assign_epoch = assign_epoch
        self.epoch_entries = list(epoch_entries or [])
        self.name = name or os.path.basename(directory)
        self.require_contiguous = not config.compact
        self.stats = RecoveryStats()

    def _open(self, base_offset: int, suffix: str = "") -> LogSegment:
        return LogSegment(self.directory, base_offset, self.config, now_ms=self.now_ms,
                          roll_jitter_ms=self.config.random_segment_jitter(self.rng),
                          file_suffix=suffix)

    def _rebuild(self, segment: LogSegment, why: str) -> None:
        log.warning("[%s] Rebuilding index files of segment %d: %s", self.name, segment.base_offset, why)
        # Segments here are below the recovery point (flushed); one may have been compacted
        # before the topic's cleanup.policy changed, so offset gaps are legitimate.
        result = segment.recover(None, require_contiguous=False)
        self.stats.rebuilt_index_segments += 1
        self.stats.truncated_bytes += result.truncated_bytes
        if result.reason:
            self.stats.reasons.append(f"segment {segment.base_offset}: {result.reason}")

    def load(self, *, log_start_offset: int, recovery_point: int, had_clean_shutdown: bool) -> LoadedLog:
        stats = self.stats
        swaps = _remove_temp_files(self.directory, stats)
        _remove_orphan_indexes(self.directory, stats)

        segments: dict[int, LogSegment] = {}
        missing_index: set[int] = set()
        for name in os.listdir(self.directory):
            if not name.endswith(layout.LOG_SUFFIX):
                continue
            try:
                base = layout.offset_from_file_name(name)
            except ValueError:
                continue
            if not (os.path.exists(layout.offset_index_path(self.directory, base))
                    and os.path.exists(layout.time_index_path(self.directory, base))):
                missing_index.add(base)
            segments[base] = self._open(base)

        for path in swaps:
            self._complete_swap(path, segments)
        for name in os.listdir(self.directory):
            if name.endswith(layout.TXN_INDEX_SUFFIX + layout.SWAP_SUFFIX):  # no log swap came with it
                _unlink(os.path.join(self.directory, name))
                stats.removed_temp_files += 1

        ordered = [segments[b] for b in sorted(segments)]
        bases = [s.base_offset for s in ordered]
        # The segments a crash may have damaged: from the one holding the recovery point on.
        first_unflushed = len(ordered)
        if not had_clean_shutdown and ordered:
            first_unflushed = max(0, bisect.bisect_right(bases, recovery_point) - 1)

        for i, segment in enumerate(ordered[:first_unflushed]):
            if segment.base_offset in missing_index:
                self._rebuild(segment, "index file missing")
                continue
            upper = ordered[i + 1].base_offset if i + 1 < len(ordered) else None
            try:
                segment.sanity_check(upper)
            except CorruptIndexError as exc:
                self._rebuild(segment, str(exc))

        if first_unflushed < len(ordered):
            ordered = self._recover_unflushed(ordered, first_unflushed)
        elif ordered:
            self._check_active_tail(ordered[-1])

        log_end_offset: int | None = None
        if ordered:
            log_end_offset = ordered[-1].read_next_offset()
            if log_end_offset < log_start_offset:
                log.warning("[%s] Deleting all segments because logEndOffset (%d) is smaller than "
                            "logStartOffset (%d).", self.name, log_end_offset, log_start_offset)
                for segment in ordered:
                    _delete_segment(segment)
                stats.deleted_segments += len(ordered)
                ordered = []
                log_end_offset = None
        if not ordered:
            ordered = [self._open(log_start_offset)]
        for segment in ordered[:-1]:
            segment.offset_index.trim_to_valid_size()
            segment.time_index.trim_to_valid_size()
        ordered[-1].resize_indexes(self.config.segment_index_bytes)

        if log_end_offset is None:
            log_end_offset = ordered[-1].read_next_offset()
            recovery = min(recovery_point, log_end_offset)
        elif had_clean_shutdown:
            recovery = log_end_offset
        else:
            recovery = min(recovery_point, log_end_offset)
        start = max(log_start_offset, ordered[0].base_offset)
        return LoadedLog(ordered, log_end_offset, recovery, start, stats)

    def _check_active_tail(self, segment: LogSegment) -> None:
        """After a clean shutdown, still check the bytes past the active segment's last index
        entry: cheap, and a torn tail there would be served and appended after."""
        result = segment.check_tail()
        if result.truncated_bytes:
            self.stats.truncated_bytes += result.truncated_bytes
            self.stats.reasons.append(f"segment {segment.base_offset}: {result.reason}")
            log.warning("[%s] Found a corrupt tail in active segment %d despite a clean shutdown (%s); "
                        "truncated %d bytes, the log now ends at offset %d", self.name, segment.base_offset,
                        result.reason, result.truncated_bytes, segment.read_next_offset())

    def _recover_unflushed(self, ordered: list[LogSegment], first: int) -> list[LogSegment]:
        stats = self.stats
        validator = EpochValidator(self.epoch_entries)
        for i in range(first, len(ordered)):
            segment = ordered[i]
            log.info("[%s] Recovering unflushed segment %d", self.name, segment.base_offset)
            validator.segment_base = segment.base_offset
            result = segment.recover(self.assign_epoch, require_contiguous=self.require_contiguous,
                                     check_epoch=validator)
            stats.recovered_segments += 1
            if result.truncated_bytes == 0:
                continue
            stats.reasons.append(f"segment {segment.base_offset}: {result.reason}")
            if validator.cut_back is not None:
                # The damage began earlier, at a batch the epoch check could only judge later.
                cut_base, cut_position, why = validator.cut_back
                i = next(j for j in range(first, i + 1) if ordered[j].base_offset == cut_base)
                segment = ordered[i]
                result = segment.recover(self.assign_epoch, require_contiguous=self.require_contiguous,
                                         stop_at=cut_position)
                stats.reasons.append(f"segment {cut_base}: {why}")
            stats.truncated_bytes += result.truncated_bytes
            later = ordered[i + 1:]
            log.warning("[%s] Corruption found in segment %d (%s), truncating to offset %d and "
                        "deleting %d later segment(s)", self.name, segment.base_offset,
                        stats.reasons[-1], segment.read_next_offset(), len(later))
            for dead in later:
                _delete_segment(dead)
            stats.deleted_segments += len(later)
            return ordered[:i + 1]
        return ordered

    def _complete_swap(self, swap_path: str, segments: dict[int, LogSegment]) -> None:
        """Install a committed cleaner result over the segments it replaces."""
        base = layout.offset_from_file_name(swap_path)
        swap = self._open(base, suffix=layout.SWAP_SUFFIX)
        swap.recover(None, require_contiguous=False)
        end = swap.read_next_offset()
        for old_base in [b for b in segments if base <= b < end]:
            _delete_segment(segments.pop(old_base))
        swap.close()
        for path in (swap.log_path, swap.offset_index.path, swap.time_index.path):
            os.replace(path, path[:-len(layout.SWAP_SUFFIX)])
        if os.path.exists(swap.txn_index.path):
            os.replace(swap.txn_index.path, swap.txn_index.path[:-len(layout.SWAP_SUFFIX)])
        segments[base] = self._open(base)
        self.stats.completed_swaps += 1
        log.info("[%s] Completed swap of segment %d (offsets %d-%d)", self.name, base, base, end - 1)
