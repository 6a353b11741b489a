"""The listener over an in-memory transport: framing, ordering, bad input."""
from __future__ import annotations

import struct

from twisted.internet import defer
from twisted.internet.testing import StringTransport

from kafkalike.broker.network import KafkaServerFactory
from kafkalike.broker.registry import HANDLERS, Registration, load_handlers
from kafkalike.protocol.api import APIS, decode_response, encode_request
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.metadata import MetadataRequest, MetadataResponse
from tests.unit.broker_fakes import services

load_handlers()


def connect(max_request=1 << 20):
    conn = KafkaServerFactory(services(), max_request).buildProtocol(None)
    transport = StringTransport()
    conn.makeConnection(transport)
    return conn, transport


def frame(api_key, version, corr, body, client_id="test"):
    data = encode_request(api_key, version, corr, client_id, body)
    return struct.pack(">i", len(data)) + data


def responses(transport, *expect):
    """Split the transport's output into frames and decode them as expected."""
    data = transport.value()
    out = []
    for api_key, version in expect:
        size = struct.unpack(">i", data[:4])[0]
        out.append(decode_response(api_key, version, data[4:4 + size]))
        data = data[4 + size:]
    assert data == b""
    return out


def test_api_versions_byte_by_byte():
    conn, transport = connect()
    req = frame(18, 3, 7, ApiVersionsRequest(client_software_name="kcat", client_software_version="1.7.1"))
    for i in range(len(req)):
        conn.dataReceived(req[i:i + 1])
    [(corr, resp)] = responses(transport, (18, 3))
    assert corr == 7 and resp.error_code == 0
    served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert served[18] == (0, 3)
    assert all(lo == 0 for lo, _ in served.values())   # ranges start at 0, as 2.8's do


def test_api_versions_newer_than_ours_answers_v0_with_our_range():
    conn, transport = connect()
    # kafka-python 3.x opens with ApiVersions v4, which 2.8 does not have.
    body = struct.pack(">hhih", 18, 4, 11, 2) + b"kp" + b"\x00" + b"\x03kp\x043.0\x00"
    conn.dataReceived(struct.pack(">i", len(body)) + body)
    [(corr, resp)] = responses(transport, (18, 0))
    assert corr == 11 and resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert (18, 0, 3) in {(k.api_key, k.min_version, k.max_version) for k in resp.api_keys}


def test_invalid_software_name_is_invalid_request():
    conn, transport = connect()
    conn.dataReceived(frame(18, 3, 1, ApiVersionsRequest(client_software_name="bad name!",
                                                         client_software_version="1")))
    [(_, resp)] = responses(transport, (18, 3))
    assert resp.error_code == ErrorCode.INVALID_REQUEST


def test_unknown_api_key_closes_the_connection():
    conn, transport = connect()
    body = struct.pack(">hhih", 999, 0, 1, -1)
    conn.dataReceived(struct.pack(">i", len(body)) + body)
    assert transport.disconnecting and transport.value() == b""


def test_oversized_request_closes_the_connection():
    conn, transport = connect(max_request=100)
    conn.dataReceived(struct.pack(">i", 101) + b"x" * 10)
    assert transport.disconnecting


def test_malformed_body_closes_only_that_connection():
    conn, transport = connect()
    good = frame(18, 3, 1, ApiVersionsRequest(client_software_name="a", client_software_version="1"))
    body = good[4:-3]  # cut the body short
    conn.dataReceived(struct.pack(">i", len(body)) + body)
    assert transport.disconnecting
    other, t2 = connect()
    other.dataReceived(good)
    assert responses(t2, (18, 3))[0][1].error_code == 0


def test_responses_keep_request_order_while_a_handler_waits():
    pending = defer.Deferred()
    saved = HANDLERS.get(3)
    HANDLERS[3] = Registration(APIS[3], 0, 11, lambda ctx, req: pending,
                               lambda r, v, c: MetadataResponse())
    try:
        conn, transport = connect()
        conn.dataReceived(frame(3, 9, 1, MetadataRequest(topics=None)))
        conn.dataReceived(frame(18, 3, 2, ApiVersionsRequest(client_software_name="a",
                                                              client_software_version="1")))
        assert transport.value() == b""          # the ApiVersions answer waits its turn
        pending.callback(MetadataResponse(cluster_id="c"))
        (c1, r1), (c2, r2) = responses(transport, (3, 9), (18, 3))
        assert (c1, c2) == (1, 2) and r1.cluster_id == "c"
    finally:
        if saved:
            HANDLERS[3] = saved
        else:
            del HANDLERS[3]


def test_unsupported_version_gets_unsupported_version_error():
    from kafkalike.broker.registry import generic_error_response
    saved = HANDLERS[3]
    # Metadata served from v4 only: a v1 request is answered, with UNSUPPORTED_VERSION.
    HANDLERS[3] = Registration(APIS[3], 4, 11, lambda ctx, req: MetadataResponse(),
                               generic_error_response)
    try:
        conn, transport = connect()
        conn.dataReceived(frame(3, 1, 5, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])))
        [(corr, resp)] = responses(transport, (3, 1))
        assert resp.topics[0].error_code == ErrorCode.UNSUPPORTED_VERSION
    finally:
        HANDLERS[3] = saved


def test_a_handler_failing_later_is_answered_with_unknown_server_error():
    from kafkalike.broker.registry import generic_error_response
    saved = HANDLERS[3]
    HANDLERS[3] = Registration(APIS[3], 0, 11, lambda ctx, req: defer.fail(RuntimeError("boom")),
                               generic_error_response)
    try:
        conn, transport = connect()
        conn.dataReceived(frame(3, 9, 4, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])))
        [(corr, resp)] = responses(transport, (3, 9))
        assert corr == 4 and resp.topics[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert not transport.disconnecting
    finally:
        HANDLERS[3] = saved


def test_produces_after_an_appended_one_are_handled_at_once_and_answered_in_order():
    """An acks=all produce that waits for replication (its Deferred says `appended`) lets
    the connection's next produces be appended; a request of another kind waits for all of
    them; answers keep request order."""
    from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
    handled = []
    waits = {}

    def produce(ctx, req):
        handled.append(ctx.correlation_id)
        if ctx.correlation_id == 2:
            return ProduceResponse(responses=[])        # answered at once, behind 1
        d = waits[ctx.correlation_id] = defer.Deferred()
        d.appended = True
        return d

    saved = HANDLERS[0]
    HANDLERS[0] = Registration(APIS[0], 0, 9, produce, lambda r, v, c: ProduceResponse())
    try:
        conn, transport = connect()
        body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[])
        for corr in (1, 2, 3):
            conn.dataReceived(frame(0, 8, corr, body))
        conn.dataReceived(frame(18, 3, 4, ApiVersionsRequest(client_software_name="a", client_software_version="1")))
        assert handled == [1, 2, 3] and transport.value() == b""
        waits[3].callback(ProduceResponse(responses=[]))
        assert transport.value() == b""                    # 3 is ready, but 1 is not
        waits[1].callback(ProduceResponse(responses=[]))
        answers = responses(transport, (0, 8), (0, 8), (0, 8), (18, 3))
        assert [corr for corr, _ in answers] == [1, 2, 3, 4]
    finally:
        HANDLERS[0] = saved


def test_a_request_after_a_produce_that_is_not_appended_yet_waits():
    """A handler still working before its append (no `appended` mark) holds the next produce."""
    from kafkalike.protocol.messages.produce import ProduceRequest, ProduceResponse
    handled = []
    pending = defer.Deferred()

    def produce(ctx, req):
        handled.append(ctx.correlation_id)
        return pending if ctx.correlation_id == 1 else ProduceResponse(responses=[])

    saved = HANDLERS[0]
    HANDLERS[0] = Registration(APIS[0], 0, 9, produce, lambda r, v, c: ProduceResponse())
    try:
        conn, transport = connect()
        body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[])
        conn.dataReceived(frame(0, 8, 1, body) + frame(0, 8, 2, body))
        assert handled == [1]
        pending.callback(ProduceResponse(responses=[]))
        assert handled == [1, 2]
        assert [corr for corr, _ in responses(transport, (0, 8), (0, 8))] == [1, 2]
    finally:
        HANDLERS[0] = saved
