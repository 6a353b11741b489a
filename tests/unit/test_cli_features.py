"""kafka-features' output and plans (FeatureCommand): the describe lines, the [Add] /
[Upgrade] / [Delete] / [Downgrade] updates against what is finalized, a dry run, and the
results of applying them, with a fake admin client."""
from __future__ import annotations

import io

import pytest

from kafkalike.cli import features
from kafkalike.client.admin import KafkaAdminError
from kafkalike.client.admin_types import FeatureMetadata
from kafkalike.protocol.errors import ErrorCode


class FakeAdmin:
    def __init__(self, meta: FeatureMetadata, refuse: set[str] = frozenset()) -> None:
        self.meta, self.refuse, self.applied = meta, refuse, {}

    def describe_features(self, from_controller: bool = False) -> FeatureMetadata:
        return self.meta

    def update_features(self, updates):
        self.applied = dict(updates)
        return {n: KafkaAdminError(ErrorCode.INVALID_REQUEST, "no") if n in self.refuse else None for n in updates}


def test_describe_prints_each_feature_with_dashes_where_nothing_is_known():
    out = io.StringIO()
    features.describe(FakeAdmin(FeatureMetadata({"b": (1, 3), "a": (1, 2)}, {"a": (1, 2), "z": (1, 1)}, 7)), False, out)
    assert out.getvalue().splitlines() == [
        "Feature: a\tSupportedMinVersion: 1\tSupportedMaxVersion: 2\tFinalizedMinVersionLevel: 1"
        "\tFinalizedMaxVersionLevel: 2\tEpoch: 7",
        "Feature: b\tSupportedMinVersion: 1\tSupportedMaxVersion: 3\tFinalizedMinVersionLevel: -"
        "\tFinalizedMaxVersionLevel: -\tEpoch: 7",
        "Feature: z\tSupportedMinVersion: -\tSupportedMaxVersion: -\tFinalizedMinVersionLevel: 1"
        "\tFinalizedMaxVersionLevel: 1\tEpoch: 7"]


def test_upgrade_and_downgrade_plans_and_their_results(monkeypatch):
    monkeypatch.setattr(features, "KNOWN_FEATURES", {"new": (1, 2), "old": (1, 5), "kept": (1, 1)})
    finalized = {"old": (1, 3), "kept": (1, 4), "gone": (1, 2)}
    up = features.planned_updates(finalized, upgrade=True)
    assert sorted(up) == ["new", "old"]
    out = io.StringIO()
    features.apply(FakeAdmin(FeatureMetadata({}, {}, None)), up, dry_run=True, out=out)
    assert out.getvalue() == ("Expected feature updates:\n"
                              "      [Add]\tFeature: new\tExistingFinalizedMaxVersion: -\tNewFinalizedMaxVersion: 2\n"
                              "  [Upgrade]\tFeature: old\tExistingFinalizedMaxVersion: 3\tNewFinalizedMaxVersion: 5\n")
    down = features.planned_updates(finalized, upgrade=False)
    admin, out = FakeAdmin(FeatureMetadata({}, {}, None), refuse={"gone"}), io.StringIO()
    with pytest.raises(features.UpdateFeaturesFailed, match="1 feature updates failed!"):
        features.apply(admin, down, dry_run=False, out=out)
    assert {n: (u.max_version_level, u.allow_downgrade) for n, u in admin.applied.items()} == {
        "gone": (0, True), "kept": (1, True)}
    assert out.getvalue().splitlines() == [
        "   [Delete]\tFeature: gone\tExistingFinalizedMaxVersion: 2\tNewFinalizedMaxVersion: -\tResult: FAILED due to "
        "org.apache.kafka.common.errors.InvalidRequestException: no",
        "[Downgrade]\tFeature: kept\tExistingFinalizedMaxVersion: 4\tNewFinalizedMaxVersion: 1\tResult: OK"]


def test_options_are_checked_as_kafkas():
    def run(*argv: str) -> str:
        err = io.StringIO()
        assert features.main(list(argv), io.StringIO(), err) == 1
        return err.getvalue().splitlines()[0]
    assert run("--describe", "--upgrade-all", "--bootstrap-server", "b:1") == (
        "Command must include exactly one action: --describe, --upgrade-all, --downgrade-all.")
    assert run("--describe") == 'Missing required argument "[bootstrap-server]"'
    assert run("--describe", "--dry-run", "--bootstrap-server", "b:1").startswith("Command can contain --dry-run")
    assert run("--upgrade-all", "--from-controller", "--bootstrap-server", "b:1").startswith(
        "Command can contain --from-controller")
