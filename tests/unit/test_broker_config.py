"""Broker configuration: the .properties format, Kafka 2.8's keys and rules, and log layout."""
from __future__ import annotations

import logging
import random
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.logger import LogBeginner, LogPublisher, Logger

from kafkalike import properties
from kafkalike.broker import logs
from kafkalike.broker.config import (
    BROKER_CONFIG, ConfigError, ConfigSource, ConfigType, EndPoint, KafkaConfig, Password,
    java_double, java_string, parse_overrides, resolve_api_version,
)
from kafkalike.properties import PropertiesError, loads
from tests.reference import reference_dir

REPO = Path(__file__).resolve().parents[2]
ZK = {"zookeeper.connect": "localhost:2181"}


def config(**props: str) -> KafkaConfig:
    """A config from keyword props, with dots spelled as underscores."""
    return KafkaConfig({**ZK, **{k.replace("_", "."): v for k, v in props.items()}}, hostname="broker1")


def make(props: dict[str, str]) -> KafkaConfig:
    return KafkaConfig({**ZK, **props}, hostname="broker1")


# ============================================================ .properties reader

def test_the_three_separators_and_whitespace_around_them():
    text = "a=1\nb:2\nc 3\nd   =   4\ne\t:\t5\nf\n g = \n"
    assert loads(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "", "g": ""}


def test_only_the_first_separator_splits():
    assert loads("a=b=c\nx y=z\nk = =v\nm :=n") == {"a": "b=c", "x": "y=z", "k": "=v", "m": "=n"}


def test_comments_blank_lines_and_indentation():
    text = "# hash\n! bang\n   # indented comment\n\n  \t\nkey = value # not a comment\n  indented=yes\n"
    assert loads(text) == {"key": "value # not a comment", "indented": "yes"}


def test_trailing_whitespace_of_a_value_is_kept():
    assert loads("k = v  \t") == {"k": "v  \t"}


def test_continuation_lines_drop_the_backslash_and_leading_whitespace():
    text = "list = a,\\\n       b,\\\n\t   c\nnext=1"
    assert loads(text) == {"list": "a,b,c", "next": "1"}


def test_continuation_line_starting_with_hash_is_value_not_comment():
    assert loads("k=x\\\n  #y\n") == {"k": "x#y"}


def test_a_comment_line_never_continues():
    assert loads("# comment \\\nk=v\n") == {"k": "v"}


def test_even_backslashes_do_not_continue():
    assert loads("a=x\\\\\nb=y") == {"a": "x\\", "b": "y"}


def test_backslash_at_end_of_input_is_dropped():
    assert loads("k=v\\") == {"k": "v"}
    assert loads("k=v\\\n") == {"k": "v"}


def test_continuation_into_a_blank_line_ends_the_value():
    assert loads("k=a\\\n   \nnext=b") == {"k": "a", "next": "b"}


def test_escapes():
    text = r"k=tab\there\nnl\\back\u00e9\x\:\=" + "\n" + r"s=\uD83D\uDE00"
    assert loads(text) == {"k": "tab\there\nnl\\backéx:=", "s": "😀"}


def test_escaped_separators_in_keys():
    text = "a\\=b=1\nc\\:d:2\ne\\ f 3\n\\#notcomment=4"
    assert loads(text) == {"a=b": "1", "c:d": "2", "e f": "3", "#notcomment": "4"}


def test_malformed_unicode_escape_is_refused():
    with pytest.raises(PropertiesError, match="Malformed"):
        loads(r"k=\u12G4")
    with pytest.raises(PropertiesError):
        loads("k=\\u12")


def test_all_three_line_terminators():
    assert loads("a=1\r\nb=2\rc=3\nd=4") == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_a_repeated_key_keeps_the_last_value():
    assert loads("k=1\nk=2") == {"k": "2"}


def test_file_is_read_as_latin1_like_java(tmp_path):
    path = tmp_path / "x.properties"
    path.write_bytes(b"k=caf\xe9\nu=\\u00e9\n")
    assert properties.load(path) == {"k": "café", "u": "é"}


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_TEXT, _TEXT, max_size=6))
def test_writer_output_reads_back_identically(props):
    assert loads(properties.dumps(props, "a comment")) == props


def test_dump_writes_meta_properties_like_kafka(tmp_path):
    path = tmp_path / "meta.properties"
    props = {"version": "0", "broker.id": "0", "cluster.id": "Zm9vYmFyYmF6cXV4cXV1eA"}
    properties.dump(path, props)
    lines = path.read_text().splitlines()
    assert lines[0] == "#"
    assert re.fullmatch(r"#\w{3} \w{3} \d\d \d\d:\d\d:\d\d \S+ \d{4}", lines[1])
    assert lines[2:] == ["version=0", "broker.id=0", "cluster.id=Zm9vYmFyYmF6cXV4cXV1eA"]
    assert properties.load(path) == props
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.properties"]


# ------------------------------------------------------------ Java itself as the judge

_JUDGE = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class Judge {
    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) b.append(String.format("%04x", (int) c));
        return b.toString();
    }
    static String unhex(String h) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < h.length(); i += 4) b.append((char) Integer.parseInt(h.substring(i, i + 4), 16));
        return b.toString();
    }
    public static void main(String[] args) throws Exception {
        for (String arg : args) {
            if (arg.startsWith("load:")) {
                String path = arg.substring(5);
                Properties p = new Properties();
                try (InputStream in = new FileInputStream(path)) { p.load(in); }
                for (String k : new TreeSet<>(p.stringPropertyNames()))
                    System.out.println(path + "\t" + hex(k) + "\t" + hex(p.getProperty(k)));
            } else if (arg.startsWith("store:")) {
                String[] parts = arg.split(":");
                Properties p = new Properties();
                for (String line : Files.readAllLines(Paths.get(parts[1]), StandardCharsets.US_ASCII)) {
                    String[] kv = line.split("\t", -1);
                    p.setProperty(unhex(kv[0]), unhex(kv[1]));
                }
                try (OutputStream out = new FileOutputStream(parts[2])) { p.store(out, "stored by Java"); }
            }
        }
    }
}
"""

_JAVA_CASES = {
    "separators": "a=1\nb:2\nc 3\nd   =   4\ne\t:\t5\nf\n g = \nh=x=y\ni :=j\n",
    "comments": "# c\n! c\n   # c\n\nk = v # not\n",
    "continuation": "list = a,\\\n    b,\\\n  #c\nodd=x\\\\\nz=1\\\n\n w=2\n# c \\\nq=3\nend=e\\",
    "escapes": r"k=\t\n\r\f\\\u00e9\u4E2D\x\:\=" + "\n" + r"a\=b=1" + "\n" + r"c\ d e" + "\n" + "\\#h=2\n",
    "endings": "a=1\r\nb=2\rc=3\n   trailing = v  \t\n",
}


def _hex(s: str) -> str:
    return "".join(f"{u:04x}" for u in _utf16(s))


def _utf16(s: str) -> list[int]:
    data = s.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def _unhex(h: str) -> str:
    data = bytes.fromhex(h)
    return data.decode("utf-16-be", "surrogatepass")


def _random_props(rng: random.Random) -> dict[str, str]:
    alphabet = " \t\n\r\f=:#!\\abcXYZ019.é中😀\x00\x7f"
    def word() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
    return {word(): word() for _ in range(rng.randint(1, 6))}


def _java_can_run_source() -> bool:
    java = shutil.which("java")
    if java is None:
        return False
    probe = subprocess.run([java, "--list-modules"], capture_output=True, text=True)
    return "jdk.compiler" in probe.stdout


@pytest.mark.skipif(not _java_can_run_source(), reason="needs a JDK (java with jdk.compiler)")
def test_java_properties_agrees_with_our_reader_and_writer(tmp_path):
    judge = tmp_path / "Judge.java"
    judge.write_text(_JUDGE)
    expected: dict[str, dict[str, str]] = {}
    args = []
    for name, text in _JAVA_CASES.items():
        path = tmp_path / f"{name}.properties"
        path.write_bytes(text.encode("latin-1"))
        expected[str(path)] = loads(text)
        args.append(f"load:{path}")
    rng = random.Random(28)
    stores = []
    for i in range(40):
        props = _random_props(rng)
        ours = tmp_path / f"ours{i}.properties"
        ours.write_bytes(properties.dumps(props, "written by us").encode("ascii"))
        expected[str(ours)] = props
        args.append(f"load:{ours}")
        spec = tmp_path / f"spec{i}.tsv"
        spec.write_text("".join(f"{_hex(k)}\t{_hex(v)}\n" for k, v in props.items()))
        theirs = tmp_path / f"java{i}.properties"
        args.append(f"store:{spec}:{theirs}")
        stores.append((theirs, props))
    run = subprocess.run(["java", str(judge), *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    seen: dict[str, dict[str, str]] = {path: {} for path in expected}
    for line in run.stdout.splitlines():
        path, key, value = line.split("\t")
        seen[path][_unhex(key)] = _unhex(value)
    assert seen == expected
    for path, props in stores:
        assert properties.load(path) == props


# ============================================================ Kafka 2.8 keys and defaults

KAFKA_28_DEFAULTS = {
    "broker.id": -1,
    "listeners": None,
    "advertised.listeners": None,
    "port": 9092,
    "host.name": "",
    "log.dir": "/tmp/kafka-logs",
    "log.dirs": None,
    "zookeeper.session.timeout.ms": 18000,
    "zookeeper.connection.timeout.ms": None,
    "zookeeper.max.in.flight.requests": 10,
    "num.partitions": 1,
    "default.replication.factor": 1,
    "auto.create.topics.enable": True,
    "delete.topic.enable": True,
    "message.max.bytes": 1048588,
    "socket.request.max.bytes": 104857600,
    "socket.send.buffer.bytes": 102400,
    "socket.receive.buffer.bytes": 102400,
    "num.network.threads": 3,
    "num.io.threads": 8,
    "log.segment.bytes": 1073741824,
    "log.roll.hours": 168,
    "log.roll.ms": None,
    "log.roll.jitter.hours": 0,
    "log.retention.hours": 168,
    "log.retention.minutes": None,
    "log.retention.ms": None,
    "log.retention.bytes": -1,
    "log.retention.check.interval.ms": 300000,
    "log.flush.interval.messages": 2**63 - 1,
    "log.flush.interval.ms": None,
    "log.flush.scheduler.interval.ms": 2**63 - 1,
    "log.flush.offset.checkpoint.interval.ms": 60000,
    "log.flush.start.offset.checkpoint.interval.ms": 60000,
    "log.index.size.max.bytes": 10485760,
    "log.index.interval.bytes": 4096,
    "log.cleanup.policy": ("delete",),
    "log.cleaner.enable": True,
    "log.cleaner.threads": 1,
    "log.cleaner.dedupe.buffer.size": 134217728,
    "log.cleaner.delete.retention.ms": 86400000,
    "log.cleaner.min.cleanable.ratio": 0.5,
    "log.cleaner.backoff.ms": 15000,
    "log.segment.delete.delay.ms": 60000,
    "log.message.timestamp.type": "CreateTime",
    "log.message.timestamp.difference.max.ms": 2**63 - 1,
    "log.message.format.version": "2.8-IV1",
    "min.insync.replicas": 1,
    "unclean.leader.election.enable": False,
    "offsets.topic.num.partitions": 50,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.segment.bytes": 104857600,
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600000,
    "offsets.commit.timeout.ms": 5000,
    "offsets.commit.required.acks": -1,
    "offsets.load.buffer.size": 5242880,
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "group.max.size": 2**31 - 1,
    "transaction.state.log.num.partitions": 50,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.segment.bytes": 104857600,
    "transaction.max.timeout.ms": 900000,
    "transactional.id.expiration.ms": 604800000,
    "replica.lag.time.max.ms": 30000,
    "replica.fetch.max.bytes": 1048576,
    "replica.fetch.min.bytes": 1,
    "replica.fetch.wait.max.ms": 500,
    "replica.fetch.response.max.bytes": 10485760,
    "replica.fetch.backoff.ms": 1000,
    "replica.socket.timeout.ms": 30000,
    "num.replica.fetchers": 1,
    "replica.high.watermark.checkpoint.interval.ms": 5000,
    "controlled.shutdown.enable": True,
    "controlled.shutdown.max.retries": 3,
    "controlled.shutdown.retry.backoff.ms": 5000,
    "controller.socket.timeout.ms": 30000,
    "auto.leader.rebalance.enable": True,
    "leader.imbalance.per.broker.percentage": 10,
    "leader.imbalance.check.interval.seconds": 300,
    "reserved.broker.max.id": 1000,
    "broker.id.generation.enable": True,
    "broker.rack": None,
    "inter.broker.listener.name": None,
    "security.inter.broker.protocol": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
    "inter.broker.protocol.version": "2.8-IV1",
    "num.recovery.threads.per.data.dir": 1,
    "fetch.max.bytes": 57671680,
    "compression.type": "producer",
    "max.incremental.fetch.session.cache.slots": 1000,
    "request.timeout.ms": 30000,
    "connections.max.idle.ms": 600000,
    "socket.connection.setup.timeout.ms": 10000,
    "socket.connection.setup.timeout.max.ms": 30000,
    "queued.max.requests": 500,
    "background.threads": 10,
    "quota.window.num": 11,
    "quota.window.size.seconds": 1,
    "ssl.client.auth": "none",
    "sasl.enabled.mechanisms": ("GSSAPI",),
}


@pytest.mark.parametrize("name,expected", sorted(KAFKA_28_DEFAULTS.items()))
def test_defaults_are_kafka_28s(name, expected):
    assert config().get(name) == expected


def test_the_stock_server_properties_keys_are_all_known():
    stock = properties.load(reference_dir() / "kafka-2.8-config" / "server.properties")
    commented = _commented_settings(reference_dir() / "kafka-2.8-config" / "server.properties")
    assert len(stock) >= 15 and len(commented) >= 5
    assert [k for k in list(stock) + list(commented) if k not in BROKER_CONFIG] == []


def _commented_settings(path: Path) -> dict[str, str]:
    """The '#key=value' examples in a stock file, uncommented."""
    found = {}
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"#([a-z][a-z0-9.]*[a-z0-9])=(\S.*)", line.strip())
        if m:
            found[m.group(1)] = m.group(2)
    return found


@pytest.mark.parametrize("path", [
    REPO / "config" / "server.properties",
    reference_dir() / "kafka-2.8-config" / "server.properties",
], ids=["ours", "kafka-2.8"])
def test_stock_server_properties_loads_without_error_or_unknown_keys(path):
    cfg = KafkaConfig.load(path, hostname="broker1")
    assert cfg.unknown_keys == []
    assert cfg.broker_id == 0
    assert cfg.zookeeper_connect == "localhost:2181"
    assert cfg.log_dirs == ["/tmp/kafka-logs"]
    assert cfg.get("offsets.topic.replication.factor") == 1
    assert cfg.get("group.initial.rebalance.delay.ms") == 0
    assert cfg.listeners == [EndPoint("PLAINTEXT", "", 9092, "PLAINTEXT")]
    # Every commented-out example in it is a valid setting too.
    examples = _commented_settings(path)
    if "advertised.listeners" in examples:
        examples["listeners"] = examples["advertised.listeners"]
    enabled = KafkaConfig({**properties.load(path), **examples}, hostname="broker1")
    assert enabled.unknown_keys == []


@pytest.mark.parametrize("key", sorted(BROKER_CONFIG))
def test_every_key_is_documented_and_its_default_passes_its_own_rules(key):
    spec = BROKER_CONFIG[key]
    assert len(spec.doc) > 10 and spec.doc.endswith(".")
    if spec.default is None or spec.required:
        return
    assert spec.parse(java_string(spec.default)) == spec.default


def test_missing_zookeeper_connect_is_reported_like_kafka():
    with pytest.raises(ConfigError, match='^Missing required configuration "zookeeper.connect" which has no '
                                          'default value.$'):
        KafkaConfig({"broker.id": "0"})


# ------------------------------------------------------------ type and range errors

@pytest.mark.parametrize("key,value,message", [
    ("num.partitions", "abc", "Invalid value abc for configuration num.partitions: Not a number of type INT"),
    ("broker.id", "1.5", "Invalid value 1.5 for configuration broker.id: Not a number of type INT"),
    ("broker.id", "2147483648", "Invalid value 2147483648 for configuration broker.id: Not a number of type INT"),
    ("log.retention.ms", "1_000", "Invalid value 1_000 for configuration log.retention.ms: Not a number of type LONG"),
    ("offsets.topic.replication.factor", "40000",
     "Invalid value 40000 for configuration offsets.topic.replication.factor: Not a number of type SHORT"),
    ("auto.create.topics.enable", "yes",
     "Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"),
    ("log.cleaner.min.cleanable.ratio", "half",
     "Invalid value half for configuration log.cleaner.min.cleanable.ratio: Not a number of type DOUBLE"),
    ("log.retention.minutes", "", "Invalid value  for configuration log.retention.minutes: Not a number of type INT"),
    ("log.segment.bytes", "13", "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14"),
    ("num.partitions", "0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ("fetch.max.bytes", "1023", "Invalid value 1023 for configuration fetch.max.bytes: Value must be at least 1024"),
    ("zookeeper.max.in.flight.requests", "0",
     "Invalid value 0 for configuration zookeeper.max.in.flight.requests: Value must be at least 1"),
    ("log.message.timestamp.type", "Now", "Invalid value Now for configuration log.message.timestamp.type: "
     "String must be one of: CreateTime, LogAppendTime"),
    ("log.cleanup.policy", "delete,purge",
     "Invalid value purge for configuration log.cleanup.policy: String must be one of: compact, delete"),
    ("ssl.client.auth", "maybe",
     "Invalid value maybe for configuration ssl.client.auth: String must be one of: required, requested, none"),
    ("inter.broker.protocol.version", "9.9",
     "Invalid value 9.9 for configuration inter.broker.protocol.version: Version `9.9` is not a valid version"),
    ("log.message.format.version", "2.9",
     "Invalid value 2.9 for configuration log.message.format.version: Version `2.9` is not a valid version"),
])
def test_bad_values_are_refused_with_kafkas_message(key, value, message):
    with pytest.raises(ConfigError) as err:
        make({key: value})
    assert str(err.value) == message


_TYPED = [k for k, spec in sorted(BROKER_CONFIG.items())
          if spec.type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG, ConfigType.DOUBLE,
                           ConfigType.BOOLEAN)]


@pytest.mark.parametrize("key", _TYPED)
def test_every_typed_key_refuses_garbage_naming_itself(key):
    with pytest.raises(ConfigError, match=f"^Invalid value x7! for configuration {re.escape(key)}: "):
        make({key: "x7!"})


def test_values_are_trimmed_like_kafka():
    cfg = make({"num.partitions": "  3 ", "log.dirs": " /a , /b ,", "auto.create.topics.enable": " FALSE",
                "log.cleaner.min.cleanable.ratio": "0.25d"})
    assert cfg.get("num.partitions") == 3
    assert cfg.log_dirs == ["/a", "/b"]
    assert cfg.get("auto.create.topics.enable") is False
    assert cfg.get("log.cleaner.min.cleanable.ratio") == 0.25


def test_unknown_keys_are_kept_and_reported():
    cfg = make({"num.partitions": "2", "no.such.key": "1", "another": "x"})
    assert cfg.unknown_keys == ["another", "no.such.key"]
    assert cfg.originals["no.such.key"] == "1"
    assert cfg.unknown_key_warnings() == [
        "The configuration 'another' was supplied but isn't a known config.",
        "The configuration 'no.such.key' was supplied but isn't a known config.",
    ]


# ------------------------------------------------------------ load order

def test_overrides_win_over_the_file_and_later_overrides_win(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("zookeeper.connect=zk:2181\nnum.partitions=1\nbroker.id=0\n")
    cfg = KafkaConfig.load(path, ["num.partitions=3", "broker.id=7", "num.partitions=4",
                                  "log.dirs=/data/a,/data/b"])
    assert cfg.get("num.partitions") == 4
    assert cfg.broker_id == 7
    assert cfg.log_dirs == ["/data/a", "/data/b"]
    assert cfg.source("broker.id") is ConfigSource.STATIC_BROKER_CONFIG
    assert cfg.source("log.segment.bytes") is ConfigSource.DEFAULT_CONFIG


def test_override_parsing():
    assert parse_overrides(["a=b=c", "empty=", "bare", "=x"]) == {"a": "b=c", "empty": "", "bare": ""}


# ------------------------------------------------------------ derived settings

def test_retention_precedence_ms_over_minutes_over_hours():
    assert config().log_retention_ms == 168 * 3_600_000
    assert config(log_retention_hours="1").log_retention_ms == 3_600_000
    assert config(log_retention_hours="1", log_retention_minutes="5").log_retention_ms == 300_000
    assert config(log_retention_hours="1", log_retention_minutes="5",
                  log_retention_ms="1234").log_retention_ms == 1234
    assert config(log_retention_ms="-1").log_retention_ms == -1
    assert config(log_retention_hours="-5").log_retention_ms == -1


def test_retention_of_zero_is_refused():
    with pytest.raises(ConfigError, match="log.retention.ms must be unlimited"):
        config(log_retention_ms="0")
    with pytest.raises(ConfigError, match="log.retention.ms must be unlimited"):
        config(log_retention_minutes="0")


def test_roll_and_jitter_precedence():
    cfg = config()
    assert (cfg.log_roll_ms, cfg.log_roll_jitter_ms) == (168 * 3_600_000, 0)
    cfg = config(log_roll_hours="2", log_roll_jitter_hours="1")
    assert (cfg.log_roll_ms, cfg.log_roll_jitter_ms) == (7_200_000, 3_600_000)
    cfg = config(log_roll_hours="2", log_roll_ms="60000", log_roll_jitter_hours="1", log_roll_jitter_ms="500")
    assert (cfg.log_roll_ms, cfg.log_roll_jitter_ms) == (60_000, 500)
    with pytest.raises(ConfigError, match="log.roll.ms must be equal or greater than 1"):
        config(log_roll_ms="0")
    with pytest.raises(ConfigError, match="Invalid value 0 for configuration log.roll.hours"):
        config(log_roll_hours="0")


def test_flush_interval_falls_back_to_scheduler_interval():
    assert config().log_flush_interval_ms == 2**63 - 1
    assert config(log_flush_scheduler_interval_ms="2000").log_flush_interval_ms == 2000
    assert config(log_flush_scheduler_interval_ms="2000", log_flush_interval_ms="10").log_flush_interval_ms == 10


def test_log_dirs_beat_log_dir():
    assert config(log_dir="/one").log_dirs == ["/one"]
    assert config(log_dir="/one", log_dirs="/two,/three").log_dirs == ["/two", "/three"]
    with pytest.raises(ConfigError, match="At least one log directory"):
        config(log_dirs=" , ")


def test_zookeeper_connect_and_chroot():
    cfg = make({"zookeeper.connect": "zk1:2181,zk2:2181/kafka/prod"})
    assert (cfg.zk_hosts, cfg.zk_chroot) == ("zk1:2181,zk2:2181", "/kafka/prod")
    cfg = make({"zookeeper.connect": "zk1:2181"})
    assert (cfg.zk_hosts, cfg.zk_chroot) == ("zk1:2181", None)
    assert make({"zookeeper.connect": "zk1:2181/"}).zk_chroot is None
    assert cfg.zk_connection_timeout_ms == 18000
    assert make({"zookeeper.connection.timeout.ms": "6000"}).zk_connection_timeout_ms == 6000
    with pytest.raises(ConfigError, match="chroot"):
        make({"zookeeper.connect": "zk1:2181/kafka/"})


def test_topic_defaults_come_from_broker_keys():
    cfg = config(log_retention_hours="1", log_roll_ms="1000", log_segment_bytes="1024",
                 log_cleanup_policy="compact,delete", message_max_bytes="2000", log_preallocate="true",
                 log_flush_scheduler_interval_ms="3000", log_cleaner_min_cleanable_ratio="0.1",
                 compression_type="lz4", min_insync_replicas="2", log_message_format_version="2.8")
    d = cfg.log_config_defaults()
    assert d["retention.ms"] == 3_600_000
    assert d["segment.ms"] == 1000
    assert d["segment.bytes"] == 1024
    assert d["cleanup.policy"] == ("compact", "delete")
    assert d["max.message.bytes"] == 2000
    assert d["preallocate"] is True
    assert d["flush.ms"] == 3000
    assert d["min.cleanable.dirty.ratio"] == 0.1
    assert d["compression.type"] == "lz4"
    assert d["min.insync.replicas"] == 2
    assert d["message.format.version"] == "2.8"
    assert d["leader.replication.throttled.replicas"] == ()
    assert d["file.delete.delay.ms"] == 60000


def test_topic_defaults_cover_exactly_the_storage_log_config_keys():
    storage = pytest.importorskip("kafkalike.storage.config")
    assert set(config().log_config_defaults()) == {k.name for k in storage.CONFIG_KEYS}


def test_api_versions():
    assert resolve_api_version("2.8") == "2.8-IV1"
    assert resolve_api_version("2.8.1") == "2.8-IV1"
    assert resolve_api_version("2.7-IV0") == "2.7-IV0"
    assert resolve_api_version("0.10.2.1") == "0.10.2-IV0"
    assert config(inter_broker_protocol_version="2.7").inter_broker_protocol_version == "2.7-IV2"
    with pytest.raises(ConfigError, match="log.message.format.version 0.11.0 can only be used when "
                                          "inter.broker.protocol.version is set to version 0.11.0 or higher"):
        config(log_message_format_version="0.11.0", inter_broker_protocol_version="0.10.2")


@pytest.mark.parametrize("props,message", [
    ({"broker.id": "1001"}, "broker.id must be equal or greater than -1 and not greater than reserved.broker.max.id"),
    ({"broker.id": "-2"}, "broker.id must be equal or greater than -1"),
    ({"broker.id.generation.enable": "false"}, "broker.id must be equal or greater than 0"),
    ({"replica.fetch.wait.max.ms": "40000"}, "replica.socket.timeout.ms should always be at least"),
    ({"replica.fetch.wait.max.ms": "20000", "replica.lag.time.max.ms": "10000"},
     "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms"),
    ({"compression.type": "brotli"}, "compression.type : brotli is not valid"),
    ({"offsets.commit.required.acks": "4"}, "offsets.commit.required.acks must be greater or equal -1"),
    ({"log.cleaner.dedupe.buffer.size": "1048576"}, "at least 1MB per cleaner thread"),
    ({"queued.max.request.bytes": "10"}, "queued.max.request.bytes must be larger or equal to socket.request"),
    ({"max.connections.per.ip": "0"}, "max.connections.per.ip can be set to zero only if"),
    ({"connection.failed.authentication.delay.ms": "700000"}, "should always be less than connections.max.idle.ms"),
    ({"process.roles": "broker"}, "ZooKeeper mode only"),
])
def test_cross_key_rules(props, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        make(props)


# ------------------------------------------------------------ listeners

def test_default_listener_is_plaintext_on_9092_all_interfaces():
    cfg = config()
    assert cfg.listeners == [EndPoint("PLAINTEXT", "", 9092, "PLAINTEXT")]
    assert cfg.advertised_listeners == [EndPoint("PLAINTEXT", "broker1", 9092, "PLAINTEXT")]
    assert cfg.inter_broker_listener_name == "PLAINTEXT"
    assert cfg.inter_broker_security_protocol == "PLAINTEXT"


def test_deprecated_port_and_host_name_shape_the_default_listener():
    cfg = config(port="9093", host_name="127.0.0.1")
    assert cfg.listeners == [EndPoint("PLAINTEXT", "127.0.0.1", 9093, "PLAINTEXT")]
    assert config(advertised_port="19092").advertised_listeners == [
        EndPoint("PLAINTEXT", "broker1", 19092, "PLAINTEXT")]


def test_named_listeners_with_a_protocol_map():
    cfg = make({
        "listeners": "internal://0.0.0.0:9092, EXTERNAL://[::1]:9093,CONTROL://:9094",
        "advertised.listeners": "INTERNAL://10.0.0.1:9092,EXTERNAL://kafka.example.com:19093,CONTROL://:9094",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:ssl,CONTROL:PLAINTEXT",
        "inter.broker.listener.name": "internal",
        "control.plane.listener.name": "CONTROL",
    })
    assert cfg.listeners == [EndPoint("INTERNAL", "0.0.0.0", 9092, "PLAINTEXT"),
                             EndPoint("EXTERNAL", "::1", 9093, "SSL"),
                             EndPoint("CONTROL", "", 9094, "PLAINTEXT")]
    assert cfg.listeners[1].connection_string == "EXTERNAL://[::1]:9093"
    assert cfg.advertised_listeners[2] == EndPoint("CONTROL", "broker1", 9094, "PLAINTEXT")
    assert cfg.inter_broker_listener_name == "INTERNAL"
    assert cfg.control_plane_listener_name == "CONTROL"


def test_advertised_listeners_fall_back_to_listeners_and_may_share_ports():
    cfg = make({"listeners": "PLAINTEXT://127.0.0.1:9092"})
    assert cfg.advertised_listeners == [EndPoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
    cfg = make({"listeners": "PLAINTEXT://:9092,SSL://:9093",
                "advertised.listeners": "PLAINTEXT://lb:443,SSL://lb:443"})
    assert [e.port for e in cfg.advertised_listeners] == [443, 443]


def test_port_zero_may_repeat():
    cfg = make({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"})
    assert [e.port for e in cfg.listeners] == [0, 0]


@pytest.mark.parametrize("props,message", [
    ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "Each listener must have a different name"),
    ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "Each listener must have a different port"),
    ({"listeners": "PLAINTEXT:/localhost:9092"}, "Unable to parse PLAINTEXT:/localhost:9092 to a broker endpoint"),
    ({"listeners": "PLAINTEXT://host"}, "Unable to parse PLAINTEXT://host to a broker endpoint"),
    ({"listeners": "PLAINTEXT://:70000"}, "Port 70000"),
    ({"listeners": "PLAINTEXT://:9092,FOO://:9093"}, "No security protocol defined for listener FOO"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"},
     "Invalid security protocol `TLS` defined in listener.security.protocol.map"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "cannot use the nonroutable meta-address 0.0.0.0"),
    ({"listeners": "PLAINTEXT://:9092,SSL://:9093", "advertised.listeners": "SSL://h:9093"},
     "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
    ({"advertised.listeners": "PLAINTEXT://h:9092,SSL://h:9093"},
     "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners"),
    ({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
     "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."),
    ({"security.inter.broker.protocol": "TLS"}, "Invalid security protocol `TLS`"),
    ({"control.plane.listener.name": "PLAINTEXT"}, "should have a different value from the inter broker listener"),
])
def test_listener_errors(props, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        make(props)


def test_listener_errors_name_the_key():
    with pytest.raises(ConfigError, match="^Invalid value PLAINTEXT://x for configuration listeners: "):
        make({"listeners": "PLAINTEXT://x"})
    with pytest.raises(ConfigError, match="^Invalid value PLAINTEXT://x for configuration advertised.listeners: "):
        make({"advertised.listeners": "PLAINTEXT://x"})


# ------------------------------------------------------------ DescribeConfigs material

def test_describe_reports_source_type_and_documentation():
    cfg = config(num_partitions="3")
    entry = cfg.describe("num.partitions")
    assert (entry.value, entry.source, entry.config_type, entry.read_only, entry.is_sensitive) == (
        "3", ConfigSource.STATIC_BROKER_CONFIG, ConfigType.INT, True, False)
    assert entry.documentation
    default = cfg.describe("log.segment.bytes")
    assert (default.value, default.source, default.read_only, default.is_default) == (
        "1073741824", ConfigSource.DEFAULT_CONFIG, False, True)
    assert cfg.describe("log.cleanup.policy").value == "delete"
    assert cfg.describe("log.cleaner.io.max.bytes.per.second").value == "1.7976931348623157E308"
    assert cfg.describe("broker.rack").value is None


def test_passwords_are_sensitive_and_never_shown():
    cfg = config(ssl_keystore_password="s3cret")
    assert isinstance(cfg.get("ssl.keystore.password"), Password)
    assert cfg.get("ssl.keystore.password").value == "s3cret"
    assert "s3cret" not in repr(cfg.get("ssl.keystore.password"))
    entry = cfg.describe("ssl.keystore.password")
    assert (entry.value, entry.is_sensitive, entry.config_type) == (None, True, ConfigType.PASSWORD)
    assert all(s.value is None for s in entry.synonyms)


def test_describe_synonyms_follow_kafkas_precedence():
    cfg = config(log_retention_hours="24")
    ms = cfg.describe("log.retention.ms")
    assert (ms.value, ms.source, ms.synonyms) == (None, ConfigSource.DEFAULT_CONFIG, ())
    hours = cfg.describe("log.retention.hours")
    assert hours.source is ConfigSource.STATIC_BROKER_CONFIG
    assert [(s.name, s.value, s.source) for s in hours.synonyms] == [
        ("log.retention.hours", "24", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]
    cfg = config(log_retention_ms="1000", log_retention_hours="24")
    assert [(s.name, s.source) for s in cfg.describe("log.retention.ms").synonyms] == [
        ("log.retention.ms", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", ConfigSource.DEFAULT_CONFIG)]


def test_describe_all_lists_public_keys_only():
    entries = config().describe_all()
    names = [e.name for e in entries]
    assert names == sorted(names)
    assert "zookeeper.connect" in names and "num.io.threads" in names
    assert "process.roles" not in names
    assert len(names) > 180


def test_startup_banner_prints_every_value_the_java_way():
    banner = config(ssl_key_password="k", sasl_enabled_mechanisms="PLAIN,SCRAM-SHA-256",
                    create_topic_policy_class_name="org.example.Policy").values_banner().splitlines()
    assert banner[0] == "KafkaConfig values: "
    body = banner[1:]
    assert body == sorted(body) and len(body) == len(BROKER_CONFIG)
    for line in ("\tadvertised.listeners = null", "\tssl.key.password = [hidden]",
                 "\tsasl.enabled.mechanisms = [PLAIN, SCRAM-SHA-256]", "\tauto.create.topics.enable = true",
                 "\tcreate.topic.policy.class.name = class org.example.Policy",
                 "\tlog.cleaner.io.buffer.load.factor = 0.9", "\tzookeeper.connect = localhost:2181"):
        assert line in body


def test_java_double_rendering():
    assert [java_double(x) for x in (0.5, 1.0, 100.0, 1e7, 1.5e-4, 0.0, 12345678.9)] == [
        "0.5", "1.0", "100.0", "1.0E7", "1.5E-4", "0.0", "1.23456789E7"]


# ============================================================ logging layout

@pytest.fixture
def logged(tmp_path):
    setup = logs.setup_logging(tmp_path, stdout=False, twisted=False)
    yield tmp_path
    setup.close()


def _lines(path: Path) -> list[str]:
    for handler in logging.getLogger().handlers:
        handler.flush()
    return path.read_text().splitlines() if path.exists() else []


_LINE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] ")


def test_server_log_lines_look_like_kafkas(logged):
    logging.getLogger("kafka.server.KafkaServer").info("[KafkaServer id=0] started")
    logging.getLogger("kafka.server.ReplicaManager").warning("[ReplicaManager broker=0] slow")
    logging.getLogger("kafka.server.KafkaServer").debug("not at INFO")
    lines = _lines(logged / "server.log")
    assert len(lines) == 2
    assert _LINE.match(lines[0])
    assert lines[0][_LINE.match(lines[0]).end():] == "INFO [KafkaServer id=0] started (kafka.server.KafkaServer)"
    assert lines[1].endswith("] WARN [ReplicaManager broker=0] slow (kafka.server.ReplicaManager)")


def test_controller_and_state_change_logs_are_separate(logged):
    logging.getLogger("kafka.controller.KafkaController").info("[Controller id=0] elected")
    logging.getLogger("kafka.controller.KafkaController").log(logs.TRACE, "[Controller id=0] detail")
    logging.getLogger("state.change.logger").info("[Broker id=0] became leader")
    assert [l.split("] ", 1)[1] for l in _lines(logged / "controller.log")] == [
        "INFO [Controller id=0] elected (kafka.controller.KafkaController)",
        "TRACE [Controller id=0] detail (kafka.controller.KafkaController)"]
    assert [l.split("] ", 1)[1] for l in _lines(logged / "state-change.log")] == [
        "INFO [Broker id=0] became leader (state.change.logger)"]
    assert _lines(logged / "server.log") == []


def test_close_removes_the_handlers(tmp_path):
    setup = logs.setup_logging(tmp_path, stdout=False, twisted=False)
    setup.close()
    logging.getLogger("kafka.server.KafkaServer").error("after close")
    assert (tmp_path / "server.log").read_text() == ""
    assert logging.getLogger("kafka.controller").propagate is True


def test_stdout_gets_the_same_lines(tmp_path, capsys):
    setup = logs.setup_logging(tmp_path, stdout=True, twisted=False)
    try:
        logging.getLogger("kafka.Kafka").info("hello")
    finally:
        setup.close()
    out = capsys.readouterr().out
    assert out.endswith("] INFO hello (kafka.Kafka)\n")


def test_twisted_events_land_in_python_logging(logged):
    publisher = LogPublisher()
    beginner = LogBeginner(publisher, sys.stderr, sys, warnings)
    logs.route_twisted_logging(beginner)
    log = Logger(namespace="kafka.network.SocketServer", observer=publisher)
    log.info("Awaiting socket connections on {host}:{port}.", host="0.0.0.0", port=9092)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.failure("listener crashed")
    text = "\n".join(_lines(logged / "server.log"))
    assert "INFO Awaiting socket connections on 0.0.0.0:9092. (kafka.network.SocketServer)" in text
    assert "FATAL listener crashed (kafka.network.SocketServer)" in text
    assert "RuntimeError: boom" in text


def test_log_dir_comes_from_env_or_repo(monkeypatch):
    monkeypatch.setenv("LOG_DIR", "/var/log/kafkalike")
    assert logs.default_log_dir() == Path("/var/log/kafkalike")
    monkeypatch.delenv("LOG_DIR")
    assert logs.default_log_dir() == REPO / "logs"
