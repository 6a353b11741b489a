"""Administration through ZooKeeper (Kafka's ZkAdminManager): topics, topic and broker
configs, client quotas and SCRAM credentials.

A broker never creates partitions itself: it validates the request, writes the topic's
assignment and configs to ZooKeeper, and the controller reacts to the new znodes. The
answer waits (up to the request's timeout) until this broker's metadata cache shows
the result, as Kafka's DelayedCreatePartitions and DelayedDeleteTopics do, so a client
that creates a topic can use it as soon as the call returns.

Topic overrides (/config/topics/<t>) and dynamic broker configs (/config/brokers/<id>,
/config/brokers/<default>, checked by dynamic_config.py) are written whole with a change
notification, as AdminZkClient does; a value Kafka's ConfigDef refuses is answered
INVALID_REQUEST "Invalid config value for resource ConfigResource(type=..., name='...'):
...", as ZkAdminManager answers it; the checks of a config request, the incremental
operations and the described entries are in admin_configs.py. Quotas (admin_quotas.py)
and SCRAM credentials (admin_scram.py) are dynamic configs under /config too; the
manager hands those modules its ZooKeeper client. Every call takes plain values and
answers with plain results, which the handlers put on the wire.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable, Mapping, Sequence

from twisted.internet import defer

from kafkalike.broker import admin_configs, admin_quotas, admin_scram, broker_loggers, topic_configs
from kafkalike.broker.admin_configs import ConfigDescription, ConfigResult, IncrementalOp
from kafkalike.broker.admin_errors import AdminError, invalid_config_value
from kafkalike.broker.admin_quotas import (QuotaAlteration, QuotaAlterationResult, QuotaDescription,
                                           QuotaFilterComponent)
from kafkalike.broker.admin_scram import (ScramAlterationResult, ScramDeletion, ScramUpsertion,
                                          UserScramCredentials)
from kafkalike.broker.dynamic_config import (DEFAULT_ENTITY, DynamicBrokerConfig, describe_broker_entries,
                                             describe_default_entries)
from kafkalike.common.resources import ResourceType
from kafkalike.common.assignment import InvalidPartitions, InvalidReplicationFactor, assign_replicas
from kafkalike.common.topics import INTERNAL_TOPICS, InvalidTopicName, collides, validate
from kafkalike.protocol.errors import ErrorCode
from kafkalike.zkdata.errors import TopicAlreadyMarkedForDeletionError, TopicExistsError
from kafkalike.zkdata.ids import new_topic_id
from kafkalike.zkdata.topic_znodes import PartitionAssignment
from kafkalike.zkdata.znodes import ConfigType

if TYPE_CHECKING:
    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.controller_mutation_quota import MutationQuota
    from kafkalike.broker.metadata_cache import MetadataCache
    from kafkalike.broker.topic_configs import TopicConfigs
    from kafkalike.zkdata import KafkaZkClient

log = logging.getLogger("kafka.server.ZkAdminManager")


@dataclass
class TopicResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    topic_id: object = None


def _throttled() -> TopicResult:
    """A topic the controller mutation quota refused (ZkAdminManager's ThrottlingQuotaExceededException)."""
    return TopicResult(ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")


class _Waiter:
    def __init__(self, check, deferred: defer.Deferred):
        self.check = check
        self.deferred = deferred


class AdminManager:
    """Kafka's ZkAdminManager: what admin requests change, validated and written to
    ZooKeeper, answered with plain results the handlers put on the wire."""

    def __init__(self, zk: KafkaZkClient, cache: MetadataCache, config: KafkaConfig,
                 topic_configs: TopicConfigs, reactor, *, dynamic_config: DynamicBrokerConfig | None = None,
                 on_config_written: Callable[[str, str], Awaitable[None]] | None = None) -> None:
        self.zk = zk
        self.cache = cache
        self.config = config
        self.topic_configs = topic_configs
        self.reactor = reactor
        self._dynamic = dynamic_config
        self._on_config_written = on_config_written
        self._waiters: list[_Waiter] = []

    @property
    def dynamic(self) -> DynamicBrokerConfig:
        """The broker's dynamic config levels (the server's; made on first use when none was given)."""
        if self._dynamic is None:
            self._dynamic = DynamicBrokerConfig(self.config)
        return self._dynamic

    # -- waiting for the controller's work to reach us ----------------------------------

    def on_metadata_update(self) -> None:
        still = []
        for w in self._waiters:
            if w.check():
                if not w.deferred.called:
                    w.deferred.callback(True)
            elif not w.deferred.called:
                still.append(w)
        self._waiters = still

    def _wait_for(self, check, timeout_ms: int) -> defer.Deferred:
        d = defer.Deferred()
        if check():
            d.callback(True)
            return d
        self._waiters.append(_Waiter(check, d))
        timer = self.reactor.callLater(max(timeout_ms, 0) / 1000.0,
                                      lambda: d.called or d.callback(False))
        d.addBoth(lambda r: (timer.active() and timer.cancel(), r)[1])
        return d

    def _topic_ready(self, topic: str, partitions: int):
        def check() -> bool:
            parts = self.cache.partitions.get(topic, {})
            return len(parts) >= partitions and all(p.leader >= 0 for p in parts.values())
        return check

    # -- create -------------------------------------------------------------------------

    def _plan(self, name: str, num_partitions: int, replication_factor: int,
              assignments: dict[int, list[int]], configs: dict[str, str | None]):
        config = self.config
        validate(name)
        for existing in self.cache.topics():
            if collides(name, existing):
                raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"Topic '{name}' collides with existing topic: {existing}")
        if self.cache.contains(name):
            raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise AdminError(ErrorCode.INVALID_REQUEST,
                                 "Both numPartitions or replicationFactor and replicasAssignments were set. "
                                 "Both cannot be used at the same time.")
            live = set(self.cache.alive_broker_ids())
            for p, brokers in assignments.items():
                if len(set(brokers)) != len(brokers) or not brokers:
                    raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"Duplicate or empty replica assignment for partition {p}")
                if set(brokers) - live:
                    raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"Unknown broker(s) in replica assignment: {sorted(set(brokers) - live)}.")
            if sorted(assignments) != list(range(len(assignments))):
                raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "Partitions should be a consecutive 0-based integer sequence")
            plan = {p: list(b) for p, b in assignments.items()}
        else:
            n = config.get("num.partitions") if num_partitions == -1 else num_partitions
            rf = config.get("default.replication.factor") if replication_factor == -1 else replication_factor
            try:
                plan = assign_replicas(self.cache.alive_broker_ids(), n, rf, self._racks())
            except InvalidReplicationFactor as exc:
                raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None
            except InvalidPartitions as exc:
                raise AdminError(ErrorCode.INVALID_PARTITIONS, str(exc)) from None
        clean = {k: v for k, v in configs.items() if v is not None}
        try:
            self.topic_configs.parse(clean)
        except ValueError as exc:
            raise AdminError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        return plan, clean

    def _racks(self) -> dict[int, str] | None:
        racks = {b: i.rack for b, i in self.cache.brokers.items() if i.rack}
        return racks if racks and len(racks) == len(self.cache.brokers) else None

    async def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                           assignments: dict[int, list[int]] | None = None,
                           configs: dict[str, str | None] | None = None, *,
                           validate_only: bool = False, timeout_ms: int = 30000,
                           quota: MutationQuota | None = None) -> TopicResult:
        try:
            validate(name)
            plan, clean = self._plan(name, num_partitions, replication_factor, assignments or {}, configs or {})
        except InvalidTopicName as exc:
            return TopicResult(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc))
        except AdminError as exc:
            return TopicResult(exc.code, exc.message)
        result = TopicResult(num_partitions=len(plan), replication_factor=len(plan[0]))
        if validate_only:
            return result
        if quota is not None and not quota.admit(len(plan)):
            return _throttled()
        topic_id = new_topic_id()
        result.topic_id = topic_id
        try:
            await self.zk.create_topic_assignment(name, PartitionAssignment.of(plan, topic_id), clean)
        except TopicExistsError:   # created meanwhile by someone else
            return TopicResult(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        log.info("Creating topic %s with configuration %s and initial partition assignment %s",
                 name, clean, plan)
        if not await self._wait_for(self._topic_ready(name, len(plan)), timeout_ms):
            return TopicResult(ErrorCode.REQUEST_TIMED_OUT,
                               "Operation timed out; the topic is still being created.")
        return result

    def auto_create_topic(self, name: str) -> None:
        """Fire-and-forget creation for Metadata requests (auto.create.topics.enable)."""
        d = defer.ensureDeferred(self.create_topic(name, timeout_ms=0))
        d.addErrback(lambda f: log.warning("Auto-creation of %s failed: %s", name, f.getErrorMessage()))

    # -- delete -------------------------------------------------------------------------

    async def delete_topic(self, name: str, timeout_ms: int, quota: MutationQuota | None = None) -> TopicResult:
        if not self.cache.contains(name):
            return TopicResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "This server does not host this topic-partition.")
        if not self.config.get("delete.topic.enable"):
            return TopicResult(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
        if name in INTERNAL_TOPICS:
            return TopicResult(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete internal topic {name}")
        if quota is not None and not quota.admit(len(self.cache.partitions.get(name, {}))):
            return _throttled()
        try:
            await self.zk.mark_topic_for_deletion(name)
        except TopicAlreadyMarkedForDeletionError:
            pass   # an earlier request started it; wait for the same outcome
        if not await self._wait_for(lambda: not self.cache.contains(name), timeout_ms):
            return TopicResult(ErrorCode.REQUEST_TIMED_OUT, "Operation timed out.")
        return TopicResult()

    # -- partitions ---------------------------------------------------------------------

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                                validate_only: bool, timeout_ms: int,
                                quota: MutationQuota | None = None) -> TopicResult:
        current = self.cache.partitions.get(name)
        if current is None:
            return TopicResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        existing = len(current)
        if count < existing:
            return TopicResult(ErrorCode.INVALID_PARTITIONS,
                               f"Topic currently has {existing} partitions, which is higher than the "
                               f"requested {count}.")
        if count == existing:
            return TopicResult(ErrorCode.INVALID_PARTITIONS, f"Topic already has {existing} partitions.")
        rf = len(current[0].replicas)
        if assignments is not None:
            if len(assignments) != count - existing:
                return TopicResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"Increasing the number of partitions by {count - existing} but "
                                   f"{len(assignments)} assignments provided.")
            live = set(self.cache.alive_broker_ids())
            for a in assignments:
                if set(a) - live or len(set(a)) != len(a):
                    return TopicResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                       f"Invalid replica assignment {a}")
            added = {existing + i: list(a) for i, a in enumerate(assignments)}
        else:
            try:
                added = assign_replicas(self.cache.alive_broker_ids(), count - existing, rf,
                                        self._racks(), start_partition=existing)
            except (InvalidReplicationFactor, InvalidPartitions) as exc:
                return TopicResult(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc))
        if validate_only:
            return TopicResult()
        if quota is not None and not quota.admit(len(added)):
            return _throttled()
        full = {p: list(info.replicas) for p, info in current.items()}
        full.update(added)
        await self.zk.set_topic_assignment(name, PartitionAssignment.of(full, self.cache.topic_ids.get(name)))
        if not await self._wait_for(self._topic_ready(name, count), timeout_ms):
            return TopicResult(ErrorCode.REQUEST_TIMED_OUT, "Operation timed out.")
        return TopicResult()

    # -- topic configs ------------------------------------------------------------------

    async def topic_overrides(self, name: str) -> dict[str, str]:
        """A topic's overrides as ZooKeeper has them, so a describe right after an alter
        sees it even before the change notification reaches this broker (as Kafka)."""
        self._require_topic(name)
        return await self.zk.get_entity_configs(ConfigType.TOPIC, name)

    async def alter_topic_config(self, name: str, compute: Callable[[dict[str, str]], dict[str, str | None]],
                                 validate_only: bool) -> None:
        """Replace a topic's overrides with compute(current), validated as the topic's
        config. As Kafka 2.8: an unknown key is INVALID_CONFIG ("Unknown topic config
        name: x"), a bad value INVALID_REQUEST naming the resource and the key."""
        if not self.cache.contains(name):
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        current = await self.topic_overrides(name)
        try:
            new = compute(current)
            if any(v is None for v in new.values()):
                raise ValueError("Null value not supported for topic configs")
            self.topic_configs.parse(new)
        except AdminError:
            raise
        except ValueError as exc:
            if str(exc).startswith("Unknown topic config name"):
                raise AdminError(ErrorCode.INVALID_CONFIG, str(exc)) from None
            raise invalid_config_value("TOPIC", name, exc) from None
        if not validate_only:
            log.info("Updating topic %s with new configuration : %s", name, ",".join(f"{k} -> {v}"
                                                                                   for k, v in new.items()))
            await self.zk.change_topic_config(name, new)
            await self._written("topics", name)

    # -- dynamic broker configs -----------------------------------------------------------

    def broker_level(self, name: str) -> int | None:
        """ZkAdminManager.getBrokerId: None for "" (the cluster default), else this broker's
        id; another broker's id or a non-number is refused."""
        if not name:
            return None
        try:
            broker_id = int(name)
        except ValueError:
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
        if broker_id != self.dynamic.broker_id:
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {self.dynamic.broker_id}, but received {name}")
        return broker_id

    async def broker_dynamic_configs(self, name: str) -> dict[str, str]:
        """One level's dynamic configs as ZooKeeper has them, read as a broker reads them
        (fromPersistentProps: passwords decoded, what a broker ignores left out)."""
        broker_id = self.broker_level(name)
        persistent = await self.zk.get_broker_configs(broker_id)
        return self.dynamic.from_persistent(persistent, broker_id is not None)

    async def alter_broker_config(self, name: str, compute: Callable[[dict[str, str]], Mapping[str, str | None]],
                                  validate_only: bool, *, incremental: bool) -> None:
        """Replace one level's dynamic configs with compute(current) (current is {} for the
        legacy AlterConfigs, which replaces the whole set), checked by DynamicBrokerConfig;
        written with a change notification unless validate_only."""
        current = await self.broker_dynamic_configs(name) if incremental else {}
        broker_id = self.broker_level(name)
        per_broker = broker_id is not None
        try:
            new = dict(compute(current))
            self.dynamic.validate(new, per_broker)
            persistent = self.dynamic.to_persistent(new, per_broker)
        except AdminError:
            raise
        except ValueError as exc:
            raise invalid_config_value("BROKER", name, exc) from None
        if validate_only:
            return
        if per_broker:
            try:
                self.dynamic.reload_updated_files(new)     # store files replaced at the same path
            except ValueError as exc:
                raise invalid_config_value("BROKER", name, exc) from None
        loggable = ",".join(f"{k} -> {'[hidden]' if self.dynamic.is_sensitive(k) else v}" for k, v in new.items())
        if per_broker:
            log.info("Updating broker %d with new configuration : %s", broker_id, loggable)
        else:
            log.info("Updating brokers with new configuration : %s", loggable)
        await self.zk.change_broker_config(broker_id, persistent)
        await self._written("brokers", name or DEFAULT_ENTITY)

    async def _written(self, entity_type: str, name: str) -> None:
        if self._on_config_written is not None:
            try:
                await self._on_config_written(entity_type, name)
            except Exception:   # the notification will carry it anyway
                log.exception("Applying the new config of %s/%s failed", entity_type, name)

    def _require_topic(self, name: str) -> None:
        if not self.cache.contains(name):
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")

    # -- DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, one resource each ----------
    # (the handler authorizes each resource just before its call, as it always has)

    @property
    def broker_id(self) -> int:
        """This broker's id, as its dynamic config levels know it."""
        return self.dynamic.broker_id

    async def describe_configs(self, resource_type: int, name: str, keys: Sequence[str] | None) -> ConfigDescription:
        """ConfigHelper.describeConfigs of one resource: every key, or those in `keys` (a
        null or empty list asks for every key, as in Kafka)."""
        wanted = set(keys) if keys else None
        try:
            if resource_type == ResourceType.TOPIC:
                overrides = await self.topic_overrides(name)
                effective = self.topic_configs.parse(overrides, strict=False)
                entries = [admin_configs.topic_entry(e)
                           for e in topic_configs.describe(self.config, overrides, effective)]
            elif resource_type == ResourceType.BROKER:
                default = admin_configs.described_broker_is_default(self.broker_id, name)
                described = describe_default_entries(self.config) if default else describe_broker_entries(self.config)
                entries = [admin_configs.broker_entry(e) for e in described]
            elif resource_type == ResourceType.BROKER_LOGGER:
                entries = [admin_configs.logger_entry(logger, level)
                           for logger, level in broker_loggers.describe(self.broker_id, name, wanted)]
            else:
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource_type}")
        except AdminError as exc:
            return ConfigDescription(exc.code, exc.message)
        return ConfigDescription(entries=[e for e in entries if wanted is None or e.name in wanted])

    async def alter_configs(self, resource_type: int, name: str, configs: Sequence[tuple[str, str | None]],
                            validate_only: bool) -> ConfigResult:
        """ZkAdminManager.alterConfigs of one resource: its whole set of overrides (a topic)
        or dynamic configs (a broker level) replaced by `configs`."""
        try:
            props = admin_configs.check_no_nulls(configs)
            if resource_type == ResourceType.TOPIC:
                await self.alter_topic_config(name, lambda current: props, validate_only)
            elif resource_type == ResourceType.BROKER:
                await self.alter_broker_config(name, lambda current: props, validate_only, incremental=False)
            else:
                raise admin_configs.unsupported_alteration(resource_type)
        except AdminError as exc:
            return admin_configs.refused(exc)
        return ConfigResult()

    async def incremental_alter_configs(self, resource_type: int, name: str, ops: Sequence[IncrementalOp],
                                        validate_only: bool) -> ConfigResult:
        """ZkAdminManager.incrementalAlterConfigs of one resource: `ops` applied to what is
        set now (prepareIncrementalConfigs); a broker logger's level changes in this process only."""
        try:
            admin_configs.check_incremental(ops)
            if resource_type == ResourceType.TOPIC:
                await self.alter_topic_config(
                    name, lambda current: admin_configs.prepare_incremental(ops, current, admin_configs.topic_key_type),
                    validate_only)
            elif resource_type == ResourceType.BROKER:
                await self.alter_broker_config(
                    name, lambda current: admin_configs.prepare_incremental(ops, current, admin_configs.broker_key_type),
                    validate_only, incremental=True)
            elif resource_type == ResourceType.BROKER_LOGGER:
                broker_loggers.alter(self.broker_id, name, ops, validate_only)
            else:
                raise admin_configs.unsupported_alteration(resource_type)
        except AdminError as exc:
            return admin_configs.refused(exc)
        return ConfigResult()

    # -- client quotas ------------------------------------------------------------------

    async def describe_client_quotas(self, components: Sequence[QuotaFilterComponent],
                                     strict: bool) -> QuotaDescription:
        return await admin_quotas.describe_client_quotas(self.zk, components, strict)

    async def alter_client_quotas(self, alterations: Sequence[QuotaAlteration],
                                  validate_only: bool) -> list[QuotaAlterationResult]:
        return await admin_quotas.alter_client_quotas(self.zk, alterations, validate_only)

    # -- SCRAM credentials --------------------------------------------------------------

    async def describe_user_scram_credentials(self, users: Sequence[str] | None) -> list[UserScramCredentials]:
        return await admin_scram.describe_user_scram_credentials(self.zk, users)

    async def alter_user_scram_credentials(self, upsertions: Sequence[ScramUpsertion],
                                           deletions: Sequence[ScramDeletion]) -> list[ScramAlterationResult]:
        return await admin_scram.alter_user_scram_credentials(self.zk, upsertions, deletions)
