"""The controller's connections to brokers (Kafka's ControllerChannelManager).

One queue per broker, sent strictly in order, one request in flight at a time, retried
on connection failure until the broker is removed: a broker must see LeaderAndIsr and
UpdateMetadata in the order the controller decided them. Requests go over the wire even
to the controller's own broker, as Kafka does.
"""
from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

from twisted.internet import defer, task

from kafkalike.common import outbound

log = logging.getLogger("kafka.controller.ControllerChannelManager")
RETRY_BACKOFF_S = 0.3


@dataclass
class _Queued:
    body: object
    version: int
    deferred: defer.Deferred


class BrokerChannel:
    def __init__(self, broker_id: int, host: str, port: int, client_id: str, reactor):
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.reactor = reactor
        self.queue: deque[_Queued] = deque()
        self.conn: outbound.OutboundConnection | None = None
        self.running = False
        self.stopped = False

    def send(self, body, version: int) -> defer.Deferred:
        d = defer.Deferred()
        self.queue.append(_Queued(body, version, d))
        if not self.running:
            self.running = True
            defer.ensureDeferred(self._drain())
        return d

    async def _drain(self) -> None:
        try:
            while self.queue and not self.stopped:
                item = self.queue[0]
                try:
                    if self.conn is None:
                        self.conn = await outbound.connect(self.host, self.port, self.client_id,
                                                           self.reactor, timeout=5)
                        self.conn.closed.addCallback(self._closed, self.conn)
                    response = await self.conn.request(item.body, item.version)
                except Exception as exc:
                    if self.stopped:
                        break
                    log.warning("[Controller-to-broker-%d] request failed (%s), retrying",
                                self.broker_id, exc)
                    self.conn = None
                    await task.deferLater(self.reactor, RETRY_BACKOFF_S, lambda: None)
                    continue
                self.queue.popleft()
                item.deferred.callback(response)
        finally:
            self.running = False

    def _closed(self, _ignored, conn) -> None:
        if self.conn is conn:
            self.conn = None

    def stop(self) -> None:
        self.stopped = True
        while self.queue:
            item = self.queue.popleft()
            item.deferred.errback(outbound.ConnectionLost(f"broker {self.broker_id} removed"))
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class ControllerChannelManager:
    def __init__(self, controller_id: int, reactor):
        self.controller_id = controller_id
        self.reactor = reactor
        self.channels: dict[int, BrokerChannel] = {}

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        existing = self.channels.get(broker_id)
        if existing is not None and (existing.host, existing.port) == (host, port):
            return
        if existing is not None:
            existing.stop()
        self.channels[broker_id] = BrokerChannel(
            broker_id, host, port, f"controller-{self.controller_id}-to-broker-{broker_id}", self.reactor)

    def remove_broker(self, broker_id: int) -> None:
        channel = self.channels.pop(broker_id, None)
        if channel is not None:
            channel.stop()

    def send(self, broker_id: int, body, version: int) -> defer.Deferred:
        channel = self.channels.get(broker_id)
        if channel is None:
            return defer.fail(outbound.ConnectionLost(f"no channel to broker {broker_id}"))
        d = channel.send(body, version)
        d.addErrback(self._log_failure, broker_id)
        return d

    @staticmethod
    def _log_failure(failure, broker_id: int):
        if not failure.check(outbound.ConnectionLost):
            log.error("Request to broker %d failed: %s", broker_id, failure.getErrorMessage())
        return None

    def shutdown(self) -> None:
        for bid in list(self.channels):
            self.remove_broker(bid)
