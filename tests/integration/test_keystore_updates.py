"""Rotating a listener's certificate on a running broker (KIP-226), as an operator does it:
AlterConfigs of listener.name.ssl.ssl.keystore.location for the broker, to a new file, or to
the path it already has once the file there was replaced. A renewed certificate (same
subject and names, same CA) is served to new connections at once, and the brokers' own TLS
connections carry on; one naming another host, or one the inter-broker truststore does not
trust, is refused with Kafka's reasons and changes nothing."""
from __future__ import annotations

import shutil
import socket
import ssl

import pytest
from cryptography import x509

from kafkalike.client.admin import AdminClient, AlterConfigOp, ConfigResource, KafkaAdminError, ResourceType
from kafkalike.client.admin_types import NewTopic
from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from kafkalike.protocol.errors import ErrorCode
from tests.security_certs import PASSWORD, make_pki
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

KEYSTORE = "listener.name.ssl.ssl.keystore.location"


def served_certificate(port: int, ca: str) -> x509.Certificate:
    context = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))


def certificate(path: str) -> x509.Certificate:
    with open(path, "rb") as handle:
        return x509.load_pem_x509_certificate(handle.read())


def test_a_renewed_keystore_is_served_at_once_and_incompatible_ones_are_refused(zk_chroot, shm_path):
    pki = make_pki(shm_path / "pki")
    live = str(shm_path / "pki" / "live.p12")         # the path the broker's config names
    shutil.copy(pki.path("broker.p12"), live)
    plain_port, ssl_port = free_ports(2)
    stores = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": live,
              "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PEM",
              "ssl.truststore.location": pki.path("ca.pem")}
    cluster = Cluster(zk_chroot, shm_path, 1, {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SSL://127.0.0.1:{ssl_port}",
        "inter.broker.listener.name": "SSL",
        **{f"listener.name.ssl.{k}": v for k, v in stores.items()}})
    cluster.brokers[0].port = plain_port
    ca = pki.path("ca.pem")
    try:
        cluster.start()
        assert served_certificate(ssl_port, ca) == certificate(pki.path("broker-cert.pem"))
        renewed = certificate(pki.path("broker-renewed-cert.pem"))
        broker = ConfigResource(ResourceType.BROKER, "0")
        with AdminClient({"bootstrap.servers": f"127.0.0.1:{plain_port}"}) as admin:
            def set_keystore(path: str) -> None:
                admin.incremental_alter_configs({broker: [AlterConfigOp(KEYSTORE, path)]})

            def refused(path: str, reason: str) -> None:
                with pytest.raises(KafkaAdminError) as failure:
                    set_keystore(path)
                assert failure.value.code == ErrorCode.INVALID_REQUEST and reason in failure.value.message
                assert served_certificate(ssl_port, ca) == renewed

            # The file replaced in place, then the key set to the path it already has.
            shutil.copy(pki.path("broker-renewed.p12"), live)
            set_keystore(live)
            wait_until(lambda: served_certificate(ssl_port, ca) == renewed, 10, "the renewed certificate")
            shutil.copy(pki.path("broker-renamed.p12"), live)
            refused(live, "Keystore DistinguishedName does not match")
            # New paths.
            refused(pki.path("broker-rogue.p12"), "not trusted by the truststore of the inter-broker listener SSL")
            set_keystore(pki.path("broker-renewed.p12"))     # what is served again, from another file
            described = {e.name: e.value for e in admin.describe_configs([broker])[broker]}
            assert described[KEYSTORE] == pki.path("broker-renewed.p12")
            # The controller reaches its broker over the SSL inter-broker listener: still fine.
            admin.create_topics([NewTopic("after-rotation", 1, 1)])
        log = cluster.brokers[0].server_log.read_text()
        assert log.count("Reloaded the keystore and truststore of listener SSL") == 2
    finally:
        cluster.kill()
