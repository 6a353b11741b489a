"""Incremental fetch sessions (KIP-227): the leader remembers what a fetcher asked for.

A fetcher with many partitions otherwise sends every partition's position in every
fetch and gets every partition back, changed or not. With a session, the first (full)
fetch is cached under a session id the answer carries; each later (incremental) fetch
names that id and the next epoch, lists only the partitions whose positions changed
(plus forgotten_topics_data for those to drop), and is answered with only the
partitions that have something to say: new records, a moved high watermark or log
start offset, a preferred read replica, a diverging epoch or an error. The rules are
Kafka 2.8's (FetchSession.scala), which clients and followers rely on:

- session id 0 with epoch -1 is a sessionless fetch (every pre-v7 fetch, librdkafka's);
  epoch 0 asks for a new session (and closes the one named, if any); epoch -1 with an id
  closes that session and is answered sessionless; any other epoch must be the session's
  next one, else INVALID_FETCH_SESSION_EPOCH, and an unknown id is
  FETCH_SESSION_ID_NOT_FOUND. Either error answers no partitions, and the fetcher
  starts over with a full fetch.
- The cache holds max.incremental.fetch.session.cache.slots sessions. A new one gets a
  slot free, or takes one whose session has been idle for 2 minutes (Kafka's constant
  MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, not a config in 2.8), or else one of
  lower worth: followers' sessions are privileged, and a session older than 2 minutes
  may be replaced by one with more partitions. None free: the answer has session id 0
  and the fetcher keeps sending full fetches, as before.
- An incremental answer moves the partitions it lists to the back of the session, so
  with a response size limit every partition takes its turn at the front.

One FetchManager per broker (the broker's services hold it); everything runs on the
reactor, so nothing here locks.
"""
from __future__ import annotations

import random
from typing import Callable, Iterable

from kafkalike.broker.replica_manager import FetchSpec
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchResponse

TopicPartition = tuple[str, int]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000   # KafkaServer's constant in 2.8
_INT_MAX = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: FINAL stays FINAL, and the counter wraps to 1, never 0."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT_MAX else epoch + 1


class CachedPartition:
    """What a session remembers of one partition: the fetcher's last request (so an
    incremental fetch may leave it out) and what it was last told (so an answer may)."""

    __slots__ = ("spec", "high_watermark", "local_log_start_offset")

    def __init__(self, spec: FetchSpec, high_watermark: int = -1, local_log_start_offset: int = -1):
        self.spec = spec
        self.high_watermark = high_watermark
        self.local_log_start_offset = local_log_start_offset

    def must_respond(self, part, update: bool) -> bool:
        """Whether `part` (a FetchResponse partition) has news for the fetcher; with
        `update`, remember what it tells."""
        respond = bool(part.record_set)
        if part.high_watermark != self.high_watermark:
            respond = True
            if update:
                self.high_watermark = part.high_watermark
        if part.log_start_offset != self.local_log_start_offset:
            respond = True
            if update:
                self.local_log_start_offset = part.log_start_offset
        preferred = part.preferred_read_replica
        if preferred is not None and preferred >= 0:
            respond = True
        if part.error_code != 0:
            # Forget the high watermark told, so the partition is sent again once it recovers.
            if update:
                self.high_watermark = -1
            respond = True
        diverging = part.diverging_epoch
        if diverging is not None and diverging.epoch >= 0:
            respond = True
        return respond


class FetchSession:
    """One session: its partitions in the order they are fetched (a dict keeps it)."""

    __slots__ = ("id", "privileged", "partitions", "creation_ms", "last_used_ms", "epoch",
                 "cached_size", "evictable_by_all", "evictable_by_privileged")

    def __init__(self, session_id: int, privileged: bool, partitions: dict[TopicPartition, CachedPartition],
                 now_ms: int, epoch: int):
        self.id = session_id
        self.privileged = privileged
        self.partitions = partitions
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = epoch
        self.cached_size = -1           # the size last counted by the cache; -1: not in it
        # Set at each touch, as Kafka files a session in its evictable trees then.
        self.evictable_by_all = False
        self.evictable_by_privileged = False

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: lower is cheaper to lose."""
        return (self.privileged, self.cached_size, self.id)

    def update(self, fetch_data: dict[TopicPartition, FetchSpec],
               to_forget: Iterable[TopicPartition]) -> tuple[int, int, int]:
        """An incremental request's changes: (added, updated, removed) counts."""
        added = updated = removed = 0
        partitions = self.partitions
        for tp, spec in fetch_data.items():
            cached = partitions.get(tp)
            if cached is None:
                partitions[tp] = CachedPartition(spec)
                added += 1
            else:
                cached.spec = spec
                updated += 1
        for tp in to_forget:
            if partitions.pop(tp, None) is not None:
                removed += 1
        return added, updated, removed


class FetchSessionCache:
    """Sessions by id, bounded by max.incremental.fetch.session.cache.slots.

    Eviction looks for the least recently used session and the cheapest evictable one
    by a walk over the sessions; it runs only when the cache is full, and the cache is
    small (1,000 by default), so Kafka's sorted trees would buy little here."""

    def __init__(self, max_entries: int, eviction_ms: int = MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
                 rng: random.Random | None = None):
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self.total_partitions = 0
        self.evictions = 0               # IncrementalFetchSessionEvictionsPerSec's count
        self._rng = rng or random.Random()

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def __len__(self) -> int:
        return len(self.sessions)

    def new_session_id(self) -> int:
        while True:
            session_id = self._rng.randrange(1, _INT_MAX)
            if session_id not in self.sessions:
                return session_id

    def maybe_create_session(self, now_ms: int, privileged: bool, size: int,
                             create_partitions: Callable[[], dict[TopicPartition, CachedPartition]]) -> int:
        """The new session's id, or INVALID_SESSION_ID when no slot could be had."""
        if len(self.sessions) >= self.max_entries and not self.try_evict(privileged, (privileged, size, 0), now_ms):
            return INVALID_SESSION_ID
        session = FetchSession(self.new_session_id(), privileged, create_partitions(), now_ms,
                               next_epoch(INITIAL_EPOCH))
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def try_evict(self, privileged: bool, key: tuple[bool, int, int], now_ms: int) -> bool:
        """Make room for a session worth `key`: a stale session goes first; otherwise the
        cheapest evictable one, if it is worth no more than the newcomer."""
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            self._evict(oldest)
            return True
        candidates = [s for s in self.sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        cheapest = min(candidates, key=FetchSession.evictable_key)
        if key < cheapest.evictable_key():
            return False
        self._evict(cheapest)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.total_partitions -= max(session.cached_size, 0)
            session.cached_size = -1
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """A session was used: note when, recount its partitions, and file it as
        evictable by what it is now (an unprivileged one by privileged newcomers at once,
        any one by anyone once it is older than eviction_ms)."""
        session.last_used_ms = now_ms
        if session.cached_size >= 0:
            self.total_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.total_partitions += session.cached_size
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = (not session.privileged) or old
        session.evictable_by_all = old


# -- the contexts a fetch is answered in -------------------------------------------------

class FetchContext:
    """How one fetch request is answered. `partitions` is what to read, in order; None
    means exactly as the request lists them (sessionless: behaviour unchanged)."""

    error: ErrorCode | None = None
    partitions: dict[TopicPartition, FetchSpec] | None = None

    def with_news(self, results: dict, order: list[TopicPartition], missing) -> list[TopicPartition]:
        """The partitions of `order` worth building an answer for (all but in a session)."""
        return order

    def response_size(self, response: FetchResponse) -> int:
        """Bytes of records the answer would carry (what a quota charges)."""
        return _records_size(response.responses)

    def finish(self, response: FetchResponse) -> FetchResponse:
        """The answer to send, its session id set; a session learns what it was told."""
        return response

    def throttled(self, response: FetchResponse) -> FetchResponse:
        """The empty answer a throttled fetcher gets (KIP-219); the session learns nothing."""
        response.responses = []
        return response


class SessionlessContext(FetchContext):
    pass


class SessionErrorContext(FetchContext):
    def __init__(self, error: ErrorCode):
        self.error = error
        self.partitions = {}

    def finish(self, response: FetchResponse) -> FetchResponse:
        return FetchResponse(error_code=int(self.error), session_id=INVALID_SESSION_ID, responses=[])


class FullContext(FetchContext):
    """A new session is made from the whole answer, if the cache has room."""

    def __init__(self, manager: FetchManager, fetch_data: dict[TopicPartition, FetchSpec], privileged: bool):
        self.manager = manager
        self.partitions = fetch_data
        self.privileged = privileged

    def finish(self, response: FetchResponse) -> FetchResponse:
        fetch_data = self.partitions

        def cached() -> dict[TopicPartition, CachedPartition]:
            return {(t.topic, p.partition): CachedPartition(fetch_data[(t.topic, p.partition)], p.high_watermark,
                                                            p.log_start_offset)
                    for t in response.responses for p in t.partition_responses}
        size = sum(len(t.partition_responses) for t in response.responses)
        response.session_id = self.manager.cache.maybe_create_session(
            self.manager.time_ms(), self.privileged, size, cached)
        return response


class IncrementalContext(FetchContext):
    """Reads every partition of the session; answers only those with news."""

    def __init__(self, session: FetchSession, request_epoch: int):
        self.session = session
        self.expected_epoch = next_epoch(request_epoch)
        self.partitions = {tp: cached.spec for tp, cached in session.partitions.items()}

    def with_news(self, results: dict, order: list[TopicPartition], missing) -> list[TopicPartition]:
        """Only the partitions whose read result (a ReplicaManager FetchResult; `missing`
        for one not read) has news, so the answer is built for those alone. The same test
        as CachedPartition.must_respond, on the result: for answers the handler does not
        convert, the two agree field for field."""
        cached_of = self.session.partitions
        out = []
        for tp in order:
            r = results.get(tp, missing)
            cached = cached_of.get(tp)
            if (cached is None or r.error != 0 or r.diverging is not None or bool(r.records)
                    or r.high_watermark != cached.high_watermark
                    or r.log_start_offset != cached.local_log_start_offset):
                out.append(tp)
        return out

    def response_size(self, response: FetchResponse) -> int:
        if self.session.epoch != self.expected_epoch:
            return 0
        return _records_size(self._select(response.responses, update=False))

    def finish(self, response: FetchResponse) -> FetchResponse:
        session = self.session
        if session.epoch != self.expected_epoch:
            # Another fetch of the same session was handled while this one waited.
            return FetchResponse(error_code=int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), session_id=session.id,
                                 responses=[])
        response.responses = self._select(response.responses, update=True)
        response.session_id = session.id
        return response

    def throttled(self, response: FetchResponse) -> FetchResponse:
        if self.session.epoch != self.expected_epoch:
            return FetchResponse(error_code=int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), session_id=self.session.id,
                                 throttle_time_ms=response.throttle_time_ms, responses=[])
        response.responses = []
        response.session_id = self.session.id
        return response

    def _select(self, topics: list, update: bool) -> list:
        """The topics and partitions with news; with `update`, the session remembers what
        it told and moves those partitions to its back."""
        cached_of = self.session.partitions
        kept_topics = []
        for t in topics:
            kept = []
            for p in t.partition_responses:
                tp = (t.topic, p.partition)
                cached = cached_of.get(tp)
                if cached is None or cached.must_respond(p, update):
                    kept.append(p)
                    if update and cached is not None:
                        del cached_of[tp]
                        cached_of[tp] = cached
            if kept:
                if len(kept) != len(t.partition_responses):
                    if update:
                        t.partition_responses = kept
                    else:
                        t = FetchResponse.FetchableTopicResponse(topic=t.topic, partition_responses=kept)
                kept_topics.append(t)
        return kept_topics


def _records_size(topics: list) -> int:
    return sum(len(p.record_set or b"") for t in topics for p in t.partition_responses)


class FetchManager:
    """Kafka's FetchManager: picks each fetch's context from its session id and epoch."""

    def __init__(self, cache: FetchSessionCache, time_ms: Callable[[], int]):
        self.cache = cache
        self.time_ms = time_ms

    def new_context(self, session_id: int, epoch: int, fetch_data: dict[TopicPartition, FetchSpec],
                    to_forget: list[TopicPartition], privileged: bool) -> FetchContext:
        cache = self.cache
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                cache.remove(session_id)          # a full fetch closes the session it names
            if epoch == FINAL_EPOCH:
                return SessionlessContext()
            return FullContext(self, fetch_data, privileged)
        session = cache.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        session.update(fetch_data, to_forget)
        if not session.partitions:
            cache.remove(session_id)       # nothing left to fetch: the session is closed
            return SessionlessContext()
        cache.touch(session, self.time_ms())
        session.epoch = next_epoch(session.epoch)
        return IncrementalContext(session, epoch)

