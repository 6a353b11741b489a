"""bin/kafka-consumer-perf-test.sh against a real broker, on records confluent-kafka produced."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalike.client.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
          "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
NUM = r"-?\d+\.\d{4}"
RESULT = re.compile(rf"({DATE}), ({DATE}), ({NUM}), {NUM}, (\d+), {NUM}, (\d+), (-?\d+), {NUM}, {NUM}")
RECORDS, SIZE = 2000, 500


def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "bin" / "kafka-consumer-perf-test.sh"), *args], capture_output=True,
                          text=True, timeout=timeout, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def loaded(broker):
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic("cperf", 2, 1)])
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce("cperf", value=b"v" * SIZE, key=b"k%04d" % i)
    assert producer.flush(30) == 0
    return broker


def test_header_and_result_line_count_what_was_produced(loaded):
    done = run("--bootstrap-server", loaded.bootstrap, "--topic", "cperf", "--messages", str(RECORDS),
               "--group", "cperf-1", "--timeout", "20000")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == HEADER and len(lines) == 2
    result = RESULT.fullmatch(lines[1])
    assert result, lines[1]
    start, end, mb, count, rebalance, fetch = result.groups()
    assert start <= end
    assert int(count) == RECORDS
    assert mb == f"{RECORDS * (SIZE + 5) / (1024 * 1024):.4f}"
    assert int(rebalance) >= 0 and int(fetch) >= 0


def test_detailed_stats_hidden_header_and_date_format(loaded):
    done = run("--bootstrap-server", loaded.bootstrap, "--topic", "cperf", "--messages", str(RECORDS),
               "--group", "cperf-2", "--show-detailed-stats", "--reporting-interval", "1", "--hide-header",
               "--date-format", "yyyy/MM/dd'T'HH", "--timeout", "20000")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    assert lines, "one line per reporting interval"
    for line in lines:
        assert re.fullmatch(rf"\d{{4}}/\d\d/\d\dT\d\d, 0, {NUM}, {NUM}, \d+, {NUM}, \d+, -?\d+, {NUM}, {NUM}", line), \
            line


def test_timeout_warning_when_fewer_records_exist(loaded):
    done = run("--bootstrap-server", loaded.bootstrap, "--topic", "cperf", "--messages", str(RECORDS + 10),
               "--group", "cperf-3", "--timeout", "1500")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == ("WARNING: Exiting before consuming the expected number of messages: timeout (1500 ms) "
                        "exceeded. You can use the --timeout option to increase the timeout.")
    assert RESULT.fullmatch(lines[2]).group(4) == str(RECORDS)


def test_bad_command_lines(loaded):
    done = run("--bootstrap-server", loaded.bootstrap, "--messages", "10")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith('Missing required argument "[topic]"\nOption')
    done = run("--bootstrap-server", loaded.bootstrap, "--topic", "cperf", "--messages", "ten")
    assert done.returncode == 1
    assert done.stderr == ('Exception in thread "main" joptsimple.OptionArgumentConversionException: Cannot parse '
                           "argument 'ten' of option messages\n")
    done = run()
    assert done.returncode == 1
    assert done.stderr.startswith(
        "This tool helps in performance test for the full zookeeper consumer\nOption")
