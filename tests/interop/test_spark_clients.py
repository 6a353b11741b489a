"""Third-party clients as judges of the Spark connector, for every codec.

Records produced by confluent-kafka (keys, null keys, null values, headers, explicit
timestamps) and by kcat (binary records split on delimiters, null keys, static headers),
compressed with none, gzip, snappy, lz4 and zstd, must come out of
spark.read.format("kafkalike") byte for byte, at the offsets and timestamps kcat reports.
What Spark writes with each codec must be read back by kcat byte for byte, and stored
with that codec.
"""
from __future__ import annotations

import random

import pytest

from tests.interop.samples import CODEC_IDS, CODECS, stored_as_librdkafka_sends, stored_codecs
from tests.interop.spark_support import (FORMAT, Rec, create_topic, kcat, kcat_consume, produce, reader, registered,
                                         rows, unique)

pytestmark = [pytest.mark.interop, pytest.mark.spark]

PER_CLIENT = 200
BASE_TS = 1_690_000_000_000
# kcat splits its input at these; made of distinct bytes, so two records cannot form one.
MESSAGE_DELIM = b"\xf1\x02\xe3\x14\xd5\x06"
KEY_DELIM = b"\x9a\x0b\x8c\x1d\x7e"
KCAT_HEADERS = (("origin", b"kcat"), ("trace", b"a1b2"))


def escaped(delimiter: bytes) -> str:
    return "".join(f"\\x{b:02x}" for b in delimiter)


def confluent_records(codec: str) -> list[Rec]:
    rng = random.Random(CODECS.index(codec))
    out = []
    for i in range(PER_CLIENT):
        key = None if i % 6 == 0 else b"c" + i.to_bytes(2, "big") + rng.randbytes(rng.randint(0, 9))
        run = rng.randbytes(rng.randint(1, 16))
        value = None if i % 9 == 4 else (run * 20)[: rng.randint(1, 300)]
        headers = None
        if i % 4 == 1:
            headers = (("codec", codec.encode()), ("bin", rng.randbytes(4)), ("null", None))
        out.append(Rec(key, value, 0, BASE_TS + i, headers))
    return out


def kcat_records(codec: str) -> list[Rec]:
    """Keys and values for kcat: every fifth record has no key delimiter, so no key."""
    rng = random.Random(100 + CODECS.index(codec))
    out = []
    for i in range(PER_CLIENT):
        run = rng.randbytes(rng.randint(1, 16))
        value = b"kc" + (run * 20)[: rng.randint(1, 300)]
        key = None if i % 5 == 0 else b"k" + i.to_bytes(2, "big") + rng.randbytes(rng.randint(0, 9))
        out.append(Rec(key, value, 1, None, KCAT_HEADERS))
    data = kcat_input(out)
    assert data.count(MESSAGE_DELIM) == len(out), "random data formed a delimiter: change the seed"
    return out


def nullable(data: bytes | None) -> tuple[bool, bytes]:
    """Sortable, and a null apart from b""."""
    return (data is not None, data or b"")


def kcat_input(records: list[Rec]) -> bytes:
    return b"".join((r.key + KEY_DELIM if r.key is not None else b"") + r.value + MESSAGE_DELIM for r in records)


@pytest.fixture(scope="module")
def produced(broker):
    """Per codec, a 2-partition topic: confluent-kafka wrote partition 0, kcat partition 1."""
    out = {}
    for codec in CODECS:
        topic = create_topic(broker.bootstrap, unique(f"spark-codec-{codec}"), 2)
        first = confluent_records(codec)
        produce(broker.bootstrap, topic, first, **{"compression.type": codec, "linger.ms": 20})
        second = kcat_records(codec)
        header_args = [a for name, value in KCAT_HEADERS for a in ("-H", f"{name}={value.decode()}")]
        kcat("-b", broker.bootstrap, "-P", "-t", topic, "-p", "1", "-z", codec, "-X", "linger.ms=20",
             "-D", escaped(MESSAGE_DELIM), "-K", escaped(KEY_DELIM), *header_args, data=kcat_input(second))
        out[codec] = (topic, first, second)
    return out


def test_every_codec_from_confluent_kafka_and_kcat_reads_byte_for_byte(spark, broker, produced):
    topics = [topic for topic, _, _ in produced.values()]
    got = rows(reader(spark, broker.bootstrap, subscribe=",".join(topics), includeHeaders="true").load())
    for codec, (topic, first, second) in produced.items():
        mine = [g for g in got if g[2] == topic]
        # Stored as produced: the clients' batches carry the codec (read from the log files).
        assert stored_as_librdkafka_sends(broker.log_dir, topic, codec), (codec, stored_codecs(broker.log_dir, topic))
        # confluent-kafka's records, in order on partition 0, with every field.
        p0 = [g for g in mine if g[3] == 0]
        assert [(g[0], g[1], g[5], g[6], g[7]) for g in p0] == \
            [(r.key, r.value, r.timestamp, 0, r.headers) for r in first], codec
        assert [g[4] for g in p0] == list(range(PER_CLIENT))
        # kcat's records on partition 1: null keys where kcat found no key delimiter.
        p1 = [g for g in mine if g[3] == 1]
        assert [(g[0], g[1], g[7]) for g in p1] == [(r.key, r.value, KCAT_HEADERS) for r in second], codec
        # kcat reading the same topic sees the same partitions, offsets, timestamps and bytes.
        judged = kcat_consume(broker.bootstrap, topic)
        assert judged == sorted((g[3], g[4], g[5], g[0], g[1]) for g in mine), codec


@pytest.mark.parametrize("codec", CODECS)
def test_what_spark_writes_with_each_codec_kcat_reads_byte_for_byte(spark, broker, codec):
    topic = create_topic(broker.bootstrap, unique(f"spark-out-{codec}"), 2)
    rng = random.Random(7 + CODECS.index(codec))
    data = []
    for i in range(300):
        key = None if i % 10 == 0 else bytearray(b"\x00" + i.to_bytes(2, "big") + rng.randbytes(5))
        value = None if i % 13 == 6 else bytearray((rng.randbytes(8) * 30)[: rng.randint(0, 240)])
        data.append((key, value))
    df = registered(spark).createDataFrame(data, "key binary, value binary")
    (df.write.format(FORMAT).mode("append").option("kafka.bootstrap.servers", broker.bootstrap)
     .option("topic", topic).option("kafka.compression.type", codec).option("kafka.linger.ms", "20").save())
    got = kcat_consume(broker.bootstrap, topic)
    expected = [(None if k is None else bytes(k), None if v is None else bytes(v)) for k, v in data]
    # Exact, nulls apart from empty byte strings (kcat reports a null's length as -1).
    assert sorted((nullable(g[3]), nullable(g[4])) for g in got) == \
        sorted((nullable(k), nullable(v)) for k, v in expected)
    assert stored_codecs(broker.log_dir, topic) == {CODEC_IDS[codec]}
