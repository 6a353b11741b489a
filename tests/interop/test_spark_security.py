"""Spark reads and writes over secured listeners, with the credentials given only as
kafka.* options: the driver's admin client (planning) and the tasks' consumers and
producers must all use them.

The broker is test_security_clients.py's (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL and
an SSL listener that requires client certificates); records go in and are judged with
confluent-kafka on its PLAINTEXT listener.
"""
from __future__ import annotations

import pytest

from tests.interop.spark_support import (FORMAT, Rec, consume_all, create_topic, fails_on_driver, produce, reader,
                                         registered, rows, unique)
from tests.interop.test_security_clients import _own_config, secure  # noqa: F401 - the module's broker fixture

pytestmark = [pytest.mark.interop, pytest.mark.spark]

CASES = [("SASL_SSL", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "PLAIN"), ("MTLS", None)]


def kafka_options(secure, listener: str, mechanism: str | None, **kwargs) -> dict[str, str]:  # noqa: F811
    """The client settings as a Spark user passes them: kafka.-prefixed, bootstrap apart."""
    return {f"kafka.{k}": str(v) for k, v in _own_config(secure, listener, mechanism, **kwargs).items()
            if k != "bootstrap.servers"}


@pytest.fixture(scope="module")
def written(secure):  # noqa: F811
    """A 2-partition topic with 20 records, written on the PLAINTEXT listener."""
    plain = secure.addr("PLAINTEXT")
    topic = create_topic(plain, unique("spark-secure"), 2)
    records = [Rec(b"k%d" % i, b"secret reading %d" % i, i % 2) for i in range(20)]
    placed = produce(plain, topic, records)
    return topic, sorted(((r.key, r.value, p, o) for r, (p, o) in zip(records, placed)), key=lambda e: e[2:])


@pytest.mark.parametrize("listener,mechanism", CASES)
def test_a_batch_read_over_a_secured_listener(spark, secure, written, listener, mechanism):  # noqa: F811
    topic, expected = written
    df = reader(spark, secure.addr(listener), subscribe=topic, **kafka_options(secure, listener, mechanism)).load()
    assert [(r[0], r[1], r[3], r[4]) for r in rows(df)] == expected


def test_a_wrong_password_fails_on_the_driver(spark, secure, written):  # noqa: F811
    topic, _ = written
    options = kafka_options(secure, "SASL_SSL", "SCRAM-SHA-256", password_ok=False)
    message = fails_on_driver(spark, lambda: reader(spark, secure.addr("SASL_SSL"), subscribe=topic,
                                                    **{**options, "kafka.default.api.timeout.ms": "15000"})
                              .load().collect())
    assert "Authentication failed during authentication due to invalid credentials with SASL mechanism " \
           "SCRAM-SHA-256" in message, message[:2000]


def test_a_write_over_sasl_ssl(spark, secure):  # noqa: F811
    topic = create_topic(secure.addr("PLAINTEXT"), unique("spark-secure-write"), 1)
    df = registered(spark).createDataFrame([(f"k{i}", f"written securely {i}") for i in range(12)], "key string, "
                                           "value string")
    writer = df.write.format(FORMAT).option("kafka.bootstrap.servers", secure.addr("SASL_SSL")).option("topic", topic)
    for key, value in kafka_options(secure, "SASL_SSL", "SCRAM-SHA-512").items():
        writer = writer.option(key, value)
    writer.mode("append").save()
    got = consume_all(secure.addr("PLAINTEXT"), topic, 1, expected=12)
    assert sorted((m.key(), m.value()) for m in got) == sorted((b"k%d" % i, b"written securely %d" % i)
                                                             for i in range(12))
