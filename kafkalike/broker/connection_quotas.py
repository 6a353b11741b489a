"""How many connections the broker takes: Kafka's ConnectionQuotas, for counts.

max.connections.per.ip (and its per-address exceptions, max.connections.per.ip.overrides)
refuses a new connection from an address that already has its maximum, across every
listener: the connection is closed at once and the refusal logged, as Kafka's Acceptor
does. max.connections caps the broker's connections in all: at the cap, the listeners stop
accepting (new connections wait in the kernel's backlog, as Kafka's acceptor waits for a
slot) until one closes. The inter-broker listener is protected, as in Kafka: its
connections count, but it never stops accepting, so a broker full of clients still hears
its controller and followers. Both keys are read at every connection, so a dynamic change
(kafka-configs --entity-type brokers) applies to the next one.

Not here: the connection creation rates (max.connection.creation.rate and the IP quota
connection_creation_rate), which kafka-configs stores but nothing enforces (docs/operations.md).
"""
from __future__ import annotations

import ipaddress
import logging
import socket
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkalike.broker.config import KafkaConfig

log = logging.getLogger("kafka.network.Acceptor")


class ConnectionQuotas:
    def __init__(self, config: KafkaConfig, inter_broker_listener: str) -> None:
        self.config = config
        self.inter_broker_listener = inter_broker_listener
        self.by_ip: Counter[str] = Counter()
        self.total = 0
        self._ports: dict[str, object] = {}      # listener name -> its listening port
        self._paused: set[str] = set()
        self._overrides: tuple[str, dict[str, int]] = ("", {})

    def add_port(self, listener: str, port) -> None:
        self._ports[listener] = port
        self._update_accepting()

    def remove_port(self, listener: str) -> None:
        self._ports.pop(listener, None)
        self._paused.discard(listener)

    def admit(self, ip: str) -> bool:
        """Count a new connection from `ip`; False (and logged) if the address has its maximum."""
        limit = self._limit_for(ip)
        if self.by_ip[ip] >= limit:
            log.info("Rejected connection from /%s, address already has the configured maximum of %d connections.",
                     ip, limit)
            return False
        self.by_ip[ip] += 1
        self.total += 1
        self._update_accepting()
        return True

    def closed(self, ip: str) -> None:
        if self.by_ip[ip] > 0:
            self.by_ip[ip] -= 1
            if not self.by_ip[ip]:
                del self.by_ip[ip]
            self.total -= 1
        self._update_accepting()

    def _limit_for(self, ip: str) -> int:
        return self._override_map().get(ip, self.config.get("max.connections.per.ip"))

    def _override_map(self) -> dict[str, int]:
        """The overrides by address; host names are resolved once per value of the key
        (at start-up, or when it is changed), as Kafka resolves them when it reads it."""
        raw = self.config.get("max.connections.per.ip.overrides") or ""
        if raw != self._overrides[0]:
            resolved: dict[str, int] = {}
            for host, count in self.config.max_connections_per_ip_overrides.items():
                try:
                    resolved[str(ipaddress.ip_address(host))] = count
                except ValueError:
                    try:
                        resolved[socket.gethostbyname(host)] = count
                    except OSError:
                        log.warning("max.connections.per.ip.overrides names %s, which does not resolve", host)
            self._overrides = (raw, resolved)
        return self._overrides[1]

    def _update_accepting(self) -> None:
        full = self.total >= self.config.get("max.connections")
        for name, port in self._ports.items():
            if name == self.inter_broker_listener:
                continue
            if full and name not in self._paused:
                port.stopReading()
                self._paused.add(name)
            elif not full and name in self._paused:
                port.startReading()
                self._paused.discard(name)
