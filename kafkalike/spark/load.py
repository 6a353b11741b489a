"""bin/kafkalike-spark-load.sh: bulk-load topics into Parquet files, exactly once.

The offline-load pattern from Kafka's design: a periodic job reads what is new in some
topics and writes it to files, one Spark task per topic-partition (or per
--max-records-per-partition slice), and remembers how far it got in a consumer group.
The group is only ever committed to from outside (AdminClient.alter_group_offsets), so
`kafka-consumer-groups.sh --describe --group <loader>` shows the loader's lag.

A run plans on the driver: the topic-partitions, from the group's committed offset (or
the earliest one) to the end offset now. It reads exactly that range through the
"kafkalike" Spark source and publishes it in five steps, each one safe to be killed in:

1. Spark writes the records, partitioned by topic and date, into
   <output>/_kafkalike/staging/<run>/ (Spark's job commit: complete or not there).
2. The staged files are fsynced and a manifest <output>/_kafkalike/loads/<run>.json is
   written atomically (temporary file, fsync, rename): the run's commit point. It names
   the planned ranges and the staged files.
3. Each staged file is renamed into <output>/topic=T/date=D/ (a file already moved is
   skipped, so this step can be done again).
4. The end offsets are committed to the group.
5. The staging directory and then the manifest are deleted.

Before it plans, a run recovers: a manifest left by a killed run is carried through
steps 3 to 5 (committing only offsets ahead of the group's), and a staging directory
without a manifest is deleted, since its range was never committed and loads again. So
every record reaches the output exactly once, whatever point a run was killed at. Spark
names its files part-<uuid>..., so files of different runs never collide.

Two runs on one output would load the same range twice, so a run holds an exclusive lock
on <output>/_kafkalike/lock. The output is a local (or shared, mounted) POSIX path: the
driver moves files with rename(2), and on a cluster the executors write the staging
directory, so every worker must see the same path.
"""
from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import re
import shutil
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Protocol, Sequence, TextIO

from kafkalike.spark.options import KafkaOptionError, Subscription, TopicPartition, isolation_level, source_options

PROG = "kafkalike-spark-load"
DEFAULT_GROUP = "kafkalike-spark-loader"
DEFAULT_MASTER = "local[2]"
STATE_DIR = "_kafkalike"
MANIFEST_VERSION = 1
# Offset commits carry this (and the run id) as their metadata.
COMMIT_METADATA = "kafkalike-spark-load"
# Partition values are taken as written (a topic named "2024" stays a string), and the
# date column is the record's timestamp's UTC date.
SESSION_CONF = {
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.session.timeZone": "UTC",
}


class LoadError(Exception):
    """A failure reported as one line on stderr, exit status 1."""


# -- the output directory ----------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where a load keeps its output and its own state."""

    root: Path

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def loads(self) -> Path:
        return self.state / "loads"

    @property
    def staging_root(self) -> Path:
        return self.state / "staging"

    def staging(self, run_id: str) -> Path:
        return self.staging_root / run_id

    def manifest(self, run_id: str) -> Path:
        return self.loads / f"{run_id}.json"

    def prepare(self) -> None:
        for directory in (self.root, self.loads, self.staging_root):
            directory.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold <output>/_kafkalike/lock for the run (the kernel drops it when a process dies)."""
        fd = os.open(self.state / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LoadError(f"another load into {self.root} is running (it holds {self.state / 'lock'})") \
                    from None
            yield
        finally:
            os.close(fd)


def new_run_id() -> str:
    """Sortable by start time, unique across hosts: 20240301T101500Z-1a2b3c4d."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def staged_files(staging: Path) -> list[str]:
    """The data files Spark committed under `staging`, relative and sorted.

    Spark's own markers (_SUCCESS, _temporary) and checksums (.part-....crc) stay behind:
    readers skip names that start with "_" or ".", and so does this.
    """
    out = []
    for directory, subdirs, files in os.walk(staging):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(("_", ".")))
        for name in files:
            if not name.startswith(("_", ".")):
                out.append(str((Path(directory) / name).relative_to(staging)))
    return sorted(out)


# -- manifests ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadRange:
    """Records [start, end) of one topic-partition, and how many of them a run staged."""

    topic: str
    partition: int
    start: int
    end: int
    records: int | None = None

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class Manifest:
    """What a staged run holds: written before its files move, deleted after its commit."""

    run_id: str
    group: str
    ranges: tuple[LoadRange, ...]
    files: tuple[str, ...]
    created: str = ""

    def end_offsets(self) -> dict[TopicPartition, int]:
        return {r.tp: r.end for r in self.ranges}

    def to_json(self) -> dict:
        return {"version": MANIFEST_VERSION, "run": self.run_id, "group": self.group, "created": self.created,
                "ranges": [{"topic": r.topic, "partition": r.partition, "start": r.start, "end": r.end,
                            "records": r.records} for r in self.ranges],
                "files": list(self.files)}

    @classmethod
    def from_json(cls, data: Mapping) -> Manifest:
        if data.get("version") != MANIFEST_VERSION:
            raise ValueError(f"unknown manifest version {data.get('version')!r}")
        ranges = tuple(LoadRange(str(r["topic"]), int(r["partition"]), int(r["start"]), int(r["end"]),
                                 None if r.get("records") is None else int(r["records"]))
                       for r in data["ranges"])
        return cls(str(data["run"]), str(data["group"]), ranges, tuple(str(f) for f in data["files"]),
                   str(data.get("created", "")))


def write_manifest(layout: Layout, manifest: Manifest) -> Path:
    """Atomically: the manifest is there whole, or not at all, and survives a crash."""
    path = layout.manifest(manifest.run_id)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest.to_json(), f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)
    fsync_path(layout.loads)
    return path


def read_manifest(path: Path) -> Manifest:
    try:
        with open(path, encoding="utf-8") as f:
            return Manifest.from_json(json.load(f))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LoadError(f"cannot read the load manifest {path} ({exc}); move it away only if you know its "
                        "files are not in the output") from None


# -- the group's offsets -----------------------------------------------------------------


class OffsetStore(Protocol):
    """A consumer group's committed offsets (the real one is GroupOffsets)."""

    def committed(self, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    def commit(self, group: str, offsets: Mapping[TopicPartition, int], metadata: str) -> None: ...


class GroupOffsets:
    """Commits from outside the group, as kafka-consumer-groups.sh --reset-offsets does: the
    coordinator takes them while the group has no active members."""

    def __init__(self, admin) -> None:
        self.admin = admin

    def committed(self, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        return {tp: c.offset for tp, c in self.admin.list_group_offsets(group, partitions).items()}

    def check_no_members(self, group: str) -> None:
        """Fail before loading, not at the commit, when consumers are in the group."""
        described = self.admin.describe_groups([group]).get(group)
        if described is not None and described.members:
            raise LoadError(_active_members(group, len(described.members)))

    def commit(self, group: str, offsets: Mapping[TopicPartition, int], metadata: str) -> None:
        from kafkalike.client.admin import KafkaAdminError
        from kafkalike.client.groups import CommittedOffset
        try:
            self.admin.alter_group_offsets(group, {tp: CommittedOffset(off, None, metadata)
                                                   for tp, off in offsets.items()})
        except KafkaAdminError as exc:
            if exc.name == "UNKNOWN_MEMBER_ID":
                raise LoadError(_active_members(group)) from None
            raise


def _active_members(group: str, count: int | None = None) -> str:
    members = "active members" if count is None else f"{count} active member{'s' if count != 1 else ''}"
    return (f"group {group} has {members}, so the loader cannot commit its offsets; give the loader a "
            "group of its own (--group)")


# -- publishing a staged run (steps 3 to 5) and recovery ---------------------------------


@dataclass
class Published:
    run_id: str
    moved: int = 0
    already_moved: int = 0
    committed: dict[TopicPartition, int] = field(default_factory=dict)


def move_files(layout: Layout, manifest: Manifest) -> tuple[int, int]:
    """Rename each staged file into the output: (moved now, moved before)."""
    staging = layout.staging(manifest.run_id)
    moved = before = 0
    touched: set[Path] = set()
    for rel in manifest.files:
        src, dst = staging / rel, layout.root / rel
        if os.path.lexists(src):
            created = _make_dirs(dst.parent, layout.root)
            touched.update(created)
            os.rename(src, dst)
            touched.add(dst.parent)
            moved += 1
        elif dst.exists():
            before += 1
        else:
            raise LoadError(f"run {manifest.run_id}: {rel} is neither staged nor in the output; the output "
                            "lost records that the manifest says were loaded")
    # The renames (and new directories) must be on disk before the offsets say so.
    for directory in sorted(touched, key=lambda p: len(p.parts), reverse=True):
        fsync_path(directory)
    return moved, before


def _make_dirs(directory: Path, root: Path) -> set[Path]:
    """mkdir -p below root; returns the parents whose entries changed."""
    missing = []
    probe = directory
    while probe != root and not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            pass
    return {d.parent for d in missing}


def commit_ahead(store: OffsetStore, manifest: Manifest) -> dict[TopicPartition, int]:
    """Commit the manifest's end offsets where they are ahead of the group's; returns them."""
    ends = manifest.end_offsets()
    current = store.committed(manifest.group, sorted(ends))
    ahead = {tp: end for tp, end in ends.items() if tp not in current or current[tp] < end}
    if ahead:
        store.commit(manifest.group, ahead, f"{COMMIT_METADATA} {manifest.run_id}")
    return ahead


def publish(layout: Layout, manifest: Manifest, store: OffsetStore) -> Published:
    """Steps 3 to 5 for a run whose manifest is written; idempotent."""
    result = Published(manifest.run_id)
    result.moved, result.already_moved = move_files(layout, manifest)
    result.committed = commit_ahead(store, manifest)
    shutil.rmtree(layout.staging(manifest.run_id), ignore_errors=True)
    try:
        os.unlink(layout.manifest(manifest.run_id))
    except FileNotFoundError:
        pass
    fsync_path(layout.loads)
    return result


def recover(layout: Layout, store: OffsetStore, out: TextIO) -> list[Published]:
    """Finish every run a kill left with a manifest; drop staging no manifest vouches for."""
    done = []
    for leftover in sorted(layout.loads.glob("*.json.tmp")):
        leftover.unlink()
    for path in sorted(layout.loads.glob("*.json")):
        manifest = read_manifest(path)
        result = publish(layout, manifest, store)
        done.append(result)
        say(out, f"Recovered run {manifest.run_id} left by an interrupted load: {len(manifest.files)} files "
                 f"in place ({result.moved} moved now), offsets of {len(result.committed)} partitions committed "
                 f"to group {manifest.group}")
    for staging in sorted(p for p in layout.staging_root.iterdir() if p.is_dir()):
        if not layout.manifest(staging.name).exists():
            shutil.rmtree(staging)
            say(out, f"Removed the staging of interrupted run {staging.name} (never committed: its records "
                     "load again)")
    return done


# -- planning ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionPlan:
    topic: str
    partition: int
    start: int
    end: int
    note: str = ""

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_load(admin, subscription: Subscription, group: str, store: OffsetStore, err: TextIO,
              isolation_level: str = "read_uncommitted") -> list[PartitionPlan]:
    """From the group's committed offsets (else the earliest) to the end offsets now: the
    last stable offsets with isolation.level=read_committed, as its consumers see them."""
    from kafkalike.spark.planner import list_offsets, resolve_partitions
    from kafkalike.client.groups import OffsetSpec

    if subscription.strategy == "subscribe":
        existing = {t.name for t in admin.list_topics(include_internal=True)}
        missing = [t for t in subscription.topics if t not in existing]
        if missing:
            names = ", ".join(f"'{t}'" for t in missing)
            raise LoadError(f"Topic{'s' if len(missing) > 1 else ''} {names} "
                            f"do{'' if len(missing) > 1 else 'es'} not exist")
    partitions = resolve_partitions(admin, subscription)
    if not partitions:
        return []
    earliest = list_offsets(admin, {tp: OffsetSpec.earliest() for tp in partitions})
    latest = list_offsets(admin, {tp: OffsetSpec.latest() for tp in partitions})
    stable = (list_offsets(admin, {tp: OffsetSpec.latest() for tp in partitions}, isolation_level)
              if isolation_level == "read_committed" else latest)
    committed = store.committed(group, partitions)
    plans = []
    for tp in partitions:
        low, high = earliest[tp], latest[tp]
        start, note = committed.get(tp, low), ""
        if start < low:
            note = f"committed offset {start} is below the log start {low}: records {start}..{low - 1} are gone"
            start = low
        elif start > high:
            note = f"committed offset {start} is past the log end {high} (topic recreated?): loading from {low}"
            start = low
        if note:
            say(err, f"[load] WARN {tp[0]}-{tp[1]}: {note}")
        # A start past the last stable offset (a run that read uncommitted before) waits for it.
        plans.append(PartitionPlan(tp[0], tp[1], start, max(start, stable[tp]), note))
    return plans


def offsets_json(offsets: Mapping[TopicPartition, int]) -> str:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return json.dumps(out, separators=(",", ":"))


def assign_json(partitions: Iterable[TopicPartition]) -> str:
    out: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        out.setdefault(topic, []).append(partition)
    return json.dumps(out, separators=(",", ":"))


def source_read_options(bootstrap: str, plans: Sequence[PartitionPlan], consumer_props: Mapping[str, str],
                        max_records: int | None) -> dict[str, str]:
    """The Spark source's options for exactly the planned ranges.

    The source is given the partitions (assign), not the topics or the pattern: a
    partition created after planning must not change what this run reads.
    """
    options = {f"kafka.{k}": v for k, v in consumer_props.items()}
    options["kafka.bootstrap.servers"] = bootstrap
    options["assign"] = assign_json(p.tp for p in plans)
    options["startingOffsets"] = offsets_json({p.tp: p.start for p in plans})
    options["endingOffsets"] = offsets_json({p.tp: p.end for p in plans})
    if max_records:
        options["maxRecordsPerPartition"] = str(max_records)
    return options


# -- Spark -------------------------------------------------------------------------------


class Progress(threading.Thread):
    """Prints "[load] <what>: stage N: done/total tasks ..." on stderr whenever it changes."""

    def __init__(self, spark, what: str, err: TextIO, interval: float = 1.0) -> None:
        super().__init__(name="kafkalike-load-progress", daemon=True)
        self.tracker = spark.sparkContext.statusTracker()
        self.what = what
        self.err = err
        self.interval = interval
        self._finished = threading.Event()
        self._seen: dict[int, tuple[int, int]] = {}
        self._last = ""

    def run(self) -> None:
        while not self._finished.wait(self.interval):
            try:
                self.poll()
            except Exception:       # the session is going away; the job reports its own errors
                return

    def poll(self) -> None:
        active = {}
        for stage_id in sorted(self.tracker.getActiveStageIds()):
            info = self.tracker.getStageInfo(stage_id)
            if info is not None:
                active[stage_id] = info
        parts = []
        for stage_id, (total, _) in sorted(self._seen.items()):
            if stage_id not in active:
                parts.append(f"stage {stage_id}: {total}/{total} tasks done")
                del self._seen[stage_id]
        for stage_id, info in active.items():
            self._seen[stage_id] = (info.numTasks, info.numCompletedTasks)
            text = f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks done"
            if info.numActiveTasks:
                text += f", {info.numActiveTasks} running"
            if info.numFailedTasks:
                text += f", {info.numFailedTasks} failed"
            parts.append(text)
        line = f"[load] {self.what}: " + "; ".join(parts) if parts else ""
        if line and line != self._last:
            say(self.err, line)
            self._last = line

    def stop(self) -> None:
        """Stop polling, and report the stages that ended since the last poll."""
        self._finished.set()
        self.join(5)
        try:
            self.poll()
        except Exception:
            pass


@contextmanager
def progress(spark, what: str, err: TextIO) -> Iterator[None]:
    thread = Progress(spark, what, err)
    thread.start()
    try:
        yield
    finally:
        thread.stop()


def start_spark(master: str):
    from kafkalike.lab.spark import local_session
    import kafkalike.spark

    spark = local_session(master, app_name=PROG, extra_conf=SESSION_CONF)
    spark.sparkContext.setLogLevel("WARN")
    kafkalike.spark.register(spark)
    return spark


def write_staging(spark, options: Mapping[str, str], staging: Path, err: TextIO) -> None:
    """Step 1: the planned ranges as Parquet under staging/topic=T/date=D/."""
    from pyspark.sql import functions as F
    import kafkalike.spark

    df = spark.read.format(kafkalike.spark.FORMAT).options(**options).load()
    df = df.withColumn("date", F.to_date(F.col("timestamp")))
    spark.sparkContext.setJobDescription(f"{PROG}: stage records into {staging}")
    with progress(spark, "write", err):
        df.write.partitionBy("topic", "date").mode("errorifexists").parquet(str(staging))


def count_staging(spark, staging: Path, err: TextIO) -> dict[TopicPartition, tuple[int, int, int]]:
    """(records, lowest offset, highest offset) per topic-partition in the staged files."""
    from pyspark.sql import functions as F

    spark.sparkContext.setJobDescription(f"{PROG}: count {staging}")
    with progress(spark, "count", err):
        rows = (spark.read.parquet(str(staging)).groupBy("topic", "partition")
                .agg(F.count(F.lit(1)).alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi"))
                .collect())
    return {(r["topic"], int(r["partition"])): (int(r["n"]), int(r["lo"]), int(r["hi"])) for r in rows}


def check_counts(plans: Sequence[PartitionPlan], counts: Mapping[TopicPartition, tuple[int, int, int]]) -> None:
    """The staged data lies inside the plan: no partition it did not plan, no offset outside
    its range, no more records than offsets (compaction and transaction markers leave
    fewer)."""
    planned = {p.tp: p for p in plans}
    for tp, (n, lo, hi) in sorted(counts.items()):
        p = planned.get(tp)
        if p is None:
            raise LoadError(f"staged data holds {n} records of {tp[0]}-{tp[1]}, which was not planned")
        if lo < p.start or hi >= p.end or n > p.size:
            raise LoadError(f"staged data of {tp[0]}-{tp[1]} does not match the planned range [{p.start}, "
                            f"{p.end}): {n} records, offsets {lo}..{hi}")


# -- the command line --------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:      # one line, exit 1, as the Kafka tools do
        raise LoadError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kafkalike-spark-load.sh",
        description="Bulk-load topics into Parquet files (partitioned by topic and date) with Spark, exactly "
                    "once: the offsets loaded are committed to a consumer group after the files are in place, "
                    "so kafka-consumer-groups.sh --describe shows the loader's lag and the next run loads only "
                    "what is new.")
    parser.add_argument("--bootstrap-server", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                        help="REQUIRED: The server(s) to connect to.")
    parser.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                        help="A topic to load; repeat it or give a comma-separated list.")
    parser.add_argument("--include", metavar="REGEX",
                        help="Load every topic whose whole name matches this regular expression (instead of "
                             "--topic).")
    parser.add_argument("--group", default=DEFAULT_GROUP, metavar="GROUP",
                        help=f"The consumer group that records what was loaded (default: {DEFAULT_GROUP}). It "
                             "must have no active members.")
    parser.add_argument("--output", metavar="PATH",
                        help="REQUIRED: The directory to load into (a local or shared POSIX path): "
                             "PATH/topic=T/date=YYYY-MM-DD/part-*.parquet.")
    parser.add_argument("--master", default=DEFAULT_MASTER, metavar="MASTER",
                        help=f"The Spark master: local[N], or spark://HOST:PORT (default: {DEFAULT_MASTER}).")
    parser.add_argument("--max-records-per-partition", type=_positive, metavar="N",
                        help="Split a topic-partition's range into Spark tasks of at most N offsets.")
    parser.add_argument("--consumer-property", action="append", default=[], metavar="KEY=VALUE",
                        help="A client setting for the planner and the tasks' consumers (repeatable), e.g. "
                             "fetch.max.bytes=1048576.")
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


@dataclass(frozen=True)
class Args:
    bootstrap: str
    subscription: Subscription
    group: str
    output: Path
    master: str
    max_records: int | None
    consumer_props: dict[str, str]


def parse_args(argv: Sequence[str]) -> Args:
    ns = _parser().parse_args(list(argv))
    if not ns.bootstrap_server:
        raise LoadError("Missing required argument \"[bootstrap-server]\"")
    if not ns.output:
        raise LoadError("Missing required argument \"[output]\"")
    topics = [t.strip() for arg in ns.topic for t in arg.split(",") if t.strip()]
    if ns.topic and not topics:
        raise LoadError("--topic names no topic")
    if bool(topics) == bool(ns.include):
        raise LoadError("Exactly one of --topic or --include must be specified")
    if ns.include:
        try:
            re.compile(ns.include)
        except re.error as exc:
            raise LoadError(f"--include '{ns.include}' is not a valid regular expression: {exc}") from None
        subscription = Subscription("subscribepattern", pattern=ns.include)
    else:
        subscription = Subscription("subscribe", topics=tuple(dict.fromkeys(topics)))
    if not ns.group.strip():
        raise LoadError("--group must not be empty")
    props = {}
    for item in ns.consumer_property:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise LoadError(f"--consumer-property '{item}' is not of the form KEY=VALUE")
        props[key.strip()] = value
    props.pop("bootstrap.servers", None)
    output = ns.output
    if output.startswith("file://"):
        output = output[len("file://"):]
    elif "://" in output:
        raise LoadError(f"--output {ns.output}: only local or mounted paths are supported (files are moved "
                        "with rename)")
    args = Args(ns.bootstrap_server, subscription, ns.group.strip(), Path(output).absolute(), ns.master,
                ns.max_records_per_partition, props)
    # Options the Spark source would refuse fail now, not after Spark has started.
    try:
        source_options({**{f"kafka.{k}": v for k, v in props.items()},
                        "kafka.bootstrap.servers": args.bootstrap, "assign": '{"t":[0]}'}, streaming=False)
    except KafkaOptionError as exc:
        raise LoadError(str(exc).splitlines()[0]) from None
    return args


def say(stream: TextIO, line: str) -> None:
    print(line, file=stream, flush=True)


def table(rows: Sequence[Sequence[object]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]


def run(args: Args, out: TextIO, err: TextIO) -> int:
    from kafkalike.spark.planner import admin_client

    began = time.monotonic()
    layout = Layout(args.output)
    client_config = {**args.consumer_props, "bootstrap.servers": args.bootstrap}
    try:
        layout.prepare()
    except OSError as exc:
        raise LoadError(f"cannot create {args.output}: {exc.strerror or exc}") from None
    with layout.locked():
        with admin_client(client_config) as admin:
            store = GroupOffsets(admin)
            recover(layout, store, out)
            store.check_no_members(args.group)
            plans = plan_load(admin, args.subscription, args.group, store, err,
                              isolation_level({k.lower(): v for k, v in client_config.items()}))
        if not plans:
            what = (f"no topic matches --include '{args.subscription.pattern}'" if args.subscription.pattern
                    else "the topics have no partitions")
            say(out, f"Nothing to load: {what}")
            return 0
        todo = [p for p in plans if p.size > 0]
        topics = sorted({p.topic for p in plans})
        if not todo:
            say(out, f"Nothing new to load: all {len(plans)} partitions of {len(topics)} topic"
                     f"{'s' if len(topics) > 1 else ''} are loaded up to their end offsets (group {args.group})")
            return 0
        run_id = new_run_id()
        total = sum(p.size for p in todo)
        say(out, f"Run {run_id}: loading {total} offsets of {len(todo)} partitions ({', '.join(topics)}) from "
                 f"{args.bootstrap} into {layout.root} (group {args.group}, master {args.master})")
        staging = layout.staging(run_id)
        manifest_written = False
        spark = None
        try:
            spark_began = time.monotonic()
            spark = start_spark(args.master)
            say(err, f"[load] Spark {spark.version} on {spark.sparkContext.master} started in "
                     f"{time.monotonic() - spark_began:.1f} s")
            options = source_read_options(args.bootstrap, todo, args.consumer_props, args.max_records)
            job_began = time.monotonic()
            write_staging(spark, options, staging, err)
            counts = count_staging(spark, staging, err) if staged_files(staging) else {}
            check_counts(todo, counts)
            job_seconds = time.monotonic() - job_began
            files = staged_files(staging)
            for rel in files:
                fsync_path(staging / rel)
            ranges = tuple(LoadRange(p.topic, p.partition, p.start, p.end, counts.get(p.tp, (0, 0, 0))[0])
                           for p in todo)
            manifest = Manifest(run_id, args.group, ranges, tuple(files),
                                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            write_manifest(layout, manifest)
            manifest_written = True
            records = sum(r.records or 0 for r in ranges)
            say(out, f"staged run {run_id}: {len(files)} files, {records} records")
            try:
                with admin_client(client_config) as admin:
                    published = publish(layout, manifest, GroupOffsets(admin))
            except Exception as exc:
                raise LoadError(f"run {run_id} is staged but not published ({first_line(exc)}); the next run "
                                "finishes it") from exc
        finally:
            if not manifest_written:
                shutil.rmtree(staging, ignore_errors=True)
            if spark is not None:
                spark.stop()
        report(out, manifest, published, layout, time.monotonic() - began, job_seconds)
    return 0


def report(out: TextIO, manifest: Manifest, published: Published, layout: Layout, seconds: float,
           job_seconds: float) -> None:
    rows: list[Sequence[object]] = [("TOPIC", "PARTITION", "START-OFFSET", "END-OFFSET", "RECORDS")]
    per_topic: dict[str, list[int]] = {}
    for r in manifest.ranges:
        rows.append((r.topic, r.partition, r.start, r.end, r.records))
        entry = per_topic.setdefault(r.topic, [0, 0])
        entry[0] += 1
        entry[1] += r.records or 0
    say(out, "")
    for line in table(rows):
        say(out, line)
    say(out, "")
    topic_rows: list[Sequence[object]] = [("TOPIC", "PARTITIONS", "RECORDS")]
    topic_rows += [(t, n, records) for t, (n, records) in sorted(per_topic.items())]
    for line in table(topic_rows):
        say(out, line)
    total = sum(records for _, records in per_topic.values())
    say(out, "")
    say(out, f"Loaded {total} records of {len(per_topic)} topic{'s' if len(per_topic) != 1 else ''} "
             f"({len(manifest.ranges)} partitions) into {layout.root} in {seconds:.1f} s (Spark job "
             f"{job_seconds:.1f} s); {len(manifest.files)} files; offsets committed to group {manifest.group}")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if not argv or any(a in ("-h", "--help") for a in argv):
            _parser().print_help(out)
            return 0
        args = parse_args(argv)
        return run(args, out, err)
    except LoadError as exc:
        say(err, f"{PROG}: error: {exc}")
        return 1
    except KafkaOptionError as exc:
        say(err, f"{PROG}: error: {str(exc).splitlines()[0]}")
        return 1
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            return 1
        say(err, f"{PROG}: error: {exc}")
        return 1
    except Exception as exc:
        # Spark's and the client's errors: the first line says what failed; the rest is a trace.
        say(err, f"{PROG}: error: {type(exc).__name__}: {first_line(exc)}")
        return 1


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)


if __name__ == "__main__":
    sys.exit(main())
