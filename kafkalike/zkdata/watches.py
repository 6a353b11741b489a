"""Standing watches: ZooKeeper's one-shot watches, set again after every firing.

ZooKeeper fires a watch once and forgets it; kazoo also forgets all watches whenever
the connection drops. A ZNodeWatch hides both: after a firing it sets the watch again
*before* telling the listener, so a change that lands while the handler re-reads is
either seen by that read or fires the new watch; after a reconnect the session sets
it again and the listener gets a RESYNC event, since changes may have been missed.

The kazoo watch callback runs on a kazoo thread and only forwards the event to the
reactor; the listener always runs on the reactor thread.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from kazoo.exceptions import NoNodeError, SessionExpiredError
from kazoo.protocol.states import EventType, WatchedEvent
from twisted.internet.defer import Deferred

from .events import ZNodeChange, ZNodeEvent

if TYPE_CHECKING:
    from .session import ZooKeeperSession

log = logging.getLogger(__name__)

_CHANGE_OF = {
    EventType.CREATED: ZNodeChange.CREATED,
    EventType.DELETED: ZNodeChange.DELETED,
    EventType.CHANGED: ZNodeChange.DATA_CHANGED,
    EventType.CHILD: ZNodeChange.CHILDREN_CHANGED,
}


class ZNodeWatch:
    """Calls listener(event_type(path, change)) on the reactor after each change of path.

    children=True watches the list of children (and the znode's creation or deletion);
    children=False watches the znode's data, creation and deletion.
    """

    def __init__(
        self,
        session: ZooKeeperSession,
        path: str,
        *,
        children: bool,
        event_type: type[ZNodeEvent],
        listener: Callable[[ZNodeEvent], object],
    ) -> None:
        self.session = session
        self.path = path
        self.children = children
        self.event_type = event_type
        self.listener = listener
        self.cancelled = False

    def start(self) -> Deferred[None]:
        """Set the watch; the Deferred fires once ZooKeeper has it. No event is delivered."""
        self.session.register_watch(self)
        return Deferred.fromCoroutine(self._arm())

    def cancel(self) -> None:
        """Stop delivering events. A watch already set in ZooKeeper fires once into nothing."""
        self.cancelled = True
        self.session.unregister_watch(self)

    # -- called by the session on the reactor thread ---------------------------------

    def resync(self) -> None:
        """After a reconnect: set the watch again, then let the listener re-read."""
        self._rearm_then_deliver(ZNodeChange.RESYNC)

    # -- internals ----------------------------------------------------------------------

    def _kazoo_watcher(self, event: WatchedEvent) -> None:
        # On a kazoo thread. Events of type NONE only report a dropped connection; the
        # session's own state handling re-arms and resyncs for those.
        if event.type != EventType.NONE:
            self.session.reactor.callFromThread(self._rearm_then_deliver, _CHANGE_OF[event.type])

    def _rearm_then_deliver(self, change: ZNodeChange) -> None:
        if self.cancelled:
            return
        armed = Deferred.fromCoroutine(self._arm())
        armed.addCallback(lambda _: self._deliver(change))
        armed.addErrback(self._arm_failed, change)

    async def _arm(self) -> None:
        kazoo = self.session.kazoo
        watcher = self._kazoo_watcher
        while not self.cancelled:
            if not self.children:
                await self.session.request(lambda: kazoo.exists_async(self.path, watch=watcher))
                return
            try:
                await self.session.request(lambda: kazoo.get_children_async(self.path, watch=watcher))
                return
            except NoNodeError:
                # No znode, so no child watch: watch for its creation instead. If it
                # appeared meanwhile, go round again for the children.
                stat = await self.session.request(lambda: kazoo.exists_async(self.path, watch=watcher))
                if stat is None:
                    return

    def _deliver(self, change: ZNodeChange) -> None:
        if self.cancelled:
            return
        event = self.event_type(self.path, change)
        try:
            self.listener(event)
        except Exception:  # noqa: BLE001 - a failing handler must not kill the watch
            log.exception("listener %r failed on %r", self.listener, event)

    def _arm_failed(self, failure: Any, change: ZNodeChange) -> None:
        if failure.check(SessionExpiredError):
            return  # the new session will resync this watch
        if not self.cancelled and self.session.connected:
            log.error("could not set the watch on %s: %s", self.path, failure.getErrorMessage())
        # Tell the listener anyway: it re-reads, and its read reports the problem.
        self._deliver(change)

    def __repr__(self) -> str:
        kind = "children" if self.children else "data"
        return f"ZNodeWatch({self.path!r}, {kind}, {self.event_type.__name__})"
