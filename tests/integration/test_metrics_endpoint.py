"""Three real brokers with their Prometheus endpoints, scraped and parsed by Prometheus's
own parser, checked for what an operator checks: produce rates that count exactly what
was produced, request latencies per API, one active controller, under-replicated
partitions when a follower is killed (and none once it is back), log end offsets that
match what clients read."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import scratch_dir
from tests.metrics_scrape import Scrape
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

RECORDS = 500


@pytest.fixture
def cluster(zk_chroot):
    base = scratch_dir("metrics")
    cluster = Cluster(zk_chroot, base, 3, {"zookeeper.session.timeout.ms": "6000",
                                           "replica.lag.time.max.ms": "3000",
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

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("m", num_partitions=1, replication_factor=3,
                                  config={"min.insync.replicas": "2"})])["m"].result(20)
    wait_until(lambda: len(describe(admin, "m")[0][2]) == 3, what="full ISR")
    leader_id, replicas, _ = describe(admin, "m")[0]
    leader = cluster.broker(leader_id)
    before = scrape(leader)
    assert before.value("kafka_server_brokertopicmetrics_messagesin_total", 0, topic="m") == 0

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

    # LogEndOffset is what clients see as the end of the partition, on every replica.
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "metrics-check",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    low, high = consumer.get_watermark_offsets(TopicPartition("m", 0), timeout=10)
    assert (low, high) == (0, RECORDS)
    assert after.value("kafka_log_log_logendoffset", topic="m", partition="0") == high
    assert after.value("kafka_log_log_logstartoffset", topic="m", partition="0") == low
    assert after.value("kafka_log_log_size", topic="m", partition="0") > RECORDS * len(value)
    kcat = shutil.which("kcat")
    if kcat:
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

    # The active controller's view of the cluster.
    controller = next(b for b in cluster.brokers
                      if scrape(b).value("kafka_controller_kafkacontroller_activecontrollercount") == 1)
    view = scrape(controller)
    assert view.value("kafka_controller_kafkacontroller_globaltopiccount") >= 1
    assert view.value("kafka_controller_kafkacontroller_globalpartitioncount") >= 1
    assert view.value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0

    # kill -9 a follower: the leader reports the partition under-replicated ...
    victim_id = next(r for r in replicas if r != leader_id and cluster.broker(r) is not controller)
    expands_before = scrape(leader).value("kafka_server_replicamanager_isrexpands_total")
    assert scrape(leader).value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    cluster.broker(victim_id).kill()

    def under_replicated():
        s = scrape(leader)
        return (s.value("kafka_server_replicamanager_underreplicatedpartitions") >= 1
                and s.value("kafka_cluster_partition_underreplicated", topic="m", partition="0") == 1)
    wait_until(under_replicated, what="UnderReplicatedPartitions > 0 on the leader")

    # ... and none once the follower is back in the ISR.
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=zk_chroot)
    zk.start(timeout=15)
    try:
        wait_until(lambda: zk.exists(f"/brokers/ids/{victim_id}") is None, what="old registration gone")
    finally:
        zk.stop()
    cluster.broker(victim_id).restart()
    wait_until(lambda: scrape(leader).value("kafka_server_replicamanager_underreplicatedpartitions") == 0,
               what="UnderReplicatedPartitions back to 0")
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
    # The restarted broker serves its endpoint again, with its log as before.
    wait_until(lambda: scrape(cluster.broker(victim_id)).value(
        "kafka_log_log_logendoffset", 0, topic="m", partition="0") == RECORDS, what="restarted replica caught up")


def test_no_endpoint_unless_configured(broker):
    log = broker.server_log.read_text()
    assert "Serving metrics in Prometheus format" not in log
