"""bin/kafkalike-spark-load.sh as a user runs it: topics into Parquet, exactly once.

Records go in through confluent-kafka (librdkafka, an independent client) with keys and
timestamps on both sides of a UTC midnight; the Parquet output is read back with pyarrow
(not Spark: this process holds no JVM) and must hold every record exactly once, in
topic=T/date=D directories that match each record's timestamp. The loader's group is
judged by bin/kafka-consumer-groups.sh --describe. Each run starts a Spark JVM of its
own (10 s to a minute on a busy 2-core box), so the runs are few: a first and an
incremental run, a kill -9 in the Spark job and one right after the manifest, then the
run that recovers, and one run on a standalone cluster (master and two workers).
"""
from __future__ import annotations

import collections
import datetime as dt
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalike.lab.processes import group_alive
from tests.conftest import REPO_ROOT, scratch_dir

pytestmark = [pytest.mark.interop, pytest.mark.spark]

LOAD = str(REPO_ROOT / "bin" / "kafkalike-spark-load.sh")
GROUPS = str(REPO_ROOT / "bin" / "kafka-consumer-groups.sh")
RUN_TIMEOUT = 600
DAY_MS = 86_400_000


@pytest.fixture
def output_dir():
    path = scratch_dir("spark-load")
    try:
        yield path / "out"
    finally:
        shutil.rmtree(path, ignore_errors=True)


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in partitions.items()], operation_timeout=30)
    for future in futures.values():
        future.result()


def timestamps(count: int) -> list[int]:
    """Times on both sides of today's UTC midnight (just before and at it, yesterday, now)."""
    now = int(time.time() * 1000)
    midnight = now - now % DAY_MS
    choices = [midnight - 1, midnight, midnight - DAY_MS // 2, now - 1000, midnight - DAY_MS + 1]
    return [choices[i % len(choices)] for i in range(count)]


def produce(bootstrap: str, topic: str, count: int, tag: str) -> list[tuple]:
    """count keyed records; returns (topic, key, value, timestamp) of each."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent = []
    for i, ts in enumerate(timestamps(count)):
        key, value = f"key-{i % 13}".encode(), f"{tag}-{topic}-{i}".encode()
        producer.produce(topic, key=key, value=value, timestamp=ts)
        sent.append((topic, key, value, ts))
    assert producer.flush(30) == 0
    return sent


def utc_date(ts_ms: int) -> str:
    return dt.datetime.fromtimestamp(ts_ms / 1000, dt.timezone.utc).date().isoformat()


def read_output(path: Path) -> list[dict]:
    """Every row of the output, as a reader of the dataset sees it (hive partitions, _dirs skipped)."""
    import pyarrow.dataset as ds

    if not any(p.name.endswith(".parquet") for p in data_files(path)):
        return []
    return ds.dataset(str(path), format="parquet", partitioning="hive").to_table().to_pylist()


def data_files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file() and "_kafkalike" not in p.relative_to(path).parts]


def assert_exactly_once(path: Path, sent: list[tuple]) -> list[dict]:
    rows = read_output(path)
    per_offset = collections.Counter((r["topic"], r["partition"], r["offset"]) for r in rows)
    duplicated = {k: n for k, n in per_offset.items() if n > 1}
    assert not duplicated, f"records loaded more than once: {sorted(duplicated)[:10]}"
    loaded = collections.Counter((r["topic"], r["key"], r["value"], round(r["timestamp"].timestamp() * 1000))
                                 for r in rows)
    assert loaded == collections.Counter(sent)
    for r in rows:
        assert str(r["date"]) == r["timestamp"].astimezone(dt.timezone.utc).date().isoformat()
    for f in data_files(path):
        rel = f.relative_to(path).parts
        assert re.fullmatch(r"topic=.+", rel[0]) and re.fullmatch(r"date=\d{4}-\d\d-\d\d", rel[1]), rel
        assert rel[2].startswith("part-") and rel[2].endswith(".parquet"), rel
    return rows


def load_args(bootstrap: str, output: Path, group: str, *more: str) -> list[str]:
    return [LOAD, "--bootstrap-server", bootstrap, "--output", str(output), "--group", group, *more]


def run_load(args: list[str]) -> subprocess.CompletedProcess:
    started = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        kill_group(proc)
    print(f"load run took {time.monotonic() - started:.1f} s:\n{out}")
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{out}\nstderr:\n{err}"
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def run_load_and_kill(args: list[str], marker: str) -> str:
    """Run the load; kill -9 its whole process group (driver, Spark JVM, Python workers) as
    soon as a line containing marker appears. Returns what it printed."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    seen = []
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            assert time.monotonic() < deadline, "".join(seen)
        else:
            pytest.fail(f"the load ended (exit {proc.wait()}) before printing {marker!r}:\n{''.join(seen)}")
    finally:
        kill_group(proc)
    assert proc.returncode == -signal.SIGKILL, "".join(seen)
    return "".join(seen)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)
    if proc.stdout is not None:
        proc.stdout.close()
    deadline = time.monotonic() + 30
    while group_alive(proc.pid):
        assert time.monotonic() < deadline, f"processes of group {proc.pid} outlived kill -9"
        time.sleep(0.1)


def describe_group(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[str, str, str]]:
    """(CURRENT-OFFSET, LOG-END-OFFSET, LAG) per partition, from kafka-consumer-groups.sh."""
    result = subprocess.run([GROUPS, "--bootstrap-server", bootstrap, "--describe", "--group", group],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0] == group:
            rows[(cols[1], int(cols[2]))] = (cols[3], cols[4], cols[5])
    return rows


def per_topic_counts(stdout: str) -> dict[str, int]:
    """The TOPIC/PARTITIONS/RECORDS table a run prints."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == ["TOPIC", "PARTITIONS", "RECORDS"])
    out = {}
    for line in lines[start + 1:]:
        cols = line.split()
        if len(cols) != 3:
            break
        out[cols[0]] = int(cols[2])
    return out


def assert_caught_up(bootstrap: str, group: str, sent: list[tuple]) -> None:
    per_partition = collections.Counter()
    described = describe_group(bootstrap, group)
    for (topic, partition), (current, end, lag) in described.items():
        assert lag == "0" and current == end, described
        per_partition[topic] += int(end)
    assert per_partition == collections.Counter(t for t, *_ in sent), described


def test_runs_load_only_what_is_new_and_commit_it(broker, output_dir):
    suffix = uuid.uuid4().hex[:6]
    orders, clicks = f"load-orders-{suffix}", f"load-clicks-{suffix}"
    create_topics(broker.bootstrap, {orders: 3, clicks: 2})
    group = f"loader-{suffix}"
    sent = produce(broker.bootstrap, orders, 90, "first") + produce(broker.bootstrap, clicks, 40, "first")

    first = run_load(load_args(broker.bootstrap, output_dir, group, "--topic", orders, "--topic", clicks))
    assert per_topic_counts(first.stdout) == {orders: 90, clicks: 40}
    assert "[load] write: stage" in first.stderr
    assert re.search(r"^Loaded 130 records of 2 topics \(5 partitions\)", first.stdout, re.M), first.stdout
    rows = assert_exactly_once(output_dir, sent)
    assert {str(r["date"]) for r in rows} == {utc_date(ts) for *_, ts in sent}
    assert len({str(r["date"]) for r in rows}) == 2
    assert_caught_up(broker.bootstrap, group, sent)
    files_before = set(data_files(output_dir))

    more = produce(broker.bootstrap, orders, 25, "second") + produce(broker.bootstrap, clicks, 7, "second")
    described = describe_group(broker.bootstrap, group)
    assert sum(int(lag) for *_, lag in described.values()) == 32
    # The second run names the topics by a pattern and cuts ranges into tasks of 4 offsets.
    second = run_load(load_args(broker.bootstrap, output_dir, group, "--include", f"load-.*-{suffix}",
                                "--max-records-per-partition", "4"))
    assert per_topic_counts(second.stdout) == {orders: 25, clicks: 7}
    assert files_before < set(data_files(output_dir))
    assert_exactly_once(output_dir, sent + more)
    assert_caught_up(broker.bootstrap, group, sent + more)

    third = run_load(load_args(broker.bootstrap, output_dir, group, "--topic", f"{orders},{clicks}"))
    assert third.stdout.startswith("Nothing new to load: all 5 partitions of 2 topics"), third.stdout
    assert_exactly_once(output_dir, sent + more)


def test_kill_9_part_way_then_run_again_loads_each_record_once(broker, output_dir):
    suffix = uuid.uuid4().hex[:6]
    topic = f"load-killed-{suffix}"
    create_topics(broker.bootstrap, {topic: 2})
    group = f"loader-{suffix}"
    sent = produce(broker.bootstrap, topic, 60, "kill")
    args = load_args(broker.bootstrap, output_dir, group, "--topic", topic)
    state = output_dir / "_kafkalike"

    # Killed while Spark writes the staging directory: nothing is published or committed.
    printed = run_load_and_kill(args, "[load] write: stage")
    first_run = re.search(r"^Run (\S+):", printed, re.M).group(1)
    assert data_files(output_dir) == []
    assert describe_group(broker.bootstrap, group) == {}
    assert (state / "staging" / first_run).is_dir()
    assert not (state / "loads" / f"{first_run}.json").exists()

    # Killed as soon as its manifest is written; it first drops the first run's staging.
    printed = run_load_and_kill(args, "staged run")
    assert f"Removed the staging of interrupted run {first_run}" in printed
    second_run = re.search(r"^staged run (\S+):", printed, re.M).group(1)
    rows = read_output(output_dir)
    assert len(rows) == len({(r["partition"], r["offset"]) for r in rows}) <= len(sent)
    left_manifest = (state / "loads" / f"{second_run}.json").exists()
    print(f"after the second kill: manifest left {left_manifest}, {len(rows)} rows published, "
          f"group {describe_group(broker.bootstrap, group)}")

    final = run_load(args)
    if left_manifest:
        assert f"Recovered run {second_run}" in final.stdout
    assert_exactly_once(output_dir, sent)
    assert_caught_up(broker.bootstrap, group, sent)
    assert list((state / "loads").iterdir()) == []
    assert list((state / "staging").iterdir()) == []


def test_load_on_a_standalone_cluster(broker, spark_standalone, output_dir):
    suffix = uuid.uuid4().hex[:6]
    topic = f"load-standalone-{suffix}"
    create_topics(broker.bootstrap, {topic: 3})
    group = f"loader-{suffix}"
    sent = produce(broker.bootstrap, topic, 75, "standalone")

    result = run_load(load_args(broker.bootstrap, output_dir, group, "--topic", topic,
                                "--master", spark_standalone.master_url))
    assert f"on {spark_standalone.master_url} started" in result.stderr
    assert per_topic_counts(result.stdout) == {topic: 75}
    assert_exactly_once(output_dir, sent)
    assert_caught_up(broker.bootstrap, group, sent)
    # The tasks ran in executors the workers started, not in the driver's process.
    apps = [p for i in (1, 2) for p in (spark_standalone.worker_dir(i) / "work").glob("app-*")]
    assert apps, spark_standalone.log_tail()
