"""kafka-acls: add, remove and list ACLs, as Kafka 2.8's AclCommand.

With --bootstrap-server the ACL APIs of a broker do the work (CreateAcls, DeleteAcls,
DescribeAcls, with the admin client's security from --command-config); otherwise
--authorizer-properties zookeeper.connect=... reads and writes the ACL znodes directly
and leaves the change notifications every broker follows, as the tool's
AuthorizerService does. Output is 2.8's: "Adding ACLs for resource `ResourcePattern(...)`:"
and "Current ACLs for resource ..." blocks with one tab-indented
"(principal=..., host=..., operation=..., permissionType=...)" line per entry (entries
sorted, where Java prints a hash set's order). --producer gives WRITE, DESCRIBE and CREATE
on the topics (and WRITE, DESCRIBE on transactional ids, IDEMPOTENT_WRITE on the cluster
with --idempotent), --consumer READ and DESCRIBE on the topics and READ on the groups.
"""
from __future__ import annotations

import sys
from typing import Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import JavaError, Option, UsageError
from kafkalike.cli.tool_main import run_tool
from kafkalike.common.acls import (CLUSTER_NAME, SUPPORTED_OPERATIONS, WILDCARD_HOST, AccessControlEntry, AclBinding,
                                   AclBindingFilter, AclOperation, AclPermissionType, AclResourceType, PatternType,
                                   ResourcePattern, camel_name, parse_enum)

HELP_MESSAGE = "This tool helps to manage acls on kafka."
NL = "\n"
_OPERATION_NAMES = [camel_name(o) for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY)]
OPTIONS = command_default.with_defaults(
    Option("bootstrap-server", "A list of host/port pairs to use for establishing the connection to the Kafka "
           "cluster. This list should be in the form host1:port1,host2:port2,... This config is required for acl "
           "management using admin client API.", "server to connect to"),
    Option("command-config", "A property file containing configs to be passed to Admin Client.", "command-config",
           optional_arg=True),
    Option("authorizer", "Fully qualified class name of the authorizer, defaults to "
           "kafka.security.authorizer.AclAuthorizer.", "authorizer"),
    Option("authorizer-properties", "REQUIRED: properties required to configure an instance of Authorizer. These "
           "are key=val pairs. For the default authorizer the example values are: zookeeper.connect=localhost:2181",
           "authorizer-properties"),
    Option("topic", "topic to which ACLs should be added or removed. A value of * indicates ACL should apply to "
           "all topics.", "topic"),
    Option("cluster", "Add/Remove cluster ACLs."),
    Option("group", "Consumer Group to which the ACLs should be added or removed. A value of * indicates the ACLs "
           "should apply to all groups.", "group"),
    Option("transactional-id", "The transactionalId to which ACLs should be added or removed. A value of * "
           "indicates the ACLs should apply to all transactionalIds.", "transactional-id"),
    Option("idempotent", "Enable idempotence for the producer. This should be used in combination with the "
           "--producer option. Note that idempotence is enabled automatically if the producer is authorized to a "
           "particular transactional-id."),
    Option("delegation-token", "Delegation token to which ACLs should be added or removed. A value of * indicates "
           "ACL should apply to all tokens.", "delegation-token"),
    Option("resource-pattern-type", "The type of the resource pattern or pattern filter. When adding acls, this "
           "should be a specific pattern type, e.g. 'literal' or 'prefixed'. When listing or removing acls, a "
           "specific pattern type can be used to list or remove acls from specific resource patterns, or use the "
           "filter values of 'any' or 'match', where 'any' will match any pattern type, but will match the resource "
           "name exactly, where as 'match' will perform pattern matching to list or remove all acls that affect the "
           "supplied resource(s). WARNING: 'match', when used in combination with the '--remove' switch, should be "
           "used with care.", "ANY|MATCH|LITERAL|PREFIXED", default="LITERAL"),
    Option("add", "Indicates you are trying to add ACLs."),
    Option("remove", "Indicates you are trying to remove ACLs."),
    Option("list", "List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster to "
           "specify a resource."),
    Option("operation", "Operation that is being allowed or denied. Valid operation names are: " + NL
           + NL.join("\t" + n for n in _OPERATION_NAMES) + NL, "", default="All"),
    Option("allow-principal", "principal is in principalType:name format. Note that principalType must be "
           "supported by the Authorizer being used. For example, User:* is the wild card indicating all users.",
           "allow-principal"),
    Option("deny-principal", "principal is in principalType:name format. By default anyone not added through "
           "--allow-principal is denied access. You only need to use this option as negation to already allowed "
           "set. Note that principalType must be supported by the Authorizer being used. For example if you wanted "
           "to allow access to all users in the system but not test-user you can define an ACL that allows access "
           "to User:* and specify --deny-principal=User:test@EXAMPLE.COM. AND PLEASE REMEMBER DENY RULES TAKES "
           "PRECEDENCE OVER ALLOW RULES.", "deny-principal"),
    Option("principal", "List ACLs for the specified principal. principal is in principalType:name format. Note "
           "that principalType must be supported by the Authorizer being used. Multiple --principal option can be "
           "passed.", "principal", optional_arg=True),
    Option("allow-host", "Host from which principals listed in --allow-principal will have access. If you have "
           "specified --allow-principal then the default for this option will be set to * which allows access from "
           "all hosts.", "allow-host"),
    Option("deny-host", "Host from which principals listed in --deny-principal will be denied access. If you have "
           "specified --deny-principal then the default for this option will be set to * which denies access from "
           "all hosts.", "deny-host"),
    Option("producer", "Convenience option to add/remove ACLs for producer role. This will generate ACLs that "
           "allows WRITE,DESCRIBE and CREATE on topic."),
    Option("consumer", "Convenience option to add/remove ACLs for consumer role. This will generate ACLs that "
           "allows READ,DESCRIBE on topic and READ on group."),
    Option("force", "Assume Yes to all queries and do not prompt."),
    Option("zk-tls-config-file", "Identifies the file where ZooKeeper client TLS connectivity properties for the "
           "authorizer are defined.", "Authorizer ZooKeeper TLS configuration"),
)

Op = AclOperation


def _check_args(opts) -> None:
    """AclCommandOptions.checkArgs, in its order."""
    def invalid_with(name: str, others: Sequence[str]) -> None:
        if opts.has(name):
            for other in others:
                if opts.has(other):
                    raise UsageError(f'Option "[{name}]" can\'t be used with option "[{other}]"')
    if opts.has("bootstrap-server") and opts.has("authorizer"):
        raise UsageError("Only one of --bootstrap-server or --authorizer must be specified")
    if not opts.has("bootstrap-server"):
        command_default.check_required(opts, ("authorizer-properties",))
    if opts.has("command-config") and not opts.has("bootstrap-server"):
        raise UsageError("The --command-config option can only be used with --bootstrap-server option")
    if opts.has("authorizer-properties") and opts.has("bootstrap-server"):
        raise UsageError("The --authorizer-properties option can only be used with --authorizer option")
    if sum(opts.has(a) for a in ("add", "remove", "list")) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    invalid_with("list", ("producer", "consumer", "allow-host", "allow-principal", "deny-host", "deny-principal"))
    invalid_with("producer", ("operation", "deny-principal", "deny-host"))
    invalid_with("consumer", ("operation", "deny-principal", "deny-host"))
    if opts.has("principal") and not opts.has("list"):
        raise UsageError("The --principal option is only available if --list is set")
    if opts.has("producer") and not opts.has("topic"):
        raise UsageError("With --producer you must specify a --topic")
    if opts.has("idempotent") and not opts.has("producer"):
        raise UsageError("The --idempotent option is only available if --producer is set")
    if opts.has("consumer") and (not opts.has("topic") or not opts.has("group") or (
            not opts.has("producer") and (opts.has("cluster") or opts.has("transactional-id")))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                         "--transactional-id option should be specified.")


def _pattern_type(opts) -> PatternType:
    text = opts.value("resource-pattern-type") or "LITERAL"
    found = parse_enum(PatternType, text)
    if found == PatternType.UNKNOWN:
        raise JavaError("joptsimple.OptionArgumentConversionException",
                        f"Cannot parse argument '{text}' of option resource-pattern-type")
    return found


def _filters(opts, die_if_none: bool = True) -> list[AclBindingFilter]:
    """getResourceFilter: one pattern filter per named resource, in the tool's order."""
    pt = _pattern_type(opts)
    out: list[AclBindingFilter] = []
    for topic in opts.all("topic"):
        out.append(AclBindingFilter(AclResourceType.TOPIC, topic.strip(), pt))
    if pt == PatternType.LITERAL and (opts.has("cluster") or opts.has("idempotent")):
        out.append(AclBindingFilter(AclResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    for group in opts.all("group"):
        out.append(AclBindingFilter(AclResourceType.GROUP, group.strip(), pt))
    for tid in opts.all("transactional-id"):
        out.append(AclBindingFilter(AclResourceType.TRANSACTIONAL_ID, tid, pt))
    for token in opts.all("delegation-token"):
        out.append(AclBindingFilter(AclResourceType.DELEGATION_TOKEN, token.strip(), pt))
    if not out and die_if_none:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
                         "--delegation-token <Delegation Token ID>")
    return list(dict.fromkeys(out))


def _principals(opts, name: str) -> list[str]:
    out = []
    for text in opts.all(name):
        text = text.strip()
        if ":" not in text:
            raise JavaError("java.lang.IllegalArgumentException",
                            f"expected a string in format principalType:principalName but got {text}")
        out.append(text)
    return list(dict.fromkeys(out))


def _entries(opts, operations) -> set[AccessControlEntry]:
    allow, deny = _principals(opts, "allow-principal"), _principals(opts, "deny-principal")
    allow_hosts = [h.strip() for h in opts.all("allow-host")] or ([WILDCARD_HOST] if allow else [])
    deny_hosts = [h.strip() for h in opts.all("deny-host")] or ([WILDCARD_HOST] if deny else [])
    out = set()
    for principals, hosts, perm in ((allow, allow_hosts, AclPermissionType.ALLOW),
                                    (deny, deny_hosts, AclPermissionType.DENY)):
        for p in principals:
            for op in operations:
                for h in hosts:
                    out.add(AccessControlEntry(p, h, op, perm))
    return out


def _filter_to_acls(opts) -> dict[AclBindingFilter, set[AccessControlEntry]]:
    """getResourceFilterToAcls: the CLI's own operations, or the --producer/--consumer roles."""
    result: dict[AclBindingFilter, set[AccessControlEntry]] = {}
    if not opts.has("producer") and not opts.has("consumer"):
        ops = []
        for name in opts.all("operation") or ["All"]:
            op = parse_enum(AclOperation, name.strip())
            if op == AclOperation.UNKNOWN:
                raise JavaError("java.lang.IllegalArgumentException", f"Unknown operation: {name.strip()}")
            ops.append(op)
        acls = _entries(opts, ops)
        result.update((f, set(acls)) for f in _filters(opts))
    if opts.has("producer"):
        for f in _filters(opts):
            if f.resource_type == AclResourceType.TOPIC:
                result[f] = _entries(opts, (Op.WRITE, Op.DESCRIBE, Op.CREATE))
            elif f.resource_type == AclResourceType.TRANSACTIONAL_ID:
                result[f] = _entries(opts, (Op.WRITE, Op.DESCRIBE))
        if opts.has("idempotent"):
            result[AclBindingFilter(AclResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)] = _entries(
                opts, (Op.IDEMPOTENT_WRITE,))
    if opts.has("consumer"):
        for f in _filters(opts):
            if f.resource_type == AclResourceType.TOPIC:
                result[f] = _entries(opts, (Op.READ, Op.DESCRIBE)) | result.get(f, set())
            elif f.resource_type == AclResourceType.GROUP:
                result[f] = _entries(opts, (Op.READ,)) | result.get(f, set())
    for f, acls in result.items():
        valid = set(SUPPORTED_OPERATIONS[f.resource_type]) | {Op.ALL}
        if {a.operation for a in acls} - valid:
            raise UsageError(f"ResourceType {f.resource_type.name} only supports operations "
                             f"{','.join(o.name for o in SUPPORTED_OPERATIONS[f.resource_type] + (Op.ALL,))}")
    return result


def _pattern_filter_str(f: AclBindingFilter) -> str:
    return f"ResourcePatternFilter(resourceType={f.resource_type.name}, name={f.name}, patternType={f.pattern_type.name})"


def _block(entries) -> str:
    return NL.join("\t" + str(e) for e in sorted(entries, key=str))


class _Admin:
    """The ACL calls over a broker's ACL APIs (the admin client's createAcls and friends)."""

    def __init__(self, opts) -> None:
        from kafkalike.cli.log_dirs import admin_config
        from kafkalike.client.admin import AdminClient
        self.client = AdminClient(admin_config(opts, "adminclient-1"))

    def create(self, bindings: list[AclBinding]) -> None:
        self.client.create_acls(bindings)

    def delete(self, filters: list[AclBindingFilter]) -> None:
        self.client.delete_acls(filters)

    def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        return self.client.describe_acls(f)

    def close(self) -> None:
        self.client.close()


class _ZooKeeper:
    """The ACL znodes written directly (the tool's AuthorizerService)."""

    def __init__(self, opts, out: TextIO) -> None:
        from kafkalike.cli.joptions import parse_key_values
        from kafkalike.cli.zookeeper_tool import ZooKeeperTool
        props = parse_key_values(opts.all("authorizer-properties"))
        if "zookeeper.connect" not in props:
            raise JavaError("java.lang.IllegalArgumentException", "zookeeper.connect is required")
        self.tool = ZooKeeperTool(props["zookeeper.connect"], out)

    def _all(self) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
        from kafkalike.zkdata import acl_znodes as z
        out = {}
        for pt in z.STORED_PATTERN_TYPES:
            for rt in z.RESOURCE_TYPES:
                for name in self.tool._children(z.type_path(pt, rt)):
                    entries = z.decode_acls(self.tool._get(z.resource_path(ResourcePattern(rt, name, pt))))
                    if entries:
                        out[ResourcePattern(rt, name, pt)] = entries
        return out

    def _update(self, pattern: ResourcePattern, change) -> None:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        from kafkalike.zkdata import acl_znodes as z
        zk, path = self.tool.zk, z.resource_path(pattern)
        for _ in range(10):
            try:
                data, stat = zk.get(path)
                current, version = z.decode_acls(data), stat.version
            except NoNodeError:
                current, version = frozenset(), -1
            wanted = frozenset(change(current))
            if wanted == current:
                return
            try:
                if not wanted:
                    zk.delete(path, version)
                elif version < 0:
                    self.tool._create_recursive(path, z.encode_acls(sorted(wanted, key=str)))
                else:
                    zk.set(path, z.encode_acls(sorted(wanted, key=str)), version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
            base = z.change_path(pattern.pattern_type)
            self.tool._create_recursive(f"{base}/{z.CHANGE_PREFIX}", z.encode_change(pattern), sequence=True)
            return

    def create(self, bindings: list[AclBinding]) -> None:
        for pattern in dict.fromkeys(b.pattern for b in bindings):
            self._update(pattern, lambda cur, p=pattern: cur | {b.entry for b in bindings if b.pattern == p})

    def delete(self, filters: list[AclBindingFilter]) -> None:
        for pattern in self._all():
            self._update(pattern, lambda cur, p=pattern: frozenset(
                e for e in cur if not any(f.matches(AclBinding(p, e)) for f in filters)))

    def describe(self, f: AclBindingFilter) -> list[AclBinding]:
        return [AclBinding(p, e) for p, entries in self._all().items() for e in entries
                if f.matches(AclBinding(p, e))]

    def close(self) -> None:
        self.tool.close()


def _current(service, opts, out: TextIO) -> None:
    """listAcls: every ACL of the named resources (or all), by resource."""
    filters = _filters(opts, die_if_none=False) or [AclBindingFilter()]
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for f in filters:
        for b in service.describe(f):
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
    principals = _principals(opts, "principal") if opts.has("principal") else []

    def show(table) -> None:
        for pattern in sorted(table):
            out.write(f"Current ACLs for resource `{pattern}`: {NL} {_block(table[pattern])} {NL}\n")
    if not principals:
        show(by_pattern)
    for principal in principals:
        out.write(f"ACLs for principal `{principal}`\n")
        show({p: {e for e in es if e.principal == principal} for p, es in by_pattern.items()
              if any(e.principal == principal for e in es)})


def _confirm(opts, message: str, out: TextIO) -> bool:
    if opts.has("force"):
        return True
    out.write(message + "\n")
    out.flush()
    return sys.stdin.readline().strip().lower() == "y"


def _to_add(opts) -> dict[AclBindingFilter, set[AccessControlEntry]]:
    """getResourceToAcls: checked before anything is connected to, as the tool does."""
    pt = _pattern_type(opts)
    if pt not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(f"A '--resource-pattern-type' value of '{pt.name}' is not valid when adding acls.")
    table = _filter_to_acls(opts)
    if any(not acls for acls in table.values()):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return table


def run(opts, out: TextIO) -> int:
    table = _to_add(opts) if opts.has("add") else None
    service = _Admin(opts) if opts.has("bootstrap-server") else _ZooKeeper(opts, out)
    try:
        try:
            if table is not None:
                for f, acls in table.items():
                    pattern = ResourcePattern(f.resource_type, f.name, f.pattern_type)
                    out.write(f"Adding ACLs for resource `{pattern}`: {NL} {_block(acls)} {NL}\n")
                    service.create([AclBinding(pattern, e) for e in sorted(acls, key=str)])
            elif opts.has("remove"):
                for f, acls in _filter_to_acls(opts).items():
                    if not acls:
                        question = (f"Are you sure you want to delete all ACLs for resource filter "
                                    f"`{_pattern_filter_str(f)}`? (y/n)")
                        filters = [f]
                    else:
                        question = (f"Are you sure you want to remove ACLs: {NL} {_block(acls)} {NL} from resource "
                                    f"filter `{_pattern_filter_str(f)}`? (y/n)")
                        filters = [AclBindingFilter(f.resource_type, f.name, f.pattern_type, e.principal, e.host,
                                                    e.operation, e.permission_type) for e in acls]
                    if _confirm(opts, question, out):
                        service.delete(filters)
            _current(service, opts, out)
        except (UsageError, JavaError):
            raise
        except Exception as error:        # the tool's catch-all: the message, then the trace's first line
            from kafkalike.cli.joptions import throwable
            from kafkalike.client.admin import KafkaAdminError
            # A refusal reads as the Java admin client's future throws it.
            message = (f"{error.java_class}: {error.message}" if isinstance(error, KafkaAdminError)
                       else throwable(error))
            out.write(f"Error while executing ACL command: {message}\n"
                      f"java.util.concurrent.ExecutionException: {message}\n")
            return 1
    finally:
        service.close()
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, HELP_MESSAGE)
        _check_args(opts)
        return run(opts, out)
    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
