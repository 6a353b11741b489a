"""What a broker does when a dynamic config changes: Kafka's ConfigHandler family
(TopicConfigHandler, BrokerConfigHandler, UserConfigHandler, ClientIdConfigHandler,
IpConfigHandler) and
the reconfigurables DynamicLogConfig and the log cleaner's.

They live here, not in the composition root, so `server.py` only wires them: each takes
the few services it touches, and the controller (made late, known to the server only once
the broker is registered) through a callable.
"""
from __future__ import annotations

import logging
from typing import Callable

from twisted.internet import threads

from kafkalike.broker.admin_quotas import DEFAULT_ENTITY
from kafkalike.broker.client_quotas import ClientQuotas
from kafkalike.broker.connection_quotas import IP_DEFAULT, ConnectionQuotas, resolve
from kafkalike.broker.config import KafkaConfig
from kafkalike.broker.dynamic_config import DynamicBrokerConfig
from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.broker.security.credentials import ScramCredentialCache
from kafkalike.broker.topic_configs import TopicConfigs, default_log_config
from kafkalike.controller.controller import KafkaController
from kafkalike.storage.manager import LogManager
from kafkalike.zkdata import KafkaZkClient
from kafkalike.zkdata.znodes import ConfigType

log = logging.getLogger("kafka.server.KafkaServer")

ControllerRef = Callable[[], "KafkaController | None"]


def _enable_unclean_election(controller: ControllerRef) -> None:
    """unclean.leader.election.enable turned on: the controller, if this broker is it,
    retries its offline partitions at once."""
    current = controller()
    if current is not None:
        current.enable_unclean_election()


class TopicConfigHandler:
    """Kafka's TopicConfigHandler: a topics/<topic> notification re-reads its overrides
    if this broker hosts the topic (or knew them), or is the controller, whose elections
    read them; the topic's logs take the new config."""

    def __init__(self, zk: KafkaZkClient, topic_configs: TopicConfigs, replicas: ReplicaManager,
                 logs: LogManager, controller: ControllerRef):
        self.zk = zk
        self.topic_configs = topic_configs
        self.replicas = replicas
        self.logs = logs
        self.controller = controller

    async def process(self, topic: str) -> None:
        configs = self.topic_configs
        hosted = topic in {tp[0] for tp in self.replicas.partitions}
        current = self.controller()
        is_controller = current is not None and current.active
        if not (hosted or is_controller or configs.loaded(topic)):
            return
        props = await self.zk.get_entity_configs("topics", topic)
        log.info("Processing override for entityPath: topics/%s with config: %s", topic, props)
        if props != configs.overrides(topic) or not configs.loaded(topic):
            before = configs.effective(topic).unclean_leader_election_enable
            configs.set_overrides(topic, props)
            self.logs.update_topic_config(topic, configs.effective(topic))
            if configs.effective(topic).unclean_leader_election_enable and not before:
                _enable_unclean_election(self.controller)


class BrokerConfigHandler:
    """Kafka's BrokerConfigHandler: a brokers/<default> or brokers/<id> notification;
    only the default and this broker's own configs concern it."""

    def __init__(self, zk: KafkaZkClient, broker_id: int, dynamic_config: DynamicBrokerConfig):
        self.zk = zk
        self.broker_id = broker_id
        self.dynamic_config = dynamic_config

    async def process(self, name: str) -> None:
        if name == "<default>":
            props = await self.zk.get_broker_configs(None)
            log.info("Processing override for entityPath: brokers/%s with config: %s", name, props)
            self.dynamic_config.update_default(props)
        elif name.strip() == str(self.broker_id):
            props = await self.zk.get_broker_configs(self.broker_id)
            log.info("Processing override for entityPath: brokers/%s with config: %s", name, props)
            self.dynamic_config.update_broker(props)


class UserConfigHandler:
    """Kafka's UserConfigHandler: users/<user> or users/<user>/clients/<client id>,
    SCRAM credentials and quotas."""

    def __init__(self, zk: KafkaZkClient, credentials: ScramCredentialCache, quotas: ClientQuotas):
        self.zk = zk
        self.credentials = credentials
        self.quotas = quotas

    async def process(self, name: str) -> None:
        await self.credentials.reload(name)
        await self.quotas.reload_user(self.zk, name)


class ClientIdConfigHandler:
    """Kafka's ClientIdConfigHandler: clients/<client id> quotas."""

    def __init__(self, zk: KafkaZkClient, quotas: ClientQuotas):
        self.zk = zk
        self.quotas = quotas

    async def process(self, name: str) -> None:
        await self.quotas.reload_client(self.zk, name)


class IpConfigHandler:
    """Kafka's IpConfigHandler: ips/<ip> or ips/<default>, the connection_creation_rate
    quota the listeners enforce (connection_quotas.py)."""

    def __init__(self, zk: KafkaZkClient, quotas: ConnectionQuotas):
        self.zk = zk
        self.quotas = quotas

    async def load(self) -> None:
        """Every IP quota in ZooKeeper, before the listeners open."""
        for name in await self.zk.get_entity_names(ConfigType.IP):
            await self.process(name)

    async def process(self, name: str) -> None:
        props = await self.zk.get_entity_configs(ConfigType.IP, name)
        raw = props.get("connection_creation_rate")
        try:
            quota = None if raw is None else int(float(raw))
        except ValueError:
            log.error("Ignoring connection_creation_rate=%s of ips/%s: not a number", raw, name)
            return
        if name == DEFAULT_ENTITY:
            self.quotas.set_ip_connection_rate(IP_DEFAULT, quota)
            return
        address = resolve(name)
        if address is None:
            log.error("Ignoring the quotas of ips/%s: unable to resolve address %s", name, name)
            return
        self.quotas.set_ip_connection_rate(address, quota)


class DynamicLogConfig:
    """Kafka's DynamicLogConfig: new log.* broker configs become the topic defaults of
    every log without its own override. The log manager is made after the dynamic config
    is loaded, hence the callable."""

    def __init__(self, config: KafkaConfig, topic_configs: TopicConfigs,
                 logs: Callable[[], LogManager | None], controller: ControllerRef):
        self.config = config
        self.topic_configs = topic_configs
        self.logs = logs
        self.controller = controller

    def reconfigure(self, changed: set[str]) -> None:
        before = self.topic_configs.defaults.unclean_leader_election_enable
        defaults = default_log_config(self.config)
        self.topic_configs.set_defaults(defaults)
        logs = self.logs()
        if logs is not None:
            logs.default_config = defaults
            for tp, existing in list(logs.logs.items()):
                existing.update_config(self.topic_configs.effective(tp.topic))
        if defaults.unclean_leader_election_enable and not before:
            _enable_unclean_election(self.controller)


def cleaner_options(config: KafkaConfig) -> dict:
    """The log cleaner's settings from the broker config (Kafka's LogCleaner.cleanerConfig)."""
    return {"threads": config.get("log.cleaner.threads"),
            "backoff_ms": config.get("log.cleaner.backoff.ms"),
            "dedupe_buffer_size": config.get("log.cleaner.dedupe.buffer.size"),
            "io_buffer_load_factor": config.get("log.cleaner.io.buffer.load.factor"),
            "io_max_bytes_per_second": config.get("log.cleaner.io.max.bytes.per.second")}


class DynamicCleanerConfig:
    """LogCleaner.reconfigure: a new thread count or map size restarts the cleaner's
    threads; the I/O rate and the backoff apply at once. Stopping threads waits for them
    to leave their passes, so it runs on a thread, never on the reactor."""

    def __init__(self, config: KafkaConfig, logs: Callable[[], LogManager | None]):
        self.config = config
        self.logs = logs

    def reconfigure(self, changed: set[str]) -> None:
        logs = self.logs()
        cleaner = logs.cleaner if logs is not None else None
        if cleaner is not None:
            d = threads.deferToThread(cleaner.reconfigure, **cleaner_options(self.config))
            d.addErrback(lambda f: log.error("Failed to reconfigure the log cleaner: %s", f.getTraceback()))
