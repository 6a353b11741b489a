"""kcat (Debian's, librdkafka inside) against one broker: produce, consume, list, query.

kcat is driven as a user drives it, through its command line. Records are binary in
both directions: kcat splits its input on multi-byte delimiters that the data never
contains, and prints what it consumes with length prefixes (%K, %S) so the output can
be cut back into exact bytes.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.interop.samples import CODECS, binary_samples, stored_as_librdkafka_sends, stored_codecs
from tests.waiting import wait_until

pytestmark = pytest.mark.interop

KCAT = shutil.which("kcat")
RECORDS = 10_000
# Delimiters made of distinct bytes cannot overlap themselves, so a record that does
# not contain one cannot form it with its neighbour either (checked in split_input).
MESSAGE_DELIM = b"\xf1\x02\xe3\x14\xd5\x06"
KEY_DELIM = b"\x9a\x0b\x8c\x1d\x7e"
STATIC_HEADERS = [("origin", "kcat"), ("trace", "a1b2")]
# One line of metadata per record, then exactly %K key bytes and %S value bytes.
CONSUME_FORMAT = r"%p %o %T %K %S %h\n%k%s\n"


@dataclass
class Consumed:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: str


@pytest.fixture(scope="module")
def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create_topic(admin: AdminClient, name: str, partitions: int) -> None:
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=15).values():
        future.result()


def kcat(*args: str, data: bytes | None = None, timeout: float = 60) -> bytes:
    assert KCAT, "kcat is not installed (apt-get install kcat)"
    proc = subprocess.run([KCAT, *args], input=data, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, f"kcat {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}"
    assert b"ERROR" not in proc.stderr, proc.stderr.decode(errors="replace")
    return proc.stdout


def escaped(delimiter: bytes) -> str:
    """kcat's own notation for bytes in a delimiter (\\xNN)."""
    return "".join(f"\\x{b:02x}" for b in delimiter)


def kcat_input(samples) -> bytes:
    return b"".join(s.key + KEY_DELIM + s.value + MESSAGE_DELIM for s in samples)


def split_input(data: bytes) -> list[tuple[bytes, bytes]]:
    """How kcat cuts its input: messages at MESSAGE_DELIM, then the key at the first KEY_DELIM."""
    pieces = data.split(MESSAGE_DELIM)
    assert pieces[-1] == b""
    return [tuple(p.split(KEY_DELIM, 1)) for p in pieces[:-1]]


def consume_all(bootstrap: str, topic: str, *extra: str) -> list[Consumed]:
    out = kcat("-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
               "-f", CONSUME_FORMAT, *extra)
    return parse_consumed(out)


def parse_consumed(out: bytes) -> list[Consumed]:
    records, pos = [], 0
    while pos < len(out):
        eol = out.index(b"\n", pos)
        fields = out[pos:eol].split(b" ", 5)
        partition, offset, ts, klen, vlen = (int(f) for f in fields[:5])
        pos = eol + 1
        key = None if klen < 0 else out[pos:pos + klen]
        pos += max(klen, 0)
        value = None if vlen < 0 else out[pos:pos + vlen]
        pos += max(vlen, 0)
        assert out[pos:pos + 1] == b"\n", f"output out of step at byte {pos}"
        pos += 1
        records.append(Consumed(partition, offset, ts, key, value, fields[5].decode()))
    return records


@pytest.mark.parametrize("codec", CODECS)
def test_produce_and_consume_binary_records(broker, admin, topic_name, codec):
    create_topic(admin, topic_name, 2)
    samples = binary_samples(RECORDS, seed=CODECS.index(codec), with_headers=False)
    data = kcat_input(samples)
    assert split_input(data) == [(s.key, s.value) for s in samples]   # the data avoids the delimiters

    before = int(time.time() * 1000)
    header_args = [a for name, value in STATIC_HEADERS for a in ("-H", f"{name}={value}")]
    kcat("-b", broker.bootstrap, "-P", "-t", topic_name, "-z", codec, "-X", "linger.ms=20",
         "-D", escaped(MESSAGE_DELIM), "-K", escaped(KEY_DELIM), *header_args,
         data=data)
    after = int(time.time() * 1000)

    consumed = consume_all(broker.bootstrap, topic_name)
    assert len(consumed) == RECORDS
    by_key = {c.key: c for c in consumed}
    assert len(by_key) == RECORDS
    for s in samples:
        got = by_key[s.key]
        assert got.value == s.value
        assert got.headers == ",".join(f"{n}={v}" for n, v in STATIC_HEADERS)
        assert before <= got.timestamp <= after
    # Offsets are dense from 0 in each partition, and each partition keeps the
    # order in which its records were produced.
    order = {s.key: i for i, s in enumerate(samples)}
    for partition in (0, 1):
        mine = [c for c in consumed if c.partition == partition]
        assert mine, f"partition {partition} got no records"
        assert [c.offset for c in mine] == list(range(len(mine)))
        assert [order[c.key] for c in mine] == sorted(order[c.key] for c in mine)
    assert stored_as_librdkafka_sends(broker.log_dir, topic_name, codec), stored_codecs(broker.log_dir, topic_name)


def test_consumes_what_confluent_kafka_produced(broker, admin, topic_name):
    """The other direction: librdkafka-in-Python writes binary records with their own
    timestamps and headers; kcat reads them back byte for byte and finds them by time."""
    create_topic(admin, topic_name, 1)
    base_ts = 1_600_000_000_000
    samples = binary_samples(RECORDS, seed=99, with_headers=False, base_timestamp=base_ts)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "lz4",
                         "linger.ms": 20, "acks": "all"})
    errors = []
    for i, s in enumerate(samples):
        producer.produce(topic_name, key=s.key, value=s.value, timestamp=s.timestamp,
                         headers=[("index", str(i).encode()), ("by", b"confluent")],
                         on_delivery=lambda err, _msg: err and errors.append(err))
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []

    consumed = consume_all(broker.bootstrap, topic_name, "-p", "0")
    assert [(c.offset, c.key, c.value, c.timestamp) for c in consumed] == \
        [(i, s.key, s.value, s.timestamp) for i, s in enumerate(samples)]
    assert [c.headers for c in consumed] == [f"index={i},by=confluent" for i in range(RECORDS)]

    # -Q asks the broker (ListOffsets) for the first offset at or after a timestamp.
    for target in (base_ts, base_ts + 1, base_ts + 4321, base_ts + RECORDS - 1):
        answer = kcat("-b", broker.bootstrap, "-Q", "-t", f"{topic_name}:0:{target}").decode()
        assert answer.strip() == f"{topic_name} [0] offset {target - base_ts}"
    answer = kcat("-b", broker.bootstrap, "-Q", "-t", f"{topic_name}:0:{base_ts + RECORDS}").decode()
    assert answer.strip() == f"{topic_name} [0] offset -1"


def test_metadata_lists_topics_partitions_and_leaders(broker, admin, topic_name):
    names = {f"{topic_name}-one": 1, f"{topic_name}-three": 3}
    for name, partitions in names.items():
        create_topic(admin, name, partitions)

    listing = json.loads(kcat("-b", broker.bootstrap, "-L", "-J"))
    assert listing["controllerid"] == 0
    assert listing["brokers"] == [{"id": 0, "name": broker.bootstrap}]
    topics = {t["topic"]: t for t in listing["topics"]}
    for name, partitions in names.items():
        parts = sorted(topics[name]["partitions"], key=lambda p: p["partition"])
        assert [p["partition"] for p in parts] == list(range(partitions))
        for p in parts:
            assert p["leader"] == 0
            assert p["replicas"] == [{"id": 0}] and p["isrs"] == [{"id": 0}]
            assert "error" not in p

    # The human-readable form, for one topic, as an operator reads it.
    text = kcat("-b", broker.bootstrap, "-L", "-t", f"{topic_name}-three").decode()
    assert f'topic "{topic_name}-three" with 3 partitions:' in text
    for p in range(3):
        assert f"partition {p}, leader 0, replicas: 0, isrs: 0" in text


def test_three_brokers_agree_on_leaders_and_serve_their_partitions(kafka_cluster, topic_name):
    """Partitions led by different brokers: every broker's metadata names the same
    leaders, and kcat writes to and reads from each leader directly."""
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    create_topic(admin, topic_name, 6)

    def listing(b):
        topics = json.loads(kcat("-b", b.bootstrap, "-L", "-J", "-t", topic_name))["topics"]
        parts = topics[0]["partitions"] if topics and "error" not in topics[0] else []
        return {p["partition"]: p["leader"] for p in parts if "error" not in p}
    leaders = [wait_until(lambda b=b: len(listing(b)) == 6 and listing(b), what=f"metadata on broker {b.broker_id}")
               for b in kafka_cluster.brokers]
    assert leaders[0] == leaders[1] == leaders[2]
    assert sorted(leaders[0].values()) == [0, 0, 1, 1, 2, 2]      # two partitions led by each
    brokers = json.loads(kcat("-b", kafka_cluster.brokers[2].bootstrap, "-L", "-J"))["brokers"]
    assert sorted((b["id"], b["name"]) for b in brokers) == [(b.broker_id, b.bootstrap) for b in kafka_cluster.brokers]

    samples = binary_samples(3000, seed=21, with_headers=False)
    kcat("-b", kafka_cluster.bootstrap, "-P", "-t", topic_name, "-z", "gzip",
         "-D", escaped(MESSAGE_DELIM), "-K", escaped(KEY_DELIM), data=kcat_input(samples))
    consumed = consume_all(kafka_cluster.bootstrap, topic_name)
    assert sorted((c.key, c.value) for c in consumed) == sorted((s.key, s.value) for s in samples)
    for p in range(6):
        offsets = [c.offset for c in consumed if c.partition == p]
        assert offsets == list(range(len(offsets))) and offsets, p
