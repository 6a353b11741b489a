"""Moving a replica between this broker's log dirs (KIP-113): Kafka 2.8's
ReplicaManager.alterReplicaLogDirs and its ReplicaAlterLogDirsManager/Thread.

An operator's AlterReplicaLogDirs names a target dir per partition. A partition not yet
hosted here gets the dir remembered (its log is made there when LeaderAndIsr creates
it); a hosted one in another dir gets a future log `<topic>-<partition>.<uuid>-future`
there, which a copier fills from the current log as a follower fills its log: whole
batches read from the current log end of the future log on, appended with their
offsets kept, new appends to the current log included. Once the future log's end has
reached the current one's, the two are swapped on the reactor in one step (no append
can come between the check and the swap) and the partition serves from the new dir.

The copier is one loop on the reactor, Kafka's one ReplicaAlterLogDirsThread: each turn
copies one chunk (replica.fetch.max.bytes, as Kafka's fetch size) per moving partition,
then yields; it runs again at once while data is moving and every 100 ms when caught up
or throttled, so reads stay bounded and the reactor is never held. The bytes copied are
charged to the replica.alter.log.dirs.io.max.bytes.per.second quota (Kafka's
alterLogDirs ReplicationQuotaManager, windows alter.log.dirs.replication.quota.window.*);
while it is used up nothing is copied. A move whose partition stops being hosted
(StopReplica) pauses; a deleted partition's future log goes with it (LogManager); a
future log found at start-up (a move the broker died in) resumes once LeaderAndIsr makes
its partition, as in Kafka.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping

from twisted.internet import threads

from kafkalike.broker.replication_quota import ReplicationQuota
from kafkalike.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalike.broker.replica_manager import ReplicaManager
    from kafkalike.storage.log import Log
    from kafkalike.storage.manager import LogManager

log = logging.getLogger("kafka.server.ReplicaAlterLogDirsManager")
rm_log = logging.getLogger("kafka.server.ReplicaManager")

TopicPartition = tuple[str, int]
IDLE_S = 0.1          # a turn with nothing copied (caught up or throttled) waits this long
SCAN_S = 1.0          # how often future logs without a copier (restart, StopReplica) are looked at


class ReplicaAlterLogDirsManager:
    """The copies in progress, keyed by partition, and the loop that drives them."""

    def __init__(self, broker_id: int, replicas: "ReplicaManager", logs: "LogManager", reactor,
                 quota: ReplicationQuota | None = None, chunk_bytes: int = 1 << 20,
                 run_blocking: Callable[..., Any] = threads.deferToThread) -> None:
        self.broker_id = broker_id
        self.replicas = replicas
        self.logs = logs
        self.reactor = reactor
        self.quota = quota
        self.chunk_bytes = chunk_bytes
        self._run_blocking = run_blocking     # file creation off the reactor (tests run it inline)
        self._truncations: dict[TopicPartition, int] = {}   # copying: the current log's truncation count seen
        self._call: Any = None
        self._stopped = False
        self.prefix = f"[ReplicaAlterLogDirsManager on broker {broker_id}] "

    # -- AlterReplicaLogDirs ------------------------------------------------------------

    async def alter_replica_log_dirs(self, partition_dirs: Mapping[TopicPartition, str],
                                     known_partition: Callable[[TopicPartition], bool]) -> dict[TopicPartition, ErrorCode]:
        """Each partition to its target dir (a real path among log.dirs, checked by the caller)."""
        out: dict[TopicPartition, ErrorCode] = {}
        for tp, target in partition_dirs.items():
            part = self.replicas.partitions.get(tp)
            future_dir = self.logs.future_log_dir_of(tp)
            if part is not None and future_dir is not None and future_dir != target:
                # Another target than the move under way: that move stops, its copy goes.
                self.remove(tp)
                self.logs.delete_future_log(tp)
            self.logs.maybe_update_preferred_log_dir(tp, target)
            if part is None:
                rm_log.warning("Unable to alter log dirs for %s-%d: replica is not hosted here yet; "
                               "its log will be created in %s", tp[0], tp[1], target)
                out[tp] = (ErrorCode.REPLICA_NOT_AVAILABLE if known_partition(tp)
                           else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            if self.logs.log_dir_of(tp) == target:
                self.logs.preferred_log_dirs.pop(tp, None)       # back where it is: no move, no preference
                out[tp] = ErrorCode.NONE
                continue
            if self.logs.get_future_log(tp) is not None:          # already moving there
                out[tp] = ErrorCode.NONE
                continue
            try:
                # Directory and file creation on a thread, as for new replicas.
                await self._run_blocking(self.logs.get_or_create_log, tp, self.replicas.topic_config(tp[0]),
                                            is_future=True)
            except Exception as exc:
                rm_log.warning("Unable to alter log dirs for %s-%d: %s", tp[0], tp[1], exc)
                out[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            self.add(tp)
            out[tp] = ErrorCode.NONE
        return out

    # -- the copies ---------------------------------------------------------------------

    def add(self, tp: TopicPartition) -> None:
        part = self.replicas.partitions.get(tp)
        future = self.logs.get_future_log(tp)
        if tp in self._truncations or part is None or future is None or self._stopped:
            return
        self._truncations[tp] = part.log.truncation_count
        # A copy found at start-up may hold offsets the current log lost in recovery:
        # cut it back to where the two agree before copying (Kafka's truncation on start).
        self._truncate_future(part.log, future)
        log.info("%sAdded fetcher to broker %d for partitions Map(%s-%d -> (offset=%d, leaderEpoch=%d))",
                 self.prefix, self.broker_id, tp[0], tp[1], future.log_end_offset, part.leader_epoch)
        self._wake(0)

    def remove(self, tp: TopicPartition) -> None:
        if self._truncations.pop(tp, None) is not None:
            log.info("%sRemoved fetcher for partitions Set(%s-%d)", self.prefix, tp[0], tp[1])

    @property
    def moving(self) -> list[TopicPartition]:
        return list(self._truncations)

    def max_lag(self) -> int:
        """Kafka's ReplicaAlterLogDirsManager MaxLag: the largest current-minus-future log end."""
        lags = [0]
        for tp in list(self._truncations):     # a metrics scrape may read this from a thread
            part, future = self.replicas.partitions.get(tp), self.logs.get_future_log(tp)
            if part is not None and future is not None:
                lags.append(max(part.log.log_end_offset - future.log_end_offset, 0))
        return max(lags)

    def start(self) -> None:
        self._scan()

    def shutdown(self) -> None:
        self._stopped = True
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        self._truncations.clear()

    def _scan(self) -> None:
        """Future logs whose partition is hosted but not copying: start them (a restart
        mid-move, or a partition hosted again after StopReplica)."""
        if self._stopped:
            return
        for tp in list(self.logs.future_logs):
            tp = (tp[0], tp[1])
            if tp not in self._truncations and tp in self.replicas.partitions:
                self.add(tp)
        self.reactor.callLater(SCAN_S, self._scan)

    def _wake(self, delay: float) -> None:
        if self._stopped or not self._truncations:
            return
        if self._call is not None and self._call.active():
            if self._call.getTime() - self.reactor.seconds() <= delay:
                return
            self._call.cancel()
        self._call = self.reactor.callLater(delay, self._turn)

    def _turn(self) -> None:
        self._call = None
        copied = False
        for tp in list(self._truncations):
            try:
                copied |= self._step(tp)
            except Exception:
                log.exception("%sError moving %s-%d between log dirs; the move stops", self.prefix, *tp)
                self.remove(tp)
        self._wake(0 if copied else IDLE_S)

    def _step(self, tp: TopicPartition) -> bool:
        """One chunk for one partition; True when bytes moved."""
        part = self.replicas.partitions.get(tp)
        future = self.logs.get_future_log(tp)
        if part is None or future is None:
            self.remove(tp)           # not hosted (paused) or the future log is gone (cancelled)
            return False
        current: Log = part.log
        if current.truncation_count != self._truncations[tp] or future.log_end_offset > current.log_end_offset:
            self._truncations[tp] = current.truncation_count
            self._truncate_future(current, future)
        if future.log_end_offset < current.log_start_offset:
            future.truncate_fully_and_start_at(current.log_start_offset)
        copied = False
        if future.log_end_offset < current.log_end_offset:
            if self.quota is not None and self.quota.is_exceeded():
                return False
            data = current.read(future.log_end_offset, self.chunk_bytes, min_one_batch=True)
            if data:
                future.append_as_follower(data)
                if self.quota is not None:
                    self.quota.record(len(data))
                copied = True
        future.update_high_watermark(min(current.high_watermark, future.log_end_offset))
        if current.log_start_offset > future.log_start_offset:
            future.maybe_increment_log_start_offset(min(current.log_start_offset, future.high_watermark))
        if future.log_end_offset == current.log_end_offset:
            self._swap(tp, part, current, future)
        return copied

    @staticmethod
    def _truncate_future(current: "Log", future: "Log") -> None:
        """The current log was truncated (a follower meeting a new leader): cut the copy
        back to where the two agree, by the future log's latest epoch as Kafka does."""
        target = min(future.log_end_offset, current.log_end_offset)
        latest = future.leader_epoch_cache.latest_epoch
        if latest is not None:
            epoch, end = current.end_offset_for_epoch(latest)
            target = min(target, end) if epoch >= 0 else min(target, current.log_start_offset)
        if target < future.log_end_offset:
            future.truncate_to(max(target, future.log_start_offset))

    def _swap(self, tp: TopicPartition, part, current: "Log", future: "Log") -> None:
        """Caught up: no append can come in between on the reactor, so swap now."""
        latest = future.leader_epoch_cache.latest_epoch
        for entry in current.leader_epoch_cache.entries():
            if latest is None or entry.epoch > latest:
                future.assign_leader_epoch(entry.epoch, entry.start_offset)   # epochs without batches yet
        part.log = self.logs.replace_current_with_future(tp)
        self.remove(tp)
        self.replicas.on_high_watermark_moved(tp)
