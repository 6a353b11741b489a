"""One partition replica on this broker: its log, its role, its ISR and high watermark.

The leader owns the high watermark: the lowest log end offset among the in-sync
replicas. Consumers read only below it; followers read to the log end. Followers'
positions arrive through their fetches. ISR changes are proposed to the controller
(AlterIsr, as Kafka 2.8 does); while a proposal that adds replicas is in flight the
leader already counts them for the high watermark ("maximal ISR", KIP-497), and a
proposal that removes replicas takes effect only once the controller accepts it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafkalike.protocol.errors import ErrorCode, KafkaProtocolError

log = logging.getLogger("kafka.cluster.Partition")


@dataclass
class FollowerState:
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1
    # The high watermark our last answer to its fetch carried: when ours moves past it, a
    # fetch of its that waits is answered at once, so followers learn it without waiting
    # for more data (their consumers, KIP-392, and their checkpoint follow the leader's).
    high_watermark_sent: int = -1


@dataclass
class Partition:
    topic: str
    index: int
    broker_id: int
    log: object = None                      # kafkalike.storage.log.Log
    leader_id: int = -1
    leader_epoch: int = -1
    zk_version: int = 0
    controller_epoch: int = -1
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    pending_isr: list[int] | None = None    # proposed to the controller, not yet accepted
    followers: dict[int, FollowerState] = field(default_factory=dict)

    @property
    def high_watermark(self) -> int:
        # The log owns the value so its checkpoint (replication-offset-checkpoint) and
        # retention see what the partition decided.
        return self.log.high_watermark

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def maximal_isr(self) -> list[int]:
        if self.pending_isr is None:
            return self.isr
        return self.isr + [r for r in self.pending_isr if r not in self.isr]

    # -- role changes (from LeaderAndIsr) ---------------------------------------------

    def make_leader(self, state, now_ms: int) -> bool:
        """Become leader at state.leader_epoch; False if the request is stale."""
        if state.leader_epoch < self.leader_epoch:
            return False
        if self.is_leader and state.leader_epoch == self.leader_epoch:
            # The same leadership again: a new controller sends every partition's state,
            # and may send it twice. Only a newer zkVersion has news (an ISR the controller
            # wrote); an older or equal one must not withdraw the ISR change this leader
            # has proposed since, nor forget its followers' positions. (Kafka 2.8 ignores
            # every LeaderAndIsr of the current epoch.)
            if state.zk_version > self.zk_version:
                self._take_state(state)
                self.followers = {r: self.followers.get(r) or FollowerState(last_caught_up_ms=now_ms)
                                  for r in self.replicas if r != self.broker_id}
            return True
        self._take_state(state)
        self.followers = {r: FollowerState(last_caught_up_ms=now_ms)
                          for r in self.replicas if r != self.broker_id}
        self.log.assign_leader_epoch(self.leader_epoch, self.log.log_end_offset)
        # A new leader cannot know its followers' positions; the high watermark it had
        # (from its checkpoint or as follower) stays until they report, as in Kafka.
        self.maybe_increment_high_watermark()
        return True

    def make_follower(self, state) -> bool:
        if state.leader_epoch < self.leader_epoch:
            return False
        self._take_state(state)
        self.followers = {}
        log_ = self.log
        if log_ is not None and log_.leader_epoch_cache.latest_epoch is None \
                and log_.log_end_offset > log_.high_watermark:
            # A log without leader epochs (a topic of a message format older than v2) cannot
            # learn where its history leaves the leader's: Kafka's fetcher then truncates it
            # to the high watermark before fetching (truncateToHighWatermark).
            log_.truncate_to(log_.high_watermark)
        return True

    def _take_state(self, state) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.zk_version = state.zk_version
        self.controller_epoch = state.controller_epoch
        self.replicas = list(state.replicas)
        self.isr = list(state.isr)
        self.pending_isr = None

    # -- leader side ------------------------------------------------------------------

    def check_leader_epoch(self, epoch: int) -> None:
        """Fence requests that carry a current_leader_epoch (KIP-320)."""
        if epoch == -1:
            return
        if epoch < self.leader_epoch:
            raise KafkaProtocolError(ErrorCode.FENCED_LEADER_EPOCH)
        if epoch > self.leader_epoch:
            raise KafkaProtocolError(ErrorCode.UNKNOWN_LEADER_EPOCH)

    def append_as_leader(self, records, required_acks: int, min_insync: int, now_ms: int, origin=None):
        """origin: the storage AppendOrigin; None is a client's produce (coordinators pass theirs)."""
        if not self.is_leader:
            raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if required_acks == -1 and len(self.isr) < min_insync:
            raise KafkaProtocolError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {self.isr} is insufficient to satisfy the "
                f"min.isr requirement of {min_insync} for partition {self.topic}-{self.index}")
        info = self.log.append(records, leader_epoch=self.leader_epoch, now_ms=now_ms, origin=origin)
        self.maybe_increment_high_watermark()
        return info

    def update_follower_position(self, replica_id: int, fetch_offset: int, now_ms: int) -> bool:
        """Record a follower's fetch position; True if the high watermark moved.

        A follower is caught up when it fetches at the leader's log end, or at the log
        end the leader had at its previous fetch (then it was caught up back then):
        Kafka's lastCaughtUpTimeMs rule.
        """
        state = self.followers.get(replica_id)
        if state is None:
            return False
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            state.last_caught_up_ms = now_ms
        elif fetch_offset >= state.last_fetch_leader_leo >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_ms = now_ms
        state.last_fetch_leader_leo = leo
        return self.maybe_increment_high_watermark()

    def high_watermark_news(self, replica_id: int) -> bool:
        """Whether the high watermark moved since our last answer to this follower."""
        state = self.followers.get(replica_id)
        return state is not None and self.high_watermark > state.high_watermark_sent

    def note_high_watermark_sent(self, replica_id: int) -> None:
        state = self.followers.get(replica_id)
        if state is not None:
            state.high_watermark_sent = self.high_watermark

    def maybe_increment_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        candidates = [self.log.log_end_offset]
        for rid in self.maximal_isr:
            if rid != self.broker_id:
                candidates.append(self.followers.get(rid, FollowerState()).log_end_offset)
        return self.log.maybe_increment_high_watermark(min(candidates))

    def expansion_candidates(self) -> list[int]:
        """Followers not in the ISR that have caught up to the high watermark and to
        this leader's epoch (ISR expand rule)."""
        if not self.is_leader or self.pending_isr is not None:
            return []
        latest = self.log.leader_epoch_cache.latest_entry
        epoch_start = latest.start_offset if latest is not None else 0
        return [rid for rid, st in self.followers.items()
                if rid not in self.isr and st.log_end_offset >= self.high_watermark
                and st.log_end_offset >= epoch_start]

    def out_of_sync(self, now_ms: int, lag_ms: int) -> list[int]:
        """ISR followers that have not caught up for longer than replica.lag.time.max.ms."""
        if not self.is_leader or self.pending_isr is not None:
            return []
        leo = self.log.log_end_offset
        out = []
        for rid in self.isr:
            if rid == self.broker_id:
                continue
            st = self.followers.get(rid, FollowerState())
            if st.log_end_offset != leo and now_ms - st.last_caught_up_ms > lag_ms:
                out.append(rid)
        return out

    def enough_replicas_reached(self, offset: int, min_insync: int) -> ErrorCode | None:
        """For acks=all: None while waiting, NONE when done, or an error."""
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark >= offset:
            if len(self.isr) < min_insync:
                return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return ErrorCode.NONE
        return None

    # -- reads ------------------------------------------------------------------------

    def fetch_upper_bound(self, replica_id: int, isolation_level: int = 0) -> int:
        """Followers read to the log end; consumers stop at the high watermark, read_committed
        ones (isolation level 1) at the last stable offset."""
        if replica_id >= 0:
            return self.log.log_end_offset
        return self.log.last_stable_offset if isolation_level == 1 else self.high_watermark

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """Where a follower's history leaves ours (Fetch v12 DivergingEpoch), if it does."""
        if last_fetched_epoch < 0:
            return None
        epoch, end = self.log.end_offset_for_epoch(last_fetched_epoch)
        if epoch < 0:
            return None
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None
