"""The metrics endpoint: Twisted web on the broker's own reactor.

`GET /metrics` renders the registry in Prometheus's format (text, or OpenMetrics when
asked); `GET /` says where the metrics are. A scrape is split in two: the readings are
taken on the reactor thread, where the state they read lives (every gauge reads memory
only, every counter is a plain integer: no lock, no I/O), and are then formatted by the
Prometheus client on a worker thread, so a large exposition (thousands of partitions)
never holds the reactor for the time it takes to write it. The endpoint has its own
port so a slow or hostile scraper never shares a socket with Kafka clients.
"""
from __future__ import annotations

import logging

from twisted.internet import defer, threads
from twisted.internet.endpoints import TCP4ServerEndpoint
from twisted.web import resource, server

from kafkalike.metrics.core import MetricsRegistry
from kafkalike.metrics.exposition import render

log = logging.getLogger("kafkalike.metrics.http")


class MetricsResource(resource.Resource):
    """`/metrics`: readings now, on the reactor; the text from a worker thread."""

    isLeaf = True

    def __init__(self, registry: MetricsRegistry, reactor=None):
        super().__init__()
        self.registry = registry
        self.reactor = reactor

    def render_GET(self, request) -> int:
        readings = list(self.registry.readings())
        accept = request.getHeader("accept")
        if self.reactor is None:
            d = threads.deferToThread(render, readings, accept)
        else:
            d = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), render, readings, accept)
        gone: list[bool] = []
        request.notifyFinish().addErrback(lambda _failure: gone.append(True))

        def answer(result: tuple[bytes, str]) -> None:
            if gone:
                return          # the scraper hung up; nothing to answer
            body, content_type = result
            request.setHeader(b"content-type", content_type.encode("ascii"))
            request.setHeader(b"content-length", str(len(body)).encode("ascii"))
            if request.method != b"HEAD":
                request.write(body)
            request.finish()

        def failed(failure) -> None:
            log.error("Rendering metrics failed: %s", failure.getTraceback())
            if not gone:
                request.setResponseCode(500)
                request.finish()

        d.addCallbacks(answer, failed)
        return server.NOT_DONE_YET

    render_HEAD = render_GET


class _Index(resource.Resource):
    isLeaf = True

    def render_GET(self, request) -> bytes:
        request.setHeader(b"content-type", b"text/plain; charset=utf-8")
        return b"kafkalike broker metrics: /metrics (Prometheus text format)\n"


def site(registry: MetricsRegistry, reactor=None) -> server.Site:
    root = resource.Resource()
    root.putChild(b"metrics", MetricsResource(registry, reactor))
    root.putChild(b"", _Index())
    factory = server.Site(root)
    factory.noisy = False
    factory.displayTracebacks = False
    # twisted.web's access log would write a line per scrape into the broker's log.
    factory.log = lambda _request: None
    return factory


def listen(reactor, registry: MetricsRegistry, port: int, host: str = "") -> defer.Deferred:
    """Serve the registry on host:port (port 0: any free port); fires with the
    listening port, whose getHost().port says which one was taken."""
    endpoint = TCP4ServerEndpoint(reactor, port, interface=host)
    return endpoint.listen(site(registry, reactor))
