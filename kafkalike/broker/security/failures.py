"""The broker's line for a connection that failed to authenticate, as Kafka 2.8 writes it.

Kafka's Selector logs every AuthenticationException of a server connection at INFO, with
the SocketServer's log prefix: a TLS handshake that fails (no client certificate where
one is required, an untrusted one, no shared protocol or cipher, a plaintext client on
an SSL port) as "(SSL handshake failed)", a refused SASL login with the message the
client was sent, and "Failed re-authentication" when the connection had logged in before:

    [SocketServer listenerType=ZK_BROKER, nodeId=0] Failed authentication with /127.0.0.1 (SSL handshake failed)

logged by org.apache.kafka.common.network.Selector. The detail behind a refusal (which
user, what the SSL library said) goes to DEBUG, as Kafka's own DEBUG lines carry it.
"""
from __future__ import annotations

import logging

log = logging.getLogger("org.apache.kafka.common.network.Selector")

SSL_HANDSHAKE_FAILED = "SSL handshake failed"


def socket_server_prefix(broker_id: int) -> str:
    """The SocketServer's LogContext prefix, which its processors' selectors log with."""
    return f"[SocketServer listenerType=ZK_BROKER, nodeId={broker_id}] "


def failed_authentication(prefix: str, client: str, reason: str, *, reauthentication: bool = False) -> None:
    """`client` as Java prints the socket's InetAddress ("/127.0.0.1"); `reason` the
    AuthenticationException's message."""
    log.info("%sFailed %sauthentication with %s (%s)", prefix, "re-" if reauthentication else "", client, reason)
