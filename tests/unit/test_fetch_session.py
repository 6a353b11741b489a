"""Incremental fetch sessions (KIP-227): the session cache and Kafka 2.8's session rules,
on a fake clock (kafkalike/broker/fetch_session.py)."""
from __future__ import annotations

import random

import pytest

from kafkalike.broker.fetch_session import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchManager,
    FetchSessionCache,
    FullContext,
    IncrementalContext,
    SessionErrorContext,
    SessionlessContext,
    next_epoch,
)
from kafkalike.broker.replica_manager import FetchSpec
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchResponse

_Topic = FetchResponse.FetchableTopicResponse
_Part = FetchResponse.FetchablePartitionResponse


class Clock:
    def __init__(self):
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def specs(*tps, offset=0):
    return {tp: FetchSpec(offset, 1048576) for tp in tps}


def answer(parts: dict, hw=10, lso=0):
    """A FetchResponse for {tp: records}, every partition with the same offsets."""
    topics: list = []
    for (topic, partition), records in parts.items():
        if not topics or topics[-1].topic != topic:
            topics.append(_Topic(topic=topic, partition_responses=[]))
        topics[-1].partition_responses.append(_Part(partition=partition, error_code=0, high_watermark=hw,
                                                    last_stable_offset=hw, log_start_offset=lso,
                                                    record_set=records))
    return FetchResponse(error_code=0, session_id=0, responses=topics)


def listed(response) -> list:
    return [(t.topic, p.partition) for t in response.responses for p in t.partition_responses]


def manager(slots=10, eviction_ms=120_000):
    clock = Clock()
    return FetchManager(FetchSessionCache(slots, eviction_ms, random.Random(7)), clock), clock


def open_session(mgr, tps, privileged=True, hw=10):
    ctx = mgr.new_context(0, 0, specs(*tps), [], privileged)
    assert isinstance(ctx, FullContext)
    response = ctx.finish(answer({tp: b"" for tp in tps}, hw=hw))
    return response.session_id


def test_next_epoch_wraps_to_one_and_final_stays_final():
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_sessionless_full_and_close():
    mgr, _ = manager()
    assert isinstance(mgr.new_context(0, FINAL_EPOCH, specs(("t", 0)), [], True), SessionlessContext)
    sid = open_session(mgr, [("t", 0), ("t", 1)])
    assert sid != INVALID_SESSION_ID and len(mgr.cache) == 1 and mgr.cache.total_partitions == 2
    assert mgr.cache.get(sid).epoch == 1
    # epoch -1 with the id closes the session and is answered sessionless
    assert isinstance(mgr.new_context(sid, FINAL_EPOCH, specs(("t", 0)), [], True), SessionlessContext)
    assert len(mgr.cache) == 0 and mgr.cache.total_partitions == 0


def test_full_fetch_naming_a_session_replaces_it():
    mgr, _ = manager()
    sid = open_session(mgr, [("t", 0)])
    ctx = mgr.new_context(sid, 0, specs(("t", 0)), [], True)
    assert isinstance(ctx, FullContext) and mgr.cache.get(sid) is None
    new = ctx.finish(answer({("t", 0): b""})).session_id
    assert new not in (sid, INVALID_SESSION_ID)


def test_session_errors():
    mgr, _ = manager()
    ctx = mgr.new_context(12345, 1, {}, [], True)
    assert isinstance(ctx, SessionErrorContext) and ctx.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    response = ctx.finish(None)
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND and response.session_id == 0
    assert response.responses == []
    sid = open_session(mgr, [("t", 0)])
    ctx = mgr.new_context(sid, 2, {}, [], True)       # the session expects epoch 1
    assert ctx.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    ctx = mgr.new_context(sid, 1, {}, [], True)
    assert isinstance(ctx, IncrementalContext)
    assert mgr.new_context(sid, 1, {}, [], True).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH  # a replay


def test_incremental_reads_every_partition_and_answers_only_news():
    mgr, _ = manager()
    tps = [("a", 0), ("a", 1), ("b", 0)]
    sid = open_session(mgr, tps, hw=10)
    # only a-1's position changed: it alone is sent, yet all three are read
    ctx = mgr.new_context(sid, 1, {("a", 1): FetchSpec(5, 1048576)}, [], True)
    assert list(ctx.partitions) == tps
    assert ctx.partitions[("a", 1)].fetch_offset == 5 and ctx.partitions[("a", 0)].fetch_offset == 0
    response = ctx.finish(answer({("a", 0): b"", ("a", 1): b"records", ("b", 0): b""}, hw=10))
    assert response.session_id == sid and listed(response) == [("a", 1)]
    # nothing new: an empty answer that keeps the session
    ctx = mgr.new_context(sid, 2, {}, [], True)
    assert listed(ctx.finish(answer({tp: b"" for tp in ctx.partitions}, hw=10))) == []
    # a moved high watermark and a moved log start offset are news, once
    ctx = mgr.new_context(sid, 3, {}, [], True)
    order = [("a", 0), ("b", 0), ("a", 1)]           # a-1 went to the back when it was answered
    assert listed(ctx.finish(answer({tp: b"" for tp in ctx.partitions}, hw=11))) == order
    ctx = mgr.new_context(sid, 4, {}, [], True)
    assert listed(ctx.finish(answer({tp: b"" for tp in ctx.partitions}, hw=11, lso=3))) == order
    ctx = mgr.new_context(sid, 5, {}, [], True)
    assert listed(ctx.finish(answer({tp: b"" for tp in ctx.partitions}, hw=11, lso=3))) == []


def test_answered_partitions_move_to_the_back():
    mgr, _ = manager()
    tps = [("a", 0), ("a", 1), ("a", 2)]
    sid = open_session(mgr, tps)
    ctx = mgr.new_context(sid, 1, {}, [], True)
    ctx.finish(answer({("a", 0): b"x", ("a", 1): b"", ("a", 2): b""}))
    ctx = mgr.new_context(sid, 2, {}, [], True)
    assert list(ctx.partitions) == [("a", 1), ("a", 2), ("a", 0)]


def test_errors_and_diverging_epochs_are_always_sent_and_recovery_is_too():
    mgr, _ = manager()
    sid = open_session(mgr, [("a", 0)])
    for epoch in (1, 2):
        ctx = mgr.new_context(sid, epoch, {}, [], True)
        response = answer({("a", 0): None}, hw=-1, lso=-1)
        response.responses[0].partition_responses[0].error_code = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        assert listed(ctx.finish(response)) == [("a", 0)]
    # the error cleared with the old high watermark: still sent, as the cache forgot it
    ctx = mgr.new_context(sid, 3, {}, [], True)
    assert listed(ctx.finish(answer({("a", 0): b""}, hw=10))) == [("a", 0)]
    ctx = mgr.new_context(sid, 4, {}, [], True)
    response = answer({("a", 0): b""})
    response.responses[0].partition_responses[0].diverging_epoch = FetchResponse.EpochEndOffset(epoch=3, end_offset=7)
    assert listed(ctx.finish(response)) == [("a", 0)]


def test_forgotten_partitions_leave_and_an_empty_session_closes():
    mgr, _ = manager()
    sid = open_session(mgr, [("a", 0), ("a", 1)])
    ctx = mgr.new_context(sid, 1, specs(("b", 0)), [("a", 0)], True)
    assert list(ctx.partitions) == [("a", 1), ("b", 0)]
    assert mgr.cache.total_partitions == 2
    ctx = mgr.new_context(sid, 2, {}, [("a", 1), ("b", 0)], True)
    assert isinstance(ctx, SessionlessContext) and mgr.cache.get(sid) is None
    assert mgr.cache.total_partitions == 0


def test_a_replaced_epoch_while_waiting_answers_invalid_epoch():
    """A fetch that waited in the purgatory finds its session moved on by a newer fetch."""
    mgr, _ = manager()
    sid = open_session(mgr, [("a", 0)])
    waiting = mgr.new_context(sid, 1, {}, [], True)
    mgr.new_context(sid, 2, {}, [], True)
    response = waiting.finish(answer({("a", 0): b"x"}))
    assert response.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH and response.responses == []
    assert response.session_id == sid


def test_throttled_answers_are_empty_and_teach_the_session_nothing():
    mgr, _ = manager()
    sid = open_session(mgr, [("a", 0)])
    ctx = mgr.new_context(sid, 1, {}, [], False)
    full = answer({("a", 0): b"12345"}, hw=20)
    assert ctx.response_size(full) == 5
    throttled = ctx.throttled(full)
    assert throttled.responses == [] and throttled.session_id == sid
    ctx = mgr.new_context(sid, 2, {}, [], False)
    assert listed(ctx.finish(answer({("a", 0): b""}, hw=20))) == [("a", 0)]   # hw 20 never told
    ctx = FetchManager(mgr.cache, mgr.time_ms).new_context(0, 0, specs(("z", 0)), [], False)
    assert ctx.throttled(answer({("z", 0): b"x"})).session_id == 0


def test_no_slot_means_session_id_zero():
    mgr, _ = manager(slots=0)
    assert open_session(mgr, [("a", 0)]) == INVALID_SESSION_ID and len(mgr.cache) == 0


@pytest.mark.parametrize("privileged", [True, False])
def test_stale_sessions_are_evicted_first(privileged):
    mgr, clock = manager(slots=2)
    first = open_session(mgr, [("a", 0)], privileged=True)
    clock.now += 1
    second = open_session(mgr, [("a", 0), ("a", 1)], privileged=True)
    clock.now += 120_001 - 1       # the first is idle for more than 2 minutes, the second not
    third = open_session(mgr, [("b", 0)], privileged=privileged)
    assert third != INVALID_SESSION_ID
    assert mgr.cache.get(first) is None and mgr.cache.get(second) is not None
    assert mgr.cache.evictions == 1


def test_followers_evict_consumers_but_not_the_reverse():
    mgr, clock = manager(slots=1)
    consumer = open_session(mgr, [("a", 0), ("a", 1), ("a", 2)], privileged=False)
    clock.now += 1000
    # a new consumer session may not take the slot of a recent one ...
    assert open_session(mgr, [("b", 0), ("b", 1), ("b", 2), ("b", 3)], privileged=False) == 0
    # ... but a follower's may, even with fewer partitions
    follower = open_session(mgr, [("c", 0)], privileged=True)
    assert follower != 0 and mgr.cache.get(consumer) is None and mgr.cache.evictions == 1
    clock.now += 1000
    assert open_session(mgr, [("d", 0)], privileged=True) == 0          # a recent follower stays
    assert open_session(mgr, [("d", 0)], privileged=False) == 0


def test_old_sessions_yield_to_larger_ones():
    mgr, clock = manager(slots=1, eviction_ms=10_000)
    small = open_session(mgr, [("a", 0)], privileged=True)
    clock.now += 5_000
    mgr.new_context(small, 1, {}, [], True)           # used: not stale
    clock.now += 5_001
    mgr.new_context(small, 2, {}, [], True)           # touched when older than eviction_ms
    clock.now += 1
    assert open_session(mgr, [("b", 0)], privileged=True) == 0              # same size: (T,1,0) < (T,1,id)
    big = open_session(mgr, [("b", 0), ("b", 1)], privileged=True)
    assert big != 0 and mgr.cache.get(small) is None


def test_cached_partition_keeps_what_it_told():
    cached = CachedPartition(FetchSpec(0, 100), high_watermark=5, local_log_start_offset=0)
    part = _Part(partition=0, error_code=0, high_watermark=6, log_start_offset=0, record_set=b"")
    assert cached.must_respond(part, update=False) and cached.high_watermark == 5
    assert cached.must_respond(part, update=True) and cached.high_watermark == 6
    assert not cached.must_respond(part, update=True)


# -- the fetcher's side (kafkalike/common/fetch_session_handler.py) -----------------------

def test_handler_full_then_incremental_with_only_changes():
    from kafkalike.common.fetch_session_handler import FetchSessionHandler
    h = FetchSessionHandler()
    first = h.build({("a", 0): (0,), ("a", 1): (0,)})
    assert first.full and (first.session_id, first.epoch) == (0, 0) and list(first.to_send) == [("a", 0), ("a", 1)]
    assert h.handle_response(0, 77, [("a", 0), ("a", 1)])
    second = h.build({("a", 0): (5,), ("a", 1): (0,), ("b", 0): (0,)})
    assert not second.full and (second.session_id, second.epoch) == (77, 1)
    assert second.to_send == {("a", 0): (5,), ("b", 0): (0,)} and second.to_forget == []
    assert h.handle_response(0, 77, [("a", 0)])
    third = h.build({("a", 0): (5,), ("b", 0): (0,)})
    assert (third.epoch, third.to_send, third.to_forget) == (2, {}, [("a", 1)])


def test_handler_errors_send_a_full_fetch_next():
    from kafkalike.common.fetch_session_handler import FetchSessionHandler
    h = FetchSessionHandler()
    h.build({("a", 0): (0,)})
    assert h.handle_response(0, 77, [("a", 0)])
    h.build({("a", 0): (0,)})
    assert not h.handle_response(int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), 0, [])
    again = h.build({("a", 0): (0,)})
    assert again.full and (again.session_id, again.epoch) == (77, 0)      # closes 77, opens a new one
    assert h.handle_response(0, 78, [("a", 0)])
    h.build({("a", 0): (0,)})
    assert not h.handle_response(int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND), 0, [])
    assert (h.build({("a", 0): (0,)}).session_id, h.epoch) == (0, 0)
    # a full answer missing a partition, or an incremental one naming an unknown partition
    assert not h.handle_response(0, 79, [])
    h.build({("a", 0): (0,)})
    assert h.handle_response(0, 80, [("a", 0)])
    h.build({("a", 0): (0,)})
    assert not h.handle_response(0, 80, [("z", 9)]) and h.full
    # a lost connection
    h.build({("a", 0): (0,)})
    assert h.handle_response(0, 81, [("a", 0)])
    h.handle_error()
    assert h.build({("a", 0): (0,)}).full
    # a broker without a free slot answers session 0: full fetches go on
    assert h.handle_response(0, 0, [("a", 0)]) and h.build({("a", 0): (0,)}).full


def test_with_news_picks_the_partitions_the_answer_keeps():
    """The handler builds an incremental answer only for these: the same rule as the
    answer's filter, applied to the replica manager's read results."""
    from kafkalike.broker.replica_manager import FetchResult
    mgr, _ = manager()
    tps = [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("a", 4), ("a", 5)]
    sid = open_session(mgr, tps, hw=10)
    ctx = mgr.new_context(sid, 1, {}, [], True)
    results = {("a", 0): FetchResult(ErrorCode.NONE, 10, 0, b""),
               ("a", 1): FetchResult(ErrorCode.NONE, 10, 0, b"records"),
               ("a", 2): FetchResult(ErrorCode.NONE, 11, 0, b""),
               ("a", 3): FetchResult(ErrorCode.NONE, 10, 2, b""),
               ("a", 4): FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, None)}
    refused = FetchResult(error=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    assert ctx.with_news(results, tps, refused) == [("a", 1), ("a", 2), ("a", 3), ("a", 4), ("a", 5)]
    assert FullContext(mgr, specs(*tps), True).with_news(results, tps, refused) == tps
