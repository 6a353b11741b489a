"""How the replica fetcher takes a leader's errors and silence, with a fake leader
connection and Twisted's Clock: a partition answered with an error sits out
replica.fetch.backoff.ms while the fetcher's other partitions keep fetching at once (as
Kafka's delayPartitions), and a fetch the leader never answers is given up after
replica.socket.timeout.ms on a new connection with a full fetch."""
from __future__ import annotations

from kafkalike.broker.replica_fetcher import FetchState
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchResponse
from tests.unit.test_replica_fetcher_throttle import CONFIG, FREE, MOVING, SYNCED, answer, fetcher_with, requested

GONE = SYNCED          # stands for a partition of a topic deleted while this broker was away


def test_a_partition_the_leader_does_not_host_waits_while_the_others_fetch_on(monkeypatch):
    fetcher, connector, clock = fetcher_with(monkeypatch, None)
    fetcher.partitions[GONE] = FetchState(0, 1)
    fetcher.add(MOVING, FetchState(0, 1))
    [conn] = connector.made
    assert requested(conn) == [{MOVING, GONE}]

    answer(conn, hw=5, records={MOVING: b"x" * 10}, errors={GONE: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
    # The next fetch goes out at once, without the partition in error.
    assert len(conn.requests) == 2 and requested(conn)[-1] == {MOVING}
    for _ in range(5):                       # five answers inside one backoff: MOVING keeps up
        answer(conn, hw=5, records={MOVING: b"x" * 10})
    assert fetcher.partitions[MOVING].fetch_offset == 6 and len(conn.requests) == 7
    assert all(r == {MOVING} for r in requested(conn)[1:])

    clock.advance(CONFIG["replica.fetch.backoff.ms"] / 1000)     # its backoff is over: asked for again
    answer(conn, hw=6)
    assert requested(conn)[-1] == {MOVING, GONE}
    fetcher.stop()


def test_with_every_partition_in_error_the_fetcher_waits_the_backoff(monkeypatch):
    fetcher, connector, clock = fetcher_with(monkeypatch, None)
    fetcher.add(FREE, FetchState(0, 1))
    [conn] = connector.made
    answer(conn, hw=0, errors={FREE: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    assert len(conn.requests) == 1                   # nothing ready to ask for
    clock.advance(CONFIG["replica.fetch.backoff.ms"] / 1000)
    assert requested(conn) == [{FREE}, {FREE}]
    fetcher.stop()


def test_a_fetch_never_answered_is_given_up_after_the_socket_timeout(monkeypatch):
    fetcher, connector, clock = fetcher_with(monkeypatch, None)
    fetcher.add(MOVING, FetchState(0, 1))
    [first] = connector.made
    _, opened = first.requests[0]
    opened.callback(FetchResponse(session_id=7, responses=[FetchResponse.FetchableTopicResponse(
        topic=MOVING[0], partition_responses=[FetchResponse.FetchablePartitionResponse(
            partition=MOVING[1], high_watermark=0, log_start_offset=0)])]))
    assert [(b.session_id, b.session_epoch) for b, _ in first.requests] == [(0, 0), (7, 1)]    # in a session
    clock.advance(CONFIG["replica.socket.timeout.ms"] / 1000 - 1)
    assert len(connector.made) == 1                  # still waiting on the leader
    clock.advance(1)                                 # replica.socket.timeout.ms: given up, connection closed
    assert first.closed.called
    clock.advance(CONFIG["replica.fetch.backoff.ms"] / 1000)
    assert len(connector.made) == 2                  # a new connection, and a full fetch on it
    [(body, _)] = connector.made[1].requests
    assert body.session_epoch == 0 and requested(connector.made[1]) == [{MOVING}]     # closing session 7
    fetcher.stop()
