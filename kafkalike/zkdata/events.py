"""Typed events the ZooKeeper layer hands to the reactor thread.

A watch event says only *that* something under a path changed, never what the new
state is: by the time the reactor runs the handler the state may have moved on, so the
handler re-reads ZooKeeper (Kafka's controller works the same way). Changes that
happen close together may arrive as a single event.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class ZNodeChange(enum.Enum):
    CREATED = "created"
    DELETED = "deleted"
    DATA_CHANGED = "data_changed"
    CHILDREN_CHANGED = "children_changed"
    # The watch was lost with the connection and set again: anything may have changed.
    RESYNC = "resync"


@dataclass(frozen=True)
class ZNodeEvent:
    path: str
    change: ZNodeChange


class ChildrenChanged(ZNodeEvent):
    """Children of any watched path (the generic watch_children event)."""


class DataChanged(ZNodeEvent):
    """Data, creation or deletion of any watched path (the generic watch_data event)."""


class BrokerChange(ZNodeEvent):
    """A broker registered or its session ended: children of /brokers/ids."""


class TopicChange(ZNodeEvent):
    """A topic was created or its znode deleted: children of /brokers/topics."""


class TopicDeletion(ZNodeEvent):
    """Someone asked for a topic deletion: children of /admin/delete_topics."""


class ControllerChange(ZNodeEvent):
    """/controller was created, deleted or rewritten: re-read it and maybe run an election."""


class PartitionModifications(ZNodeEvent):
    """/brokers/topics/<topic> changed: partitions added or a reassignment updated."""

    @property
    def topic(self) -> str:
        return self.path.rsplit("/", 1)[1]


class IsrChangeNotification(ZNodeEvent):
    """A leader wrote new ISR change notifications: children of /isr_change_notification."""


class ConfigChangeNotification(ZNodeEvent):
    """An entity's config changed: children of /config/changes."""


@dataclass(frozen=True)
class SessionEvent:
    """A change of the ZooKeeper connection; session_id is the session in force after it."""

    session_id: int | None


class SessionSuspended(SessionEvent):
    """The connection dropped. The session may still be alive, and with it our ephemerals."""


class SessionReconnected(SessionEvent):
    """The same session is back: ephemerals survived, nothing to redo."""


class SessionExpired(SessionEvent):
    """The session ended: ZooKeeper deleted our ephemerals (broker registration, /controller)."""


class NewSession(SessionEvent):
    """A new session replaced an expired one: re-register ephemerals and re-read state."""
