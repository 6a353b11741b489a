"""Producer configuration: Kafka 2.8's keys, defaults and validation rules.

A user who moves a producer config from Java must get the same meaning and the same
complaints: values may be given as strings ("5", "true", "a,b") or as Python values,
and a bad one raises ConfigError with Java's text, which names the key
("Invalid value x for configuration acks: String must be one of: all, -1, 0, 1").
Serializer, partitioner and interceptor entries may also be Python objects.
Unknown keys are kept (serializers and partitioners may read their own) and logged,
as Java logs them. The keys are declared on the engine all config tables share
(kafkalike.common.config_def).
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from kafkalike.client.errors import ConfigError
from kafkalike.client.security import ClientSecurity
from kafkalike.common.config_def import (
    INT_MAX,
    ConfigKey,
    ConfigType,
    Validator,
    at_least,
    between,
    errors_as,
    one_of,
    parse_all,
)

log = logging.getLogger("kafkalike.client.config")

B, S, I, L, LS, C, P = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                        ConfigType.LIST, ConfigType.CLASS, ConfigType.PASSWORD)


def _key(name: str, ctype: ConfigType, default: Any, validator: Validator | None = None) -> ConfigKey:
    return ConfigKey(name, ctype, default, validator=validator)


def _keys(*keys: ConfigKey) -> dict[str, ConfigKey]:
    return {k.name: k for k in keys}


DEFAULT_PARTITIONER = "org.apache.kafka.clients.producer.internals.DefaultPartitioner"

# CommonClientConfigs: the keys producer and consumer share, declared once.
_COMMON = _keys(
    _key("bootstrap.servers", LS, []),
    _key("client.dns.lookup", S, "use_all_dns_ips",
         one_of("default", "use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
    _key("client.id", S, ""),
    _key("send.buffer.bytes", I, 131072, at_least(-1)),
    _key("reconnect.backoff.ms", L, 50, at_least(0)),
    _key("reconnect.backoff.max.ms", L, 1000, at_least(0)),
    _key("retry.backoff.ms", L, 100, at_least(0)),
    _key("metadata.max.age.ms", L, 300000, at_least(0)),
    _key("metrics.sample.window.ms", L, 30000, at_least(0)),
    _key("metrics.num.samples", I, 2, at_least(1)),
    _key("metrics.recording.level", S, "INFO", one_of("INFO", "DEBUG", "TRACE")),
    _key("metric.reporters", LS, []),
    _key("request.timeout.ms", I, 30000, at_least(0)),
    _key("socket.connection.setup.timeout.ms", L, 10000, at_least(0)),
    _key("socket.connection.setup.timeout.max.ms", L, 127000, at_least(0)),
    _key("connections.max.idle.ms", L, 540000),
    _key("interceptor.classes", LS, []),
    _key("security.protocol", S, "PLAINTEXT",
         one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", case_sensitive=False)),
    _key("security.providers", S, None),
)

# SslConfigs and SaslConfigs as clients have them (Kafka 2.8 defaults); kafkalike.client.security
# reads them (JKS, the default type as in Java, PKCS12 and PEM stores).
_SECURITY = _keys(
    _key("ssl.protocol", S, "TLSv1.3"),
    _key("ssl.provider", S, None),
    _key("ssl.cipher.suites", LS, None),
    _key("ssl.enabled.protocols", LS, ["TLSv1.2", "TLSv1.3"]),
    _key("ssl.keystore.type", S, "JKS"),
    _key("ssl.keystore.location", S, None),
    _key("ssl.keystore.password", P, None),
    _key("ssl.key.password", P, None),
    _key("ssl.keystore.key", P, None),
    _key("ssl.keystore.certificate.chain", P, None),
    _key("ssl.truststore.type", S, "JKS"),
    _key("ssl.truststore.location", S, None),
    _key("ssl.truststore.password", P, None),
    _key("ssl.truststore.certificates", P, None),
    _key("ssl.keymanager.algorithm", S, "SunX509"),
    _key("ssl.trustmanager.algorithm", S, "PKIX"),
    _key("ssl.endpoint.identification.algorithm", S, "https"),
    _key("ssl.secure.random.implementation", S, None),
    _key("ssl.engine.factory.class", C, None),
    _key("sasl.mechanism", S, "GSSAPI"),
    _key("sasl.jaas.config", P, None),
    _key("sasl.kerberos.service.name", S, None),
    _key("sasl.client.callback.handler.class", C, None),
    _key("sasl.login.class", C, None),
    _key("sasl.login.callback.handler.class", C, None),
)


# Kafka 2.8's ProducerConfig (CommonClientConfigs included), in its defaults.
PRODUCER_CONFIG = _keys(
    _COMMON["bootstrap.servers"],
    _COMMON["client.dns.lookup"],
    _key("buffer.memory", L, 33554432, at_least(0)),
    _key("retries", I, INT_MAX, between(0, INT_MAX)),
    _key("acks", S, "1", one_of("all", "-1", "0", "1")),
    _key("compression.type", S, "none", one_of("none", "gzip", "snappy", "lz4", "zstd")),
    _key("batch.size", I, 16384, at_least(0)),
    _key("linger.ms", L, 0, at_least(0)),
    _key("delivery.timeout.ms", I, 120000, at_least(0)),
    _COMMON["client.id"],
    _COMMON["send.buffer.bytes"],
    _key("receive.buffer.bytes", I, 32768, at_least(-1)),
    _key("max.request.size", I, 1048576, at_least(0)),
    _COMMON["reconnect.backoff.ms"],
    _COMMON["reconnect.backoff.max.ms"],
    _COMMON["retry.backoff.ms"],
    _key("max.block.ms", L, 60000, at_least(0)),
    _COMMON["request.timeout.ms"],
    _COMMON["metadata.max.age.ms"],
    _key("metadata.max.idle.ms", L, 300000, at_least(5000)),
    _COMMON["metrics.sample.window.ms"],
    _COMMON["metrics.num.samples"],
    _COMMON["metrics.recording.level"],
    _COMMON["metric.reporters"],
    _key("max.in.flight.requests.per.connection", I, 5, at_least(1)),
    _key("key.serializer", C, "bytes"),
    _key("value.serializer", C, "bytes"),
    _COMMON["socket.connection.setup.timeout.ms"],
    _COMMON["socket.connection.setup.timeout.max.ms"],
    _COMMON["connections.max.idle.ms"],
    _key("partitioner.class", C, DEFAULT_PARTITIONER),
    _COMMON["interceptor.classes"],
    _COMMON["security.protocol"],
    _COMMON["security.providers"],
    *_SECURITY.values(),
    _key("enable.idempotence", B, False),
    _key("transaction.timeout.ms", I, 60000),
    _key("transactional.id", S, None),
)


def _parse(table: Mapping[str, ConfigKey], user: Mapping[str, Any]) -> dict[str, Any]:
    """Every known key parsed (or defaulted) by the engine, in the shapes a Python user
    passes (lists stay lists, a lone object stands for a one-item list), then the unknown
    keys as given: serializers and partitioners may read their own, and Java logs them."""
    given = {name: [value] if _lone_item(table.get(name), value) else value for name, value in user.items()}
    with errors_as(ConfigError):
        out = parse_all(table.values(), given)
    for key in table.values():
        if key.type is ConfigType.LIST and out[key.name] is not None:
            out[key.name] = list(out[key.name])
    for name in user:
        if name not in table:
            out[name] = user[name]
            log.warning("The configuration '%s' was supplied but isn't a known config.", name)
    return out


def _lone_item(key: ConfigKey | None, value: Any) -> bool:
    return (key is not None and key.type is ConfigType.LIST and value is not None
            and not isinstance(value, (str, list, tuple)))


def producer_config(user: Mapping[str, Any] | None) -> dict[str, Any]:
    """Kafka's defaults overlaid with `user`, parsed and validated; raises ConfigError."""
    user = dict(user or {})
    out = _parse(PRODUCER_CONFIG, user)
    _check_combinations(out, user)
    return out


def _check_idempotence(config: dict[str, Any], user: Mapping[str, Any]) -> None:
    """Java's rules: acks must be all (and becomes all when unset), retries non-zero, at most 5 in flight."""
    if "retries" in user and config["retries"] == 0:
        raise ConfigError("Must set retries to non-zero when using the idempotent producer.")
    if "acks" in user and config["acks"] not in ("all", "-1"):
        raise ConfigError("Must set acks to all in order to use the idempotent producer. "
                          "Otherwise we cannot guarantee idempotence.")
    config["acks"] = "-1"
    if config["max.in.flight.requests.per.connection"] > 5:
        raise ConfigError("Must set max.in.flight.requests.per.connection to at most 5 to use the "
                          "idempotent producer.")


def _check_combinations(config: dict[str, Any], user: Mapping[str, Any]) -> None:
    if config["transactional.id"] is not None:
        # Java's ProducerConfig.idempotenceEnabled: a transactional producer is idempotent.
        if "enable.idempotence" in user and not config["enable.idempotence"]:
            raise ConfigError("Cannot set a transactional.id without also enabling idempotence.")
        config["enable.idempotence"] = True
    if config["enable.idempotence"]:
        _check_idempotence(config, user)
    ClientSecurity.from_config(config)   # a bad security key fails here, naming the key
    if config["acks"] == "all":
        config["acks"] = "-1"
    if not config["bootstrap.servers"]:
        raise ConfigError("No resolvable bootstrap urls given in bootstrap.servers")
    linger, request_timeout = config["linger.ms"], config["request.timeout.ms"]
    if config["delivery.timeout.ms"] < linger + request_timeout:
        if "delivery.timeout.ms" in user:
            raise ConfigError("delivery.timeout.ms should be equal to or larger than linger.ms + "
                              "request.timeout.ms")
        # Java quietly raises the default to the smallest value that makes sense.
        config["delivery.timeout.ms"] = linger + request_timeout
        log.warning("delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms. "
                    "Setting it to %d.", linger + request_timeout)


__all__ = ["ConfigKey", "DEFAULT_PARTITIONER", "PRODUCER_CONFIG", "producer_config"]


# -- consumer -------------------------------------------------------------------------------

# Kafka 2.8's ConsumerConfig (CommonClientConfigs included), in its defaults.
CONSUMER_CONFIG = _keys(
    _COMMON["bootstrap.servers"],
    _COMMON["client.dns.lookup"],
    _key("group.id", S, None),
    _key("group.instance.id", S, None),
    _key("session.timeout.ms", I, 10000),
    _key("heartbeat.interval.ms", I, 3000),
    _key("partition.assignment.strategy", LS,
         ["org.apache.kafka.clients.consumer.RangeAssignor"]),
    _COMMON["metadata.max.age.ms"],
    _key("enable.auto.commit", B, True),
    _key("auto.commit.interval.ms", I, 5000, at_least(0)),
    _COMMON["client.id"],
    _key("client.rack", S, ""),
    _key("max.partition.fetch.bytes", I, 1048576, at_least(0)),
    _COMMON["send.buffer.bytes"],
    _key("receive.buffer.bytes", I, 65536, at_least(-1)),
    _key("fetch.min.bytes", I, 1, at_least(0)),
    _key("fetch.max.bytes", I, 52428800, at_least(0)),
    _key("fetch.max.wait.ms", I, 500, at_least(0)),
    _COMMON["reconnect.backoff.ms"],
    _COMMON["reconnect.backoff.max.ms"],
    _COMMON["retry.backoff.ms"],
    _key("auto.offset.reset", S, "latest", one_of("latest", "earliest", "none")),
    _key("check.crcs", B, True),
    _COMMON["metrics.sample.window.ms"],
    _COMMON["metrics.num.samples"],
    _COMMON["metrics.recording.level"],
    _COMMON["metric.reporters"],
    _key("key.deserializer", C, "bytes"),
    _key("value.deserializer", C, "bytes"),
    _COMMON["request.timeout.ms"],
    _key("default.api.timeout.ms", I, 60000, at_least(0)),
    _COMMON["socket.connection.setup.timeout.ms"],
    _COMMON["socket.connection.setup.timeout.max.ms"],
    _COMMON["connections.max.idle.ms"],
    _COMMON["interceptor.classes"],
    _key("max.poll.records", I, 500, at_least(1)),
    _key("max.poll.interval.ms", I, 300000, at_least(1)),
    _key("exclude.internal.topics", B, True),
    _key("internal.leave.group.on.close", B, True),
    _key("isolation.level", S, "read_uncommitted",
         one_of("read_committed", "read_uncommitted", case_sensitive=False)),
    _key("allow.auto.create.topics", B, True),
    _COMMON["security.protocol"],
    _COMMON["security.providers"],
    *_SECURITY.values(),
)


def consumer_config(user: Mapping[str, Any] | None) -> dict[str, Any]:
    """Kafka's consumer defaults overlaid with `user`, parsed and validated; raises ConfigError."""
    user = dict(user or {})
    out = _parse(CONSUMER_CONFIG, user)
    ClientSecurity.from_config(out)   # a bad security key fails here, naming the key
    if not out["bootstrap.servers"]:
        raise ConfigError("No resolvable bootstrap urls given in bootstrap.servers")
    out["isolation.level"] = out["isolation.level"].lower()
    if out["group.id"] == "":
        out["group.id"] = None  # Java treats an empty group.id as none (and warns)
    if out["group.id"] is None and "enable.auto.commit" not in user:
        out["enable.auto.commit"] = False  # Java turns auto commit off without a group
    elif out["group.id"] is None and out["enable.auto.commit"]:
        raise ConfigError("enable.auto.commit cannot be set to true when default group id (null) is used.")
    if out["group.id"] is not None and out["heartbeat.interval.ms"] >= out["session.timeout.ms"]:
        raise ConfigError("heartbeat.interval.ms must be lower than session.timeout.ms")
    return out


__all__ += ["CONSUMER_CONFIG", "consumer_config"]
