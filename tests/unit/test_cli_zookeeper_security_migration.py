"""zookeeper-security-migration's refusals, before it connects anywhere: no JAAS login, a
JAAS file without a Client section, a missing or unknown --zookeeper.acl, ZooKeeper TLS."""
from __future__ import annotations

import io

from kafkalike.cli.zookeeper_security_migration import main


def run(monkeypatch, kafka_opts: str, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setenv("KAFKA_OPTS", kafka_opts)
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_without_a_login_it_refuses_with_kafkas_lines(monkeypatch):
    code, out, err = run(monkeypatch, "", "--zookeeper.acl", "secure")
    assert code == 1 and out == ""
    assert err.startswith("ERROR: No JAAS configuration file has been specified and no TLS client certificate "
                          "has been specified. Please make sure that you set the system property "
                          "java.security.auth.login.config")
    assert err.endswith("java.lang.IllegalArgumentException: Incorrect configuration\n"
                        "\tat kafka.admin.ZkSecurityMigrator$.run(ZkSecurityMigrator.scala)\n")


def test_a_jaas_file_without_a_client_section_is_not_security(monkeypatch, tmp_path):
    jaas = tmp_path / "jaas.conf"
    jaas.write_text('KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required '
                    'username="a" password="b"; };\n')
    code, out, _ = run(monkeypatch, f"-Djava.security.auth.login.config={jaas}", "--zookeeper.acl", "secure")
    assert code == 1
    assert out == f"ERROR: Security isn't enabled, most likely the file isn't set properly: {jaas}\n"


def test_the_acl_mode_must_be_secure_or_unsecure(monkeypatch, tmp_path):
    jaas = tmp_path / "jaas.conf"
    jaas.write_text('Client { org.apache.zookeeper.server.auth.DigestLoginModule required '
                    'username="kafka" password="s"; };\n')
    for argv in (("--zookeeper.connect", "z:2181"), ("--zookeeper.acl", "maybe")):
        code, _, err = run(monkeypatch, f"-Djava.security.auth.login.config={jaas}", *argv)
        assert code == 1 and err.startswith("ZooKeeper Migration Tool Help.")
        assert "--zookeeper.acl <String>" in err


def test_zookeeper_over_tls_is_refused_clearly(monkeypatch):
    code, _, err = run(monkeypatch, "", "--zookeeper.acl", "secure", "--zk-tls-config-file", "/etc/zk-tls")
    assert code == 1 and "ZooKeeper over TLS (--zk-tls-config-file) is not supported by kafkalike" in err
