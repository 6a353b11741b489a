"""Dynamic broker configs on real ZooKeeper and broker processes, and kafka-configs.sh.

Kafka 2.8's rules, end to end: a cluster-wide default in /config/brokers/<default> and
per-broker values in /config/brokers/<id>, written through AlterConfigs /
IncrementalAlterConfigs (or `kafka-configs.sh --zookeeper` before a broker starts),
announced in /config/changes and applied live by every broker; DescribeConfigs reports
the source and the synonyms; read-only keys and bad values are refused and nothing is
written; a restarted broker reads its dynamic configs back.
"""
from __future__ import annotations

import io
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafkalike.cli.configs import main as kafka_configs
from kafkalike.client.admin import (AdminClient, AlterConfigOp, AlterConfigOpType, ConfigResource, ConfigSource,
                                    KafkaAdminError, NewTopic, ResourceType)
from kafkalike.lab.cluster import Cluster
from kafkalike.protocol.errors import ErrorCode
from kafkalike.zkdata.kafka_json import java_hash_map_order, java_properties_order
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
BROKER_0 = ConfigResource(ResourceType.BROKER, "0")
DEFAULT = ConfigResource(ResourceType.BROKER, "")


def tool(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = kafka_configs(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def entries(admin: AdminClient, resource: ConfigResource) -> dict:
    """DescribeConfigs of one resource; a topic just created may not be in every broker's
    metadata yet (UNKNOWN_TOPIC_OR_PARTITION for a moment), so that is asked again."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return {e.name: e for e in admin.describe_configs([resource], include_synonyms=True)[resource]}
        except KafkaAdminError as error:
            if error.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def create_topics(cluster: Cluster, *topics: NewTopic) -> None:
    """Create, then wait until every broker's metadata has the topics (a tool may ask any)."""
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topics(list(topics))
    for broker in cluster.brokers:
        if broker.is_running():
            with AdminClient({"bootstrap.servers": broker.bootstrap}) as one:
                for topic in topics:
                    entries(one, ConfigResource(ResourceType.TOPIC, topic.name))


def znode(kazoo: KazooClient, path: str) -> dict | None:
    found = kazoo.exists(path)
    return None if found is None else json.loads(kazoo.get(path)[0])


@pytest.fixture
def cluster(zk_chroot, shm_path):
    cluster = Cluster(zk_chroot, shm_path, 2, {"log.retention.hours": "168"})
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.kill()


@pytest.fixture
def zk(zk_chroot):
    client = KazooClient(hosts=zk_chroot)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def test_cluster_default_reaches_topics_without_override_and_per_broker_value_wins(cluster, zk):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        create_topics(cluster, NewTopic("plain", 2, 2), NewTopic("own", 1, 2, configs={"retention.ms": "3600000"}))
        topic = ConfigResource(ResourceType.TOPIC, "plain")
        assert entries(admin, topic)["retention.ms"].value == "604800000"

        admin.incremental_alter_configs({DEFAULT: [AlterConfigOp("log.retention.ms", "86400000")]})
        assert znode(zk, "/config/brokers/<default>") == {"version": 1, "config": {"log.retention.ms": "86400000"}}
        assert json.loads(zk.get(f"/config/changes/{sorted(zk.get_children('/config/changes'))[-1]}")[0]) == {
            "version": 2, "entity_path": "brokers/<default>"}

        # Every broker applies it: the topic without an override reads the new default,
        # with the dynamic default first among its synonyms.
        for b in (0, 1):
            with AdminClient({"bootstrap.servers": cluster.brokers[b].bootstrap}) as one:
                retention = wait_until(lambda: (lambda e: e if e.value == "86400000" else None)(
                    entries(one, topic)["retention.ms"]), what=f"broker {b} to apply the default")
                assert retention.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
                    ("log.retention.ms", "86400000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                    ("log.retention.hours", "168", ConfigSource.STATIC_BROKER_CONFIG),
                    ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]
        own = entries(admin, ConfigResource(ResourceType.TOPIC, "own"))["retention.ms"]
        assert (own.value, own.source) == ("3600000", ConfigSource.TOPIC_CONFIG)

        # The default resource lists only what is set there, with only its own synonym.
        described = entries(admin, DEFAULT)
        assert list(described) == ["log.retention.ms"]
        assert [(s.name, s.source) for s in described["log.retention.ms"].synonyms] == [
            ("log.retention.ms", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]

        # A per-broker value wins over the default on that broker only.
        admin.incremental_alter_configs({BROKER_0: [AlterConfigOp("log.retention.ms", "7200000")]})
        assert znode(zk, "/config/brokers/0") == {"version": 1, "config": {"log.retention.ms": "7200000"}}
        broker0 = entries(admin, BROKER_0)["log.retention.ms"]
        assert broker0.value == "7200000" and broker0.source == ConfigSource.DYNAMIC_BROKER_CONFIG
        assert [s.source for s in broker0.synonyms][:2] == [ConfigSource.DYNAMIC_BROKER_CONFIG,
                                                            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
        with AdminClient({"bootstrap.servers": cluster.brokers[0].bootstrap}) as one:
            assert wait_until(lambda: entries(one, topic)["retention.ms"].value == "7200000")
        with AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap}) as one:
            assert entries(one, topic)["retention.ms"].value == "86400000"

        # Deleting the per-broker value falls back to the default.
        admin.incremental_alter_configs({BROKER_0: [AlterConfigOp("log.retention.ms", None,
                                                                  AlterConfigOpType.DELETE)]})
        assert entries(admin, BROKER_0)["log.retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def test_new_topic_and_live_log_pick_up_the_default_segment_size(cluster):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic("before", 1, 1)])
        admin.alter_configs({DEFAULT: {"log.segment.bytes": "1048576", "message.max.bytes": "2000"}})
        admin.create_topics([NewTopic("after", 1, 1)])
    # Each broker learns the new default from /config/changes on its own time, so each is
    # asked (the leader of "before" may not be the broker that took the change).
    for broker in cluster.brokers:
        with AdminClient({"bootstrap.servers": broker.bootstrap}) as one:
            for name in ("before", "after"):
                topic = ConfigResource(ResourceType.TOPIC, name)
                wait_until(lambda: entries(one, topic)["max.message.bytes"].value == "2000",
                           what=f"broker {broker.broker_id} to apply the default to {name}")
                described = entries(one, topic)
                assert described["segment.bytes"].value == "1048576"
                assert described["segment.bytes"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    # message.max.bytes is applied to appends: a 3000-byte record is refused now.
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.max.bytes": 100000})
    reports = []
    producer.produce("before", b"x" * 3000, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(20)
    assert reports and reports[0] is not None and reports[0].name() == "MSG_SIZE_TOO_LARGE"


def test_refusals_say_why_and_change_nothing(cluster, zk):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        def refused(changes, incremental=True) -> KafkaAdminError:
            with pytest.raises(KafkaAdminError) as error:
                if incremental:
                    admin.incremental_alter_configs(changes)
                else:
                    admin.alter_configs(changes)
            return error.value

        read_only = refused({BROKER_0: [AlterConfigOp("log.dirs", "/elsewhere")]})
        assert (read_only.code, read_only.message) == (
            ErrorCode.INVALID_REQUEST, "Invalid config value for resource ConfigResource(type=BROKER, name='0'): "
                                       "Cannot update these configs dynamically: Set(log.dirs)")
        bad = refused({DEFAULT: {"log.retention.ms": "soon"}}, incremental=False)
        assert (bad.code, bad.message) == (
            ErrorCode.INVALID_REQUEST, "Invalid config value for resource ConfigResource(type=BROKER, name=''): "
                                       "Invalid value soon for configuration log.retention.ms: Not a number of type "
                                       "LONG")
        below = refused({BROKER_0: [AlterConfigOp("log.cleaner.threads", "-1")]})
        assert below.message.endswith("Invalid value -1 for configuration log.cleaner.threads: Value must be at "
                                      "least 0")
        per_broker = refused({DEFAULT: [AlterConfigOp("listeners", "PLAINTEXT://:0")]})
        assert per_broker.message.endswith("Cannot update these configs at default cluster level, broker id must be "
                                           "specified: Set(listeners)")
        assert zk.exists("/config/brokers/0") is None and zk.exists("/config/brokers/<default>") is None
        # validate_only checks and writes nothing.
        admin.incremental_alter_configs({BROKER_0: [AlterConfigOp("log.retention.ms", "1000")]}, validate_only=True)
        assert zk.exists("/config/brokers/0") is None


def test_restarted_broker_keeps_its_dynamic_configs(cluster):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.incremental_alter_configs({DEFAULT: [AlterConfigOp("log.retention.bytes", "123456789")],
                                         BROKER_0: [AlterConfigOp("min.insync.replicas", "2")]})
    cluster.brokers[0].stop()
    cluster.brokers[0].restart()
    with AdminClient({"bootstrap.servers": cluster.brokers[0].bootstrap}) as admin:
        described = entries(admin, BROKER_0)
        assert (described["log.retention.bytes"].value, described["log.retention.bytes"].source) == (
            "123456789", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert (described["min.insync.replicas"].value, described["min.insync.replicas"].source) == (
            "2", ConfigSource.DYNAMIC_BROKER_CONFIG)
        admin.create_topics([NewTopic("after-restart", 1, 1, replica_assignment=None)])
        topic = entries(admin, ConfigResource(ResourceType.TOPIC, "after-restart"))
        assert topic["retention.bytes"].value == "123456789"


def test_kafka_configs_bootstrap_server_lines(cluster, zk):
    bootstrap = cluster.bootstrap
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-default", "--alter",
                "--add-config", "log.retention.ms=86400000,log.cleaner.backoff.ms=20000") == (
        0, "Completed updating default config for brokers in the cluster.\n", "")
    assert tool("--bootstrap-server", bootstrap, "--broker", "0", "--alter", "--add-config",
                "log.retention.ms=3600000") == (0, "Completed updating config for broker 0.\n", "")
    code, out, err = tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name", "0",
                          "--describe")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Dynamic configs for broker 0 are:",
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000, STATIC_BROKER_CONFIG:log.retention.hours=168, "
        "DEFAULT_CONFIG:log.retention.hours=168}"]
    code, out, err = tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-default",
                          "--describe")
    lines = {"log.cleaner.backoff.ms": "  log.cleaner.backoff.ms=20000 sensitive=false synonyms="
                                       "{DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=20000}",
             "log.retention.ms": "  log.retention.ms=86400000 sensitive=false synonyms="
                                 "{DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}"}
    # In the order of the Java client's Config (a HashMap), as kafka-configs prints them.
    assert out.splitlines() == ["Default configs for brokers in the cluster are:"] + [
        lines[name] for name in java_hash_map_order(list(lines))]
    # Every broker, then the default, when no broker is named.
    code, out, err = tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--describe")
    headers = [line for line in out.splitlines() if not line.startswith("  ")]
    assert headers == ["Dynamic configs for broker 0 are:", "Dynamic configs for broker 1 are:",
                       "Default configs for brokers in the cluster are:"]
    code, out, _ = tool("--bootstrap-server", bootstrap, "--broker", "0", "--describe", "--all")
    assert out.splitlines()[0] == "All configs for broker 0 are:"
    assert "  log.dirs=" in out and "  zookeeper.connect=" in out

    # Deleting: a key that is set goes; one that is not is refused before anything is sent.
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name", "0", "--alter",
                "--delete-config", "log.retention.ms") == (0, "Completed updating config for broker 0.\n", "")
    assert znode(zk, "/config/brokers/0") == {"version": 1, "config": {}}
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name", "0", "--alter",
                "--delete-config", "log.retention.ms") == (1, "", "Invalid config(s): log.retention.ms\n")

    # Topics: Kafka's lines too.
    create_topics(cluster, NewTopic("t1", 1, 1))
    assert tool("--bootstrap-server", bootstrap, "--topic", "t1", "--alter", "--add-config",
                "cleanup.policy=[compact,delete],retention.ms=1000") == (0, "Completed updating config for topic t1.\n",
                                                                         "")
    code, out, _ = tool("--bootstrap-server", bootstrap, "--entity-type", "topics", "--entity-name", "t1",
                        "--describe")
    assert out.splitlines()[0] == "Dynamic configs for topic t1 are:"
    assert "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=" \
           "compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}" in out.splitlines()


def test_kafka_configs_refusals_and_exit_codes(cluster, zk):
    bootstrap = cluster.bootstrap
    code, out, err = tool("--bootstrap-server", bootstrap, "--describe")
    assert (code, out, err) == (1, "", "At least one entity type must be specified\n")
    code, out, err = tool("--bootstrap-server", bootstrap, "--entity-type", "widgets", "--describe")
    assert (code, err) == (1, "Invalid entity type widgets, the entity type must be one of topics,clients,users,"
                              "brokers,ips,broker-loggers with the --bootstrap-server argument\n")
    code, _, err = tool("--entity-type", "brokers", "--describe")
    assert (code, err) == (1, "One of the required --bootstrap-server or --zookeeper arguments must be specified\n")
    code, _, err = tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name", "x",
                        "--describe")
    assert (code, err) == (1, "The entity name for brokers must be a valid integer broker id, but it is: x\n")
    code, _, err = tool("--bootstrap-server", bootstrap, "--entity-type", "brokers", "--alter", "--add-config",
                        "a=1")
    assert (code, err) == (1, "an entity-name or default entity must be specified with --alter of users, clients, "
                              "brokers or ips\n")
    code, _, err = tool("--bootstrap-server", bootstrap, "--broker", "0", "--alter", "--add-config", "nokeyvalue")
    assert (code, err) == (1, 'requirement failed: Invalid entity config: all configs to be added must be in the '
                              'format "key=val".\n')
    code, _, err = tool("--bootstrap-server", bootstrap, "--broker", "0", "--alter")
    assert (code, err) == (1, "At least one of --add-config, --add-config-file, or --delete-config must be specified "
                              "with --alter\n")
    code, _, err = tool()
    assert code == 1 and err.startswith("This tool helps to manipulate and describe entity config for a topic, "
                                        "client, user, broker or ip\n") and "--add-config" in err
    # A config that is not dynamic, and one out of range: the broker's refusal, and nothing written.
    argv = ["--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name", "0", "--alter",
            "--add-config", "log.dirs=/elsewhere"]
    code, out, err = tool(*argv)
    assert (code, out) == (1, "")
    assert err.splitlines()[:2] == [
        f"Error while executing config command with args '{' '.join(argv)}'",
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: Invalid "
        "config value for resource ConfigResource(type=BROKER, name='0'): Cannot update these configs dynamically: "
        "Set(log.dirs)"]
    code, _, err = tool("--bootstrap-server", bootstrap, "--broker-defaults", "--alter", "--add-config",
                        "log.segment.bytes=10")
    assert code == 1 and "Invalid value 10 for configuration log.segment.bytes: Value must be at least 14" in err
    assert zk.exists("/config/brokers/0") is None and zk.exists("/config/brokers/<default>") is None

    # The shell script: same exit code and message.
    done = subprocess.run([str(ROOT / "bin" / "kafka-configs.sh"), "--bootstrap-server", bootstrap, "--describe"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (1, "At least one entity type must be specified\n")


def test_kafka_configs_zookeeper_paths(cluster, zk, zk_chroot):
    # Throttle rates may be written through ZooKeeper while the broker runs; it applies them.
    code, out, err = tool("--zookeeper", zk_chroot, "--entity-type", "brokers", "--entity-name", "0", "--alter",
                          "--add-config", "leader.replication.throttled.rate=1000000,"
                                          "follower.replication.throttled.rate=2000000")
    assert (code, err) == (0, "")
    assert out.splitlines() == ["Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
                                "Use --bootstrap-server instead to specify a broker to connect to.",
                                "Completed updating config for entity: brokers '0'."]
    with AdminClient({"bootstrap.servers": cluster.brokers[0].bootstrap}) as admin:
        rate = wait_until(lambda: entries(admin, BROKER_0).get("leader.replication.throttled.rate"),
                          what="the broker to apply the throttle")
        assert (rate.value, rate.source, rate.is_sensitive) == ("1000000", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    code, out, err = tool("--zookeeper", zk_chroot, "--entity-type", "brokers", "--entity-name", "0", "--describe")
    values = {"leader.replication.throttled.rate": "1000000", "follower.replication.throttled.rate": "2000000"}
    stored = list(znode(zk, "/config/brokers/0")["config"])       # Properties order of the keys as read
    assert out.splitlines()[2] == "Configs for brokers '0' are " + ",".join(
        f"{k}={values[k]}" for k in java_properties_order(stored))

    # Other broker configs only while the broker (or, for the default, every broker) is down.
    code, out, err = tool("--zookeeper", zk_chroot, "--entity-type", "brokers", "--entity-name", "0", "--alter",
                          "--add-config", "log.retention.ms=1000")
    assert code == 1
    assert err == ("requirement failed: --bootstrap-server option must be specified to update broker configs "
                   "Set(log.retention.ms). when broker 0 is running. Broker configuration updates using ZooKeeper "
                   "are supported for bootstrapping before brokers are started to enable encrypted password configs "
                   "to be stored in ZooKeeper.\n")
    code, _, err = tool("--zookeeper", zk_chroot, "--entity-type", "brokers", "--entity-default", "--alter",
                        "--add-config", "log.retention.ms=1000")
    assert code == 1 and "for default cluster if any broker is running" in err
    # A broker that is not running (id 7) may be bootstrapped; a read-only key is still refused.
    assert tool("--zookeeper", zk_chroot, "--entity-type", "brokers", "--entity-name", "7", "--alter",
                "--add-config", "log.retention.ms=1000")[0] == 0
    assert znode(zk, "/config/brokers/7") == {"version": 1, "config": {"log.retention.ms": "1000"}}
    code, _, err = tool("--zookeeper", zk_chroot, "--entity-type", "brokers", "--entity-name", "7", "--alter",
                        "--add-config", "log.dirs=/x")
    assert code == 1 and "Cannot update these configs dynamically: Set(log.dirs)" in err
    assert znode(zk, "/config/brokers/7") == {"version": 1, "config": {"log.retention.ms": "1000"}}

    # Topics, users and clients.
    create_topics(cluster, NewTopic("zt", 1, 1))
    code, out, _ = tool("--zookeeper", zk_chroot, "--entity-type", "topics", "--entity-name", "zt", "--alter",
                        "--add-config", "retention.ms=5000")
    assert out.splitlines()[-1] == "Completed updating config for entity: topic 'zt'."
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        assert wait_until(lambda: entries(admin, ConfigResource(ResourceType.TOPIC, "zt"))["retention.ms"].value
                          == "5000")
    code, out, _ = tool("--zookeeper", zk_chroot, "--entity-type", "users", "--entity-name", "alice", "--alter",
                        "--add-config", "producer_byte_rate=1024")
    assert out.splitlines()[-1] == "Completed updating config for entity: user-principal 'alice'."
    code, out, _ = tool("--zookeeper", zk_chroot, "--entity-type", "clients", "--entity-default", "--alter",
                        "--add-config", "consumer_byte_rate=2048")
    assert out.splitlines()[-1] == "Completed updating config for entity: default client-id."
    code, out, _ = tool("--zookeeper", zk_chroot, "--entity-type", "users", "--describe")
    assert out.splitlines()[2:] == ["Configs for user-principal 'alice' are producer_byte_rate=1024"]
    code, _, err = tool("--zookeeper", zk_chroot, "--entity-type", "clients", "--entity-name", "c", "--alter",
                        "--add-config", "bogus=1")
    assert (code, err) == (1, "requirement failed: Unknown Dynamic Configuration: Set(bogus).\n")
    code, _, err = tool("--zookeeper", zk_chroot, "--entity-type", "users", "--entity-name", "alice", "--alter",
                        "--delete-config", "consumer_byte_rate")
    assert (code, err) == (1, "Invalid config(s): consumer_byte_rate\n")
    code, _, err = tool("--zookeeper", zk_chroot, "--entity-type", "brokers", "--describe", "--all")
    assert (code, err) == (1, "--bootstrap-server must be specified for --all\n")


def test_kafka_configs_quotas_and_scram_through_bootstrap_server(cluster):
    bootstrap = cluster.bootstrap
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob", "--alter",
                "--add-config", "producer_byte_rate=1048576,request_percentage=50") == (
        0, "Completed updating config for user bob.\n", "")
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob", "--entity-type",
                "clients", "--entity-name", "app", "--alter", "--add-config", "consumer_byte_rate=4096")[0] == 0
    code, out, err = tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob",
                          "--describe")
    assert code == 0, err
    quotas = {"producer_byte_rate": "1048576.0", "request_percentage": "50.0"}
    assert out.splitlines()[0] == "Quota configs for user-principal 'bob' are " + ", ".join(
        f"{k}={quotas[k]}" for k in java_hash_map_order(list(quotas)))
    code, out, _ = tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob",
                        "--entity-type", "clients", "--entity-name", "app", "--describe")
    assert out.splitlines() == ["Quota configs for user-principal 'bob', client-id 'app' are consumer_byte_rate=4096.0"]
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob", "--alter",
                "--add-config", "SCRAM-SHA-256=[iterations=8192,password=bob-secret]")[0] == 0
    code, out, _ = tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob",
                        "--describe")
    assert "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=8192" in out.splitlines()
    code, _, err = tool("--bootstrap-server", bootstrap, "--entity-type", "clients", "--entity-name", "app",
                        "--alter", "--add-config", "not_a_quota=1")
    assert (code, err) == (1, "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected "
                              "config names: Set(not_a_quota)\n")
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob", "--alter",
                "--delete-config", "request_percentage")[0] == 0
    code, out, _ = tool("--bootstrap-server", bootstrap, "--entity-type", "users", "--entity-name", "bob",
                        "--describe")
    assert out.splitlines()[0] == "Quota configs for user-principal 'bob' are producer_byte_rate=1048576.0"
    assert re.search(r"SCRAM-SHA-256=iterations=8192", out)


def test_log_cleaner_threads_at_start_up_and_live(zk_chroot, shm_path):
    """log.cleaner.threads from server.properties starts that many cleaner threads, which
    compact two topics; set live with kafka-configs, the cleaner restarts with the new
    count (Kafka 2.8's LogCleaner.reconfigure); more than double is refused."""
    cluster = Cluster(zk_chroot, shm_path, 1, {"log.cleaner.threads": "2", "log.cleaner.backoff.ms": "200"})
    try:
        cluster.start()
        broker = cluster.brokers[0]
        cleaner_log = broker.app_log_dir / "log-cleaner.log"

        def logged(text: str) -> bool:
            return cleaner_log.exists() and text in cleaner_log.read_text()
        wait_until(lambda: logged("[kafka-log-cleaner-thread-1]: Starting"), 20, "two cleaner threads")
        assert not logged("[kafka-log-cleaner-thread-2]")

        compacted = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}
        create_topics(cluster, NewTopic("compact-a", 1, 1, configs=compacted),
                      NewTopic("compact-b", 1, 1, configs=compacted))
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
        for round_ in range(12):      # a batch a round: the segments roll between batches
            for topic in ("compact-a", "compact-b"):
                for k in range(5):
                    producer.produce(topic, key=b"k%d" % k, value=b"v%d" % round_ * 50)
            assert producer.flush(30) == 0
        wait_until(lambda: logged("[compact-a-0] Cleaned offsets") and logged("[compact-b-0] Cleaned offsets"),
                   60, "both topics to be compacted")
        cleaned_by = set(re.findall(r"\[(kafka-log-cleaner-thread-\d)\]: \[compact-[ab]-0\] Cleaned",
                                    cleaner_log.read_text()))
        assert cleaned_by <= {"kafka-log-cleaner-thread-0", "kafka-log-cleaner-thread-1"} and cleaned_by

        bootstrap = cluster.bootstrap
        assert tool("--bootstrap-server", bootstrap, "--broker", "0", "--alter", "--add-config",
                    "log.cleaner.threads=4")[0] == 0
        wait_until(lambda: logged("[kafka-log-cleaner-thread-3]: Starting"), 20, "four cleaner threads")
        text = cleaner_log.read_text()
        assert "Shutting down the log cleaner." in text and "[kafka-log-cleaner-thread-1]: Stopped" in text
        code, _, err = tool("--bootstrap-server", bootstrap, "--broker", "0", "--alter", "--add-config",
                            "log.cleaner.threads=9")
        assert code == 1 and ("Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads "
                              "cannot be increased to more than double the current value 4 for configuration Invalid "
                              "dynamic configuration") in err
        # The I/O throttle is a dynamic key too: accepted, and described as the broker's.
        assert tool("--bootstrap-server", bootstrap, "--broker", "0", "--alter", "--add-config",
                    "log.cleaner.io.max.bytes.per.second=1048576")[0] == 0
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            wait_until(lambda: entries(admin, BROKER_0)["log.cleaner.io.max.bytes.per.second"].value == "1048576.0",
                       20, "the cleaner I/O rate to be described")
    finally:
        cluster.kill()


def test_kafka_configs_ip_quotas_and_config_files_through_bootstrap_server(cluster, zk, tmp_path):
    """--entity-type ips (one address and the IP default) and --add-config-file, through
    --bootstrap-server: AlterClientQuotas and IncrementalAlterConfigs write Kafka's znodes,
    --describe reads them back, --delete-config removes them."""
    bootstrap = cluster.bootstrap
    quota_file = tmp_path / "ip-quota.properties"
    quota_file.write_text("# one line per quota\nconnection_creation_rate=10\n")
    code, out, err = tool("--bootstrap-server", bootstrap, "--entity-type", "ips", "--entity-name", "127.0.0.1",
                          "--alter", "--add-config-file", str(quota_file))
    assert (code, out, err) == (0, "Completed updating config for ip 127.0.0.1.\n", "")
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "ips", "--entity-default", "--alter",
                "--add-config", "connection_creation_rate=50")[0] == 0
    assert json.loads(zk.get("/config/ips/127.0.0.1")[0]) == {"version": 1,
                                                               "config": {"connection_creation_rate": "10"}}
    assert json.loads(zk.get("/config/ips/<default>")[0])["config"] == {"connection_creation_rate": "50"}
    code, out, _ = tool("--bootstrap-server", bootstrap, "--entity-type", "ips", "--entity-name", "127.0.0.1",
                        "--describe")
    assert out.splitlines() == ["Quota configs for ip '127.0.0.1' are connection_creation_rate=10.0"]
    code, out, _ = tool("--bootstrap-server", bootstrap, "--entity-type", "ips", "--describe")
    assert sorted(out.splitlines()) == ["Quota configs for ip '127.0.0.1' are connection_creation_rate=10.0",
                                        "Quota configs for the default ip are connection_creation_rate=50.0"]
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "ips", "--entity-name", "127.0.0.1", "--alter",
                "--delete-config", "connection_creation_rate")[0] == 0
    code, out, _ = tool("--bootstrap-server", bootstrap, "--entity-type", "ips", "--describe")
    assert out.splitlines() == ["Quota configs for the default ip are connection_creation_rate=50.0"]
    # A topic's configs from a file too; a key that is not a topic config is refused and nothing changes.
    create_topics(cluster, NewTopic("from-file", 1, 1))
    topic_file = tmp_path / "topic.properties"
    topic_file.write_text("retention.ms=7200000\ncleanup.policy=compact\n")
    assert tool("--bootstrap-server", bootstrap, "--entity-type", "topics", "--entity-name", "from-file", "--alter",
                "--add-config-file", str(topic_file)) == (0, "Completed updating config for topic from-file.\n", "")
    assert json.loads(zk.get("/config/topics/from-file")[0])["config"] == {"retention.ms": "7200000",
                                                                          "cleanup.policy": "compact"}
    topic_file.write_text("retention.ms=1\nno.such.config=1\n")
    code, _, err = tool("--bootstrap-server", bootstrap, "--entity-type", "topics", "--entity-name", "from-file",
                        "--alter", "--add-config-file", str(topic_file))
    assert code == 1 and "no.such.config" in err, err
    assert json.loads(zk.get("/config/topics/from-file")[0])["config"]["retention.ms"] == "7200000"
