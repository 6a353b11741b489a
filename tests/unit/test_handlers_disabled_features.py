"""The rest of Kafka 2.8's zkBroker APIs over an in-memory connection: ACLs, SASL and
delegation tokens as a broker without them answers, quotas and SCRAM credentials kept
in (fake) ZooKeeper, log dirs from real logs, transactions without a coordinator,
features and producers. Each answer is decoded from bytes, as a client reads it."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct
from dataclasses import dataclass, field

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from kafkalike.broker.admin_manager import AdminManager
from kafkalike.broker.metadata_cache import MetadataCache, PartitionInfo
from kafkalike.broker.network import KafkaServerFactory
from kafkalike.broker.registry import load_handlers
from kafkalike.broker.replica_alter_log_dirs import ReplicaAlterLogDirsManager
from kafkalike.broker.replica_manager import ReplicaManager
from kafkalike.broker.topic_configs import TopicConfigs
from kafkalike.protocol.api import APIS, decode_response, encode_request
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from kafkalike.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from kafkalike.protocol.messages.alter_client_quotas import AlterClientQuotasRequest
from kafkalike.protocol.messages.alter_replica_log_dirs import AlterReplicaLogDirsRequest
from kafkalike.protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.create_acls import CreateAclsRequest
from kafkalike.protocol.messages.create_delegation_token import CreateDelegationTokenRequest
from kafkalike.protocol.messages.delete_acls import DeleteAclsRequest
from kafkalike.protocol.messages.describe_acls import DescribeAclsRequest
from kafkalike.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest
from kafkalike.protocol.messages.describe_delegation_token import DescribeDelegationTokenRequest
from kafkalike.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from kafkalike.protocol.messages.describe_producers import DescribeProducersRequest
from kafkalike.protocol.messages.describe_user_scram_credentials import DescribeUserScramCredentialsRequest
from kafkalike.protocol.messages.end_txn import EndTxnRequest
from kafkalike.protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from kafkalike.protocol.messages.renew_delegation_token import RenewDelegationTokenRequest
from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kafkalike.protocol.messages.sasl_handshake import SaslHandshakeRequest
from kafkalike.protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from kafkalike.protocol.messages.update_features import UpdateFeaturesRequest
from kafkalike.records.batch import encode_batch
from kafkalike.storage.config import LogConfig
from kafkalike.storage.manager import LogManager
from tests.unit.broker_fakes import services

load_handlers()

E = ErrorCode
NOT_CONTROLLER = "This is not the correct controller for this cluster."


def versions(api_key: int) -> list[int]:
    lo, hi = APIS[api_key].versions
    return list(range(lo, hi + 1))


# -- a broker's surroundings, faked just enough ----------------------------------------


class FakeZooKeeper:
    """Config znodes as KafkaZkClient exposes them."""

    def __init__(self):
        self.znodes: dict[str, dict[str, str]] = {}
        self.notifications: list[str] = []

    def get_entity_names(self, entity_path: str):
        prefix = f"/config/{entity_path}/"
        return defer.succeed(sorted({p[len(prefix):].split("/")[0] for p in self.znodes if p.startswith(prefix)}))

    def get_entity_configs(self, entity_type: str, name: str):
        return defer.succeed(dict(self.znodes.get(f"/config/{entity_type}/{name}", {})))

    def change_entity_config(self, entity_type: str, name: str, configs):
        self.znodes[f"/config/{entity_type}/{name}"] = dict(configs)
        self.notifications.append(f"{entity_type}/{name}")
        return defer.succeed(None)


@dataclass
class FakeConfig:
    log_dirs: list[str] = field(default_factory=list)
    listener_security_protocol_map: dict[str, str] = field(default_factory=lambda: {"PLAINTEXT": "PLAINTEXT"})
    inter_broker_protocol_version: str = "2.8-IV1"


@dataclass
class FakeController:
    active: bool = True


class FakeServer:
    def __init__(self, log_dirs=(), topics=None, controller: bool = True, ibp: str = "2.8-IV1"):
        self.zk = FakeZooKeeper()
        self.config = FakeConfig(list(log_dirs), inter_broker_protocol_version=ibp)
        self.controller = FakeController(controller)
        self.metadata_cache = MetadataCache(0)
        for topic, count in (topics or {}).items():
            self.metadata_cache.partitions[topic] = {p: PartitionInfo(topic, p, 0, 0, [0], [0])
                                                     for p in range(count)}
        self.log_manager = LogManager(self.config.log_dirs, LogConfig(), enable_cleaner=False) if log_dirs else None
        self.replica_manager = ReplicaManager(0, self.log_manager, None, lambda t: LogConfig(), lambda: 0)
        self.admin = AdminManager(self.zk, self.metadata_cache, self.config, TopicConfigs(LogConfig()), None)
        self.clock = Clock()
        self.mover = ReplicaAlterLogDirsManager(0, self.replica_manager, self.log_manager, self.clock,
                                                chunk_bytes=100, run_blocking=defer.maybeDeferred)
        self.services = services(config=self.config, zk=self.zk, metadata=self.metadata_cache,
                                 replicas=self.replica_manager, logs=self.log_manager, controller=self.controller,
                                 admin=self.admin, alter_log_dirs=self.mover)

    def host(self, topic: str, partition: int, records: int = 0):
        """A replica of topic-partition on this broker, with `records` one-record batches."""
        part = self.replica_manager.get_or_create_partition((topic, partition), is_new=True)
        for i in range(records):
            part.log.append(encode_batch([(b"k%d" % i, b"value")], base_timestamp=1_650_000_000_000))
        return part


class Client:
    def __init__(self, server, listener: str = "PLAINTEXT"):
        factory = KafkaServerFactory(server.services, 1 << 20)
        factory.listener_name = listener
        self.conn = factory.buildProtocol(None)
        self.transport = StringTransport()
        self.conn.makeConnection(self.transport)
        self.correlation = 0

    def ask(self, api_key: int, version: int, body):
        """Send one request and return the decoded response (the handlers answer at once)."""
        self.correlation += 1
        data = encode_request(api_key, version, self.correlation, "test-client", body)
        self.conn.dataReceived(struct.pack(">i", len(data)) + data)
        out = self.transport.value()
        self.transport.clear()
        size = struct.unpack(">i", out[:4])[0]
        assert len(out) == 4 + size, "exactly one answer"
        corr, response = decode_response(api_key, version, out[4:])
        assert corr == self.correlation
        return response


@pytest.fixture
def server():
    return FakeServer(topics={"t": 2})


@pytest.fixture
def client(server):
    return Client(server)


# -- the advertised set ----------------------------------------------------------------


def test_every_api_served_here_is_advertised_at_its_full_28_range(client):
    resp = client.ask(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    advertised = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    mine = [17, 24, 25, 26, 27, 28, 29, 30, 31, 34, 35, 36, 38, 39, 40, 41, 48, 49, 50, 51, 57, 61]
    assert {k: advertised.get(k) for k in mine} == {k: APIS[k].versions for k in mine}


# -- ACLs ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(29))
def test_describe_acls_is_security_disabled(client, version):
    resp = client.ask(29, version, DescribeAclsRequest(resource_type_filter=1, operation=1, permission_type=1))
    assert (resp.error_code, resp.error_message, resp.resources) == (
        E.SECURITY_DISABLED, "No Authorizer is configured on the broker", [])


@pytest.mark.parametrize("version", versions(30))
def test_create_acls_fails_each_creation(client, version):
    acl = CreateAclsRequest.AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3,
                                        principal="User:alice", host="*", operation=3, permission_type=3)
    resp = client.ask(30, version, CreateAclsRequest(creations=[acl, acl]))
    assert [(r.error_code, r.error_message) for r in resp.results] == [
        (E.SECURITY_DISABLED, "No Authorizer is configured on the broker.")] * 2


@pytest.mark.parametrize("version", versions(31))
def test_delete_acls_fails_each_filter_and_matches_nothing(client, version):
    f = DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                           permission_type=1)
    resp = client.ask(31, version, DeleteAclsRequest(filters=[f, f, f]))
    assert [(r.error_code, r.error_message, r.matching_acls) for r in resp.filter_results] == [
        (E.SECURITY_DISABLED, "No Authorizer is configured on the broker.", [])] * 3


# -- SASL on PLAINTEXT -----------------------------------------------------------------


@pytest.mark.parametrize("version", versions(17))
def test_sasl_handshake_on_plaintext_is_an_illegal_state(client, version):
    resp = client.ask(17, version, SaslHandshakeRequest(mechanism="PLAIN"))
    assert (resp.error_code, resp.mechanisms) == (E.ILLEGAL_SASL_STATE, [])


@pytest.mark.parametrize("version", versions(36))
def test_sasl_authenticate_on_plaintext_is_an_illegal_state(client, version):
    resp = client.ask(36, version, SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00secret"))
    assert (resp.error_code, resp.error_message, resp.auth_bytes) == (
        E.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication", b"")


# -- delegation tokens -----------------------------------------------------------------


@pytest.mark.parametrize("version", versions(38))
def test_tokens_are_not_allowed_over_plaintext(client, version):
    create = client.ask(38, version, CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1))
    assert (create.error_code, create.principal_type, create.principal_name, create.issue_timestamp_ms,
            create.expiry_timestamp_ms, create.max_timestamp_ms, create.token_id, create.hmac) == (
        E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "User", "ANONYMOUS", -1, -1, -1, "", b"")
    renew = client.ask(39, version, RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1000))
    expire = client.ask(40, version, ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=-1))
    describe = client.ask(41, version, DescribeDelegationTokenRequest(owners=None))
    assert (renew.error_code, renew.expiry_timestamp_ms) == (E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)
    assert (expire.error_code, expire.expiry_timestamp_ms) == (E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)
    assert (describe.error_code, describe.tokens) == (E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])


def test_over_sasl_tokens_meet_the_disabled_feature(server):
    server.config.listener_security_protocol_map["CLIENTS"] = "SASL_PLAINTEXT"
    client = Client(server, listener="CLIENTS")
    user = CreateDelegationTokenRequest.CreatableRenewers(principal_type="User", principal_name="bob")
    group = CreateDelegationTokenRequest.CreatableRenewers(principal_type="Group", principal_name="ops")
    assert client.ask(38, 2, CreateDelegationTokenRequest(renewers=[user], max_lifetime_ms=-1)).error_code == \
        E.DELEGATION_TOKEN_AUTH_DISABLED
    assert client.ask(38, 2, CreateDelegationTokenRequest(renewers=[user, group], max_lifetime_ms=-1)).error_code == \
        E.INVALID_PRINCIPAL_TYPE
    assert client.ask(41, 2, DescribeDelegationTokenRequest(owners=None)).error_code == \
        E.DELEGATION_TOKEN_AUTH_DISABLED


def test_ssl_tokens_are_allowed_only_with_a_client_certificate_and_name_the_owner(server):
    """KafkaApis.allowTokenRequests refuses 1-way SSL (principal User:ANONYMOUS) only; the
    failed create names the request's principal as the owner."""
    server.config.listener_security_protocol_map["SECURE"] = "SSL"
    anonymous = Client(server, listener="SECURE")
    create = CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1)
    refused = anonymous.ask(38, 2, create)
    assert (refused.error_code, refused.principal_type, refused.principal_name) == (
        E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "User", "ANONYMOUS")
    with_cert = Client(server, listener="SECURE")
    with_cert.conn.principal = "User:CN=alice,O=example"
    allowed = with_cert.ask(38, 2, create)
    assert (allowed.error_code, allowed.principal_type, allowed.principal_name) == (
        E.DELEGATION_TOKEN_AUTH_DISABLED, "User", "CN=alice,O=example")
    assert with_cert.ask(41, 2, DescribeDelegationTokenRequest(owners=None)).error_code == \
        E.DELEGATION_TOKEN_AUTH_DISABLED


# -- client quotas ---------------------------------------------------------------------

QA = AlterClientQuotasRequest
QD = DescribeClientQuotasRequest


def alteration(entity: dict, **ops):
    """ops: key=value to set, key=None to remove."""
    return QA.EntryData(entity=[QA.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                        ops=[QA.OpData(key=k, value=0.0 if v is None else float(v), remove=v is None)
                             for k, v in ops.items()])


def alter(client, *entries, validate_only=False, version=1):
    resp = client.ask(49, version, QA(entries=list(entries), validate_only=validate_only))
    return [({e.entity_type: e.entity_name for e in r.entity}, r.error_code, r.error_message) for r in resp.entries]


def describe(client, *components, strict=False, version=1):
    """components: (entity_type, match_type, match)."""
    resp = client.ask(48, version, QD(components=[QD.ComponentData(entity_type=t, match_type=m, match=n)
                                                  for t, m, n in components], strict=strict))
    if resp.error_code:
        return resp.error_code, resp.error_message
    return sorted(((tuple((e.entity_type, e.entity_name) for e in entry.entity),
                    {v.key: v.value for v in entry.values}) for entry in resp.entries), key=repr)


@pytest.mark.parametrize("version", versions(49))
def test_quotas_are_written_where_kafka_keeps_them(server, client, version):
    results = alter(client,
                    alteration({"user": "alice"}, producer_byte_rate=1048576, request_percentage=12.5),
                    alteration({"client-id": "app 1*"}, consumer_byte_rate=2e9),
                    alteration({"user": "alice", "client-id": "app 1*"}, controller_mutation_rate=1e7),
                    alteration({"client-id": None}, producer_byte_rate=1024),
                    version=version)
    assert [(code, message) for _, code, message in results] == [(0, None)] * 4
    assert server.zk.znodes == {
        "/config/users/alice": {"producer_byte_rate": "1048576", "request_percentage": "12.5"},
        "/config/clients/app%201%2A": {"consumer_byte_rate": "2000000000"},
        "/config/users/alice/clients/app%201%2A": {"controller_mutation_rate": "1.0E7"},
        "/config/clients/<default>": {"producer_byte_rate": "1024"},
    }
    assert server.zk.notifications == ["users/alice", "clients/app%201%2A", "users/alice/clients/app%201%2A",
                                       "clients/<default>"]


@pytest.mark.parametrize("version", versions(48))
def test_describe_quotas_follows_kafkas_filters(client, version):
    alter(client, alteration({"user": "alice"}, producer_byte_rate=100),
          alteration({"user": "bob"}, consumer_byte_rate=200),
          alteration({"client-id": "app"}, request_percentage=50),
          alteration({"user": "alice", "client-id": "app"}, producer_byte_rate=300),
          alteration({"user": None}, producer_byte_rate=400),
          alteration({"ip": "10.0.0.1"}, connection_creation_rate=5))
    alice, bob, app = (("user", "alice"),), (("user", "bob"),), (("client-id", "app"),)
    alice_app, default_user = (("user", "alice"), ("client-id", "app")), (("user", None),)
    everything = describe(client, version=version)
    assert everything == sorted([
        (alice, {"producer_byte_rate": 100.0}), (bob, {"consumer_byte_rate": 200.0}),
        (app, {"request_percentage": 50.0}), (alice_app, {"producer_byte_rate": 300.0}),
        (default_user, {"producer_byte_rate": 400.0}),
        ((("ip", "10.0.0.1"),), {"connection_creation_rate": 5.0})], key=repr)
    assert describe(client, ("user", 0, "alice"), strict=True, version=version) == [
        (alice, {"producer_byte_rate": 100.0})]
    assert describe(client, ("user", 0, "alice"), version=version) == sorted([
        (alice, {"producer_byte_rate": 100.0}), (alice_app, {"producer_byte_rate": 300.0})], key=repr)
    assert describe(client, ("user", 1, None), strict=True, version=version) == [
        (default_user, {"producer_byte_rate": 400.0})]
    assert describe(client, ("client-id", 2, None), version=version) == sorted([
        (app, {"request_percentage": 50.0}), (alice_app, {"producer_byte_rate": 300.0})], key=repr)
    assert describe(client, ("user", 0, "nobody"), strict=True, version=version) == []
    assert describe(client, ("user", 2, None), strict=True, version=version) == sorted([
        (alice, {"producer_byte_rate": 100.0}), (bob, {"consumer_byte_rate": 200.0}),
        (default_user, {"producer_byte_rate": 400.0})], key=repr)
    assert describe(client, ("ip", 2, None), version=version) == [
        ((("ip", "10.0.0.1"),), {"connection_creation_rate": 5.0})]


def test_no_quotas_anywhere_is_an_empty_answer(client):
    assert describe(client) == []


@pytest.mark.parametrize("components, answer", [
    ([("user", 2, None), ("user", 0, "a")], (E.INVALID_REQUEST, "Duplicate user filter component entity type")),
    ([("group", 2, None)], (E.UNSUPPORTED_VERSION, "Custom entity type 'group' not supported")),
    ([("", 2, None)], (E.INVALID_REQUEST, "Unexpected empty filter component entity type")),
    ([("ip", 2, None), ("client-id", 2, None)],
     (E.INVALID_REQUEST, "Invalid entity filter component combination, IP filter component should not be "
                         "used with user or clientId filter component.")),
])
def test_bad_quota_filters_are_refused_as_kafka_refuses_them(client, components, answer):
    assert describe(client, *components) == answer


@pytest.mark.parametrize("entry, message", [
    (alteration({"user": "alice"}, bogus_rate=1), "Invalid configuration key bogus_rate"),
    (alteration({"client-id": "c"}, producer_byte_rate=10.5), "Configuration producer_byte_rate must be a LONG value"),
    (alteration({"ip": "10.0.0.1"}, connection_creation_rate=1.5),
     "Configuration connection_creation_rate must be a INT value"),
    (alteration({}, producer_byte_rate=1), "Invalid empty client quota entity"),
    (alteration({"group": "g"}, producer_byte_rate=1), "Unhandled client quota entity type: group"),
    (alteration({"user": ""}, producer_byte_rate=1), "Empty user not supported"),
    (alteration({"user": "alice", "ip": "10.0.0.1"}, connection_creation_rate=1),
     "Invalid quota entity combination, IP entity should not be used with user/client ID entity."),
    (alteration({"ip": "10.0.0.1"}, producer_byte_rate=1), "Invalid configuration key producer_byte_rate"),
])
def test_invalid_alterations_are_refused_and_write_nothing(server, client, entry, message):
    [(_, code, text)] = alter(client, entry)
    assert (code, text) == (E.INVALID_REQUEST, message)
    assert server.zk.znodes == {} and server.zk.notifications == []


def test_validate_only_checks_but_does_not_write(server, client):
    assert alter(client, alteration({"user": "alice"}, producer_byte_rate=1), validate_only=True) == [
        ({"user": "alice"}, 0, None)]
    assert server.zk.znodes == {}


def test_removing_a_quota_keeps_the_users_credentials(server, client):
    scram = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"
    server.zk.znodes["/config/users/alice"] = {"SCRAM-SHA-256": scram, "producer_byte_rate": "5"}
    assert alter(client, alteration({"user": "alice"}, producer_byte_rate=None, consumer_byte_rate=7))[0][1] == 0
    assert server.zk.znodes["/config/users/alice"] == {"SCRAM-SHA-256": scram, "consumer_byte_rate": "7"}


# -- SCRAM credentials -----------------------------------------------------------------

SA = AlterUserScramCredentialsRequest
SD = DescribeUserScramCredentialsRequest


def upsert(user: str, password: bytes = b"pencil", salt: bytes = b"salt-of-the-earth", iterations: int = 4096,
           mechanism: int = 1):
    """What an admin client sends: the salted password, never the password (RFC 5802 Hi())."""
    digest = {1: "sha256", 2: "sha512"}.get(mechanism, "sha256")
    salted = hashlib.pbkdf2_hmac(digest, password, salt, iterations)
    return SA.ScramCredentialUpsertion(name=user, mechanism=mechanism, iterations=iterations, salt=salt,
                                       salted_password=salted)


def alter_scram(client, upsertions=(), deletions=()):
    resp = client.ask(51, 0, SA(upsertions=list(upsertions), deletions=[
        SA.ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions]))
    return [(r.user, r.error_code, r.error_message) for r in resp.results]


def describe_scram(client, users):
    resp = client.ask(50, 0, SD(users=None if users is None else [SD.UserName(name=u) for u in users]))
    assert resp.error_code == 0
    return [(r.user, r.error_code, r.error_message, [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in resp.results]


def test_a_stored_credential_lets_the_rfc_7677_client_in(server, client):
    """RFC 7677's SCRAM-SHA-256 exchange, checked against the stored and server keys kept."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    assert alter_scram(client, [upsert("user", b"pencil", salt, 4096)]) == [("user", 0, None)]
    stored = dict(part.split("=", 1) for part in server.zk.znodes["/config/users/user"]["SCRAM-SHA-256"].split(","))
    assert stored["salt"] == "W22ZaJ0SNY7soEsUEjb6gQ==" and stored["iterations"] == "4096"
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth_message = (f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
                    f"c=biws,r={nonce}").encode()
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    stored_key, server_key = base64.b64decode(stored["stored_key"]), base64.b64decode(stored["server_key"])
    client_signature = hmac.new(stored_key, auth_message, hashlib.sha256).digest()
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
    assert hashlib.sha256(client_key).digest() == stored_key          # the server accepts the proof
    assert base64.b64encode(hmac.new(server_key, auth_message, hashlib.sha256).digest()).decode() == \
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="              # and proves itself with RFC's v=
    assert server.zk.notifications == ["users/user"]


def test_describe_lists_mechanisms_and_iterations_only(client):
    alter_scram(client, [upsert("alice", iterations=8192), upsert("alice", mechanism=2), upsert("bob")])
    assert describe_scram(client, None) == [("alice", 0, None, [(1, 8192), (2, 4096)]), ("bob", 0, None, [(1, 4096)])]
    assert describe_scram(client, ["bob", "carol", "", "alice", "alice"]) == [
        ("bob", 0, None, [(1, 4096)]),
        ("carol", E.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: carol", []),
        ("", E.RESOURCE_NOT_FOUND, "Username must not be empty", []),
        ("alice", E.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: alice", []),
    ]


def test_users_with_only_quotas_have_no_credentials(server, client):
    server.zk.znodes["/config/users/quota-only"] = {"producer_byte_rate": "1"}
    assert describe_scram(client, None) == []


def test_bad_alterations_fail_their_user_only(server, client):
    server.zk.znodes["/config/users/dave"] = {"producer_byte_rate": "1"}
    results = alter_scram(client, [upsert("few", iterations=1000), upsert("many", iterations=20000),
                                   upsert("odd", mechanism=0), upsert("twice"), upsert("twice"), upsert("ok")],
                          deletions=[("dave", 1)])
    assert results == [
        ("few", E.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("many", E.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("odd", E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("twice", E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        ("dave", E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        ("ok", 0, None),
    ]
    assert set(server.zk.znodes) == {"/config/users/dave", "/config/users/ok"}
    assert server.zk.znodes["/config/users/dave"] == {"producer_byte_rate": "1"}


def test_deleting_a_credential_keeps_the_rest_of_the_user(server, client):
    server.zk.znodes["/config/users/erin"] = {"producer_byte_rate": "1"}
    alter_scram(client, [upsert("erin"), upsert("erin", mechanism=2)])
    assert alter_scram(client, deletions=[("erin", 1)]) == [("erin", 0, None)]
    assert sorted(server.zk.znodes["/config/users/erin"]) == ["SCRAM-SHA-512", "producer_byte_rate"]


def test_only_the_controller_alters_credentials():
    server = FakeServer(controller=False)
    client = Client(server)
    assert alter_scram(client, [upsert("zed"), upsert("amy")], deletions=[("amy", 2)]) == [
        ("amy", E.NOT_CONTROLLER, NOT_CONTROLLER), ("zed", E.NOT_CONTROLLER, NOT_CONTROLLER)]
    assert server.zk.znodes == {}


# -- log dirs --------------------------------------------------------------------------


@pytest.fixture
def disk_server(shm_path):
    server = FakeServer(log_dirs=[str(shm_path / "data")], topics={"t": 3, "u": 1, "hosted-elsewhere": 1})
    yield server
    server.log_manager.shutdown()


def log_dirs(client, topics, version=2):
    request = DescribeLogDirsRequest(topics=None if topics is None else [
        DescribeLogDirsRequest.DescribableLogDirTopic(topic=t, partition_index=ps) for t, ps in topics.items()])
    resp = client.ask(35, version, request)
    return [(r.error_code, r.log_dir, {t.name: {p.partition_index: (p.partition_size, p.offset_lag, p.is_future_key)
                                                for p in t.partitions} for t in r.topics})
            for r in resp.results]


@pytest.mark.parametrize("version", versions(35))
def test_describe_log_dirs_reports_each_partitions_size(disk_server, version):
    t0 = disk_server.host("t", 0, records=3)
    t1 = disk_server.host("t", 1)
    u0 = disk_server.host("u", 0, records=1)
    client = Client(disk_server)
    data_dir = disk_server.config.log_dirs[0]
    assert t0.log.size > u0.log.size > 0 and t1.log.size == 0
    assert log_dirs(client, None, version) == [(0, data_dir, {
        "t": {0: (t0.log.size, 0, False), 1: (0, 0, False)}, "u": {0: (u0.log.size, 0, False)}})]
    # Kafka 2.8 lists every topic with a log in the dir, requested or not.
    assert log_dirs(client, {"t": [1]}, version) == [(0, data_dir, {"t": {1: (0, 0, False)}, "u": {}})]


def test_a_log_no_partition_owns_has_no_offset_lag(disk_server):
    disk_server.log_manager.get_or_create_log(("t", 2))
    assert log_dirs(Client(disk_server), None)[0][2] == {"t": {2: (0, -1, False)}}


def alter_dirs(client, path, partitions, version=2):
    R = AlterReplicaLogDirsRequest
    topics = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(p)
    resp = client.ask(34, version, R(dirs=[R.AlterReplicaLogDir(path=path, topics=[
        R.AlterReplicaLogDirTopic(name=t, partitions=ps) for t, ps in topics.items()])]))
    return {(t.topic_name, p.partition_index): p.error_code for t in resp.results for p in t.partitions}


@pytest.mark.parametrize("version", versions(34))
def test_alter_replica_log_dirs_answers_per_partition(disk_server, version):
    disk_server.host("t", 0)
    client = Client(disk_server)
    here = disk_server.config.log_dirs[0]
    assert alter_dirs(client, here, [("t", 0), ("t", 1), ("nope", 0), ("x" * 250, 0)], version) == {
        ("t", 0): E.NONE, ("t", 1): E.REPLICA_NOT_AVAILABLE, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("x" * 250, 0): E.INVALID_TOPIC_EXCEPTION}
    assert alter_dirs(client, "/no/such/dir", [("t", 0)], version) == {("t", 0): E.LOG_DIR_NOT_FOUND}


def test_a_replica_moves_to_the_other_dir_through_a_future_log(shm_path):
    server = FakeServer(log_dirs=[str(shm_path / "a"), str(shm_path / "b")], topics={"t": 1})
    try:
        part = server.host("t", 0, records=5)
        part.log.update_high_watermark(5)
        source = server.log_manager.log_dir_of(("t", 0))
        target = next(d for d in server.config.log_dirs if d != source)
        client = Client(server)
        assert alter_dirs(client, target, [("t", 0)]) == {("t", 0): E.NONE}
        future = server.log_manager.get_future_log(("t", 0))
        assert os.path.basename(future.dir).startswith("t-0.") and future.dir.endswith("-future")
        # Until the copier runs, DescribeLogDirs shows the future replica lagging by 5.
        described = {r[1]: r[2] for r in log_dirs(client, None)}
        assert described[target] == {"t": {0: (0, 5, True)}} and described[source]["t"][0][1:] == (0, False)
        assert server.mover.max_lag() == 5         # ReplicaAlterLogDirsManager's MaxLag
        # An append after the move began is copied too; chunks of 100 bytes (one batch)
        # follow each other in turns of the reactor until the swap.
        part.log.append(encode_batch([(b"late", b"value")], base_timestamp=1_650_000_000_000))
        server.clock.advance(0)
        assert server.log_manager.get_future_log(("t", 0)) is None
        assert server.log_manager.log_dir_of(("t", 0)) == target
        assert part.log is server.log_manager.get_log(("t", 0)) and part.log.dir == os.path.join(target, "t-0")
        assert part.log.log_end_offset == 6 and part.high_watermark == 5
        assert not [n for n in os.listdir(source) if n.startswith("t-0")]     # removed (no delay here)
        assert len(part.log.read(0, 1 << 20)) == sum(s.size for s in part.log.segments)
        # Already there: a no-op; an unknown dir is LOG_DIR_NOT_FOUND.
        assert alter_dirs(client, target, [("t", 0)]) == {("t", 0): E.NONE}
        assert alter_dirs(client, "/elsewhere", [("t", 0)]) == {("t", 0): E.LOG_DIR_NOT_FOUND}
    finally:
        server.mover.shutdown()
        server.log_manager.shutdown()


# -- transactions ----------------------------------------------------------------------


def add_partitions(client, txn_id, partitions, version=3):
    R = AddPartitionsToTxnRequest
    topics = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(p)
    resp = client.ask(24, version, R(transactional_id=txn_id, producer_id=1, producer_epoch=0, topics=[
        R.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in topics.items()]))
    return {(t.name, p.partition_index): p.error_code for t in resp.results for p in t.results}


@pytest.mark.parametrize("version", versions(24))
def test_add_partitions_to_txn_without_a_running_coordinator(client, version):
    assert add_partitions(client, "txn", [("t", 0), ("t", 1)], version) == {
        ("t", 0): E.COORDINATOR_NOT_AVAILABLE, ("t", 1): E.COORDINATOR_NOT_AVAILABLE}
    assert add_partitions(client, "txn", [("t", 0), ("gone", 0)], version) == {
        ("t", 0): E.OPERATION_NOT_ATTEMPTED, ("gone", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert add_partitions(client, "", [("t", 0)], version) == {("t", 0): E.INVALID_REQUEST}


@pytest.mark.parametrize("version", versions(26))
def test_end_txn_and_add_offsets_without_a_running_coordinator(client, version):
    end = EndTxnRequest(transactional_id="txn", producer_id=1, producer_epoch=0, committed=True)
    add = AddOffsetsToTxnRequest(transactional_id="txn", producer_id=1, producer_epoch=0, group_id="g")
    assert client.ask(26, version, end).error_code == E.COORDINATOR_NOT_AVAILABLE
    assert client.ask(25, version, add).error_code == E.COORDINATOR_NOT_AVAILABLE
    end.transactional_id = ""
    assert client.ask(26, version, end).error_code == E.INVALID_REQUEST


@pytest.mark.parametrize("version", versions(28))
def test_txn_offset_commit_stores_nothing_and_says_retry(client, version):
    R = TxnOffsetCommitRequest
    part = R.TxnOffsetCommitRequestPartition
    request = R(transactional_id="txn", group_id="g", producer_id=1, producer_epoch=0, topics=[
        R.TxnOffsetCommitRequestTopic(name="t", partitions=[part(partition_index=0, committed_offset=5),
                                                            part(partition_index=7, committed_offset=5)])])
    resp = client.ask(28, version, request)
    assert [(p.partition_index, p.error_code) for p in resp.topics[0].partitions] == [
        (0, E.COORDINATOR_NOT_AVAILABLE), (7, E.UNKNOWN_TOPIC_OR_PARTITION)]
    request.group_id = ""
    assert client.ask(28, version, request).topics[0].partitions[0].error_code == E.INVALID_GROUP_ID


# -- features --------------------------------------------------------------------------


def update_features(client, *updates):
    R = UpdateFeaturesRequest
    resp = client.ask(57, 0, R(timeout_ms=1000, feature_updates=[
        R.FeatureUpdateKey(feature=f, max_version_level=v, allow_downgrade=d) for f, v, d in updates]))
    return resp.error_code, resp.error_message, [(r.feature, r.error_code, r.error_message) for r in resp.results]


def test_update_features_refuses_each_feature_as_28_does(client):
    code, message, results = update_features(client, ("some.feature", 1, False), ("", 1, False),
                                              ("gone", 0, True), ("low", 0, False))
    assert (code, message) == (0, None)
    assert results == [
        ("some.feature", E.INVALID_REQUEST,
         "Could not apply finalized feature update because the provided feature is not supported."),
        ("", E.INVALID_REQUEST, "Feature name can not be empty."),
        ("gone", E.INVALID_REQUEST, "Can not delete non-existing finalized feature."),
        ("low", E.INVALID_REQUEST,
         "Can not provide maxVersionLevel: 0 less than 1 without setting the allowDowngrade flag to true in "
         "the request."),
    ]


def test_update_features_goes_to_the_controller():
    assert update_features(Client(FakeServer(controller=False)), ("f", 1, False)) == (
        E.NOT_CONTROLLER, NOT_CONTROLLER, [])


def test_update_features_before_ibp_27_is_disabled():
    assert update_features(Client(FakeServer(ibp="2.6-IV0")), ("f", 1, False)) == (
        E.INVALID_REQUEST, "Feature versioning system is disabled.", [])


# -- producers -------------------------------------------------------------------------


def test_describe_producers_answers_for_hosted_replicas(disk_server):
    disk_server.host("t", 0)
    follower = disk_server.host("t", 1)
    follower.leader_id = 5
    R = DescribeProducersRequest
    resp = Client(disk_server).ask(61, 0, R(topics=[R.TopicRequest(name="t", partition_indexes=[0, 1, 2, 9]),
                                                   R.TopicRequest(name="nope", partition_indexes=[0])]))
    assert [(t.name, p.partition_index, p.error_code, p.active_producers) for t in resp.topics
            for p in t.partitions] == [
        ("t", 0, E.NONE, []), ("t", 1, E.NONE, []), ("t", 2, E.NOT_LEADER_OR_FOLLOWER, []),
        ("t", 9, E.UNKNOWN_TOPIC_OR_PARTITION, []), ("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION, [])]


def test_describe_producers_stops_listing_a_producer_once_it_expires(disk_server):
    part = disk_server.host("t", 0)
    t = 1_650_000_000_000
    part.log.append(encode_batch([(b"k", b"v")], producer_id=42, producer_epoch=3, base_sequence=0,
                                 base_timestamp=t))
    R = DescribeProducersRequest

    def listed():
        resp = Client(disk_server).ask(61, 0, R(topics=[R.TopicRequest(name="t", partition_indexes=[0])]))
        return [(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp)
                for s in resp.topics[0].partitions[0].active_producers]

    assert listed() == [(42, 3, 0, t)]
    week = disk_server.log_manager.max_producer_id_expiration_ms
    assert week == 7 * 24 * 3600 * 1000                  # transactional.id.expiration.ms's default
    assert disk_server.log_manager.remove_expired_producers(now_ms=t + week - 1) == 0
    assert listed() == [(42, 3, 0, t)]
    assert disk_server.log_manager.remove_expired_producers(now_ms=t + week) == 1
    assert listed() == []


# -- a ZooKeeper failure is an answer, not a hang-up -----------------------------------


def test_zookeeper_trouble_is_an_unknown_server_error(server, client):
    def broken(*args):
        return defer.fail(RuntimeError("connection loss"))
    server.zk.get_entity_configs = broken
    resp = client.ask(48, 1, QD(components=[QD.ComponentData(entity_type="user", match_type=0, match="a")],
                                strict=True))
    assert (resp.error_code, resp.entries) == (E.UNKNOWN_SERVER_ERROR, None)
    [(_, code, _)] = alter(client, alteration({"user": "a"}, producer_byte_rate=1))
    assert code == E.UNKNOWN_SERVER_ERROR
    assert describe_scram_raw(client, ["a"]) == E.UNKNOWN_SERVER_ERROR
    assert not client.transport.disconnecting


def describe_scram_raw(client, users):
    return client.ask(50, 0, SD(users=[SD.UserName(name=u) for u in users])).error_code


def test_sanitized_names_round_trip(server, client):
    odd = "ünïcode user@example.com/x"
    assert alter(client, alteration({"user": odd}, producer_byte_rate=1))[0][1] == 0
    [path] = server.zk.znodes
    assert path == "/config/users/%C3%BCn%C3%AFcode%20user%40example.com%2Fx"
    assert describe(client) == [((("user", odd),), {"producer_byte_rate": 1.0})]
    assert server.zk.notifications == ["users/%C3%BCn%C3%AFcode%20user%40example.com%2Fx"]
