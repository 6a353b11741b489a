"""kafka-acls.sh against a real ZooKeeper (--authorizer-properties), no broker: 2.8's output
blocks, the znodes and notifications it leaves, --remove and --list --principal, and its
usage errors (issue 16)."""
from __future__ import annotations

import io
import json

import pytest

from kafkalike.cli.acls import main


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_add_list_and_remove_print_as_kafka_2_8_and_write_its_znodes(zk_chroot, kazoo_client):
    zk = ["--authorizer-properties", f"zookeeper.connect={zk_chroot}"]
    code, out, _ = run(*zk, "--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
                       "--operation", "Read", "--topic", "orders", "--group", "billing")
    assert code == 0
    topic = "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`"
    group = "`ResourcePattern(resourceType=GROUP, name=billing, patternType=LITERAL)`"
    entries = (" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
               "\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW) \n\n")
    assert out == (f"Adding ACLs for resource {topic}: \n{entries}"
                   f"Adding ACLs for resource {group}: \n{entries}"
                   f"Current ACLs for resource {topic}: \n{entries}"
                   f"Current ACLs for resource {group}: \n{entries}")
    stored = json.loads(kazoo_client.get("/kafka-acl/Topic/orders")[0])
    assert sorted(a["principal"] for a in stored["acls"]) == ["User:alice", "User:bob"]
    assert [kazoo_client.get(f"/kafka-acl-changes/{c}")[0] for c in sorted(kazoo_client.get_children(
        "/kafka-acl-changes"))] == [b"TOPIC:orders", b"GROUP:billing"]

    code, out, _ = run(*zk, "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation",
                       "Write", "--topic", "ord", "--resource-pattern-type", "prefixed")
    assert code == 0 and json.loads(kazoo_client.get("/kafka-acl-extended/prefixed/Topic/ord")[0])["acls"] == [
        {"principal": "User:bob", "permissionType": "Deny", "operation": "Write", "host": "10.0.0.9"}]
    change = kazoo_client.get_children("/kafka-acl-extended-changes")[0]
    assert json.loads(kazoo_client.get(f"/kafka-acl-extended-changes/{change}")[0]) == {
        "version": 1, "resourceType": "TOPIC", "name": "ord", "patternType": "PREFIXED"}

    code, out, _ = run(*zk, "--list", "--topic", "orders", "--resource-pattern-type", "match", "--principal",
                       "User:bob")
    assert out.startswith("ACLs for principal `User:bob`\n")
    assert "(principal=User:bob, host=10.0.0.9, operation=WRITE, permissionType=DENY)" in out
    assert "User:alice" not in out

    code, out, _ = run(*zk, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
                       "--topic", "orders")
    assert code == 0
    assert [a["principal"] for a in json.loads(kazoo_client.get("/kafka-acl/Topic/orders")[0])["acls"]] == [
        "User:bob"]
    code, out, _ = run(*zk, "--remove", "--force", "--topic", "orders", "--group", "billing")
    assert code == 0 and not kazoo_client.exists("/kafka-acl/Topic/orders")
    assert not kazoo_client.exists("/kafka-acl/Group/billing")


@pytest.mark.parametrize("args,message", [
    (["--add", "--topic", "t"], "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
    (["--add", "--allow-principal", "User:a"], "You must provide at least one resource: --topic <topic> or --cluster "
                                                "or --group <group> or --delegation-token <Delegation Token ID>"),
    (["--list", "--producer", "--topic", "t"], 'Option "[list]" can\'t be used with option "[producer]"'),
    (["--add", "--remove", "--topic", "t"], "Command must include exactly one action: --list, --add, --remove. "),
    (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"],
     "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option "
     "should be specified."),
    (["--add", "--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "any"],
     "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls."),
])
def test_usage_errors_are_2_8s_and_connect_to_nothing(args, message):
    code, out, err = run("--authorizer-properties", "zookeeper.connect=127.0.0.1:1", *args)
    assert code == 1 and out == ""
    assert err.startswith(message + "\n") and "Option" in err


def test_a_broker_without_an_authorizer_answers_security_disabled(broker):
    code, out, _ = run("--bootstrap-server", broker.bootstrap, "--list")
    assert code == 1
    assert out.startswith("Error while executing ACL command: org.apache.kafka.common.errors."
                          "SecurityDisabledException: No Authorizer is configured on the broker\n"), out
    code, out, _ = run("--bootstrap-server", broker.bootstrap, "--add", "--allow-principal", "User:a", "--topic", "t")
    assert code == 1 and ("Error while executing ACL command: org.apache.kafka.common.errors."
                          "SecurityDisabledException: No Authorizer is configured on the broker.\n") in out
