"""The broker's listening side: one Twisted port per listener (Kafka's data-plane SocketServer).

It owns the listeners' ports, their security and the connection quotas they share, so the live changes of `listeners`
(Kafka's DynamicListenerConfig) happen in one place: listeners removed or moved stop and
close their connections, new ones open with their security. What the broker registers in
ZooKeeper comes from here too, because a listener on port 0 is only known once bound.
It also closes connections idle for connections.max.idle.ms (no request read and no answer
written), as Kafka's Selector does; clients connect again when they next need to.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

from twisted.internet import task
from twisted.internet.endpoints import TCP4ServerEndpoint

from kafkalike.broker.connection_quotas import ConnectionQuotas
from kafkalike.broker.network import listening_factory
from kafkalike.broker.config import ConfigError
from kafkalike.broker.security.listener import (ListenerSecurity, all_listener_security,
                                                inter_broker_client_security, listener_security)
from kafkalike.broker.security.store_updates import (LoadedStores, changed_keys, check_new_stores, listeners_named,
                                                      tls_listeners)
from kafkalike.common import outbound
from kafkalike.zkdata import EndPoint

if TYPE_CHECKING:
    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.registry import BrokerServices

log = logging.getLogger("kafka.network.SocketServer")
selector_log = logging.getLogger("org.apache.kafka.common.network.Selector")


class SocketServer:
    """Made first in start-up (a bad keystore or JAAS setting stops the broker naming its
    key, before anything else starts); listening only once the broker's services exist."""

    def __init__(self, config: KafkaConfig, reactor) -> None:
        self.config = config
        self.reactor = reactor
        self.security: dict[str, ListenerSecurity] = all_listener_security(config)   # raises ConfigError
        # What each TLS listener serves, to check a new keystore against (store_updates.py).
        self._stores: dict[str, LoadedStores] = {name: LoadedStores.read(config, name) for name in tls_listeners(config)}
        self.ports: list = []
        self.quotas = ConnectionQuotas(config, config.inter_broker_listener_name, reactor)
        self.advertised = config.advertised_listeners
        self._services: BrokerServices | None = None
        self._credentials: Callable | None = None
        self._housekeeping_loop: task.LoopingCall | None = None

    async def startup(self, services: BrokerServices, credentials: Callable) -> None:
        """Open every listener; SCRAM logins read `credentials` (the broker's cache)."""
        self._services, self._credentials = services, credentials
        self._attach_credentials()
        for ep in self.config.listeners:
            await self._open(ep)
        idle_ms = self.config.get("connections.max.idle.ms")
        self._housekeeping_loop = task.LoopingCall(self._housekeeping)
        self._housekeeping_loop.clock = self.reactor
        self._housekeeping_loop.start(min(max(idle_ms / 10_000, 0.1), 10.0) if idle_ms >= 0 else 10.0, now=False)

    def _housekeeping(self) -> None:
        self.close_idle_connections()
        self.quotas.expire()           # the rates of addresses gone quiet

    def close_idle_connections(self) -> None:
        idle_ms = self.config.get("connections.max.idle.ms")
        if idle_ms < 0:                # negative: never
            return
        now = time.monotonic()
        for port in self.ports:
            for conn in list(port.factory.connections):
                idle_for = (now - conn.last_active) * 1000
                if idle_for > idle_ms:
                    selector_log.debug("About to close the idle connection from %s due to being idle for "
                                       "%d millis", conn.connection_id, idle_for)
                    conn.close()

    def _attach_credentials(self) -> None:
        for security in self.security.values():
            security.credentials = self._credentials

    async def _open(self, ep) -> None:
        factory = listening_factory(self._services, self.config.get("socket.request.max.bytes"),
                                    self.security.get(ep.listener_name), ep.listener_name, self.reactor, self.quotas)
        factory.endpoint = ep
        port = await TCP4ServerEndpoint(self.reactor, ep.port, interface=ep.host or "").listen(factory)
        self.ports.append(port)
        self.quotas.add_port(ep.listener_name, port)
        log.info("Awaiting socket connections on %s:%d.", ep.host or "0.0.0.0", port.getHost().port)

    async def _close(self, port) -> None:
        self.ports.remove(port)
        self.quotas.remove_port(port.factory.listener_name)
        await port.stopListening()
        for conn in list(port.factory.connections):
            conn.transport.loseConnection()

    async def reconfigure(self) -> None:
        """DynamicListenerConfig.reconfigure: listeners removed from `listeners` (or moved
        to another address) stop and their connections close, new ones open with their
        security; the advertised endpoints follow the config."""
        wanted = {ep.listener_name: ep for ep in self.config.listeners}
        bound = {port.factory.listener_name: port for port in self.ports}
        removed = [port for name, port in bound.items()
                   if name not in wanted or (wanted[name].host, wanted[name].port) !=
                   (port.factory.endpoint.host, port.factory.endpoint.port)]
        if removed:
            log.info("Removing data-plane listeners for endpoints %s",
                     ",".join(p.factory.endpoint.connection_string for p in removed))
        for port in removed:
            await self._close(port)
        added = [ep for name, ep in wanted.items() if name not in bound or bound[name] in removed]
        if added:
            log.info("Adding data-plane listeners for endpoints %s", ",".join(e.connection_string for e in added))
            self.security = all_listener_security(self.config)
            self._stores = {name: LoadedStores.read(self.config, name) for name in tls_listeners(self.config)}
            self._attach_credentials()
        for ep in added:
            await self._open(ep)
        self.advertised = self.config.advertised_listeners

    # -- keystores and truststores updated live (security/store_updates.py) -----------------

    def validate_stores(self, current: KafkaConfig, proposed: KafkaConfig) -> None:
        """The DynamicBrokerConfig validator: new store keys are checked against what is served."""
        for name in listeners_named(changed_keys(current, proposed), proposed):
            if name in self._stores:
                check_new_stores(self._stores[name], proposed, name)

    def reload_stores(self, changed: set[str]) -> None:
        """After the change is applied: listeners given new store keys get new contexts."""
        for name in listeners_named(changed, self.config):
            self._reload(name)

    def reload_changed_files(self, proposed: KafkaConfig) -> None:
        """Store files replaced at the same path: checked (ConfigError refuses the AlterConfigs
        that asked) and reloaded, for listeners whose store keys the change leaves as they are."""
        renamed = listeners_named(changed_keys(self.config, proposed), proposed)
        for name, serving in self._stores.items():
            if name not in renamed and serving.files_changed(proposed, name):
                check_new_stores(serving, proposed, name)
                self._reload(name)

    def _reload(self, name: str) -> None:
        security = self.security.get(name)
        if security is None or security.tls is None:
            return
        try:
            fresh = listener_security(self.config, name, security.protocol)
            stores = LoadedStores.read(self.config, name)
            if name == self.config.inter_broker_listener_name:
                outbound.set_default_security(inter_broker_client_security(self.config))
        except ConfigError as exc:
            log.error("The keystore and truststore of listener %s were not reloaded: %s", name, exc)
            return
        security.tls.context = fresh.tls.context
        self._stores[name] = stores
        log.info("Reloaded the keystore and truststore of listener %s", name)

    def endpoints(self) -> tuple[EndPoint, ...]:
        """The advertised endpoints, a port of 0 replaced by the port its listener bound."""
        bound = {p.factory.listener_name: p.getHost().port for p in self.ports}
        return tuple(EndPoint(ep.listener_name, ep.host, ep.port or bound.get(ep.listener_name, ep.port),
                              ep.security_protocol) for ep in self.advertised)

    async def stop_accepting(self) -> None:
        if self._housekeeping_loop is not None and self._housekeeping_loop.running:
            self._housekeeping_loop.stop()
        for port in self.ports:
            self.quotas.remove_port(port.factory.listener_name)     # never to be started again
            await port.stopListening()

    def close_connections(self) -> None:
        for port in self.ports:
            for conn in list(port.factory.connections):
                conn.transport.loseConnection()
