"""Each listener's security, resolved from the broker's config as Kafka's ChannelBuilders do.

A key can be given for one listener with Kafka's prefix, listener.name.<name>.<key>
(listener.name.sasl_ssl.ssl.keystore.location), which wins over the plain key; a JAAS
config also per mechanism (listener.name.<name>.<mechanism>.sasl.jaas.config). Everything
is built before the broker touches ZooKeeper: an unreadable keystore, a mechanism kafkalike
does not offer or a PLAIN listener without users stops start-up naming the key.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kafkalike.broker.config import BROKER_CONFIG, ConfigError, KafkaConfig
from kafkalike.broker.security.principal import SslPrincipalMapper
from kafkalike.broker.security.tls import ClientTLS, ServerTLS, build_context
from kafkalike.common.config_def import invalid
from kafkalike.common.jaas import LoginModule, parse_jaas_config, plain_users
from kafkalike.common.outbound import ClientSecurity

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SSL_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


class ListenerConfig:
    """Reads a key for one listener: the listener-prefixed value first, then the broker's."""

    def __init__(self, config: KafkaConfig, listener_name: str) -> None:
        self.config = config
        self.prefix = f"listener.name.{listener_name.lower()}."

    def __call__(self, name: str) -> Any:
        return self.get(name)

    def get(self, name: str) -> Any:
        prefixed = self.prefix + name
        if prefixed in self.config.originals:
            return BROKER_CONFIG[name].parse(self.config.originals[prefixed], prefixed)
        return self.config.get(name)

    def jaas(self, mechanism: str) -> tuple[str, LoginModule] | None:
        """(the key it came from, the login module) for a mechanism, or None."""
        for key in (f"{self.prefix}{mechanism.lower()}.sasl.jaas.config", f"{self.prefix}sasl.jaas.config",
                    "sasl.jaas.config"):
            raw = self.config.originals.get(key)
            if raw is None:
                continue
            text = getattr(raw, "value", raw)
            try:
                return key, parse_jaas_config(str(text))
            except ValueError as exc:
                raise invalid(key, "[hidden]", str(exc)) from None
        return None


@dataclass
class ListenerSecurity:
    name: str
    protocol: str
    tls: ServerTLS | None = None
    client_auth: str = "none"
    mechanisms: tuple[str, ...] = ()
    plain_users: dict[str, str] = field(default_factory=dict)
    reauth_ms: int = 0
    # KIP-368's listener.name.<listener>.<mechanism>.connections.max.reauth.ms, by mechanism
    mechanism_reauth_ms: dict[str, int] = field(default_factory=dict)
    failed_auth_delay_ms: int = 100
    principal_mapper: SslPrincipalMapper = field(default_factory=lambda: SslPrincipalMapper(None))
    # user -> Deferred[its SCRAM entries]: the server's credential cache (None: read ZooKeeper)
    credentials: Callable[[str], Any] | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    def reauth_ms_for(self, mechanism: str | None) -> int:
        """The session lifetime of a login with `mechanism` (0: sessions never end)."""
        return self.mechanism_reauth_ms.get(mechanism or "", self.reauth_ms)


def listener_security(config: KafkaConfig, name: str, protocol: str) -> ListenerSecurity:
    lc = ListenerConfig(config, name)
    sec = ListenerSecurity(name, protocol, reauth_ms=lc.get("connections.max.reauth.ms"),
                           failed_auth_delay_ms=config.get("connection.failed.authentication.delay.ms"))
    if protocol in SSL_PROTOCOLS:
        sec.client_auth = lc.get("ssl.client.auth")
        # Kafka: SASL_SSL authenticates with SASL, so a client certificate is asked for only
        # if ssl.client.auth is set for the listener itself.
        if protocol == "SASL_SSL" and lc.prefix + "ssl.client.auth" not in config.originals:
            sec.client_auth = "none"
        sec.tls = ServerTLS(build_context(lc, server=True, client_auth=sec.client_auth))
        rules = lc.get("ssl.principal.mapping.rules")
        try:
            sec.principal_mapper = SslPrincipalMapper(rules)
        except ValueError as exc:
            raise invalid("ssl.principal.mapping.rules", rules, str(exc)) from None
    if protocol in SASL_PROTOCOLS:
        mechanisms = tuple(lc.get("sasl.enabled.mechanisms") or ())
        key = lc.prefix + "sasl.enabled.mechanisms" if lc.prefix + "sasl.enabled.mechanisms" in config.originals \
            else "sasl.enabled.mechanisms"
        if not mechanisms:
            raise invalid(key, "", f"No SASL mechanism is enabled for listener {name}")
        for mechanism in mechanisms:
            if mechanism not in SUPPORTED_MECHANISMS:
                raise invalid(key, ",".join(mechanisms), f"SASL mechanism {mechanism} is not supported by "
                              f"kafkalike (supported: {', '.join(SUPPORTED_MECHANISMS)})")
        sec.mechanisms = mechanisms
        for mechanism in mechanisms:
            key = f"{lc.prefix}{mechanism.lower()}.connections.max.reauth.ms"
            if key in config.originals:
                sec.mechanism_reauth_ms[mechanism] = BROKER_CONFIG["connections.max.reauth.ms"].parse(
                    config.originals[key], key)
        if "PLAIN" in mechanisms:
            found = lc.jaas("PLAIN")
            if found is None:
                raise ConfigError(f"Could not find a JAAS configuration for SASL mechanism PLAIN on listener "
                                  f"{name}: set {lc.prefix}plain.sasl.jaas.config (or sasl.jaas.config) to "
                                  f"org.apache.kafka.common.security.plain.PlainLoginModule required "
                                  f"user_<name>=\"<password>\";")
            sec.plain_users = plain_users(found[1])
    return sec


def all_listener_security(config: KafkaConfig) -> dict[str, ListenerSecurity]:
    """Every listener's security, in the order of `listeners`; ConfigError names the bad key."""
    return {ep.listener_name: listener_security(config, ep.listener_name, ep.security_protocol)
            for ep in config.listeners}


def inter_broker_client_security(config: KafkaConfig) -> ClientSecurity:
    """How this broker connects to the others' inter-broker listener: the listener's own
    keystore and truststore, and for SASL the mechanism of
    sasl.mechanism.inter.broker.protocol with username/password from that mechanism's JAAS
    login module, as Kafka's inter-broker channel builder."""
    name = config.inter_broker_listener_name
    protocol = config.inter_broker_security_protocol
    lc = ListenerConfig(config, name)
    security = ClientSecurity(protocol)
    if protocol in SSL_PROTOCOLS:
        context = build_context(lc, server=False)
        verify_host = (lc.get("ssl.endpoint.identification.algorithm") or "").lower() == "https"
        security.tls = lambda host: ClientTLS(context, host, verify_host)
    if protocol in SASL_PROTOCOLS:
        mechanism = config.get("sasl.mechanism.inter.broker.protocol")
        if mechanism not in SUPPORTED_MECHANISMS:
            raise invalid("sasl.mechanism.inter.broker.protocol", mechanism,
                          f"SASL mechanism {mechanism} is not supported by kafkalike "
                          f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
        found = lc.jaas(mechanism)
        options = found[1].options if found else {}
        if "username" not in options or "password" not in options:
            raise ConfigError(f"The inter-broker listener {name} uses SASL mechanism {mechanism}: its JAAS "
                              f"configuration ({lc.prefix}{mechanism.lower()}.sasl.jaas.config) needs "
                              "username and password options for the broker's own login")
        security.mechanism = mechanism
        security.username, security.password = options["username"], options["password"]
    return security


__all__ = ["ListenerConfig", "ListenerSecurity", "SUPPORTED_MECHANISMS", "all_listener_security",
           "inter_broker_client_security", "listener_security"]
