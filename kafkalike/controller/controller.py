"""The controller: elected through /controller, owner of partition leadership.

Every ZooKeeper watch and every broker request that concerns the controller becomes an
event on one queue, handled one at a time on the reactor (Kafka's ControllerEventManager).
Handlers re-read ZooKeeper rather than trusting what a watch carried, and every write
the controller makes is fenced by the /controller_epoch zkVersion it won the election at.
"""
from __future__ import annotations

import logging
import time
from typing import Awaitable, Callable, Iterable

from twisted.internet import defer, task

from kafkalike.controller import requests as reqs
from kafkalike.controller.channel import ControllerChannelManager
from kafkalike.controller.context import NEW, OFFLINE, ONLINE, ControllerContext
from kafkalike.controller.reassigner import ReassignmentSteps
from kafkalike.metrics.stats import ControllerStats
from kafkalike.controller.leader_election import (
    ElectionResult,
    ElectionType,
    imbalance_ratios,
    plan_election,
    rebalance_candidates,
)
from kafkalike.zkdata.broker_registration import BrokerIdZNode
from kafkalike.zkdata.kafka_json import ZNodeDecodeError
from kafkalike.zkdata.ids import new_topic_id, uuid_to_base64
from kafkalike.zkdata.topic_znodes import LeaderIsrAndControllerEpoch, PartitionAssignment, TopicPartition
from kafkalike.zkdata.znodes import FeatureZNodeValue, PreferredReplicaElectionZNode

log = logging.getLogger("kafka.controller.KafkaController")
state_log = logging.getLogger("state.change.logger")

NO_LEADER = -1


class KafkaController(ReassignmentSteps):
    def __init__(self, broker_id: int, zk, reactor, *, inter_broker_listener: str = "PLAINTEXT",
                 delete_topic_enable: bool = True, unclean_election: Callable[[str], bool] = lambda t: False,
                 auto_leader_rebalance_enable: bool = True, leader_imbalance_check_interval_seconds: float = 300,
                 leader_imbalance_per_broker_percentage: int = 10, uses_topic_ids: bool = True,
                 feature_versioning: bool = True):
        self.broker_id = broker_id
        self.zk = zk
        self.reactor = reactor
        self.listener = inter_broker_listener
        self.delete_topic_enable = delete_topic_enable
        self.unclean_election = unclean_election
        self.ctx = ControllerContext()
        self.active = False
        self.stats = ControllerStats()      # Kafka's ControllerStats timers, read by the broker's metrics
        self.channels: ControllerChannelManager | None = None
        self._queue: defer.DeferredQueue = defer.DeferredQueue()
        self._stopped = False
        self._watches: list = []
        self._topic_watches: dict = {}
        self._broker_watches: dict = {}     # broker id -> data watch on /brokers/ids/<id>
        self.idle = defer.Deferred()
        self.auto_leader_rebalance_enable = auto_leader_rebalance_enable
        self.leader_imbalance_check_interval = leader_imbalance_check_interval_seconds
        self.leader_imbalance_percentage = leader_imbalance_per_broker_percentage
        self._rebalance_loop: task.LoopingCall | None = None
        # inter.broker.protocol.version >= 2.8-IV0 and >= 2.7-IV0 respectively, as in Kafka 2.8.
        self.uses_topic_ids = uses_topic_ids
        self.feature_versioning = feature_versioning

    # -- event loop -------------------------------------------------------------------

    def put(self, name: str, handler: Callable[..., Awaitable], *args) -> None:
        self._queue.put((name, handler, args))

    def startup(self) -> None:
        defer.ensureDeferred(self._loop())
        d = self.zk.watch_controller(lambda *_: self.put("ControllerChange", self._on_controller_change))
        d.addCallback(lambda _: self.put("Startup", self._elect))

    async def _loop(self) -> None:
        while not self._stopped:
            name, handler, args = await self._queue.get()
            if name == "Shutdown":
                break
            started = time.monotonic()
            try:
                await handler(*args)
            except Exception as exc:
                log.exception("[Controller id=%d] Error processing event %s", self.broker_id, name)
                # A request's event carries the Deferred its answer waits on: fail it, so the
                # request is answered (UNKNOWN_SERVER_ERROR) instead of never, as in Kafka.
                for arg in args:
                    if isinstance(arg, defer.Deferred) and not arg.called:
                        arg.errback(exc)
            self.stats.event_handled(name, time.monotonic() - started)
            if not self._queue.pending and not self.idle.called:
                self.idle.callback(None)

    def shutdown(self) -> None:
        self._stopped = True
        self._queue.put(("Shutdown", None, ()))
        self._resign()

    # -- election ---------------------------------------------------------------------

    def on_session_expired(self) -> None:
        """Our ZooKeeper session is gone, and with it /controller if it was ours: stop
        acting as controller at once (Kafka's expire handler resigns)."""
        self.put("Expire", self._expire)

    def on_reregistered(self) -> None:
        """The broker is registered on its new session: take part in the election again."""
        self.put("Reelect", self._elect)

    async def _expire(self) -> None:
        self._resign()

    async def _elect(self) -> None:
        current = await self.zk.get_controller_id()
        if current is not None:
            if current != self.broker_id and self.active:
                self._resign()
            log.info("[Controller id=%d] Broker %d has been elected as the controller, "
                     "so stopping the election process.", self.broker_id, current)
            return
        if self.active:
            self._resign()    # a win now starts over: new watches, channels and context
        try:
            epoch, epoch_zk_version = await self.zk.register_controller_and_increment_epoch(self.broker_id)
        except Exception as exc:
            log.info("[Controller id=%d] Lost the controller election (%s)", self.broker_id, exc)
            return
        log.info("[Controller id=%d] %d successfully elected as the controller. Epoch "
                 "incremented to %d and epoch zk version is now %d",
                 self.broker_id, self.broker_id, epoch, epoch_zk_version)
        self.ctx = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        self.active = True
        await self._on_failover()

    async def _on_controller_change(self) -> None:
        current = await self.zk.get_controller_id()
        if current is None:
            await self._elect()
        elif current != self.broker_id and self.active:
            self._resign()

    def _resign(self) -> None:
        if self.active:
            log.info("[Controller id=%d] Resigning", self.broker_id)
        self.active = False
        for watch in self._watches + list(self._topic_watches.values()) + list(self._broker_watches.values()):
            watch.cancel()
        self._watches, self._topic_watches, self._broker_watches = [], {}, {}
        self._stop_auto_rebalance()
        if self.channels is not None:
            self.channels.shutdown()
            self.channels = None
        self.ctx = ControllerContext()

    async def _on_failover(self) -> None:
        zk = self.zk
        self._watches = [
            await zk.watch_broker_changes(lambda *_: self.put("BrokerChange", self._on_broker_change)),
            await zk.watch_topic_changes(lambda *_: self.put("TopicChange", self._on_topic_change)),
            await zk.watch_topic_deletions(lambda *_: self.put("TopicDeletion", self._on_topic_deletion)),
        ]
        self.channels = ControllerChannelManager(self.broker_id, self.reactor)
        await self._set_feature_versioning()
        for entry in await zk.get_all_brokers_and_epochs():
            self._add_live_broker(entry.broker, entry.epoch)
        await self._watch_brokers()
        topics = set(await zk.get_all_topics())
        await self._load_topics(topics)
        # Reassignments in flight are in the topic znodes (adding/removing replicas).
        self.ctx.partitions_being_reassigned = set(self.ctx.reassigning)
        self.ctx.topics_to_delete = set(await zk.get_topic_deletions()) & topics
        # Tell every broker what we know before changing anything.
        self._send_update_metadata(self.ctx.live_ids, list(self.ctx.assignments))
        for tp, state in self.ctx.leadership.items():
            self.ctx.partition_states[tp] = ONLINE if state.leader in self.ctx.live_brokers else OFFLINE
        for tp in self.ctx.assignments:
            self.ctx.partition_states.setdefault(tp, NEW)
        await self._elect_offline_and_new()
        # Replicas on brokers that died while there was no controller (the old one among
        # them) leave the ISRs now, as Kafka's ReplicaStateMachine.startup moves them to
        # OfflineReplica; left in, they would hold every high watermark and acks=all
        # write until the leader's replica.lag.time.max.ms shrink.
        dead = {r for replicas in self.ctx.assignments.values() for r in replicas} - self.ctx.live_ids
        if dead:
            await self._remove_from_isr(dead)
        self._send_leader_and_isr_for_all_live()
        await self._initialize_partition_reassignments()
        await self._on_topic_deletion()
        self.put("PreferredReplicaElectionRegistration", self._watch_preferred_replica_election)
        self._start_auto_rebalance()

    async def _set_feature_versioning(self) -> None:
        """/feature as a 2.8 controller leaves it: enabled (2.7-IV0+) with no finalized
        feature, or disabled with none; written only when it differs."""
        current, _ = await self.zk.get_feature_znode()
        wanted = FeatureZNodeValue(self.feature_versioning, current.features if current and self.feature_versioning
                                   else {})
        if current is None and not self.feature_versioning:
            return
        if current != wanted:
            await self.zk.create_or_set_feature_znode(wanted, exists=current is not None)

    async def _load_topics(self, topics) -> list[TopicPartition]:
        loaded = []
        assignments = await self.zk.get_topic_assignments(sorted(topics))
        for topic, assignment in assignments.items():
            if assignment.topic_id is None and self.uses_topic_ids:
                # Created without one (by --zookeeper tools or an older broker): Kafka 2.8's
                # controller gives every topic an id and writes it into the topic's znode.
                assignment = PartitionAssignment(assignment.partitions, new_topic_id())
                await self.zk.set_topic_assignment(topic, assignment, self.ctx.epoch_zk_version)
                log.info("[Controller id=%d] Assigned topic id %s to topic %s", self.broker_id,
                         uuid_to_base64(assignment.topic_id), topic)
            if assignment.topic_id is not None:
                self.ctx.topic_ids[topic] = assignment.topic_id
            for p, ra in assignment.partitions.items():
                tp = TopicPartition(topic, p)
                if tp not in self.ctx.assignments:
                    loaded.append(tp)
                self.ctx.set_full_assignment(tp, ra)
        states = await self.zk.get_partition_states(loaded)
        self.ctx.leadership.update(states)
        for topic in sorted(topics):
            if topic not in self._topic_watches:
                self._topic_watches[topic] = await self.zk.watch_partition_modifications(
                    topic, lambda *_, t=topic: self._on_partition_modification(t))
        return loaded

    def _add_live_broker(self, reg, epoch: int) -> None:
        self.ctx.live_brokers[reg.id] = reg
        self.ctx.broker_epochs[reg.id] = epoch
        ep = reg.endpoint(self.listener)
        if ep is not None and self.channels is not None:
            self.channels.add_broker(reg.id, ep.host or "127.0.0.1", ep.port)

    # -- brokers ----------------------------------------------------------------------

    async def _on_broker_change(self) -> None:
        if not self.active:
            return
        current = {e.broker.id: (e.broker, e.epoch) for e in await self.zk.get_all_brokers_and_epochs()}
        dead = [b for b in self.ctx.live_brokers if b not in current]
        bounced = [b for b in current if b in self.ctx.live_brokers
                   and current[b][1] != self.ctx.broker_epochs.get(b)]
        new = [b for b in current if b not in self.ctx.live_brokers]
        log.info("[Controller id=%d] Newly added brokers: %s, deleted brokers: %s, bounced brokers: %s, "
                 "all live brokers: %s", self.broker_id, ",".join(map(str, sorted(new))),
                 ",".join(map(str, sorted(dead))), ",".join(map(str, sorted(bounced))),
                 ",".join(map(str, sorted(current))))
        if dead or bounced:
            for b in dead:
                watch = self._broker_watches.pop(b, None)
                if watch is not None:
                    watch.cancel()
            for b in dead + bounced:
                self.ctx.live_brokers.pop(b, None)
                self.ctx.broker_epochs.pop(b, None)
                self.ctx.shutting_down.discard(b)
                if self.channels is not None:
                    self.channels.remove_broker(b)
            await self._on_brokers_failure(dead + bounced)
        if new or bounced:
            for b in new + bounced:
                self._add_live_broker(*current[b])
            await self._watch_brokers()
            await self._on_brokers_startup(new + bounced)

    async def _watch_brokers(self) -> None:
        """Kafka's BrokerModificationsHandler: a data watch on each live broker's znode, so
        a broker that changes its listeners live (a dynamic config) is seen by everyone."""
        for b in sorted(self.ctx.live_brokers):
            if b not in self._broker_watches:
                self._broker_watches[b] = await self.zk.watch_data(
                    BrokerIdZNode.path(b), lambda *_, b=b: self.put("BrokerModifications", self._on_broker_modification, b))

    async def _on_broker_modification(self, broker_id: int) -> None:
        """processBrokerModification: a live broker rewrote its registration (same epoch);
        its new endpoints reach every broker's metadata through UpdateMetadata."""
        if not self.active:
            return
        found = {e.broker.id: e for e in await self.zk.get_all_brokers_and_epochs()}
        entry = found.get(broker_id)
        old = self.ctx.live_brokers.get(broker_id)
        if entry is None or old is None or entry.epoch != self.ctx.broker_epochs.get(broker_id) or entry.broker == old:
            return     # gone or bounced (BrokerChange handles those), or nothing new
        log.info("[Controller id=%d] Updated broker metadata: %s -> %s", self.broker_id, old, entry.broker)
        self._add_live_broker(entry.broker, entry.epoch)
        log.info("[Controller id=%d] Broker info update callback for %d", self.broker_id, broker_id)
        self._send_update_metadata(self.ctx.live_ids, [])

    async def _on_brokers_startup(self, brokers: list[int]) -> None:
        # New brokers learn everything; the others learn about the new brokers.
        self._send_update_metadata(self.ctx.live_ids, list(self.ctx.assignments))
        replicas = sorted(tp for tp, rs in self.ctx.assignments.items()
                          if any(b in rs for b in brokers) and tp.topic not in self.ctx.topics_to_delete)
        for b in brokers:
            mine = [tp for tp in replicas if b in self.ctx.assignments[tp] and tp in self.ctx.leadership]
            if mine:
                self._send_leader_and_isr({b}, mine)
        await self._elect_offline_and_new()
        await self._resume_reassignments_on(brokers)

    async def _on_brokers_failure(self, brokers: list[int]) -> None:
        gone = set(brokers)
        led = [tp for tp, s in self.ctx.leadership.items() if s.leader in gone]
        for tp in led:
            self.ctx.set_state(tp, OFFLINE)
        await self._elect_offline_and_new()
        # Replicas on dead brokers leave the ISR of partitions that still have a leader.
        await self._remove_from_isr(gone)

    async def _remove_from_isr(self, gone: set[int]) -> None:
        changed = {}
        for tp, s in self.ctx.leadership.items():
            if not gone & set(s.isr) or tp.topic in self.ctx.topics_to_delete:
                continue
            leader = NO_LEADER if s.leader in gone else s.leader
            new_isr = [r for r in s.isr if r not in gone]
            if not new_isr:
                new_isr = list(s.isr)[:1]     # keep the last ISR member, as Kafka does
                leader = NO_LEADER
            changed[tp] = LeaderIsrAndControllerEpoch(leader, s.leader_epoch + 1, tuple(new_isr),
                                                      self.ctx.epoch, s.zk_version)
        if changed:
            written = await self._write_states(changed)
            for tp in written:
                if self.ctx.leadership[tp].leader == NO_LEADER:
                    self.ctx.partition_states[tp] = OFFLINE
            self._send_leader_and_isr_to_replicas(list(written))
        self._send_update_metadata(self.ctx.live_ids, list(self.ctx.assignments))

    # -- topics -----------------------------------------------------------------------

    async def _on_topic_change(self) -> None:
        if not self.active:
            return
        topics = set(await self.zk.get_all_topics())
        known = self.ctx.topics()
        for gone in known - topics:
            self._forget_topic(gone)
        new = topics - known
        if new:
            log.info("[Controller id=%d] New topics: [%s]", self.broker_id, ",".join(sorted(new)))
            created = await self._load_topics(new)
            await self._on_new_partitions(created)

    def _on_partition_modification(self, topic: str) -> None:
        self.put("PartitionModifications", self._partition_modification, topic)

    async def _partition_modification(self, topic: str) -> None:
        if not self.active or topic in self.ctx.topics_to_delete:
            return
        created = await self._load_topics({topic})
        if created:
            log.info("[Controller id=%d] New partitions to be added %s", self.broker_id, created)
            await self._on_new_partitions(created)

    async def _on_new_partitions(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            if tp not in self.ctx.leadership:
                self.ctx.set_state(tp, NEW)
        await self._elect_offline_and_new()

    async def _on_topic_deletion(self) -> None:
        if not self.active:
            return
        marked = set(await self.zk.get_topic_deletions())
        if not self.delete_topic_enable:
            for t in marked:
                log.info("[Controller id=%d] Removing %s from the deletion list as "
                         "delete.topic.enable is false", self.broker_id, t)
            await self.zk.delete_topic_deletions(marked, self.ctx.epoch_zk_version)
            return
        for topic in sorted(marked):
            if topic not in self.ctx.topics():
                await self.zk.delete_topic_deletions([topic], self.ctx.epoch_zk_version)
                continue
            if any(tp.topic == topic for tp in self.ctx.partitions_being_reassigned):
                if topic not in self.ctx.deletions_waiting:
                    log.info("[Controller id=%d] Topic %s is ineligible for deletion: topic reassignment in "
                             "progress", self.broker_id, topic)
                self.ctx.deletions_waiting.add(topic)
                continue
            self.ctx.deletions_waiting.discard(topic)
            self.ctx.topics_to_delete.add(topic)
            await self._delete_topic(topic)

    async def _delete_topic(self, topic: str) -> None:
        parts = self.ctx.partitions_of(topic)
        state_log.info("[Controller id=%d epoch=%d] Deleting topic %s", self.broker_id, self.ctx.epoch, topic)
        # Brokers stop serving it at once (leader -2 means "being deleted").
        self._send_update_metadata(self.ctx.live_ids, parts, deleting=set(parts))
        waits = []
        for b in sorted(self.ctx.live_ids):
            mine = [tp for tp in parts if b in self.ctx.assignments[tp]]
            if mine:
                waits.append(self.channels.send(b, reqs.stop_replica(self.ctx, self.broker_id, b, mine, True),
                                                reqs.STOP_REPLICA_VERSION))
        await defer.DeferredList(waits, consumeErrors=True)
        offline_replica_hosts = {r for tp in parts for r in self.ctx.assignments[tp]} - self.ctx.live_ids
        if offline_replica_hosts:
            # Kafka keeps the topic "queued for deletion" until those brokers return and
            # delete their copies; here the znodes go now. A broker that stayed up through
            # an expired session deletes its copies when it registers again (KafkaServer.
            # _delete_stray_partitions); a restarted one keeps them on disk, unserved.
            log.info("[Controller id=%d] Replicas of %s on offline brokers %s will be removed "
                     "when they return", self.broker_id, topic, sorted(offline_replica_hosts))
        await self.zk.delete_topic_znode(topic, self.ctx.epoch_zk_version)
        await self.zk.delete_topic_configs([topic], self.ctx.epoch_zk_version)
        await self.zk.delete_topic_deletions([topic], self.ctx.epoch_zk_version)
        self._forget_topic(topic)
        log.info("[Controller id=%d] Deletion of topic %s successfully completed", self.broker_id, topic)

    def _forget_topic(self, topic: str) -> None:
        watch = self._topic_watches.pop(topic, None)
        if watch is not None:
            watch.cancel()
        self.ctx.remove_topic(topic)

    # -- leader election ----------------------------------------------------------------

    def enable_unclean_election(self) -> None:
        """Kafka's enableDefaultUncleanLeaderElection / enableTopicUncleanLeaderElection:
        unclean.leader.election.enable was turned on, so an active controller queues an
        event that tries its offline partitions again at once."""
        if not self.active:
            return

        async def elect() -> None:
            if self.active:
                await self._elect_offline_and_new()
        self.put("UncleanLeaderElectionEnable", elect)

    async def _elect_offline_and_new(self) -> None:
        """Move New and Offline partitions to Online where a leader can be found."""
        new_parts = [tp for tp, s in self.ctx.partition_states.items()
                     if s == NEW and tp.topic not in self.ctx.topics_to_delete]
        offline = [tp for tp, s in self.ctx.partition_states.items()
                   if s == OFFLINE and tp.topic not in self.ctx.topics_to_delete]
        if new_parts:
            await self._initialize_new(new_parts)
        if offline:
            await self._elect_offline(offline)

    async def _initialize_new(self, parts: list[TopicPartition]) -> None:
        states = {}
        for tp in parts:
            live = [r for r in self.ctx.assignments[tp] if r in self.ctx.live_brokers]
            if not live:
                state_log.error("[Controller id=%d epoch=%d] Encountered error while changing partition "
                                "%s-%d's state from New to Online since LeaderAndIsr path: no live replicas",
                                self.broker_id, self.ctx.epoch, tp.topic, tp.partition)
                continue
            states[tp] = LeaderIsrAndControllerEpoch(live[0], 0, tuple(live), self.ctx.epoch, 0)
        if not states:
            return
        outcomes = await self.zk.create_partition_states(states, self.ctx.epoch_zk_version)
        created = {tp: s for tp, s in outcomes.items() if not isinstance(s, Exception)}
        for tp, exc in outcomes.items():
            if isinstance(exc, Exception):
                state_log.error("[Controller id=%d epoch=%d] Could not create state of %s-%d: %s",
                                self.broker_id, self.ctx.epoch, tp.topic, tp.partition, exc)
        for tp, state in created.items():
            self.ctx.leadership[tp] = state
            self.ctx.set_state(tp, ONLINE)
            state_log.info("[Controller id=%d epoch=%d] Changed partition %s-%d from NewPartition to "
                           "OnlinePartition with state LeaderAndIsr(leader=%d, leaderEpoch=0, isr=%s, "
                           "zkVersion=0)", self.broker_id, self.ctx.epoch, tp.topic, tp.partition,
                           state.leader, list(state.isr))
        self._send_leader_and_isr_to_replicas(list(created), new=set(created))
        self._send_update_metadata(self.ctx.live_ids, list(created))

    async def _unclean_allowed(self, topic: str, decided: dict[str, bool]) -> bool:
        """Kafka's controller reads the topic's unclean.leader.election.enable from
        /config/topics at election time: a controller that has just started (the only
        broker back after every ISR member died) has not cached the topic's overrides."""
        if topic not in decided:
            try:
                value = (await self.zk.get_entity_configs("topics", topic)).get("unclean.leader.election.enable")
            except Exception:           # ZooKeeper unreachable: what this broker knows
                value = None
            decided[topic] = (value.strip().lower() == "true" if value is not None
                              else self.unclean_election(topic))
        return decided[topic]

    async def _elect_offline(self, parts: list[TopicPartition]) -> None:
        changed = {}
        unclean: dict[str, bool] = {}
        for tp in parts:
            current = self.ctx.leadership.get(tp)
            if current is None:
                continue
            replicas = self.ctx.assignments[tp]
            live = [r for r in replicas if r in self.ctx.live_brokers and r not in self.ctx.shutting_down]
            in_sync = [r for r in live if r in current.isr]
            if in_sync:
                leader, isr = in_sync[0], [r for r in current.isr if r in self.ctx.live_brokers]
            elif live and await self._unclean_allowed(tp.topic, unclean):
                leader, isr = live[0], [live[0]]
                self.stats.unclean_election()
                state_log.warning("[Controller id=%d epoch=%d] Unclean leader election: %s-%d led by "
                                  "out-of-sync replica %d; data may be lost", self.broker_id,
                                  self.ctx.epoch, tp.topic, tp.partition, leader)
            else:
                state_log.error("[Controller id=%d epoch=%d] No eligible leader for %s-%d: live "
                                "replicas %s, ISR %s", self.broker_id, self.ctx.epoch, tp.topic,
                                tp.partition, live, list(current.isr))
                continue
            changed[tp] = LeaderIsrAndControllerEpoch(leader, current.leader_epoch + 1, tuple(isr),
                                                      self.ctx.epoch, current.zk_version)
        if not changed:
            return
        written = await self._write_states(changed)
        for tp in written:
            self.ctx.set_state(tp, ONLINE)
        self._send_leader_and_isr_to_replicas(list(written))
        self._send_update_metadata(self.ctx.live_ids, list(written))

    async def _write_states(self, changed: dict) -> list[TopicPartition]:
        """Conditional writes; partitions whose zkVersion moved are re-read and skipped."""
        outcomes = await self.zk.set_partition_states(changed, self.ctx.epoch_zk_version)
        ok = {tp: s for tp, s in outcomes.items() if not isinstance(s, Exception)}
        failed = {tp: s for tp, s in outcomes.items() if isinstance(s, Exception)}
        for tp, state in ok.items():
            self.ctx.leadership[tp] = state
            state_log.info("[Controller id=%d epoch=%d] Partition %s-%d state changed to "
                           "(Leader:%d,ISR:%s,LeaderEpoch:%d,ControllerEpoch:%d)", self.broker_id,
                           self.ctx.epoch, tp.topic, tp.partition, state.leader,
                           ",".join(map(str, state.isr)), state.leader_epoch, state.controller_epoch)
        if failed:
            fresh = await self.zk.get_partition_states(list(failed))
            self.ctx.leadership.update(fresh)
            for tp, exc in failed.items():
                state_log.warning("[Controller id=%d epoch=%d] Failed to update state of %s-%d: %s",
                                  self.broker_id, self.ctx.epoch, tp.topic, tp.partition, exc)
        return list(ok)

    # -- requests from brokers ------------------------------------------------------------

    def alter_isr(self, request) -> defer.Deferred:
        """AlterIsr from a partition leader, handled in turn on the event queue."""
        d = defer.Deferred()
        self.put("AlterIsrReceived", self._alter_isr, request, d)
        return d

    async def _alter_isr(self, request, d: defer.Deferred) -> None:
        from kafkalike.protocol.errors import ErrorCode
        from kafkalike.protocol.messages.alter_isr import AlterIsrResponse
        if not self.active:
            d.callback(AlterIsrResponse(error_code=int(ErrorCode.NOT_CONTROLLER)))
            return
        if self.ctx.broker_epochs.get(request.broker_id) != request.broker_epoch:
            d.callback(AlterIsrResponse(error_code=int(ErrorCode.STALE_BROKER_EPOCH)))
            return
        errors: dict = {}
        changed = {}
        for t in request.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                current = self.ctx.leadership.get(tp)
                if current is None or t.name in self.ctx.topics_to_delete:
                    errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif p.leader_epoch < current.leader_epoch or current.leader != request.broker_id:
                    errors[tp] = ErrorCode.FENCED_LEADER_EPOCH
                elif p.leader_epoch == current.leader_epoch and sorted(p.new_isr) == sorted(current.isr):
                    # Already so (our answer to this proposal was lost, and the leader sent
                    # it again): answered with the state, whatever zkVersion it names, as
                    # Kafka's controller does since 3.0; 2.8 refused it and left the leader
                    # with a zkVersion that no later proposal could match.
                    continue
                elif p.current_isr_version != current.zk_version:
                    errors[tp] = ErrorCode.INVALID_UPDATE_VERSION
                elif any(r not in self.ctx.assignments[tp] for r in p.new_isr):
                    errors[tp] = ErrorCode.INVALID_REQUEST
                else:
                    changed[tp] = LeaderIsrAndControllerEpoch(current.leader, current.leader_epoch,
                                                              tuple(p.new_isr), self.ctx.epoch, current.zk_version)
        written = await self._write_states(changed) if changed else []
        for tp in changed:
            if tp not in written:
                errors[tp] = ErrorCode.INVALID_UPDATE_VERSION
        topics: dict = {}
        for t in request.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                entry = AlterIsrResponse.PartitionData(partition_index=p.partition_index,
                                                       error_code=int(errors.get(tp, ErrorCode.NONE)))
                state = self.ctx.leadership.get(tp)
                if tp not in errors and state is not None:
                    entry.leader_id, entry.leader_epoch = state.leader, state.leader_epoch
                    entry.isr, entry.current_isr_version = list(state.isr), state.zk_version
                topics.setdefault(t.name, []).append(entry)
        d.callback(AlterIsrResponse(error_code=0, topics=[
            AlterIsrResponse.TopicData(name=n, partitions=ps) for n, ps in topics.items()]))
        # A leader of the current epoch that names an older zkVersion has missed a state
        # we wrote; until it learns it, every proposal of its is refused (and acks=all
        # writes with them once its ISR is below min.insync.replicas). Kafka 2.8 leaves it
        # waiting for a LeaderAndIsr that may never come; we send it the state.
        behind = [tp for tp, code in errors.items() if code == ErrorCode.INVALID_UPDATE_VERSION
                  and self.ctx.leadership[tp].leader == request.broker_id]
        if behind:
            state_log.info("[Controller id=%d epoch=%d] Sending LeaderAndIsr to broker %d for %d partitions whose "
                           "ISR changes named an old zkVersion", self.broker_id, self.ctx.epoch, request.broker_id,
                           len(behind))
            self._send_leader_and_isr({request.broker_id}, behind)
        if written:
            self._send_update_metadata(self.ctx.live_ids, written)
            # After the answer, as Kafka: an ISR that now holds every target replica
            # completes that partition's reassignment.
            await self._maybe_complete_reassignments(written)

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> defer.Deferred:
        """Deferred[(ErrorCode, remaining partitions)] for a broker about to stop."""
        d = defer.Deferred()
        self.put("ControlledShutdown", self._controlled_shutdown, broker_id, broker_epoch, d)
        return d

    async def _controlled_shutdown(self, broker_id: int, broker_epoch: int, d: defer.Deferred) -> None:
        from kafkalike.protocol.errors import ErrorCode
        if not self.active:
            d.callback((ErrorCode.NOT_CONTROLLER, []))
            return
        if broker_id not in self.ctx.live_brokers:
            d.callback((ErrorCode.BROKER_NOT_AVAILABLE, []))
            return
        if broker_epoch not in (-1, self.ctx.broker_epochs.get(broker_id)):
            d.callback((ErrorCode.STALE_BROKER_EPOCH, []))
            return
        log.info("[Controller id=%d] Shutting down broker %d", self.broker_id, broker_id)
        self.ctx.shutting_down.add(broker_id)
        moved = {}
        shrunk = {}
        for tp, s in self.ctx.leadership.items():
            if tp.topic in self.ctx.topics_to_delete or broker_id not in self.ctx.assignments[tp]:
                continue
            if s.leader == broker_id:
                candidates = [r for r in self.ctx.assignments[tp] if r in s.isr and r in self.ctx.live_brokers
                              and r not in self.ctx.shutting_down]
                if candidates:
                    isr = [r for r in s.isr if r not in self.ctx.shutting_down]
                    moved[tp] = LeaderIsrAndControllerEpoch(candidates[0], s.leader_epoch + 1, tuple(isr),
                                                            self.ctx.epoch, s.zk_version)
            elif broker_id in s.isr and len(s.isr) > 1:
                shrunk[tp] = LeaderIsrAndControllerEpoch(s.leader, s.leader_epoch + 1,
                                                         tuple(r for r in s.isr if r != broker_id),
                                                         self.ctx.epoch, s.zk_version)
        written = await self._write_states({**moved, **shrunk}) if (moved or shrunk) else []
        if written:
            self._send_leader_and_isr_to_replicas(written)
            self._send_update_metadata(self.ctx.live_ids, written)
        followed = [tp for tp in written if tp in shrunk]
        if followed and self.channels is not None:
            self.channels.send(broker_id, reqs.stop_replica(self.ctx, self.broker_id, broker_id, followed, False),
                               reqs.STOP_REPLICA_VERSION)
        # As Kafka: only replicated partitions count; a single copy cannot move anywhere.
        remaining = sorted(tp for tp, s in self.ctx.leadership.items()
                           if s.leader == broker_id and len(self.ctx.assignments[tp]) > 1)
        d.callback((ErrorCode.NONE, remaining))

    # -- sending ------------------------------------------------------------------------

    def _send_update_metadata(self, brokers, partitions, deleting=frozenset()) -> None:
        if self.channels is None:
            return
        for b in sorted(brokers):
            self.channels.send(b, reqs.update_metadata(self.ctx, self.broker_id, b, sorted(partitions), deleting),
                               reqs.UPDATE_METADATA_VERSION)

    def _send_leader_and_isr(self, brokers, partitions, new=frozenset()) -> None:
        if self.channels is None:
            return
        for b in sorted(brokers):
            if b in self.ctx.live_brokers:
                self.channels.send(b, reqs.leader_and_isr(self.ctx, self.broker_id, b, sorted(partitions),
                                                          set(new), self.listener),
                                   reqs.LEADER_AND_ISR_VERSION)

    def _send_leader_and_isr_to_replicas(self, partitions, new=frozenset()) -> None:
        """To each live replica, except a broker in controlled shutdown, as Kafka's elections
        send only to replicas online and not shutting down: told to follow the new leader, it
        would fetch, be taken back into the ISR, and then hold every acks=all write there
        for replica.lag.time.max.ms once it stopped."""
        by_broker: dict[int, list] = {}
        for tp in partitions:
            for r in self.ctx.assignments[tp]:
                if r not in self.ctx.shutting_down:
                    by_broker.setdefault(r, []).append(tp)
        for b, parts in by_broker.items():
            self._send_leader_and_isr({b}, parts, new)

    def _send_leader_and_isr_for_all_live(self) -> None:
        parts = [tp for tp in self.ctx.leadership if tp.topic not in self.ctx.topics_to_delete]
        self._send_leader_and_isr_to_replicas(parts)

    # -- leader elections asked for by admins, and the automatic leader rebalance ---------

    def elect_leaders(self, partitions: Iterable[TopicPartition] | None,
                      election_type: ElectionType | int = ElectionType.PREFERRED) -> defer.Deferred:
        """Deferred[dict[TopicPartition, ElectionResult]] for an ElectionLeaders request,
        handled in turn on the event queue; None means every partition of the cluster."""
        d = defer.Deferred()
        wanted = None if partitions is None else list(dict.fromkeys(partitions))
        self.put("ReplicaLeaderElection", self._elect_leaders, wanted, ElectionType(election_type), d)
        return d

    async def _elect_leaders(self, partitions: list[TopicPartition] | None, election_type: ElectionType,
                             d: defer.Deferred) -> None:
        from kafkalike.protocol.errors import ErrorCode
        from kafkalike.zkdata.errors import ControllerMovedError
        if not self.active:
            d.callback({tp: ElectionResult(ErrorCode.NOT_CONTROLLER) for tp in partitions or ()})
            return
        wanted = sorted(self.ctx.assignments) if partitions is None else partitions
        try:
            results = await self._run_election(wanted, election_type, "AdminClientTriggered")
        except ControllerMovedError:
            results = {tp: ElectionResult(ErrorCode.NOT_CONTROLLER) for tp in wanted}
        except Exception as exc:
            log.exception("[Controller id=%d] Replica leader election (%s) failed", self.broker_id,
                          election_type.name)
            results = {tp: ElectionResult(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc) or None) for tp in wanted}
        d.callback(results)

    async def _run_election(self, partitions: list[TopicPartition], election_type: ElectionType,
                            trigger: str) -> dict[TopicPartition, ElectionResult]:
        """Plan, write (fenced, conditional) and announce; partitions whose znode moved under
        us are planned again from the fresh state, as Kafka's state machine retries them."""
        from kafkalike.protocol.errors import ErrorCode
        plan = plan_election(self.ctx, partitions, election_type)
        results = dict(plan.results)
        for tp, result in plan.results.items():
            if result.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                log.info("[Controller id=%d] Skipping replica leader election (%s) for partition %s-%d by %s "
                         "since it doesn't exist.", self.broker_id, election_type.name, tp.topic, tp.partition,
                         trigger)
        changes = plan.changes
        for _ in range(3):
            if not changes:
                break
            written = await self._write_states(changes)
            for tp in written:
                if self.ctx.partition_states.get(tp) in (NEW, ONLINE, OFFLINE):
                    self.ctx.set_state(tp, ONLINE)
                results[tp] = ElectionResult(ErrorCode.NONE, None, self.ctx.leadership[tp].leader)
            if written:
                self._send_leader_and_isr_to_replicas(written)
                self._send_update_metadata(self.ctx.live_ids, written)
            again = plan_election(self.ctx, [tp for tp in changes if tp not in written], election_type)
            results.update(again.results)
            changes = again.changes
        for tp in changes:
            results[tp] = ElectionResult(ErrorCode.UNKNOWN_SERVER_ERROR,
                                         f"Could not write the new state of {tp.topic}-{tp.partition}")
        return results

    def _start_auto_rebalance(self) -> None:
        if not self.auto_leader_rebalance_enable or self._rebalance_loop is not None:
            return
        loop = task.LoopingCall(self.put, "AutoPreferredReplicaLeaderElection", self._auto_rebalance)
        loop.clock = self.reactor
        loop.start(self.leader_imbalance_check_interval, now=False)
        self._rebalance_loop = loop

    def _stop_auto_rebalance(self) -> None:
        if self._rebalance_loop is not None:
            if self._rebalance_loop.running:
                self._rebalance_loop.stop()
            self._rebalance_loop = None

    async def _auto_rebalance(self) -> None:
        """Kafka's checkAndTriggerAutoLeaderRebalance: brokers over the imbalance threshold
        get back the partitions whose preferred replica (theirs) can lead right now."""
        if not self.active:
            return
        for broker, ratio in sorted(imbalance_ratios(self.ctx).items()):
            log.debug("[Controller id=%d] Leader imbalance ratio for broker %d is %s",
                      self.broker_id, broker, ratio)
        candidates = rebalance_candidates(self.ctx, self.leader_imbalance_percentage)
        if candidates:
            log.info("[Controller id=%d] Starting replica leader election (PREFERRED) for partitions %s "
                     "triggered by AutoTriggered", self.broker_id,
                     ",".join(f"{tp.topic}-{tp.partition}" for tp in candidates))
            await self._run_election(candidates, ElectionType.PREFERRED, "AutoTriggered")

    async def _watch_preferred_replica_election(self) -> None:
        """The legacy trigger kafka-preferred-replica-election --zookeeper writes; one left
        from before this failover is run now, as Kafka's onControllerFailover does. Queued
        as its own event right after the failover, so the failover itself never waits on it."""
        if not self.active:
            return
        self._watches.append(await self.zk.watch_data(
            PreferredReplicaElectionZNode.PATH,
            lambda *_: self.put("PreferredReplicaLeaderElection", self._zk_preferred_election)))
        await self._zk_preferred_election()

    async def _zk_preferred_election(self) -> None:
        if not self.active:
            return
        try:
            partitions = await self.zk.get_preferred_replica_election()
        except ZNodeDecodeError as exc:
            log.error("[Controller id=%d] Ignoring unreadable %s: %s", self.broker_id,
                      PreferredReplicaElectionZNode.PATH, exc)
            partitions = []
        if partitions is None:
            return
        try:
            if partitions:
                await self._run_election(partitions, ElectionType.PREFERRED, "ZkTriggered")
        finally:
            await self.zk.delete_preferred_replica_election(self.ctx.epoch_zk_version)
