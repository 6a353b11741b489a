"""Producer configuration: Kafka 2.8's keys, defaults and validation rules.

A user who moves a producer config from Java must get the same meaning and the same
complaints: values may be given as strings ("5", "true", "a,b") or as Python values,
and a bad one raises ConfigError with Java's text, which names the key
("Invalid value x for configuration acks: String must be one of: all, -1, 0, 1").
Serializer, partitioner and interceptor entries may also be Python objects.
Unknown keys are kept (serializers and partitioners may read their own) and logged,
as Java logs them.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kafkalike.client.errors import ConfigError, UnsupportedFeatureError

log = logging.getLogger("kafkalike.client.config")

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
NO_DEFAULT = object()


def at_least(low: int) -> Callable[[Any], str | None]:
    def check(value: int) -> str | None:
        return None if value >= low else f"Value must be at least {low}"
    return check


def between(low: int, high: int) -> Callable[[Any], str | None]:
    def check(value: int) -> str | None:
        if value < low:
            return f"Value must be at least {low}"
        if value > high:
            return f"Value must be no more than {high}"
        return None
    return check


def one_of(*allowed: str, case_sensitive: bool = True) -> Callable[[Any], str | None]:
    def check(value: str) -> str | None:
        candidate = value if case_sensitive else value.lower()
        ok = candidate in allowed if case_sensitive else candidate in {a.lower() for a in allowed}
        return None if ok else f"String must be one of: {', '.join(allowed)}"
    return check


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str  # boolean, int, long, double, string, list, class, password
    default: Any = NO_DEFAULT
    validator: Callable[[Any], str | None] | None = None


def _keys(*keys: ConfigKey) -> dict[str, ConfigKey]:
    return {k.name: k for k in keys}


DEFAULT_PARTITIONER = "org.apache.kafka.clients.producer.internals.DefaultPartitioner"

# Kafka 2.8's ProducerConfig (CommonClientConfigs included), in its defaults.
PRODUCER_CONFIG = _keys(
    ConfigKey("bootstrap.servers", "list", []),
    ConfigKey("client.dns.lookup", "string", "use_all_dns_ips",
              one_of("default", "use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
    ConfigKey("buffer.memory", "long", 33554432, at_least(0)),
    ConfigKey("retries", "int", INT_MAX, between(0, INT_MAX)),
    ConfigKey("acks", "string", "1", one_of("all", "-1", "0", "1")),
    ConfigKey("compression.type", "string", "none", one_of("none", "gzip", "snappy", "lz4", "zstd")),
    ConfigKey("batch.size", "int", 16384, at_least(0)),
    ConfigKey("linger.ms", "long", 0, at_least(0)),
    ConfigKey("delivery.timeout.ms", "int", 120000, at_least(0)),
    ConfigKey("client.id", "string", ""),
    ConfigKey("send.buffer.bytes", "int", 131072, at_least(-1)),
    ConfigKey("receive.buffer.bytes", "int", 32768, at_least(-1)),
    ConfigKey("max.request.size", "int", 1048576, at_least(0)),
    ConfigKey("reconnect.backoff.ms", "long", 50, at_least(0)),
    ConfigKey("reconnect.backoff.max.ms", "long", 1000, at_least(0)),
    ConfigKey("retry.backoff.ms", "long", 100, at_least(0)),
    ConfigKey("max.block.ms", "long", 60000, at_least(0)),
    ConfigKey("request.timeout.ms", "int", 30000, at_least(0)),
    ConfigKey("metadata.max.age.ms", "long", 300000, at_least(0)),
    ConfigKey("metadata.max.idle.ms", "long", 300000, at_least(5000)),
    ConfigKey("metrics.sample.window.ms", "long", 30000, at_least(0)),
    ConfigKey("metrics.num.samples", "int", 2, at_least(1)),
    ConfigKey("metrics.recording.level", "string", "INFO", one_of("INFO", "DEBUG", "TRACE")),
    ConfigKey("metric.reporters", "list", []),
    ConfigKey("max.in.flight.requests.per.connection", "int", 5, at_least(1)),
    ConfigKey("key.serializer", "class", "bytes"),
    ConfigKey("value.serializer", "class", "bytes"),
    ConfigKey("socket.connection.setup.timeout.ms", "long", 10000, at_least(0)),
    ConfigKey("socket.connection.setup.timeout.max.ms", "long", 127000, at_least(0)),
    ConfigKey("connections.max.idle.ms", "long", 540000),
    ConfigKey("partitioner.class", "class", DEFAULT_PARTITIONER),
    ConfigKey("interceptor.classes", "list", []),
    ConfigKey("security.protocol", "string", "PLAINTEXT",
              one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", case_sensitive=False)),
    ConfigKey("security.providers", "string", None),
    ConfigKey("enable.idempotence", "boolean", False),
    ConfigKey("transaction.timeout.ms", "int", 60000),
    ConfigKey("transactional.id", "string", None),
)


def _invalid(key: ConfigKey, value: Any, reason: str) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {key.name}: {reason}")


def _user_value(key: ConfigKey, value: Any) -> Any:
    """A user's value parsed; None only where None is the default (Java: "Value must be non-null")."""
    if value is None and key.default is not None:
        raise _invalid(key, "null", "Value must be non-null")
    return parse_value(key, value)


def parse_value(key: ConfigKey, value: Any) -> Any:
    """One value to its Python type, as Java's ConfigDef.parseType does (strings are trimmed)."""
    if value is None:
        return None
    t = key.type
    if t == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _invalid(key, value, "Expected value to be either true or false")
    if t in ("int", "long"):
        if isinstance(value, bool):
            raise _invalid(key, value, f"Not a number of type {t.upper()}")
        if isinstance(value, int):
            parsed = value
        else:
            try:
                parsed = int(str(value).strip())
            except ValueError:
                raise _invalid(key, value, f"Not a number of type {t.upper()}") from None
        limit = INT_MAX if t == "int" else LONG_MAX
        if not -limit - 1 <= parsed <= limit:
            raise _invalid(key, value, f"Not a number of type {t.upper()}")
        return parsed
    if t == "double":
        try:
            return float(str(value).strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise _invalid(key, value, "Not a number of type DOUBLE") from None
    if t in ("string", "password"):
        if isinstance(value, str):
            return value.strip()
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # acks=1 and the like, as a Python user writes them
        raise _invalid(key, value, f"Expected value to be a string, but it was a {type(value).__name__}")
    if t == "list":
        if isinstance(value, str):
            text = value.strip()
            return [] if not text else [part.strip() for part in text.split(",")]
        if isinstance(value, (list, tuple)):
            return list(value)
        return [value]
    if t == "class":
        return value.strip() if isinstance(value, str) else value
    raise AssertionError(f"unknown config type {t}")


def producer_config(user: Mapping[str, Any] | None) -> dict[str, Any]:
    """Kafka's defaults overlaid with `user`, parsed and validated; raises ConfigError."""
    user = dict(user or {})
    out: dict[str, Any] = {}
    for name, key in PRODUCER_CONFIG.items():
        if name in user:
            value = _user_value(key, user[name])
        elif key.default is NO_DEFAULT:
            raise ConfigError(f'Missing required configuration "{name}" which has no default value.')
        else:
            value = key.default
        if value is not None and key.validator is not None:
            reason = key.validator(value)
            if reason is not None:
                raise _invalid(key, user.get(name, value), reason)
        out[name] = value
    for name in user:
        if name not in PRODUCER_CONFIG:
            out[name] = user[name]
            log.warning("The configuration '%s' was supplied but isn't a known config.", name)
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
    if config["enable.idempotence"]:
        _check_idempotence(config, user)
    if config["transactional.id"] is not None:
        raise UnsupportedFeatureError(
            "transactional.id is not supported yet: transactions need InitProducerId and the transaction "
            "coordinator, which the broker does not serve.")
    if config["security.protocol"].upper() != "PLAINTEXT":
        raise UnsupportedFeatureError(f"security.protocol={config['security.protocol']} is not supported yet: "
                                      "this client speaks PLAINTEXT only.")
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


__all__ = ["ConfigKey", "DEFAULT_PARTITIONER", "PRODUCER_CONFIG", "parse_value", "producer_config"]


# -- consumer -------------------------------------------------------------------------------

# Kafka 2.8's ConsumerConfig (CommonClientConfigs included), in its defaults.
CONSUMER_CONFIG = _keys(
    ConfigKey("bootstrap.servers", "list", []),
    ConfigKey("client.dns.lookup", "string", "use_all_dns_ips",
              one_of("default", "use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
    ConfigKey("group.id", "string", None),
    ConfigKey("group.instance.id", "string", None),
    ConfigKey("session.timeout.ms", "int", 10000),
    ConfigKey("heartbeat.interval.ms", "int", 3000),
    ConfigKey("partition.assignment.strategy", "list",
              ["org.apache.kafka.clients.consumer.RangeAssignor"]),
    ConfigKey("metadata.max.age.ms", "long", 300000, at_least(0)),
    ConfigKey("enable.auto.commit", "boolean", True),
    ConfigKey("auto.commit.interval.ms", "int", 5000, at_least(0)),
    ConfigKey("client.id", "string", ""),
    ConfigKey("client.rack", "string", ""),
    ConfigKey("max.partition.fetch.bytes", "int", 1048576, at_least(0)),
    ConfigKey("send.buffer.bytes", "int", 131072, at_least(-1)),
    ConfigKey("receive.buffer.bytes", "int", 65536, at_least(-1)),
    ConfigKey("fetch.min.bytes", "int", 1, at_least(0)),
    ConfigKey("fetch.max.bytes", "int", 52428800, at_least(0)),
    ConfigKey("fetch.max.wait.ms", "int", 500, at_least(0)),
    ConfigKey("reconnect.backoff.ms", "long", 50, at_least(0)),
    ConfigKey("reconnect.backoff.max.ms", "long", 1000, at_least(0)),
    ConfigKey("retry.backoff.ms", "long", 100, at_least(0)),
    ConfigKey("auto.offset.reset", "string", "latest", one_of("latest", "earliest", "none")),
    ConfigKey("check.crcs", "boolean", True),
    ConfigKey("metrics.sample.window.ms", "long", 30000, at_least(0)),
    ConfigKey("metrics.num.samples", "int", 2, at_least(1)),
    ConfigKey("metrics.recording.level", "string", "INFO", one_of("INFO", "DEBUG", "TRACE")),
    ConfigKey("metric.reporters", "list", []),
    ConfigKey("key.deserializer", "class", "bytes"),
    ConfigKey("value.deserializer", "class", "bytes"),
    ConfigKey("request.timeout.ms", "int", 30000, at_least(0)),
    ConfigKey("default.api.timeout.ms", "int", 60000, at_least(0)),
    ConfigKey("socket.connection.setup.timeout.ms", "long", 10000, at_least(0)),
    ConfigKey("socket.connection.setup.timeout.max.ms", "long", 127000, at_least(0)),
    ConfigKey("connections.max.idle.ms", "long", 540000),
    ConfigKey("interceptor.classes", "list", []),
    ConfigKey("max.poll.records", "int", 500, at_least(1)),
    ConfigKey("max.poll.interval.ms", "int", 300000, at_least(1)),
    ConfigKey("exclude.internal.topics", "boolean", True),
    ConfigKey("internal.leave.group.on.close", "boolean", True),
    ConfigKey("isolation.level", "string", "read_uncommitted",
              one_of("read_committed", "read_uncommitted", case_sensitive=False)),
    ConfigKey("allow.auto.create.topics", "boolean", True),
    ConfigKey("security.protocol", "string", "PLAINTEXT",
              one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", case_sensitive=False)),
    ConfigKey("security.providers", "string", None),
)


def consumer_config(user: Mapping[str, Any] | None) -> dict[str, Any]:
    """Kafka's consumer defaults overlaid with `user`, parsed and validated; raises ConfigError."""
    user = dict(user or {})
    out: dict[str, Any] = {}
    for name, key in CONSUMER_CONFIG.items():
        value = _user_value(key, user[name]) if name in user else key.default
        if value is not None and key.validator is not None:
            reason = key.validator(value)
            if reason is not None:
                raise _invalid(key, user.get(name, value), reason)
        out[name] = value
    for name in user:
        if name not in CONSUMER_CONFIG:
            out[name] = user[name]
            log.warning("The configuration '%s' was supplied but isn't a known config.", name)
    if out["security.protocol"].upper() != "PLAINTEXT":
        raise UnsupportedFeatureError(f"security.protocol={out['security.protocol']} is not supported yet: "
                                      "this client speaks PLAINTEXT only.")
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
