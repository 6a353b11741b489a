"""How many connections the broker takes, and how fast: Kafka's ConnectionQuotas.

Counts. max.connections.per.ip (and its per-address exceptions,
max.connections.per.ip.overrides) refuses a new connection from an address that already
has its maximum, across every listener: the connection is closed unread and the refusal
logged, as Kafka's Acceptor does. max.connections caps the broker's connections in all,
and listener.name.<l>.max.connections one listener's (it defaults to the broker's value,
as Kafka reads it with the listener's prefix): at a cap the listener stops accepting, and
new connections wait in the kernel's backlog until one closes, as Kafka's acceptor waits
for a slot. The inter-broker listener is protected from the broker-wide cap when there is
another listener, so a broker full of clients still hears its controller and followers.

Rates (KIP-612). max.connection.creation.rate (broker-wide; the inter-broker listener is
exempt) and listener.name.<l>.max.connection.creation.rate are measured as Kafka's quota
sensors measure (quota.window.num windows of quota.window.size.seconds): a connection
that takes a rate over its bound waits, unread, for (rate - bound) / bound x the window
(at most one window), and its listener accepts nothing meanwhile, which is how Kafka's
acceptor throttles. The per-address quota connection_creation_rate (kafka-configs
--entity-type ips, /config/ips/<ip> or <default>) does not delay: a connection over it
is not counted, held unread for the throttle time and then closed, as Kafka's acceptor
closes throttled sockets late so that a client's reconnects slow down.

Twisted's port accepts a burst of connections in one read, so some arrive while their
listener is held back; they wait here, unread and in order, until a slot is free, as they
would have waited in the backlog. Every key is read when a connection arrives, and a
dynamic change (kafka-configs --entity-type brokers) lets waiting connections in at once.

When max.connections is lowered below the connections open, the least recently active
ones on unprotected listeners are closed until the count fits, as Kafka's processors do.
"""
from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections import Counter, deque
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from kafkalike.broker.client_quotas import INT_MAX, QuotaRate, ThrottleAvg, throttle_time_ms
from kafkalike.broker.security.listener import ListenerConfig
from kafkalike.metrics.core import Kind, MetricName, Reading

if TYPE_CHECKING:
    from kafkalike.broker.config import KafkaConfig

log = logging.getLogger("kafka.network.Acceptor")
quota_log = logging.getLogger("kafka.network.ConnectionQuotas")

IP_DEFAULT = None          # the <default> entity of the IP quotas


class Admittee(Protocol):
    """A new connection as the quotas see it (KafkaConnection): it can wait unread, be
    served, or be closed."""

    ip: str
    listener_name: str
    last_active: float       # monotonic time of its last request or answer

    def hold(self) -> None: ...

    def serve(self) -> None: ...

    def close(self) -> None: ...


class ConnectionQuotas:
    def __init__(self, config: KafkaConfig, inter_broker_listener: str, reactor=None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.inter_broker_listener = inter_broker_listener
        self.reactor = reactor
        self.clock = clock
        self.by_ip: Counter[str] = Counter()
        self.by_listener: Counter[str] = Counter()
        self._ports: dict[str, object] = {}      # listener name -> its listening port
        self._paused: set[str] = set()
        self._counted: set[Admittee] = set()
        self._waiting: dict[str, deque[tuple[Admittee, bool]]] = {}    # (connection, its rates recorded)
        self._delayed: dict[str, Admittee] = {}    # listener -> the connection waiting out its throttle
        self._gone: set[Admittee] = set()          # delayed connections closed while they waited
        self._overrides: tuple[str, dict[str, int]] = ("", {})
        self._broker_rate = self._new_rate()
        self._listener_rates: dict[str, QuotaRate] = {}
        self._ip_rates: dict[str, QuotaRate] = {}
        self._ip_rate_quotas: dict[str, int] = {}
        self._default_ip_rate_quota = INT_MAX
        # The throttle-time sensors of Kafka's ListenerConnectionQuota: listener (or broker)
        # rate delays, and IP rate throttles, per listener.
        self._listener_throttles: dict[str, ThrottleAvg] = {}
        self._ip_throttles: dict[str, ThrottleAvg] = {}

    @property
    def total(self) -> int:
        """The broker's connections in all: those admitted and not yet closed."""
        return len(self._counted)

    # -- listeners ---------------------------------------------------------------------

    def add_port(self, listener: str, port) -> None:
        self._ports[listener] = port
        self._waiting.setdefault(listener, deque())
        self._update_accepting()

    def remove_port(self, listener: str) -> None:
        """The listener stops (removed live, or the broker stopping): left alone from now on;
        the connections waiting on it are closed with it."""
        self._ports.pop(listener, None)
        self._paused.discard(listener)
        for conn, _ in self._waiting.pop(listener, ()):
            conn.close()

    # -- connections -------------------------------------------------------------------

    def accepted(self, conn: Admittee) -> None:
        """A connection the listener has just accepted: served now, later, or closed."""
        listener = conn.listener_name
        queue = self._waiting.setdefault(listener, deque())
        if queue or not self._may_admit(listener):
            conn.hold()
            queue.append((conn, False))
            self._update_accepting()
            return
        self._admit(conn, rates_recorded=False)

    def closed(self, conn: Admittee) -> None:
        """The connection is gone, whatever state it was in; a slot may have been freed."""
        if conn in self._counted:
            self._counted.discard(conn)
            ip, listener = conn.ip, conn.listener_name
            self.by_ip[ip] -= 1
            if not self.by_ip[ip]:
                del self.by_ip[ip]
            self.by_listener[listener] -= 1
        elif self._delayed.get(conn.listener_name) is conn:
            self._gone.add(conn)         # its listener still waits out the throttle, as Kafka's acceptor
        else:
            queue = self._waiting.get(conn.listener_name)
            if queue:
                for entry in list(queue):
                    if entry[0] is conn:
                        queue.remove(entry)
        self._let_waiting_in()

    def reconfigured(self, _changed: object = None) -> None:
        """Caps changed (a dynamic config): over a lowered max.connections the least recently
        active connections close, as Kafka's processors close their selector's LRU one
        (only with connections.max.idle.ms on, as there); below a raised one, waiting
        connections come in."""
        excess = self.total - self.config.get("max.connections")
        if excess > 0 and self.config.get("connections.max.idle.ms") >= 0:
            unprotected = (c for c in self._counted if not self._protected(c.listener_name))
            for conn in sorted(unprotected, key=lambda c: c.last_active)[:excess]:
                log.debug("Closing connection from /%s: the broker is over max.connections", conn.ip)
                conn.close()
        self._let_waiting_in()

    def _let_waiting_in(self) -> None:
        for listener in list(self._waiting):
            self._drain(listener)
        self._update_accepting()

    def _drain(self, listener: str) -> None:
        queue = self._waiting.get(listener)
        while queue and self._may_admit(listener):
            conn, rates_recorded = queue.popleft()
            self._admit(conn, rates_recorded)

    def _admit(self, conn: Admittee, rates_recorded: bool) -> None:
        listener = conn.listener_name
        if not rates_recorded:
            delay_ms = self._record_rates(listener)
            if delay_ms > 0:
                self._throttled(self._listener_throttles, listener, delay_ms)
                conn.hold()
                self._delayed[listener] = conn
                self._later(delay_ms, self._end_delay, conn)
                self._update_accepting()
                return
        self._let_in(conn)

    def _end_delay(self, conn: Admittee) -> None:
        listener = conn.listener_name
        if self._delayed.get(listener) is conn:
            del self._delayed[listener]
        if conn in self._gone:
            self._gone.discard(conn)
        elif listener not in self._ports:
            conn.close()
        else:
            queue = self._waiting.setdefault(listener, deque())
            if self._may_admit(listener):
                self._let_in(conn)
            else:
                queue.appendleft((conn, True))     # waited out its throttle; now waits for a slot
        self._drain(listener)
        self._update_accepting()

    def _let_in(self, conn: Admittee) -> None:
        ip, listener = conn.ip, conn.listener_name
        throttle_ms = self._record_ip_rate(ip, listener)
        if throttle_ms > 0:
            self._throttled(self._ip_throttles, listener, throttle_ms)
            log.debug("Delaying closing of connection from /%s for %d ms", ip, throttle_ms)
            conn.hold()
            self._later(throttle_ms, conn.close)
            return
        limit = self._limit_for(ip)
        if self.by_ip[ip] >= limit:
            log.info("Rejected connection from /%s, address already has the configured maximum of %d connections.",
                     ip, limit)
            conn.close()
            return
        self._counted.add(conn)
        self.by_ip[ip] += 1
        self.by_listener[listener] += 1
        conn.serve()
        self._update_accepting()

    # -- caps ----------------------------------------------------------------------------

    def _may_admit(self, listener: str) -> bool:
        return listener not in self._delayed and self._slot_available(listener)

    def _slot_available(self, listener: str) -> bool:
        if self.by_listener[listener] >= self._listener_config(listener, "max.connections"):
            return False
        return self._protected(listener) or self.total < self.config.get("max.connections")

    def _protected(self, listener: str) -> bool:
        return listener == self.inter_broker_listener and len(self._ports) > 1

    def _listener_config(self, listener: str, name: str) -> int:
        return ListenerConfig(self.config, listener).get(name)

    def _limit_for(self, ip: str) -> int:
        return self._override_map().get(ip, self.config.get("max.connections.per.ip"))

    def _override_map(self) -> dict[str, int]:
        """The overrides by address; host names are resolved once per value of the key
        (at start-up, or when it is changed), as Kafka resolves them when it reads it."""
        raw = self.config.get("max.connections.per.ip.overrides") or ""
        if raw != self._overrides[0]:
            resolved: dict[str, int] = {}
            for host, count in self.config.max_connections_per_ip_overrides.items():
                address = resolve(host)
                if address is None:
                    log.warning("max.connections.per.ip.overrides names %s, which does not resolve", host)
                else:
                    resolved[address] = count
            self._overrides = (raw, resolved)
        return self._overrides[1]

    def _update_accepting(self) -> None:
        for name, port in self._ports.items():
            held = bool(self._waiting.get(name)) or not self._may_admit(name)
            if held and name not in self._paused:
                port.stopReading()
                self._paused.add(name)
            elif not held and name in self._paused:
                port.startReading()
                self._paused.discard(name)

    # -- rates ---------------------------------------------------------------------------

    def _new_rate(self) -> QuotaRate:
        return QuotaRate(self.config.get("quota.window.num"), self.config.get("quota.window.size.seconds") * 1000.0)

    def _max_throttle_ms(self) -> float:
        return self.config.get("quota.window.size.seconds") * 1000.0

    def _record_rates(self, listener: str) -> int:
        """Count a connection on the broker's rate (unless the listener is protected) and
        its listener's; the longer of their throttles, in ms."""
        now_ms = self.clock() * 1000.0
        throttle = 0
        if not self._protected(listener):
            throttle = self._record(self._broker_rate, self.config.get("max.connection.creation.rate"), now_ms)
        rate = self._listener_rates.get(listener)
        if rate is None:
            rate = self._listener_rates[listener] = self._new_rate()
        return max(throttle, self._record(rate, self._listener_config(listener, "max.connection.creation.rate"),
                                          now_ms))

    def _record_ip_rate(self, ip: str, listener: str) -> int:
        """Count a connection on its address's rate, if the address has a quota; a
        connection it throttles is taken back from every rate (it will not be served)."""
        bound = self.ip_connection_rate(ip)
        if bound == INT_MAX:
            return 0
        now_ms = self.clock() * 1000.0
        rate = self._ip_rates.get(ip)
        if rate is None:
            rate = self._ip_rates[ip] = self._new_rate()
        throttle = self._record(rate, bound, now_ms)
        if throttle > 0:
            rate.record(-1.0, now_ms)
            if not self._protected(listener):
                self._broker_rate.record(-1.0, now_ms)
            self._listener_rates[listener].record(-1.0, now_ms)
        return throttle

    def _record(self, rate: QuotaRate, bound: int, now_ms: float) -> int:
        rate.record(1.0, now_ms)
        if bound >= INT_MAX:
            return 0
        return throttle_time_ms(rate, bound, now_ms, self._max_throttle_ms())

    def ip_connection_rate(self, ip: str) -> int:
        """The connection_creation_rate quota of an address (INT_MAX: none)."""
        return self._ip_rate_quotas.get(ip, self._default_ip_rate_quota)

    def set_ip_connection_rate(self, ip: str | None, quota: int | None) -> None:
        """An IP quota set or removed (None); ip IP_DEFAULT is the <default> entity."""
        if ip is IP_DEFAULT:
            self._default_ip_rate_quota = INT_MAX if quota is None else quota
            quota_log.info("Updated default max IP connection rate to %d", self._default_ip_rate_quota)
        elif quota is None:
            quota_log.info("Removing max connection rate override for /%s", ip)
            self._ip_rate_quotas.pop(ip, None)
        else:
            quota_log.info("Updating max connection rate override for /%s to %d", ip, quota)
            self._ip_rate_quotas[ip] = quota

    def expire(self) -> None:
        """Forget the rates of addresses with nothing left in their windows."""
        now_ms = self.clock() * 1000.0
        for ip in [ip for ip, rate in self._ip_rates.items() if rate.measure(now_ms) == 0]:
            del self._ip_rates[ip]

    def _throttled(self, sensors: dict[str, ThrottleAvg], listener: str, throttle_ms: int) -> None:
        sensor = sensors.get(listener)
        if sensor is None:
            sensor = sensors[listener] = ThrottleAvg()
        sensor.record(throttle_ms, self.clock() * 1000.0)

    def readings(self) -> Iterator[Reading]:
        """Kafka's socket-server-metrics: each listener's connection count (its one network
        processor's), the rate it accepts connections at and the average throttle its rate
        and its addresses' rates gave; the broker-wide accept rate."""
        now_ms = self.clock() * 1000.0
        for listener in self._ports:
            tags = (("listener", listener),)
            yield _socket_metric("connection-count", self.by_listener[listener], tags + (("networkProcessor", "0"),))
            rate = self._listener_rates.get(listener)
            yield _socket_metric("connection-accept-rate", rate.measure(now_ms) if rate else 0.0, tags)
            for attribute, sensors in (("connection-accept-throttle-time", self._listener_throttles),
                                       ("ip-connection-accept-throttle-time", self._ip_throttles)):
                sensor = sensors.get(listener)
                yield _socket_metric(attribute, sensor.measure(now_ms) if sensor else float("nan"), tags)
        yield _socket_metric("broker-connection-accept-rate", self._broker_rate.measure(now_ms), ())

    def _later(self, delay_ms: int, call: Callable, *args) -> None:
        if self.reactor is None:
            from twisted.internet import reactor as default_reactor
            self.reactor = default_reactor
        self.reactor.callLater(delay_ms / 1000.0, call, *args)


def _socket_metric(attribute: str, value: float, tags: tuple) -> Reading:
    return Reading(MetricName("kafka.server", "socket-server-metrics", attribute, tags), Kind.GAUGE, value)


def resolve(host: str) -> str | None:
    """An address as the quotas key it: an IP literal normalised, or a host name resolved."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        try:
            return socket.gethostbyname(host)
        except OSError:
            return None
