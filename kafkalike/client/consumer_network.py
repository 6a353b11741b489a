"""The consumer's network layer: a NetworkClient plus a queue of unsent requests and wakeups.

The consumer does all network work inside the user's calls (and its heartbeat thread),
never on a thread of its own, so requests are queued by send() from any thread and
sent by whoever polls next, under one lock. Answers come back as RequestFutures that
the fetcher and the group coordinator poll until done. Metadata refreshes go through
the network module's MetadataUpdater, the same loop the producer's sender runs.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any, Callable

from kafkalike.client.errors import KafkaTimeoutError, NetworkError, UnsupportedFeatureError, WakeupError
from kafkalike.client.metadata import Metadata
from kafkalike.client.network import MetadataUpdater, NetworkClient
from kafkalike.protocol.schema import MessageData

# The consumer's own logger: what this layer logs has always appeared under it.
consumer_log = logging.getLogger("kafkalike.client.consumer")

_MAX_BLOCK = 0.5  # seconds one network poll may wait before the loop looks around again
_COORDINATOR_ID_BASE = 2**31 - 1  # Java: Integer.MAX_VALUE - coordinator id


class RequestFuture:
    """The answer to one request: `value` or `exception` once `done`."""

    __slots__ = ("done", "value", "exception", "_callbacks")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self.exception: Exception | None = None
        self._callbacks: list[Callable[[Any, Exception | None], None]] = []

    def complete(self, value: Any, exception: Exception | None) -> None:
        if self.done:
            return
        self.done, self.value, self.exception = True, value, exception
        for callback in self._callbacks:
            callback(value, exception)
        self._callbacks.clear()

    def add_callback(self, callback: Callable[[Any, Exception | None], None]) -> "RequestFuture":
        if self.done:
            callback(self.value, self.exception)
        else:
            self._callbacks.append(callback)
        return self


class ConsumerNetworkClient:
    """NetworkClient plus a queue of unsent requests, metadata refreshes and wakeups.

    send() may be called from any thread (the heartbeat thread will); poll() runs under a
    lock, so one thread at a time does network work.
    """

    def __init__(self, client: NetworkClient, metadata: Metadata, *, allow_auto_create: bool = True,
                 log_prefix: str = "") -> None:
        self.client = client
        self.metadata = metadata
        self.lock = threading.RLock()
        self._unsent: deque[tuple[int, MessageData, RequestFuture, float]] = deque()
        self._wakeup_requested = False
        # The consumer has always logged metadata errors under its own logger, without the id.
        self.metadata_updater = MetadataUpdater(client, metadata, allow_auto_create=allow_auto_create,
                                                log_prefix=log_prefix, error_log=consumer_log,
                                                log_correlation_id=False)

    @property
    def all_topics(self) -> bool:
        """Whether metadata refreshes ask for every topic (a pattern subscription needs them)."""
        return self.metadata_updater.all_topics

    @all_topics.setter
    def all_topics(self, value: bool) -> None:
        self.metadata_updater.all_topics = value

    @property
    def cluster(self):
        return self.metadata.cluster

    def send(self, node_id: int, request: MessageData) -> RequestFuture:
        future = RequestFuture()
        self._unsent.append((node_id, request, future, time.monotonic() + self.client.request_timeout))
        self.client.wakeup()
        return future

    def coordinator_connection(self, node_id: int) -> int:
        """The id under which requests reach the group coordinator `node_id` on a connection of their own."""
        alias = _COORDINATOR_ID_BASE - node_id
        self.client.add_alias(alias, node_id)
        return alias

    def wakeup(self) -> None:
        self._wakeup_requested = True
        self.client.wakeup()

    def poll(self, timeout: float, *, wakeable: bool = True) -> None:
        """One round of network work, waiting at most `timeout` seconds for something to happen."""
        with self.lock:
            if wakeable:
                self._maybe_raise_wakeup()
            now = time.monotonic()
            metadata_wait = self.metadata_updater.maybe_update(now)
            self._send_unsent(now)
            self.client.poll(max(0.0, min(timeout, metadata_wait, _MAX_BLOCK)) if not self._unsent_ready() else 0)
            self._send_unsent(time.monotonic())
            if wakeable:
                self._maybe_raise_wakeup()

    def poll_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Poll until `done()` or `timeout` seconds pass; returns done()."""
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return done()
            self.poll(left)
        return True

    def _maybe_raise_wakeup(self) -> None:
        if self._wakeup_requested:
            self._wakeup_requested = False
            raise WakeupError()

    def _unsent_ready(self) -> bool:
        return any(self.client.is_ready(node) for node, _, _, _ in list(self._unsent))

    def _send_unsent(self, now: float) -> None:
        client = self.client
        waiting: deque = deque()
        while self._unsent:
            node, request, future, deadline = self._unsent.popleft()
            if client.ready(node, now):
                try:
                    client.send(node, request, future.complete, now)
                except (NetworkError, UnsupportedFeatureError) as error:
                    future.complete(None, error)
            elif not client.knows(node) or client.connection_delay(node, now) > 0 \
                    and client.connection_delay(node, now) != float("inf"):
                future.complete(None, NetworkError(f"Connection to node {node} is not available"))
            elif now > deadline:
                future.complete(None, KafkaTimeoutError(f"Request to node {node} timed out before it was sent"))
            else:
                waiting.append((node, request, future, deadline))
        self._unsent.extendleft(reversed(waiting))

    def await_metadata(self, timeout: float) -> None:
        version = self.metadata.request_update()
        if not self.poll_until(lambda: self.metadata.version > version, timeout):
            raise KafkaTimeoutError(f"Failed to update metadata after {int(timeout * 1000)} ms.")

    def close(self) -> None:
        with self.lock:
            while self._unsent:
                self._unsent.popleft()[2].complete(None, NetworkError("The consumer was closed"))
            self.client.close()
            self.metadata.close()


__all__ = ["ConsumerNetworkClient", "RequestFuture"]
