"""kafka-python's and confluent-kafka's admin clients against the rest of the 2.8 API set.

What an operator would try: ACL commands on a broker without an authorizer, the log
dirs of a broker and the partitions in them, SCRAM users and client quotas that land
in ZooKeeper where kafka-configs.sh would look, features and producers. And the
version kafka-python infers from the APIs advertised.
"""
from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import admin as ck_admin
from kafka import KafkaProducer, TopicPartition
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                         KafkaAdminClient, PartitionProducerState, ResourcePattern, ResourcePatternFilter,
                         ResourceType, UserScramCredentialUpsertion)
from kafka.errors import LogDirNotFoundError, NoError, SecurityDisabledError
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kazoo.client import KazooClient

from tests.waiting import wait_until

pytestmark = pytest.mark.interop

# Every zkBroker API of Kafka 2.8 that is not a group, reassignment or producer-id one.
SERVED_HERE = [17, 24, 25, 26, 27, 28, 29, 30, 31, 34, 35, 36, 38, 39, 40, 41, 48, 49, 50, 51, 57, 61]
KAFKA_28_MAX = {17: 1, 24: 3, 25: 3, 26: 3, 27: 1, 28: 3, 29: 2, 30: 2, 31: 2, 34: 2, 35: 2, 36: 2, 38: 2,
                39: 2, 40: 2, 41: 2, 48: 1, 49: 1, 50: 0, 51: 0, 57: 0, 61: 0}


@pytest.fixture(scope="module")
def admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def ck(broker):
    return ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture(scope="module")
def zk(module_zk_chroot, broker):
    client = KazooClient(hosts=module_zk_chroot)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def config_znode(zk, path: str) -> dict:
    data, _ = zk.get(path)
    return json.loads(data)["config"]


def change_notifications(zk) -> list[str]:
    return [json.loads(zk.get(f"/config/changes/{c}")[0])["entity_path"]
            for c in sorted(zk.get_children("/config/changes"))]


# -- what kafka-python makes of the advertised set -------------------------------------


def test_kafka_python_infers_a_28_broker_from_the_advertised_apis(broker, admin):
    # kafka-python 3 infers the release from the highest versions advertised (Produce v9: 2.8).
    assert admin.get_broker_version_data(broker.broker_id).broker_version == (2, 8)
    advertised = {int(k): v for k, v in admin.api_versions().items()}
    assert {k: advertised.get(k) for k in SERVED_HERE} == {k: (0, hi) for k, hi in KAFKA_28_MAX.items()}


# -- ACLs without an authorizer --------------------------------------------------------


def test_kafka_python_acl_calls_say_security_is_disabled(admin):
    acl = ACL(principal="User:alice", host="*", operation=ACLOperation.READ,
              permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(ResourceType.TOPIC, "orders"))
    assert admin.create_acls([acl]) == {"succeeded": [], "failed": [SecurityDisabledError]}
    everything = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                           permission_type=ACLPermissionType.ANY,
                           resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                                  ACLResourcePatternType.ANY))
    with pytest.raises(SecurityDisabledError, match="No Authorizer is configured on the broker"):
        admin.describe_acls(everything)
    [(_, matched, error)] = admin.delete_acls([everything])
    assert (matched, error) == ([], SecurityDisabledError)


def test_confluent_kafka_acl_calls_say_security_is_disabled(ck):
    binding = ck_admin.AclBinding(ck_admin.ResourceType.TOPIC, "orders", ck_admin.ResourcePatternType.LITERAL,
                                  "User:alice", "*", ck_admin.AclOperation.READ,
                                  ck_admin.AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as created:
        ck.create_acls([binding], request_timeout=15)[binding].result(timeout=30)
    assert created.value.args[0].code() == KafkaError.SECURITY_DISABLED
    everything = ck_admin.AclBindingFilter(ck_admin.ResourceType.ANY, None, ck_admin.ResourcePatternType.ANY,
                                           None, None, ck_admin.AclOperation.ANY, ck_admin.AclPermissionType.ANY)
    with pytest.raises(KafkaException) as deleted:
        ck.delete_acls([everything], request_timeout=15)[everything].result(timeout=30)
    assert deleted.value.args[0].code() == KafkaError.SECURITY_DISABLED
    assert deleted.value.args[0].str() == "No Authorizer is configured on the broker."
    # librdkafka reads DescribeAcls' top-level error and drops it (rd_kafka_DescribeAclsResponse_parse),
    # so against any authorizer-less Kafka its describe finds no ACLs rather than failing.
    assert ck.describe_acls(everything, request_timeout=15).result(timeout=30) == []


# -- log dirs --------------------------------------------------------------------------


def test_describe_log_dirs_shows_our_dir_and_partition_sizes(broker, admin, topic_name):
    admin.create_topics({topic_name: {"num_partitions": 2, "replication_factor": 1}})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
    for i in range(20):
        producer.send(topic_name, value=b"v%d" % i, partition=0)
    producer.flush(30)
    producer.close()
    segment = broker.log_dir / f"{topic_name}-0" / "00000000000000000000.log"
    wait_until(lambda: segment.stat().st_size > 0, timeout=30)

    [answer] = admin.describe_log_dirs({topic_name: [0, 1]})
    assert answer["broker"] == broker.broker_id
    [log_dir] = answer["log_dirs"]
    assert (log_dir["error_code"], log_dir["log_dir"]) == (0, str(broker.log_dir))
    [topic] = [t for t in log_dir["topics"] if t["name"] == topic_name]
    sizes = {p["partition_index"]: (p["partition_size"], p["offset_lag"], p["is_future_key"])
             for p in topic["partitions"]}
    assert sizes == {0: (segment.stat().st_size, 0, False), 1: (0, 0, False)}


def test_alter_replica_log_dirs_keeps_replicas_where_they_are(broker, admin, topic_name):
    admin.create_topics({topic_name: {"num_partitions": 1, "replication_factor": 1}})
    here = (topic_name, 0, broker.broker_id)
    assert admin.alter_replica_log_dirs({here: str(broker.log_dir)}) == {here: NoError}
    result = admin.alter_replica_log_dirs({here: "/no/such/log/dir"})
    assert list(result.values()) == [LogDirNotFoundError]
    assert (broker.log_dir / f"{topic_name}-0").is_dir()


# -- SCRAM credentials -----------------------------------------------------------------


def test_scram_users_land_in_zookeeper_and_both_clients_read_them(admin, ck, zk):
    upsert = UserScramCredentialUpsertion("alice", "SCRAM-SHA-256", "alice-secret", iterations=8192)
    assert admin.alter_user_scram_credentials([upsert]) == {"alice": None}
    stored = config_znode(zk, "/config/users/alice")["SCRAM-SHA-256"]
    assert dict(kv.split("=", 1) for kv in stored.split(","))["iterations"] == "8192"
    assert "users/alice" in change_notifications(zk)

    # librdkafka salts and hashes on its side; the broker only derives the keys.
    bob = ck_admin.UserScramCredentialUpsertion(
        "bob", ck_admin.ScramCredentialInfo(ck_admin.ScramMechanism.SCRAM_SHA_512, 4096), b"bob-secret")
    ck.alter_user_scram_credentials([bob], request_timeout=15)["bob"].result(timeout=30)

    described = admin.describe_user_scram_credentials(["alice", "bob"])
    assert {u: [(int(c["mechanism"]), c["iterations"]) for c in d["credential_infos"]]
            for u, d in described.items()} == {"alice": [(1, 8192)], "bob": [(2, 4096)]}
    futures = ck.describe_user_scram_credentials(["alice"], request_timeout=15)
    info = futures["alice"].result(timeout=30).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in info] == [(ck_admin.ScramMechanism.SCRAM_SHA_256, 8192)]
    with pytest.raises(KafkaException) as missing:
        ck.describe_user_scram_credentials(["nobody"], request_timeout=15)["nobody"].result(timeout=30)
    assert missing.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


# -- client quotas ---------------------------------------------------------------------


def test_client_quotas_round_trip_through_zookeeper(admin, zk):
    E = AlterClientQuotasRequest.EntryData
    alter = AlterClientQuotasRequest(entries=[
        E(entity=[E.EntityData(entity_type="client-id", entity_name="reporting")],
          ops=[E.OpData(key="producer_byte_rate", value=1048576.0, remove=False),
               E.OpData(key="request_percentage", value=25.0, remove=False)])], validate_only=False)
    response = admin._manager.run(admin._manager.send, alter)
    assert [(e.error_code, e.error_message) for e in response.entries] == [(0, None)]
    assert config_znode(zk, "/config/clients/reporting") == {"producer_byte_rate": "1048576",
                                                            "request_percentage": "25.0"}
    assert "clients/reporting" in change_notifications(zk)

    C = DescribeClientQuotasRequest.ComponentData
    describe = DescribeClientQuotasRequest(components=[C(entity_type="client-id", match_type=0,
                                                         match="reporting")], strict=True)
    response = admin._manager.run(admin._manager.send, describe)
    assert response.error_code == 0
    assert [([(e.entity_type, e.entity_name) for e in entry.entity], {v.key: v.value for v in entry.values})
            for entry in response.entries] == [
        ([("client-id", "reporting")], {"producer_byte_rate": 1048576.0, "request_percentage": 25.0})]


# -- features and producers ------------------------------------------------------------


def test_update_features_refuses_a_feature_28_does_not_have(admin):
    result = admin.update_features({"made.up.feature": 1})
    assert list(result) == ["made.up.feature"]
    assert "feature is not supported" in result["made.up.feature"]


def test_describe_producers_reports_idempotent_producers(admin, broker, topic_name):
    admin.create_topics({topic_name: {"num_partitions": 1, "replication_factor": 1}})
    tp = TopicPartition(topic_name, 0)
    assert admin.describe_producers([tp]) == {tp: PartitionProducerState(active_producers=[])}
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 0})
    for i in range(7):
        producer.produce(topic_name, value=b"%d" % i, partition=0, timestamp=1_700_000_000_000 + i)
        producer.flush(10)  # one batch per record: sequences 0..6
    [state] = admin.describe_producers([tp])[tp].active_producers
    assert state.producer_id >= 0 and state.producer_epoch == 0
    assert (state.last_sequence, state.last_timestamp) == (6, 1_700_000_000_006)
    assert (state.coordinator_epoch, state.current_transaction_start_offset) == (-1, -1)


