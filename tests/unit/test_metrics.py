"""The metrics floor: JMX names, the JMX exporter's Prometheus names, the counts the hot
paths make and their exposition, read back with Prometheus's own parser."""
from __future__ import annotations

import math
import struct
from collections import defaultdict
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
    (MetricName("kafka.network", "RequestMetrics", "ErrorsPerSec", (("request", "Produce"), ("error", "NONE"))),
     Kind.METER, "kafka_network_requestmetrics_errors_total"),
    (MetricName("kafka.server", "ReplicaManager", "FailedIsrUpdatesPerSec"), Kind.METER,
     "kafka_server_replicamanager_failedisrupdates_total"),
    # A meter without PerSec in its name: the exporter's generic `<>Count` rule.
    (MetricName("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent"), Kind.METER,
     "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count"),
    (MetricName("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"), Kind.GAUGE,
     "kafka_network_socketserver_networkprocessoravgidlepercent"),
    (MetricName("kafka.server", "ReplicaFetcherManager", "MaxLag", (("clientId", "Replica"),)), Kind.GAUGE,
     "kafka_server_replicafetchermanager_maxlag"),
    (MetricName("kafka.log", "LogFlushStats", "LogFlushRateAndTimeMs"), Kind.HISTOGRAM,
     "kafka_log_logflushstats_logflushrateandtimems"),
    (MetricName("kafka.server", "DelayedOperationPurgatory", "NumDelayedOperations",
                (("delayedOperation", "Produce"),)), Kind.GAUGE,
     "kafka_server_delayedoperationpurgatory_numdelayedoperations"),
])
def test_names_are_the_jmx_exporters(name, kind, expected):
    assert naming.sample_name(name, kind) == expected


def test_only_meters_lose_their_per_sec_suffix_and_names_are_sanitised_like_the_exporter():
    # A gauge that happens to end in PerSec keeps it; odd characters become one underscore.
    assert naming.family_name(MetricName("kafka.x", "T", "FooPerSec"), Kind.GAUGE) == "kafka_x_t_foopersec"
    assert naming.family_name(MetricName("kafka.x", "A-B", "C..D"), Kind.GAUGE) == "kafka_x_a_b_c_d"


def test_a_meter_named_without_per_sec_is_one_untyped_count_sample_in_both_formats():
    registry = MetricsRegistry()
    registry.meter(MetricName("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent")).mark(7)
    registry.meter(MetricName("kafka.server", "BrokerTopicMetrics", "BytesInPerSec")).mark(3)
    got = families(registry)
    idle = got["kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count"]
    assert idle.type == "unknown" and [(s.name, s.value) for s in idle.samples] == [
        ("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count", 7)]
    assert got["kafka_server_brokertopicmetrics_bytesin"].type == "counter"
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
    body, _ = render(registry.readings(), "application/openmetrics-text; version=1.0.0")
    parsed = {f.name: f for f in openmetrics_families(body.decode())}
    assert parsed["kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count"].samples[0].value == 7


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


def test_an_isr_change_the_controller_refuses_marks_failed_isr_updates():
    from twisted.internet import task

    from kafkalike.broker.alter_isr import AlterIsrManager
    from kafkalike.protocol.errors import ErrorCode
    from kafkalike.protocol.messages.alter_isr import AlterIsrResponse
    stats = ReplicaStats()
    clock = task.Clock()
    manager = AlterIsrManager(0, clock, None, None, broker_epoch=lambda: 0, is_shutting_down=lambda: False,
                              on_isr_updated=lambda part, old_isr_size: stats.isr_changed(old_isr_size, len(part.isr)),
                              on_isr_failed=lambda part: stats.isr_update_failed())
    answers = [ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.NONE]

    async def send(batch):
        code = answers.pop(0)
        return AlterIsrResponse(topics=[AlterIsrResponse.TopicData(name="t", partitions=[
            AlterIsrResponse.PartitionData(partition_index=0, error_code=code, leader_id=0, leader_epoch=3, isr=[0],
                                           current_isr_version=8)])])
    manager._send = send
    part = SimpleNamespace(topic="t", index=0, tp=("t", 0), isr=[0, 1], pending_isr=None, leader_epoch=3,
                           zk_version=7)
    registry = MetricsRegistry()
    registry.add_source(stats.readings)
    assert manager.submit(part, [0])
    clock.advance(0)
    assert part.isr == [0, 1] and scrape(registry)["kafka_server_replicamanager_failedisrupdates_total"] == {
        frozenset(): 1}
    assert manager.submit(part, [0])          # proposed again, and accepted: a shrink, no failure
    clock.advance(0)
    got = scrape(registry)
    assert part.isr == [0]
    assert got["kafka_server_replicamanager_failedisrupdates_total"] == {frozenset(): 1}
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


def test_errors_per_sec_counts_every_error_code_of_each_response_as_kafkas_error_counts():
    from kafkalike.broker.registry import new_request_metrics
    from kafkalike.protocol.messages.fetch import FetchResponse
    from kafkalike.protocol.messages.produce import ProduceResponse
    metrics = new_request_metrics()
    part = ProduceResponse.PartitionProduceResponse
    produce = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[
        part(index=0, error_code=0), part(index=1, error_code=6), part(index=2, error_code=0)])])
    metrics.record(0, 9, False, 0.0, 0.0, 0.0, 0.0, 0.001, produce)
    metrics.record(0, 9, False, 0.0, 0.0, 0.0, 0.0, 0.001, None)       # acks=0: no answer, no errors
    fetch = FetchResponse(error_code=0, responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[
        FetchResponse.FetchablePartitionResponse(partition=0, error_code=1)])])
    metrics.record(1, 12, True, 0.0, 0.0, 0.0, 0.0, 0.001, fetch)
    registry = MetricsRegistry()
    registry.add_source(metrics.readings)
    errors = scrape(registry)["kafka_network_requestmetrics_errors_total"]
    assert errors == {frozenset({("request", "Produce"), ("error", "NONE")}): 2,
                      frozenset({("request", "Produce"), ("error", "NOT_LEADER_OR_FOLLOWER")}): 1,
                      # a fetch's top-level code and each partition's; under Fetch only, as in Kafka
                      frozenset({("request", "Fetch"), ("error", "NONE")}): 1,
                      frozenset({("request", "Fetch"), ("error", "OFFSET_OUT_OF_RANGE")}): 1}


def test_an_error_counter_is_made_for_every_response_kafkalike_answers():
    from kafkalike.broker.request_errors import error_counter
    from kafkalike.protocol.api import APIS
    for spec in APIS.values():
        counts: defaultdict = defaultdict(int)
        error_counter(spec.response)(spec.response(), counts)      # defaults: no items, top-level codes NONE
        assert set(counts) <= {0}, spec.name


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


def metrics_of(broker) -> BrokerMetrics:
    return BrokerMetrics(broker.services, None, lambda: broker.shutting_down, getattr(broker, "fetchers", None))


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
    registry = metrics_of(broker).registry
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


def test_parked_produces_and_fetches_are_counted_by_both_purgatory_gauges(broker):
    from twisted.internet.task import Clock
    manager = broker.replica_manager
    manager.clock = clock = Clock()
    manager.fetch_purgatory.clock = manager.produce_purgatory.clock = clock
    _lead(manager, ("t", 0), [1, 2], [1, 2])
    _lead(manager, ("t", 1), [1, 2], [1, 2])
    registry = metrics_of(broker).registry

    def gauges() -> dict:
        got = scrape(registry)
        return {(name.rsplit("_", 1)[-1], dict(labels)["delayedOperation"]): value
                for name in ("kafka_server_delayedoperationpurgatory_purgatorysize",
                             "kafka_server_delayedoperationpurgatory_numdelayedoperations")
                for labels, value in got[name].items()}

    assert set(gauges().values()) == {0}
    # A consumer's long poll on two partitions: one operation, watched under two keys.
    fetch = manager.fetch(FetchParams(-1, 500, 1, 1 << 20, {("t", 0): FetchSpec(0, 1 << 20),
                                                             ("t", 1): FetchSpec(0, 1 << 20)}), lambda t: True)
    # An acks=all produce: appended, waiting for the follower.
    batch = encode_batch([(b"k", b"v")], base_timestamp=1_650_000_000_000)
    produce = manager.append_records({("t", 0): batch}, -1, 30000, lambda t: True)
    assert not produce.called
    assert gauges() == {("purgatorysize", "Produce"): 1, ("purgatorysize", "Fetch"): 2,
                        ("numdelayedoperations", "Produce"): 1, ("numdelayedoperations", "Fetch"): 1}
    clock.advance(0.5)                # the long poll expires; the produce still waits
    assert fetch.called and not produce.called
    got = gauges()
    assert (got[("numdelayedoperations", "Fetch")], got[("numdelayedoperations", "Produce")]) == (0, 1)


def _leading(leader: int, replicas: tuple[int, ...]):
    from kafkalike.zkdata.topic_znodes import LeaderIsrAndControllerEpoch
    return LeaderIsrAndControllerEpoch(leader, 1, replicas if leader >= 0 else (), 1)


def test_the_active_controllers_gauges_count_offline_imbalanced_and_queued_partitions(broker):
    from kafkalike.controller.context import OFFLINE, ONLINE, ControllerContext
    from kafkalike.zkdata.topic_znodes import TopicPartition as TP
    ctx = ControllerContext()
    layout = {TP("a", 0): ((1, 2), 1, ONLINE),      # led by its preferred replica
              TP("a", 1): ((2, 1), 1, ONLINE),      # led by its second replica: imbalanced
              TP("solo", 0): ((3,), -1, OFFLINE),   # its only replica is gone: offline, and imbalanced
              TP("gone", 0): ((3,), -1, OFFLINE),   # being deleted: counted in neither
              TP("held", 0): ((1, 3), 3, ONLINE)}   # marked for deletion, waiting for its reassignment
    for tp, (replicas, leader, state) in layout.items():
        ctx.assignments[tp] = replicas
        ctx.leadership[tp] = _leading(leader, replicas)
        ctx.partition_states[tp] = state
    ctx.topics_to_delete = {"gone"}
    ctx.deletions_waiting = {"held"}
    controller = broker.services.controller
    controller.active, controller.ctx = True, ctx
    got = scrape(metrics_of(broker).registry)

    def value(name: str) -> float:
        return got[f"kafka_controller_kafkacontroller_{name}"][frozenset()]
    assert value("activecontrollercount") == 1
    assert value("offlinepartitionscount") == 1
    assert value("preferredreplicaimbalancecount") == 2
    assert value("topicstodeletecount") == 2          # Kafka's topicsToBeDeleted holds the waiting one too
    assert (value("globaltopiccount"), value("globalpartitioncount")) == (4, 5)


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
    resource = MetricsResource(metrics_of(broker).registry, _InlineThreads())
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
    assert got["kafka_network_requestmetrics_errors_total"] == {
        frozenset({("request", "ApiVersions"), ("error", "NONE")}): 2}


# -- the reactor's idle time, log flushes, replica fetchers' lag ------------------------------


class _Poller:
    """An epoll stand-in whose poll() waits on a fake nanosecond clock."""

    def __init__(self, clock: list[int]):
        self.clock = clock
        self.waits: list[int] = []
        self.registered: list[int] = []

    def poll(self, timeout, maxevents):
        self.clock[0] += self.waits.pop(0)
        return []

    def register(self, fd, events):
        self.registered.append(fd)


def test_the_reactors_time_in_its_poller_is_both_idle_metrics(monkeypatch):
    from twisted.internet.task import Clock

    from kafkalike.metrics import reactor_idle
    from kafkalike.metrics.reactor_idle import TICK_S, ReactorIdle
    monkeypatch.setattr(reactor_idle, "_EPOLL", _Poller)      # an epoll whose waits the test decides
    ns = [0]
    reactor = Clock()
    reactor._poller = poller = _Poller(ns)
    idle = ReactorIdle(reactor, clock=lambda: ns[0])
    registry = MetricsRegistry()
    registry.add_source(idle.readings)
    idle.start()
    assert reactor._poller is not poller             # wrapped; the reactor still registers through it
    reactor._poller.register(7, 1)
    assert poller.registered == [7]

    def turn(idle_ms: int, busy_ms: int) -> None:
        poller.waits.append(idle_ms * 1_000_000)
        reactor._poller.poll(1.0, 10)
        ns[0] += busy_ms * 1_000_000

    for _ in range(10):
        turn(400, 100)                                # 80% idle over the first 5 s
    got = scrape(registry)
    assert got["kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count"][frozenset()] == 4e9
    assert got["kafka_network_socketserver_networkprocessoravgidlepercent"][frozenset()] == pytest.approx(0.8)
    reactor.advance(TICK_S)
    for _ in range(10):
        turn(100, 400)                                # then 20% idle: the one-minute average moves towards it
    reactor.advance(TICK_S)
    average = scrape(registry)["kafka_network_socketserver_networkprocessoravgidlepercent"][frozenset()]
    assert 0.2 < average < 0.8 and average == pytest.approx(0.8 - 0.6 * (1 - math.exp(-5 / 60)))
    idle.stop()
    assert reactor._poller is poller


def test_only_an_epoll_reactor_is_measured():
    import select

    from twisted.internet.task import Clock

    from kafkalike.metrics.reactor_idle import ReactorIdle
    for reactor in (object(), SimpleNamespace(_poller=select.poll())):
        idle = ReactorIdle(reactor)
        idle.start()
        assert not idle.measured and list(idle.readings()) == []
    reactor = Clock()
    reactor._poller = poller = select.epoll()
    try:
        idle = ReactorIdle(reactor)
        idle.start()
        assert idle.measured and reactor._poller.poll(0.01, 1) == []
        assert idle.idle_ns > 0
        idle.stop()
        assert reactor._poller is poller
    finally:
        poller.close()


def test_each_segment_flushed_is_timed_in_log_flush_stats(tmp_path):
    from kafkalike.metrics.stats import LOG_FLUSH_STATS
    from kafkalike.storage.log import Log
    registry = MetricsRegistry()
    registry.add_source(LOG_FLUSH_STATS.readings)

    def flushes() -> float:
        return scrape(registry)["kafka_log_logflushstats_logflushrateandtimems_count"][frozenset()]

    before = flushes()
    log = Log(str(tmp_path / "t-0"), LogConfig(segment_bytes=1024))
    try:
        for i in range(20):
            log.append(encode_batch([(b"k", b"v" * 100)], base_timestamp=1_650_000_000_000), leader_epoch=0)
        segments = len(log.segments)
        assert segments > 2
        log.flush()
    finally:
        log.close()
    # Rolls asked for flushes of the segments they closed (inline here: no flush thread).
    assert flushes() - before >= segments


def test_max_lag_is_the_furthest_behind_followed_partition(monkeypatch, broker):
    from kafkalike.broker.replica_fetcher import FetchState, ReplicaFetcherManager
    from tests.unit.test_replica_fetcher_throttle import FREE, MOVING, FakeQuota, answer, fetcher_with
    fetcher, connector, _ = fetcher_with(monkeypatch, FakeQuota(set()))   # a follower of broker 0, no sockets
    fetcher.partitions[FREE] = FetchState(0, 1)
    fetcher.add(MOVING, FetchState(0, 1))
    manager = ReplicaFetcherManager.__new__(ReplicaFetcherManager)       # only its fetchers are read
    manager.fetchers = {0: fetcher}
    broker.fetchers = manager
    registry = metrics_of(broker).registry

    def max_lag() -> float:
        return scrape(registry)["kafka_server_replicafetchermanager_maxlag"][frozenset({("clientId", "Replica")})]

    assert max_lag() == 0
    [conn] = connector.made
    answer(conn, hw=50, records={MOVING: b"x" * 100})     # ten records of the fifty
    assert (fetcher.partitions[MOVING].lag, fetcher.partitions[FREE].lag) == (40, 50)
    assert max_lag() == 50
    answer(conn, hw=50, records={MOVING: b"x" * 400, FREE: b"x" * 500})
    assert max_lag() == 0
    manager.remove(MOVING)
    assert manager.max_lag() == 0


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
