"""bin/kafka-console-consumer.sh as a user runs it, reading what confluent-kafka wrote.

The printed lines are compared with what Kafka 2.8's ConsoleConsumer prints for the same
records and properties, and the closing "Processed a total of N messages" on stderr.
"""
from __future__ import annotations

import re
import signal
import subprocess
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.interop

TOOL = str(REPO_ROOT / "bin" / "kafka-console-consumer.sh")


def topic_with(bootstrap: str, partitions: int, rows: list[tuple]) -> str:
    name = f"console-consumer-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=15).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, key, value, ts in rows:
        producer.produce(name, key=key, value=value, partition=partition, timestamp=ts)
    assert producer.flush(15) == 0
    return name


def run_tool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([TOOL, *args], capture_output=True, timeout=timeout, text=True)


def test_from_beginning_prints_values_and_the_total(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"v%d" % i, 1_600_000_000_000 + i) for i in range(5)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
                      "--max-messages", "5")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "".join(f"v{i}\n" for i in range(5))
    assert result.stderr.endswith("Processed a total of 5 messages\n")


def test_print_properties_match_kafka_formatting(broker):
    rows = [(1, b"k1", b"one", 1_600_000_000_000), (1, None, b"two", 1_600_000_000_001)]
    topic = topic_with(broker.bootstrap, 2, rows)
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "1",
                      "--offset", "earliest", "--max-messages", "2",
                      "--property", "print.key=true", "--property", "print.timestamp=true",
                      "--property", "print.partition=true", "--property", "print.offset=true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "CreateTime:1600000000000\tPartition:1\tOffset:0\tk1\tone",
        "CreateTime:1600000000001\tPartition:1\tOffset:1\tnull\ttwo",
    ]


def test_offset_and_key_separator_and_timeout(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, b"k%d" % i, b"v%d" % i, 1_600_000_000_000) for i in range(4)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "0",
                      "--offset", "2", "--timeout-ms", "1500", "--property", "print.key=true",
                      "--property", "key.separator=::")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "k2::v2\nk3::v3\n"
    assert "org.apache.kafka.common.errors.TimeoutException" in result.stderr
    assert result.stderr.endswith("Processed a total of 2 messages\n")


def test_offset_without_partition_is_refused(broker):
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", "x", "--offset", "3")
    assert result.returncode == 1
    assert "The partition is required when offset is specified." in result.stderr


def test_group_mode_commits_so_a_second_run_continues(broker):
    topic = topic_with(broker.bootstrap, 2, [(i % 2, None, b"v%d" % i, 1_600_000_000_000 + i) for i in range(6)])
    group = f"console-{uuid.uuid4().hex[:8]}"
    first = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group,
                     "--from-beginning", "--max-messages", "6")
    assert first.returncode == 0, first.stderr
    assert sorted(first.stdout.splitlines()) == [f"v{i}" for i in range(6)]
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"late", partition=0)
    producer.flush(10)
    second = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group,
                      "--from-beginning", "--timeout-ms", "4000")
    assert second.stdout == "late\n"
    assert second.stderr.endswith("Processed a total of 1 messages\n")


def test_whitelist_without_group_reads_every_matching_topic(broker):
    a = topic_with(broker.bootstrap, 1, [(0, None, b"from-a", 1_600_000_000_000)])
    b = topic_with(broker.bootstrap, 1, [(0, None, b"from-b", 1_600_000_000_000)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--whitelist", f"{a}|{b}", "--from-beginning",
                      "--max-messages", "2")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["from-a", "from-b"]


def test_consumer_config_file_and_header_printing(broker, tmp_path):
    topic = f"console-consumer-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"v", key=b"k", headers=[("h1", b"a"), ("h2", b"b")])
    producer.produce(topic, value=b"w")
    producer.flush(15)
    config = tmp_path / "consumer.properties"
    config.write_text("# as in config/consumer.properties\nauto.offset.reset=earliest\ngroup.id: from-file\n")
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--consumer.config", str(config),
                      "--max-messages", "2", "--property", "print.headers=true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["h1:a,h2:b\tv", "NO_HEADERS\tw"]


# -- Kafka 2.8 ConsoleConsumer's rules and edges ----------------------------------------------------

def run_raw(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([TOOL, *args], capture_output=True, timeout=timeout)


@pytest.mark.parametrize("extra, message", [
    (["--group", "g", "--partition", "0"], "Options group and partition cannot be specified together."),
    (["--offset", "latest"], "The partition is required when offset is specified."),
    (["--partition", "0", "--offset", "earliest", "--from-beginning"],
     "Options from-beginning and offset cannot be specified together."),
    (["--partition", "0", "--offset", "-5"],
     "The provided offset value '-5' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    (["--group", "a", "--consumer-property", "group.id=b"],
     "The group ids provided in different places (directly using '--group', via '--consumer-property', or via "
     "'--consumer.config') do not match. Detected group ids: 'a', 'b'"),
    (["--bogus"], "bogus is not a recognized option"),
])
def test_usage_errors_come_with_the_option_table(broker, extra, message):
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", "t", *extra)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(message + "\nOption ")
    assert "--bootstrap-server <String: server to" in result.stderr


def test_whitelist_with_partition_and_missing_bootstrap_server(broker):
    result = run_tool("--bootstrap-server", broker.bootstrap, "--whitelist", "x", "--partition", "0")
    assert (result.returncode, result.stderr.splitlines()[0]) == (1, "The topic is required when partition is "
                                                                     "specified.")
    result = run_tool("--topic", "t")
    assert (result.returncode, result.stderr.splitlines()[0]) == (1, 'Missing required argument "[bootstrap-server]"')


def test_from_beginning_against_auto_offset_reset_latest(broker):
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", "t", "--from-beginning",
                      "--consumer-property", "auto.offset.reset=latest")
    assert result.returncode == 1
    assert result.stderr == ("Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest', please "
                             "remove one option\n")


def test_explicit_offset_latest_starts_at_the_end(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"old", 1_600_000_000_000)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "0",
                      "--offset", "LATEST", "--timeout-ms", "1500")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.endswith("Processed a total of 0 messages\n")


def test_bytes_and_separators_come_out_verbatim(broker):
    rows = [(0, b"\xff\xfek", b"\x00\x80\xc3(binary", 1_600_000_000_000), (0, None, "caf\u00e9".encode(), 1)]
    topic = topic_with(broker.bootstrap, 1, rows)
    result = run_raw("--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beg", "--max-messages", "2",
                     "--property", "print.key=true", "--property", "key.separator=\u2192\\t",
                     "--property", "line.separator=|\\n", "--property", "null.literal=\u2205")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (b"\xff\xfek\xe2\x86\x92\\t\x00\x80\xc3(binary|\\n"
                             + "\u2205\u2192\\tcaf\u00e9|\\n".encode())


def test_print_key_without_a_value_is_false_and_noop_formatter(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, b"k", b"v", 1_600_000_000_000)])
    common = ("--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning", "--max-messages", "1")
    result = run_tool(*common, "--property", "print.key")
    assert (result.returncode, result.stdout) == (0, "v\n"), result.stderr
    result = run_tool(*common, "--formatter", "kafka.tools.NoOpMessageFormatter", "--enable-systest-events")
    assert (result.returncode, result.stdout) == (0, "shutdown_complete\n"), result.stderr
    assert result.stderr.endswith("Processed a total of 1 messages\n")
    result = run_tool(*common, "--formatter", "com.example.Fancy")
    assert result.returncode == 1
    assert result.stderr.startswith('Exception in thread "main" java.lang.ClassNotFoundException: com.example.Fancy\n')


def test_value_deserializer_option(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"\x00\x00\x00\x2a", 1_600_000_000_000)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
                      "--max-messages", "1", "--value-deserializer",
                      "org.apache.kafka.common.serialization.IntegerDeserializer")
    assert (result.returncode, result.stdout) == (0, "42\n"), result.stderr


def test_isolation_level_from_consumer_property_is_accepted(broker):
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"v", 1_600_000_000_000)])
    result = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
                      "--max-messages", "1", "--consumer-property", "isolation.level=read_committed")
    assert (result.returncode, result.stdout) == (0, "v\n"), result.stderr


@pytest.mark.parametrize("extra, exception", [
    (["--topic", "t", "--isolation-level", "sometimes"],
     "org.apache.kafka.common.config.ConfigException: Invalid value sometimes for configuration isolation.level"),
    (["--whitelist", "(unclosed"], "java.util.regex.PatternSyntaxException: "),
])
def test_setup_errors_are_logged_without_a_traceback(broker, extra, exception):
    result = run_tool("--bootstrap-server", broker.bootstrap, *extra)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].endswith("] ERROR Unknown error when running consumer:  (kafka.tools.ConsoleConsumer$)")
    assert lines[1].startswith(exception)


@pytest.mark.parametrize("servers, cause", [
    ("not-a-url", "Invalid url in bootstrap.servers: not-a-url"),
    ("no-such-host.invalid:9092", "No resolvable bootstrap urls given in bootstrap.servers"),
])
def test_bad_bootstrap_servers(servers, cause):
    result = run_tool("--bootstrap-server", servers, "--topic", "t", timeout=30)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "ERROR Unknown error when running consumer:  (kafka.tools.ConsoleConsumer$)\n" \
           "org.apache.kafka.common.KafkaException: Failed to construct kafka consumer\n" \
           f"Caused by: org.apache.kafka.common.config.ConfigException: {cause}\n" in result.stderr


def test_closed_stdout_ends_the_tool_quietly(broker):
    # More than a pipe buffer, so that a write fails once `head` has gone.
    filler = b"x" * 2000
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"line %d %s" % (i, filler), 1_600_000_000_000)
                                             for i in range(200)])
    script = f"'{TOOL}' --bootstrap-server {broker.bootstrap} --topic {topic} --from-beginning " \
             "--timeout-ms 20000 | head -c 6; exit ${PIPESTATUS[0]}"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "line 0"
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    assert "Unable to write to standard out, closing consumer.\n" in result.stderr
    assert re.search(r"Processed a total of \d+ messages\n$", result.stderr)


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_report_the_count_and_exit_128_plus_signal(broker, signum, status):
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"v%d" % i, 1_600_000_000_000) for i in range(3)])
    proc = subprocess.Popen([TOOL, "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines == ["v0\n", "v1\n", "v2\n"]
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, err
    assert err.endswith("Processed a total of 3 messages\n")
    assert "Traceback" not in err


def test_a_running_console_consumer_is_client_consumer_group_n(broker):
    """Kafka 2.8's console consumer sets no client.id: KafkaConsumer's consumer-<group>-1
    is what kafka-consumer-groups.sh and every admin client show for it."""
    topic = topic_with(broker.bootstrap, 1, [(0, None, b"v", 1_600_000_000_000)])
    group = f"console-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen([TOOL, "--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group,
                             "--from-beginning"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        assert proc.stdout.readline() == "v\n"      # joined and assigned
        [described] = admin.describe_consumer_groups([group]).values()
        assert [m.client_id for m in described.result(15).members] == [f"consumer-{group}-1"]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
