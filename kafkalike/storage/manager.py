"""LogManager: owns the log dirs, their root checkpoint files and locks, and every Log in them.

Startup follows Kafka 2.8: lock each dir's `.lock`, note and delete
`.kafka_cleanshutdown` (so a crash while loading counts as unclean, KAFKA-10471), read
the recovery-point and log-start-offset checkpoints (a broken one is ignored with a
warning, meaning full recovery), then load every partition dir. Shutdown flushes and
closes every log, writes the checkpoints and only then the clean-shutdown marker.

Periodic work (retention, flush.ms, checkpoints, producer-id expiry) is exposed as plain
methods for the broker to schedule; the ones that fsync belong in a thread:
`flush_dirty_logs` whole, the checkpoints as a capture on the reactor
(`*_checkpoint_writer`) whose returned write runs on a thread. `remove_expired_producers`
(every PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, Kafka 2.8's constant) takes each log's
lock in turn for one pass over its producers, so the broker runs it on a thread too.

Future logs (KIP-113, Kafka 2.8's `getOrCreateLog(isFuture = true)`): a replica being
moved to another of this broker's log dirs has, besides its current log, a future log
`<topic>-<partition>.<uuid>-future` in the target dir, which the broker's copier fills
and then swaps in (`replace_current_with_future`). Future logs are loaded at start-up
like current ones (a move resumes), counted in their dir's checkpoints, and closed,
deleted or swapped only here. `preferred_log_dirs` holds the dir an operator asked for a
partition not yet hosted (Kafka's maybeUpdatePreferredLogDir); its log is made there.

`cleaner` is the log cleaner of compacted topics (None with `enable_cleaner=False`, as
log.cleaner.enable=false). Making it creates each dir's `cleaner-offset-checkpoint`,
as Kafka does; the broker starts its thread (`manager.cleaner.start()`), deleting a log
drops the log's entry, and shutdown stops the thread first.
"""
from __future__ import annotations

import fcntl
import logging
import os
import random
import shutil
import threading
from typing import Any, Callable, Iterable, Mapping

from kafkalike.storage import layout
from kafkalike.storage.checkpoints import (
    OffsetCheckpointFile, log_start_offset_checkpoint, recovery_point_checkpoint,
    replication_offset_checkpoint,
)
from kafkalike.storage.cleaner import LogCleaner
from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import CorruptCheckpointError, KafkaStorageError, LogDirLockedError
from kafkalike.storage.layout import TopicPartition
from kafkalike.storage.log import DEFAULT_MAX_PRODUCER_ID_EXPIRATION_MS, Executor, Log, Scheduler, wall_clock_ms

log = logging.getLogger(__name__)

TopicConfigs = Callable[[str], LogConfig]

# Kafka 2.8's LogManager.ProducerIdExpirationCheckIntervalMs: a constant, not a config key.
PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 10 * 60 * 1000


def _read_or_empty(checkpoint: OffsetCheckpointFile, what: str) -> dict[TopicPartition, int]:
    try:
        return checkpoint.read()
    except (CorruptCheckpointError, OSError) as exc:
        log.warning("Error occurred while reading %s, resetting: %s", what, exc)
        return {}


class LogManager:
    """All logs of one broker, spread over its log.dirs."""

    def __init__(self, log_dirs: Iterable[str], default_config: LogConfig, *,
                 topic_configs: TopicConfigs | None = None, clock: Callable[[], int] | None = None,
                 flush_executor: Executor | None = None, scheduler: Scheduler | None = None,
                 rng: random.Random | None = None, enable_cleaner: bool = True,
                 cleaner_options: Mapping[str, Any] | None = None,
                 max_producer_id_expiration_ms: int = DEFAULT_MAX_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.default_config = default_config
        self.max_producer_id_expiration_ms = max_producer_id_expiration_ms
        self._topic_configs = topic_configs
        self._clock = clock or wall_clock_ms
        self._flush_executor = flush_executor
        self._scheduler = scheduler
        self._rng = rng or random.Random()
        self._lock = threading.RLock()
        # Checkpoint files are written from the reactor (log deletion, shutdown) and from
        # the broker's checkpoint thread: one writer at a time, and none after shutdown.
        self._checkpoint_lock = threading.RLock()
        self._closed = False
        self.logs: dict[TopicPartition, Log] = {}
        self._log_dir_of: dict[TopicPartition, str] = {}
        self.future_logs: dict[TopicPartition, Log] = {}
        self._future_dir_of: dict[TopicPartition, str] = {}
        self.preferred_log_dirs: dict[TopicPartition, str] = {}
        self.log_dirs: list[str] = []
        self.had_clean_shutdown: dict[str, bool] = {}
        self._checkpointed_high_watermarks: dict[TopicPartition, int] = {}
        self._lock_fds: dict[str, int] = {}
        self.cleaner: LogCleaner | None = None
        seen: set[str] = set()
        for path in log_dirs:
            real = os.path.realpath(path)
            if real in seen:
                raise KafkaStorageError(f"Duplicate log directory found: {path}")
            seen.add(real)
            os.makedirs(real, exist_ok=True)
            self.log_dirs.append(real)
        try:
            for directory in self.log_dirs:
                self._lock_dir(directory)
            for directory in self.log_dirs:
                self._load_dir(directory)
            if enable_cleaner:
                self.cleaner = LogCleaner(self, clock=self._clock, **dict(cleaner_options or {}))
        except BaseException:
            self._release_locks()
            raise

    # ---------------------------------------------------------------- setup
    def _lock_dir(self, directory: str) -> None:
        fd = os.open(os.path.join(directory, layout.LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirLockedError(
                f"Failed to acquire lock on file .lock in {directory}. A Kafka instance in another "
                "process or thread is using this directory.") from None
        self._lock_fds[directory] = fd

    def _release_locks(self) -> None:
        for fd in self._lock_fds.values():
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._lock_fds.clear()

    def config_for(self, topic: str) -> LogConfig:
        return self._topic_configs(topic) if self._topic_configs else self.default_config

    def _new_log(self, path: str, config: LogConfig, **kwargs) -> Log:
        return Log(path, config, clock=self._clock, flush_executor=self._flush_executor,
                   scheduler=self._scheduler, rng=self._rng,
                   max_producer_id_expiration_ms=self.max_producer_id_expiration_ms, **kwargs)

    def _load_dir(self, directory: str) -> None:
        marker = os.path.join(directory, layout.CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        if clean:
            log.info("Skipping recovery for all logs in %s since clean shutdown file was found", directory)
            os.unlink(marker)
        else:
            log.info("Attempting recovery for all logs in %s since no clean shutdown file was found",
                     directory)
        self.had_clean_shutdown[directory] = clean
        recovery_points = _read_or_empty(recovery_point_checkpoint(directory),
                                         layout.RECOVERY_POINT_CHECKPOINT_FILE)
        start_offsets = _read_or_empty(log_start_offset_checkpoint(directory),
                                       layout.LOG_START_OFFSET_CHECKPOINT_FILE)
        high_watermarks = _read_or_empty(replication_offset_checkpoint(directory),
                                         layout.REPLICATION_OFFSET_CHECKPOINT_FILE)
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if not os.path.isdir(path):
                continue
            if layout.is_delete_dir(name):
                self._remove_dir_later(path, self.default_config.file_delete_delay_ms)
                continue
            future = layout.is_future_dir(name)
            tp = layout.parse_partition_dir(name)
            logs = self.future_logs if future else self.logs
            if tp in logs and future:
                raise KafkaStorageError(f"Duplicate log directories found: {path}, {logs[tp].dir}")
            if tp in logs:
                # Two current dirs: the broker died between the swap's two renames; Kafka
                # 2.8 refuses to start, and so do we.
                raise KafkaStorageError(
                    f"Duplicate log directories for {tp} are found in both {path} and "
                    f"{logs[tp].dir}. It is likely because log directory failure happened while broker was "
                    "replacing current replica with future replica. Recover broker from this failure "
                    "by manually deleting one of the two directories for this partition. It is recommended "
                    "to delete the partition in the log directory that is known to have failed recently.")
            loaded = self._new_log(path, self.config_for(tp.topic),
                                   log_start_offset=start_offsets.get(tp, 0),
                                   recovery_point=recovery_points.get(tp, 0),
                                   had_clean_shutdown=clean)
            loaded.update_high_watermark(high_watermarks.get(tp, 0))
            logs[tp] = loaded
            (self._future_dir_of if future else self._log_dir_of)[tp] = directory
        # The partition's high watermark is its current log's; a future log's (also in
        # its dir's checkpoint, as Kafka writes both) only seeds that future log.
        self._checkpointed_high_watermarks.update(
            (tp, hw) for tp, hw in high_watermarks.items() if self._future_dir_of.get(tp) != directory)

    def _remove_dir_later(self, path: str, delay_ms: int) -> None:
        def remove() -> None:
            shutil.rmtree(path, ignore_errors=True)
        if self._scheduler is None:
            remove()
        else:
            self._scheduler(delay_ms, remove)

    # ---------------------------------------------------------------- logs
    def get_log(self, tp: TopicPartition) -> Log | None:
        return self.logs.get(TopicPartition(*tp))

    def _next_log_dir(self) -> str:
        """The dir holding the fewest partitions, as Kafka 2.8 places new logs (and, as
        Kafka, without counting when there is one dir: counting every log for each new
        one made creating 10,000 partitions quadratic)."""
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]
        counts = {d: 0 for d in self.log_dirs}
        for directory in self._log_dir_of.values():
            counts[directory] += 1
        return min(self.log_dirs, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def get_or_create_log(self, tp: TopicPartition, config: LogConfig | None = None, *,
                          is_new: bool = False, is_future: bool = False) -> Log:
        """The partition's log (or future log), created if absent: in the partition's
        preferred dir if an operator named one, else in the emptiest log dir.

        `is_new` says the partition itself is new (a LeaderAndIsr flag); Kafka uses it to
        refuse recreating a log that should exist but sat in a failed dir. With no failed
        dirs here it only shows in the log line. A future log needs a preferred dir other
        than the current log's (Kafka's IllegalStateException otherwise).
        """
        tp = TopicPartition(*tp)
        with self._lock:
            logs = self.future_logs if is_future else self.logs
            existing = logs.get(tp)
            if existing is not None:
                return existing
            preferred = self.preferred_log_dirs.get(tp)
            if is_future:
                if preferred is None:
                    raise KafkaStorageError(f"Can not create the future log for {tp} without having a "
                                            "preferred log directory")
                if self._log_dir_of.get(tp) == preferred:
                    raise KafkaStorageError(f"Can not create the future log for {tp} in the current log "
                                            f"directory of this partition {preferred}")
            directory = preferred if preferred is not None else self._next_log_dir()
            name = layout.future_dir_name(tp) if is_future else layout.partition_dir_name(tp)
            path = os.path.join(directory, name)
            created = self._new_log(path, config or self.config_for(tp.topic))
            log.info("Created log for %spartition %s in %s", "new " if is_new else "", tp, path)
            logs[tp] = created
            (self._future_dir_of if is_future else self._log_dir_of)[tp] = directory
            return created

    def log_dir_of(self, tp: TopicPartition) -> str:
        return self._log_dir_of[TopicPartition(*tp)]

    def get_future_log(self, tp: TopicPartition) -> Log | None:
        return self.future_logs.get(TopicPartition(*tp))

    def future_log_dir_of(self, tp: TopicPartition) -> str | None:
        return self._future_dir_of.get(TopicPartition(*tp))

    def maybe_update_preferred_log_dir(self, tp: TopicPartition, directory: str) -> None:
        """Remember where an operator wants the partition, unless its log or future log is
        already there (Kafka's maybeUpdatePreferredLogDir)."""
        tp = TopicPartition(*tp)
        if self._log_dir_of.get(tp) != directory and self._future_dir_of.get(tp) != directory:
            self.preferred_log_dirs[tp] = directory

    def delete_log(self, tp: TopicPartition) -> None:
        """Close the log, rename its dir `topic-partition.<uuid>-delete`, remove it later.

        A future log of the partition goes the same way (a deleted partition's move is
        over), and so does its preferred dir."""
        tp = TopicPartition(*tp)
        with self._lock:
            self.preferred_log_dirs.pop(tp, None)
            self.delete_future_log(tp)
            doomed = self.logs.pop(tp, None)
            if doomed is None:
                return
            directory = self._log_dir_of.pop(tp)
            if self.cleaner is not None:
                self.cleaner.forget(tp, directory)
            self._retire(tp, doomed, directory)

    def delete_future_log(self, tp: TopicPartition) -> bool:
        """Drop the partition's future log (a move cancelled or sent elsewhere)."""
        tp = TopicPartition(*tp)
        with self._lock:
            doomed = self.future_logs.pop(tp, None)
            if doomed is None:
                return False
            self._retire(tp, doomed, self._future_dir_of.pop(tp))
            return True

    def _retire(self, tp: TopicPartition, doomed: Log, directory: str) -> None:
        doomed.close()
        target = os.path.join(directory, layout.delete_dir_name(tp))
        os.rename(doomed.dir, target)
        layout.fsync_dir(directory)
        log.info("Log for partition %s is renamed to %s and is scheduled for deletion", tp, target)
        self._remove_dir_later(target, doomed.config.file_delete_delay_ms)
        self._checkpoint_dir(directory)

    def replace_current_with_future(self, tp: TopicPartition) -> Log:
        """Make the future log the partition's log (Kafka's replaceCurrentWithFutureLog).

        The caller has checked the future log caught up with the current one. As Kafka,
        the future dir is renamed `<topic>-<partition>` first (from here a restart loads it,
        and the current one too if the next rename is lost: Kafka's refusal to start with
        two current dirs), then the current dir `.<uuid>-delete`, closed and removed later;
        both dirs' checkpoints are rewritten. Open files follow their renamed dir."""
        tp = TopicPartition(*tp)
        with self._lock:
            source = self.logs.get(tp)
            dest = self.future_logs.get(tp)
            log.info("Attempting to replace current log %s with %s for %s", source, dest, tp)
            if source is None:
                raise KafkaStorageError(f"The current replica for {tp} is offline")
            if dest is None:
                raise KafkaStorageError(f"The future replica for {tp} is offline")
            source_dir, dest_dir = self._log_dir_of[tp], self._future_dir_of[tp]
            _rename_log_dir(dest, os.path.join(dest_dir, layout.partition_dir_name(tp)))
            layout.fsync_dir(dest_dir)
            dest.update_high_watermark(source.high_watermark)
            del self.future_logs[tp], self._future_dir_of[tp]
            self.logs[tp] = dest
            self._log_dir_of[tp] = dest_dir
            if self.preferred_log_dirs.get(tp) == dest_dir:
                del self.preferred_log_dirs[tp]
            if self.cleaner is not None:
                self.cleaner.forget(tp, source_dir)
            self._retire(tp, source, source_dir)
            self._checkpoint_dir(dest_dir)
            log.info("The current replica is successfully replaced with the future replica for %s", tp)
            return dest

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        for tp, existing in [*self.logs.items(), *self.future_logs.items()]:
            if tp.topic == topic:
                existing.update_config(config)

    # ---------------------------------------------------------------- periodic work
    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention for every log (Kafka's log.retention.check.interval.ms task)."""
        now = self._clock() if now_ms is None else now_ms
        return sum(item.delete_old_segments(now) for item in list(self.logs.values()))

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        """Forget idle producer ids in every log, future logs too (Kafka 2.8 schedules this
        in each Log); returns how many went. Safe on a thread: each log takes its own lock."""
        now = self._clock() if now_ms is None else now_ms
        return sum(len(item.remove_expired_producers(now))
                   for item in [*self.logs.values(), *self.future_logs.values()])

    def flush_dirty_logs(self, now_ms: int | None = None) -> int:
        """fsync logs whose flush.ms has passed; blocking, run it in a thread."""
        now = self._clock() if now_ms is None else now_ms
        flushed = 0
        for item in [*self.logs.values(), *self.future_logs.values()]:     # as Kafka, future logs too
            if item.flush_due(now):
                item.flush()
                flushed += 1
        return flushed

    def _logs_in(self, directory: str) -> dict[TopicPartition, Log]:
        """Current and future logs in a dir (a partition has at most one of them there);
        both count in its checkpoints, as in Kafka's logsByDir."""
        found = {tp: lg for tp, lg in self.logs.items() if self._log_dir_of[tp] == directory}
        found.update((tp, lg) for tp, lg in self.future_logs.items() if self._future_dir_of[tp] == directory)
        return found

    def _checkpoint_dir(self, directory: str) -> None:
        with self._checkpoint_lock:
            self._write_recovery_checkpoints(self._recovery_snapshot([directory]))

    def _recovery_snapshot(self, directories: Iterable[str]) -> dict[str, tuple[dict, dict]]:
        snapshot = {}
        for directory in directories:
            logs = self._logs_in(directory)
            snapshot[directory] = ({tp: lg.recovery_point for tp, lg in logs.items()},
                                   {tp: lg.log_start_offset for tp, lg in logs.items()})
        return snapshot

    def _write_recovery_checkpoints(self, snapshot: dict[str, tuple[dict, dict]]) -> None:
        for directory, (recovery_points, start_offsets) in snapshot.items():
            recovery_point_checkpoint(directory).write(recovery_points)
            log_start_offset_checkpoint(directory).write(start_offsets)

    def _write_high_watermarks(self, snapshot: dict[str, dict[TopicPartition, int]]) -> None:
        for directory, marks in snapshot.items():
            replication_offset_checkpoint(directory).write(marks)

    def recovery_checkpoint_writer(self) -> Callable[[], None]:
        """Capture each log's recovery point and log start offset now, on the thread that
        moves them, and return the blocking write of the two checkpoint files per log dir.

        The broker captures on the reactor and writes on a thread, so the fsyncs never
        stall requests and the thread never reads a log that is changing under it."""
        return self._guarded_writer(self._write_recovery_checkpoints, self._recovery_snapshot(self.log_dirs))

    def high_watermark_checkpoint_writer(self) -> Callable[[], None]:
        """As recovery_checkpoint_writer, for each dir's replication-offset-checkpoint."""
        snapshot = {d: {tp: lg.high_watermark for tp, lg in self._logs_in(d).items()} for d in self.log_dirs}
        return self._guarded_writer(self._write_high_watermarks, snapshot)

    def _guarded_writer(self, write: Callable[[Any], None], snapshot: Any) -> Callable[[], None]:
        def run() -> None:
            # A write that lost the race with shutdown must not replace the final checkpoints.
            with self._checkpoint_lock:
                if not self._closed:
                    write(snapshot)
        return run

    def checkpoint_recovery_points_and_log_start_offsets(self) -> None:
        self.recovery_checkpoint_writer()()

    def checkpoint_high_watermarks(self) -> None:
        """Write each log's high watermark to its dir's replication-offset-checkpoint."""
        self.high_watermark_checkpoint_writer()()

    def checkpointed_high_watermark(self, tp: TopicPartition) -> int:
        """The high watermark read from replication-offset-checkpoint at startup (0 if none)."""
        return self._checkpointed_high_watermarks.get(TopicPartition(*tp), 0)

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for directory in self.log_dirs:
            out.update(_read_or_empty(replication_offset_checkpoint(directory),
                                      layout.REPLICATION_OFFSET_CHECKPOINT_FILE))
        return out

    # ---------------------------------------------------------------- shutdown
    def shutdown(self) -> None:
        """Stop the cleaner; flush and close every log, write checkpoints, then the clean-shutdown markers."""
        if self.cleaner is not None:
            self.cleaner.stop()
        with self._lock, self._checkpoint_lock:
            self._closed = True
            for directory in self.log_dirs:
                logs = self._logs_in(directory)
                for item in logs.values():
                    item.flush()
                    item.close()
                self._write_recovery_checkpoints(self._recovery_snapshot([directory]))
                self._write_high_watermarks({directory: {tp: lg.high_watermark for tp, lg in logs.items()}})
                open(os.path.join(directory, layout.CLEAN_SHUTDOWN_FILE), "a").close()
                layout.fsync_dir(directory)
            self._release_locks()

    def close_without_clean_shutdown(self) -> None:
        """Drop everything as a crash would (no flush, no checkpoints, no marker); for tests."""
        if self.cleaner is not None:
            self.cleaner.stop()
        with self._lock, self._checkpoint_lock:
            self._closed = True
            for item in [*self.logs.values(), *self.future_logs.values()]:
                for segment in item.segments:
                    segment.close_without_trim()
                item.closed = True
            self._release_locks()


def _rename_log_dir(moved: Log, new_dir: str) -> None:
    """Rename an open log's dir; its descriptors stay valid, its paths follow (Kafka's
    Log.renameDir). Runs under the log's lock so no roll or read sees half the paths."""
    with moved.lock:
        old_dir = moved.dir
        os.rename(old_dir, new_dir)
        moved.dir = new_dir

        def follow(path: str) -> str:
            return os.path.join(new_dir, os.path.relpath(path, old_dir))
        for segment in moved.segments:
            segment.directory = new_dir
            segment.log_path = follow(segment.log_path)
            for index in (segment.offset_index, segment.time_index, segment.txn_index):
                index.path = follow(index.path)
        moved.leader_epoch_cache.move_to(new_dir)


def topic_configs_from(defaults: LogConfig, overrides: Mapping[str, Mapping[str, str]]) -> TopicConfigs:
    """A TopicConfigs built from per-topic override dicts (as stored under /config/topics)."""
    def lookup(topic: str) -> LogConfig:
        props = overrides.get(topic)
        return LogConfig.from_props(props, defaults, strict=False) if props else defaults
    return lookup
