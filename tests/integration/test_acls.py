"""ACLs (issue 16): AclAuthorizer on three real brokers, judged by confluent-kafka, kafka-python
and kafka-acls.sh.

The brokers talk to each other over SASL_PLAINTEXT as User:admin, a super user (an RF=3
topic reaches its full ISR and a denial lands in kafka-authorizer.log); clients
log in as alice and bob. A client without ACLs is refused every API with the
*_AUTHORIZATION_FAILED codes and changes nothing (records, znodes), every request of the
unit-level authorization matrix included (the inter-broker ones too, sent as alice over
SASL to the controller); ACLs added with
kafka-acls --producer/--consumer let confluent-kafka and kafka-python produce and
consume; prefixed, wildcard and deny ACLs written straight to ZooKeeper with
--authorizer-properties reach every broker through the change notifications. kcat,
kafka-python and aiokafka, logged in as carol (who may use one group and see one topic,
no more), are refused that topic's records with TOPIC_AUTHORIZATION_FAILED in each one's own words.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from kazoo.client import KazooClient

from kafkalike.lab.cluster import BrokerProcess
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import REPO_ROOT, scratch_dir
from tests.waiting import wait_until

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret" user_carol="carol-secret";')
TOOL = str(REPO_ROOT / "bin" / "kafka-acls.sh")


@pytest.fixture(scope="module")
def secured(module_zk_chroot):
    base = scratch_dir("acls")
    ports = free_ports(6)
    brokers = []
    for i in range(3):
        plain, sasl = ports[2 * i], ports[2 * i + 1]
        brokers.append(BrokerProcess(i, module_zk_chroot, base, plain, {
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:admin",
            "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "2"}))
    try:
        for b in brokers:
            b.start()
        for b in brokers:
            b.wait_ready(60)
        sasl_ports = [ports[1], ports[3], ports[5]]
        config = base / "admin.properties"
        config.write_text('security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config='
                          + JAAS.split(" user_")[0] + ";\n")
        yield {"zk": module_zk_chroot, "sasl": sasl_ports, "brokers": brokers, "admin_config": str(config)}
    finally:
        for b in brokers:
            b.kill()
        shutil.rmtree(base, ignore_errors=True)


def _conf(env, user: str, port_index: int | None = None) -> dict:
    ports = env["sasl"] if port_index is None else [env["sasl"][port_index]]
    return {"bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in ports), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"}


def _produce(conf: dict, topic: str, n: int = 3):
    """The delivery errors' codes (None for each delivered record)."""
    from confluent_kafka import Producer
    producer = Producer({**conf, "message.timeout.ms": 8000, "acks": "all"})
    outcome = []
    for i in range(n):
        producer.produce(topic, f"v{i}".encode(), on_delivery=lambda err, _m: outcome.append(err and err.code()))
    producer.flush(15)
    return outcome


def _acls(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)


def _acl_changes_seen(env) -> list[int]:
    return [b.server_log.read_text().count("Processing Acl change notification") if b.server_log.exists() else 0
            for b in env["brokers"]]


def _wait_acl_changes(env, before: list[int], count: int) -> None:
    """ACL changes reach the brokers through ZooKeeper change notifications, each on its own
    time; every broker logs each one it applies."""
    wait_until(lambda: all(now >= then + count for now, then in zip(_acl_changes_seen(env), before)), 30,
               f"{count} ACL change notifications applied on every broker")


def _snapshot(zk_connect: str) -> dict:
    host, _, chroot = zk_connect.partition("/")
    zk = KazooClient(hosts=host)
    zk.start(15)
    out = {}
    try:
        def walk(path: str) -> None:
            data, stat = zk.get(path)
            out[path] = (data, stat.version)
            for child in zk.get_children(path):
                walk(f"{path.rstrip('/')}/{child}")
        for top in ("brokers/topics", "config", "admin", "kafka-acl", "kafka-acl-extended", "kafka-acl-changes"):
            if zk.exists(f"/{chroot}/{top}"):
                walk(f"/{chroot}/{top}")
    finally:
        zk.stop()
        zk.close()
    return out


def _log_ends(secured) -> dict[tuple[int, str], int]:
    """secret's partitions' log start and end offsets, read as admin (ListOffsets: no group,
    so no __consumer_offsets is made by looking)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    admin = AdminClient(_conf(secured, "admin"))
    out = {}
    for name, spec in (("start", OffsetSpec.earliest()), ("end", OffsetSpec.latest())):
        for tp, future in admin.list_offsets({TopicPartition("secret", p): spec for p in (0, 1)}).items():
            out[(tp.partition, name)] = future.result(15).offset
    return out


def _every_api_from_alice(secured) -> None:
    """Every request of the unit-level matrix (tests/unit/test_authorization_matrix.py), at its
    highest version, from alice logged in over SASL to the controller: the same codes as there,
    the inter-broker requests (LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown,
    AlterIsr, WriteTxnMarkers, follower Fetch) included."""
    from kafkalike.client.connection import BrokerConnection
    from kafkalike.client.security import ClientSecurity
    from kafkalike.client.admin import AdminClient as OurAdmin
    from tests.unit.test_authorization_matrix import CASES, NO_AUTHORIZATION, Sent, _codes
    admin_conf = {"bootstrap.servers": f"127.0.0.1:{secured['sasl'][0]}", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"}
    from kafkalike.protocol.messages.metadata import MetadataRequest
    with OurAdmin(admin_conf) as ours:
        controller = ours.describe_cluster().controller_id
    admin_security = ClientSecurity.from_config(admin_conf)
    with BrokerConnection("127.0.0.1", secured["sasl"][0], timeout=15, security=admin_security).connect() as conn:
        topic_id = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="secret")],
                                             allow_auto_topic_creation=False), version=10).topics[0].topic_id
    security = ClientSecurity.from_config({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                           "sasl.username": "alice", "sasl.password": "alice-secret"})
    conn = BrokerConnection("127.0.0.1", secured["sasl"][controller], timeout=15, security=security).connect()
    wrong = {}
    try:
        for case in CASES:
            if case.api_key in NO_AUTHORIZATION:
                continue
            version = case.all_versions()[-1]
            request = case.request(version)
            if case.name == "delete-topics-by-id":
                request.topics[0].topic_id = topic_id      # the cluster's own id of secret
            response = conn.send(request, version=version)
            denied = case.denied(version, Sent(0, "")) if case.denied.__code__.co_argcount == 2 \
                else case.denied(version)
            if _codes(response) != _codes(denied):
                wrong[case.name] = (sorted(_codes(response)), sorted(_codes(denied)))
    finally:
        conn.close()
    assert not wrong, wrong


def test_a_client_without_acls_gets_only_authorization_errors(secured):
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ConfigResource
    from confluent_kafka.admin import NewTopic, ResourcePatternType, ResourceType

    from kafkalike.client.admin import AdminClient as OurAdmin
    from kafkalike.client.admin import KafkaAdminError
    admin = AdminClient(_conf(secured, "admin"))
    admin.create_topics([NewTopic("secret", 2, 3)])["secret"].result(30)
    deadline = time.monotonic() + 30
    while True:      # replication runs as User:admin, CLUSTER_ACTION by super.users
        parts = admin.list_topics("secret", timeout=10).topics["secret"].partitions
        if parts and all(sorted(p.isrs) == [0, 1, 2] for p in parts.values()):
            break
        assert time.monotonic() < deadline, {p.id: p.isrs for p in parts.values()}
        time.sleep(0.3)
    assert _produce(_conf(secured, "admin"), "secret") == [None, None, None]
    before = _snapshot(secured["zk"])

    alice = _conf(secured, "alice")
    assert set(_produce(alice, "secret", 2)) == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    consumer = Consumer({**alice, "group.id": "g1", "auto.offset.reset": "earliest"})
    consumer.subscribe(["secret"])
    errors = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not errors:
        msg = consumer.poll(1)
        if msg is not None and msg.error():
            errors.add(msg.error().code())
        assert msg is None or msg.error(), "alice read a record"
    consumer.close()
    assert errors and errors <= {KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED}
    their_admin = AdminClient(alice)
    assert "secret" not in their_admin.list_topics(timeout=10).topics

    def failure(future) -> int:
        with pytest.raises(Exception) as caught:
            future.result(15)
        return caught.value.args[0].code()
    assert failure(their_admin.create_topics([NewTopic("new-one", 1, 1)])["new-one"]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert failure(their_admin.delete_topics(["secret"])["secret"]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    topic = ConfigResource(ConfigResource.Type.TOPIC, "secret")
    assert failure(their_admin.describe_configs([topic])[topic]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    altered = ConfigResource(ConfigResource.Type.TOPIC, "secret", set_config={"retention.ms": "1"})
    assert failure(their_admin.alter_configs([altered])[altered]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    binding = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.ALL, AclPermissionType.ALLOW)
    assert failure(their_admin.create_acls([binding])[binding]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    ours = OurAdmin({"bootstrap.servers": alice["bootstrap.servers"], "security.protocol": "SASL_PLAINTEXT",
                     "sasl.mechanism": "PLAIN", "sasl.jaas.config":
                     'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
                     'password="alice-secret";', "default.api.timeout.ms": "8000"})
    try:
        # Kafka's authorizeClusterOperation refusal names the request: "Request Request(processor=...,
        # session=Session(User:alice,/127.0.0.1), ...) is not authorized."
        for call, code in ((lambda: ours.alter_partition_reassignments({("secret", 0): [1, 0]}),
                            "session=Session(User:alice,/127.0.0.1), listenerName=ListenerName(SASL_PLAINTEXT)"),
                           (lambda: ours.alter_group_offsets("g1", {("secret", 0): 0}), "Group authorization failed.")):
            try:
                outcome = call()
            except KafkaAdminError as exc:
                outcome = exc
            assert code in repr(outcome), outcome
    finally:
        ours.close()
    ends = _log_ends(secured)
    _every_api_from_alice(secured)
    assert _log_ends(secured) == ends                   # nor the logs
    assert _snapshot(secured["zk"]) == before          # nothing alice did reached ZooKeeper
    audit = "".join((b.server_log.parent / "kafka-authorizer.log").read_text() for b in secured["brokers"])
    assert ("Principal = User:alice is Denied Operation = Describe from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:secret for request = Metadata with resourceRefCount = 1") in audit


def test_kafka_acls_producer_and_consumer_roles_let_clients_in(secured):
    from kafka import KafkaConsumer
    add = _acls("--bootstrap-server", f"127.0.0.1:{secured['sasl'][0]}", "--command-config", secured["admin_config"],
                "--add", "--allow-principal", "User:alice", "--producer", "--topic", "secret")
    assert add.returncode == 0, add.stdout + add.stderr
    assert add.stdout.startswith(
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=secret, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=CREATE, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW) \n\n"
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=secret, patternType=LITERAL)`: \n"), \
        add.stdout
    assert _produce(_conf(secured, "alice"), "secret") == [None, None, None]
    add = _acls("--bootstrap-server", f"127.0.0.1:{secured['sasl'][1]}", "--command-config", secured["admin_config"],
                "--add", "--allow-principal", "User:alice", "--consumer", "--topic", "secret", "--group", "g2")
    assert add.returncode == 0, add.stdout + add.stderr
    consumer = KafkaConsumer("secret", bootstrap_servers=[f"127.0.0.1:{p}" for p in secured["sasl"]],
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret", group_id="g2", auto_offset_reset="earliest",
                             consumer_timeout_ms=10000)
    values = [m.value for m in consumer]
    consumer.close()
    assert sorted(values) == sorted([b"v0", b"v1", b"v2"] * 2)
    # KIP-430: what alice may do, from the ACLs
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation, AdminClient
    theirs = AdminClient(_conf(secured, "alice"))
    described = theirs.describe_topics(TopicCollection(["secret"]), include_authorized_operations=True)
    assert set(described["secret"].result(15).authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE}
    assert not theirs.describe_cluster(include_authorized_operations=True).result(15).authorized_operations
    group = theirs.describe_consumer_groups(["g2"], include_authorized_operations=True)["g2"].result(15)
    assert set(group.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}
    # The znode is Kafka's JSON.
    zk = KazooClient(hosts=secured["zk"])
    zk.start(15)
    try:
        stored = json.loads(zk.get("/kafka-acl/Topic/secret")[0])
        assert stored["version"] == 1
        assert {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"} \
            in stored["acls"]
        assert zk.get_children("/kafka-acl-changes")
    finally:
        zk.stop()
        zk.close()
    listed = _acls("--bootstrap-server", f"127.0.0.1:{secured['sasl'][0]}", "--command-config",
                   secured["admin_config"], "--list", "--topic", "secret")
    assert "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout


def test_prefixed_wildcard_and_deny_acls_reach_every_broker_through_zookeeper(secured):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(_conf(secured, "admin"))
    for f in admin.create_topics([NewTopic(t, 1, 3) for t in ("pre-a", "pre-denied", "other")]).values():
        f.result(30)
    zk = ["--authorizer-properties", f"zookeeper.connect={secured['zk']}"]
    before = _acl_changes_seen(secured)
    for args in (["--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "pre-",
                  "--resource-pattern-type", "prefixed"],
                 ["--add", "--deny-principal", "User:bob", "--operation", "Write", "--topic", "pre-denied"],
                 ["--add", "--allow-principal", "User:*", "--operation", "Describe", "--topic", "*"]):
        done = _acls(*zk, *args)
        assert done.returncode == 0, done.stdout + done.stderr
    _wait_acl_changes(secured, before, 3)
    for index in (0, 1, 2):
        bob = _conf(secured, "bob", index)
        assert _produce(bob, "pre-a", 1) == [None]
        assert _produce(bob, "pre-denied", 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
        assert _produce(bob, "other", 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
        assert {"pre-a", "other", "secret"} <= set(AdminClient(bob).list_topics(timeout=10).topics)
    # auto-creation needs CREATE (DESCRIBE is not enough): refused, and nothing is created
    assert _produce(_conf(secured, "bob"), "auto-made", 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert "auto-made" not in admin.list_topics(timeout=10).topics
    before = _acl_changes_seen(secured)
    removed = _acls(*zk, "--remove", "--force", "--topic", "pre-", "--resource-pattern-type", "prefixed")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    _wait_acl_changes(secured, before, 1)
    assert _produce(_conf(secured, "bob", 2), "pre-a", 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_transactional_and_idempotent_producers_need_their_acls(secured):
    from confluent_kafka import KafkaError, KafkaException, Producer
    alice = _conf(secured, "alice")
    producer = Producer({**alice, "transactional.id": "tx-1"})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(15)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # bob has no WRITE anywhere now: InitProducerId without a transactional id is refused (KIP-679)
    with pytest.raises(KafkaException) as fatal:
        _produce({**_conf(secured, "bob"), "enable.idempotence": True}, "other", 1)
    assert fatal.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # alice may WRITE secret, which is enough for an idempotent producer without IDEMPOTENT_WRITE
    assert _produce({**alice, "enable.idempotence": True}, "secret", 1) == [None]
    done = _acls("--bootstrap-server", f"127.0.0.1:{secured['sasl'][0]}", "--command-config",
                 secured["admin_config"], "--add", "--allow-principal", "User:alice", "--producer", "--topic", "secret",
                 "--transactional-id", "tx-1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx-1, patternType=LITERAL)" in done.stdout
    producer = Producer({**alice, "transactional.id": "tx-1"})
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce("secret", b"in-a-transaction")
    producer.commit_transaction(15)


def test_the_admin_client_creates_describes_and_deletes_acls(secured):
    """kafkalike's AdminClient has Java's createAcls/describeAcls/deleteAcls: what it
    creates is described back, deleting returns the removed bindings, and a client
    without the Alter permission is refused with CLUSTER_AUTHORIZATION_FAILED."""
    from kafkalike.client.admin import AdminClient, KafkaAdminError
    from kafkalike.common.acls import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation,
                                       AclPermissionType, AclResourceType, PatternType, ResourcePattern)
    from kafkalike.protocol.errors import ErrorCode

    def config(user: str) -> dict:
        conf = _conf(secured, user)
        return {"bootstrap.servers": conf["bootstrap.servers"], "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.jaas.config": "org.apache.kafka.common.security.plain."
                f'PlainLoginModule required username="{user}" password="{user}-secret";'}

    pattern = ResourcePattern(AclResourceType.TOPIC, "admin-api-acls", PatternType.LITERAL)
    read = AclBinding(pattern, AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))
    write = AclBinding(pattern, AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW))
    on_topic = AclBindingFilter(AclResourceType.TOPIC, "admin-api-acls", PatternType.LITERAL, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
    with AdminClient(config("admin")) as admin:
        admin.create_acls([read, write])
        deadline = time.monotonic() + 20
        while sorted(map(str, admin.describe_acls(on_topic))) != sorted(map(str, [read, write])):
            assert time.monotonic() < deadline, admin.describe_acls(on_topic)
            time.sleep(0.2)
        only_write = AclBindingFilter(AclResourceType.TOPIC, "admin-api-acls", PatternType.LITERAL, "User:alice",
                                      "*", AclOperation.WRITE, AclPermissionType.ALLOW)
        assert [list(map(str, removed)) for removed in admin.delete_acls([only_write])] == [[str(write)]]
        assert list(map(str, admin.describe_acls(on_topic))) == [str(read)]
    with AdminClient(config("alice")) as alice:
        with pytest.raises(KafkaAdminError) as refused:
            alice.create_acls([write])
        assert refused.value.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_kcat_kafka_python_and_aiokafka_without_a_topic_acl_are_refused_it(secured):
    """carol may read the group carol-g and see (Describe) the topic carol-denied, nothing
    more. Producing to it and consuming it is refused with TOPIC_AUTHORIZATION_FAILED,
    which each client reports as its own error, and the topic keeps only what admin wrote."""
    import asyncio

    import aiokafka
    import aiokafka.errors
    import kafka
    import kafka.errors
    from confluent_kafka.admin import AdminClient, NewTopic
    topic = "carol-denied"
    admin = AdminClient(_conf(secured, "admin"))
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    assert _produce(_conf(secured, "admin"), topic, 2) == [None, None]
    zk = ["--authorizer-properties", f"zookeeper.connect={secured['zk']}", "--add", "--allow-principal", "User:carol"]
    before = _acl_changes_seen(secured)
    for grant in (["--operation", "Read", "--group", "carol-g"], ["--operation", "Describe", "--topic", topic]):
        granted = _acls(*zk, *grant)
        assert granted.returncode == 0, granted.stdout + granted.stderr
    _wait_acl_changes(secured, before, 2)
    carol = _conf(secured, "carol")
    bootstrap = carol["bootstrap.servers"]

    kcat = ["kcat", "-b", bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
            "-X", "sasl.username=carol", "-X", "sasl.password=carol-secret"]
    produced = subprocess.run(kcat + ["-P", "-t", topic], input=b"from-kcat\n", capture_output=True, timeout=60)
    assert b"Topic authorization failed" in produced.stderr, produced.stderr[-2000:]
    consumed = subprocess.run(kcat + ["-C", "-t", topic, "-o", "beginning", "-e"], capture_output=True, timeout=60)
    assert b"Topic authorization failed" in consumed.stderr and b"v0" not in consumed.stdout, consumed.stderr[-2000:]

    kp = {"bootstrap_servers": bootstrap.split(","), "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
          "sasl_plain_username": "carol", "sasl_plain_password": "carol-secret"}
    # Not idempotent: InitProducerId would be refused first (CLUSTER_AUTHORIZATION_FAILED,
    # carol may write nowhere), and the topic's own refusal is what this test is about.
    producer = kafka.KafkaProducer(max_block_ms=10000, enable_idempotence=False, **kp)
    with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
        producer.send(topic, b"from-kafka-python").get(timeout=15)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, group_id="carol-g", auto_offset_reset="earliest", **kp)
    with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
        consumer.poll(timeout_ms=10000)
    consumer.close()

    aio = {"bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
           "sasl_plain_username": "carol", "sasl_plain_password": "carol-secret"}

    async def refused(client, work) -> type | None:
        try:
            await client.start()
            await work(client)
        except aiokafka.errors.KafkaError as error:
            return type(error)
        finally:
            await client.stop()
        return None

    async def aiokafka_refusals() -> list[type | None]:
        producer = aiokafka.AIOKafkaProducer(request_timeout_ms=10000, enable_idempotence=False, **aio)
        consumer = aiokafka.AIOKafkaConsumer(topic, group_id="carol-g", auto_offset_reset="earliest", **aio)
        return [await refused(producer, lambda p: p.send_and_wait(topic, b"from-aiokafka")),
                await refused(consumer, lambda c: asyncio.wait_for(c.getmany(timeout_ms=10000), 20))]
    assert asyncio.run(aiokafka_refusals()) == [aiokafka.errors.TopicAuthorizationFailedError] * 2

    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    end = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()})[TopicPartition(topic, 0)].result(15)
    assert end.offset == 2              # nothing carol sent was written
