"""The broker's own TLS connections (common/outbound.py with broker/security/tls.py): the
peer's chain is checked against the truststore, and with
ssl.endpoint.identification.algorithm=https its certificate must name the address dialed.
The peer here is a TLS server on loopback made from the test's own certificates; the broker
certificate names 127.0.0.1 and localhost, not 127.0.0.2."""
from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import protocol, reactor
from twisted.protocols.tls import TLSMemoryBIOFactory

from kafkalike.broker.security.tls import ClientTLS, ServerTLS, build_context
from kafkalike.common import outbound
from kafkalike.protocol.api import encode_response, size_prefixed
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from tests.security_certs import PASSWORD, make_pki


class _Answer(protocol.Protocol):
    """Answers every frame with an empty ApiVersions v0 response of the same correlation id."""

    def dataReceived(self, data: bytes) -> None:
        corr = int.from_bytes(data[8:12], "big", signed=True)
        chunks = encode_response(18, 0, corr, ApiVersionsResponse(error_code=0, api_keys=[]))
        self.transport.writeSequence(size_prefixed(chunks))


@pytest.fixture
def tls_server(tmp_path):
    pki = make_pki(tmp_path)
    server_keys = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.path("broker.p12"),
                   "ssl.keystore.password": PASSWORD, "ssl.enabled.protocols": ("TLSv1.2", "TLSv1.3"),
                   "ssl.cipher.suites": ()}
    factory = TLSMemoryBIOFactory(ServerTLS(build_context(server_keys.get, server=True)), False,
                                  protocol.Factory.forProtocol(_Answer))
    port = reactor.listenTCP(0, factory, interface="0.0.0.0")
    client_keys = {"ssl.truststore.type": "PEM", "ssl.truststore.location": pki.path("ca.pem"),
                   "ssl.enabled.protocols": ("TLSv1.2", "TLSv1.3"), "ssl.cipher.suites": ()}
    yield port.getHost().port, build_context(client_keys.get, server=False)
    port.stopListening()


async def _ask(host: str, port: int, context, verify_host: bool):
    security = outbound.ClientSecurity("SSL", tls=lambda h: ClientTLS(context, h, verify_host))
    conn = await outbound.connect(host, port, "test", reactor, timeout=5, security=security)
    try:
        return await conn.request(ApiVersionsRequest(), 0)
    finally:
        conn.close()


@pytest_twisted.ensureDeferred
async def test_the_certificate_must_name_the_address_dialed(tls_server):
    port, context = tls_server
    assert (await _ask("127.0.0.1", port, context, verify_host=True)).error_code == 0
    with pytest.raises(outbound.ConnectionLost, match="certificate verify failed"):
        await _ask("127.0.0.2", port, context, verify_host=True)
    # ssl.endpoint.identification.algorithm empty: only the chain is checked.
    assert (await _ask("127.0.0.2", port, context, verify_host=False)).error_code == 0
