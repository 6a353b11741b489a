"""Three real brokers with their Prometheus endpoints, scraped and parsed by Prometheus's
own parser, checked for what an operator checks: produce rates that count exactly what
was produced, request latencies and errors per API, one active controller, a consumer
group and its committed offsets, requests parked in the purgatories, under-replicated,
offline and imbalanced partitions when a broker is killed (and how they end once it is
back), a restarted follower's replication lag, log flushes, the reactor's idle share, and
log end offsets that match what clients read."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.connection import BrokerConnection
from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from kafkalike.protocol.messages.metadata import MetadataRequest
from tests.conftest import scratch_dir
from tests.metrics_scrape import Scrape
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

RECORDS = 500
WHILE_DOWN = 1000      # records produced while a follower is down, one per batch


@pytest.fixture
def cluster(zk_chroot):
    base = scratch_dir("metrics")
    # replica.lag.time.max.ms no shorter than the ZooKeeper session: an acks=all produce
    # waits in the purgatory for seconds after a follower is killed, long enough to see.
    cluster = Cluster(zk_chroot, base, 3, {"zookeeper.session.timeout.ms": "6000",
                                           "replica.lag.time.max.ms": "6000",
                                           "kafkalike.metrics.host": "127.0.0.1"})
    taken = {b.port for b in cluster.brokers}
    ports = [p for p in free_ports(6) if p not in taken][:3]
    for broker, port in zip(cluster.brokers, ports):
        broker.overrides["kafkalike.metrics.port"] = str(port)
        broker.metrics_url = f"http://127.0.0.1:{port}/metrics"
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


def scrape(broker) -> Scrape:
    return Scrape(broker.metrics_url)


def describe(admin, topic):
    md = admin.list_topics(topic, timeout=10)
    return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in md.topics[topic].partitions.values()}


def cluster_sum(cluster, name: str, **labels: str) -> float:
    """A gauge summed over the brokers, as an operator's dashboard sums it."""
    return sum(scrape(b).value(name, **labels) for b in cluster.brokers)


def leaderless_and_not_preferred(admin) -> tuple[int, int]:
    """What the cluster's metadata says: partitions without a leader, and partitions not
    led by their first replica (leaderless ones included, as Kafka counts them)."""
    partitions = [p for t in admin.list_topics(timeout=10).topics.values() for p in t.partitions.values()]
    return (sum(1 for p in partitions if p.leader < 0),
            sum(1 for p in partitions if p.replicas and p.leader != p.replicas[0]))


def test_an_operators_checks_on_a_three_broker_cluster(cluster, zk_chroot):
    # Exactly one broker says it is the active controller.
    def one_controller():
        return sorted(scrape(b).value("kafka_controller_kafkacontroller_activecontrollercount")
                      for b in cluster.brokers) == [0, 0, 1]
    wait_until(one_controller, what="exactly one active controller")
    first = scrape(cluster.brokers[0])
    assert first.content_type.startswith("text/plain")
    assert f"INFO Serving metrics in Prometheus format on {cluster.brokers[0].metrics_url} (kafkalike.metrics)" in \
        cluster.brokers[0].server_log.read_text()
    assert first.families["kafka_server_brokertopicmetrics_messagesin"].type == "counter"
    assert first.families["kafka_network_requestmetrics_totaltimems"].type == "histogram"
    # The reactor's idle share, as both of Kafka's idle metrics (docs/metrics.md).
    idle_ns = first.value("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count")
    assert first.families["kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count"].type == "unknown"
    assert 0 < first.value("kafka_network_socketserver_networkprocessoravgidlepercent") <= 1
    wait_until(lambda: scrape(cluster.brokers[0]).value(
        "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count") > idle_ns + 1e8,
        what="the reactor's idle time growing")

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # flush.messages: every replica fsyncs its log each 100 records (LogFlushRateAndTimeMs).
    admin.create_topics([NewTopic("m", num_partitions=1, replication_factor=3,
                                  config={"min.insync.replicas": "2", "flush.messages": "100"})])["m"].result(20)
    wait_until(lambda: len(describe(admin, "m")[0][2]) == 3, what="full ISR")
    leader_id, replicas, _ = describe(admin, "m")[0]
    leader = cluster.broker(leader_id)
    before = scrape(leader)
    assert before.value("kafka_server_brokertopicmetrics_messagesin_total", 0, topic="m") == 0

    # The followers' fetches wait in the leader's fetch purgatory (replica.fetch.wait.max.ms).
    def fetches_parked():
        s = scrape(leader)
        return (s.value("kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation="Fetch") >= 1
                and s.value("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                            delayedOperation="Fetch") >= 1)
    wait_until(fetches_parked, what="followers' fetches in the leader's fetch purgatory")

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    value = b"v" * 100
    for i in range(RECORDS):
        producer.produce("m", key=b"%d" % i, value=value, partition=0)
    assert producer.flush(30) == 0

    after = scrape(leader)
    # MessagesInPerSec counts exactly the records produced, on the leader only.
    assert after.value("kafka_server_brokertopicmetrics_messagesin_total", topic="m") == RECORDS
    assert after.value("kafka_server_brokertopicmetrics_messagesin_total") - \
        before.value("kafka_server_brokertopicmetrics_messagesin_total") == RECORDS
    assert after.value("kafka_server_brokertopicmetrics_bytesin_total", topic="m") > RECORDS * len(value)
    assert after.value("kafka_server_brokertopicmetrics_totalproducerequests_total", topic="m") >= 1
    assert after.value("kafka_server_brokertopicmetrics_failedproducerequests_total", topic="m") == 0
    for follower_id in (r for r in replicas if r != leader_id):
        follower = scrape(cluster.broker(follower_id))
        assert follower.value("kafka_server_brokertopicmetrics_messagesin_total", 0, topic="m") == 0
        wait_until(lambda f=follower_id: scrape(cluster.broker(f)).value(
            "kafka_server_brokertopicmetrics_replicationbytesin_total") > RECORDS * len(value),
            what="followers' replication bytes in")

    # Request counts and latency histograms per API, Kafka's request names.
    requests = after.series("kafka_network_requestmetrics_requests_total")
    by_request: dict[str, float] = {}
    for labels, count in requests.items():
        name = dict(labels)["request"]
        by_request[name] = by_request.get(name, 0) + count
    for name in ("Produce", "Metadata", "Fetch", "FetchFollower"):
        assert by_request.get(name, 0) > 0, (name, by_request)
    produce_count = after.value("kafka_network_requestmetrics_totaltimems_count", request="Produce")
    assert produce_count == by_request["Produce"]
    buckets = {dict(k)["le"]: v for k, v in after.series("kafka_network_requestmetrics_totaltimems_bucket").items()
               if ("request", "Produce") in k}
    assert buckets["+Inf"] == produce_count and len(buckets) > 10
    assert after.value("kafka_network_requestmetrics_totaltimems_sum", request="Produce") > 0
    assert after.value("kafka_network_requestmetrics_localtimems_count", request="Produce") == produce_count
    # ErrorsPerSec: each answer's error codes, NONE included; one partition per produce here.
    assert after.value("kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") == produce_count
    assert after.value("kafka_network_requestmetrics_errors_total", 0, request="Produce",
                       error="NOT_ENOUGH_REPLICAS") == 0

    def unknown_topic_errors() -> float:
        return scrape(leader).value("kafka_network_requestmetrics_errors_total", 0, request="Metadata",
                                    error="UNKNOWN_TOPIC_OR_PARTITION")
    before_asking = unknown_topic_errors()
    with BrokerConnection("127.0.0.1", leader.port, timeout=10).connect() as conn:
        answer = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="no-such-topic")],
                                           allow_auto_topic_creation=False), 9)
    assert answer.topics[0].error_code == 3          # UNKNOWN_TOPIC_OR_PARTITION
    assert unknown_topic_errors() == before_asking + 1
    # Every replica flushed its log as flush.messages asked, each flush timed.
    def flushes_timed(samples: Scrape) -> bool:
        return (samples.value("kafka_log_logflushstats_logflushrateandtimems_count") >= 1
                and samples.value("kafka_log_logflushstats_logflushrateandtimems_sum") > 0)
    for b in cluster.brokers:
        wait_until(lambda b=b: flushes_timed(scrape(b)), what=f"broker {b.broker_id}'s log flushes, each timed")

    # LogEndOffset is what clients see as the end of the partition, on every replica.
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "metrics-check",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    low, high = consumer.get_watermark_offsets(TopicPartition("m", 0), timeout=10)
    assert (low, high) == (0, RECORDS)
    assert after.value("kafka_log_log_logendoffset", topic="m", partition="0") == high
    assert after.value("kafka_log_log_logstartoffset", topic="m", partition="0") == low
    assert after.value("kafka_log_log_size", topic="m", partition="0") > RECORDS * len(value)
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.fail("kcat is not installed: ./scripts/setup.sh --test installs Debian's kcat package")
    out = subprocess.run([kcat, "-b", cluster.bootstrap, "-Q", "-t", "m:0:-1"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    assert f"offset {int(after.value('kafka_log_log_logendoffset', topic='m', partition='0'))}" in out, out
    for b in cluster.brokers:
        wait_until(lambda b=b: scrape(b).value("kafka_log_log_logendoffset", topic="m", partition="0") == high,
                   what=f"broker {b.broker_id}'s LogEndOffset")

    # A consumer's fetches: BytesOut and FetchConsumer on the leader.
    consumer.assign([TopicPartition("m", 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while got < RECORDS and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            got += 1
    consumer.close()
    assert got == RECORDS
    read = scrape(leader)
    assert read.value("kafka_server_brokertopicmetrics_bytesout_total", topic="m") >= \
        after.value("kafka_log_log_size", topic="m", partition="0")
    assert read.value("kafka_network_requestmetrics_totaltimems_count", request="FetchConsumer") > 0

    # A consumer group: the coordinator counts it, stable while its member is there, and
    # its committed offset; Empty once the member left, the offset kept.
    assert cluster_sum(cluster, "kafka_coordinator_group_groupmetadatamanager_numgroups") == 0
    member = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "metrics-group",
                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    member.subscribe(["m"])
    deadline = time.monotonic() + 30
    msg = None
    while msg is None and time.monotonic() < deadline:
        msg = member.poll(1.0)
    assert msg is not None and msg.error() is None
    member.commit(message=msg, asynchronous=False)

    def group_gauges() -> tuple[float, ...]:
        return tuple(cluster_sum(cluster, f"kafka_coordinator_group_groupmetadatamanager_{name}")
                     for name in ("numgroups", "numgroupsstable", "numgroupsempty", "numoffsets"))
    wait_until(lambda: group_gauges() == (1, 1, 0, 1), what="one stable group with one committed offset")
    member.close()
    wait_until(lambda: group_gauges() == (1, 0, 1, 1), what="the group empty, its offset kept")

    # The active controller's view of the cluster.
    controller = next(b for b in cluster.brokers
                      if scrape(b).value("kafka_controller_kafkacontroller_activecontrollercount") == 1)
    view = scrape(controller)
    assert view.value("kafka_controller_kafkacontroller_globaltopiccount") >= 1
    assert view.value("kafka_controller_kafkacontroller_globalpartitioncount") >= 1
    assert view.value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert view.value("kafka_controller_kafkacontroller_preferredreplicaimbalancecount") == 0

    # The broker to kill: a follower of m, and the only replica of `solo` and the preferred
    # leader of `moved` (whose other replica is m's leader).
    victim_id = next(r for r in replicas if r != leader_id and cluster.broker(r) is not controller)
    for created in admin.create_topics([NewTopic("solo", 1, replica_assignment=[[victim_id]]),
                                        NewTopic("moved", 1, replica_assignment=[[victim_id, leader_id]])]).values():
        created.result(20)
    wait_until(lambda: describe(admin, "solo")[0][0] == victim_id and
               describe(admin, "moved")[0][0] == victim_id and len(describe(admin, "moved")[0][2]) == 2,
               what="solo and moved led by their preferred replica")
    parked = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    parked.produce("m", b"warm-up", partition=0)
    assert parked.flush(30) == 0
    # kill -9 a follower: the leader reports the partition under-replicated ...
    expands_before = scrape(leader).value("kafka_server_replicamanager_isrexpands_total")
    assert scrape(leader).value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    cluster.broker(victim_id).kill()

    # ... and an acks=all produce waits in its purgatory until the ISR is shrunk to the
    # replicas that are there.
    delivered: list = []
    parked.produce("m", b"parked", partition=0, on_delivery=lambda err, msg: delivered.append(err))
    parked.poll(0)

    def produce_parked():
        s = scrape(leader)
        return (s.value("kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation="Produce") >= 1
                and s.value("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                            delayedOperation="Produce") >= 1)
    wait_until(produce_parked, timeout=20, interval=0.05, what="an acks=all produce in the produce purgatory")
    assert not delivered
    assert parked.flush(60) == 0 and delivered == [None]
    assert scrape(leader).value("kafka_server_delayedoperationpurgatory_numdelayedoperations",
                                delayedOperation="Produce") == 0

    def under_replicated():
        s = scrape(leader)
        return (s.value("kafka_server_replicamanager_underreplicatedpartitions") >= 1
                and s.value("kafka_cluster_partition_underreplicated", topic="m", partition="0") == 1)
    wait_until(under_replicated, what="UnderReplicatedPartitions > 0 on the leader")

    # The controller: solo (and __consumer_offsets' partitions on the dead broker, which
    # have one replica here) have no leader; those and moved, now led by its second
    # replica, are not led by their preferred replica. The gauges agree with the metadata.
    def controller_counts() -> tuple[float, float]:
        s = scrape(controller)
        return (s.value("kafka_controller_kafkacontroller_offlinepartitionscount"),
                s.value("kafka_controller_kafkacontroller_preferredreplicaimbalancecount"))
    wait_until(lambda: describe(admin, "solo")[0][0] == -1 and describe(admin, "moved")[0][0] == leader_id,
               what="solo offline and moved's leadership moved")
    wait_until(lambda: controller_counts() == leaderless_and_not_preferred(admin),
               what="offline and imbalanced partitions as the metadata shows them")
    offline, imbalanced = controller_counts()
    assert offline >= 1 and imbalanced >= offline + 1, (offline, imbalanced)

    # While the follower is down, more records, one per batch; when it returns with a
    # fetch of one batch at a time it is behind for a while, and says so (MaxLag).
    behind = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "linger.ms": 0,
                       "batch.num.messages": 1})
    for i in range(WHILE_DOWN):
        behind.produce("m", b"%d" % i, partition=0)
        behind.poll(0)
    assert behind.flush(60) == 0
    end = RECORDS + 2 + WHILE_DOWN

    # ... and none once the follower is back in the ISR.
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=zk_chroot)
    zk.start(timeout=15)
    try:
        wait_until(lambda: zk.exists(f"/brokers/ids/{victim_id}") is None, what="old registration gone")
    finally:
        zk.stop()
    victim = cluster.broker(victim_id)
    victim.overrides["replica.fetch.max.bytes"] = "1"
    victim.restart()
    wait_until(lambda: scrape(victim).value("kafka_server_replicafetchermanager_maxlag", clientId="Replica") > 0,
               interval=0.05, what="the restarted follower's MaxLag while it catches up")
    wait_until(lambda: scrape(leader).value("kafka_server_replicamanager_underreplicatedpartitions") == 0,
               what="UnderReplicatedPartitions back to 0")
    wait_until(lambda: scrape(victim).value("kafka_server_replicafetchermanager_maxlag", clientId="Replica") == 0,
               what="MaxLag back to 0")
    # Partitions are led again; moved is still led by its second replica until a preferred
    # leader election (auto.leader.rebalance runs every 300 s).
    wait_until(lambda: controller_counts() == (0, 1) == leaderless_and_not_preferred(admin),
               what="no offline partition, one imbalanced")
    # The controller timed the broker changes (where leaders are elected), as Kafka's
    # LeaderElectionRateAndTimeMs; the other brokers' timers stayed at zero.
    def elections(b) -> float:
        return scrape(b).value("kafka_controller_controllerstats_leaderelectionrateandtimems_count")
    assert elections(controller) >= 2          # the kill and the return, at least
    assert all(elections(b) == 0 for b in cluster.brokers if b is not controller)
    assert scrape(controller).value("kafka_controller_controllerstats_uncleanleaderelections_total") == 0
    back = scrape(leader)
    assert back.value("kafka_cluster_partition_underreplicated", topic="m", partition="0") == 0
    assert back.value("kafka_cluster_partition_insyncreplicascount", topic="m", partition="0") == 3
    assert back.value("kafka_server_replicamanager_isrexpands_total") > expands_before
    assert back.value("kafka_server_replicamanager_failedisrupdates_total") == 0
    # The restarted broker serves its endpoint again, with its log caught up.
    wait_until(lambda: scrape(victim).value(
        "kafka_log_log_logendoffset", 0, topic="m", partition="0") == end, what="restarted replica caught up")


def test_no_endpoint_unless_configured(broker):
    log = broker.server_log.read_text()
    assert "Serving metrics in Prometheus format" not in log
