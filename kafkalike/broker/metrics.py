"""The broker's metrics: Kafka 2.8's JMX metrics over this broker's state, and the
Prometheus endpoint that serves them (docs/metrics.md has every name).

The counters live with the code that counts (the replica manager's `ReplicaStats`, the
listener's `RequestMetrics`, the controller's `ControllerStats`); this module registers
them and adds the gauges, each a read of in-memory state done when the endpoint is
scraped: partitions and their ISRs, logs, purgatories, the replica fetchers' lag, the
controller's context, the group coordinator's groups; and the reactor's idle time
(`kafkalike.metrics.reactor_idle`) and the process's log flush timer. So the request
path pays for a few integer additions and a scrape pays for a walk over the partitions,
on the reactor, with no I/O.

The endpoint listens on `kafkalike.metrics.port` (-1, the default: no endpoint; 0: any
free port) at `kafkalike.metrics.host`.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Iterator

from kafkalike.metrics.core import Item, Kind, MetricName, MetricsRegistry, Reading, Table
from kafkalike.metrics.reactor_idle import ReactorIdle
from kafkalike.metrics.stats import LOG_FLUSH_STATS

if TYPE_CHECKING:
    from kafkalike.broker.connection_quotas import ConnectionQuotas
    from kafkalike.broker.registry import BrokerServices
    from kafkalike.broker.replica_fetcher import ReplicaFetcherManager

log = logging.getLogger("kafkalike.metrics")

PORT_KEY = "kafkalike.metrics.port"
HOST_KEY = "kafkalike.metrics.host"

# kafka.server:type=KafkaServer,name=BrokerState values (Kafka 2.8's BrokerState).
RUNNING_AS_BROKER = 3
BROKER_SHUTTING_DOWN = 7

# The controller's partition state for a partition without a live leader.
_OFFLINE_PARTITION = "OfflinePartition"

_GROUP_STATES = (("PreparingRebalance", "NumGroupsPreparingRebalance"),
                 ("CompletingRebalance", "NumGroupsCompletingRebalance"),
                 ("Stable", "NumGroupsStable"), ("Dead", "NumGroupsDead"), ("Empty", "NumGroupsEmpty"))


_PARTITION_GAUGES = tuple(MetricName("kafka.cluster", "Partition", name) for name in (
    "UnderReplicated", "InSyncReplicasCount", "ReplicasCount", "UnderMinIsr", "AtMinIsr"))
_LOG_GAUGES = tuple(MetricName("kafka.log", "Log", name) for name in (
    "LogStartOffset", "LogEndOffset", "Size", "NumLogSegments"))


def _gauge(domain: str, type_: str, name: str, value: float, tags=()) -> Reading:
    return Reading(MetricName(domain, type_, name, tuple(tags)), Kind.GAUGE, value)


class BrokerMetrics:
    """One broker's registry, built over the services its request handlers use (and the
    replica fetchers, which no handler reaches), and its endpoint. `is_shutting_down`
    gives the BrokerState gauge."""

    def __init__(self, services: BrokerServices, reactor, is_shutting_down: Callable[[], bool],
                 fetchers: ReplicaFetcherManager | None = None, connections: ConnectionQuotas | None = None):
        self.services = services
        self.reactor = reactor
        self.is_shutting_down = is_shutting_down
        self.fetchers = fetchers
        self.registry = MetricsRegistry()
        self.port = None          # the listening port, once listening
        self.registry.add_source(self._broker_state, "KafkaServer")
        # The reactor is both Kafka's request handler pool and its network processors.
        self.idle = ReactorIdle(reactor)
        if self.idle.measured:
            self.registry.add_source(self.idle.readings, "KafkaRequestHandlerPool")
        self.registry.add_source(services.replicas.stats.readings, "BrokerTopicMetrics")
        self.registry.add_source(self._replica_manager, "ReplicaManager")
        self.registry.add_source(self._logs, "Log")
        self.registry.add_source(self._purgatories, "DelayedOperationPurgatory")
        if services.fetch_sessions is not None:
            self.registry.add_source(self._fetch_sessions, "FetchSessionCache")
        self.registry.add_source(self._replica_fetchers, "ReplicaFetcherManager")
        self.registry.add_source(self._alter_log_dirs, "ReplicaAlterLogDirsManager")
        self.registry.add_source(LOG_FLUSH_STATS.readings, "LogFlushStats")
        self.registry.add_source(services.request_metrics.readings, "RequestMetrics")
        self.registry.add_source(self._controller, "KafkaController")
        stats = getattr(services.controller, "stats", None)
        if stats is not None:
            self.registry.add_source(stats.readings, "ControllerStats")
        self.registry.add_source(self._groups, "GroupMetadataManager")
        if services.quotas is not None:
            self.registry.add_source(services.quotas.readings, "ClientQuotas")
        if connections is not None:
            self.registry.add_source(connections.readings, "ConnectionQuotas")

    # -- the endpoint -------------------------------------------------------------------

    async def listen(self) -> None:
        """Start measuring the reactor's idle time; open the endpoint if the config asks
        for one (port >= 0)."""
        self.idle.start()
        config = self.services.config
        port = config.get(PORT_KEY)
        if port < 0:
            return
        from kafkalike.metrics import http
        host = config.get(HOST_KEY) or ""
        self.port = await http.listen(self.reactor, self.registry, port, host)
        log.info("Serving metrics in Prometheus format on http://%s:%d/metrics",
                 host or "0.0.0.0", self.port.getHost().port)

    async def stop(self) -> None:
        self.idle.stop()
        if self.port is not None:
            port, self.port = self.port, None
            await port.stopListening()

    # -- gauges, read at scrape time ----------------------------------------------------

    def _broker_state(self) -> Iterator[Reading]:
        state = BROKER_SHUTTING_DOWN if self.is_shutting_down() else RUNNING_AS_BROKER
        yield _gauge("kafka.server", "KafkaServer", "BrokerState", state)

    def _replica_manager(self) -> Iterator[Item]:
        """ReplicaManager's gauges and each partition's (kafka.cluster:type=Partition),
        from one walk over the hosted partitions."""
        manager = self.services.replicas
        partitions = list(manager.partitions.values())
        leaders = under_replicated = under_min_isr = at_min_isr = 0
        min_isr_of: dict[str, int] = {}
        per_partition = []
        for part in partitions:
            is_leader = part.is_leader
            replicas, isr = len(part.replicas), len(part.isr)
            topic = part.topic
            min_isr = min_isr_of.get(topic)
            if min_isr is None:
                min_isr = min_isr_of[topic] = manager.min_insync(topic)
            # As Kafka's Partition gauges: only a leader knows its ISR; followers report 0.
            ur = is_leader and isr < replicas
            umi = is_leader and isr < min_isr
            ami = is_leader and isr == min_isr
            leaders += is_leader
            under_replicated += ur
            under_min_isr += umi
            at_min_isr += ami
            per_partition.append((topic, str(part.index), int(ur), isr if is_leader else 0, replicas, int(umi),
                                  int(ami)))
        rm = ("kafka.server", "ReplicaManager")
        yield _gauge(*rm, "LeaderCount", leaders)
        yield _gauge(*rm, "PartitionCount", len(partitions))
        yield _gauge(*rm, "UnderReplicatedPartitions", under_replicated)
        yield _gauge(*rm, "UnderMinIsrPartitionCount", under_min_isr)
        yield _gauge(*rm, "AtMinIsrPartitionCount", at_min_isr)
        # Replicas in failed log directories: kafkalike stops on a failed directory
        # rather than running without it, so a running broker has none.
        yield _gauge(*rm, "OfflineReplicaCount", 0)
        yield Table(_PARTITION_GAUGES, Kind.GAUGE, ("topic", "partition"), per_partition)

    def _logs(self) -> Iterator[Item]:
        """kafka.log:type=Log for every log on this broker, leader or follower."""
        rows = [(topic, str(partition), lg.log_start_offset, lg.log_end_offset, lg.size, len(lg.segments))
                for (topic, partition), lg in list(self.services.logs.logs.items())]
        yield Table(_LOG_GAUGES, Kind.GAUGE, ("topic", "partition"), rows)

    def _purgatories(self) -> Iterator[Reading]:
        manager = self.services.replicas
        purgatories = (("Produce", manager.produce_purgatory), ("Fetch", manager.fetch_purgatory))
        for name, read in (("PurgatorySize", "watched"), ("NumDelayedOperations", "delayed")):
            for operation, purgatory in purgatories:
                yield _gauge("kafka.server", "DelayedOperationPurgatory", name, getattr(purgatory, read)(),
                             (("delayedOperation", operation),))

    def _fetch_sessions(self) -> Iterator[Reading]:
        """Kafka's FetchSessionCache gauges and its eviction meter (KIP-227)."""
        cache = self.services.fetch_sessions.cache
        fsc = ("kafka.server", "FetchSessionCache")
        yield _gauge(*fsc, "NumIncrementalFetchSessions", len(cache))
        yield _gauge(*fsc, "NumIncrementalFetchPartitionsCached", cache.total_partitions)
        yield Reading(MetricName(*fsc, "IncrementalFetchSessionEvictionsPerSec"), Kind.METER, cache.evictions)

    def _replica_fetchers(self) -> Iterator[Reading]:
        """Kafka's ReplicaFetcherManager MaxLag: how many offsets the furthest-behind
        partition this broker follows is behind its leader's high watermark."""
        fetchers = self.fetchers
        yield _gauge("kafka.server", "ReplicaFetcherManager", "MaxLag", fetchers.max_lag() if fetchers else 0,
                     (("clientId", "Replica"),))

    def _alter_log_dirs(self) -> Iterator[Reading]:
        """Kafka's fetcher manager MaxLag for moves between log dirs: the largest number of
        offsets a future log is behind its current log (0 with no move)."""
        mover = self.services.alter_log_dirs
        yield _gauge("kafka.server", "ReplicaAlterLogDirsManager", "MaxLag", mover.max_lag() if mover else 0,
                     (("clientId", "ReplicaAlterLogDirs"),))

    def _controller(self) -> Iterator[Reading]:
        """KafkaController's gauges; 0 on every broker but the active controller, as in
        Kafka, so summing a cluster's brokers gives the cluster's value."""
        controller = self.services.controller
        active = bool(controller is not None and controller.active)
        ctx = controller.ctx if active else None
        kc = ("kafka.controller", "KafkaController")
        yield _gauge(*kc, "ActiveControllerCount", int(active))
        offline = imbalance = partitions = topics = deleting = 0
        if ctx is not None:
            # Kafka's topicsToBeDeleted holds the topics waiting for a reassignment too
            # (ineligible for deletion until it ends).
            deleting_topics = set(ctx.topics_to_delete) | set(ctx.deletions_waiting)
            states = dict(ctx.partition_states)
            leadership = dict(ctx.leadership)
            assignments = dict(ctx.assignments)
            offline = sum(1 for tp, s in states.items() if s == _OFFLINE_PARTITION and tp.topic not in deleting_topics)
            imbalance = sum(1 for tp, s in leadership.items()
                            if tp.topic not in deleting_topics and assignments.get(tp)
                            and s.leader != assignments[tp][0])
            partitions = len(assignments)
            topics = len({tp.topic for tp in assignments})
            deleting = len(deleting_topics)
        yield _gauge(*kc, "OfflinePartitionsCount", offline)
        yield _gauge(*kc, "PreferredReplicaImbalanceCount", imbalance)
        yield _gauge(*kc, "GlobalPartitionCount", partitions)
        yield _gauge(*kc, "GlobalTopicCount", topics)
        yield _gauge(*kc, "TopicsToDeleteCount", deleting)

    def _groups(self) -> Iterator[Reading]:
        """GroupMetadataManager's gauges over the groups this broker coordinates."""
        coordinator = self.services.groups
        groups = list(coordinator.manager.groups.values()) if coordinator is not None else []
        gm = ("kafka.coordinator.group", "GroupMetadataManager")
        yield _gauge(*gm, "NumGroups", len(groups))
        yield _gauge(*gm, "NumOffsets", sum(len(g.offsets) for g in groups))
        by_state: dict[str, int] = {}
        for group in groups:
            state = group.state.value
            by_state[state] = by_state.get(state, 0) + 1
        for state, name in _GROUP_STATES:
            yield _gauge(*gm, name, by_state.get(state, 0))


async def start_metrics(services: BrokerServices, reactor, is_shutting_down: Callable[[], bool],
                        fetchers: ReplicaFetcherManager | None = None,
                        connections: ConnectionQuotas | None = None) -> BrokerMetrics:
    """The server's one-line hook: build the broker's metrics and open the endpoint."""
    metrics = BrokerMetrics(services, reactor, is_shutting_down, fetchers, connections)
    await metrics.listen()
    return metrics
