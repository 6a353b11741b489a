"""Incremental fetch sessions (KIP-227) between real brokers, and the session errors of
a raw Fetch: followers open a session with each leader and then send fetches that list
only what moved, the leaders answer only what changed, and replication keeps every
replica equal through partition additions, a reassignment, leader changes and a broker
restart. librdkafka (kcat) fetches without sessions and still reads everything."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, NewPartitions, NewTopic
from kafkalike.client.connection import BrokerConnection
from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchRequest
from tests.conftest import scratch_dir
from tests.metrics_scrape import Scrape
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PREFIX, SUFFIX = " DEBUG Completed request:", " (kafka.request.logger)"
TOPIC, MANY = "sessions", "sessions-many"


def log_end_offsets(cluster: Cluster) -> dict[tuple[str, int], set[int]]:
    """Every replica's log end offset of our topics, per partition, over the brokers."""
    ends: dict[tuple[str, int], set[int]] = {}
    for broker in cluster.brokers:
        for labels, v in Scrape(broker.metrics_url).series("kafka_log_log_logendoffset").items():
            labels = dict(labels)
            if labels["topic"] in (TOPIC, MANY):
                ends.setdefault((labels["topic"], int(labels["partition"])), set()).add(int(v))
    return ends


def replicas_equal(cluster: Cluster, replicas_of: dict[tuple[str, int], int], at_least: int = 1) -> bool:
    ends = log_end_offsets(cluster)
    return all(tp in ends and len(ends[tp]) == 1 and min(ends[tp]) >= at_least and
               sum(1 for b in cluster.brokers if _hosts(b, tp)) == count
               for tp, count in replicas_of.items())


def _hosts(broker, tp) -> bool:
    return (broker.log_dir / f"{tp[0]}-{tp[1]}").is_dir()


def follower_fetches(broker) -> list[dict]:
    path = broker.app_log_dir / "kafka-request.log"
    out = []
    for line in path.read_text().splitlines():
        if '"requestApiKeyName":"FETCH"' not in line or PREFIX not in line:
            continue
        entry = json.loads(line[line.index(PREFIX) + len(PREFIX):-len(SUFFIX)])
        if entry["request"]["replicaId"] >= 0:
            out.append(entry)
    return out


def produce(bootstrap: str, topic: str, partitions: range, per_partition: int = 20) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for p in partitions:
        for i in range(per_partition):
            producer.produce(topic, value=f"{topic}-{p}-{i}".encode() * 4, partition=p)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def cluster(module_zk_chroot: str) -> Iterator[Cluster]:
    """Three brokers with metrics endpoints and the request log at DEBUG."""
    base = scratch_dir("fetch-sessions")
    log4j = base / "log4j.properties"
    stock = (REPO / "config" / "log4j.properties").read_text()
    log4j.write_text(stock.replace("log4j.logger.kafka.request.logger=WARN, requestAppender",
                                   "log4j.logger.kafka.request.logger=DEBUG, requestAppender"))
    cluster = Cluster(module_zk_chroot, base, 3, {"kafkalike.metrics.host": "127.0.0.1",
                                                  "zookeeper.session.timeout.ms": "6000"})
    taken = {b.port for b in cluster.brokers}
    ports = [p for p in free_ports(6) if p not in taken][:3]
    for broker, port in zip(cluster.brokers, ports):
        broker.overrides["kafkalike.metrics.port"] = str(port)
        broker.metrics_url = f"http://127.0.0.1:{port}/metrics"
    before = os.environ.get("KAFKA_LOG4J_OPTS")
    os.environ["KAFKA_LOG4J_OPTS"] = f"-Dlog4j.configuration=file:{log4j}"
    try:
        cluster.start()
        yield cluster
    finally:
        if before is None:
            os.environ.pop("KAFKA_LOG4J_OPTS", None)
        else:
            os.environ["KAFKA_LOG4J_OPTS"] = before
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


def test_followers_fetch_incrementally_and_replicas_stay_equal(cluster):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic(TOPIC, replica_assignment={p: [p % 3, (p + 1) % 3, (p + 2) % 3]
                                                                 for p in range(3)}),
                             NewTopic(MANY, replica_assignment={p: [p % 3, (p + 1) % 3] for p in range(60)})])
    replicas_of = {**{(TOPIC, p): 3 for p in range(3)}, **{(MANY, p): 2 for p in range(60)}}
    produce(cluster.bootstrap, TOPIC, range(3))
    produce(cluster.bootstrap, MANY, range(0, 60, 7), per_partition=5)
    wait_until(lambda: replicas_equal(cluster, {tp: n for tp, n in replicas_of.items() if tp[0] == TOPIC}),
               what="every replica of the written partitions to hold the same log end")

    # Each leader caches one privileged session per follower broker: broker b leads TOPIC-b
    # (2 followers) and MANY-p for p % 3 == b (20 partitions, followed by broker b+1).
    def sessions_cached():
        for broker in cluster.brokers:
            samples = Scrape(broker.metrics_url)
            if (samples.value("kafka_server_fetchsessioncache_numincrementalfetchsessions"),
                    samples.value("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached")) != (2, 22):
                return False
        return True
    wait_until(sessions_cached, what="two sessions of 22 partitions in all on every leader")

    # Incremental fetches list only partitions whose position moved, and their answers only
    # partitions with news: at rest (a fetch that waited replica.fetch.wait.max.ms for
    # nothing) none at all, where a full fetch lists the 11 partitions each session holds.
    def rest_fetch(f: dict) -> bool:
        return (f["request"]["sessionEpoch"] > 0 and not any(t["partitions"] for t in f["request"]["topics"])
                and not any(t["partitionResponses"] for t in f["response"]["responses"]))
    wait_until(lambda: all(any(map(rest_fetch, follower_fetches(b))) for b in cluster.brokers),
               what="an incremental follower fetch at rest, listing and answering no partition, on every leader")

    for broker in cluster.brokers:
        fetches = follower_fetches(broker)
        incremental = [f for f in fetches if f["request"]["sessionEpoch"] > 0]
        first = {}
        for f in fetches:            # each follower's first fetch is full and opens the session
            first.setdefault(f["request"]["replicaId"], f)
        for f in first.values():
            assert (f["request"]["sessionId"], f["request"]["sessionEpoch"]) == (0, 0)
        assert all(f["response"]["sessionId"] == f["request"]["sessionId"] != 0 for f in incremental)

    # More partitions: the followers add them to their sessions.
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_partitions({TOPIC: NewPartitions(6, [[p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(3, 6)])})
        replicas_of.update({(TOPIC, p): 3 for p in range(3, 6)})
        wait_until(lambda: len(admin.describe_topics([TOPIC])[TOPIC].partitions) == 6, what="6 partitions")
        # A reassignment: MANY-1 moves from [1, 2] to [2, 0]; broker 0 joins it as a new follower.
        admin.alter_partition_reassignments({(MANY, 1): [2, 0]})
        wait_until(lambda: not admin.list_partition_reassignments(), timeout=60, what="the reassignment to end")
    produce(cluster.bootstrap, TOPIC, range(6))
    produce(cluster.bootstrap, MANY, range(1, 2), per_partition=5)
    wait_until(lambda: replicas_equal(cluster, {tp: n for tp, n in replicas_of.items()
                                                if tp[0] == TOPIC or tp == (MANY, 1)}),
               what="the new partitions and the reassigned one replicated")
    assert sorted(b.broker_id for b in cluster.brokers if _hosts(b, (MANY, 1))) == [0, 2]

    # A leader restarts: its followers' sessions are gone with it; they fetch in full again,
    # open new sessions, and replication goes on (the others lead meanwhile, then it follows).
    restarted = cluster.broker(0)
    restarted.stop()
    produce(cluster.bootstrap, TOPIC, range(6))
    restarted.start().wait_ready(60)
    produce(cluster.bootstrap, TOPIC, range(6))
    wait_until(lambda: replicas_equal(cluster, {tp: n for tp, n in replicas_of.items() if tp[0] == TOPIC},
                                      at_least=60), timeout=60,
               what="every replica equal after the restart")
    # Broker 0's new fetchers opened new sessions: a full fetch, then incremental ones in the
    # session it opened (the first of those may still wait in the leader's purgatory).
    def resumed_incrementally(leader) -> bool:
        from_0 = [f for f in follower_fetches(leader) if f["request"]["replicaId"] == 0]
        opened = [i for i, f in enumerate(from_0) if (f["request"]["sessionId"], f["request"]["sessionEpoch"]) == (0, 0)]
        assert len(opened) >= 2, "no full fetch after the restart"
        session = from_0[opened[-1]]["response"]["sessionId"]
        return session != 0 and any(f["request"]["sessionId"] == session and f["request"]["sessionEpoch"] > 0
                                    for f in from_0[opened[-1]:])
    for leader in (cluster.broker(1), cluster.broker(2)):
        wait_until(lambda: resumed_incrementally(leader), timeout=15,
                   what=f"broker 0 fetching incrementally from broker {leader.broker_id} again")


def raw_fetch(conn, session_id: int, epoch: int, partitions=(0,), forget=(), offset: int = 0):
    return conn.send(FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=session_id, session_epoch=epoch,
        topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[
            FetchRequest.FetchPartition(partition=p, fetch_offset=offset, partition_max_bytes=1 << 20)
            for p in partitions])] if partitions else [],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=TOPIC, partitions=list(forget))] if forget else []),
        version=12)


def names(response) -> list[tuple[str, int]]:
    return [(t.topic, p.partition) for t in response.responses for p in t.partition_responses]


def test_session_errors_on_the_wire(cluster):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        leader = admin.describe_topics([TOPIC])[TOPIC].partitions[0].leader
    with BrokerConnection("127.0.0.1", cluster.broker(leader).port) as conn:
        conn.connect()
        unknown = raw_fetch(conn, 123456789, 1)
        assert (unknown.error_code, unknown.session_id, unknown.responses) == \
            (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
        full = raw_fetch(conn, 0, 0)
        assert full.error_code == 0 and full.session_id != 0 and names(full) == [(TOPIC, 0)]
        assert full.responses[0].partition_responses[0].record_set
        sid, end = full.session_id, full.responses[0].partition_responses[0].high_watermark
        # The position moves to the end: nothing new to read and the same high watermark,
        # so the answer lists no partition; nor does the next, which lists none.
        at_end = raw_fetch(conn, sid, 1, partitions=(0,), offset=end)
        assert (at_end.error_code, at_end.session_id, names(at_end)) == (0, sid, [])
        quiet = raw_fetch(conn, sid, 2, partitions=())
        assert (quiet.error_code, quiet.session_id, names(quiet)) == (0, sid, [])
        wrong = raw_fetch(conn, sid, 5, partitions=())
        assert (wrong.error_code, wrong.session_id, wrong.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
        # The session survives a wrong epoch: the right one still works, and records are news.
        moved = raw_fetch(conn, sid, 3, partitions=(0,), offset=1)
        assert moved.error_code == 0 and names(moved) == [(TOPIC, 0)]
        assert moved.responses[0].partition_responses[0].record_set
        # forgotten_topics_data: partition 0 leaves, so the session is empty and closed.
        closed = raw_fetch(conn, sid, 4, partitions=(), forget=(0,))
        assert (closed.error_code, closed.session_id, names(closed)) == (0, 0, [])
        assert raw_fetch(conn, sid, 5, partitions=()).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        # epoch -1 with an id closes the session and is answered in full, sessionless.
        sid = raw_fetch(conn, 0, 0).session_id
        final = raw_fetch(conn, sid, -1)
        assert (final.error_code, final.session_id, names(final)) == (0, 0, [(TOPIC, 0)])
        assert raw_fetch(conn, sid, 1, partitions=()).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_kcat_fetches_without_sessions(cluster):
    """librdkafka sends session id 0, epoch -1: full fetches, answered in full as before."""
    run = subprocess.run(["kcat", "-C", "-b", cluster.bootstrap, "-t", TOPIC, "-p", "0", "-o", "beginning",
                          "-e", "-q", "-f", "%p %o\n"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    offsets = [int(line.split()[1]) for line in run.stdout.splitlines()]
    assert offsets == list(range(len(offsets))) and len(offsets) >= 60
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        leader = admin.describe_topics([TOPIC])[TOPIC].partitions[0].leader
    consumer_fetches = [json.loads(line[line.index(PREFIX) + len(PREFIX):-len(SUFFIX)])
                        for line in (cluster.broker(leader).app_log_dir / "kafka-request.log").read_text().splitlines()
                        if '"requestApiKeyName":"FETCH"' in line and '"clientId":"rdkafka"' in line]
    assert consumer_fetches
    assert all((f["request"].get("sessionId", 0), f["request"].get("sessionEpoch", -1)) == (0, -1) and
               f["response"].get("sessionId", 0) == 0 for f in consumer_fetches)


def test_kafka_python_consumes_in_an_incremental_session(cluster):
    """kafka-python 3 keeps fetch sessions as Java's consumer does: its fetches go
    incremental, and it still reads every record."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="kp-sessions", group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        parts = [TopicPartition(TOPIC, p) for p in range(6)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        seen: dict[int, int] = {}
        deadline = time.monotonic() + 60
        while sum(seen.values()) < sum(ends.values()) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                seen[tp.partition] = seen.get(tp.partition, 0) + len(records)
        for _ in range(4):            # a few quiet fetches after the end
            consumer.poll(timeout_ms=300)
    finally:
        consumer.close()
    assert {p: seen.get(p, 0) for p in range(6)} == {tp.partition: n for tp, n in ends.items()}
    fetches = []
    for broker in cluster.brokers:
        for line in (broker.app_log_dir / "kafka-request.log").read_text().splitlines():
            if '"requestApiKeyName":"FETCH"' in line and '"clientId":"kp-sessions"' in line:
                fetches.append(json.loads(line[line.index(PREFIX) + len(PREFIX):-len(SUFFIX)]))
    incremental = [f for f in fetches if f["request"].get("sessionEpoch", -1) > 0]
    assert incremental, [(f["request"].get("sessionId"), f["request"].get("sessionEpoch")) for f in fetches]
    assert all(f["response"]["errorCode"] == 0 and f["response"]["sessionId"] == f["request"]["sessionId"]
               for f in incremental)


def test_the_kafkalike_consumer_consumes_in_an_incremental_session(cluster):
    from kafkalike.client.consumer import KafkaConsumer, TopicPartition
    parts = [TopicPartition(TOPIC, p) for p in range(6)]
    with KafkaConsumer({"bootstrap.servers": cluster.bootstrap, "client.id": "kl-sessions",
                        "auto.offset.reset": "earliest", "fetch.max.wait.ms": 100}) as consumer:
        consumer.assign(parts)
        ends = consumer.end_offsets(parts)
        counts = {tp: 0 for tp in parts}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in parts) and time.monotonic() < deadline:
            for record in consumer.poll(timeout=0.5):
                counts[TopicPartition(record.topic, record.partition)] += 1
        for _ in range(4):
            consumer.poll(timeout=0.3)
    assert counts == ends
    fetches = []
    for broker in cluster.brokers:
        for line in (broker.app_log_dir / "kafka-request.log").read_text().splitlines():
            if '"requestApiKeyName":"FETCH"' in line and '"clientId":"kl-sessions"' in line:
                fetches.append(json.loads(line[line.index(PREFIX) + len(PREFIX):-len(SUFFIX)]))
    incremental = [f for f in fetches if f["request"].get("sessionEpoch", -1) > 0]
    assert incremental and all(f["response"]["errorCode"] == 0 for f in fetches)
    assert min(sum(len(t["partitions"]) for t in f["request"]["topics"]) for f in incremental) == 0
