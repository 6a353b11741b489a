"""The batch-load job's commit protocol without Spark or a broker: manifests, moves, commits.

A run killed at any step leaves one of these states on disk, and the next run's
recovery must take each to "every file in the output once, offsets committed": a
staging directory without a manifest (dropped), a manifest with some files moved (the
rest moved, then the offsets committed), a manifest whose offsets were committed already
(nothing committed twice). The group is a stub that records commits.
"""
from __future__ import annotations

import io
import json
import os

import pytest

from kafkalike.spark import load
from kafkalike.spark.load import (Layout, LoadError, LoadRange, Manifest, PartitionPlan, check_counts, publish,
                                  recover, source_read_options, staged_files, write_manifest)


class StubGroup:
    """A consumer group's committed offsets in memory; commit() may be told to fail once."""

    def __init__(self, committed: dict | None = None, fail: Exception | None = None) -> None:
        self.offsets: dict[str, dict] = {}
        self.commits: list[tuple[str, dict, str]] = []
        self.fail = fail
        if committed:
            self.offsets["loader"] = dict(committed)

    def committed(self, group, partitions):
        have = self.offsets.get(group, {})
        return {tp: have[tp] for tp in partitions if tp in have}

    def commit(self, group, offsets, metadata):
        if self.fail is not None:
            error, self.fail = self.fail, None
            raise error
        self.commits.append((group, dict(offsets), metadata))
        self.offsets.setdefault(group, {}).update(offsets)


FILES = ("topic=t/date=2024-03-01/part-00000-aaaa.c000.snappy.parquet",
         "topic=t/date=2024-03-02/part-00000-aaaa.c000.snappy.parquet",
         "topic=t/date=2024-03-02/part-00001-aaaa.c000.snappy.parquet",
         "topic=u/date=2024-03-02/part-00002-aaaa.c000.snappy.parquet")
RANGES = (LoadRange("t", 0, 5, 10, 5), LoadRange("t", 1, 0, 3, 3), LoadRange("u", 0, 40, 50, 10))


def staged_run(layout: Layout, run_id: str = "20240302T000000Z-0001") -> Manifest:
    """A run as step 2 leaves it: Spark's files (and markers) staged, the manifest written."""
    layout.prepare()
    staging = layout.staging(run_id)
    for rel in FILES:
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"data of {rel}".encode())
        (path.parent / f".{path.name}.crc").write_bytes(b"crc")
    (staging / "_SUCCESS").write_bytes(b"")
    manifest = Manifest(run_id, "loader", RANGES, tuple(staged_files(staging)), "2024-03-02T00:00:00Z")
    write_manifest(layout, manifest)
    return manifest


def output_files(layout: Layout) -> list[str]:
    return sorted(str(p.relative_to(layout.root)) for p in layout.root.rglob("*")
                  if p.is_file() and load.STATE_DIR not in p.relative_to(layout.root).parts)


def test_staged_files_are_the_data_files_only(tmp_path):
    manifest = staged_run(Layout(tmp_path))
    assert manifest.files == tuple(sorted(FILES))


def test_manifest_round_trips_and_is_written_whole(tmp_path):
    layout = Layout(tmp_path)
    manifest = staged_run(layout)
    assert [p.name for p in layout.loads.iterdir()] == [f"{manifest.run_id}.json"]
    assert load.read_manifest(layout.manifest(manifest.run_id)) == manifest


def test_recovery_finishes_a_run_killed_between_moves(tmp_path):
    layout = Layout(tmp_path)
    manifest = staged_run(layout)
    # Killed after the first file's rename: it is in the output, the others are staged.
    first = FILES[0]
    (layout.root / first).parent.mkdir(parents=True)
    os.rename(layout.staging(manifest.run_id) / first, layout.root / first)
    # The group is behind on t-0 and t-1, and already past u-0 (someone reset it forward).
    group = StubGroup({("t", 0): 5, ("u", 0): 60})
    out = io.StringIO()

    done = recover(layout, group, out)

    assert output_files(layout) == sorted(FILES)
    assert (layout.root / first).read_bytes() == f"data of {first}".encode()
    assert [(d.moved, d.already_moved) for d in done] == [(3, 1)]
    assert group.commits == [("loader", {("t", 0): 10, ("t", 1): 3},
                              f"kafkalike-spark-load {manifest.run_id}")]
    assert group.offsets["loader"] == {("t", 0): 10, ("t", 1): 3, ("u", 0): 60}
    assert not layout.staging(manifest.run_id).exists()
    assert list(layout.loads.iterdir()) == []
    assert f"Recovered run {manifest.run_id}" in out.getvalue()
    # Nothing left to do: a second recovery moves and commits nothing.
    assert recover(layout, group, io.StringIO()) == []
    assert len(group.commits) == 1
    assert output_files(layout) == sorted(FILES)


def test_recovery_after_the_commit_only_cleans_up(tmp_path):
    layout = Layout(tmp_path)
    manifest = staged_run(layout)
    group = StubGroup()
    publish(layout, manifest, group)
    commits = list(group.commits)
    # Killed after the commit, before the manifest went: put it back as it was.
    write_manifest(layout, manifest)

    done = recover(layout, group, io.StringIO())

    assert [(d.moved, d.already_moved, d.committed) for d in done] == [(0, len(FILES), {})]
    assert group.commits == commits
    assert output_files(layout) == sorted(FILES)
    assert list(layout.loads.iterdir()) == []


def test_recovery_drops_staging_without_a_manifest(tmp_path):
    layout = Layout(tmp_path)
    manifest = staged_run(layout, "20240302T000000Z-0001")
    # A run killed while Spark wrote, and one killed while writing its manifest.
    os.unlink(layout.manifest(manifest.run_id))
    killed_in_write = layout.staging("20240302T010000Z-0002") / "_temporary" / "0" / "part-0"
    killed_in_write.parent.mkdir(parents=True)
    killed_in_write.write_bytes(b"half")
    (layout.loads / "20240302T000000Z-0001.json.tmp").write_text('{"version": 1, "ru')
    group = StubGroup()
    out = io.StringIO()

    assert recover(layout, group, out) == []

    assert list(layout.staging_root.iterdir()) == []
    assert list(layout.loads.iterdir()) == []
    assert output_files(layout) == []
    assert group.commits == []
    assert out.getvalue().count("Removed the staging of interrupted run") == 2


def test_a_failed_commit_keeps_the_manifest_for_the_next_run(tmp_path):
    layout = Layout(tmp_path)
    manifest = staged_run(layout)
    group = StubGroup(fail=ConnectionError("broker gone"))
    with pytest.raises(ConnectionError):
        publish(layout, manifest, group)
    assert output_files(layout) == sorted(FILES)
    assert layout.manifest(manifest.run_id).exists()
    assert group.commits == []

    recover(layout, group, io.StringIO())
    assert group.offsets["loader"] == {("t", 0): 10, ("t", 1): 3, ("u", 0): 50}
    assert not layout.manifest(manifest.run_id).exists()


def test_a_file_lost_from_both_places_stops_recovery(tmp_path):
    layout = Layout(tmp_path)
    manifest = staged_run(layout)
    os.unlink(layout.staging(manifest.run_id) / FILES[2])
    group = StubGroup()
    with pytest.raises(LoadError, match="neither staged nor in the output"):
        recover(layout, group, io.StringIO())
    assert group.commits == []
    assert layout.manifest(manifest.run_id).exists()


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    layout = Layout(tmp_path)
    layout.prepare()
    with layout.locked():
        with pytest.raises(LoadError, match="another load into"):
            with Layout(tmp_path).locked():
                pass
    with layout.locked():       # released with the first
        pass


def test_source_options_name_exactly_the_planned_ranges():
    plans = [PartitionPlan("b", 1, 7, 9), PartitionPlan("a", 0, 0, 4), PartitionPlan("b", 0, 3, 3)]
    options = source_read_options("h:9092", plans, {"fetch.max.bytes": "1000"}, 50)
    assert json.loads(options["assign"]) == {"a": [0], "b": [0, 1]}
    assert json.loads(options["startingOffsets"]) == {"a": {"0": 0}, "b": {"0": 3, "1": 7}}
    assert json.loads(options["endingOffsets"]) == {"a": {"0": 4}, "b": {"0": 3, "1": 9}}
    assert options["kafka.bootstrap.servers"] == "h:9092"
    assert options["kafka.fetch.max.bytes"] == "1000"
    assert options["maxRecordsPerPartition"] == "50"


def test_staged_counts_must_lie_inside_the_plan():
    plans = [PartitionPlan("a", 0, 10, 20)]
    check_counts(plans, {("a", 0): (8, 10, 19)})        # gaps (compaction, markers) are fine
    with pytest.raises(LoadError, match="does not match the planned range"):
        check_counts(plans, {("a", 0): (11, 10, 19)})
    with pytest.raises(LoadError, match="does not match the planned range"):
        check_counts(plans, {("a", 0): (1, 20, 20)})
    with pytest.raises(LoadError, match="was not planned"):
        check_counts(plans, {("b", 0): (1, 0, 0)})


@pytest.mark.parametrize("argv, message", [
    (["--topic", "t", "--output", "/o"], 'Missing required argument "[bootstrap-server]"'),
    (["--bootstrap-server", "h:1", "--topic", "t"], 'Missing required argument "[output]"'),
    (["--bootstrap-server", "h:1", "--output", "/o"], "Exactly one of --topic or --include must be specified"),
    (["--bootstrap-server", "h:1", "--output", "/o", "--topic", "t", "--include", "x.*"],
     "Exactly one of --topic or --include must be specified"),
    (["--bootstrap-server", "h:1", "--output", "/o", "--include", "(x"], "is not a valid regular expression"),
    (["--bootstrap-server", "h:1", "--output", "/o", "--topic", "t", "--max-records-per-partition", "0"],
     "0 is not a positive number"),
    (["--bootstrap-server", "h:1", "--output", "/o", "--topic", "t", "--consumer-property", "novalue"],
     "is not of the form KEY=VALUE"),
    (["--bootstrap-server", "h:1", "--output", "/o", "--topic", "t", "--consumer-property",
      "enable.auto.commit=true"], "Kafka option 'enable.auto.commit' is not supported"),
    (["--bootstrap-server", "h:1", "--output", "s3a://bucket/x", "--topic", "t"],
     "only local or mounted paths are supported"),
    (["--bootstrap-server", "h:1", "--output", "/o", "--topic", "t", "--bogus"], "unrecognized arguments"),
])
def test_usage_errors_are_one_line_and_exit_1(argv, message):
    out, err = io.StringIO(), io.StringIO()
    assert load.main(argv, out, err) == 1
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkalike-spark-load: error: "), lines
    assert message in lines[0]
    assert out.getvalue() == ""


def test_help_lists_the_options():
    out = io.StringIO()
    assert load.main(["--help"], out, io.StringIO()) == 0
    for option in ("--bootstrap-server", "--topic", "--include", "--group", "--output", "--master",
                   "--max-records-per-partition", "--consumer-property"):
        assert option in out.getvalue()
