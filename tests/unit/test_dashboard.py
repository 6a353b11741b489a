"""The dashboard's parts without a cluster: rates from sampled counters, the pages' marks
(down, under-replicated, lag), the plots, the look that never runs on the reactor, and the
command line's Kafka-style usage errors."""
from __future__ import annotations

import io
import threading
import time

from kafkalike.dashboard.main import main
from kafkalike.dashboard.model import DOWN, UP, BrokerRow, GroupRow, LagRow, MemberRow, PartitionRow, Snapshot, TopicRow
from kafkalike.dashboard.pages import cluster_page, groups_page, topics_page
from kafkalike.dashboard.rates import History
from kafkalike.dashboard.server import Poller, make_state
from kafkalike.dashboard.svg import human, line_plot, nice_ceiling


def snapshot() -> Snapshot:
    brokers = (BrokerRow(0, "h", 9092, None, UP, True, True, True),
               BrokerRow(1, "h", 9093, None, DOWN, False, False, False, "Connection refused"),
               BrokerRow(2, "h", 9094, None, UP, False, True, True))
    topic = TopicRow("orders", False, (PartitionRow("orders", 0, 0, (0, 1, 2), (0, 2), (1,), 100),
                                       PartitionRow("orders", 1, 2, (2, 0), (2, 0), (), 50),
                                       PartitionRow("orders", 2, None, (1,), (1,), (1,), None)))
    member = MemberRow("m-1", "client-a", "/10.0.0.1", (("orders", 0), ("orders", 1)))
    group = GroupRow("readers", "Stable", "consumer", "range", 0, (member,),
                     (LagRow("orders", 0, 40, 100, "m-1", "/10.0.0.1", "client-a"),
                      LagRow("orders", 1, 50, 50, "m-1", "/10.0.0.1", "client-a")))
    return Snapshot(time.time(), 0.2, "cid", 0, 3, brokers, (topic,), (group,))


def state_with(snap: Snapshot):
    state = make_state("h:9092", 5, 600, "offsets")
    state.snapshot = snap
    return state


def test_rates_are_increases_per_second_summed_by_label_over_sources_in_both_samples():
    history = History(600)
    history.add(100.0, {"orders\t0": 10, "orders\t1": 20, "clicks\t0": 5})
    history.add(110.0, {"orders\t0": 60, "orders\t1": 70, "clicks\t0": 5})
    history.add(120.0, {"orders\t0": 160})          # partition 1's leader gone: left out, not a fall
    rates = history.rates()
    assert rates["orders"] == [(110.0, 10.0), (120.0, 10.0)]
    assert rates["clicks"] == [(110.0, 0.0), (120.0, 0.0)]
    assert history.latest()["orders"] == 10.0


def test_a_counter_that_went_down_is_not_a_negative_rate_and_old_samples_leave_the_window():
    history = History(30)
    history.add(0.0, {"t\tb1": 1000})
    history.add(10.0, {"t\tb1": 3})                 # the broker restarted, its meter from zero
    assert history.rates()["t"] == [(10.0, 0.0)]
    history.add(35.0, {"t\tb1": 13})
    assert history.rates()["t"] == [(35.0, 0.4)]   # the sample at 0 s has left the 30 s window


def test_plot_axis_and_numbers():
    assert [nice_ceiling(v) for v in (0, 0.5, 3, 7, 12, 4000)] == [1, 1, 5, 10, 20, 5000]
    assert [human(v) for v in (0, 12, 1500, 2_500_000)] == ["0", "12", "1.5k", "2.5M"]
    now = 1000.0
    svg = line_plot("Produce", "records/s", {"orders": [(now - 20, 5.0), (now - 10, 15.0)]}, 60, now=now)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "<polyline" in svg and ">orders 15<" in svg
    assert "no data yet" in line_plot("Produce", "records/s", {}, 60, now=now)


def test_cluster_page_marks_the_dead_broker_and_the_controller():
    html = cluster_page(state_with(snapshot())).decode()
    assert '<tr class="broker down" id="broker-1"' in html and "Connection refused" in html
    assert '<tr class="broker up" id="broker-0"' in html and '<tr class="broker up" id="broker-2"' in html
    assert 'id="controller">controller <b>0</b> (epoch 3)' in html
    assert "under-replicated partitions <b>1</b>" in html and "offline partitions <b>1</b>" in html
    assert '<meta http-equiv="refresh" content="5">' in html


def test_topics_page_marks_under_replicated_and_offline_partitions():
    html = topics_page(state_with(snapshot())).decode()
    assert '<tr class="partition under-replicated" data-topic="orders" data-partition="0" data-isr="0,2">' in html
    assert '<tr class="partition ok" data-topic="orders" data-partition="1"' in html
    assert '<tr class="partition offline" data-topic="orders" data-partition="2"' in html
    assert '<span class="down">1</span>' in html          # the dead broker among the replicas


def test_groups_page_shows_members_and_lag_per_partition():
    html = groups_page(state_with(snapshot())).decode()
    assert 'data-partition="0" data-lag="60"' in html and 'data-partition="1" data-lag="0"' in html
    assert "readers: Stable, 1 member, coordinator 0" in html and "total lag 60" in html
    assert "orders-0, orders-1" in html


def test_pages_before_the_first_look():
    state = make_state("h:9092", 5, 600, "offsets")
    for page in (cluster_page, topics_page, groups_page):
        assert "Waiting for the first look" in page(state).decode()


class FakeReactor:
    def __init__(self):
        self.calls = []

    def callFromThread(self, f, *args):
        self.calls.append((f, args))


class BlockingCollector:
    rate_source = "offsets"

    def __init__(self):
        self.release = threading.Event()
        self.started = 0
        self.closed = False

    def collect(self):
        self.started += 1
        self.release.wait(10)
        return snapshot()

    def close(self):
        self.closed = True


def test_a_slow_look_never_runs_on_the_reactor_and_looks_do_not_pile_up():
    collector, reactor = BlockingCollector(), FakeReactor()
    state = make_state("h:9092", 1, 600, "offsets")
    poller = Poller(collector, state, reactor)
    started = time.monotonic()
    poller.poll()
    poller.poll()                                    # the first look is still under way
    assert time.monotonic() - started < 0.5
    assert state.collecting_since is not None and state.snapshot is None
    poller.close()
    assert not collector.closed                      # still in use by the look
    collector.release.set()
    deadline = time.monotonic() + 5
    while not reactor.calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert collector.started == 1
    done, args = reactor.calls[0]
    done(*args)                                      # what the reactor thread then runs
    assert state.snapshot is not None and state.collecting_since is None


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    return main(argv, out, err), out.getvalue(), err.getvalue()


def test_usage_errors_as_kafka_tools_print_them():
    code, _out, err = run(["--zookeeper", "zk:2181"])
    assert code == 1 and err.startswith('Missing required argument "[bootstrap-server]"\nOption')
    code, _out, err = run(["--bootstrap-server", "h:9092", "--port", "70000"])
    assert code == 1 and err.startswith("The value of --port must be between 0 and 65535, not 70000")
    code, _out, err = run(["--bootstrap-server", "h:9092", "--refresh", "soon"])
    assert code == 1 and "Cannot parse argument 'soon' of option refresh" in err
    code, _out, err = run(["--bootstrap-server", "h:9092", "--metrics-url", "h:9404"])
    assert code == 1 and err.startswith("--metrics-url must be an http:// or https:// URL, not h:9404")
    code, _out, err = run(["--bootstrap-server", "h:9092", "--bogus"])
    assert code == 1 and "bogus is not a recognized option" in err
    code, out, _err = run(["--version"])
    assert code == 0 and out.startswith("2.8.")


def test_a_look_at_a_dead_cluster_ends_within_one_call_deadline_and_says_why():
    from kafkalike.dashboard.collect import Collector
    from kafkalike.lab.zookeeper import free_ports

    port = free_ports(1)[0]                          # nothing listens there
    collector = Collector(f"127.0.0.1:{port}", admin_config={"default.api.timeout.ms": "1500"})
    collector._seen[7] = ("127.0.0.1", port, None)   # a broker seen at an earlier look
    try:
        started = time.monotonic()
        snap = collector.collect()
        assert time.monotonic() - started < 1.5 + 2.5   # one call's deadline and a probe, not one per call
    finally:
        collector.close()
    assert snap.errors and snap.errors[0].startswith("cluster: ")
    assert [(b.id, b.status) for b in snap.brokers] == [(7, DOWN)]
    assert snap.topics == () and snap.groups == ()


def test_rates_from_the_brokers_prometheus_endpoints():
    import http.server

    from kafkalike.dashboard.collect import FETCHED, PRODUCED, Collector

    text = ("# TYPE kafka_server_brokertopicmetrics_messagesin_total counter\n"
            "kafka_server_brokertopicmetrics_messagesin_total 120.0\n"
            'kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 100.0\n'
            'kafka_server_brokertopicmetrics_messagesin_total{topic="clicks"} 20.0\n'
            "# TYPE kafka_server_brokertopicmetrics_bytesout_total counter\n"
            'kafka_server_brokertopicmetrics_bytesout_total{topic="orders"} 4096.0\n').encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/metrics"
    collector = Collector("127.0.0.1:1", metrics_urls=[url, "http://127.0.0.1:1/metrics"])
    try:
        counters, errors = {PRODUCED: {}, FETCHED: {}}, []
        collector._scrape(counters, errors)
    finally:
        collector.close()
        httpd.shutdown()
    assert collector.rate_source == "prometheus"
    assert counters[PRODUCED] == {f"orders\t{url}": 100.0, f"clicks\t{url}": 20.0}   # the all-topics total left out
    assert counters[FETCHED] == {f"orders\t{url}": 4096.0}
    assert len(errors) == 1 and errors[0].startswith("metrics http://127.0.0.1:1/metrics")
