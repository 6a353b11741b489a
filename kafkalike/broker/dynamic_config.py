"""Dynamic broker configs, as Kafka 2.8's DynamicBrokerConfig and DynamicConfig.Broker.

A broker's configuration has four levels, highest first (DescribeConfigs names them as
config sources): per-broker dynamic configs in /config/brokers/<id>
(DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default in /config/brokers/<default>
(DYNAMIC_DEFAULT_BROKER_CONFIG), server.properties (STATIC_BROKER_CONFIG) and Kafka's
defaults (DEFAULT_CONFIG). Both dynamic levels are written by AlterConfigs and
IncrementalAlterConfigs on a BROKER resource (name "" for the default, else the broker
id) or by `kafka-configs.sh --zookeeper` before the brokers start, always followed by a
/config/changes notification on which every broker re-reads them.

Only the keys Kafka 2.8 marks dynamic may be set there (the "Update Mode" of
`kafka-configs.sh --help`, or UpdateMode in kafkalike.broker.config: the log defaults
that are topic-config synonyms, the log cleaner's, the thread pools', the connection
limits', the listeners' and their security settings), plus three dynamic-only keys
that are not server.properties keys: leader.replication.throttled.rate,
follower.replication.throttled.rate and replica.alter.log.dirs.io.max.bytes.per.second.
Keys Kafka does not know at all are accepted and kept (custom configs). The checks and
their sentences are Kafka's:

- a read-only key: "Cannot update these configs dynamically: Set(log.dirs)";
- an SSL key without a listener prefix: "These security configs can be dynamically
  updated only per-listener using the listener prefix: Set(...)";
- a bad value: "Invalid value abc for configuration log.retention.ms: Not a number of
  type LONG";
- a per-broker key at the cluster default: "Cannot update these configs at default
  cluster level, broker id must be specified: Set(listeners)";
- a thread pool more than halved or doubled, and the cross-key rules of KafkaConfig
  for the merge of every level.

The broker answers each with INVALID_REQUEST and "Invalid config value for resource
ConfigResource(type=BROKER, name='0'): <sentence>", as ZkAdminManager does.

Nothing here touches ZooKeeper or the reactor, so the tools validate with the same code
(`kafka-configs.sh --zookeeper` before brokers start). `DynamicBrokerConfig` holds the
broker's side: it filters what ZooKeeper holds (invalid or non-dynamic keys stored by
hand are logged and ignored, as Kafka does), makes the merge current in the broker's
KafkaConfig, and tells the parts registered for some keys which of them changed.
"""
from __future__ import annotations

import base64
import hashlib
import logging
import os
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from kafkalike.broker.config import (
    BROKER_CONFIG,
    TOPIC_CONFIG_SYNONYMS,
    ConfigError,
    ConfigKey,
    ConfigType,
    KafkaConfig,
    UpdateMode,
    broker_synonyms,
)
from kafkalike.common.config_def import LONG_MAX, at_least

log = logging.getLogger("kafka.server.DynamicBrokerConfig")

DEFAULT_ENTITY = "<default>"          # ConfigEntityName.Default: /config/brokers/<default>

# -- the keys ------------------------------------------------------------------------------

LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
ALTER_LOG_DIRS_IO_MAX_BYTES = "replica.alter.log.dirs.io.max.bytes.per.second"
UNLIMITED_RATE = LONG_MAX             # ReplicationQuotaManagerConfig.QuotaBytesPerSecondDefault

# DynamicConfig.Broker's own keys: dynamic only, never in server.properties.
QUOTA_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(LEADER_THROTTLED_RATE, ConfigType.LONG, UNLIMITED_RATE,
              "A long representing the upper bound (bytes/sec) on replication traffic for leaders enumerated in "
              "the property leader.replication.throttled.replicas (for each topic). This property can be only "
              "set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour.",
              at_least(0), UpdateMode.CLUSTER_WIDE),
    ConfigKey(FOLLOWER_THROTTLED_RATE, ConfigType.LONG, UNLIMITED_RATE,
              "A long representing the upper bound (bytes/sec) on replication traffic for followers enumerated in "
              "the property follower.replication.throttled.replicas (for each topic). This property can be only "
              "set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour.",
              at_least(0), UpdateMode.CLUSTER_WIDE),
    ConfigKey(ALTER_LOG_DIRS_IO_MAX_BYTES, ConfigType.LONG, UNLIMITED_RATE,
              "A long representing the upper bound (bytes/sec) on disk IO used for moving replica between log "
              "directories on the same broker. This property can be only set dynamically. It is suggested that "
              "the limit be kept above 1MB/s for accurate behaviour.", at_least(0), UpdateMode.CLUSTER_WIDE),
)
QUOTA_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in QUOTA_KEYS}

# DynamicBrokerConfig.AllDynamicConfigs: the KafkaConfig keys that may change live.
ALL_DYNAMIC_CONFIGS = frozenset(name for name, key in BROKER_CONFIG.items() if not key.read_only)
# DynamicConfig.Broker.brokerConfigDef: the quota keys, then every dynamic KafkaConfig key.
DYNAMIC_BROKER_KEYS: dict[str, ConfigKey] = {
    **QUOTA_CONFIGS, **{name: key for name, key in BROKER_CONFIG.items() if name in ALL_DYNAMIC_CONFIGS}}
# DynamicConfig.Broker.nonDynamicProps: every other KafkaConfig key (internal ones too).
NON_DYNAMIC_CONFIGS = frozenset(BROKER_CONFIG) - frozenset(DYNAMIC_BROKER_KEYS)
# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix.
SECURITY_CONFIGS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})
CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset({"max.connections", "max.connection.creation.rate"})
PER_BROKER_CONFIGS = frozenset(name for name, key in BROKER_CONFIG.items()
                               if key.update_mode is UpdateMode.PER_BROKER)
LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                              "sasl.server.callback.handler.class", "connections.max.reauth.ms")
LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)\Z", re.DOTALL)
PASSWORD_CONFIGS = frozenset(name for name in ALL_DYNAMIC_CONFIGS if BROKER_CONFIG[name].type is ConfigType.PASSWORD)

# The parts of the broker that reconfigure for these keys (Kafka's BrokerReconfigurables).
LOG_CONFIGS = frozenset(TOPIC_CONFIG_SYNONYMS.values()) - {"log.message.format.version"}   # DynamicLogConfig
CLEANER_CONFIGS = frozenset({"log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
                             "log.cleaner.io.buffer.load.factor", "log.cleaner.io.buffer.size", "message.max.bytes",
                             "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms"})
THREAD_POOL_CONFIGS = ("num.io.threads", "num.network.threads", "num.replica.fetchers",
                       "num.recovery.threads.per.data.dir", "background.threads")
LISTENER_CONFIGS = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map"})
# kafka-configs --zookeeper may change these on a running broker (ConfigCommand's
# BrokerConfigsUpdatableUsingZooKeeperWhileBrokerRunning); the rest only before it starts.
ZK_UPDATABLE_WHILE_RUNNING = frozenset(QUOTA_CONFIGS)

# How this broker applies each dynamic key (docs/operations.md, "Dynamic configs").
APPLIED_LIVE = LOG_CONFIGS | {"log.cleaner.threads", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
                              "log.cleaner.io.buffer.load.factor", "log.cleaner.io.max.bytes.per.second",
                              LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE, ALTER_LOG_DIRS_IO_MAX_BYTES}


def scala_set(names: Iterable[str]) -> str:
    """A Scala Set's toString, as Kafka's messages print the keys they refuse."""
    return "Set(" + ", ".join(names) + ")"


def is_password_config(name: str) -> bool:
    """DynamicBrokerConfig.isPasswordConfig: listener-prefixed keys count too."""
    return any(name.endswith(p) for p in PASSWORD_CONFIGS)


def base_name(name: str) -> str:
    """listener.name.<listener>.<key> -> <key>; other names are their own base."""
    match = LISTENER_CONFIG.match(name)
    return match.group(1) if match else name


def config_type(name: str) -> ConfigType | None:
    """KafkaConfig.configType: the key's type, a dynamic-only key's, or (for a listener
    override) its base key's; None for a key Kafka does not know."""
    key = BROKER_CONFIG.get(name) or QUOTA_CONFIGS.get(name)
    if key is None:
        match = LISTENER_CONFIG.match(name)
        if match:
            mechanism = next((m for m in LISTENER_MECHANISM_CONFIGS if match.group(1).endswith(m)), None)
            key = BROKER_CONFIG.get(mechanism or match.group(1))
    return None if key is None else key.type


def is_sensitive(name: str) -> bool:
    """KafkaConfig.maybeSensitive of the key's type: a password, or a key of unknown type."""
    kind = config_type(name)
    return kind is None or kind is ConfigType.PASSWORD


def config_documentation(name: str) -> str | None:
    key = BROKER_CONFIG.get(name) or QUOTA_CONFIGS.get(name)
    return None if key is None else key.doc


# -- validation (DynamicBrokerConfig.validateConfigs) ---------------------------------------


def non_dynamic_configs(props: Mapping[str, Any]) -> list[str]:
    return [name for name in props if name in NON_DYNAMIC_CONFIGS]


def security_configs_without_listener_prefix(props: Mapping[str, Any]) -> list[str]:
    return [name for name in props if name in SECURITY_CONFIGS]


def per_broker_configs(props: Mapping[str, Any]) -> list[str]:
    def listener_specific(name: str) -> bool:
        match = LISTENER_CONFIG.match(name)
        return bool(match) and match.group(1) not in CLUSTER_LEVEL_LISTENER_CONFIGS
    return [name for name in props if name in PER_BROKER_CONFIGS or listener_specific(name)]


def validate_config_types(props: Mapping[str, Any]) -> None:
    """DynamicConfig.Broker.validate of the props with listener prefixes stripped: every
    dynamic key's value parsed and checked (ConfigDef order); unknown keys pass."""
    base: dict[str, Any] = {}
    for name, value in props.items():
        base[base_name(name)] = value
    for name, key in DYNAMIC_BROKER_KEYS.items():
        if name in base:
            key.parse(base[name])


def validate_configs(props: Mapping[str, Any], per_broker: bool) -> None:
    """Raise ConfigError with Kafka's sentence for the first rule the props break."""
    def check(names: Sequence[str], message: str) -> None:
        if names:
            raise ConfigError(f"{message}: {scala_set(names)}")
    check(non_dynamic_configs(props), "Cannot update these configs dynamically")
    check(security_configs_without_listener_prefix(props),
          "These security configs can be dynamically updated only per-listener using the listener prefix")
    validate_config_types(props)
    if not per_broker:
        check(per_broker_configs(props), "Cannot update these configs at default cluster level, broker id must be "
                                         "specified")


def validate_thread_pools(old: KafkaConfig, new: KafkaConfig) -> None:
    """DynamicThreadPool.validateReconfiguration: at least half and at most double."""
    for name in THREAD_POOL_CONFIGS:
        value, current = new.get(name), old.get(name)
        if value == current:
            continue
        message = f"Dynamic thread count update validation failed for {name}={value}"
        if value <= 0:
            raise ConfigError(f"{message}, value should be at least 1")
        if value < current / 2:
            raise ConfigError(f"{message}, value should be at least half the current value {current}")
        if value > current * 2:
            raise ConfigError(f"{message}, value should not be greater than double the current value {current}")


def validate_cleaner_threads(old: KafkaConfig, new: KafkaConfig) -> None:
    """LogCleaner.validateReconfiguration, for a change of any cleaner key: at least one
    thread, and at least half (integer division) and at most double the current count."""
    threads, current = new.get("log.cleaner.threads"), old.get("log.cleaner.threads")
    if threads < 1:
        raise ConfigError("Log cleaner threads should be at least 1")
    if threads < current // 2:
        raise ConfigError(f"Log cleaner threads cannot be reduced to less than half the current value {current}")
    if threads > current * 2:
        raise ConfigError(f"Log cleaner threads cannot be increased to more than double the current value {current}")


def validate_listeners(old: KafkaConfig, new: KafkaConfig) -> None:
    """DynamicListenerConfig.validateReconfiguration, in its order (simplified messages
    for the Scala maps Kafka prints)."""
    listeners = [e.listener_name for e in new.listeners]
    advertised = [e.listener_name for e in new.advertised_listeners]
    if not set(advertised) <= set(listeners):
        raise ConfigError(f"Advertised listeners '{','.join(advertised)}' must be a subset of listeners "
                          f"'{','.join(listeners)}'")
    protocols = new.listener_security_protocol_map
    if not set(listeners) <= set(protocols):
        raise ConfigError(f"Listeners '{','.join(listeners)}' must be subset of listener map "
                          f"'{','.join(f'{k}:{v}' for k, v in protocols.items())}'")
    before = old.listener_security_protocol_map
    for name in set(listeners) & {e.listener_name for e in old.listeners}:
        if before.get(name) != protocols.get(name):
            raise ConfigError(f"Security protocol cannot be updated for existing listener {name}")
    if new.inter_broker_listener_name not in advertised:
        raise ConfigError(f"Advertised listener must be specified for inter-broker listener "
                          f"{new.inter_broker_listener_name}")


def reconfiguration_error(cause: ConfigError) -> ConfigError:
    """processReconfiguration's wrapper: ConfigException("Invalid dynamic configuration", e),
    whose (name, value) constructor makes this sentence out of the cause."""
    return ConfigError(f"Invalid value {ConfigError.java_name}: {cause} for configuration Invalid dynamic "
                       "configuration")


# -- passwords (kafka.utils.PasswordEncoder) ------------------------------------------------


class PasswordEncoder:
    """Kafka's PasswordEncoder for AES/CBC/PKCS5Padding: PBKDF2 of password.encoder.secret,
    the result stored as Kafka stores it, `key:value` pairs joined by commas."""

    def __init__(self, secret: str, key_factory_algorithm: str | None = None,
                 cipher_algorithm: str = "AES/CBC/PKCS5Padding", key_length: int = 128,
                 iterations: int = 4096) -> None:
        self.secret = secret
        self.key_factory_algorithm = key_factory_algorithm or "PBKDF2WithHmacSHA512"
        self.cipher_algorithm = cipher_algorithm
        self.key_length = key_length
        self.iterations = iterations

    def _key(self, algorithm: str, salt: bytes, key_length: int, iterations: int) -> bytes:
        digests = {"PBKDF2WithHmacSHA512": "sha512", "PBKDF2WithHmacSHA1": "sha1", "PBKDF2WithHmacSHA256": "sha256"}
        if algorithm not in digests:
            raise ConfigError(f"Unsupported password encoder key factory algorithm {algorithm}")
        return hashlib.pbkdf2_hmac(digests[algorithm], self.secret.encode("utf-8"), salt, iterations,
                                   key_length // 8)

    def _cipher(self, key: bytes, iv: bytes):
        if self.cipher_algorithm != "AES/CBC/PKCS5Padding":
            raise ConfigError(f"Unsupported password encoder cipher algorithm {self.cipher_algorithm}")
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        return Cipher(algorithms.AES(key), modes.CBC(iv))

    def encode(self, password: str) -> str:
        from cryptography.hazmat.primitives import padding
        from kafkalike.zkdata.kafka_json import scala_immutable_map_order
        salt, iv = os.urandom(256), os.urandom(16)
        key = self._key(self.key_factory_algorithm, salt, self.key_length, self.iterations)
        padder = padding.PKCS7(128).padder()
        data = padder.update(password.encode("utf-8")) + padder.finalize()
        encryptor = self._cipher(key, iv).encryptor()
        encrypted = encryptor.update(data) + encryptor.finalize()
        fields = {"keyFactoryAlgorithm": self.key_factory_algorithm, "cipherAlgorithm": self.cipher_algorithm,
                  "keyLength": str(self.key_length), "salt": base64.b64encode(salt).decode(),
                  "iterations": str(self.iterations), "encryptedPassword": base64.b64encode(encrypted).decode(),
                  "passwordLength": str(len(password)), "initializationVector": base64.b64encode(iv).decode()}
        return ",".join(f"{k}:{fields[k]}" for k in scala_immutable_map_order(list(fields)))

    def decode(self, encoded: str) -> str:
        from cryptography.hazmat.primitives import padding
        try:
            params = dict(part.split(":", 1) for part in encoded.split(","))
            key = self._key(params["keyFactoryAlgorithm"], base64.b64decode(params["salt"]),
                            int(params["keyLength"]), int(params["iterations"]))
            decryptor = self._cipher(key, base64.b64decode(params["initializationVector"])).decryptor()
            data = decryptor.update(base64.b64decode(params["encryptedPassword"])) + decryptor.finalize()
            unpadder = padding.PKCS7(128).unpadder()
            password = (unpadder.update(data) + unpadder.finalize()).decode("utf-8")
        except Exception:
            raise ConfigError("Password could not be decoded") from None
        if len(password) != int(params["passwordLength"]):
            raise ConfigError("Password could not be decoded, sanity check of length failed")
        return password

    @classmethod
    def from_configs(cls, configs: Mapping[str, Any]) -> "PasswordEncoder | None":
        """From the password.encoder.* keys of a KafkaConfig (or the tool's --add-config)."""
        secret = configs.get("password.encoder.secret")
        if secret is None:
            return None
        secret = getattr(secret, "value", secret)
        return cls(str(secret), configs.get("password.encoder.keyfactory.algorithm"),
                   configs.get("password.encoder.cipher.algorithm") or "AES/CBC/PKCS5Padding",
                   int(configs.get("password.encoder.key.length") or 128),
                   int(configs.get("password.encoder.iterations") or 4096))


# -- the broker's side ---------------------------------------------------------------------

Reconfigurable = Callable[[set[str]], None]


class DynamicBrokerConfig:
    """The dynamic levels of one broker's KafkaConfig, as Kafka's DynamicBrokerConfig.

    `update_default` and `update_broker` take what ZooKeeper holds, drop what must not be
    there (logging it, as Kafka does), make the merge current in `config` and call each
    registered reconfigurable with the names that changed among those it asked for. A
    merge KafkaConfig refuses (a cross-key rule) is logged and not applied.
    """

    def __init__(self, config: KafkaConfig, broker_id: int | None = None) -> None:
        self.config = config
        self.broker_id = config.broker_id if broker_id is None else broker_id
        self._reconfigurables: list[tuple[frozenset[str] | None, Reconfigurable]] = []
        self._validators: list[Callable[[KafkaConfig, KafkaConfig], None]] = []
        self._file_reloaders: list[Callable[[KafkaConfig], None]] = []
        self._encoder = PasswordEncoder.from_configs({k: config.get(k) for k in (
            "password.encoder.secret", "password.encoder.keyfactory.algorithm", "password.encoder.cipher.algorithm",
            "password.encoder.key.length", "password.encoder.iterations")})

    # ---------------------------------------------------------------- reading ZooKeeper's

    def add_validator(self, check: Callable[[KafkaConfig, KafkaConfig], None]) -> None:
        """A part's validateReconfiguration: check(current, proposed) raises ConfigError to
        refuse an AlterConfigs before anything is written."""
        self._validators.append(check)

    def add_file_reloader(self, reload: Callable[[KafkaConfig], None]) -> None:
        """A part that reads files its config names (a listener's stores): reload(proposed)
        rereads those that changed on disk although their keys did not."""
        self._file_reloaders.append(reload)

    def reload_updated_files(self, props: Mapping[str, str]) -> None:
        """Kafka's reloadUpdatedFilesWithoutConfigChange, before a per-broker AlterConfigs is
        written: `props` is the broker's new level. Raises ConfigError if a changed file is
        refused."""
        merged = KafkaConfig(self.config.merged_props(self.config.dynamic_default, props),
                             hostname=self.config._hostname)
        try:
            for reload in self._file_reloaders:
                reload(merged)
        except ConfigError as exc:
            raise reconfiguration_error(exc) from None

    def add_reconfigurable(self, keys: Iterable[str] | None, callback: Reconfigurable) -> None:
        """callback(changed names) after a change of any of `keys` (None: of anything)."""
        self._reconfigurables.append((None if keys is None else frozenset(keys), callback))

    def from_persistent(self, persistent: Mapping[str, str], per_broker: bool) -> dict[str, str]:
        """fromPersistentProps: what ZooKeeper holds, less what a broker must ignore."""
        props = dict(persistent)
        where = "broker" if per_broker else "default cluster"
        invalid_values = []
        for name, value in list(props.items()):
            try:
                validate_config_types({name: value})
            except ConfigError:
                invalid_values.append(name)
        if invalid_values:
            for name in invalid_values:
                props.pop(name)
            log.error("Dynamic %s config contains invalid values in: %s, these configs will be ignored",
                      where, scala_set(invalid_values))

        def remove(names: list[str], message: str) -> None:
            if names:
                for name in names:
                    props.pop(name, None)
                log.error("%s: %s", message, scala_set(names))
        remove(non_dynamic_configs(props), "Non-dynamic configs configured in ZooKeeper will be ignored")
        remove(security_configs_without_listener_prefix(props),
               "Security configs can be dynamically updated only using listener prefix, base configs will be ignored")
        if not per_broker:
            remove(per_broker_configs(props), "Per-broker configs defined at default cluster level will be ignored")
        for name in [n for n in props if is_password_config(n)]:
            try:
                if self._encoder is None:
                    raise ConfigError("Password encoder secret not configured")
                props[name] = self._encoder.decode(props[name])
            except ConfigError as exc:
                log.error("Dynamic password config %s could not be decoded, ignoring. %s", name, exc)
                props.pop(name)
        return props

    def to_persistent(self, props: Mapping[str, str], per_broker: bool) -> dict[str, str]:
        """toPersistentProps: password values encoded with password.encoder.secret."""
        out = dict(props)
        for name, value in props.items():
            if is_password_config(name) and value is not None:
                if not per_broker:
                    raise ConfigError("Password config can be defined only at broker level")
                if self._encoder is None:
                    raise ConfigError("Password encoder secret not configured")
                out[name] = self._encoder.encode(value)
        return out

    def initialize(self, default: Mapping[str, str], broker: Mapping[str, str]) -> None:
        """At startup, both levels at once (Kafka's initialize), before anything reads the config."""
        self._apply(self.from_persistent(default, False), self.from_persistent(broker, True),
                    "Dynamic broker configs could not be applied")

    def update_default(self, persistent: Mapping[str, str]) -> set[str]:
        props = self.from_persistent(persistent, False)
        return self._apply(props, self.config.dynamic_broker,
                           f"Cluster default configs could not be applied: {scala_set(persistent)}")

    def update_broker(self, persistent: Mapping[str, str]) -> set[str]:
        props = self.from_persistent(persistent, True)
        return self._apply(self.config.dynamic_default, props,
                           f"Per-broker configs of {self.broker_id} could not be applied: {scala_set(persistent)}")

    def _apply(self, default: Mapping[str, str], broker: Mapping[str, str], failure: str) -> set[str]:
        if dict(default) == self.config.dynamic_default and dict(broker) == self.config.dynamic_broker:
            return set()
        try:
            changed = self.config.apply_dynamic(default, broker)
        except ConfigError as exc:
            log.error("%s: %s", failure, exc)
            return set()
        if changed:
            log.info("Reconfiguring broker %d, updated configs: %s", self.broker_id, scala_set(sorted(changed)))
        for keys, callback in list(self._reconfigurables):
            relevant = changed if keys is None else changed & keys
            if relevant:
                try:
                    callback(relevant)
                except Exception:
                    log.exception("Reconfiguration for %s failed", scala_set(sorted(relevant)))
        return changed

    # ---------------------------------------------------------------- checking a request's

    def validate(self, props: Mapping[str, str], per_broker: bool) -> None:
        """DynamicBrokerConfig.validate: the request's props as the new content of their
        level, checked alone and then merged with the other levels. Raises ConfigError."""
        validate_configs(props, per_broker)
        if per_broker:
            default, broker = self.config.dynamic_default, props
        else:
            default, broker = props, self.config.dynamic_broker
        merged = KafkaConfig(self.config.merged_props(default, broker), hostname=self.config._hostname)
        changed = {k for k in BROKER_CONFIG if merged.get(k) != self.config.get(k)}
        try:
            if changed & set(THREAD_POOL_CONFIGS):
                validate_thread_pools(self.config, merged)
            if changed & CLEANER_CONFIGS and self.config.get("log.cleaner.enable"):
                validate_cleaner_threads(self.config, merged)     # the broker has a LogCleaner
            if changed & LISTENER_CONFIGS:
                validate_listeners(self.config, merged)
            for check in self._validators:
                check(self.config, merged)
        except ConfigError as exc:
            raise reconfiguration_error(exc) from None

    # ---------------------------------------------------------------- what others read

    is_sensitive = staticmethod(is_sensitive)

    def replication_throttled_rate(self, name: str) -> int:
        """leader/follower.replication.throttled.rate or replica.alter.log.dirs.io.max.bytes.
        per.second in bytes/s; UNLIMITED_RATE when unset. As Kafka 2.8's BrokerConfigHandler,
        only the per-broker level counts (a value at <default> is stored but not applied)."""
        value = self.config.dynamic_broker.get(name)
        return UNLIMITED_RATE if value is None else QUOTA_CONFIGS[name].parse(value)


def describe_default_entries(config: KafkaConfig) -> list:
    """DescribeConfigs of BROKER "": the cluster default's keys only, each with its
    DYNAMIC_DEFAULT_BROKER_CONFIG synonyms only (ConfigHelper with perBrokerConfig=false)."""
    from kafkalike.broker.config import ConfigEntry
    from kafkalike.common.resources import ConfigSource
    out = []
    for name in config.dynamic_default:
        entry = broker_entry(config, name)
        synonyms = tuple(s for s in entry.synonyms if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        value = None if entry.is_sensitive else config.dynamic_default[name]
        out.append(ConfigEntry(name, value, source, entry.is_sensitive, entry.read_only, entry.config_type,
                               entry.documentation, synonyms))
    return out


def broker_entry(config: KafkaConfig, name: str):
    """One key of a per-broker DescribeConfigs: a KafkaConfig key, or any other key the
    broker holds (dynamic-only or custom)."""
    if name in BROKER_CONFIG and not BROKER_CONFIG[name].internal:
        return config.describe(name)
    return config.describe_custom(name, config_type(name), config_documentation(name))


def describe_broker_entries(config: KafkaConfig) -> list:
    """DescribeConfigs of BROKER <id>: every public key, then the keys the broker was given
    that KafkaConfig does not define, all sorted by name."""
    entries = config.describe_all()
    known = {e.name for e in entries}
    extra = [config.describe_custom(n, config_type(n), config_documentation(n))
             for n in config.originals if n not in known and n not in BROKER_CONFIG]
    return sorted(entries + extra, key=lambda e: e.name)


__all__ = ["ALL_DYNAMIC_CONFIGS", "APPLIED_LIVE", "CLEANER_CONFIGS", "DEFAULT_ENTITY", "DYNAMIC_BROKER_KEYS",
           "DynamicBrokerConfig", "FOLLOWER_THROTTLED_RATE", "LEADER_THROTTLED_RATE", "LOG_CONFIGS",
           "NON_DYNAMIC_CONFIGS", "PER_BROKER_CONFIGS", "PasswordEncoder", "QUOTA_CONFIGS", "UNLIMITED_RATE",
           "ZK_UPDATABLE_WHILE_RUNNING", "broker_entry", "broker_synonyms", "config_type", "describe_broker_entries",
           "describe_default_entries", "is_password_config", "scala_set", "validate_configs"]
