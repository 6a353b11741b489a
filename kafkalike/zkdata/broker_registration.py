"""/brokers/ids/N: a live broker's advertised endpoints, rack and features.

The znode is ephemeral, so it exists exactly as long as the broker's ZooKeeper session,
and its czxid is the broker epoch (KIP-380). Clients never read it, but other brokers,
the controller and Kafka's own tools do, so the JSON follows Kafka 2.8 to the byte:
version 5 when inter.broker.protocol.version >= 2.7, 4 from 0.10.0, 2 below that.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from .kafka_json import (
    ZNodeDecodeError,
    decode_json_object,
    encode_json,
    java_hash_map_order,
    ordered,
    scala_immutable_map_order,
    scala_mutable_map_order,
)

BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
CURRENT_BROKER_REGISTRATION_VERSION = 5

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# listener://host:port, with an optional [IPv6] host and an empty host meaning "all".
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


@dataclass(frozen=True)
class EndPoint:
    """One advertised listener: what a client or another broker connects to."""

    listener_name: str
    host: str | None
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        """LISTENER://host:port as it appears in the endpoints list; IPv6 hosts bracketed."""
        if self.host is None:
            address = f":{self.port}"
        elif ":" in self.host:
            address = f"[{self.host}]:{self.port}"
        else:
            address = f"{self.host}:{self.port}"
        return f"{self.listener_name}://{address}"

    @classmethod
    def parse(cls, text: str, protocol_map: Mapping[str, str] | None = None) -> EndPoint:
        """Parse LISTENER://host:port; the protocol comes from the map, else the listener name.

        Listener names are case-insensitive and kept upper-case, as Kafka normalises them.
        """
        match = _ENDPOINT.match(text)
        if match is None:
            raise ValueError(f"unable to parse {text!r} to a broker endpoint")
        listener = match.group(1).upper()
        if protocol_map and listener in protocol_map:
            protocol = protocol_map[listener]
        elif listener in SECURITY_PROTOCOLS:
            protocol = listener
        else:
            raise ValueError(f"no security protocol for listener {listener} in {text!r}")
        host = match.group(2) or None
        return cls(listener, host, int(match.group(3)), protocol)


@dataclass(frozen=True)
class SupportedFeature:
    """A feature version range a broker supports (KIP-584); Kafka 2.8 brokers list none."""

    min_version: int
    max_version: int


@dataclass(frozen=True)
class BrokerRegistration:
    """The value of /brokers/ids/<id>.

    timestamp is milliseconds since the epoch; None means "stamp it when encoding", which
    is what Kafka does (it writes the time of each registration, not of startup).
    """

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp: int | None = None
    features: Mapping[str, SupportedFeature] = field(default_factory=dict, hash=False)
    version: int = CURRENT_BROKER_REGISTRATION_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "endpoints", tuple(self.endpoints))

    @property
    def path(self) -> str:
        return BrokerIdZNode.path(self.id)

    @property
    def plaintext_endpoint(self) -> EndPoint | None:
        """The first PLAINTEXT endpoint, which fills the legacy top-level host and port."""
        return next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)

    @property
    def host(self) -> str | None:
        endpoint = self.plaintext_endpoint
        return endpoint.host if endpoint else None

    @property
    def port(self) -> int:
        endpoint = self.plaintext_endpoint
        return endpoint.port if endpoint else -1

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        return {e.listener_name: e.security_protocol for e in self.endpoints}

    def endpoint(self, listener_name: str) -> EndPoint | None:
        return next((e for e in self.endpoints if e.listener_name == listener_name.upper()), None)


class BrokerIdZNode:
    """Codec for /brokers/ids/<id>."""

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BROKER_IDS_PATH}/{broker_id}"

    @staticmethod
    def encode(registration: BrokerRegistration) -> bytes:
        version = registration.version
        if version not in (2, 3, 4, 5):
            raise ValueError(f"cannot write broker registration version {version}")
        timestamp = registration.timestamp if registration.timestamp is not None else int(time.time() * 1000)
        value: dict[str, Any] = {
            "version": version,
            "host": registration.host,
            "port": registration.port,
            "endpoints": [e.connection_string for e in registration.endpoints],
            "jmx_port": registration.jmx_port,
            "timestamp": str(timestamp),
        }
        if registration.rack is not None and version >= 3:
            value["rack"] = registration.rack
        if version >= 4:
            protocols = registration.listener_security_protocol_map
            value["listener_security_protocol_map"] = ordered(protocols, scala_immutable_map_order(list(protocols)))
        if version >= 5:
            value["features"] = _encode_features(registration.features)
        return encode_json(ordered(value, scala_mutable_map_order(list(value), built_from=6)))

    @staticmethod
    def decode(broker_id: int, data: bytes) -> BrokerRegistration:
        """Read any registration version Kafka ever wrote (1 to 5)."""
        value = decode_json_object(data, f"/brokers/ids/{broker_id}")
        version = value.get("version")
        if not isinstance(version, int) or version < 1:
            raise ZNodeDecodeError(f"unsupported registration version for broker {broker_id}: {data!r}")
        try:
            jmx_port = int(value.get("jmx_port", -1))
            if version == 1:
                endpoints: list[EndPoint] = [EndPoint("PLAINTEXT", value["host"], int(value["port"]), "PLAINTEXT")]
            else:
                protocols = value.get("listener_security_protocol_map") or {}
                endpoints = [EndPoint.parse(text, protocols) for text in value["endpoints"]]
            timestamp = value.get("timestamp")
            features = {
                name: SupportedFeature(int(r["min_version"]), int(r["max_version"]))
                for name, r in (value.get("features") or {}).items()
            }
        except (KeyError, TypeError, ValueError) as error:
            raise ZNodeDecodeError(f"bad registration for broker {broker_id}: {data!r}") from error
        return BrokerRegistration(
            id=broker_id,
            endpoints=tuple(endpoints),
            rack=value.get("rack"),
            jmx_port=jmx_port,
            timestamp=int(timestamp) if timestamp is not None else None,
            features=features,
            version=version,
        )


def _encode_features(features: Mapping[str, SupportedFeature]) -> dict[str, Any]:
    ranges = {
        name: ordered(
            {"min_version": r.min_version, "max_version": r.max_version},
            java_hash_map_order(["min_version", "max_version"]),
        )
        for name, r in features.items()
    }
    return ordered(ranges, java_hash_map_order(list(ranges)))

