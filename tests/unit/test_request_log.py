"""The request log (kafka.request.logger at DEBUG): the JSON of each completed request as
Kafka 2.8 writes it, without record bytes or secrets, and nothing at all when it is off."""
from __future__ import annotations

import json
import logging
import re
import uuid

import pytest

from kafkalike.broker import request_log
from kafkalike.broker.registry import HANDLERS, Registration
from kafkalike.protocol.api import APIS
from kafkalike.protocol.jsonspec import read_json
from kafkalike.protocol.messages.alter_configs import AlterConfigsRequest
from kafkalike.protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.create_delegation_token import CreateDelegationTokenResponse
from kafkalike.protocol.messages.fetch import FetchResponse
from kafkalike.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkalike.protocol.messages.metadata import MetadataRequest, MetadataResponse
from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
from kafkalike.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from kafkalike.protocol.schema import snake_case
from tests.reference import reference_dir
from tests.unit.test_broker_network import connect, frame

REFERENCE = reference_dir() / "kafka-2.8-messages"
RECORDS = b"\x00" * 61 + b"SECRET-PAYLOAD" * 4


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def request_lines():
    """kafka.request.logger at the level a test sets, its lines captured."""
    logger = request_log.REQUEST_LOGGER
    saved = logger.level, logger.propagate
    handler = Lines()
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def completed(lines: list[str]) -> list[dict]:
    out = []
    for line in lines:
        assert line.startswith("Completed request:{"), line
        out.append(json.loads(line[len("Completed request:"):]))
    return out


@pytest.fixture
def produce_handler():
    saved = HANDLERS[0]

    def produce(ctx, req):
        return ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(
            name="t", partition_responses=[ProduceResponse.PartitionProduceResponse(index=0, base_offset=42)])])
    HANDLERS[0] = Registration(APIS[0], 0, 9, produce, lambda r, v, c: ProduceResponse())
    yield
    HANDLERS[0] = saved


def produce_request() -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1500, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=RECORDS)])])


def test_completed_requests_are_logged_as_kafka_writes_them(request_lines, produce_handler):
    request_lines.setLevel(logging.DEBUG)
    request_log.REQUEST_LOGGER.setLevel(logging.DEBUG)
    conn, transport = connect()
    conn.dataReceived(frame(18, 3, 1, ApiVersionsRequest(client_software_name="kcat",
                                                         client_software_version="1.7.1"), client_id="rdkafka"))
    conn.dataReceived(frame(0, 8, 2, produce_request(), client_id="rdkafka"))
    api_versions, produce = completed(request_lines.lines)

    assert api_versions["requestHeader"] == {"requestApiKey": 18, "requestApiVersion": 3, "correlationId": 1,
                                             "clientId": "rdkafka", "requestApiKeyName": "API_VERSIONS"}
    assert api_versions["request"] == {"clientSoftwareName": "kcat", "clientSoftwareVersion": "1.7.1"}
    assert api_versions["response"]["errorCode"] == 0
    assert {"apiKey": 0, "minVersion": 0, "maxVersion": 9} in api_versions["response"]["apiKeys"]
    # The ApiVersions request names the client for its own line already, as in Kafka.
    assert api_versions["clientInformation"] == {"softwareName": "kcat", "softwareVersion": "1.7.1"}

    assert list(produce) == ["isForwarded", "requestHeader", "request", "response", "connection", "totalTimeMs",
                             "requestQueueTimeMs", "localTimeMs", "remoteTimeMs", "throttleTimeMs",
                             "responseQueueTimeMs", "sendTimeMs", "securityProtocol", "principal", "listener",
                             "clientInformation"]
    assert produce["isForwarded"] is False
    assert produce["requestHeader"]["requestApiKeyName"] == "PRODUCE"
    # v8 has transactionalId (null) and no tagged fields; records are only their size.
    assert produce["request"] == {"transactionalId": None, "acks": -1, "timeoutMs": 1500, "topicData": [
        {"name": "t", "partitionData": [{"index": 0, "recordsSizeInBytes": len(RECORDS)}]}]}
    assert produce["response"] == {"responses": [{"name": "t", "partitionResponses": [
        {"index": 0, "errorCode": 0, "baseOffset": 42, "logAppendTimeMs": -1, "logStartOffset": -1,
         "recordErrors": [], "errorMessage": None}]}], "throttleTimeMs": 0}
    assert re.fullmatch(r"10\.0\.0\.1:12345-192\.168\.1\.1:54321-\d+", produce["connection"])
    for key in ("totalTimeMs", "requestQueueTimeMs", "localTimeMs", "remoteTimeMs", "responseQueueTimeMs",
                "sendTimeMs"):
        assert isinstance(produce[key], float) and produce[key] >= 0
    assert produce["totalTimeMs"] >= produce["localTimeMs"]
    assert produce["throttleTimeMs"] == 0
    assert (produce["securityProtocol"], produce["listener"], produce["principal"]) == \
        ("PLAINTEXT", "PLAINTEXT", "User:ANONYMOUS")
    assert "SECRET-PAYLOAD" not in "".join(request_lines.lines)


def test_acks_0_produce_has_an_empty_response(request_lines, produce_handler):
    request_log.REQUEST_LOGGER.setLevel(logging.DEBUG)
    saved = HANDLERS[0]
    HANDLERS[0] = Registration(APIS[0], 0, 9, lambda ctx, req: None, lambda r, v, c: ProduceResponse())
    try:
        conn, transport = connect()
        body = produce_request()
        body.acks = 0
        conn.dataReceived(frame(0, 3, 9, body))
    finally:
        HANDLERS[0] = saved
    [line] = completed(request_lines.lines)
    assert line["response"] == "" and line["request"]["acks"] == 0 and transport.value() == b""
    assert line["clientInformation"] == {"softwareName": "unknown", "softwareVersion": "unknown"}


def test_at_warn_nothing_is_converted_or_logged(request_lines, produce_handler, monkeypatch):
    """The default (WARN): the listener does no JSON work at all."""
    request_log.REQUEST_LOGGER.setLevel(logging.WARNING)

    def boom(*args, **kwargs):
        raise AssertionError("converted with the request log off")
    monkeypatch.setattr(request_log, "request_entry", boom)
    monkeypatch.setattr(request_log, "message_json", boom)
    conn, transport = connect()
    conn.dataReceived(frame(0, 8, 2, produce_request()))
    conn.dataReceived(frame(3, 9, 3, MetadataRequest(topics=None)))
    assert transport.value() and request_lines.lines == []


def test_trace_level_logs_too(request_lines, produce_handler):
    request_log.REQUEST_LOGGER.setLevel(5)      # TRACE, which Kafka's log4j.properties also suggests
    conn, _ = connect()
    conn.dataReceived(frame(0, 8, 2, produce_request()))
    assert len(completed(request_lines.lines)) == 1


def test_fetch_response_records_are_their_size():
    response = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partition_responses=[
        FetchResponse.FetchablePartitionResponse(partition=0, high_watermark=5, record_set=memoryview(RECORDS)),
        FetchResponse.FetchablePartitionResponse(partition=1, record_set=None)])])
    node = request_log.message_json(response, 11)
    first, second = node["responses"][0]["partitionResponses"]
    assert first["recordSetSizeInBytes"] == len(RECORDS) and "recordSet" not in first
    assert second["recordSet"] is None
    assert node["throttleTimeMs"] == 0 and node["sessionId"] == 0
    # v12 is flexible: tagged fields appear only when they differ from their default.
    assert "currentLeader" not in request_log.message_json(response, 12)["responses"][0]["partitionResponses"][0]
    response.responses[0].partition_responses[0].current_leader.leader_id = 3
    tagged = request_log.message_json(response, 12)["responses"][0]["partitionResponses"][0]
    assert tagged["currentLeader"] == {"leaderId": 3, "leaderEpoch": -1}


def test_fields_absent_from_the_version_are_left_out():
    assert request_log.message_json(MetadataRequest(topics=[]), 0) == {"topics": []}
    assert request_log.message_json(MetadataRequest(topics=None), 9) == {
        "topics": None, "allowAutoTopicCreation": True, "includeClusterAuthorizedOperations": False,
        "includeTopicAuthorizedOperations": False}
    topic_id = uuid.UUID(int=1)
    node = request_log.message_json(MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(
        name="t", topic_id=topic_id)]), 10)
    assert node["topics"][0]["topicId"] == "AAAAAAAAAAAAAAAAAAAAAQ"     # Kafka's Uuid.toString


def test_secrets_are_hidden():
    scram = AlterUserScramCredentialsRequest(upsertions=[AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name="alice", mechanism=1, iterations=4096, salt=b"pepper", salted_password=b"hunter2-salted")])
    node = request_log.message_json(scram, 0)
    assert node["upsertions"][0] == {"name": "alice", "mechanism": 1, "iterations": 4096,
                                     "salt": "[hidden]", "saltedPassword": "[hidden]"}
    assert request_log.message_json(SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00secret"), 1) == \
        {"authBytes": "[hidden]"}
    token = request_log.message_json(CreateDelegationTokenResponse(hmac=b"mac", token_id="id"), 2)
    assert token["hmac"] == "[hidden]" and token["tokenId"] == "id"


def test_config_values_are_logged_as_kafka_config_loggable_value(request_lines):
    """A password or unknown broker key, an unknown topic key and any other resource's
    value are [hidden]; broker loggers' levels are not."""
    request_log.REQUEST_LOGGER.setLevel(logging.DEBUG)
    Res, Cfg = IncrementalAlterConfigsRequest.AlterConfigsResource, IncrementalAlterConfigsRequest.AlterableConfig
    request = IncrementalAlterConfigsRequest(resources=[
        Res(resource_type=4, resource_name="0", configs=[
            Cfg(name="ssl.keystore.password", config_operation=0, value="s3cret"),
            Cfg(name="log.cleaner.threads", config_operation=0, value="2"),
            Cfg(name="no.such.key", config_operation=0, value="x")]),
        Res(resource_type=2, resource_name="t", configs=[
            Cfg(name="retention.ms", config_operation=0, value="1000"),
            Cfg(name="made.up", config_operation=0, value="y")]),
        Res(resource_type=8, resource_name="0", configs=[
            Cfg(name="kafka.request.logger", config_operation=0, value="DEBUG")])])
    conn, _ = connect()
    entry = request_log.request_entry(conn, _ctx(44, 1), request)
    values = [[c["value"] for c in r["configs"]] for r in entry["request"]["resources"]]
    assert values == [["[hidden]", "2", "[hidden]"], ["1000", "[hidden]"], ["DEBUG"]]
    legacy = AlterConfigsRequest(resources=[AlterConfigsRequest.AlterConfigsResource(
        resource_type=4, resource_name="0", configs=[AlterConfigsRequest.AlterableConfig(
            name="sasl.jaas.config", value="password=x")])])
    entry = request_log.request_entry(conn, _ctx(33, 1), legacy)
    assert entry["request"]["resources"][0]["configs"][0]["value"] == "[hidden]"


def test_a_sasl_login_is_not_logged():
    """Kafka's authenticator answers the login's requests itself; they never reach the log."""
    class Auth:
        complete = False
    conn, _ = connect()
    conn.authenticator = Auth()
    assert request_log.request_entry(conn, _ctx(18, 3), ApiVersionsRequest()) is None
    Auth.complete = True
    assert request_log.request_entry(conn, _ctx(36, 1), SaslAuthenticateRequest(auth_bytes=b"x")) is None
    assert request_log.request_entry(conn, _ctx(3, 9), MetadataRequest()) is not None


def test_header_v0_has_no_client_id():
    header = request_log.header_json(_ctx(7, 0))
    assert header == {"requestApiKey": 7, "requestApiVersion": 0, "correlationId": 1,
                      "requestApiKeyName": "CONTROLLED_SHUTDOWN"}


def test_camel_case_names_match_kafka_2_8_definitions():
    """Every field name of every 2.8 message survives snake_case -> camelCase, and every
    API key's name is ApiKeys'."""
    names = set()

    def walk(fields):
        for f in fields:
            names.add(f["name"])
            walk(f.get("fields", ()))
    for path in REFERENCE.glob("*.json"):
        spec = read_json(path)
        walk(spec["fields"])
        for struct in spec.get("commonStructs", ()):
            walk(struct["fields"])
    assert len(names) > 250
    for name in names:
        assert request_log.camel_case(snake_case(name)) == name[0].lower() + name[1:]
    assert [request_log.api_key_name(k) for k in (0, 1, 3, 18, 23, 36, 51, 56)] == [
        "PRODUCE", "FETCH", "METADATA", "API_VERSIONS", "OFFSET_FOR_LEADER_EPOCH", "SASL_AUTHENTICATE",
        "ALTER_USER_SCRAM_CREDENTIALS", "ALTER_ISR"]


def _ctx(api_key: int, version: int):
    from kafkalike.broker.registry import RequestContext
    from tests.unit.broker_fakes import services
    return RequestContext(api_key, version, 1, "c", "127.0.0.1", services())


def test_a_conversion_that_fails_never_fails_the_request(request_lines, produce_handler, monkeypatch):
    request_log.REQUEST_LOGGER.setLevel(logging.DEBUG)
    real = request_log.message_json

    def fails_on_responses(message, version):
        if type(message).SCHEMA.type == "response":
            raise TypeError("unexpected value")
        return real(message, version)
    monkeypatch.setattr(request_log, "message_json", fails_on_responses)
    conn, transport = connect()
    conn.dataReceived(frame(0, 8, 2, produce_request()))
    conn.dataReceived(frame(3, 9, 3, MetadataRequest(topics=[])))
    assert transport.value() and not transport.disconnecting
    assert len(request_lines.lines) == 2
    assert all(line.startswith("Could not write the ") for line in request_lines.lines)
