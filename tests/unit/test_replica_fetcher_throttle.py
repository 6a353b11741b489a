"""The follower side of the replication throttle in the replica fetcher (Kafka's
shouldFollowerThrottle), driven with a fake leader connection, a fake quota and Twisted's
Clock, no sockets: a throttled replica that lags is left out of the fetch while the
follower quota is used up, an in-sync or unthrottled one never is, the bytes a throttled
replica fetches are recorded against the quota, and a fetcher whose every partition is
held back waits replica.fetch.backoff.ms before it looks again."""
from __future__ import annotations

from types import SimpleNamespace

from twisted.internet.task import Clock

from kafkalike.broker import replica_fetcher as fetcher_module
from kafkalike.broker.replica_fetcher import FetchState, ReplicaFetcher
from kafkalike.protocol.messages.fetch import FetchResponse
from tests.unit.test_replication_connections import FakeConnector

CONFIG = {"replica.fetch.wait.max.ms": 500, "replica.fetch.min.bytes": 1,
          "replica.fetch.response.max.bytes": 10 << 20, "replica.fetch.max.bytes": 1 << 20,
          "replica.fetch.backoff.ms": 1000, "replica.socket.timeout.ms": 30000}


class FakeQuota:
    """ReplicationQuota's three calls: which replicas are throttled, is the rate over, record."""

    def __init__(self, throttled: set[tuple[str, int]]):
        self.throttled = throttled
        self.exceeded = False
        self.recorded: list[int] = []

    def is_throttled(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self.throttled

    def is_exceeded(self) -> bool:
        return self.exceeded

    def record(self, size: int) -> None:
        self.recorded.append(size)


class FakeLog:
    """What the fetcher reads and calls on a follower's log."""

    def __init__(self):
        self.log_end_offset = 0
        self.log_start_offset = 0
        self.high_watermark = 0
        self.leader_epoch_cache = SimpleNamespace(latest_epoch=None)

    def append_as_follower(self, records: bytes):
        count = len(records) // 10               # the fake batches are ten bytes a record
        first = self.log_end_offset
        self.log_end_offset += count
        return SimpleNamespace(valid_bytes=len(records), batch_count=1, last_offset=first + count - 1)

    def update_high_watermark(self, offset: int) -> None:
        self.high_watermark = offset

    def maybe_increment_log_start_offset(self, offset: int) -> None:
        self.log_start_offset = offset


MOVING, SYNCED, FREE = ("moving", 0), ("synced", 0), ("free", 0)


def fetcher_with(monkeypatch, quota: FakeQuota):
    connector = FakeConnector()
    monkeypatch.setattr(fetcher_module.outbound, "connect", connector)
    clock = Clock()
    partitions = {tp: SimpleNamespace(log=FakeLog()) for tp in (MOVING, SYNCED, FREE)}
    replicas = SimpleNamespace(partitions=partitions, stats=SimpleNamespace(replicated_in=lambda size: None),
                               fetch_purgatory=SimpleNamespace(check_and_complete=lambda tp: None))
    fetcher = ReplicaFetcher(1, SimpleNamespace(get=CONFIG.__getitem__), clock, replicas, 0, "127.0.0.1", 9092, quota)
    return fetcher, connector, clock


def requested(connection) -> list[set[tuple[str, int]]]:
    return [{(t.topic, p.partition) for t in body.topics for p in t.partitions} for body, _ in connection.requests]


def answer(connection, hw: int, records: dict[tuple[str, int], bytes] | None = None,
           errors: dict[tuple[str, int], int] | None = None) -> None:
    """Answer the last request: every partition it named, at high watermark `hw`, with
    the records or error code given for it."""
    records, errors = records or {}, errors or {}
    body, d = connection.requests[-1]
    d.callback(FetchResponse(session_id=0, responses=[
        FetchResponse.FetchableTopicResponse(topic=t.topic, partition_responses=[
            FetchResponse.FetchablePartitionResponse(partition=p.partition, high_watermark=hw,
                                                     log_start_offset=0,
                                                     error_code=int(errors.get((t.topic, p.partition), 0)),
                                                     record_set=records.get((t.topic, p.partition), b""))
            for p in t.partitions])
        for t in body.topics]))


def test_a_lagging_throttled_replica_waits_out_the_quota_and_an_in_sync_one_never_does(monkeypatch):
    quota = FakeQuota({MOVING, SYNCED})
    quota.exceeded = True
    fetcher, connector, _ = fetcher_with(monkeypatch, quota)
    fetcher.partitions[SYNCED] = FetchState(0, 1, in_sync=True)
    fetcher.partitions[FREE] = FetchState(0, 1)
    fetcher.add(MOVING, FetchState(0, 1))           # behind its leader, throttled: held back

    [conn] = connector.made
    assert requested(conn) == [{SYNCED, FREE}]
    answer(conn, hw=0)
    assert requested(conn)[-1] == {SYNCED, FREE}     # still over the quota: still left out

    quota.exceeded = False                           # the rate fell back under the limit
    answer(conn, hw=0)
    assert requested(conn)[-1] == {MOVING, SYNCED, FREE}

    # What a throttled replica fetches counts against the follower quota; an unthrottled one's does not.
    answer(conn, hw=50, records={MOVING: b"x" * 300, FREE: b"y" * 200, SYNCED: b"z" * 500})
    # (Kafka's "traffic from both in-sync and out of sync replicas are accounted for")
    assert sorted(quota.recorded) == [300, 500]
    assert fetcher.partitions[MOVING].fetch_offset == 30 and not fetcher.partitions[MOVING].in_sync
    quota.exceeded = True
    assert requested(conn)[-1] == {MOVING, SYNCED, FREE}     # this request was built before the change
    answer(conn, hw=50)
    assert requested(conn)[-1] == {SYNCED, FREE}

    # Once it has caught up with the leader's high watermark it is in sync and never held back.
    quota.exceeded = False
    answer(conn, hw=50)
    answer(conn, hw=50, records={MOVING: b"x" * 200})
    assert fetcher.partitions[MOVING].in_sync
    quota.exceeded = True
    answer(conn, hw=50)
    assert requested(conn)[-1] == {MOVING, SYNCED, FREE}
    fetcher.stop()


def test_with_every_partition_held_back_the_fetcher_backs_off(monkeypatch):
    quota = FakeQuota({MOVING})
    quota.exceeded = True
    fetcher, connector, clock = fetcher_with(monkeypatch, quota)
    fetcher.add(MOVING, FetchState(0, 1))

    [conn] = connector.made
    assert conn.requests == []                       # nothing to ask for
    clock.advance(CONFIG["replica.fetch.backoff.ms"] / 1000 - 0.01)
    assert conn.requests == []
    quota.exceeded = False
    clock.advance(0.01)                              # replica.fetch.backoff.ms later it looks again
    assert requested(conn) == [{MOVING}]
    fetcher.stop()


def test_without_a_quota_or_a_listed_replica_nothing_is_held_back(monkeypatch):
    quota = FakeQuota(set())                         # the topic lists no replica of this broker
    quota.exceeded = True
    fetcher, connector, _ = fetcher_with(monkeypatch, quota)
    fetcher.add(MOVING, FetchState(0, 1))
    [conn] = connector.made
    assert requested(conn) == [{MOVING}]
    answer(conn, hw=10, records={MOVING: b"x" * 50})
    assert quota.recorded == []
    fetcher.stop()

    unthrottled, connector, _ = fetcher_with(monkeypatch, None)     # no follower quota at all
    unthrottled.add(MOVING, FetchState(0, 1))
    assert requested(connector.made[0]) == [{MOVING}]
    unthrottled.stop()


def test_the_follower_quota_reads_the_follower_keys():
    """KafkaServer._replication_quota("follower"): follower.replication.throttled.rate of this
    broker and follower.replication.throttled.replicas of the topic, read at each check."""
    from kafkalike.broker.server import KafkaServer
    rates = {"follower.replication.throttled.rate": 100, "leader.replication.throttled.rate": 2**63 - 1}
    topics = {"moving": SimpleNamespace(follower_replication_throttled_replicas=("0:1",),
                                        leader_replication_throttled_replicas=("0:0",))}
    server = SimpleNamespace(
        broker_id=1, config=SimpleNamespace(get={"replication.quota.window.num": 2,
                                                 "replication.quota.window.size.seconds": 1}.__getitem__),
        dynamic_config=SimpleNamespace(replication_throttled_rate=rates.__getitem__),
        topic_configs=SimpleNamespace(effective=topics.__getitem__))
    quota = KafkaServer._replication_quota(server, "follower")
    assert quota.is_throttled("moving", 0) and not quota.is_throttled("moving", 1)
    quota.record(250)
    assert quota.is_exceeded()                       # 250 B over the 1 s minimum span > 100 B/s
    rates["follower.replication.throttled.rate"] = 2**63 - 1
    assert not quota.is_exceeded()
