"""Requests from a broker to another broker (controller channel, replica fetchers).

A correlation id maps to the pending Deferred; on connection loss every pending one
fails, so callers never wait on a dead socket. The connection negotiates nothing: the
peers are brokers of this same code, so callers pick versions they know we serve.
"""
from __future__ import annotations

import itertools
import logging

from twisted.internet import defer, protocol, reactor as default_reactor
from twisted.internet.endpoints import TCP4ClientEndpoint

from kafkalike.common.framing import SizePrefixedReceiver
from kafkalike.protocol.api import decode_response, encode_request
from kafkalike.protocol.schema import MessageData

log = logging.getLogger("kafka.network.Outbound")


class ConnectionLost(Exception):
    """The connection closed before the answer came."""


class OutboundConnection(SizePrefixedReceiver):
    MAX_LENGTH = 1 << 30

    def __init__(self, client_id: str):
        self.client_id = client_id
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int, defer.Deferred | None]] = {}
        self.closed = defer.Deferred()

    def request(self, body: MessageData, version: int, expect_response: bool = True) -> defer.Deferred:
        corr = next(self._corr)
        api_key = body.API_KEY
        data = encode_request(api_key, version, corr, self.client_id, body)
        self.transport.write(len(data).to_bytes(4, "big") + data)
        if not expect_response:
            return defer.succeed(None)
        d = defer.Deferred()
        self._pending[corr] = (api_key, version, d)
        return d

    def stringReceived(self, frame: bytes) -> None:
        corr = int.from_bytes(frame[:4], "big", signed=True)
        entry = self._pending.pop(corr, None)
        if entry is None:
            log.warning("Response with unknown correlation id %d", corr)
            return
        api_key, version, d = entry
        try:
            _, response = decode_response(api_key, version, frame)
        except Exception as exc:  # a peer that answers garbage: fail that request
            d.errback(exc)
            self.transport.loseConnection()
            return
        d.callback(response)

    def connectionLost(self, reason=protocol.connectionDone) -> None:
        pending, self._pending = self._pending, {}
        for _api, _ver, d in pending.values():
            d.errback(ConnectionLost(str(reason.value)))
        if not self.closed.called:
            self.closed.callback(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()


def connect(host: str, port: int, client_id: str, reactor=default_reactor,
            timeout: float = 10) -> defer.Deferred:
    """Deferred[OutboundConnection]."""
    endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=timeout)
    return endpoint.connect(_QuietFactory(client_id))


class _QuietFactory(protocol.Factory):
    noisy = False   # one connection per factory: no "Starting factory" log lines

    def __init__(self, client_id: str):
        self.client_id = client_id

    def buildProtocol(self, addr):
        return OutboundConnection(self.client_id)
