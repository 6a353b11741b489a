"""Fixtures shared by every test tier.

ZooKeeper here is always the real server from Debian's package. A test that asks for
it when it is not installed errors with the fix in the message; it is never skipped,
so a machine without ZooKeeper cannot pass the suite by accident. Spark (the `spark`
and `spark_standalone` fixtures) is held to the same rule.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from kazoo.client import KazooClient

from kafkalike.lab.zookeeper import ZooKeeperEnsemble, ZooKeeperServer

REPO_ROOT = Path(__file__).resolve().parents[1]
# /dev/shm is memory: fsyncs there cost nothing, and a crashed run leaves no disk debris.
SCRATCH_ROOT = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
# The tier of each test directory; -m 'not bench' then drops benchmarks even when a
# file forgets its pytestmark.
TIER_OF_DIRECTORY = {"integration": "integration", "interop": "interop", "fault": "fault", "bench": "bench"}


@pytest.hookimpl(tryfirst=True)   # before xdist reads the groups (its hook names them in node ids)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_dir = Path(__file__).resolve().parent
    for item in items:
        try:
            tier = Path(item.path).resolve().relative_to(tests_dir).parts[0]
        except ValueError:
            continue
        marker = TIER_OF_DIRECTORY.get(tier)
        if marker is not None and item.get_closest_marker(marker) is None:
            item.add_marker(getattr(pytest.mark, marker))
        item.add_marker(pytest.mark.xdist_group(worker_group(item)))


def worker_group(item: pytest.Item) -> str:
    """Which tests share a worker when scripts/test.sh spreads the run over pytest-xdist
    workers (--dist loadgroup): a module stays on one worker, so its module-scoped
    cluster starts once; every Spark test shares one worker, so the run holds one
    SparkSession; the labs share one, so no two labs look for free port blocks or
    namespaces at the same time."""
    if item.get_closest_marker("spark") is not None:
        return "spark"
    if Path(item.path).name.startswith("test_lab"):
        return "lab"
    return item.nodeid.split("::", 1)[0]


def scratch_dir(prefix: str) -> Path:
    """A fresh directory under /dev/shm that the caller must remove."""
    return Path(tempfile.mkdtemp(prefix=f"kafkalike-{prefix}-", dir=SCRATCH_ROOT))


@pytest.fixture
def shm_path() -> Iterator[Path]:
    """Like tmp_path, but in memory: for log dirs and anything that fsyncs."""
    path = scratch_dir("test")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """One standalone ZooKeeper for the whole run, on a free loopback port.

    Tests that share it keep to their own znodes (see zk_chroot). It is killed and its
    directory removed at the end, whatever happened.
    """
    base = scratch_dir("zk")
    server = ZooKeeperServer(base, force_sync=False)
    try:
        server.start()
        server.wait_ready(timeout=60)
        yield server
    finally:
        server.remove()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def zk_chroot(zookeeper: ZooKeeperServer) -> Iterator[str]:
    """A connect string with a fresh chroot ("127.0.0.1:PORT/t-..."), deleted afterwards."""
    path = f"/t-{uuid.uuid4().hex[:12]}"
    admin = KazooClient(hosts=zookeeper.connect_string)
    admin.start(timeout=15)
    try:
        admin.create(path)
        yield zookeeper.connect_string + path
        admin.delete(path, recursive=True)
    finally:
        admin.stop()
        admin.close()


@pytest.fixture
def kazoo_client(zk_chroot: str) -> Iterator[KazooClient]:
    """A connected kazoo client confined to this test's chroot."""
    client = KazooClient(hosts=zk_chroot)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def zookeeper_ensemble() -> Iterator[ZooKeeperEnsemble]:
    """A 3-node ensemble of this test's own, already serving; fault tests may kill members."""
    base = scratch_dir("zk-ensemble")
    ensemble = ZooKeeperEnsemble(base, 3, force_sync=False)
    try:
        ensemble.start()
        ensemble.wait_ready(timeout=90)
        yield ensemble
    finally:
        ensemble.remove()
        shutil.rmtree(base, ignore_errors=True)


def _cluster(zk_connect: str, size: int, overrides: dict[str, str] | None = None):
    from kafkalike.lab.cluster import Cluster
    base = scratch_dir("cluster")
    cluster = Cluster(zk_connect, base, size, overrides)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def module_zk_chroot(zookeeper: ZooKeeperServer) -> Iterator[str]:
    """Like zk_chroot, shared by one module (a broker cluster lives in it)."""
    path = f"/m-{uuid.uuid4().hex[:12]}"
    admin = KazooClient(hosts=zookeeper.connect_string)
    admin.start(timeout=15)
    try:
        admin.create(path)
        yield zookeeper.connect_string + path
        admin.delete(path, recursive=True)
    finally:
        admin.stop()
        admin.close()


@pytest.fixture(scope="module")
def broker(module_zk_chroot: str):
    """One real broker process for a whole test module (killed and removed at the end)."""
    for cluster in _cluster(module_zk_chroot, 1):
        yield cluster.brokers[0]


@pytest.fixture
def fresh_broker(zk_chroot: str):
    """A broker of this test's own: fault tests may kill it."""
    for cluster in _cluster(zk_chroot, 1):
        yield cluster.brokers[0]


@pytest.fixture
def kafka_cluster(zk_chroot: str):
    """Three brokers of this test's own."""
    yield from _cluster(zk_chroot, 3)


SPARK_INSTALL_HINT = "./scripts/setup.sh --test installs the spark extra (pyspark>=4.0, pyarrow) and Java"


def _spark_failure(what: str, exc: Exception) -> str:
    """Why a Spark fixture fails, with the way to install Spark (never a skip)."""
    message = f"{what} could not start: {type(exc).__name__}: {exc}"
    return message if "setup.sh" in message else f"{message}\n{SPARK_INSTALL_HINT}"


@pytest.fixture(scope="session", autouse=True)
def spark_scratch() -> Iterator[Path]:
    """Spark's scratch space for the run (SPARK_LOCAL_DIRS, inherited by every Spark job a
    test starts), removed at the end: Spark's JVMs leave spark-*, blockmgr-* and
    artifacts-* directories behind in /tmp when they are killed rather than stopped."""
    path = scratch_dir("spark-local")
    before = os.environ.get("SPARK_LOCAL_DIRS")
    os.environ["SPARK_LOCAL_DIRS"] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop("SPARK_LOCAL_DIRS", None)
        else:
            os.environ["SPARK_LOCAL_DIRS"] = before
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(spark_scratch: Path):
    """One local[2] SparkSession for the whole run (a JVM holds one); stopped at the end.

    Tests that register Python data sources share it: use names of their own.
    """
    failure = None
    try:
        from kafkalike.lab.spark import local_session
        session = local_session("local[2]", app_name="kafkalike-tests",
                                extra_conf={"spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={spark_scratch}"})
    except Exception as exc:  # no pyspark, no Java, or the JVM would not start
        failure = _spark_failure("a local SparkSession", exc)
    if failure:
        pytest.fail(failure, pytrace=False)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_standalone():
    """A real standalone cluster (master and 2 workers, 1 core and 1 GiB each), already
    serving, shared by the run; killed (kill -9) and its directory removed afterwards.

    Its drivers must run in processes of their own (the `spark` session holds this one's JVM).
    """
    from kafkalike.lab.spark import SparkStandalone  # imports no pyspark

    base = scratch_dir("spark")
    cluster = SparkStandalone(base, workers=2)
    try:
        failure = None
        try:
            cluster.start()
            cluster.wait_ready(timeout=180)
        except Exception as exc:  # no pyspark, no Java, or a daemon died (its log tail is in exc)
            failure = _spark_failure("a Spark standalone cluster", exc)
        if failure:
            pytest.fail(failure, pytrace=False)
        yield cluster
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)
