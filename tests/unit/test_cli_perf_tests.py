"""kafka-producer-perf-test's and kafka-consumer-perf-test's numbers and formats, without a broker."""
from __future__ import annotations

import io
import struct
import zlib
from datetime import datetime

import pytest

from kafkalike.cli import consumer_perf_test, producer_perf_test
from kafkalike.cli.consumer_perf_test import java_double, simple_date_format
from kafkalike.cli.producer_perf_test import Stats, Throttler, write_histogram


def test_total_line_in_javas_printf_formats(monkeypatch):
    clock = iter([1000, 3000])
    monkeypatch.setattr(producer_perf_test, "_now_ms", lambda: next(clock))
    out = io.StringIO()
    stats = Stats(4, 5000, out)
    for i, latency in enumerate([4, 1, 3, 2]):
        stats.record(i, latency, 100, 1500)
    stats.print_total()
    assert out.getvalue() == ("4 records sent, 2.000000 records/sec (0.00 MB/sec), 2.50 ms avg latency, "
                              "4.00 ms max latency, 3 ms 50th, 4 ms 95th, 4 ms 99th, 4 ms 99.9th.\n")


def test_window_line_every_reporting_interval(monkeypatch):
    now = [0]
    monkeypatch.setattr(producer_perf_test, "_now_ms", lambda: now[0])
    out = io.StringIO()
    stats = Stats(10, 5000, out)
    stats.record(0, 10, 1048576, 1000)
    now[0] = 5000
    stats.record(1, 30, 1048576, 5000)
    assert out.getvalue() == ("2 records sent, 0.4 records/sec (0.40 MB/sec), 20.0 ms avg latency, "
                              "30.0 ms max latency.\n")
    assert (stats.window_count, stats.count) == (0, 2)


def test_latencies_are_sampled_down_to_half_a_million():
    stats = Stats(2_000_000, 5000, io.StringIO())
    assert stats.sampling == 4
    for i in range(8):
        stats.record(i, i, 1, 0)
    assert stats.latencies == [0, 4]


def test_throttler():
    assert not Throttler(-1, 0).should_throttle(10**9, 1)
    assert Throttler(100, 0).should_throttle(200, 1000)
    assert not Throttler(100, 0).should_throttle(50, 1000)


def test_histogram_is_a_png_of_the_asked_size(tmp_path):
    path = tmp_path / "h.png"
    assert write_histogram(str(path), [1, 2, 2, 3, 130], 2, 3, width=200, height=100) == 3
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (200, 100)
    start = data.index(b"IDAT") + 4
    length = struct.unpack(">I", data[start - 8:start - 4])[0]
    assert len(zlib.decompress(data[start:start + length])) == 100 * (1 + 3 * 200)


def test_payload_choice_is_required():
    with pytest.raises(SystemExit) as exit_:
        producer_perf_test.main(["--topic", "t", "--num-records", "1", "--throughput", "1"])
    assert exit_.value.code == 1


def test_simple_date_format():
    millis = 1_700_000_000_123
    local = datetime.fromtimestamp(millis / 1000)
    assert simple_date_format("yyyy-MM-dd HH:mm:ss:SSS", millis) == local.strftime("%Y-%m-%d %H:%M:%S:") + "123"
    assert simple_date_format("yy'T'H 'o''clock'", millis) == local.strftime("%yT") + f"{local.hour} o'clock"


def test_java_doubles():
    assert (java_double(1 / 3), java_double(float("inf")), java_double(float("nan"))) == \
        ("0.3333", "Infinity", "NaN")


def run_consumer(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return consumer_perf_test.main(list(args), out, err), out.getvalue(), err.getvalue()


def test_consumer_perf_usage_errors():
    code, out, err = run_consumer("--topic", "t")
    assert (code, out) == (1, "")
    assert err.startswith('Missing required argument "[messages]"\nOption')
    assert "--date-format <String: date format>" in err and "(default: yyyy-MM-dd" in err
    code, _, err = run_consumer("--topic", "t", "--messages", "5")
    assert code == 1
    assert err == ('Exception in thread "main" org.apache.kafka.common.config.ConfigException: Missing required '
                   'configuration "bootstrap.servers" which has no default value.\n')
    code, _, err = run_consumer("--topic", "t", "--messages", "5", "--bootstrap-server", "x:1", "--date-format", "qq")
    assert code == 1 and "java.lang.IllegalArgumentException: Illegal pattern character 'q'" in err


class FakeProducer:
    """Records the transactional calls and sends of the perf test (no send completes)."""

    made: list["FakeProducer"] = []

    def __init__(self, config):
        self.config = dict(config)
        self.calls: list[str] = []
        FakeProducer.made.append(self)

    def __getattr__(self, name):
        if name in ("init_transactions", "begin_transaction", "commit_transaction", "flush", "close"):
            return lambda *a, **k: self.calls.append(name)
        raise AttributeError(name)

    def send(self, topic, value, callback=None):
        self.calls.append("send")


def test_transactions_commit_every_transaction_duration(monkeypatch):
    """ProducerPerformance with --transaction-duration-ms 10: transactional.id from
    --transactional-id, initTransactions first, a commit after the first send that starts
    10 ms or more after its transaction began, and one at the end for the rest."""
    now = [0]

    def clock() -> int:
        now[0] += 3           # every reading is 3 ms later
        return now[0]
    monkeypatch.setattr(producer_perf_test, "_now_ms", clock)
    monkeypatch.setattr(producer_perf_test, "KafkaProducer", FakeProducer)
    FakeProducer.made.clear()
    out = io.StringIO()
    assert producer_perf_test.main(["--topic", "t", "--num-records", "7", "--record-size", "4", "--throughput", "-1",
                                    "--producer-props", "bootstrap.servers=h:1", "--transactional-id", "tx-1",
                                    "--transaction-duration-ms", "10"], out=out) == 0
    [producer] = FakeProducer.made
    assert producer.config["transactional.id"] == "tx-1"
    # A transaction begins at t; its sends start at t+3, t+6, t+9 and t+12, the first 10 ms
    # or more after t, so it commits after that one; the last three are committed at the end.
    assert producer.calls == ["init_transactions",
                              "begin_transaction", "send", "send", "send", "send", "commit_transaction",
                              "begin_transaction", "send", "send", "send", "commit_transaction", "close"]

    # Without the option: no transactional.id, no transactional call.
    FakeProducer.made.clear()
    assert producer_perf_test.main(["--topic", "t", "--num-records", "3", "--record-size", "4", "--throughput", "-1",
                                    "--producer-props", "bootstrap.servers=h:1"], out=io.StringIO()) == 0
    [plain] = FakeProducer.made
    assert "transactional.id" not in plain.config and plain.calls == ["send", "send", "send", "close"]
