"""bin/kafka-console-producer.sh as a user runs it, read back with kcat.

The tool is run as a process with stdin piped (or a pseudo-terminal, for the prompt);
what it wrote is read with kcat (librdkafka), and what it printed is compared with what
Kafka 2.8's ConsoleProducer prints.
"""
from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.client.partitioner import keyed_partition
from tests.conftest import REPO_ROOT
from tests.interop.samples import CODEC_IDS, stored_codecs

pytestmark = pytest.mark.interop

TOOL = str(REPO_ROOT / "bin" / "kafka-console-producer.sh")
KCAT = shutil.which("kcat")


def run_tool(*args: str, data: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([TOOL, *args], input=data, capture_output=True, timeout=timeout)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=15).values():
        future.result()


def kcat_records(bootstrap: str, topic: str, count: int) -> list[tuple[int, str, str, str]]:
    """(partition, key, value, headers) per record; NULL for null keys and values."""
    assert KCAT, "kcat is not installed (apt-get install kcat)"
    proc = subprocess.run([KCAT, "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-c", str(count), "-e",
                           "-Z", "-f", "%p\x1f%k\x1f%s\x1f%h\x1e"], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    out = []
    for entry in proc.stdout.decode().split("\x1e")[:-1]:
        partition, key, value, headers = entry.split("\x1f")
        out.append((int(partition), key, value, headers))
    return out


def test_lines_become_records_with_keys_on_murmur2_partitions(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 3)
    lines = [f"user-{i}:value {i} with spaces" for i in range(50)]
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name,
                    "--property", "parse.key=true", "--property", "key.separator=:",
                    data="\n".join(lines).encode() + b"\n")
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr.decode()
    got = sorted(kcat_records(broker.bootstrap, topic_name, 50), key=lambda r: int(r[1].split("-")[1]))
    assert [(k, v) for _, k, v, _ in got] == [tuple(line.split(":", 1)) for line in lines]
    assert all(p == keyed_partition(k.encode(), 3) for p, k, _, _ in got)


def test_plain_lines_utf8_and_crlf_endings_survive(broker, topic_name):
    proc = run_tool("--broker-list", broker.bootstrap, "--topic", topic_name,
                    data="héllo wörld\r\nsecond\nthird-no-newline".encode())
    assert proc.returncode == 0, proc.stderr.decode()
    got = kcat_records(broker.bootstrap, topic_name, 3)
    assert [(k, v) for _, k, v, _ in got] == [("NULL", "héllo wörld"), ("NULL", "second"),
                                              ("NULL", "third-no-newline")]


@pytest.mark.parametrize("args,codec", [((), "none"), (("--compression-codec",), "gzip"),
                                        (("--compression-codec", "snappy"), "snappy"),
                                        (("--compression-codec=lz4",), "lz4"),
                                        (("--compression-codec", "zstd"), "zstd")])
def test_compression_codec_is_what_the_broker_stores(broker, topic_name, args, codec):
    data = b"".join(b"line %d %s\n" % (i, b"z" * 80) for i in range(200))
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name, *args, data=data)
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(kcat_records(broker.bootstrap, topic_name, 200)) == 200
    assert stored_codecs(broker.log_dir, topic_name) == {CODEC_IDS[codec]}


def test_sync_mode_and_headers_parsing(broker, topic_name):
    data = b"h1:a,h2:b\tk1\tv1\nh3:c\tk2\tv2\n"
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name, "--sync",
                    "--property", "parse.headers=true", "--property", "parse.key=true", data=data)
    assert proc.returncode == 0, proc.stderr.decode()
    got = kcat_records(broker.bootstrap, topic_name, 2)
    assert [(k, v, h) for _, k, v, h in got] == [("k1", "v1", "h1=a,h2=b"), ("k2", "v2", "h3=c")]


def test_a_line_without_a_key_stops_the_tool_with_kafkas_error(broker, topic_name):
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name,
                    "--property", "parse.key=true", data=b"k\tv\nnovalue\nafter\tignored\n")
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()  # after any WARN lines of the topic's auto-creation
    trace = lines.index("org.apache.kafka.common.KafkaException: No key found on line 2: novalue")
    assert lines[trace + 1].startswith("\tat ")
    assert [(k, v) for _, k, v, _ in kcat_records(broker.bootstrap, topic_name, 1)] == [("k", "v")]


def test_ignore_error_sends_keyless_lines_whole(broker, topic_name):
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name, "--property", "parse.key=true",
                    "--property", "ignore.error=true", data=b"k\tv\nnovalue\n")
    assert proc.returncode == 0, proc.stderr.decode()
    got = kcat_records(broker.bootstrap, topic_name, 2)
    assert [(k, v) for _, k, v, _ in got] == [("k", "v"), ("NULL", "novalue")]


def test_prompts_appear_only_on_a_terminal(broker, topic_name):
    piped = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name, data=b"a\nb\n")
    assert piped.returncode == 0 and piped.stdout == b""
    main, child = pty.openpty()
    proc = subprocess.Popen([TOOL, "--bootstrap-server", broker.bootstrap, "--topic", topic_name],
                            stdin=child, stdout=child, stderr=subprocess.PIPE)
    os.close(child)
    screen = b""

    def read_until(predicate, timeout=30.0):
        nonlocal screen
        deadline = time.monotonic() + timeout
        while not predicate(screen) and time.monotonic() < deadline:
            if select.select([main], [], [], 0.2)[0]:
                try:
                    screen += os.read(main, 1024)
                except OSError:
                    break
    read_until(lambda s: s.count(b">") >= 1)
    os.write(main, b"typed\n")
    read_until(lambda s: s.count(b">") >= 2)
    os.write(main, b"\x04")  # end of input
    assert proc.wait(60) == 0, proc.stderr.read().decode()
    os.close(main)
    assert screen.replace(b"typed\r\n", b"").count(b">") == 2
    values = [v for _, _, v, _ in kcat_records(broker.bootstrap, topic_name, 3)]
    assert values == ["a", "b", "typed"]


@pytest.mark.parametrize("args,first_line", [
    (("--bootstrap-server", "127.0.0.1:9092"), 'Missing required argument "[topic]"'),
    (("--topic", "t"), "Missing required option(s) [bootstrap-server]"),
    (("--bootstrap-server", "nohostport", "--topic", "t"), "Please provide valid host:port like host1:9091,host2:9092"),
    (("--bootstrap-server", "127.0.0.1:9092", "--topic", "t", "--bogus"), "bogus is not a recognized option"),
    (("--bootstrap-server", "127.0.0.1:9092", "--topic"), "Option topic requires an argument"),
])
def test_usage_errors_print_the_reason_then_the_option_table(args, first_line):
    proc = run_tool(*args)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and proc.stdout == b""
    assert lines[0] == first_line
    assert lines[1].split() == ["Option", "Description"] or lines[2].split() == ["Option", "Description"]
    assert any(line.startswith("--topic <String: topic>") for line in lines)


def test_a_bad_producer_property_fails_construction_like_kafka(broker, topic_name):
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name,
                    "--producer-property", "acks=2", data=b"x\n")
    err = proc.stderr.decode().splitlines()
    assert proc.returncode == 1
    assert err[0] == "org.apache.kafka.common.KafkaException: Failed to construct kafka producer"
    assert "Caused by: org.apache.kafka.common.config.ConfigException: Invalid value 2 for configuration acks: " \
           "String must be one of: all, -1, 0, 1" in err


def test_producer_config_file_and_acks_option_reach_the_producer(broker, topic_name, tmp_path):
    config = tmp_path / "producer.properties"
    config.write_text("linger.ms=5\nbatch.size=not-a-number\n")
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name,
                    "--producer.config", str(config), data=b"x\n")
    assert proc.returncode == 1
    assert "Invalid value not-a-number for configuration batch.size: Not a number of type INT" in proc.stderr.decode()
    # --max-partition-memory-bytes was not given, so the file's batch.size wins (maybeMergeOptions).
    config.write_text("batch.size=1024\n")
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", topic_name, "--producer.config",
                    str(config), "--request-required-acks", "all", data=b"y\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert [v for _, _, v, _ in kcat_records(broker.bootstrap, topic_name, 1)] == ["y"]


def test_asynchronous_send_errors_are_logged_like_error_logging_callback(broker):
    proc = run_tool("--bootstrap-server", broker.bootstrap, "--topic", "bad topic!", "--max-block-ms", "3000",
                    data=b"abc\n")
    assert proc.returncode == 0  # Kafka's tool exits 0 after asynchronous failures too
    lines = proc.stderr.decode().splitlines()
    error = [i for i, line in enumerate(lines) if " ERROR " in line]
    assert error, proc.stderr.decode()
    line = lines[error[0]]
    assert line.startswith("[") and line.endswith(
        "] ERROR Error when sending message to topic bad topic! with key: null, value: 3 bytes with error: "
        "(org.apache.kafka.clients.producer.internals.ErrorLoggingCallback)")
    assert lines[error[0] + 1] == "org.apache.kafka.common.errors.InvalidTopicException: Invalid topics: [bad topic!]"
