"""The metrics floor: JMX names, the JMX exporter's Prometheus names, the counts the hot
paths make and their exposition, read back with Prometheus's own parser."""
from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet.testing import StringTransport
from twisted.web.server import NOT_DONE_YET
from twisted.web.test.requesthelper import DummyRequest

from kafkalike.broker.config import KafkaConfig
from kafkalike.broker.metrics import BrokerMetrics
from kafkalike.broker.network import KafkaServerFactory
from kafkalike.broker.registry import load_handlers
from kafkalike.broker.replica_manager import FetchParams, FetchSpec, ReplicaManager
from kafkalike.metrics import (
    ControllerStats,
    Histogram,
    Kind,
    MetricName,
    MetricsRegistry,
    Reading,
    ReplicaStats,
    RequestMetrics,
)
from kafkalike.metrics import naming
from kafkalike.metrics.exposition import prometheus_registry, render
from kafkalike.metrics.http import MetricsResource
from kafkalike.protocol.api import decode_response, encode_request
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.records.batch import encode_batch
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager
from tests.unit.broker_fakes import services

load_handlers()


def scrape(registry: MetricsRegistry, accept: str | None = None) -> dict:
    """sample name -> {frozenset(labels): value}, through the Prometheus parser."""
    body, _ = render(registry.readings(), accept)
    out: dict = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def families(registry: MetricsRegistry) -> dict:
    body, _ = render(registry.readings())
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


# -- names ------------------------------------------------------------------------------


def test_mbean_names_keep_kafkas_property_order():
    name = MetricName("kafka.log", "Log", "LogEndOffset", (("topic", "t"), ("partition", "0")))
    assert name.mbean == "kafka.log:type=Log,name=LogEndOffset,topic=t,partition=0"
    assert MetricName("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec").tagged(("topic", "x")).mbean == \
        "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=x"


@pytest.mark.parametrize("name, kind, expected", [
    (MetricName("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec"), Kind.METER,
     "kafka_server_brokertopicmetrics_messagesin_total"),
    (MetricName("kafka.server", "BrokerTopicMetrics", "TotalProduceRequestsPerSec"), Kind.METER,
     "kafka_server_brokertopicmetrics_totalproducerequests_total"),
    (MetricName("kafka.network", "RequestMetrics", "RequestsPerSec"), Kind.METER,
     "kafka_network_requestmetrics_requests_total"),
    (MetricName("kafka.server", "ReplicaManager", "UnderReplicatedPartitions"), Kind.GAUGE,
     "kafka_server_replicamanager_underreplicatedpartitions"),
    (MetricName("kafka.controller", "KafkaController", "ActiveControllerCount"), Kind.GAUGE,
     "kafka_controller_kafkacontroller_activecontrollercount"),
    (MetricName("kafka.coordinator.group", "GroupMetadataManager", "NumGroups"), Kind.GAUGE,
     "kafka_coordinator_group_groupmetadatamanager_numgroups"),
    (MetricName("kafka.log", "Log", "LogEndOffset"), Kind.GAUGE, "kafka_log_log_logendoffset"),
    (MetricName("kafka.network", "RequestMetrics", "TotalTimeMs"), Kind.HISTOGRAM,
     "kafka_network_requestmetrics_totaltimems"),
    (MetricName("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs"), Kind.HISTOGRAM,
     "kafka_controller_controllerstats_leaderelectionrateandtimems"),
    (MetricName("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec"), Kind.METER,
     "kafka_controller_controllerstats_uncleanleaderelections_total"),
])
def test_names_are_the_jmx_exporters(name, kind, expected):
    assert naming.sample_name(name, kind) == expected


def test_only_meters_lose_their_per_sec_suffix_and_names_are_sanitised_like_the_exporter():
    # A gauge that happens to end in PerSec keeps it; odd characters become one underscore.
    assert naming.family_name(MetricName("kafka.x", "T", "FooPerSec"), Kind.GAUGE) == "kafka_x_t_foopersec"
    assert naming.family_name(MetricName("kafka.x", "A-B", "C..D"), Kind.GAUGE) == "kafka_x_a_b_c_d"


def test_label_names_keep_kafkas_case():
    name = MetricName("kafka.server", "DelayedOperationPurgatory", "PurgatorySize", (("delayedOperation", "Produce"),))
    assert naming.labels(name) == {"delayedOperation": "Produce"}


# -- kinds and exposition -----------------------------------------------------------------


def test_histogram_buckets_are_le_and_cumulative_when_exposed():
    h = Histogram((1, 5, 10))
    for v in (0.5, 1, 1.0001, 5, 7, 100):
        h.observe(v)
    assert h.counts == [2, 2, 1, 1] and h.count == 6
    registry = MetricsRegistry()
    registry.histogram(MetricName("kafka.network", "RequestMetrics", "TotalTimeMs", (("request", "Produce"),)), h)
    got = scrape(registry)
    buckets = {dict(k)["le"]: v for k, v in got["kafka_network_requestmetrics_totaltimems_bucket"].items()}
    assert buckets == {"1.0": 2, "5.0": 4, "10.0": 5, "+Inf": 6}
    assert got["kafka_network_requestmetrics_totaltimems_count"] == {frozenset({("request", "Produce")}): 6}
    assert got["kafka_network_requestmetrics_totaltimems_sum"][frozenset({("request", "Produce")})] == \
        pytest.approx(114.5001)


def test_histogram_bounds_must_rise():
    with pytest.raises(ValueError):
        Histogram((5, 1))


def test_a_family_holds_the_all_topics_and_the_per_topic_series_with_the_exporters_help():
    registry = MetricsRegistry()
    base = MetricName("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec")
    registry.add_source(lambda: [Reading(base, Kind.METER, 7), Reading(base.tagged(("topic", "a")), Kind.METER, 3),
                                 Reading(base.tagged(("topic", "b")), Kind.METER, 4)])
    [family] = families(registry).values()
    assert family.name == "kafka_server_brokertopicmetrics_messagesin" and family.type == "counter"
    assert family.documentation == "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec (JMX attribute Count)"
    assert {frozenset(s.labels.items()): s.value for s in family.samples} == {
        frozenset(): 7, frozenset({("topic", "a")}): 3, frozenset({("topic", "b")}): 4}


def test_openmetrics_is_served_when_the_scraper_asks_for_it():
    registry = MetricsRegistry()
    registry.meter(MetricName("kafka.server", "BrokerTopicMetrics", "BytesInPerSec")).mark(10)
    body, content_type = render(registry.readings(), "application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert b"kafka_server_brokertopicmetrics_bytesin_total 10.0" in body and body.endswith(b"# EOF\n")
    body, content_type = render(registry.readings(), None)
    assert content_type.startswith("text/plain") and b"kafka_server_brokertopicmetrics_bytesin_total 10.0" in body


def test_the_prometheus_client_can_drive_the_registry_itself():
    from prometheus_client import generate_latest
    registry = MetricsRegistry()
    meter = registry.meter(MetricName("kafka.server", "BrokerTopicMetrics", "BytesInPerSec"))
    collector = prometheus_registry(registry)
    meter.mark(3)
    assert b"kafka_server_brokertopicmetrics_bytesin_total 3.0" in generate_latest(collector)
    meter.mark(4)
    assert b"kafka_server_brokertopicmetrics_bytesin_total 7.0" in generate_latest(collector)


def test_a_failing_source_is_skipped_and_the_rest_is_served(caplog):
    registry = MetricsRegistry()
    registry.gauge(MetricName("kafka.server", "ReplicaManager", "LeaderCount"), lambda: 3)
    registry.gauge(MetricName("kafka.server", "ReplicaManager", "PartitionCount"), lambda: 1 / 0)
    got = scrape(registry)
    assert got == {"kafka_server_replicamanager_leadercount": {frozenset(): 3}}
    assert "PartitionCount" in caplog.text


def test_gauges_are_read_at_scrape_time():
    state = {"n": 1}
    registry = MetricsRegistry()
    registry.gauge(MetricName("kafka.server", "ReplicaManager", "LeaderCount"), lambda: state["n"])
    assert registry.snapshot() == {"kafka.server:type=ReplicaManager,name=LeaderCount": 1}
    state["n"] = 5
    assert registry.snapshot() == {"kafka.server:type=ReplicaManager,name=LeaderCount": 5}


# -- what the hot paths count -------------------------------------------------------------


def test_produce_meters_follow_kafkas_append_to_local_log():
    stats = ReplicaStats()
    stats.appended("t", 10, 1000)
    stats.appended("t", 5, 500)
    stats.append_failed("t", 6, 100)      # NOT_LEADER_OR_FOLLOWER: not a failure of this broker
    stats.append_failed("t", 10, 300)     # MESSAGE_TOO_LARGE: bytes rejected
    stats.append_failed("u", 19, 50)      # NOT_ENOUGH_REPLICAS: a failed produce
    t, u = stats.topics["t"], stats.topics["u"]
    assert (t.messages_in, t.bytes_in, t.total_produce, t.failed_produce, t.bytes_rejected) == (15, 1500, 4, 0, 300)
    assert (u.total_produce, u.failed_produce) == (1, 1)


def test_fetch_meters_split_consumers_from_followers():
    stats = ReplicaStats()
    ok = SimpleNamespace(error=0, records=b"x" * 40)
    stats.fetched(-1, {("t", 0): ok, ("t", 1): SimpleNamespace(error=1, records=None)})
    stats.fetched(2, {("t", 0): ok})
    stats.fetched(-1, {("t", 0): SimpleNamespace(error=-1, records=None)})   # UNKNOWN_SERVER_ERROR
    t = stats.topics["t"]
    assert (t.total_fetch, t.bytes_out, t.failed_fetch, stats.replication_bytes_out) == (4, 40, 1, 40)


def test_all_topics_totals_survive_a_deleted_topic():
    stats = ReplicaStats()
    stats.appended("a", 3, 30)
    stats.appended("b", 4, 40)
    registry = MetricsRegistry()
    registry.add_source(stats.readings)
    before = scrape(registry)["kafka_server_brokertopicmetrics_messagesin_total"]
    assert before == {frozenset(): 7, frozenset({("topic", "a")}): 3, frozenset({("topic", "b")}): 4}
    stats.forget_topic("a")
    after = scrape(registry)["kafka_server_brokertopicmetrics_messagesin_total"]
    assert after == {frozenset(): 7, frozenset({("topic", "b")}): 4}


def test_isr_changes_mark_expands_and_shrinks():
    stats = ReplicaStats()
    stats.isr_changed(2, 3)
    stats.isr_changed(3, 1)
    stats.isr_changed(2, 2)
    registry = MetricsRegistry()
    registry.add_source(stats.readings)
    got = scrape(registry)
    assert got["kafka_server_replicamanager_isrexpands_total"] == {frozenset(): 1}
    assert got["kafka_server_replicamanager_isrshrinks_total"] == {frozenset(): 1}


def test_request_metrics_split_times_and_fetches_like_kafkas_request_channel():
    metrics = RequestMetrics({0: "Produce", 1: "Fetch"})
    # received, started, handled, ready, sent (seconds)
    metrics.record(0, 9, False, 10.000, 10.001, 10.003, 10.003, 10.0035)
    metrics.record(1, 12, True, 20.0, 20.0, 20.001, 20.501, 20.502)
    metrics.record(1, 12, False, 30.0, 30.0, 30.0, 30.0, 30.0)
    registry = MetricsRegistry()
    registry.add_source(metrics.readings)
    got = scrape(registry)
    requests = got["kafka_network_requestmetrics_requests_total"]
    assert requests == {frozenset({("request", "Produce"), ("version", "9")}): 1,
                        frozenset({("request", "Fetch"), ("version", "12")}): 2,
                        frozenset({("request", "FetchFollower"), ("version", "12")}): 1,
                        frozenset({("request", "FetchConsumer"), ("version", "12")}): 1}
    produce = frozenset({("request", "Produce")})
    assert got["kafka_network_requestmetrics_totaltimems_sum"][produce] == pytest.approx(3.5)
    assert got["kafka_network_requestmetrics_requestqueuetimems_sum"][produce] == pytest.approx(1.0)
    assert got["kafka_network_requestmetrics_localtimems_sum"][produce] == pytest.approx(2.0)
    assert got["kafka_network_requestmetrics_responsesendtimems_sum"][produce] == pytest.approx(0.5)
    follower = frozenset({("request", "FetchFollower")})
    assert got["kafka_network_requestmetrics_remotetimems_sum"][follower] == pytest.approx(500)
    assert got["kafka_network_requestmetrics_totaltimems_count"][follower] == 1
    le = {dict(k)["le"]: v for k, v in got["kafka_network_requestmetrics_totaltimems_bucket"].items()
          if ("request", "FetchFollower") in k}
    assert le["500.0"] == 0 and le["1000.0"] == 1


def test_controller_events_time_kafkas_controller_states():
    stats = ControllerStats()
    stats.event_handled("BrokerChange", 0.004)
    stats.event_handled("TopicChange", 0.001)
    stats.event_handled("SomethingNew", 1.0)     # no timer of Kafka's: not counted
    stats.unclean_election()
    registry = MetricsRegistry()
    registry.add_source(stats.readings)
    got = scrape(registry)
    assert got["kafka_controller_controllerstats_leaderelectionrateandtimems_count"] == {frozenset(): 1}
    assert got["kafka_controller_controllerstats_leaderelectionrateandtimems_sum"][frozenset()] == pytest.approx(4)
    assert got["kafka_controller_controllerstats_topicchangerateandtimems_count"] == {frozenset(): 1}
    assert got["kafka_controller_controllerstats_autoleaderbalancerateandtimems_count"] == {frozenset(): 0}
    assert got["kafka_controller_controllerstats_uncleanleaderelections_total"] == {frozenset(): 1}


# -- the broker's registry over real managers ----------------------------------------------


class _Controller:
    active = False
    ctx = None


@pytest.fixture
def broker(tmp_path):
    logs = LogManager([str(tmp_path)], LogConfig(), enable_cleaner=False)
    manager = ReplicaManager(1, logs, None, lambda t: LogConfig(min_insync_replicas=2), lambda: 0)
    server = SimpleNamespace(services=services(replicas=manager, logs=logs, controller=_Controller()),
                             replica_manager=manager, log_manager=logs, group_coordinator=None,
                             shutting_down=False, quotas=None)
    yield server
    logs.shutdown()


def _lead(manager, tp, replicas, isr):
    part = manager.get_or_create_partition(tp, is_new=True)
    state = SimpleNamespace(leader=1, leader_epoch=0, zk_version=0, controller_epoch=1, replicas=replicas, isr=isr)
    part.make_leader(state, 0)
    return part


def test_broker_registry_counts_appends_and_reads_partition_and_log_state(broker):
    manager = broker.replica_manager
    _lead(manager, ("t", 0), [1, 2, 3], [1, 2])
    _lead(manager, ("t", 1), [1], [1])      # its own ISR: the high watermark follows its appends
    batch = encode_batch([(b"k", b"v" * 10)] * 3, base_timestamp=1_650_000_000_000)
    result = manager.append_records({("t", 0): batch, ("t", 1): batch}, 1, 1000, lambda t: True)
    assert all(r.error == 0 for r in result.values())
    answer = manager.fetch(FetchParams(-1, 0, 1, 1 << 20, {("t", 1): FetchSpec(0, 1 << 20)}), lambda t: True)
    assert len(answer[("t", 1)].records) == len(batch)
    registry = BrokerMetrics(broker).registry
    got = scrape(registry)
    assert got["kafka_server_brokertopicmetrics_messagesin_total"] == {frozenset(): 6, frozenset({("topic", "t")}): 6}
    assert got["kafka_server_brokertopicmetrics_bytesin_total"][frozenset()] == 2 * len(batch)
    assert got["kafka_server_brokertopicmetrics_bytesout_total"][frozenset({("topic", "t")})] == len(batch)
    assert got["kafka_server_replicamanager_underreplicatedpartitions"] == {frozenset(): 1}
    assert got["kafka_server_replicamanager_leadercount"] == {frozenset(): 2}
    assert got["kafka_server_replicamanager_partitioncount"] == {frozenset(): 2}
    assert got["kafka_server_replicamanager_atminisrpartitioncount"] == {frozenset(): 1}
    assert got["kafka_server_replicamanager_underminisrpartitioncount"] == {frozenset(): 1}
    p0 = frozenset({("topic", "t"), ("partition", "0")})
    assert got["kafka_cluster_partition_underreplicated"][p0] == 1
    assert got["kafka_cluster_partition_insyncreplicascount"][p0] == 2
    assert got["kafka_log_log_logendoffset"][p0] == 3
    assert got["kafka_log_log_logstartoffset"][p0] == 0
    assert got["kafka_log_log_size"][p0] == len(batch)
    assert got["kafka_log_log_numlogsegments"][p0] == 1
    assert got["kafka_controller_kafkacontroller_activecontrollercount"] == {frozenset(): 0}
    assert got["kafka_coordinator_group_groupmetadatamanager_numgroups"] == {frozenset(): 0}
    assert got["kafka_server_kafkaserver_brokerstate"] == {frozenset(): 3}
    assert got["kafka_server_replicaalterlogdirsmanager_maxlag"] == {frozenset({("clientId", "ReplicaAlterLogDirs")}): 0}
    purgatory = got["kafka_server_delayedoperationpurgatory_purgatorysize"]
    assert purgatory == {frozenset({("delayedOperation", "Produce")}): 0, frozenset({("delayedOperation", "Fetch")}): 0}


def test_a_delayed_fetch_counts_its_bytes_once_when_answered(broker):
    from twisted.internet.task import Clock
    manager = broker.replica_manager
    manager.clock = clock = Clock()
    manager.fetch_purgatory.clock = clock
    _lead(manager, ("t", 0), [1], [1])
    pending = manager.fetch(FetchParams(-1, 500, 1, 1 << 20, {("t", 0): FetchSpec(0, 1 << 20)}), lambda t: True)
    batch = encode_batch([(b"k", b"v")], base_timestamp=1_650_000_000_000)
    manager.append_records({("t", 0): batch}, 1, 1000, lambda t: True)
    assert pending.called
    meters = manager.stats.topics["t"]
    assert (meters.bytes_out, meters.total_fetch) == (len(batch), 1)


class _InlineThreads:
    """A reactor whose thread pool runs work at once, in the test's thread."""

    def getThreadPool(self):
        return self

    def callInThreadWithCallback(self, on_result, fn, *args, **kwargs):
        on_result(True, fn(*args, **kwargs))

    def callFromThread(self, fn, *args, **kwargs):
        fn(*args, **kwargs)


def test_the_endpoint_takes_readings_then_renders_them_off_the_reactor(broker):
    _lead(broker.replica_manager, ("t", 0), [1], [1])
    resource = MetricsResource(BrokerMetrics(broker).registry, _InlineThreads())
    request = DummyRequest([b"metrics"])
    assert resource.render_GET(request) == NOT_DONE_YET
    assert request.finished
    body = b"".join(request.written)
    assert request.responseHeaders.getRawHeaders(b"content-type")[0].startswith(b"text/plain")
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert {"kafka_server_replicamanager_underreplicatedpartitions", "kafka_log_log_logendoffset",
            "kafka_controller_kafkacontroller_activecontrollercount"} <= names


# -- the listener records every answered request ------------------------------------------


def test_the_listener_records_request_metrics_per_api_and_version():
    svc = services()
    factory = KafkaServerFactory(svc, 1 << 20)
    conn = factory.buildProtocol(None)
    transport = StringTransport()
    conn.makeConnection(transport)
    for correlation in (1, 2):
        data = encode_request(18, 3, correlation, "t", ApiVersionsRequest(client_software_name="t",
                                                                          client_software_version="1"))
        conn.dataReceived(struct.pack(">i", len(data)) + data)
    out = transport.value()
    assert decode_response(18, 3, out[4:4 + struct.unpack(">i", out[:4])[0]])[0] == 1
    registry = MetricsRegistry()
    registry.add_source(svc.request_metrics.readings)
    got = scrape(registry)
    assert got["kafka_network_requestmetrics_requests_total"] == {
        frozenset({("request", "ApiVersions"), ("version", "3")}): 2}
    assert got["kafka_network_requestmetrics_totaltimems_count"] == {frozenset({("request", "ApiVersions")}): 2}


# -- the config keys ----------------------------------------------------------------------


def test_the_metrics_port_is_a_known_internal_key_off_by_default():
    base = {"zookeeper.connect": "localhost:2181"}
    assert KafkaConfig(base).get("kafkalike.metrics.port") == -1
    cfg = KafkaConfig({**base, "kafkalike.metrics.port": "9404", "kafkalike.metrics.host": "127.0.0.1"})
    assert (cfg.get("kafkalike.metrics.port"), cfg.get("kafkalike.metrics.host")) == (9404, "127.0.0.1")
    assert cfg.unknown_keys == []
    assert not [e for e in cfg.describe_all() if e.name.startswith("kafkalike.")]
    with pytest.raises(Exception, match="Invalid value -2 for configuration kafkalike.metrics.port: "
                                        "Value must be at least -1"):
        KafkaConfig({**base, "kafkalike.metrics.port": "-2"})
