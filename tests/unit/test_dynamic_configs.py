"""Dynamic broker configs: Kafka 2.8's rules for what may change, the merge of the four
levels, what DescribeConfigs says about it, the config-change notification loop, and
the broker side of AlterConfigs / IncrementalAlterConfigs (on fakes: no ZooKeeper)."""
from __future__ import annotations

import logging

import pytest
from twisted.internet import defer

from kafkalike.broker.admin_manager import AdminError, AdminManager
from kafkalike.broker.config import BROKER_CONFIG, KafkaConfig, UpdateMode
from kafkalike.broker.config_changes import CHANGE_EXPIRATION_MS, ConfigChangeListener
from kafkalike.broker.dynamic_config import (ALL_DYNAMIC_CONFIGS, DynamicBrokerConfig, PasswordEncoder,
                                             describe_broker_entries, describe_default_entries, scala_set,
                                             validate_configs)
from kafkalike.broker.admin_configs import APPEND, DELETE, SET, SUBTRACT, prepare_incremental
from kafkalike.broker.admin_configs import broker_key_type as _broker_key_type
from kafkalike.broker.admin_configs import topic_key_type as _topic_key_type
from kafkalike.common.config_def import ConfigError
from kafkalike.common.resources import ConfigSource
from kafkalike.protocol.errors import ErrorCode

ZK = {"zookeeper.connect": "localhost:2181", "broker.id": "0"}


def config(**props) -> KafkaConfig:
    return KafkaConfig({**ZK, **{k.replace("_", "."): v for k, v in props.items()}}, hostname="broker1")


def refused(props, per_broker=True) -> str:
    with pytest.raises(ConfigError) as error:
        validate_configs(props, per_broker)
    return str(error.value)


# -- which keys are dynamic -------------------------------------------------------------------


def test_the_dynamic_keys_are_kafka_28s():
    # DynamicBrokerConfig.AllDynamicConfigs: a sample of each group, and the read-only rest.
    for name in ("log.retention.ms", "log.retention.bytes", "log.segment.bytes", "message.max.bytes",
                 "log.cleaner.threads", "log.cleaner.io.max.bytes.per.second", "unclean.leader.election.enable",
                 "min.insync.replicas", "num.io.threads", "num.network.threads", "max.connections",
                 "log.flush.interval.ms", "log.flush.interval.messages", "metric.reporters", "listeners",
                 "advertised.listeners", "principal.builder.class", "sasl.jaas.config", "compression.type"):
        assert name in ALL_DYNAMIC_CONFIGS, name
    for name in ("log.retention.hours", "log.retention.minutes", "log.roll.hours", "log.dirs", "broker.id",
                 "zookeeper.connect", "log.message.format.version", "num.partitions", "log.cleaner.enable",
                 "log.flush.scheduler.interval.ms", "auto.create.topics.enable"):
        assert name not in ALL_DYNAMIC_CONFIGS, name
    assert BROKER_CONFIG["listeners"].update_mode is UpdateMode.PER_BROKER
    assert BROKER_CONFIG["max.connections"].update_mode is UpdateMode.CLUSTER_WIDE


def test_refusals_use_kafkas_sentences():
    assert refused({"log.dirs": "/x"}) == "Cannot update these configs dynamically: Set(log.dirs)"
    assert refused({"log.retention.hours": "1", "broker.id": "3"}) == \
        "Cannot update these configs dynamically: Set(log.retention.hours, broker.id)"
    assert refused({"ssl.keystore.location": "/k"}) == ("These security configs can be dynamically updated only "
                                                        "per-listener using the listener prefix: "
                                                        "Set(ssl.keystore.location)")
    assert refused({"log.retention.ms": "soon"}) == \
        "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"
    assert refused({"log.segment.bytes": "10"}) == \
        "Invalid value 10 for configuration log.segment.bytes: Value must be at least 14"
    assert refused({"leader.replication.throttled.rate": "-1"}) == \
        "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"
    assert refused({"listener.name.internal.max.connections": "x"}) == \
        "Invalid value x for configuration max.connections: Not a number of type INT"
    assert refused({"listeners": "PLAINTEXT://:9093"}, per_broker=False) == \
        "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"
    # Custom keys and the dynamic-only quota keys pass; a cluster-level listener key too.
    validate_configs({"my.custom.key": "anything", "follower.replication.throttled.rate": "1000",
                      "max.connections": "100"}, per_broker=False)
    validate_configs({"listener.name.internal.ssl.keystore.location": "/k"}, per_broker=True)
    assert scala_set([]) == "Set()"


# -- the merge of the levels ------------------------------------------------------------------


def test_per_broker_wins_over_default_over_static_over_kafkas_default():
    cfg = config(log_retention_hours="24")
    dynamic = DynamicBrokerConfig(cfg)
    assert cfg.log_retention_ms == 24 * 3_600_000
    assert dynamic.update_default({"log.retention.ms": "1000"}) >= {"log.retention.ms"}
    assert cfg.log_retention_ms == 1000
    dynamic.update_broker({"log.retention.ms": "2000"})
    assert cfg.log_retention_ms == 2000
    entry = cfg.describe("log.retention.ms")
    assert (entry.value, entry.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("log.retention.ms", "2000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "1000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "24", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]
    dynamic.update_broker({})
    assert cfg.log_retention_ms == 1000 and cfg.source("log.retention.ms") is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    dynamic.update_default({})
    assert cfg.log_retention_ms == 24 * 3_600_000
    assert cfg.describe("log.retention.ms").source is ConfigSource.DEFAULT_CONFIG     # Kafka's synonym rule
    assert cfg.log_config_defaults()["retention.ms"] == 24 * 3_600_000


def test_invalid_stored_values_are_ignored_and_logged(caplog):
    cfg = config()
    dynamic = DynamicBrokerConfig(cfg)
    with caplog.at_level(logging.ERROR, "kafka.server.DynamicBrokerConfig"):
        dynamic.update_default({"message.max.bytes": "big", "log.dirs": "/x", "listeners": "PLAINTEXT://:1",
                                "log.segment.bytes": "2000000"})
    assert cfg.dynamic_default == {"log.segment.bytes": "2000000"}
    assert cfg.get("log.segment.bytes") == 2000000 and cfg.get("message.max.bytes") == 1048588
    assert [r.getMessage() for r in caplog.records] == [
        "Dynamic default cluster config contains invalid values in: Set(message.max.bytes), these configs will be "
        "ignored",
        "Non-dynamic configs configured in ZooKeeper will be ignored: Set(log.dirs)",
        "Per-broker configs defined at default cluster level will be ignored: Set(listeners)"]


def test_a_merge_kafkaconfig_refuses_is_not_applied(caplog):
    cfg = config()
    dynamic = DynamicBrokerConfig(cfg)
    with caplog.at_level(logging.ERROR, "kafka.server.DynamicBrokerConfig"):
        assert dynamic.update_broker({"log.cleaner.threads": "200"}) == set()      # 128 MB / 200 < 1 MB a thread
    assert cfg.get("log.cleaner.threads") == 1 and cfg.dynamic_broker == {}
    assert "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread." in caplog.text
    with pytest.raises(ConfigError, match="at least 1MB per cleaner thread"):
        dynamic.validate({"log.cleaner.threads": "200"}, per_broker=True)


def test_reconfigurables_hear_only_their_keys():
    cfg = config()
    dynamic = DynamicBrokerConfig(cfg)
    heard = []
    dynamic.add_reconfigurable({"log.retention.ms", "log.segment.bytes"}, lambda changed: heard.append(changed))
    dynamic.update_default({"log.retention.ms": "5000", "num.io.threads": "9"})
    dynamic.update_default({"log.retention.ms": "5000", "num.io.threads": "10"})
    assert heard == [{"log.retention.ms"}]
    assert cfg.get("num.io.threads") == 10


def test_thread_pools_may_at_most_double_or_halve():
    dynamic = DynamicBrokerConfig(config())
    dynamic.validate({"num.io.threads": "16"}, per_broker=True)
    dynamic.validate({"num.io.threads": "4"}, per_broker=False)
    with pytest.raises(ConfigError) as error:
        dynamic.validate({"num.io.threads": "17"}, per_broker=True)
    assert str(error.value) == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed "
        "for num.io.threads=17, value should not be greater than double the current value 8 for configuration "
        "Invalid dynamic configuration")
    with pytest.raises(ConfigError, match="value should be at least half the current value 3"):
        dynamic.validate({"num.network.threads": "1"}, per_broker=True)


def test_log_cleaner_threads_may_at_most_double_or_halve():
    """LogCleaner.validateReconfiguration, run for a change of any cleaner key."""
    dynamic = DynamicBrokerConfig(config(**{"log.cleaner.threads": "3"}))
    dynamic.validate({"log.cleaner.threads": "6"}, per_broker=True)
    dynamic.validate({"log.cleaner.threads": "1"}, per_broker=False)      # 3 / 2 is 1 in Scala's ints
    with pytest.raises(ConfigError) as error:
        dynamic.validate({"log.cleaner.threads": "7"}, per_broker=True)
    assert str(error.value) == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to "
        "more than double the current value 3 for configuration Invalid dynamic configuration")
    with pytest.raises(ConfigError, match="Log cleaner threads should be at least 1 for"):
        dynamic.validate({"log.cleaner.threads": "0"}, per_broker=True)
    halved = DynamicBrokerConfig(config(**{"log.cleaner.threads": "8"}))
    with pytest.raises(ConfigError, match="cannot be reduced to less than half the current value 8 for"):
        halved.validate({"log.cleaner.threads": "3"}, per_broker=True)
    # Another cleaner key is checked against the thread count too (0 threads: refused, as Kafka).
    idle = DynamicBrokerConfig(config(**{"log.cleaner.threads": "0"}))
    with pytest.raises(ConfigError, match="Log cleaner threads should be at least 1"):
        idle.validate({"log.cleaner.backoff.ms": "100"}, per_broker=True)
    # Without a cleaner (log.cleaner.enable=false) there is nothing to validate against.
    DynamicBrokerConfig(config(**{"log.cleaner.enable": "false"})).validate({"log.cleaner.threads": "9"}, True)


def test_replication_throttles_count_only_per_broker():
    cfg = config()
    dynamic = DynamicBrokerConfig(cfg)
    dynamic.update_default({"leader.replication.throttled.rate": "10"})
    assert dynamic.replication_throttled_rate("leader.replication.throttled.rate") == 2**63 - 1
    dynamic.update_broker({"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "2"})
    assert dynamic.replication_throttled_rate("leader.replication.throttled.rate") == 1000
    assert dynamic.replication_throttled_rate("follower.replication.throttled.rate") == 2


# -- what DescribeConfigs says ----------------------------------------------------------------


def test_describe_of_the_default_lists_only_its_keys_with_only_its_synonym():
    cfg = config(log_retention_ms="100")
    dynamic = DynamicBrokerConfig(cfg)
    dynamic.update_default({"log.retention.ms": "5000", "my.custom": "v"})
    dynamic.update_broker({"log.retention.ms": "7000"})
    entries = {e.name: e for e in describe_default_entries(cfg)}
    assert list(entries) == ["log.retention.ms", "my.custom"]
    retention = entries["log.retention.ms"]
    assert (retention.value, retention.source, retention.read_only) == (
        "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False)
    assert [(s.name, s.source) for s in retention.synonyms] == [
        ("log.retention.ms", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    custom = entries["my.custom"]       # a key of unknown type: sensitive, read-only, no value shown
    assert (custom.value, custom.is_sensitive, custom.read_only, custom.config_type) == (None, True, True, None)


def test_describe_of_a_broker_adds_dynamic_only_and_custom_keys_in_name_order():
    cfg = config(**{"some.custom.static": "1"})
    dynamic = DynamicBrokerConfig(cfg)
    dynamic.update_broker({"leader.replication.throttled.rate": "1000"})
    entries = describe_broker_entries(cfg)
    names = [e.name for e in entries]
    assert names == sorted(names)
    by_name = {e.name: e for e in entries}
    rate = by_name["leader.replication.throttled.rate"]
    assert (rate.value, rate.source, rate.is_sensitive, rate.read_only) == (
        "1000", ConfigSource.DYNAMIC_BROKER_CONFIG, False, True)     # not in AllDynamicConfigs: read-only
    assert by_name["some.custom.static"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert "process.roles" not in by_name and "kafkalike.metrics.port" not in by_name


# -- IncrementalAlterConfigs' operations --------------------------------------------------------


def test_incremental_operations():
    ops = [("cleanup.policy", APPEND, "compact"), ("retention.ms", SET, "1"), ("segment.ms", DELETE, None)]
    assert prepare_incremental(ops, {"segment.ms": "5"}, _topic_key_type) == {
        "cleanup.policy": "delete,compact", "retention.ms": "1"}
    assert prepare_incremental([("cleanup.policy", SUBTRACT, "delete")], {"cleanup.policy": "delete,compact"},
                               _topic_key_type) == {"cleanup.policy": "compact"}
    assert prepare_incremental([("metric.reporters", APPEND, "a.B")], {}, _broker_key_type) == {
        "metric.reporters": "a.B"}
    with pytest.raises(AdminError) as error:
        prepare_incremental([("retention.ms", APPEND, "1")], {}, _topic_key_type)
    assert (error.value.code, error.value.message) == (
        ErrorCode.INVALID_REQUEST, "Config value append is not allowed for config key: retention.ms")
    with pytest.raises(AdminError) as error:
        prepare_incremental([("log.retention.ms", SUBTRACT, "1")], {}, _broker_key_type)
    assert error.value.message == "Config value subtract is not allowed for config key: log.retention.ms"


# -- the admin manager's side -----------------------------------------------------------------


class FakeZk:
    def __init__(self):
        self.brokers: dict = {}
        self.writes: list = []

    def get_broker_configs(self, broker_id):
        return defer.succeed(dict(self.brokers.get(broker_id, {})))

    def change_broker_config(self, broker_id, configs):
        self.brokers[broker_id] = dict(configs)
        self.writes.append((broker_id, dict(configs)))
        return defer.succeed(None)


def run(coro):
    result = []
    d = defer.ensureDeferred(coro)
    d.addBoth(result.append)
    assert result, "fakes answer at once"
    if hasattr(result[0], "raiseException"):
        result[0].raiseException()
    return result[0]


@pytest.fixture
def admin():
    zk = FakeZk()
    written = []

    async def on_written(entity_type, name):
        written.append((entity_type, name))
    manager = AdminManager(zk, None, config(), None, None, on_config_written=on_written)
    manager.written = written
    return manager


def test_alter_broker_config_writes_validated_props_and_applies_them(admin):
    run(admin.alter_broker_config("0", lambda current: {**current, "log.retention.ms": "1000"}, False,
                                  incremental=True))
    run(admin.alter_broker_config("", lambda current: {"log.segment.bytes": "2000000"}, False, incremental=False))
    assert admin.zk.writes == [(0, {"log.retention.ms": "1000"}), (None, {"log.segment.bytes": "2000000"})]
    assert admin.written == [("brokers", "0"), ("brokers", "<default>")]
    run(admin.alter_broker_config("0", lambda current: {**current, "min.insync.replicas": "2"}, False,
                                  incremental=True))
    assert admin.zk.brokers[0] == {"log.retention.ms": "1000", "min.insync.replicas": "2"}


@pytest.mark.parametrize("name, props, message", [
    ("0", {"log.dirs": "/x"}, "Invalid config value for resource ConfigResource(type=BROKER, name='0'): Cannot "
                              "update these configs dynamically: Set(log.dirs)"),
    ("", {"log.retention.ms": "x"}, "Invalid config value for resource ConfigResource(type=BROKER, name=''): "
                                    "Invalid value x for configuration log.retention.ms: Not a number of type LONG"),
    ("1", {"log.retention.ms": "1"}, "Unexpected broker id, expected 0, but received 1"),
    ("b", {"log.retention.ms": "1"}, "Broker id must be an integer, but it is: b"),
    ("0", {"sasl.jaas.config": "x"}, "Invalid config value for resource ConfigResource(type=BROKER, name='0'): "
                                     "Password encoder secret not configured"),
])
def test_refused_broker_configs_write_nothing(admin, name, props, message):
    with pytest.raises(AdminError) as error:
        run(admin.alter_broker_config(name, lambda current: props, False, incremental=False))
    assert (error.value.code, error.value.message) == (ErrorCode.INVALID_REQUEST, message)
    assert admin.zk.writes == []


def test_validate_only_writes_nothing(admin):
    run(admin.alter_broker_config("0", lambda current: {"log.retention.ms": "1"}, True, incremental=False))
    assert admin.zk.writes == [] and admin.written == []


def test_password_configs_are_stored_encoded_and_read_back():
    cfg = config(password_encoder_secret="s3cret")
    dynamic = DynamicBrokerConfig(cfg)
    stored = dynamic.to_persistent({"sasl.jaas.config": "jaas text"}, per_broker=True)
    assert stored["sasl.jaas.config"] != "jaas text"
    fields = dict(part.split(":", 1) for part in stored["sasl.jaas.config"].split(","))
    assert set(fields) == {"keyFactoryAlgorithm", "cipherAlgorithm", "keyLength", "salt", "iterations",
                           "encryptedPassword", "passwordLength", "initializationVector"}
    assert (fields["keyFactoryAlgorithm"], fields["cipherAlgorithm"], fields["passwordLength"]) == (
        "PBKDF2WithHmacSHA512", "AES/CBC/PKCS5Padding", "9")
    assert dynamic.from_persistent(stored, per_broker=True) == {"sasl.jaas.config": "jaas text"}
    with pytest.raises(ConfigError, match="Password config can be defined only at broker level"):
        dynamic.to_persistent({"sasl.jaas.config": "x"}, per_broker=False)
    with pytest.raises(ConfigError, match="Password could not be decoded"):
        PasswordEncoder("other").decode(stored["sasl.jaas.config"])


# -- the config change notifications ----------------------------------------------------------


class FakeNotifications:
    def __init__(self, now_ms):
        self.children: dict[str, tuple[str, int]] = {}
        self.deleted: list[str] = []
        self.now_ms = now_ms

    def add(self, sequence: int, entity_path: str, age_ms: int = 0) -> None:
        self.children[f"config_change_{sequence:010d}"] = (entity_path, self.now_ms - age_ms)

    def watch_config_changes(self, listener):
        self.listener = listener
        return defer.succeed(self)

    def cancel(self):
        pass

    def get_config_change_notifications(self):
        return defer.succeed(sorted(self.children))

    def get_config_change_notification(self, name):
        return defer.succeed(self.children.get(name))

    def delete_config_change_notification(self, name):
        self.deleted.append(name)
        self.children.pop(name, None)
        return defer.succeed(None)


def test_notifications_are_processed_once_in_order_and_old_ones_purged():
    zk = FakeNotifications(now_ms=10_000_000)
    seen = []

    def handler(kind):
        async def handle(name):
            seen.append(f"{kind}/{name}")
        return handle
    listener = ConfigChangeListener(zk, {"topics": handler("topics"), "brokers": handler("brokers")},
                                    clock=lambda: zk.now_ms / 1000)
    zk.add(3, "brokers/<default>", age_ms=CHANGE_EXPIRATION_MS + 1)
    zk.add(4, "topics/orders")
    zk.add(5, "users/alice")                     # quotas: consumed, not handled here
    run(listener.start())
    assert seen == ["brokers/<default>", "topics/orders"]
    assert zk.deleted == ["config_change_0000000003"]
    zk.add(6, "brokers/0")
    run(listener.process())
    run(listener.process())
    assert seen == ["brokers/<default>", "topics/orders", "brokers/0"]
    assert listener.last_executed == 6
