"""One ZooKeeper session for a broker, on kazoo, driven from the Twisted reactor.

This is the plumbing under KafkaZkClient (Kafka splits the same way: ZooKeeperClient
below KafkaZkClient). It owns the kazoo client and is the only place that reacts to
its connection states:

- every request runs as a kazoo *_async call whose outcome comes back as a Deferred on
  the reactor thread; a request cut off by a lost connection is sent again once the
  connection is back (Kafka's retryRequestUntilConnected), for up to the connection
  timeout;
- state changes become SessionEvents for the broker: a NewSession means ZooKeeper
  dropped our ephemeral znodes and the broker must register again;
- kazoo forgets every watch when the connection drops, so the standing watches
  (watches.ZNodeWatch) are set again after each reconnect and told to re-read.

zookeeper.connect may end in a chroot ("host:2181,host2:2181/kafka"); like Kafka we
create that path first, through a connection without the chroot.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import KazooState
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool

from .bridge import deferred_from_kazoo, returns_deferred
from .security import NO_SECURITY, ZkSecurity
from .errors import ZooKeeperClientTimeoutError
from .events import NewSession, SessionEvent, SessionExpired, SessionReconnected, SessionSuspended

if TYPE_CHECKING:
    from .watches import ZNodeWatch

log = logging.getLogger(__name__)

DEFAULT_SESSION_TIMEOUT_MS = 18000  # zookeeper.session.timeout.ms since Kafka 2.5
# kazoo backs off between connection attempts; a second at most keeps reconnects prompt.
RECONNECT_RETRY = {"max_tries": -1, "delay": 0.05, "backoff": 2, "max_jitter": 0.1, "max_delay": 1.0}


def split_chroot(connect: str) -> tuple[str, str | None]:
    """("host:port,...", "/chroot" or None) from a zookeeper.connect value."""
    slash = connect.find("/")
    if slash < 0:
        return connect, None
    hosts, chroot = connect[:slash], connect[slash:]
    if chroot == "/":
        return hosts, None
    if chroot.endswith("/") or "//" in chroot:
        raise ValueError(f"invalid chroot in zookeeper.connect {connect!r}")
    return hosts, chroot


class ZooKeeperSession:
    """A kazoo client whose every outcome is delivered on the reactor thread."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        connection_timeout_ms: int | None = None,
        reactor: Any = None,
        security: ZkSecurity = NO_SECURITY,
    ) -> None:
        if reactor is None:
            from twisted.internet import reactor as global_reactor

            reactor = global_reactor
        self.connect = connect
        self.hosts, self.chroot = split_chroot(connect)
        self.session_timeout_ms = session_timeout_ms
        # zookeeper.connection.timeout.ms defaults to the session timeout, as in Kafka.
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self.reactor = reactor
        self.security = security
        self.kazoo = self._new_kazoo(connect)
        self.kazoo.add_listener(self._kazoo_state_listener)
        self._connected = False
        self._closing = False
        self._session_id: int | None = None
        self._connected_waiters: list[Deferred[None]] = []
        self._session_listeners: list[Callable[[SessionEvent], object]] = []
        # Standing watches to set again after a reconnect (kazoo drops them all).
        self._watches: set[ZNodeWatch] = set()

    def _new_kazoo(self, hosts: str) -> KazooClient:
        return KazooClient(
            hosts=hosts,
            timeout=self.session_timeout_ms / 1000.0,
            connection_retry=dict(RECONNECT_RETRY),
            **self.security.kazoo_options(),
        )

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def session_id(self) -> int | None:
        """The current session's id (the ephemeralOwner of znodes we create), None before start.

        Read from kazoo at call time: right after a session change it may be ahead of
        the last SessionEvent delivered.
        """
        client_id = self.kazoo.client_id
        return client_id[0] if client_id else None

    # -- lifecycle -----------------------------------------------------------------

    @returns_deferred
    async def start(self) -> None:
        """Create the chroot if needed, then connect; ZooKeeperClientTimeoutError if we cannot."""
        if self.chroot is not None:
            await self._create_chroot()
        waiter = self._wait_for_connection()
        self.kazoo.start_async()
        try:
            await waiter
        except ZooKeeperClientTimeoutError:
            self._closing = True
            await self._stop_kazoo(self.kazoo)
            raise

    @returns_deferred
    async def close(self) -> None:
        """End the session: ZooKeeper deletes our ephemerals at once, not after the timeout."""
        if self._closing:
            return
        self._closing = True
        for watch in list(self._watches):
            watch.cancel()
        await self._stop_kazoo(self.kazoo)
        self._connected = False

    async def _create_chroot(self) -> None:
        setup = self._new_kazoo(self.hosts)
        connected: Deferred[None] = Deferred()

        def on_state(state: KazooState) -> bool:
            if state == KazooState.CONNECTED:
                self.reactor.callFromThread(lambda: connected.called or connected.callback(None))
                return True
            return False

        setup.add_listener(on_state)
        connected.addTimeout(self.connection_timeout_ms / 1000.0, self.reactor, self._connection_timed_out)
        setup.start_async()
        try:
            await connected
            await self._create_path(setup, self.chroot or "/")
        finally:
            await self._stop_kazoo(setup)

    async def _create_path(self, kazoo: KazooClient, path: str) -> None:
        """Create path and its missing ancestors as null znodes, as Kafka does."""
        try:
            await deferred_from_kazoo(self.reactor, kazoo.create_async(path, None, acl=self.security.acls(path)))
        except NodeExistsError:
            return
        except NoNodeError:
            await self._create_path(kazoo, path.rsplit("/", 1)[0] or "/")
            await self._create_path(kazoo, path)

    async def _stop_kazoo(self, kazoo: KazooClient) -> None:
        # stop() joins kazoo's threads and waits for the close reply: never on the reactor.
        pool = self.reactor.getThreadPool()
        await deferToThreadPool(self.reactor, pool, kazoo.stop)
        kazoo.close()

    def _connection_timed_out(self, result: Any, timeout: float) -> Any:
        raise ZooKeeperClientTimeoutError(
            f"timed out waiting for a connection to ZooKeeper {self.connect} after {timeout:.1f}s"
        )

    def _forget_waiter(self, waiter: Deferred[None]) -> None:
        if waiter in self._connected_waiters:
            self._connected_waiters.remove(waiter)

    def _wait_for_connection(self) -> Deferred[None]:
        waiter: Deferred[None] = Deferred(self._forget_waiter)
        self._connected_waiters.append(waiter)
        waiter.addTimeout(self.connection_timeout_ms / 1000.0, self.reactor, self._connection_timed_out)
        return waiter

    # -- requests ------------------------------------------------------------------

    @returns_deferred
    async def request(self, issue: Callable[[], IAsyncResult]) -> Any:
        """Run one kazoo *_async call (issue() starts it) and return its result.

        A request that failed with ConnectionLoss is issued again once we are connected;
        SessionExpiredError and every other error go to the caller.
        """
        while True:
            try:
                return await deferred_from_kazoo(self.reactor, issue())
            except ConnectionLoss:
                if self._closing:
                    raise
                if not self._connected:
                    await self._wait_for_connection()

    # -- session events ------------------------------------------------------------

    def add_session_listener(self, listener: Callable[[SessionEvent], object]) -> None:
        """listener(event) runs on the reactor thread for every SessionEvent."""
        self._session_listeners.append(listener)

    def remove_session_listener(self, listener: Callable[[SessionEvent], object]) -> None:
        self._session_listeners.remove(listener)

    def _kazoo_state_listener(self, state: KazooState) -> None:
        # On kazoo's connection thread: read the session id it just negotiated, hand over.
        session_id = self.kazoo.client_id[0] if self.kazoo.client_id else None
        self.reactor.callFromThread(self._on_state, state, session_id)

    def _on_state(self, state: KazooState, session_id: int | None) -> None:
        if self._closing:
            return
        if state == KazooState.CONNECTED:
            self._connected = True
            previous, self._session_id = self._session_id, session_id
            event: SessionEvent | None = None
            if previous is not None:
                event = SessionReconnected(session_id) if previous == session_id else NewSession(session_id)
            waiters, self._connected_waiters = self._connected_waiters, []
            for waiter in waiters:
                waiter.callback(None)
            if event is not None:
                self._emit(event)
            for watch in list(self._watches):
                watch.resync()
        else:
            self._connected = False
            if state == KazooState.SUSPENDED:
                self._emit(SessionSuspended(self._session_id))
            else:
                self._emit(SessionExpired(self._session_id))

    def _emit(self, event: SessionEvent) -> None:
        log.info("ZooKeeper session %s: %s", self.connect, type(event).__name__)
        for listener in list(self._session_listeners):
            try:
                listener(event)
            except Exception:  # noqa: BLE001 - one listener must not starve the others
                log.exception("session listener %r failed on %r", listener, event)

    # -- watch registry (used by watches.ZNodeWatch) ---------------------------------

    def register_watch(self, watch: ZNodeWatch) -> None:
        self._watches.add(watch)

    def unregister_watch(self, watch: ZNodeWatch) -> None:
        self._watches.discard(watch)
