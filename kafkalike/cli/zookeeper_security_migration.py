"""zookeeper-security-migration: set the ACLs of Kafka's znodes for (or against) ZooKeeper
authentication, as Kafka 2.8's ZkSecurityMigrator.

The procedure it belongs to (docs/security.md): brokers log in to ZooKeeper with SASL, are
restarted with zookeeper.set.acl=true so that what they create from then on is theirs, and
this tool makes what they created before theirs too: with --zookeeper.acl=secure every
znode under Kafka's roots (ZkData.SecureRootPaths, and the chroot itself) gets the creator's
full rights and world READ, or the creator's rights alone under the sensitive roots
(/config/users, /config/brokers, /delegation_token); --zookeeper.acl=unsecure opens them
all again. The tool logs in with the Client section of the JAAS file KAFKA_OPTS names
(-Djava.security.auth.login.config), whose identity becomes the znodes' owner; without one
it refuses, as Kafka's does. ZooKeeper over TLS (--zk-tls-config-file) is not supported.

Each level of the trees is done in one pipelined round of requests, so a cluster with many
partitions takes a few round trips per level, not one per znode.
"""
from __future__ import annotations

import sys
from typing import Sequence, TextIO

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafkalike.cli import command_default
from kafkalike.cli.joptions import ILLEGAL_ARGUMENT, JavaError, Option, UsageError
from kafkalike.cli.tool_main import run_tool
from kafkalike.cli.zookeeper_tool import ZooKeeperTool
from kafkalike.zkdata.security import LOGIN_CONFIG, ZkSecurity, ZkSecurityError, sasl_login, system_properties
from kafkalike.zkdata.znodes import ControllerZNode, SECURE_ROOT_PATHS

USAGE = ("ZooKeeper Migration Tool Help. This tool updates the ACLs of znodes as part of the process of setting "
         "up ZooKeeper authentication.")
TLS_OPTION = "zk-tls-config-file"
OPTIONS = command_default.with_defaults(
    Option("zookeeper.acl", "Indicates whether to make the Kafka znodes in ZooKeeper secure or unsecure. The "
           "options are 'secure' and 'unsecure'", ""),
    Option("zookeeper.connect", "Sets the ZooKeeper connect string (ensemble). This parameter takes a "
           "comma-separated list of host:port pairs.", "", default="localhost:2181"),
    Option("zookeeper.session.timeout", "Sets the ZooKeeper session timeout.", "", "Integer", default="30000"),
    Option("zookeeper.connection.timeout", "Sets the ZooKeeper connection timeout.", "", "Integer",
           default="30000"),
    Option("enable.path.check", "Checks if all the root paths exist in ZooKeeper before migration. If not, exit "
           "the command."),
    Option(TLS_OPTION, "Identifies the file where ZooKeeper client TLS connectivity properties are defined.  Any "
           "properties other than zookeeper.clientCnxnSocket, zookeeper.ssl.cipher.suites, "
           "zookeeper.ssl.client.enable, zookeeper.ssl.crl.enable, zookeeper.ssl.enabled.protocols, "
           "zookeeper.ssl.endpoint.identification.algorithm, zookeeper.ssl.keystore.location, "
           "zookeeper.ssl.keystore.password, zookeeper.ssl.keystore.type, zookeeper.ssl.ocsp.enable, "
           "zookeeper.ssl.protocol, zookeeper.ssl.truststore.location, zookeeper.ssl.truststore.password, "
           "zookeeper.ssl.truststore.type are ignored.", "ZooKeeper TLS configuration"),
)
NO_LOGIN = ("No JAAS configuration file has been specified and no TLS client certificate has been specified. "
            f"Please make sure that you set the system property {LOGIN_CONFIG} or provide a ZooKeeper client TLS "
            f"configuration via --{TLS_OPTION} <filename> identifying at least zookeeper.ssl.client.enable, "
            "zookeeper.clientCnxnSocket, and zookeeper.ssl.keystore.location")


class Migrator:
    """ZkSecurityMigrator.run on a started session: the chroot, then each root's tree."""

    def __init__(self, zk: KazooClient, security: ZkSecurity, out: TextIO) -> None:
        self.zk = zk
        self.security = security
        self.out = out

    def run(self, path_check: bool) -> int:
        self._set_level(["/"], recurse=False)
        missing = [p for p in SECURE_ROOT_PATHS if self.zk.exists(p) is None]
        if missing:
            self.out.write(f"Warning: The following secure root paths do not exist in ZooKeeper: "
                           f"{','.join(missing)}\n")
            self.out.write("That might be due to an incorrect chroot is specified when executing the command.\n")
            if path_check:
                self.out.write("Exit the command.\n")
                return 1
        roots = []
        for path in SECURE_ROOT_PATHS:
            if path == ControllerZNode.PATH and self.zk.exists(path) is None:
                continue            # an ephemeral znode: not made here
            self.zk.ensure_path(path, acl=self.security.acls(path))
            roots.append(path)
        level = roots
        while level:
            level = self._set_level(level, recurse=True)
        return 0

    def _set_level(self, paths: list[str], recurse: bool) -> list[str]:
        """Set the ACLs of `paths` (and ask for their children) in one pipelined round; the children."""
        acls = [self.zk.set_acls_async(p, self.security.acls(p)) for p in paths]
        listings = [self.zk.get_children_async(p) for p in paths] if recurse else []
        for result in acls:
            try:
                result.get()
            except NoNodeError:
                pass        # gone meanwhile: legitimately deleted, as Kafka's tool warns
        children = []
        for path, listing in zip(paths, listings):
            try:
                children.extend(f"{path.rstrip('/')}/{child}" for child in listing.get())
            except NoNodeError:
                pass
        return children


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, USAGE)
        if opts.has(TLS_OPTION):
            raise JavaError(ILLEGAL_ARGUMENT, f"ZooKeeper over TLS (--{TLS_OPTION}) is not supported by kafkalike")
        props = system_properties()
        if not props.get(LOGIN_CONFIG):
            err.write(f"ERROR: {NO_LOGIN}\n")
            raise JavaError(ILLEGAL_ARGUMENT, "Incorrect configuration")
        try:
            login = sasl_login(props)
        except ZkSecurityError as error:
            java_class, _, message = str(error).partition(": ")
            raise JavaError(java_class, message) from None
        if login is None:
            out.write(f"ERROR: Security isn't enabled, most likely the file isn't set properly: {props[LOGIN_CONFIG]}\n")
            raise JavaError(ILLEGAL_ARGUMENT, "Incorrect configuration")
        mode = opts.value("zookeeper.acl")
        if mode not in ("secure", "unsecure"):
            raise UsageError(USAGE)
        security = ZkSecurity(mode == "secure", login)
        session = ZooKeeperTool(opts.value("zookeeper.connect") or "localhost:2181", out,
                                (opts.number("zookeeper.connection.timeout") or 30000) / 1000, security,
                                (opts.number("zookeeper.session.timeout") or 30000) / 1000)
        try:
            return Migrator(session.zk, security, out).run(opts.has("enable.path.check"))
        finally:
            session.close()

    def printing_stack_traces() -> int:
        """ZkSecurityMigrator.main catches what run throws, prints its stack trace, exits 1."""
        try:
            return body()
        except JavaError as error:
            out.flush()
            err.write(error.trace("kafka.admin.ZkSecurityMigrator$.run(ZkSecurityMigrator.scala)") + "\n")
            return 1

    return command_default.run_main(OPTIONS, printing_stack_traces, out, err)


if __name__ == "__main__":
    run_tool(main)
