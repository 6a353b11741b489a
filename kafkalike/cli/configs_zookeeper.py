"""kafka-configs --zookeeper: entity configs read and written in their znodes, as Kafka 2.8's
ConfigCommand.alterConfigWithZk / describeConfigWithZk and AdminZkClient do.

An alter reads /config/<type>/<name>, refuses to delete a key that is not there ("Invalid
config(s): k"), validates the result as AdminZkClient.changeConfigs does for the entity
type, writes it whole and leaves a /config/changes notification; brokers apply it when
they see the notification. Dynamic broker configs other than the replication throttles
may be written this way only while the broker is down (for <default>, while every broker
is), as 2.8 insists: such configs are meant for bootstrapping a cluster. Password
configs are encoded with a password.encoder.secret given on the command line, which is
not stored. A describe prints `Configs for <entity> are k=v,...` per entity, in the
order Java's Properties hands the keys out. Nothing is written when a check fails.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Mapping, TextIO

from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkalike.cli.configs import (BROKERS, CLIENT_QUOTAS, CLIENTS, CONFIG_EXCEPTION, DEFAULT_SCRAM_ITERATIONS,
                                   ILLEGAL_ARGUMENT, INVALID_CONFIGURATION, IP_QUOTAS, IPS, SCRAM_MECHANISMS,
                                   SCRAM_MIN_ITERATIONS, TOPICS, USERS, _scala_set, _valid_ip_entity,
                                   configs_to_add, configs_to_delete, entity_names, entity_types)
from kafkalike.cli.joptions import JavaError, ParsedArgs
from kafkalike.cli.zookeeper_tool import ZK_TIMEOUT_SECONDS, ZooKeeperTool
from kafkalike.zkdata.broker_registration import BROKER_IDS_PATH
from kafkalike.zkdata.kafka_json import java_properties_order
from kafkalike.zkdata.znodes import (ConfigEntityChangeNotificationZNode, ConfigEntityName, ConfigEntityZNode,
                                     ConfigEntityTypeZNode)

DEFAULT = ConfigEntityName.DEFAULT
KAFKA_ERRORS = "org.apache.kafka.common.errors."


def _illegal(message: str) -> JavaError:
    return JavaError(ILLEGAL_ARGUMENT, message)


def sanitize(name: str) -> str:
    from kafkalike.broker.admin_quotas import sanitize as kafka_sanitize
    return kafka_sanitize(name)


def desanitize(name: str) -> str:
    from kafkalike.broker.admin_quotas import desanitize as kafka_desanitize
    return kafka_desanitize(name)


@dataclass(frozen=True)
class Entity:
    """ConfigCommand.Entity: a type and a sanitized name (None: every entity of the type)."""

    entity_type: str
    sanitized_name: str | None

    @property
    def entity_path(self) -> str:
        return self.entity_type if self.sanitized_name is None else f"{self.entity_type}/{self.sanitized_name}"

    def __str__(self) -> str:
        type_name = {USERS: "user-principal", CLIENTS: "client-id", TOPICS: "topic"}.get(self.entity_type,
                                                                                         self.entity_type)
        if self.sanitized_name == DEFAULT:
            return f"default {type_name}"
        if self.sanitized_name is None:
            return self.entity_type
        name = self.sanitized_name
        if self.entity_type in (USERS, CLIENTS):
            name = desanitize(name)
        return f"{type_name} '{name}'"


@dataclass(frozen=True)
class ConfigEntity:
    root: Entity
    child: Entity | None = None

    @property
    def full_sanitized_name(self) -> str:
        return (self.root.sanitized_name or "") + (f"/{self.child.entity_path}" if self.child else "")

    def __str__(self) -> str:
        return str(self.root) + (f", {self.child}" if self.child else "")


def parse_entity(args: ParsedArgs) -> ConfigEntity:
    """ConfigCommand.parseEntity."""
    types, names = entity_types(args), entity_names(args)
    if types[0] in (USERS, CLIENTS):
        if args.has("alter") and len(names) != len(types):
            raise _illegal("--entity-name or --entity-default must be specified with each --entity-type for --alter")
        reverse = len(types) == 2 and types[0] == CLIENTS
        ordered_types = list(reversed(types)) if reverse else types
        ordered_names = list(reversed(names)) if reverse and len(names) == 2 else names
        entities = [Entity(t, (DEFAULT if ordered_names[i] == "" else sanitize(ordered_names[i]))
                           if i < len(ordered_names) else None) for i, t in enumerate(ordered_types)]
        return ConfigEntity(entities[0], entities[1] if len(entities) > 1 else None)
    name = names[0] if names else None
    return ConfigEntity(Entity(types[0], DEFAULT if name == "" else name))


class ZookeeperConfigService(ZooKeeperTool):
    """ConfigCommand's processCommandWithZk: kazoo, blocking, like the other --zookeeper tools."""

    def __init__(self, args: ParsedArgs, out: TextIO, timeout: float = ZK_TIMEOUT_SECONDS) -> None:
        super().__init__(args.value("zookeeper"), out, timeout)
        self.args = args

    def run(self) -> None:
        if self.args.has("alter"):
            self.alter()
        else:
            self.describe()

    # ------------------------------------------------------------ znodes

    def fetch(self, entity_type: str, name: str) -> dict[str, str]:
        try:
            data = self.zk.get(ConfigEntityZNode.path(entity_type, name))[0]
        except NoNodeError:
            return {}
        return ConfigEntityZNode.decode(data)

    def change_entity_config(self, entity_type: str, name: str, configs: Mapping[str, str]) -> None:
        """AdminZkClient.changeEntityConfig: the config znode, then the change notification."""
        path, data = ConfigEntityZNode.path(entity_type, name), ConfigEntityZNode.encode(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            self._create_recursive(path, data)
        try:
            self._create_recursive(ConfigEntityChangeNotificationZNode.path())
        except NodeExistsError:
            pass
        notification = ConfigEntityChangeNotificationZNode
        self.zk.create(notification.create_path(), notification.encode(f"{entity_type}/{name}"), sequence=True)

    # ------------------------------------------------------------ alter

    def alter(self) -> None:
        added = configs_to_add(self.args, self.out)
        deleted = configs_to_delete(self.args)
        entity = parse_entity(self.args)
        entity_type, name = entity.root.entity_type, entity.full_sanitized_name
        if entity_type == USERS:
            self._scram_credentials(added)
        elif entity_type == BROKERS:
            dynamic = [k for k in added if k not in _zk_updatable_while_running()]
            if dynamic:
                per_broker = name != DEFAULT
                message = f"--bootstrap-server option must be specified to update broker configs {_scala_set(dynamic)}."
                info = ("Broker configuration updates using ZooKeeper are supported for bootstrapping before brokers"
                        " are started to enable encrypted password configs to be stored in ZooKeeper.")
                if per_broker:
                    if self.zk.exists(f"{BROKER_IDS_PATH}/{int(name)}") is not None:
                        raise _illegal(f"requirement failed: {message} when broker {name} is running. {info}")
                elif self._children(BROKER_IDS_PATH):
                    raise _illegal(f"requirement failed: {message} for default cluster if any broker is running. {info}")
                self._broker_configs(added, per_broker)
        configs = self.fetch(entity_type, name)
        invalid = [k for k in deleted if k not in configs]
        if invalid:
            raise JavaError(INVALID_CONFIGURATION, f"Invalid config(s): {','.join(invalid)}")
        configs.update(added)
        for key in deleted:
            configs.pop(key, None)
        self._validate(entity_type, name, configs)
        self.change_entity_config(entity_type, name, configs)
        self.out.write(f"Completed updating config for entity: {entity}.\n")

    def _scram_credentials(self, added: dict[str, str]) -> None:
        """ConfigCommand.preProcessScramCredentials: mechanism=[iterations=N,]password=P becomes
        the stored credential (salt, stored key, server key, iterations)."""
        from kafkalike.broker.admin_scram import credential_string
        import re
        for mechanism_id, mechanism in enumerate(SCRAM_MECHANISMS, start=1):
            if mechanism not in added:
                continue
            text = added[mechanism]
            match = re.fullmatch(r"(?:iterations=([0-9]*),)?password=(.*)", text, re.DOTALL)
            if match is None:
                raise _illegal(f"Invalid credential property {mechanism}={text}")
            iterations = int(match.group(1)) if match.group(1) else DEFAULT_SCRAM_ITERATIONS
            if iterations < SCRAM_MIN_ITERATIONS:
                raise _illegal(f"Iterations {iterations} is less than the minimum {SCRAM_MIN_ITERATIONS} required "
                               f"for {mechanism}")
            salt = os.urandom(24)
            digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
            salted = hashlib.pbkdf2_hmac(digest, match.group(2).encode("utf-8"), salt, iterations)
            added[mechanism] = credential_string(mechanism_id, salt, salted, iterations)

    def _broker_configs(self, added: dict[str, str], per_broker: bool) -> None:
        """ConfigCommand.preProcessBrokerConfigs: the password.encoder.* keys are taken out (used,
        never stored), the rest checked as dynamic configs, passwords encoded."""
        from kafkalike.broker.dynamic_config import PasswordEncoder, is_password_config, validate_configs
        from kafkalike.common.config_def import ConfigError
        encoder_configs = {k: added.pop(k) for k in [k for k in added if k.startswith("password.encoder.")]}
        try:
            validate_configs(added, per_broker)
        except ConfigError as error:
            raise JavaError(CONFIG_EXCEPTION, str(error)) from None
        passwords = [k for k in added if is_password_config(k)]
        if passwords:
            if "password.encoder.secret" not in encoder_configs:
                raise _illegal(f"requirement failed: password.encoder.secret must be specified to update "
                               f"{_scala_set(passwords)}. Other password encoder configs like cipher algorithm and "
                               "iterations may also be specified to override the default encoding parameters. "
                               "Password encoder configs will not be persisted in ZooKeeper.")
            encoder = PasswordEncoder.from_configs(encoder_configs)
            for key in passwords:
                added[key] = encoder.encode(added[key])

    def _validate(self, entity_type: str, name: str, configs: dict[str, str]) -> None:
        """AdminZkClient.changeConfigs' checks for each entity type."""
        from kafkalike.common.config_def import ConfigError
        try:
            if entity_type == TOPICS:
                self._validate_topic(name, configs)
            elif entity_type == CLIENTS:
                _validate_keys(configs, CLIENT_QUOTAS)
            elif entity_type == USERS:
                if name == DEFAULT or "/clients" in name:
                    _validate_keys(configs, CLIENT_QUOTAS)
                else:
                    _validate_keys(configs, {**CLIENT_QUOTAS, **{m: "PASSWORD" for m in SCRAM_MECHANISMS}})
            elif entity_type == BROKERS:
                from kafkalike.broker.dynamic_config import validate_config_types
                validate_config_types(configs)
            elif entity_type == IPS:
                _validate_keys(configs, IP_QUOTAS)
                if name != DEFAULT and not _valid_ip_entity(name):
                    raise JavaError("kafka.admin.AdminOperationException",
                                    f"{name} is not a valid IP or resolvable host.")
            else:
                raise _illegal(f"{entity_type} is not a known entityType. Should be one of "
                               "List(topics, clients, users, brokers, ips)")
        except ConfigError as error:
            if str(error).startswith("Unknown topic config name"):
                raise JavaError(INVALID_CONFIGURATION, str(error)) from None
            raise JavaError(CONFIG_EXCEPTION, str(error)) from None

    def _validate_topic(self, topic: str, configs: dict[str, str]) -> None:
        from kafkalike.common.topics import InvalidTopicName, validate
        from kafkalike.storage.config import LogConfig
        try:
            validate(topic)
        except InvalidTopicName as error:
            raise JavaError(KAFKA_ERRORS + "InvalidTopicException", str(error)) from None
        if self.zk.exists(f"/brokers/topics/{topic}") is None:
            raise JavaError(KAFKA_ERRORS + "UnknownTopicOrPartitionException", f"Topic '{topic}' does not exist.")
        LogConfig.from_props(configs)

    # ------------------------------------------------------------ describe

    def all_entities(self, entity: ConfigEntity) -> list[ConfigEntity]:
        """ConfigEntity.getAllEntities: a named entity, or every entity with a config znode."""
        root, child = entity.root, entity.child
        if root.sanitized_name is None:
            roots = [ConfigEntity(Entity(root.entity_type, n), child)
                     for n in self._children(ConfigEntityTypeZNode.path(root.entity_type))]
            if child is None:
                return roots
            return [e for r in roots for e in self.all_entities(ConfigEntity(r.root, Entity(child.entity_type, None)))]
        if child is not None:
            if child.sanitized_name is not None:
                return [entity]
            path = ConfigEntityTypeZNode.path(f"{root.entity_path}/{child.entity_type}")
            return [ConfigEntity(root, Entity(child.entity_type, n)) for n in self._children(path)]
        return [entity]

    def describe(self) -> None:
        entity = parse_entity(self.args)
        describe_all_users = (entity.root.entity_type == USERS and entity.root.sanitized_name is None
                              and entity.child is None)
        for found in self.all_entities(entity):
            configs = self.fetch(found.root.entity_type, found.full_sanitized_name)
            if configs or not describe_all_users:
                text = ",".join(f"{k}={configs[k]}" for k in java_properties_order(list(configs)))
                self.out.write(f"Configs for {found} are {text}\n")


def _zk_updatable_while_running() -> frozenset[str]:
    from kafkalike.broker.dynamic_config import ZK_UPDATABLE_WHILE_RUNNING
    return ZK_UPDATABLE_WHILE_RUNNING


def _validate_keys(configs: Mapping[str, str], keys: Mapping[str, str]) -> None:
    """DynamicConfig.validate without custom keys: unknown names, then each value's type."""
    from kafkalike.common.config_def import ConfigType, parse_value
    unknown = [k for k in configs if k not in keys]
    if unknown:
        raise _illegal(f"requirement failed: Unknown Dynamic Configuration: {_scala_set(unknown)}.")
    for key, kind in keys.items():
        if key in configs and kind != "PASSWORD":
            parse_value(key, ConfigType[kind], configs[key])
