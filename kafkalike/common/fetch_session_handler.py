"""The fetcher's side of an incremental fetch session (KIP-227), as Kafka's
FetchSessionHandler: what the next fetch to one broker must carry.

The fetcher hands over, each round, every partition it wants with that partition's
request fields (any hashable value that compares equal when nothing changed). The
first fetch is full (epoch 0) and lists them all; once the broker answers with a session
id, each later fetch names the session and the next epoch and lists only the
partitions that are new or whose fields changed, plus the ones to forget. An answer
with an error, or one listing a partition the session does not hold, sends the
fetcher back to a full fetch (a new session); so does a lost connection. The broker's
side is kafkalike/broker/fetch_session.py.
"""
from __future__ import annotations

from typing import Generic, Hashable, TypeVar

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
FETCH_SESSION_ID_NOT_FOUND = 70          # ErrorCode.FETCH_SESSION_ID_NOT_FOUND
_INT_MAX = 2**31 - 1

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT_MAX else epoch + 1


class FetchRequestData(Generic[K, V]):
    """One fetch to send: `to_send` goes in the request's topics, `to_forget` in its
    forgotten_topics_data; `session` is every partition the answer may speak of."""

    __slots__ = ("to_send", "to_forget", "session", "session_id", "epoch")

    def __init__(self, to_send: dict[K, V], to_forget: list[K], session: dict[K, V], session_id: int, epoch: int):
        self.to_send = to_send
        self.to_forget = to_forget
        self.session = session
        self.session_id = session_id
        self.epoch = epoch

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler(Generic[K, V]):
    """One per destination broker."""

    def __init__(self):
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.partitions: dict[K, V] = {}       # what the broker's session holds, in its order

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def build(self, wanted: dict[K, V]) -> FetchRequestData[K, V]:
        """The next fetch for the partitions `wanted` (in the order given)."""
        if self.full:
            self.partitions = dict(wanted)
            return FetchRequestData(self.partitions, [], self.partitions, self.session_id, self.epoch)
        session = self.partitions
        to_send: dict[K, V] = {}
        removed: list[K] = []
        for key in list(session):
            if key not in wanted:
                del session[key]
                removed.append(key)
        for key, value in wanted.items():
            old = session.get(key, _MISSING)
            if old is _MISSING or old != value:
                session[key] = value
                to_send[key] = value
        return FetchRequestData(to_send, removed, session, self.session_id, self.epoch)

    def handle_response(self, error_code: int, session_id: int, answered: list[K], throttled: bool = False) -> bool:
        """Take a fetch's answer: False when its partitions must not be used (the next
        fetch is then full)."""
        if error_code != 0:
            if error_code == FETCH_SESSION_ID_NOT_FOUND:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                self.epoch = INITIAL_EPOCH      # close the session named and open a new one
            return False
        if self.full:
            if not answered and throttled:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
                return False
            if set(answered) != set(self.partitions):
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
                return False
            if session_id == INVALID_SESSION_ID:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
            return True
        if any(key not in self.partitions for key in answered):
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:       # the broker closed the session
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The fetch failed on the way (a lost connection): start over with a full fetch
        that closes the old session."""
        self.epoch = INITIAL_EPOCH


_MISSING = object()
