"""The dashboard process: a Twisted web site over snapshots taken on a worker thread.

The reactor only serves pages from the last snapshot and starts a new look every
--refresh seconds, on a thread, when the previous one has ended. A slow or dead cluster
therefore makes the snapshot older (the page says so), never the page slower.
"""
from __future__ import annotations

import json
import logging
import threading
import time

from twisted.internet import reactor as default_reactor
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure
from twisted.web import resource, server

from kafkalike.dashboard.collect import FETCHED, PRODUCED, Collector
from kafkalike.dashboard.model import Snapshot
from kafkalike.dashboard.pages import DashboardState, cluster_page, groups_page, topics_page
from kafkalike.dashboard.rates import History

log = logging.getLogger("kafkalike.dashboard")


class Poller:
    """Starts one look at a time on a thread and files its snapshot into the state."""

    def __init__(self, collector: Collector, state: DashboardState, reactor=None) -> None:
        self.collector = collector
        self.state = state
        self.reactor = reactor or default_reactor
        self._loop = LoopingCall(self.poll)
        self._loop.clock = self.reactor

    def start(self) -> None:
        self._loop.start(self.state.refresh, now=True)

    def stop(self) -> None:
        if self._loop.running:
            self._loop.stop()

    def poll(self) -> None:
        if self.state.collecting_since is not None:
            return      # the last look is still under way: the cluster is slow, do not pile up threads
        self.state.collecting_since = time.monotonic()
        threading.Thread(target=self._look, name="dashboard-look", daemon=True).start()

    def _look(self) -> None:
        """On the look's own daemon thread: a look stuck on a dead cluster never holds up the exit."""
        try:
            snapshot = self.collector.collect()
        except Exception:
            self.reactor.callFromThread(self._failed, Failure())
            return
        self.reactor.callFromThread(self._done, snapshot)

    def close(self) -> None:
        """Stop looking; close the clients unless a look still uses them (the exit ends it)."""
        self.stop()
        if self.state.collecting_since is None:
            self.collector.close()

    def _done(self, snapshot: Snapshot) -> None:
        self.state.collecting_since = None
        self.state.last_failure = ""
        self.state.snapshot = snapshot
        self.state.produced.add(snapshot.taken_at, snapshot.counters.get(PRODUCED, {}))
        self.state.fetched.add(snapshot.taken_at, snapshot.counters.get(FETCHED, {}))

    def _failed(self, failure) -> None:
        self.state.collecting_since = None
        self.state.last_failure = f"last look failed: {failure.getErrorMessage()}"
        log.error("Looking at the cluster failed", exc_info=(failure.type, failure.value, failure.getTracebackObject()))


class Page(resource.Resource):
    isLeaf = True

    def __init__(self, state: DashboardState, render) -> None:
        super().__init__()
        self.state = state
        self.render_page = render

    def render_GET(self, request) -> bytes:
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        request.setHeader(b"cache-control", b"no-store")
        return self.render_page(self.state)


class SnapshotJson(resource.Resource):
    isLeaf = True

    def __init__(self, state: DashboardState) -> None:
        super().__init__()
        self.state = state

    def render_GET(self, request) -> bytes:
        request.setHeader(b"content-type", b"application/json")
        snap = self.state.snapshot
        body = {"snapshot": snap.to_json() if snap is not None else None,
                "rates": {"source": self.state.rate_source, PRODUCED: self.state.produced.latest(),
                          FETCHED: self.state.fetched.latest()}}
        return json.dumps(body, indent=1, sort_keys=True).encode("utf-8")


class Root(resource.Resource):
    def __init__(self, state: DashboardState) -> None:
        super().__init__()
        self.putChild(b"", Page(state, cluster_page))
        self.putChild(b"topics", Page(state, topics_page))
        self.putChild(b"groups", Page(state, groups_page))
        self.putChild(b"snapshot.json", SnapshotJson(state))


class QuietSite(server.Site):
    """No access log: the dashboard reloads itself every few seconds."""

    def log(self, request) -> None:
        pass


def make_state(bootstrap: str, refresh: int, window: float, rate_source: str) -> DashboardState:
    return DashboardState(bootstrap, refresh, window, rate_source, produced=History(window), fetched=History(window))


def site(state: DashboardState) -> server.Site:
    return QuietSite(Root(state))
