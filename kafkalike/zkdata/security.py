"""A secured ZooKeeper: SASL login of Kafka's ZooKeeper client, and the ACLs its znodes get.

Kafka 2.8 logs in to ZooKeeper with SASL when the JVM's login file
(-Djava.security.auth.login.config, given in KAFKA_OPTS) has a `Client` section
(zookeeper.sasl.clientconfig names another; -Dzookeeper.sasl.client=false turns it off).
The section's DigestLoginModule username and password log it in with DIGEST-MD5, the
mechanism ZooKeeper's own DigestLoginModule serves. With zookeeper.set.acl=true the
znodes it creates belong to that identity (ZooKeeper's CREATOR_ALL_ACL) and are readable
by anyone, except the sensitive ones (user and broker configs, delegation tokens: SCRAM
credentials and encoded passwords live there), which only their creator can read; a
broker asked for secure ACLs without a SASL login refuses to start, as Kafka's does.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Mapping

from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from kafkalike.common.jaas import parse_jaas_file

LOGIN_CONFIG = "java.security.auth.login.config"
SASL_CLIENT = "zookeeper.sasl.client"
CONTEXT_NAME = "zookeeper.sasl.clientconfig"
# ZkData.SensitiveRootPaths: /config/users, /config/brokers, /delegation_token.
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token")
OLD_CONSUMERS = "/consumers"    # kept open: old consumers of every user write under it


class ZkSecurityError(Exception):
    """The broker must not start: the message is Kafka's exception line."""


def system_properties(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The -Dname=value words of KAFKA_OPTS, the JVM system properties Kafka's scripts pass."""
    out = {}
    for word in shlex.split(env.get("KAFKA_OPTS", "")):
        if word.startswith("-D"):
            name, _, value = word[2:].partition("=")
            out[name] = value
    return out


def _sys_config_string(props: Mapping[str, str]) -> str:
    """JaasUtils.zkSecuritySysConfigString, for messages."""
    return (f"[{LOGIN_CONFIG}={props.get(LOGIN_CONFIG, 'null')}, "
            f"{SASL_CLIENT}={props.get(SASL_CLIENT, 'default:true')}, "
            f"{CONTEXT_NAME}={props.get(CONTEXT_NAME, 'default:Client')}]")


@dataclass(frozen=True)
class ZkSecurity:
    secure_acls: bool = False                    # zookeeper.set.acl
    sasl_login: tuple[str, str] | None = None    # DIGEST-MD5 username and password

    @classmethod
    def from_system(cls, set_acl: bool, env: Mapping[str, str] = os.environ) -> "ZkSecurity":
        """What KafkaServer.initZkClient decides from zookeeper.set.acl and the JVM's properties."""
        props = system_properties(env)
        login = sasl_login(props)
        if set_acl and login is None:
            raise ZkSecurityError(
                "java.lang.SecurityException: zookeeper.set.acl is true, but ZooKeeper client TLS configuration "
                "identifying at least zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and "
                "zookeeper.ssl.keystore.location was not present and the verification of the JAAS login file "
                f"failed {_sys_config_string(props)}")
        return cls(set_acl, login)

    @classmethod
    def for_tools(cls, env: Mapping[str, str] = os.environ) -> "ZkSecurity":
        """The tools' --zookeeper client: secure ACLs whenever it logs in with SASL, as
        TopicCommand and ConfigCommand create KafkaZkClient(isSecure = JaasUtils.isZkSaslEnabled)."""
        login = sasl_login(system_properties(env))
        return cls(login is not None, login)

    def kazoo_options(self) -> dict:
        if self.sasl_login is None:
            return {}
        username, password = self.sasl_login
        return {"sasl_options": {"mechanism": "DIGEST-MD5", "username": username, "password": password}}

    def acls(self, path: str) -> list:
        """ZkData.defaultAcls for a znode created at `path` (without the chroot)."""
        if not self.secure_acls or path == OLD_CONSUMERS:
            return list(OPEN_ACL_UNSAFE)
        if any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS):
            return list(CREATOR_ALL_ACL)
        return list(CREATOR_ALL_ACL) + list(READ_ACL_UNSAFE)


NO_SECURITY = ZkSecurity()


def sasl_login(props: Mapping[str, str]) -> tuple[str, str] | None:
    """JaasUtils.isZkSaslEnabled, and the credentials of the section it finds."""
    path = props.get(LOGIN_CONFIG)
    if not path:
        return None
    context = props.get(CONTEXT_NAME, "Client")
    try:
        with open(path, encoding="utf-8") as f:
            sections = parse_jaas_file(f.read())
    except (OSError, ValueError) as exc:
        raise ZkSecurityError("org.apache.kafka.common.KafkaException: Exception while loading Zookeeper JAAS "
                              f"login context {_sys_config_string(props)}: {exc}") from None
    modules = sections.get(context)
    if not modules:
        return None
    if props.get(SASL_CLIENT, "true").lower() != "true":
        raise ZkSecurityError("org.apache.kafka.common.KafkaException: Exception while determining if ZooKeeper "
                              f"is secure {_sys_config_string(props)}")
    options = modules[0].options
    if "username" not in options or "password" not in options:
        raise ZkSecurityError(f"org.apache.kafka.common.KafkaException: the {context} section of {path} has no "
                              "username and password for ZooKeeper's DIGEST-MD5 login")
    return options["username"], options["password"]
