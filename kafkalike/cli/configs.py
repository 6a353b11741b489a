"""kafka-configs: describe and alter the dynamic configs of topics, brokers, the broker
default, users, clients and ips, as Kafka 2.8's ConfigCommand.

Operators script against it, so the command line, the output lines and the exit codes
are 2.8's: `Dynamic configs for broker 0 are:` followed by `  key=value sensitive=false
synonyms={DYNAMIC_BROKER_CONFIG:key=value, ...}` lines (in the Java client's HashMap
order), `Completed updating config for broker 0.`, `Completed updating default config
for brokers in the cluster.`; a bad command line or a refused config is one line on
stderr (the exception's message) and exit 1; a failure inside the admin call is
`Error while executing config command with args '...'` and the exception, exit 1.

Two back ends, as in 2.8: --bootstrap-server (here) through the admin client (configs
through DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, quotas through
Describe/AlterClientQuotas, SCRAM credentials through Describe/AlterUserScramCredentials)
and the deprecated --zookeeper (configs_zookeeper), which writes the znodes itself and,
for brokers, only what 2.8 allows: throttle rates at any time, the rest only while the
broker (or, for the default, every broker) is down.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Sequence, TextIO

from kafkalike.cli import joptions
from kafkalike.cli.joptions import (ILLEGAL_ARGUMENT, Dialect, JavaError, Option, ParsedArgs, UsageError,
                                    VersionRequested)
from kafkalike.cli.tool_main import run_tool
from kafkalike.common.versions import KAFKA_COMMIT_ID, KAFKA_VERSION
from kafkalike.properties import load as load_properties

INVALID_CONFIGURATION = "org.apache.kafka.common.errors.InvalidConfigurationException"
CONFIG_EXCEPTION = "org.apache.kafka.common.config.ConfigException"
EXECUTION_EXCEPTION = "java.util.concurrent.ExecutionException"

TOPICS, CLIENTS, USERS, BROKERS, IPS = "topics", "clients", "users", "brokers", "ips"
BROKER_LOGGERS = "broker-loggers"
ZK_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS)                 # ConfigType.all
BROKER_TYPES = ZK_TYPES + (BROKER_LOGGERS,)
DEFAULT_NAME = ""                                                  # BrokerDefaultEntityName

# QuotaConfigs / DynamicConfig: the keys each entity type takes (and their types).
CLIENT_QUOTAS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG", "request_percentage": "DOUBLE",
                 "controller_mutation_rate": "DOUBLE"}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_MIN_ITERATIONS = 4096
DEFAULT_SCRAM_ITERATIONS = 4096
IP_QUOTAS = {"connection_creation_rate": "INT"}


def _valid_configs_text() -> str:
    from kafkalike.broker.dynamic_config import DYNAMIC_BROKER_KEYS
    from kafkalike.storage.config import CONFIG_KEYS
    nl = os.linesep

    def lines(names) -> str:
        return nl + nl.join("\t" + n for n in names) + nl
    return ("Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: "
            "'k1=v1,k2=[v1,v2,v2],k3=v3'. The following is a list of valid configurations: "
            f"For entity-type '{TOPICS}': " + lines(sorted(k.name for k in CONFIG_KEYS))
            + f"For entity-type '{BROKERS}': " + lines(sorted(DYNAMIC_BROKER_KEYS))
            + f"For entity-type '{USERS}': " + lines(sorted(list(CLIENT_QUOTAS) + list(SCRAM_MECHANISMS)))
            + f"For entity-type '{CLIENTS}': " + lines(sorted(CLIENT_QUOTAS))
            + f"For entity-type '{IPS}': " + lines(sorted(IP_QUOTAS))
            + f"Entity types '{USERS}' and '{CLIENTS}' may be specified together to update config for clients of a "
              "specific user.")


# ConfigCommandOptions extends CommandDefaultOptions: no abbreviations, jopt's exceptions
# caught by main (message on stderr, exit 1), single values where valueOf is called.
DIALECT = Dialect(error=JavaError, convert_at_parse=False, flag_values=False, single_value=True,
                  padded_help=True, help_paragraphs=True, abbreviations=False)

OPTIONS = joptions.options_table(
    Option("zookeeper", "DEPRECATED. The connection string for the zookeeper connection in the form host:port. "
           "Multiple URLS can be given to allow fail-over. Replaced by --bootstrap-server, REQUIRED unless "
           "--bootstrap-server is given.", "urls"),
    Option("bootstrap-server", "The Kafka server to connect to. This is required for describing and altering "
           "broker configs.", "server to connect to"),
    Option("command-config", "Property file containing configs to be passed to Admin Client. This is used only "
           "with --bootstrap-server option for describing and altering broker configs.",
           "command config property file"),
    Option("alter", "Alter the configuration for the entity."),
    Option("describe", "List configs for the given entity."),
    Option("all", "List all configs for the given topic, broker, or broker-logger entity (includes static "
           "configuration when the entity type is brokers)"),
    Option("entity-type", "Type of entity (topics/clients/users/brokers/broker-loggers/ips)", ""),
    Option("entity-name", "Name of entity (topic name/client id/user principal name/broker id/ip)", ""),
    Option("entity-default", "Default entity name for clients/users/brokers/ips (applies to corresponding entity "
           "type in command line)"),
    Option("add-config", _valid_configs_text(), ""),
    Option("add-config-file", "Path to a properties file with configs to add. See add-config for a list of valid "
           "configurations.", ""),
    Option("delete-config", "config keys to remove 'k1,k2'", ""),
    Option("force", "Suppress console prompts"),
    Option("topic", "The topic's name.", ""),
    Option("client", "The client's ID.", ""),
    Option("client-defaults", "The config defaults for all clients."),
    Option("user", "The user's principal name.", ""),
    Option("user-defaults", "The config defaults for all users."),
    Option("broker", "The broker's ID.", ""),
    Option("broker-defaults", "The config defaults for all brokers."),
    Option("broker-logger", "The broker's ID for its logger config.", ""),
    Option("ip-defaults", "The config defaults for all IPs."),
    Option("ip", "The IP address.", ""),
    Option("zk-tls-config-file", "Identifies the file where ZooKeeper client TLS connectivity properties are "
           "defined.  Any properties other than zookeeper.clientCnxnSocket, zookeeper.ssl.cipher.suites, "
           "zookeeper.ssl.client.enable, zookeeper.ssl.crl.enable, zookeeper.ssl.enabled.protocols, "
           "zookeeper.ssl.endpoint.identification.algorithm, zookeeper.ssl.keystore.location, "
           "zookeeper.ssl.keystore.password, zookeeper.ssl.keystore.type, zookeeper.ssl.ocsp.enable, "
           "zookeeper.ssl.protocol, zookeeper.ssl.truststore.location, zookeeper.ssl.truststore.password, "
           "zookeeper.ssl.truststore.type are ignored.", "ZooKeeper TLS configuration"),
    Option("help", "Print usage information."),
    Option("version", "Display Kafka version."),
)
ENTITY_FLAGS = (("topic", TOPICS), ("client", CLIENTS), ("user", USERS), ("broker", BROKERS),
                ("broker-logger", BROKER_LOGGERS), ("ip", IPS))
ENTITY_DEFAULT_FLAGS = (("client-defaults", CLIENTS), ("user-defaults", USERS), ("broker-defaults", BROKERS),
                        ("ip-defaults", IPS))


def _illegal(message: str) -> JavaError:
    return JavaError(ILLEGAL_ARGUMENT, message)


def format_help() -> str:
    return joptions.format_help(OPTIONS, DIALECT)


def parse_args(argv: Sequence[str]) -> ParsedArgs:
    return joptions.parse_args(OPTIONS, argv, DIALECT)


# -- what the command line names ----------------------------------------------------------


def entity_types(args: ParsedArgs) -> list[str]:
    """ConfigCommandOptions.entityTypes: --entity-type values, then the shortcut flags."""
    return args.all("entity-type") + [t for flag, t in ENTITY_FLAGS + ENTITY_DEFAULT_FLAGS if args.has(flag)]


def entity_names(args: ParsedArgs) -> list[str]:
    """ConfigCommandOptions.entityNames: one per --entity-name (its value) or --entity-default
    (""), in command-line order, then the shortcut flags' values and "" per defaults flag."""
    values = iter(args.all("entity-name"))
    names = [next(values, "") if spec == "entity-name" else DEFAULT_NAME
             for spec in args.specs() if spec in ("entity-name", "entity-default")]
    names += [args.value(flag) for flag, _ in ENTITY_FLAGS if args.has(flag)]
    names += [DEFAULT_NAME for flag, _ in ENTITY_DEFAULT_FLAGS if args.has(flag)]
    return names


def _valid_ip_entity(name: str) -> bool:
    import ipaddress
    import socket
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.gethostbyname(name)
        return True
    except OSError:
        return False


def check_args(args: ParsedArgs) -> None:
    """CommandLineUtils.printHelpAndExitIfNeeded, then ConfigCommandOptions.checkArgs, in order."""
    if not args.argv or args.has("help"):
        raise UsageError("This tool helps to manipulate and describe entity config for a topic, client, user, "
                         "broker or ip")
    if args.has("version"):
        raise VersionRequested()
    if sum(args.has(a) for a in ("alter", "describe")) != 1:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    for used, others in (("alter", ("describe",)), ("describe", ("alter", "add-config", "delete-config"))):
        if args.has(used):
            for other in others:
                if args.has(other):
                    raise UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"')
    types = entity_types(args)
    duplicates = [t for i, t in enumerate(types) if t in types[:i]]
    if duplicates:
        raise _illegal(f"Duplicate entity type(s) specified: {','.join(dict.fromkeys(duplicates))}")
    allowed, connect = (BROKER_TYPES, "--bootstrap-server") if args.has("bootstrap-server") else (ZK_TYPES,
                                                                                                  "--zookeeper")
    for t in types:
        if t not in allowed:
            raise _illegal(f"Invalid entity type {t}, the entity type must be one of {','.join(allowed)} with the "
                           f"{connect} argument")
    if not types:
        raise _illegal("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise _illegal(f"Only '{USERS}' and '{CLIENTS}' entity types may be specified together")
    flags = [flag for flag, _ in ENTITY_FLAGS + ENTITY_DEFAULT_FLAGS]
    if any(args.has(o) for o in ("entity-name", "entity-type", "entity-default")) and any(args.has(f) for f in flags):
        raise _illegal("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    names = entity_names(args)
    has_name = any(n != "" for n in names)
    has_default = any(n == "" for n in names)
    if not args.has("bootstrap-server") and not args.has("zookeeper"):
        raise _illegal("One of the required --bootstrap-server or --zookeeper arguments must be specified")
    if args.has("bootstrap-server") and args.has("zookeeper"):
        raise _illegal("Only one of --bootstrap-server or --zookeeper must be specified")
    if args.has("all") and args.has("zookeeper"):
        raise _illegal("--bootstrap-server must be specified for --all")
    if has_name and (BROKERS in types or BROKER_LOGGERS in types):
        for option in ("entity-name", "broker", "broker-logger"):
            if args.has(option):
                broker_id = args.value(option)
                if java_int(broker_id) is None:
                    raise _illegal(f"The entity name for {types[0]} must be a valid integer broker id, but it is: "
                                   f"{broker_id}")
    if has_name and IPS in types:
        for option in ("entity-name", "ip"):
            if args.has(option):
                ip = args.value(option)
                if ip != "<default>" and not _valid_ip_entity(ip):
                    raise _illegal(f"The entity name for {types[0]} must be a valid IP or resolvable host, but it "
                                   f"is: {ip}")
    if args.has("describe") and BROKER_LOGGERS in types and not has_name:
        raise _illegal(f"an entity name must be specified with --describe of {','.join(types)}")
    if args.has("alter"):
        if {USERS, CLIENTS, BROKERS, IPS} & set(types):
            if not has_name and not has_default:
                raise _illegal("an entity-name or default entity must be specified with --alter of users, clients, "
                               "brokers or ips")
        elif not has_name:
            raise _illegal(f"an entity name must be specified with --alter of {','.join(types)}")
        if args.has("add-config") and args.has("add-config-file"):
            raise _illegal("Only one of --add-config or --add-config-file must be specified")
        if not args.has("add-config") and not args.has("add-config-file") and not args.has("delete-config"):
            raise _illegal("At least one of --add-config, --add-config-file, or --delete-config must be specified "
                           "with --alter")


def java_int(text: str | None) -> int | None:
    """Integer.parseInt (String.toInt)."""
    if text is None or not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -2**31 <= value < 2**31 else None


# -- the configs to add and to delete ---------------------------------------------------------

_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def _java_split(text: str, pattern: str, limit: int = 0) -> list[str]:
    """String.split: with limit 0, trailing empty strings are dropped."""
    parts = re.split(pattern, text)
    if limit == 0:
        while len(parts) > 1 and parts[-1] == "":
            parts.pop()
    return parts


def configs_to_add(args: ParsedArgs, out: TextIO) -> dict[str, str]:
    """ConfigCommand.parseConfigsToBeAdded: --add-config-file, then --add-config pairs split on
    commas outside square brackets, brackets removed from the values."""
    props: dict[str, str] = {}
    if args.has("add-config-file"):
        path = args.value("add-config-file")
        try:
            props.update({k: str(v) for k, v in load_properties(path).items()})
        except OSError as error:
            raise JavaError("java.io.FileNotFoundException", f"{path} ({error.strerror or error})") from None
    if args.has("add-config"):
        pairs = [_java_split(item, r"\s*=\s*" + _OUTSIDE_BRACKETS, -1)
                 for item in _java_split(args.value("add-config"), "," + _OUTSIDE_BRACKETS)]
        if not all(len(pair) == 2 for pair in pairs):
            raise _illegal('requirement failed: Invalid entity config: all configs to be added must be in the '
                           'format "key=val".')
        for key, value in pairs:
            props[key.strip()] = re.sub(r"\[?\]?", "", value).strip()
    if "message.format.version" in props:
        out.write(f"WARNING: The configuration message.format.version={props['message.format.version']} is "
                  "specified. This configuration will be ignored if the version is newer than the "
                  "inter.broker.protocol.version specified in the broker.\n")
    return props


def configs_to_delete(args: ParsedArgs) -> list[str]:
    """--delete-config values, split on commas (withValuesSeparatedBy(',')), trimmed."""
    return [name.strip() for value in args.all("delete-config") for name in value.split(",")]


# -- the AdminClient back end ----------------------------------------------------------------


def _scala_set(names) -> str:
    return "Set(" + ", ".join(names) + ")"


def _java_double(value: float) -> str:
    from kafkalike.common.config_def import java_double
    return java_double(float(value))


class AdminClientConfigService:
    """ConfigCommand's processCommand: everything through the admin client."""

    def __init__(self, args: ParsedArgs, out: TextIO) -> None:
        from kafkalike.client.admin import AdminClient
        self.args = args
        self.out = out
        config: dict[str, str] = {}
        if args.has("command-config"):
            path = args.value("command-config")
            try:
                config.update(load_properties(path))
            except OSError as error:
                raise JavaError("java.io.FileNotFoundException", f"{path} ({error.strerror or error})") from None
        config["bootstrap.servers"] = args.value("bootstrap-server")
        try:
            self.admin = AdminClient(config)
        except ValueError as error:
            raise JavaError("org.apache.kafka.common.KafkaException", "Failed to create new KafkaAdminClient",
                            cause=JavaError(CONFIG_EXCEPTION, str(error))) from None

    def close(self) -> None:
        self.admin.close()

    def run(self) -> None:
        types, names = entity_types(self.args), entity_names(self.args)
        if self.args.has("alter") and len(types) != len(names):
            raise _illegal("An entity name must be specified for every entity type")
        if self.args.has("alter"):
            self.alter(types, names)
        else:
            self.describe(types, names)

    # admin calls: what Java's futures report as ExecutionException
    def _call(self, fn, *a, **kw):
        from kafkalike.client.admin import KafkaAdminError
        try:
            return fn(*a, **kw)
        except KafkaAdminError as error:
            raise JavaError(EXECUTION_EXCEPTION, f"{error.java_class}: {error.message}",
                            cause=JavaError(error.java_class, error.message)) from None

    # ------------------------------------------------------------ alter

    def alter(self, types: list[str], names: list[str]) -> None:
        from kafkalike.client.admin import AlterConfigOp, AlterConfigOpType, ConfigResource, ResourceType
        head_type, head_name = types[0], names[0]
        added = configs_to_add(self.args, self.out)
        deleted = configs_to_delete(self.args)
        if head_type == TOPICS:
            old = {e.name: e for e in self.resource_config(head_type, head_name, describe_all=False)}
            invalid = [k for k in deleted if k not in old]
            if invalid:
                raise JavaError(INVALID_CONFIGURATION, f"Invalid config(s): {','.join(invalid)}")
            ops = [AlterConfigOp(k, v, AlterConfigOpType.SET) for k, v in added.items()]
            ops += [AlterConfigOp(k, "", AlterConfigOpType.DELETE) for k in deleted]
            self._call(self.admin.incremental_alter_configs, {ConfigResource(ResourceType.TOPIC, head_name): ops})
        elif head_type == BROKERS:
            old = {e.name: e.value for e in self.resource_config(head_type, head_name, describe_all=False)}
            invalid = [k for k in deleted if k not in old]
            if invalid:
                raise JavaError(INVALID_CONFIGURATION, f"Invalid config(s): {','.join(invalid)}")
            entries = {**old, **added}
            for k in deleted:
                entries.pop(k, None)
            sensitive = [k for k, v in entries.items() if v is None]
            if sensitive:
                raise JavaError(INVALID_CONFIGURATION, "All sensitive broker config entries must be specified for "
                                                       f"--alter, missing entries: {_scala_set(sensitive)}")
            self._call(self.admin.alter_configs, {ConfigResource(ResourceType.BROKER, head_name): entries})
        elif head_type == BROKER_LOGGERS:
            loggers = [e.name for e in self.resource_config(head_type, head_name, describe_all=False)]
            invalid = [k for k in deleted if k not in loggers] + [k for k in added if k not in loggers]
            if invalid:
                raise JavaError(INVALID_CONFIGURATION, f"Invalid broker logger(s): {','.join(invalid)}")
            ops = [AlterConfigOp(k, v, AlterConfigOpType.SET) for k, v in added.items()]
            ops += [AlterConfigOp(k, "", AlterConfigOpType.DELETE) for k in deleted]
            self._call(self.admin.incremental_alter_configs,
                       {ConfigResource(ResourceType.BROKER_LOGGER, head_name): ops})
        elif head_type in (USERS, CLIENTS):
            self._alter_users_or_clients(types, names, added, deleted)
        elif head_type == IPS:
            unknown = [k for k in list(added) + deleted if k not in IP_QUOTAS]
            if unknown:
                raise _illegal(f"Only connection quota configs can be added for '{IPS}' using --bootstrap-server. "
                               f"Unexpected config names: {','.join(unknown)}")
            self._alter_quotas(types, names, added, deleted)
        else:
            raise _illegal(f"Unsupported entity type: {head_type}")
        if head_name:
            self.out.write(f"Completed updating config for {head_type[:-1]} {head_name}.\n")
        else:
            self.out.write(f"Completed updating default config for {head_type} in the cluster.\n")

    def _alter_users_or_clients(self, types, names, added, deleted) -> None:
        quota_add = [k for k in added if k in CLIENT_QUOTAS]
        scram_add = {k: v for k, v in added.items() if k in SCRAM_MECHANISMS}
        unknown_add = [k for k in added if k not in CLIENT_QUOTAS and k not in SCRAM_MECHANISMS]
        quota_delete = [k for k in deleted if k in CLIENT_QUOTAS]
        scram_delete = [k for k in deleted if k in SCRAM_MECHANISMS]
        unknown_delete = [k for k in deleted if k not in CLIENT_QUOTAS and k not in SCRAM_MECHANISMS]
        if types[0] == CLIENTS or len(types) == 2:
            if unknown_add or scram_add:
                raise _illegal(f"Only quota configs can be added for '{CLIENTS}' using --bootstrap-server. "
                               f"Unexpected config names: {_scala_set(unknown_add + list(scram_add))}")
            if unknown_delete or scram_delete:
                raise _illegal(f"Only quota configs can be deleted for '{CLIENTS}' using --bootstrap-server. "
                               f"Unexpected config names: {_scala_set(unknown_delete + scram_delete)}")
        else:
            if unknown_add:
                raise _illegal(f"Only quota and SCRAM credential configs can be added for '{USERS}' using "
                               f"--bootstrap-server. Unexpected config names: {_scala_set(unknown_add)}")
            if unknown_delete:
                raise _illegal(f"Only quota and SCRAM credential configs can be deleted for '{USERS}' using "
                               f"--bootstrap-server. Unexpected config names: {_scala_set(unknown_delete)}")
            if scram_add or scram_delete:
                if any(n == "" for n in names):
                    raise _illegal("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                                   "Credentials using --bootstrap-server.")
                if quota_add or quota_delete:
                    raise _illegal(f"Cannot alter both quota and SCRAM credential configs simultaneously for "
                                   f"'{USERS}' using --bootstrap-server.")
        if quota_add or quota_delete:
            self._alter_quotas(types, names, added, deleted)
        else:
            self._alter_scram(names[0], scram_add, scram_delete)

    def _alter_scram(self, user: str, added: dict[str, str], deleted: list[str]) -> None:
        upserts = []
        for mechanism, text in added.items():
            match = re.fullmatch(r"(?:iterations=(-?[0-9]*),)?password=(.*)", text, re.DOTALL)
            if match is None:
                raise _illegal(f"Invalid credential property {mechanism}={text}")
            iterations = (int(match.group(1)) if match.group(1) not in (None, "", "-1")
                          else DEFAULT_SCRAM_ITERATIONS)
            if iterations < SCRAM_MIN_ITERATIONS:
                raise _illegal(f"Iterations {iterations} is less than the minimum {SCRAM_MIN_ITERATIONS} required "
                               f"for {mechanism}")
            upserts.append((user, mechanism, iterations, match.group(2)))
        results = self._call(self.admin.alter_user_scram_credentials, upserts, [(user, m) for m in deleted])
        for error in results.values():
            if error is not None:
                raise JavaError(EXECUTION_EXCEPTION, f"{error.java_class}: {error.message}",
                                cause=JavaError(error.java_class, error.message))

    def _quota_entity(self, types, names):
        kinds = {USERS: "user", CLIENTS: "client-id", IPS: "ip"}
        return tuple((kinds[t], n if n else None) for t, n in zip(types, names))

    def _alter_quotas(self, types, names, added, deleted) -> None:
        if len(types) != len(names):
            raise _illegal("Exactly one entity name must be specified for every entity type")
        described = self._describe_quotas(types, names)
        old = next(iter(described.values()), {})
        invalid = [k for k in deleted if k not in old]
        if invalid:
            raise JavaError(INVALID_CONFIGURATION, f"Invalid config(s): {','.join(invalid)}")
        ops: dict[str, float | None] = {}
        for key, value in added.items():
            try:
                ops[key] = float(value)
            except ValueError:
                raise _illegal(f"Cannot parse quota configuration value for {key}: {value}") from None
        for key in deleted:
            ops[key] = None
        results = self._call(self.admin.alter_client_quotas, [(self._quota_entity(types, names), ops)])
        for error in results.values():
            if error is not None:
                raise JavaError(EXECUTION_EXCEPTION, f"{error.java_class}: {error.message}",
                                cause=JavaError(error.java_class, error.message))

    # ------------------------------------------------------------ describe

    def describe(self, types: list[str], names: list[str]) -> None:
        head = types[0]
        if head in (TOPICS, BROKERS, BROKER_LOGGERS):
            self._describe_resources(head, names[0] if names else None, self.args.has("all"))
        elif head in (USERS, CLIENTS):
            self._print_quotas(types, names)
            if CLIENTS not in types and "" not in names:
                found = self._call(self.admin.describe_user_scram_credentials, names or None)
                for user, info in found.items():
                    if isinstance(info, list):
                        text = ", ".join(f"{m}=iterations={i}" for m, i in info)
                        self.out.write(f"SCRAM credential configs for user-principal '{user}' are {text}\n")
                    else:
                        self.out.write(f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                                       f"{info.java_class.rsplit('.', 1)[-1]}: {info.message}\n")
        elif head == IPS:
            self._print_quotas(types, names)
        else:
            raise _illegal(f"Invalid entity type: {head}")

    def _describe_resources(self, entity_type: str, name: str | None, describe_all: bool) -> None:
        from kafkalike.zkdata.kafka_json import java_hash_map_order
        if name is not None:
            entities = [name]
        elif entity_type == TOPICS:
            topics = [t.name for t in self._call(self.admin.list_topics, include_internal=True)]
            entities = java_hash_map_order(topics)
        else:
            entities = [str(b.id) for b in self._call(self.admin.describe_cluster).brokers] + [DEFAULT_NAME]
        for entity in entities:
            if entity == DEFAULT_NAME:
                self.out.write(f"Default configs for {entity_type} in the cluster are:\n")
            else:
                self.out.write(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {entity} "
                               "are:\n")
            for e in self.resource_config(entity_type, entity, describe_all, include_synonyms=True):
                synonyms = ", ".join(f"{s.source.name}:{s.name}={_null(s.value)}" for s in e.synonyms)
                self.out.write(f"  {e.name}={_null(e.value)} sensitive={'true' if e.is_sensitive else 'false'} "
                               f"synonyms={{{synonyms}}}\n")

    def resource_config(self, entity_type: str, name: str, describe_all: bool, include_synonyms: bool = False):
        """ConfigCommand.getResourceConfig: the entries, only the dynamic ones unless
        describe_all, in the order Java's Config (a HashMap) hands them out."""
        from kafkalike.client.admin import ConfigResource, ConfigSource, ResourceType
        from kafkalike.common.topics import InvalidTopicName, validate
        from kafkalike.zkdata.kafka_json import java_hash_map_order
        if entity_type == TOPICS:
            if name:
                try:
                    validate(name)
                except InvalidTopicName as error:
                    raise JavaError("org.apache.kafka.common.errors.InvalidTopicException", str(error)) from None
            resource, wanted = ConfigResource(ResourceType.TOPIC, name), ConfigSource.DYNAMIC_TOPIC_CONFIG
        elif entity_type == BROKERS:
            if name == DEFAULT_NAME:
                wanted = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            else:
                if java_int(name) is None:
                    raise _illegal(f"The entity name for {entity_type} must be a valid integer broker id, found: "
                                   f"{name}")
                wanted = ConfigSource.DYNAMIC_BROKER_CONFIG
            resource = ConfigResource(ResourceType.BROKER, name)
        elif entity_type == BROKER_LOGGERS:
            if name and java_int(name) is None:
                raise _illegal(f"The entity name for {entity_type} must be a valid integer broker id, found: {name}")
            resource, wanted = ConfigResource(ResourceType.BROKER_LOGGER, name), None
        else:
            raise _illegal(f"Invalid entity type: {entity_type}")
        entries = self._call(self.admin.describe_configs, [resource], include_synonyms=include_synonyms)[resource]
        by_name = {e.name: e for e in entries}
        ordered = [by_name[n] for n in java_hash_map_order([e.name for e in entries])]
        return [e for e in ordered if describe_all or wanted is None or e.source == wanted]

    def _describe_quotas(self, types, names):
        from kafkalike.client.admin import AdminClient
        kinds = {USERS: "user", CLIENTS: "client-id", IPS: "ip"}
        components = []
        for i, t in enumerate(types):
            if t not in kinds:
                raise _illegal(f"Unexpected entity type {t}")
            name = names[i] if i < len(names) else AdminClient.QUOTA_MATCH_ANY
            components.append((kinds[t], None if name == "" else name))
        if len(names) > len(types):
            raise _illegal("More entity names specified than entity types")
        return self._call(self.admin.describe_client_quotas, components, strict=True)

    def _print_quotas(self, types, names) -> None:
        from kafkalike.zkdata.kafka_json import java_hash_map_order
        labels = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
        for entity, values in self._describe_quotas(types, names).items():
            parts = dict(entity)
            described = []
            for kind in ("user", "client-id", "ip"):
                if kind in parts:
                    described.append(f"{labels[kind]} '{parts[kind]}'" if parts[kind] is not None
                                     else f"the default {labels[kind]}")
            text = ", ".join(f"{k}={_java_double(values[k])}" for k in java_hash_map_order(list(values)))
            self.out.write(f"Quota configs for {', '.join(described)} are {text}\n")


def _null(value: str | None) -> str:
    return "null" if value is None else value


# -- main ------------------------------------------------------------------------------------


def run(args: ParsedArgs, argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """ConfigCommand.main after the option checks, with its two catch clauses."""
    service = None
    try:
        with joptions.tools_logging(err, joptions.ADMIN_LOGGERS):
            if args.has("zookeeper"):
                from kafkalike.cli.configs_zookeeper import ZookeeperConfigService
                out.write("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.\n")
                out.write("Use --bootstrap-server instead to specify a broker to connect to.\n")
                service = ZookeeperConfigService(args, out)
            else:
                service = AdminClientConfigService(args, out)
            service.run()
        return 0
    except JavaError as error:
        out.flush()
        if error.java_class in (ILLEGAL_ARGUMENT, INVALID_CONFIGURATION) or error.java_class.startswith("joptsimple."):
            err.write(f"{error.message}\n")
        else:
            err.write(f"Error while executing config command with args '{' '.join(argv)}'\n{error.render()}\n")
        return 1
    finally:
        if service is not None:
            service.close()


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
        check_args(args)
    except VersionRequested:
        out.write(f"{KAFKA_VERSION} (Commit:{KAFKA_COMMIT_ID})\n")
        return 0
    except UsageError as error:
        err.write(f"{error}\n{format_help()}")
        return 1
    except JavaError as error:          # jopt's exceptions and checkArgs': the message, exit 1
        err.write(f"{error.message}\n")
        return 1
    try:
        return run(args, argv, out, err)
    finally:
        out.flush()


if __name__ == "__main__":
    run_tool(main)
