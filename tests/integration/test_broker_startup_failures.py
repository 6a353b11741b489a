"""A broker that cannot start says why in one line and exits 1, leaving nothing half-claimed.

Kafka prints "Fatal error during KafkaServer startup. Prepare to shutdown" with the cause
for a port in use, an unreachable ZooKeeper or a broker.id another broker holds, and
writes meta.properties only after it has registered, so fixing the config is enough.
"""
from __future__ import annotations

from kafkalike.lab.cluster import BrokerProcess
from kafkalike.lab.zookeeper import free_ports

FATAL = "Fatal error during KafkaServer startup. Prepare to shutdown: "


def failed_start(process: BrokerProcess) -> str:
    """Start, expect exit status 1, and return the fatal line from server.log."""
    process.start()
    assert process.proc.wait(60) == 1, process.log_tail()
    out = (process.app_log_dir / "kafkaServer.out").read_text(errors="replace")
    assert "Traceback" not in out, out
    fatal = [line for line in (process.app_log_dir / "server.log").read_text().splitlines() if FATAL in line]
    assert len(fatal) == 1, process.log_tail()
    assert "Traceback" not in (process.app_log_dir / "server.log").read_text()
    return fatal[0].split(FATAL, 1)[1]


def test_a_broker_id_already_registered_is_one_line_and_claims_no_log_dir(fresh_broker, zk_chroot, shm_path):
    clash = BrokerProcess(fresh_broker.broker_id, zk_chroot, shm_path)
    cause = failed_start(clash)
    assert "NodeExistsException" in cause and f"/brokers/ids/{fresh_broker.broker_id}" in cause
    assert not (clash.log_dir / "meta.properties").exists()
    # The operator fixes broker.id; the same log dir now starts.
    fixed = BrokerProcess(fresh_broker.broker_id + 1, zk_chroot, shm_path)
    fixed.start()
    try:
        fixed.wait_ready(60)
        assert f"broker.id={fresh_broker.broker_id + 1}" in (fixed.log_dir / "meta.properties").read_text()
    finally:
        fixed.kill()


def test_a_port_in_use_is_one_line(fresh_broker, zk_chroot, shm_path):
    taken = BrokerProcess(7, zk_chroot, shm_path, port=fresh_broker.port)
    cause = failed_start(taken)
    assert cause.startswith(f"org.apache.kafka.common.KafkaException: Socket server failed to bind to "
                            f"127.0.0.1:{fresh_broker.port}: Address already in use")


def test_an_unreachable_zookeeper_is_one_line(shm_path):
    [nobody] = free_ports(1)
    lonely = BrokerProcess(0, f"127.0.0.1:{nobody}", shm_path, overrides={"zookeeper.connection.timeout.ms": "2000"})
    cause = failed_start(lonely)
    assert cause.startswith("kafka.zookeeper.ZooKeeperClientTimeoutException: ")
