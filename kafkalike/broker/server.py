"""KafkaServer: one broker's lifecycle, in the order Kafka 2.8 starts and stops it.

Start: ZooKeeper session and top-level paths, cluster id, broker id and meta.properties
checks, log recovery, the listener, registration in /brokers/ids, then the controller
election. Stop: leave ZooKeeper last but one, so the controller sees the broker go
only after its logs are flushed and marked cleanly shut down.
"""
from __future__ import annotations

import logging
import os
import time

from twisted.internet import defer, task, threads

from kafkalike.broker.admin_manager import AdminManager
from kafkalike.broker.alter_isr import AlterIsrManager
from kafkalike.broker.authorizer import acl_authorizer
from kafkalike.broker.authorizer.acl_authorizer import AclAuthorizer
from kafkalike.broker.client_quotas import ClientQuotas
from kafkalike.broker.fetch_session import FetchManager, FetchSessionCache
from kafkalike.broker.config import ConfigError, KafkaConfig, api_version_at_least
from kafkalike.broker.config_changes import ConfigChangeListener
from kafkalike.broker.config_handlers import (BrokerConfigHandler, ClientIdConfigHandler, DynamicCleanerConfig,
                                              DynamicLogConfig, IpConfigHandler, TopicConfigHandler, UserConfigHandler,
                                              cleaner_options)
from kafkalike.broker.dynamic_config import CLEANER_CONFIGS, LISTENER_CONFIGS, LOG_CONFIGS, DynamicBrokerConfig
from kafkalike.common.versions import KAFKA_COMMIT_ID, KAFKA_VERSION
from kafkalike.broker.metadata_cache import MetadataCache
from kafkalike.broker.metrics import BrokerMetrics, start_metrics
from kafkalike.broker.security.credentials import ScramCredentialCache
from kafkalike.broker.security.listener import inter_broker_client_security
from kafkalike.broker.socket_server import SocketServer
from kafkalike.common import outbound
from kafkalike.broker.registry import BrokerEpochs, BrokerServices, load_handlers
from kafkalike.broker.replica_fetcher import ReplicaFetcherManager
from kafkalike.broker.replica_alter_log_dirs import ReplicaAlterLogDirsManager
from kafkalike.broker.replication_quota import Rate, ReplicationQuota
from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.broker.topic_configs import TopicConfigs, default_log_config
from kafkalike.controller.controller import KafkaController
from kafkalike.coordinator.config import OFFSETS_TOPIC, CoordinatorConfig
from kafkalike.coordinator.coordinator import GroupCoordinator
from kafkalike.coordinator.producer_id_manager import ProducerIdManager
from kafkalike.coordinator.transaction.config import TRANSACTION_STATE_TOPIC, TransactionConfig
from kafkalike.coordinator.transaction.coordinator import TransactionCoordinator
from kafkalike.protocol.errors import ErrorCode
from kafkalike.storage.manager import PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, LogManager
from kafkalike.storage.meta_properties import MetaProperties, read_meta_properties, write_meta_properties
from kafkalike.zkdata import BrokerRegistration, KafkaZkClient
from kafkalike.zkdata.events import NewSession, SessionExpired
from kafkalike.zkdata.security import ZkSecurity, ZkSecurityError

log = logging.getLogger("kafka.server.KafkaServer")


class StartupError(Exception):
    """A reason the broker must not start; the message says which and why."""


class KafkaServer:
    """The composition root: it makes the broker's managers in start-up order, hands
    each what it needs, and gives the request handlers the result as BrokerServices."""

    def __init__(self, config: KafkaConfig, reactor=None):
        if reactor is None:
            from twisted.internet import reactor as default_reactor
            reactor = default_reactor
        self.config = config
        self.reactor = reactor
        self.broker_id = config.broker_id
        self.epochs = BrokerEpochs()
        self.cluster_id: str | None = None
        self.topic_configs = TopicConfigs(default_log_config(config))
        self.zk: KafkaZkClient | None = None
        self.log_manager: LogManager | None = None
        self.replica_manager: ReplicaManager | None = None
        self.metadata_cache: MetadataCache | None = None
        self.controller: KafkaController | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.producer_id_manager: ProducerIdManager | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.admin: AdminManager | None = None
        self.services: BrokerServices | None = None
        self.metrics: BrokerMetrics | None = None
        self.quotas: ClientQuotas | None = None
        self.socket_server: SocketServer | None = None
        self.authorizer: AclAuthorizer | None = None
        self._tasks: list[task.LoopingCall] = []
        self.dynamic_config: DynamicBrokerConfig | None = None
        self._config_changes: ConfigChangeListener | None = None
        self.shutting_down = False

    @property
    def broker_epoch(self) -> int:
        return self.epochs.broker_epoch

    @staticmethod
    def time_ms() -> int:
        return int(time.time() * 1000)

    # -- startup ------------------------------------------------------------------------

    async def startup(self) -> None:
        cfg = self.config
        self._start_time_ms = self.time_ms()
        # AbstractConfig.logAll: Kafka logs every value before anything else.
        logging.getLogger("kafka.server.KafkaConfig").info(cfg.values_banner().rstrip("\n"))
        log.info("starting")
        # Keystores, truststores and SASL settings are read before anything else, so a bad
        # one stops start-up naming its key (docs/security.md).
        try:
            self.socket_server = SocketServer(cfg, self.reactor)
            outbound.set_default_security(inter_broker_client_security(cfg))
            self.authorizer = acl_authorizer.from_config(cfg)
        except ConfigError as exc:
            raise StartupError(f"org.apache.kafka.common.config.ConfigException: {exc}") from None
        for warning in cfg.unknown_key_warnings():
            log.warning(warning)
        log.info("Connecting to zookeeper on %s", cfg.zookeeper_connect)
        try:   # KafkaServer.initZkClient: the SASL login from KAFKA_OPTS' JAAS file, zookeeper.set.acl
            zk_security = ZkSecurity.from_system(cfg.get("zookeeper.set.acl"))
        except ZkSecurityError as exc:
            raise StartupError(str(exc)) from None
        self.zk = await KafkaZkClient.connect(cfg.zookeeper_connect,
                                              session_timeout_ms=cfg.zk_session_timeout_ms,
                                              connection_timeout_ms=cfg.zk_connection_timeout_ms,
                                              reactor=self.reactor, security=zk_security)
        await self.zk.create_top_level_paths()
        self.cluster_id = await self.zk.get_or_create_cluster_id()
        log.info("Cluster ID = %s", self.cluster_id)
        self.broker_id = await self._resolve_broker_id()
        await self._initialize_dynamic_config()
        self.metadata_cache = MetadataCache(self.broker_id)
        reactor = self.reactor
        # Recovery runs in a thread; afterwards fsyncs and delayed file deletions go to
        # threads too, so the reactor never waits on the disk.
        loading_started = time.monotonic()
        self.log_manager = await threads.deferToThread(
            LogManager, cfg.log_dirs, self.topic_configs.defaults, topic_configs=self.topic_configs.effective,
            flush_executor=reactor.callInThread,
            scheduler=lambda ms, fn: reactor.callLater(ms / 1000.0, reactor.callInThread, fn),
            enable_cleaner=cfg.get("log.cleaner.enable"),
            max_producer_id_expiration_ms=cfg.get("transactional.id.expiration.ms"),
            cleaner_options=cleaner_options(cfg))
        logging.getLogger("kafka.log.LogManager").info(
            "Logs loading complete in %d ms.", (time.monotonic() - loading_started) * 1000)
        if self.log_manager.cleaner is not None:
            self.log_manager.cleaner.start()   # its own thread: compaction never blocks the reactor
        # The fetchers and the AlterIsr sender are made first and handed to the replica
        # manager; they reach it back (attach, on_isr_updated) only once running.
        self.fetchers = ReplicaFetcherManager(self.broker_id, cfg, self.reactor, self._replication_quota("follower"))
        self.alter_isr = AlterIsrManager(
            self.broker_id, self.reactor, self.metadata_cache, cfg, broker_epoch=lambda: self.broker_epoch,
            is_shutting_down=lambda: self.shutting_down,
            on_isr_updated=lambda part, old_isr_size: self.replica_manager.on_isr_updated(part, old_isr_size),
            on_isr_failed=lambda part: self.replica_manager.stats.isr_update_failed())
        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, self.reactor, self.topic_configs.effective, self.time_ms,
            topic_configs=self.topic_configs, zk=self.zk, fetchers=self.fetchers, alter_isr=self.alter_isr,
            metadata=self.metadata_cache, inter_broker_listener=cfg.inter_broker_listener_name,
            on_leadership_change=self._on_leadership_change, leader_quota=self._replication_quota("leader"))
        self.replica_manager.replica_lag_ms = cfg.get("replica.lag.time.max.ms")
        self.fetchers.attach(self.replica_manager)
        # Moves between this broker's log dirs (KIP-113), throttled by their own quota.
        self.alter_log_dirs = ReplicaAlterLogDirsManager(
            self.broker_id, self.replica_manager, self.log_manager, self.reactor,
            ReplicationQuota(self.broker_id, lambda: self.dynamic_config.replication_throttled_rate(
                "replica.alter.log.dirs.io.max.bytes.per.second"), lambda topic: ("*",),
                Rate(cfg.get("alter.log.dirs.replication.quota.window.num"),
                     cfg.get("alter.log.dirs.replication.quota.window.size.seconds"))),
            chunk_bytes=cfg.get("replica.fetch.max.bytes"))
        self.group_coordinator = GroupCoordinator(self.broker_id, CoordinatorConfig.from_kafka_config(cfg),
                                                  self.replica_manager, self.reactor)
        self.group_coordinator.startup()
        self.producer_id_manager = ProducerIdManager(self.broker_id, self.zk)
        self.transaction_coordinator = TransactionCoordinator(
            self.broker_id, TransactionConfig.from_kafka_config(cfg), self.producer_id_manager, self.replica_manager,
            self.metadata_cache, cfg.inter_broker_listener_name, self.reactor)
        self.transaction_coordinator.startup()
        self._topic_config_handler = TopicConfigHandler(self.zk, self.topic_configs, self.replica_manager,
                                                        self.log_manager, lambda: self.controller)
        self.admin = AdminManager(self.zk, self.metadata_cache, cfg, self.topic_configs, self.reactor,
                                  dynamic_config=self.dynamic_config, on_config_written=self._on_config_written)
        # Made now, so the handlers' services hold it (inactive until elected); started,
        # and known as the server's, only once the broker is registered.
        controller = KafkaController(
            self.broker_id, self.zk, self.reactor,
            inter_broker_listener=cfg.inter_broker_listener_name,
            delete_topic_enable=cfg.get("delete.topic.enable"),
            unclean_election=lambda t: self.topic_configs.effective(t).unclean_leader_election_enable,
            auto_leader_rebalance_enable=cfg.get("auto.leader.rebalance.enable"),
            leader_imbalance_check_interval_seconds=cfg.get("leader.imbalance.check.interval.seconds"),
            leader_imbalance_per_broker_percentage=cfg.get("leader.imbalance.per.broker.percentage"),
            uses_topic_ids=api_version_at_least(cfg.inter_broker_protocol_version, "2.8-IV0"),
            feature_versioning=api_version_at_least(cfg.inter_broker_protocol_version, "2.7-IV0"))
        self.quotas = ClientQuotas.from_config(cfg)
        await self.quotas.load(self.zk)       # client quotas in force before the listeners open
        ip_quotas = IpConfigHandler(self.zk, self.socket_server.quotas)
        await ip_quotas.load()
        if self.authorizer is not None:
            await self.authorizer.start(self.zk)     # the ACL cache, before any request is read
        self.services = BrokerServices(
            broker_id=self.broker_id, cluster_id=self.cluster_id, config=cfg, zk=self.zk,
            metadata=self.metadata_cache, replicas=self.replica_manager, logs=self.log_manager,
            topic_configs=self.topic_configs, groups=self.group_coordinator, admin=self.admin,
            controller=controller, producer_ids=self.producer_id_manager, epochs=self.epochs,
            transactions=self.transaction_coordinator, quotas=self.quotas, authorizer=self.authorizer,
            alter_log_dirs=self.alter_log_dirs,
            fetch_sessions=FetchManager(FetchSessionCache(cfg.get("max.incremental.fetch.session.cache.slots")),
                                        self.time_ms))
        load_handlers()
        self.scram_credentials = ScramCredentialCache(self.zk)
        await self.scram_credentials.load_all()
        await self.socket_server.startup(self.services, self.scram_credentials.fetch)
        # The Prometheus endpoint, if kafkalike.metrics.port is set.
        self.metrics = await start_metrics(self.services, self.reactor, lambda: self.shutting_down, self.fetchers,
                                           self.socket_server.quotas)
        self.zk.add_session_listener(self._on_session_event)
        await self._register()
        self._checkpoint_broker_metadata()
        self._config_changes = ConfigChangeListener(self.zk, {
            "topics": self._topic_config_handler.process,
            "brokers": self._broker_config_handler.process,
            "users": UserConfigHandler(self.zk, self.scram_credentials, self.quotas).process,
            "clients": ClientIdConfigHandler(self.zk, self.quotas).process,
            "ips": ip_quotas.process})
        await self._config_changes.start()
        self.controller = controller
        self.controller.startup()
        self._schedule()
        app_info = logging.getLogger("org.apache.kafka.common.utils.AppInfoParser")
        app_info.info("Kafka version: %s", KAFKA_VERSION)
        app_info.info("Kafka commitId: %s", KAFKA_COMMIT_ID)
        app_info.info("Kafka startTimeMs: %d", self._start_time_ms)
        log.info("[KafkaServer id=%d] started", self.broker_id)

    async def _resolve_broker_id(self) -> int:
        stored = {}
        for d in self.config.log_dirs:
            meta = read_meta_properties(d)
            if meta is not None:
                stored[d] = meta
        ids = {m.broker_id for m in stored.values() if m.broker_id is not None}
        clusters = {m.cluster_id for m in stored.values() if m.cluster_id}
        for cid in clusters:
            if cid != self.cluster_id:
                raise StartupError(
                    f"The Cluster ID {self.cluster_id} doesn't match stored clusterId Some({cid}) in "
                    "meta.properties. The broker is trying to join the wrong cluster. Configured "
                    "zookeeper.connect may be wrong.")
        if len(ids) > 1:
            raise StartupError(f"Failed to match broker.id across log.dirs. This could happen if "
                               f"multiple brokers shared a log directory (log.dirs) or partial data "
                               f"was manually copied from another broker. Found {sorted(ids)}")
        configured = self.config.broker_id
        if ids:
            found = ids.pop()
            if configured >= 0 and configured != found:
                raise StartupError(
                    f"Configured broker.id {configured} doesn't match stored broker.id Some({found}) "
                    "in meta.properties. If you moved your data, make sure your configured broker.id "
                    "matches. If you intend to create a new broker, you should remove all data in "
                    "your data directories (log.dirs).")
            broker_id = found
        elif configured >= 0:
            broker_id = configured
        elif self.config.get("broker.id.generation.enable"):
            broker_id = await self.zk.generate_broker_id(self.config.get("reserved.broker.max.id"))
        else:
            raise StartupError("broker.id is -1 and broker.id.generation.enable is false")
        # meta.properties is written only once the broker is registered (as Kafka does): a
        # broker.id clash must not leave a new log dir claimed by the wrong id.
        self._unclaimed_log_dirs = [d for d in self.config.log_dirs if d not in stored]
        return broker_id

    def _checkpoint_broker_metadata(self) -> None:
        for d in self._unclaimed_log_dirs:
            os.makedirs(d, exist_ok=True)
            write_meta_properties(d, MetaProperties(broker_id=self.broker_id, cluster_id=self.cluster_id))
        self._unclaimed_log_dirs = []

    def _listeners_changed(self, changed: set[str]) -> None:
        d = defer.ensureDeferred(self._reconfigure_listeners())
        d.addErrback(lambda f: log.error("Failed to apply the new listeners: %s", f.getTraceback()))

    async def _reconfigure_listeners(self) -> None:
        """The new listeners, then the registration rewritten in ZooKeeper, so the
        controller tells every broker the new addresses."""
        await self.socket_server.reconfigure()
        await self.zk.update_broker_info(self._registration())

    def _registration(self) -> BrokerRegistration:
        return BrokerRegistration(self.broker_id, self.socket_server.endpoints(), rack=self.config.rack)

    async def _register(self) -> None:
        reg = self._registration()
        self.epochs.broker_epoch = await self.zk.register_broker(reg)
        log.info("Registered broker %d at path /brokers/ids/%d with addresses: %s, czxid (broker epoch): %d",
                 self.broker_id, self.broker_id, ",".join(e.connection_string for e in reg.endpoints),
                 self.broker_epoch)

    def _on_session_event(self, event) -> None:
        if self.shutting_down:
            return
        if isinstance(event, SessionExpired) and self.controller is not None:
            self.controller.on_session_expired()
        elif isinstance(event, NewSession):
            log.info("ZooKeeper session expired; registering broker %d again", self.broker_id)
            d = defer.ensureDeferred(self._register())
            if self.controller is not None:
                d.addCallback(lambda _: self.controller.on_reregistered())
            d.addErrback(lambda f: log.error("Re-registration failed: %s", f.getErrorMessage()))
            d.addCallback(lambda _: defer.ensureDeferred(self._delete_stray_partitions()))
            d.addErrback(lambda f: log.error("Looking for stray partitions failed: %s", f.getErrorMessage()))

    async def _delete_stray_partitions(self) -> None:
        """Copies of topics deleted while this broker was cut off from ZooKeeper. Kafka's
        controller holds such a deletion until the broker returns; ours deletes the znodes
        at once (controller.py), so a broker that stayed up through the outage would keep
        serving, fetching and shrinking the ISR of partitions nobody knows. It deletes them
        as the StopReplica it missed would have. The partitions are taken before ZooKeeper is
        read: one made by a LeaderAndIsr that comes meanwhile is for a topic that exists."""
        hosted = list(self.replica_manager.partitions)
        existing = set(await self.zk.get_all_topics())
        strays = sorted(tp for tp in hosted if tp[0] not in existing and tp in self.replica_manager.partitions)
        if strays:
            log.info("Deleting %d partitions of topics deleted while this broker was away: %s", len(strays),
                     ", ".join(f"{t}-{p}" for t, p in strays))
            self.replica_manager.stop_replicas([(t, p, True) for t, p in strays])

    def _schedule(self) -> None:
        cfg = self.config

        def every(ms: int, fn) -> None:
            if 0 < ms < 2**62:
                loop = task.LoopingCall(fn)
                loop.clock = self.reactor
                loop.start(ms / 1000.0, now=False).addErrback(
                    lambda f: log.error("Scheduled task failed: %s", f.getTraceback()))
                self._tasks.append(loop)

        # Checkpoints: captured here on the reactor, written and fsynced on a thread; a
        # LoopingCall waits for the returned Deferred, so writes never overlap.
        logs = self.log_manager
        every(cfg.get("replica.high.watermark.checkpoint.interval.ms"),
              lambda: threads.deferToThread(logs.high_watermark_checkpoint_writer()))
        every(cfg.get("log.flush.offset.checkpoint.interval.ms"),
              lambda: threads.deferToThread(logs.recovery_checkpoint_writer()))
        every(cfg.get("log.retention.check.interval.ms"), self.log_manager.cleanup_logs)
        self.alter_log_dirs.start()           # resumes moves found at start-up once their partitions are made
        every(60_000, self.quotas.expire)     # quota sensors of clients idle for an hour
        every(cfg.get("replica.lag.time.max.ms") // 2, self.replica_manager.shrink_isrs)
        every(cfg.get("log.flush.scheduler.interval.ms"),
              lambda: threads.deferToThread(self.log_manager.flush_dirty_logs))
        # Idle producer ids (transactional.id.expiration.ms): a pass over every log's
        # producers, each under its log's lock, on a thread so requests never wait for it.
        every(PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
              lambda: threads.deferToThread(self.log_manager.remove_expired_producers))

    # -- dynamic configs: wiring only (the handlers are in config_handlers.py) -------------

    def _replication_quota(self, side: str) -> ReplicationQuota:
        """The leader or follower replication throttle: its rate from this broker's dynamic
        config, its replicas from each topic's config, both read at every check."""
        cfg = self.config
        rate_name = f"{side}.replication.throttled.rate"
        replicas_field = f"{side}_replication_throttled_replicas"
        return ReplicationQuota(
            self.broker_id, lambda: self.dynamic_config.replication_throttled_rate(rate_name),
            lambda topic: getattr(self.topic_configs.effective(topic), replicas_field),
            Rate(cfg.get("replication.quota.window.num"), cfg.get("replication.quota.window.size.seconds")))

    async def _initialize_dynamic_config(self) -> None:
        """Dynamic broker configs from ZooKeeper before anything reads the config (Kafka's
        config.dynamicConfig.initialize): a restarted broker starts with them."""
        cfg = self.config
        self.dynamic_config = DynamicBrokerConfig(cfg, self.broker_id)
        self.dynamic_config.initialize(await self.zk.get_broker_configs(None),
                                       await self.zk.get_broker_configs(self.broker_id))
        self.topic_configs.set_defaults(default_log_config(cfg))
        controller = lambda: self.controller   # noqa: E731 (known only once registered)
        logs = lambda: self.log_manager         # noqa: E731 (made after the dynamic config)
        self.dynamic_config.add_reconfigurable(
            LOG_CONFIGS, DynamicLogConfig(cfg, self.topic_configs, logs, controller).reconfigure)
        self.dynamic_config.add_reconfigurable(CLEANER_CONFIGS - {"message.max.bytes", "log.cleaner.io.buffer.size"},
                                               DynamicCleanerConfig(cfg, logs).reconfigure)
        self._broker_config_handler = BrokerConfigHandler(self.zk, self.broker_id, self.dynamic_config)
        self.dynamic_config.add_reconfigurable(LISTENER_CONFIGS, self._listeners_changed)
        # Connection caps and rates are read as connections arrive; a change lets waiting ones in.
        self.dynamic_config.add_reconfigurable(None, self.socket_server.quotas.reconfigured)
        # Listeners' keystores and truststores (security/store_updates.py).
        self.dynamic_config.add_validator(self.socket_server.validate_stores)
        self.dynamic_config.add_reconfigurable(None, self.socket_server.reload_stores)
        self.dynamic_config.add_file_reloader(self.socket_server.reload_changed_files)

    async def _on_config_written(self, entity_type: str, name: str) -> None:
        """The admin manager wrote a config here: apply it at once rather than on the
        notification (which then finds nothing new)."""
        if entity_type == "brokers":
            await self._broker_config_handler.process(name)
        elif entity_type == "topics":
            await self._topic_config_handler.process(name)

    # -- wiring -------------------------------------------------------------------------

    def _on_leadership_change(self, topic: str, partition: int, leader: bool, leader_epoch: int | None) -> None:
        """Kafka's KafkaApis.onLeadershipChange: the group coordinator follows leadership
        of __consumer_offsets (loads a partition's groups as leader, drops them otherwise), the
        transaction coordinator that of __transaction_state."""
        if topic == TRANSACTION_STATE_TOPIC:
            if leader:
                self.transaction_coordinator.on_elected(partition, leader_epoch)
            else:
                self.transaction_coordinator.on_resigned(partition, leader_epoch)
            return
        if topic != OFFSETS_TOPIC:
            return
        if leader:
            self.group_coordinator.on_elected(partition, leader_epoch)
        else:
            self.group_coordinator.on_resigned(partition, leader_epoch)

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move our leaderships away first (Kafka's controlled
        shutdown), so clients never see this broker's partitions offline."""
        from kafkalike.protocol.messages.controlled_shutdown import ControlledShutdownRequest
        retries = self.config.get("controlled.shutdown.max.retries")
        backoff = self.config.get("controlled.shutdown.retry.backoff.ms") / 1000.0
        for attempt in range(1, retries + 1):
            info = self.metadata_cache.brokers.get(self.metadata_cache.controller_id)
            ep = info.endpoint(self.config.inter_broker_listener_name) if info else None
            try:
                if ep is None:
                    raise ConnectionError("no controller known")
                conn = await outbound.connect(ep.host, ep.port, f"broker-{self.broker_id}-shutdown",
                                              self.reactor, timeout=5)
                try:
                    resp = await conn.request(ControlledShutdownRequest(
                        broker_id=self.broker_id, broker_epoch=self.broker_epoch), 3)
                finally:
                    conn.close()
                if resp.error_code == 0 and not resp.remaining_partitions:
                    log.info("Controlled shutdown request returned successfully after %d attempt(s)", attempt)
                    return
                log.info("Remaining partitions to move: %s (error %s)",
                         ",".join(f"{p.topic_name}-{p.partition_index}" for p in resp.remaining_partitions),
                         ErrorCode(resp.error_code).name)
            except Exception as exc:
                log.warning("Error during controlled shutdown, possibly because leader movement took "
                            "longer than the configured controller.socket.timeout.ms: %s", exc)
            if attempt < retries:
                await task.deferLater(self.reactor, backoff, lambda: None)
        log.warning("Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed")

    # -- shutdown -----------------------------------------------------------------------

    async def shutdown(self) -> None:
        if self.shutting_down:
            return
        self.shutting_down = True
        log.info("[KafkaServer id=%d] shutting down", self.broker_id)
        if self.controller is not None and self.config.get("controlled.shutdown.enable"):
            await self._controlled_shutdown()
        if self.replica_manager is not None:
            # Having handed its partitions off, the broker follows nobody: fetching on (a new
            # controller's LeaderAndIsr may tell it to) it would be taken back into ISRs it is
            # about to leave, holding acks=all writes until replica.lag.time.max.ms.
            self.fetchers.shutdown()
        for loop in self._tasks:
            if loop.running:
                loop.stop()
        if self.socket_server is not None:
            await self.socket_server.stop_accepting()
        if self.metrics is not None:
            await self.metrics.stop()
        if self.socket_server is not None:
            self.socket_server.close_connections()
        if self._config_changes is not None:
            self._config_changes.close()
        if self.authorizer is not None:
            self.authorizer.close()
        if self.controller is not None:
            self.controller.shutdown()
        if self.transaction_coordinator is not None:
            self.transaction_coordinator.shutdown()
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()
        if self.replica_manager is not None:
            self.alter_log_dirs.shutdown()
            self.fetchers.shutdown()
            self.alter_isr.shutdown()
            self.replica_manager.shutdown()
        if self.log_manager is not None:
            await threads.deferToThread(self.log_manager.shutdown)
        if self.zk is not None:
            await self.zk.close()
        log.info("[KafkaServer id=%d] shut down completed", self.broker_id)


