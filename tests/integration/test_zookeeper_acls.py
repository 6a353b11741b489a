"""zookeeper.set.acl on a real ZooKeeper that authenticates with SASL (DIGEST-MD5): the
broker logs in with the Client section of the JAAS file KAFKA_OPTS names, its znodes are
its own (world-readable, except the sensitive ones; an ACL added through the broker and its
change notification too), and anybody else can read but not
change the cluster's state; without a login it refuses to start, as Kafka 2.8 does."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.lab.cluster import BrokerStartError, Cluster
from kafkalike.lab.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

SERVER_JAAS = """Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_kafka="kafka-secret";
};
"""


def client_jaas(path: Path, password: str) -> Path:
    path.write_text(f"""// the broker's login to ZooKeeper
Client {{
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="{password}";
}};
""")
    return path


@pytest.fixture(scope="module")
def sasl_zookeeper() -> Iterator[ZooKeeperServer]:
    base = Path(tempfile.mkdtemp(prefix="kl-zk-sasl-", dir="/dev/shm"))
    (base / "jaas.conf").write_text(SERVER_JAAS)
    server = ZooKeeperServer(base / "zk", force_sync=False, jvm_options=[
        f"-Djava.security.auth.login.config={base / 'jaas.conf'}",
        "-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"])
    try:
        server.start()
        server.wait_ready(60)
        yield server
    finally:
        server.remove()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def cluster_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="kl-zk-acl-", dir="/dev/shm"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def acl_ids(zk: KazooClient, path: str) -> set[tuple[str, str, int]]:
    acls, _ = zk.get_acls(path)
    return {(a.id.scheme, a.id.id, a.perms) for a in acls}


def test_secure_acls_keep_the_cluster_state_the_brokers_own(sasl_zookeeper, cluster_dir, monkeypatch):
    monkeypatch.setenv("KAFKA_OPTS", f"-Djava.security.auth.login.config={client_jaas(cluster_dir / 'c.conf', 'kafka-secret')}")
    connect = sasl_zookeeper.connect_string + "/secure"
    # With the ACL authorizer too, so that its znodes are created under the secure ACLs as well
    # (the clients here talk PLAINTEXT, as User:ANONYMOUS, made a super user).
    cluster = Cluster(connect, cluster_dir / "brokers", 1, {
        "zookeeper.set.acl": "true", "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS"})
    stranger = KazooClient(hosts=connect)
    try:
        cluster.start()
        with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_topics([NewTopic("guarded", 1, 1)])
        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        producer.produce("guarded", value=b"still works")
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "acl-check",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["guarded"])
        message = None
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        consumer.close()
        assert message is not None and message.value() == b"still works"

        stranger.start(15)
        all_perms, read = 31, 1
        assert acl_ids(stranger, "/brokers/topics/guarded") == {("sasl", "kafka", all_perms),
                                                                 ("world", "anyone", read)}
        assert acl_ids(stranger, "/brokers/ids/0") == {("sasl", "kafka", all_perms), ("world", "anyone", read)}
        for path in ("/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended", "/kafka-acl-extended-changes"):
            assert acl_ids(stranger, path) == {("sasl", "kafka", all_perms), ("world", "anyone", read)}, path
        # An ACL written through the broker: its znode and its change notification are secure too.
        added = subprocess.run([str(REPO / "bin" / "kafka-acls.sh"), "--bootstrap-server", cluster.bootstrap, "--add",
                                "--allow-principal", "User:alice", "--operation", "Read", "--topic", "guarded"],
                               capture_output=True, text=True, timeout=60, env={"PYTHON": sys.executable,
                                                                                "PATH": "/usr/bin:/bin"})
        assert added.returncode == 0, added.stderr
        change = max(stranger.get_children("/kafka-acl-changes"))      # acl_changes_<sequence>: the newest
        for path in ("/kafka-acl/Topic/guarded", f"/kafka-acl-changes/{change}"):
            assert acl_ids(stranger, path) == {("sasl", "kafka", all_perms), ("world", "anyone", read)}, path
        with pytest.raises(NoAuthError):
            stranger.set("/kafka-acl/Topic/guarded", b'{"version":1,"acls":[]}')
        owner = KazooClient(hosts=connect, sasl_options={"mechanism": "DIGEST-MD5", "username": "kafka",
                                                         "password": "kafka-secret"})
        owner.start(15)
        try:
            assert acl_ids(owner, "/config/users") == {("sasl", "kafka", all_perms)}    # sensitive: no world READ
        finally:
            owner.stop()
            owner.close()
        assert stranger.get("/brokers/topics/guarded")[0]                              # anyone reads the state
        with pytest.raises(NoAuthError):
            stranger.set("/brokers/topics/guarded", b"{}")
        with pytest.raises(NoAuthError):
            stranger.create("/brokers/topics/intruder", b"{}")
        with pytest.raises(NoAuthError):
            stranger.delete("/controller")
        with pytest.raises(NoAuthError):
            stranger.get_children("/config/users")
        with pytest.raises(NoAuthError):
            stranger.get_acls("/config/users")
        # The tools' --zookeeper paths log in with the same JAAS file and create secure znodes.
        done = subprocess.run([str(REPO / "bin" / "kafka-topics.sh"), "--zookeeper", connect, "--create",
                               "--topic", "by-tool", "--partitions", "1", "--replication-factor", "1"],
                              capture_output=True, text=True, timeout=60,
                              env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin",
                                   "KAFKA_OPTS": os.environ["KAFKA_OPTS"]})
        assert done.returncode == 0, done.stderr
        assert acl_ids(stranger, "/brokers/topics/by-tool") == {("sasl", "kafka", all_perms),
                                                                 ("world", "anyone", read)}
        # kafka-preferred-replica-election --zookeeper too (Kafka's ZkCommand is secure when
        # JaasUtils.isZkSaslEnabled): without the login it may not write the election znode.
        election = [str(REPO / "bin" / "kafka-preferred-replica-election.sh"), "--zookeeper", connect]
        env = {"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"}
        refused = subprocess.run(election, capture_output=True, text=True, timeout=60, env=env)
        assert refused.returncode == 1
        assert refused.stderr == (
            'Exception in thread "main" kafka.common.AdminCommandFailedException: Admin command failed\n'
            "Caused by: kafka.admin.AdminOperationException: org.apache.zookeeper.KeeperException$NoAuthException: "
            "KeeperErrorCode = NoAuth for /admin/preferred_replica_election\n"), refused.stderr
        done = subprocess.run(election, capture_output=True, text=True, timeout=60,
                              env={**env, "KAFKA_OPTS": os.environ["KAFKA_OPTS"]})
        assert done.returncode == 0, done.stderr
        assert "Successfully started preferred replica election for partitions" in done.stdout
    finally:
        stranger.stop()
        stranger.close()
        cluster.kill()


def test_secure_acls_without_a_login_refuse_to_start(sasl_zookeeper, cluster_dir, monkeypatch):
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    cluster = Cluster(sasl_zookeeper.connect_string + "/nologin", cluster_dir / "brokers", 1,
                      {"zookeeper.set.acl": "true"})
    try:
        with pytest.raises(BrokerStartError):
            cluster.start(timeout=30)
        server_log = (cluster.brokers[0].app_log_dir / "server.log").read_text()
        assert ("Fatal error during KafkaServer startup. Prepare to shutdown: java.lang.SecurityException: "
                "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at least "
                "zookeeper.ssl.client.enable") in server_log
        assert "[java.security.auth.login.config=null, zookeeper.sasl.client=default:true, " \
               "zookeeper.sasl.clientconfig=default:Client]" in server_log
    finally:
        cluster.kill()


def test_the_migration_tool_secures_an_open_cluster_and_opens_it_again(sasl_zookeeper, cluster_dir, monkeypatch):
    """zookeeper-security-migration.sh, the step after the brokers log in: the znodes made
    before zookeeper.set.acl (open to all) become the login's, world-readable except the
    sensitive ones, down to every partition's state; the brokers, logged in as that user,
    go on changing them; --zookeeper.acl=unsecure opens them again."""
    jaas = client_jaas(cluster_dir / "c.conf", "kafka-secret")
    monkeypatch.setenv("KAFKA_OPTS", f"-Djava.security.auth.login.config={jaas}")
    connect = sasl_zookeeper.connect_string + "/migrate"
    cluster = Cluster(connect, cluster_dir / "brokers", 1)       # logged in, but creating open znodes
    stranger = KazooClient(hosts=connect)
    tool = str(REPO / "bin" / "zookeeper-security-migration.sh")
    env = {"PYTHON": sys.executable, "PATH": "/usr/bin:/bin", "KAFKA_OPTS": os.environ["KAFKA_OPTS"]}
    all_perms, read = 31, 1
    owned = {("sasl", "kafka", all_perms), ("world", "anyone", read)}
    try:
        cluster.start()
        with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_topics([NewTopic("before", 2, 1)])
        stranger.start(15)
        state = "/brokers/topics/before/partitions/1/state"
        assert acl_ids(stranger, state) == {("world", "anyone", all_perms)}
        done = subprocess.run([tool, "--zookeeper.acl", "secure", "--zookeeper.connect", connect],
                              capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        for path in ("/", "/brokers/topics/before", state, "/brokers/ids/0", "/controller", "/cluster/id"):
            assert acl_ids(stranger, path) == owned, path
        with pytest.raises(NoAuthError):
            stranger.set("/brokers/topics/before", b"{}")
        with pytest.raises(NoAuthError):
            stranger.get_children("/config/users")                   # sensitive: the owner's alone
        with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            admin.create_topics([NewTopic("after", 1, 1)])            # the brokers still own their state
        done = subprocess.run([tool, "--zookeeper.acl", "unsecure", "--zookeeper.connect", connect],
                              capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        for path in (state, "/brokers/topics/after", "/config/users"):
            assert acl_ids(stranger, path) == {("world", "anyone", all_perms)}, path
        # Without a login the tool refuses, as Kafka's; --enable.path.check stops on a wrong chroot.
        refused = subprocess.run([tool, "--zookeeper.acl", "secure", "--zookeeper.connect", connect],
                                 capture_output=True, text=True, timeout=60, env={**env, "KAFKA_OPTS": ""})
        assert refused.returncode == 1
        assert refused.stderr.startswith("ERROR: No JAAS configuration file has been specified")
        wrong = subprocess.run([tool, "--zookeeper.acl", "secure", "--enable.path.check", "--zookeeper.connect",
                                sasl_zookeeper.connect_string + "/nothing-here"],
                               capture_output=True, text=True, timeout=60, env=env)
        assert wrong.returncode == 1
        assert wrong.stdout.startswith("Warning: The following secure root paths do not exist in ZooKeeper: "
                                       "/admin,/brokers,/cluster,/config,/controller,")
        assert wrong.stdout.endswith("Exit the command.\n")
    finally:
        stranger.stop()
        stranger.close()
        cluster.kill()
