"""The Spark connector's driver side without Spark running or a broker: which kafka.*
settings reach the driver's admin client, planning with the isolation level, the
streaming source's data-loss rules, and the sink's producer defaults.
"""
from __future__ import annotations

import io
import logging
from types import SimpleNamespace

import pytest

from kafkalike.client.config import CONSUMER_CONFIG, PRODUCER_CONFIG, producer_config as parse_producer_config
from kafkalike.spark import load, planner, source
from kafkalike.spark.options import DATA_LOSS_HINT, KafkaOptionError, Subscription, source_options
from kafkalike.spark.planner import ADMIN_KEYS, admin_config, batch_ranges
from kafkalike.spark.reader import DataLossError
from kafkalike.spark.writer import PRODUCER_DEFAULTS, producer_config
from tests.security_certs import make_pki

SASL_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="spark" password="s3cret";'


# -- the driver's admin client ------------------------------------------------------------------

def test_the_driver_admin_config_keeps_connection_and_security_settings_and_drops_consumer_ones():
    options = source_options({
        "subscribe": "t", "kafka.bootstrap.servers": "h:9093", "kafka.client.id": "planner",
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": SASL_JAAS,
        "kafka.ssl.truststore.location": "/etc/ca.p12", "kafka.ssl.truststore.password": "pw",
        "kafka.ssl.truststore.type": "PKCS12", "kafka.ssl.endpoint.identification.algorithm": "",
        "kafka.sasl.login.refresh.window.factor": "0.8", "kafka.request.timeout.ms": "5000",
        "kafka.default.api.timeout.ms": "9000", "kafka.retries": "3", "kafka.client.dns.lookup": "use_all_dns_ips",
        "kafka.fetch.max.bytes": "1024", "kafka.max.poll.records": "7", "kafka.isolation.level": "read_committed",
        "kafka.group.id": "mine", "kafka.session.timeout.ms": "6000", "kafka.check.crcs": "false"},
        streaming=False)
    assert admin_config(options.client_config) == {
        "bootstrap.servers": "h:9093", "client.id": "planner", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN", "sasl.jaas.config": SASL_JAAS, "ssl.truststore.location": "/etc/ca.p12",
        "ssl.truststore.password": "pw", "ssl.truststore.type": "PKCS12",
        "ssl.endpoint.identification.algorithm": "", "sasl.login.refresh.window.factor": "0.8",
        "request.timeout.ms": "5000", "default.api.timeout.ms": "9000", "retries": "3",
        "client.dns.lookup": "use_all_dns_ips"}


def test_admin_keys_are_client_keys_kafka_knows():
    """No typo in the allow-list: each key is one Kafka's producer or consumer config knows
    (the admin's own, retries and default.api.timeout.ms, among them)."""
    assert ADMIN_KEYS <= set(CONSUMER_CONFIG) | set(PRODUCER_CONFIG)
    consumer_only = {"fetch.max.bytes", "isolation.level", "group.id", "max.poll.records", "auto.offset.reset"}
    assert not ADMIN_KEYS & consumer_only


def test_the_driver_admin_client_authenticates_with_the_sasl_settings():
    admin = planner.admin_client({"bootstrap.servers": "h:9093", "security.protocol": "SASL_PLAINTEXT",
                                  "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SASL_JAAS,
                                  "fetch.max.bytes": "1024"})
    assert (admin.security.protocol, admin.security.mechanism) == ("SASL_PLAINTEXT", "SCRAM-SHA-512")
    assert (admin.security.username, admin.security.password) == ("spark", "s3cret")


def test_the_driver_admin_client_trusts_the_ssl_truststore(tmp_path):
    pki = make_pki(tmp_path / "pki")
    admin = planner.admin_client({"bootstrap.servers": "h:9093", "security.protocol": "SSL",
                                  "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem")})
    trusted = [dict(x[0] for x in cert["subject"]) for cert in admin.security.context.get_ca_certs()]
    assert {"commonName": "kafkalike-test-ca", "organizationName": "kafkalike-tests"} in trusted


def test_the_load_job_hands_its_consumer_properties_to_the_driver(monkeypatch, tmp_path):
    """load.run plans through planner.admin_client with --consumer-property settings."""
    seen = []

    class Stop(Exception):
        pass

    def fake_admin(config):
        seen.append(dict(config))
        raise Stop
    monkeypatch.setattr(planner, "admin_client", fake_admin)
    args = load.parse_args(["--bootstrap-server", "h:9093", "--topic", "t", "--group", "g", "--output",
                            str(tmp_path / "out"), "--consumer-property", "security.protocol=SASL_PLAINTEXT",
                            "--consumer-property", "sasl.mechanism=PLAIN",
                            "--consumer-property", f"sasl.jaas.config={SASL_JAAS}"])
    with pytest.raises(Stop):
        load.run(args, io.StringIO(), io.StringIO())
    assert admin_config(seen[0]) == {"bootstrap.servers": "h:9093", "security.protocol": "SASL_PLAINTEXT",
                                     "sasl.mechanism": "PLAIN", "sasl.jaas.config": SASL_JAAS}


# -- planning with the isolation level -------------------------------------------------------------

class StubAdmin:
    """One topic "t" of two partitions; an open transaction holds the last stable offset
    of partition 0 at 40 while records are written to 50."""
    HW = {("t", 0): 50, ("t", 1): 30}
    LSO = {("t", 0): 40, ("t", 1): 30}

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def list_topics(self, include_internal=False):
        return [SimpleNamespace(name="t")]

    def describe_topics(self, names):
        return {"t": SimpleNamespace(partitions=[SimpleNamespace(partition=0), SimpleNamespace(partition=1)])}

    def list_offsets(self, specs, isolation_level="read_uncommitted"):
        self.asked.append(isolation_level)
        ends = self.LSO if isolation_level == "read_committed" else self.HW
        return {tp: SimpleNamespace(offset=0 if spec.timestamp == -2 else ends[tp]) for tp, spec in specs.items()}


@pytest.fixture
def stub_admin(monkeypatch) -> StubAdmin:
    admin = StubAdmin()
    monkeypatch.setattr(planner, "admin_client", lambda config: admin)
    monkeypatch.setattr(source, "admin_client", lambda config: admin)
    return admin


@pytest.mark.parametrize("level,ends", [("read_committed", [40, 30]), ("READ_COMMITTED", [40, 30]),
                                        ("read_uncommitted", [50, 30]), (None, [50, 30])])
def test_a_batch_plans_to_the_end_its_consumers_see(stub_admin, level, ends):
    options = {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}
    if level:
        options["kafka.isolation.level"] = level
    ranges = batch_ranges(source_options(options, streaming=False))
    assert [(r.partition, r.start, r.end) for r in ranges] == [(0, 0, ends[0]), (1, 0, ends[1])]


def test_a_stream_plans_to_the_last_stable_offset_with_read_committed(stub_admin):
    stream = source.KafkaStreamReader(source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                                                      "kafka.isolation.level": "read_committed"}, streaming=True))
    assert stream.initialOffset() == {"t": {"0": 40, "1": 30}}
    assert stream.reportLatestOffset() == {"t": {"0": 40, "1": 30}}


def test_the_load_job_plans_to_the_last_stable_offset_with_read_committed():
    admin = StubAdmin()
    store = SimpleNamespace(committed=lambda group, partitions: {("t", 0): 45, ("t", 1): 25})
    plans = load.plan_load(admin, Subscription("subscribe", topics=("t",)), "g", store, io.StringIO(),
                           "read_committed")
    # Partition 0's committed 45 lies past the last stable offset (40), inside the log: nothing to load yet.
    assert [(p.partition, p.start, p.end, p.note) for p in plans] == [(0, 45, 45, ""), (1, 25, 30, "")]
    plans = load.plan_load(admin, Subscription("subscribe", topics=("t",)), "g", store, io.StringIO())
    assert [(p.partition, p.start, p.end) for p in plans] == [(0, 45, 50), (1, 25, 30)]


def test_a_bad_isolation_level_fails_on_the_driver():
    with pytest.raises(KafkaOptionError) as raised:
        source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "kafka.isolation.level": "committed"},
                       streaming=False)
    assert str(raised.value) == ("Invalid value committed for configuration isolation.level: String must be one "
                                 "of: read_committed, read_uncommitted (option 'kafka.isolation.level')")


# -- streaming data loss ---------------------------------------------------------------------------

def stream_reader(fail_on_data_loss: bool) -> source.KafkaStreamReader:
    return source.KafkaStreamReader(source_options({
        "kafka.bootstrap.servers": "h:1", "subscribe": "t,u", "failOnDataLoss": str(fail_on_data_loss).lower()},
        streaming=True))


def spans(partitions) -> list[tuple]:
    return [(p.range.topic, p.range.partition, p.range.start, p.range.end) for p in partitions]


def test_a_partition_whose_end_fell_below_its_start_fails_the_query():
    with pytest.raises(DataLossError) as raised:
        stream_reader(True).partitions({"t": {"0": 30, "1": 10}}, {"t": {"0": 5, "1": 20}})
    assert str(raised.value).startswith("Partition t-0's offset was changed from 30 to 5, some data may have been "
                                        "missed.")
    assert DATA_LOSS_HINT in str(raised.value)


def test_a_partition_whose_end_fell_below_its_start_is_skipped_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="kafkalike.spark"):
        parts = stream_reader(False).partitions({"t": {"0": 30, "1": 10}}, {"t": {"0": 5, "1": 20}})
    assert spans(parts) == [("t", 1, 10, 20)]
    assert any("Partition t-0's offset was changed from 30 to 5" in r.getMessage() and
               'set the source option "failOnDataLoss" to "true"' in r.getMessage() for r in caplog.records)


def test_partitions_that_vanished_fail_the_query():
    with pytest.raises(DataLossError, match=r"^Partitions t-1, u-0 are gone\. Some data may have been missed\."):
        stream_reader(True).partitions({"t": {"0": 3, "1": 4}, "u": {"0": 1}}, {"t": {"0": 5}})


def test_partitions_that_vanished_are_reported_and_the_rest_read(caplog):
    with caplog.at_level(logging.WARNING, logger="kafkalike.spark"):
        parts = stream_reader(False).partitions({"t": {"0": 3, "1": 4}, "u": {"0": 1}}, {"t": {"0": 5}})
    assert spans(parts) == [("t", 0, 3, 5)]
    assert any("Partitions t-1, u-0 are gone" in r.getMessage() for r in caplog.records)


def test_latest_offset_keeps_an_end_below_the_start_for_partitions_to_report(monkeypatch):
    """Raising the end to the start would pass over the records the partition gets next,
    up to the old offset, without a word."""
    reader = stream_reader(True)
    monkeypatch.setattr(reader, "_latest", lambda: {"t": {"0": 5, "1": 20}})
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    end = reader.latestOffset({"t": {"0": 30, "1": 10}}, ReadAllAvailable())
    assert end == {"t": {"0": 5, "1": 20}}
    with pytest.raises(DataLossError):
        reader.partitions({"t": {"0": 30, "1": 10}}, end)


def test_new_partitions_start_at_zero_and_steady_ones_read_on():
    parts = stream_reader(True).partitions({"t": {"0": 3}}, {"t": {"0": 3, "1": 4}, "u": {"0": 2}})
    assert spans(parts) == [("t", 1, 0, 4), ("u", 0, 0, 2)]


# -- the sink's producer ---------------------------------------------------------------------------

def test_the_sink_produces_idempotently_with_acks_all_by_default():
    config = producer_config({"bootstrap.servers": "h:1"})
    assert config == {**PRODUCER_DEFAULTS, "bootstrap.servers": "h:1"}
    assert (config["acks"], config["enable.idempotence"]) == ("all", "true")
    parsed = parse_producer_config(config)
    assert (parsed["acks"], parsed["enable.idempotence"], parsed["linger.ms"]) == ("-1", True, 5)


def test_the_users_kafka_options_override_the_sink_defaults():
    config = producer_config({"bootstrap.servers": "h:1", "linger.ms": "50", "client.id": "loader",
                              "compression.type": "zstd"})
    assert (config["linger.ms"], config["client.id"], config["compression.type"]) == ("50", "loader", "zstd")
    assert (config["acks"], config["enable.idempotence"]) == ("all", "true")


@pytest.mark.parametrize("override", [{"acks": "1"}, {"acks": "0"}, {"retries": "0"},
                                      {"max.in.flight.requests.per.connection": "6"}])
def test_settings_that_conflict_with_idempotence_turn_the_default_off(override):
    """As Java 3's producer (KIP-679): idempotence is only a default."""
    config = producer_config({"bootstrap.servers": "h:1", **override})
    assert config["enable.idempotence"] == "false"
    parsed = parse_producer_config(config)          # the producer takes it
    assert parsed["enable.idempotence"] is False


def test_idempotence_asked_for_with_acks_1_is_refused_by_the_producer():
    config = producer_config({"bootstrap.servers": "h:1", "acks": "1", "enable.idempotence": "true"})
    assert config["enable.idempotence"] == "true"
    from kafkalike.client.errors import ConfigError
    with pytest.raises(ConfigError, match="Must set acks to all"):
        parse_producer_config(config)


def test_idempotence_can_be_turned_off_alone():
    config = producer_config({"bootstrap.servers": "h:1", "enable.idempotence": "false"})
    assert (config["acks"], config["enable.idempotence"]) == ("all", "false")
