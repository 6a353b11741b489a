"""kafka-features: describe and update the cluster's finalized features (KIP-584), as Kafka
2.8's FeatureCommand.

--describe prints each feature a broker supports or the cluster finalized, with its
versions and the finalized epoch ("-" where there is none); --from-controller asks the
controller. --upgrade-all finalizes every feature this tool knows at its highest version,
--downgrade-all brings the finalized ones down to what it knows, deleting the others; with
--dry-run they print the updates instead of applying them. Kafka 2.8 defines no feature,
so its tool (and this one) knows none and its brokers (and kafkalike's) support none: on
such a cluster --describe prints nothing and --upgrade-all has nothing to do, exactly as
against Kafka 2.8.
"""
from __future__ import annotations

import sys
from typing import Mapping, Sequence, TextIO

from kafkalike.cli import command_default
from kafkalike.cli.joptions import Option, UsageError, throwable
from kafkalike.cli.tool_main import run_tool
from kafkalike.client.admin import AdminClient
from kafkalike.client.admin_types import FeatureUpdate

MESSAGE = "This tool describes and updates finalized features."
ACTIONS = ("describe", "upgrade-all", "downgrade-all")
# BrokerFeatures.createDefault().supportedFeatures in Kafka 2.8: none.
KNOWN_FEATURES: Mapping[str, tuple[int, int]] = {}
OPTIONS = command_default.with_defaults(
    Option("bootstrap-server", "REQUIRED: The Kafka server(s) to connect to.", "server to connect to"),
    Option("describe", "Describe supported and finalized features. By default, the features are described from a "
           "random broker. The request can be optionally directed only to the controller using the "
           "--from-controller option."),
    Option("from-controller", "Describe supported and finalized features from the controller."),
    Option("upgrade-all", "Upgrades all finalized features to the maximum version levels known to the tool. This "
           "command finalizes new features known to the tool that were never finalized previously in the cluster, "
           "but it is guaranteed to not delete any existing feature."),
    Option("downgrade-all", "Downgrades all finalized features to the maximum version levels known to the tool. "
           "This command deletes unknown features from the list of finalized features in the cluster, but it is "
           "guaranteed to not add a new feature."),
    Option("dry-run", "Performs a dry-run of upgrade/downgrade mutations to finalized feature without applying "
           "them."),
)


class UpdateFeaturesFailed(Exception):
    """FeatureCommand's UpdateFeaturesException."""


def describe(admin: AdminClient, from_controller: bool, out: TextIO) -> None:
    meta = admin.describe_features(from_controller)
    epoch = "-" if meta.finalized_epoch is None else str(meta.finalized_epoch)
    for name in sorted(set(meta.supported) | set(meta.finalized)):
        smin, smax = meta.supported.get(name, ("-", "-"))
        fmin, fmax = meta.finalized.get(name, ("-", "-"))
        out.write(f"Feature: {name}\tSupportedMinVersion: {smin}\tSupportedMaxVersion: {smax}"
                  f"\tFinalizedMinVersionLevel: {fmin}\tFinalizedMaxVersionLevel: {fmax}\tEpoch: {epoch}\n")


def _line(op: str, name: str, existing: object, new: object) -> str:
    return f"{op:>11}\tFeature: {name}\tExistingFinalizedMaxVersion: {existing}\tNewFinalizedMaxVersion: {new}"


def planned_updates(finalized: Mapping[str, tuple[int, int]], upgrade: bool) -> dict[str, tuple[str, FeatureUpdate]]:
    """upgradeAllFeatures / downgradeAllFeatures: the updates against what is finalized."""
    updates = {}
    if upgrade:
        for name, (_, top) in KNOWN_FEATURES.items():
            current = finalized.get(name)
            if current is None:
                updates[name] = (_line("[Add]", name, "-", top), FeatureUpdate(top))
            elif top > current[1]:
                updates[name] = (_line("[Upgrade]", name, current[1], top), FeatureUpdate(top))
    else:
        for name, (_, level) in finalized.items():
            known = KNOWN_FEATURES.get(name)
            if known is None:
                updates[name] = (_line("[Delete]", name, level, "-"), FeatureUpdate(0, True))
            elif known[1] < level:
                updates[name] = (_line("[Downgrade]", name, level, known[1]), FeatureUpdate(known[1], True))
    return updates


def apply(admin: AdminClient, updates: dict[str, tuple[str, FeatureUpdate]], dry_run: bool, out: TextIO) -> None:
    """maybeApplyFeatureUpdates."""
    if not updates:
        return
    if dry_run:
        out.write("Expected feature updates:\n" + "\n".join(updates[n][0] for n in sorted(updates)) + "\n")
        return
    results = admin.update_features({name: update for name, (_, update) in updates.items()})
    failures = 0
    for name in sorted(results):
        error = results[name]
        if error is None:
            out.write(f"{updates[name][0]}\tResult: OK\n")
        else:
            failures += 1
            out.write(f"{updates[name][0]}\tResult: FAILED due to {throwable(error)}\n")
    if failures:
        raise UpdateFeaturesFailed(f"{failures} feature updates failed!")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        opts = command_default.parse(OPTIONS, args, MESSAGE)
        if sum(opts.has(a) for a in ACTIONS) != 1:
            raise UsageError("Command must include exactly one action: --describe, --upgrade-all, --downgrade-all.")
        command_default.check_required(opts, ("bootstrap-server",))
        if opts.has("dry-run") and not (opts.has("upgrade-all") or opts.has("downgrade-all")):
            raise UsageError("Command can contain --dry-run option only when either --upgrade-all or "
                             "--downgrade-all actions are provided.")
        if opts.has("from-controller") and not opts.has("describe"):
            raise UsageError("Command can contain --from-controller option only when --describe action is "
                             "provided.")
        admin = AdminClient({"bootstrap.servers": opts.value("bootstrap-server") or ""})
        try:
            if opts.has("describe"):
                describe(admin, opts.has("from-controller"), out)
            else:
                finalized = admin.describe_features(from_controller=True).finalized
                apply(admin, planned_updates(finalized, opts.has("upgrade-all")), opts.has("dry-run"), out)
        except Exception as error:       # FeatureCommand.main: printException, exit 1
            out.flush()
            err.write(f"\nError encountered when executing command: {throwable(error)}\n")
            return 1
        finally:
            admin.close()
        return 0

    return command_default.run_main(OPTIONS, body, out, err)


if __name__ == "__main__":
    run_tool(main)
