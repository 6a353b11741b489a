"""The dashboard against three real brokers, looked at by a real browser (Debian's chromium, headless).

A topic at replication factor 3 and a consumer group (librdkafka's, a live member) that has
committed known offsets, so its lag per partition is known; then one broker, neither the
controller nor the group's coordinator, is killed with kill -9. Chromium takes screenshots
of the three pages (kept as PNGs under the test output directory, $KAFKALIKE_TEST_OUTPUT or
tests/output/) and dumps their DOM, which must show what an operator looks for: the dead
broker down, every partition under-replicated and without it in the ISR, the group's lag
per partition, and the produce and consume rate plots with a line for the topic written to
all along and for the group reading it. The page must also answer at once while the
cluster is in trouble.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition

from kafkalike.client.admin import AdminClient, KafkaAdminError, NewTopic
from kafkalike.lab.cluster import Cluster
from kafkalike.lab.zookeeper import free_ports
from tests.conftest import scratch_dir
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "orders"
GROUP = "slow-readers"
PER_PARTITION = 100
COMMITTED = {0: 10, 1: 20, 2: 30}     # lag 90, 80, 70
BUSY = "clicks"                        # produced to all along, for the produce rate plot
READERS = "click-readers"              # reads BUSY all along, for the consume rate plot


def output_dir() -> Path:
    path = Path(os.environ.get("KAFKALIKE_TEST_OUTPUT") or ROOT / "tests" / "output") / "dashboard"
    path.mkdir(parents=True, exist_ok=True)
    return path


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is not installed: scripts/setup.sh --test installs Debian's chromium package")
    return found


def get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


class Browser:
    """chromium --headless, one process per screenshot or DOM dump, with its own profile."""

    def __init__(self, profile: Path) -> None:
        self.binary = chromium_binary()
        self.profile = profile

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        command = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                   "--hide-scrollbars", f"--user-data-dir={self.profile}", "--no-first-run",
                   "--disable-extensions", "--disable-background-networking", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    def screenshot(self, url: str, path: Path) -> None:
        result = self._run(f"--screenshot={path}", "--window-size=1280,1400", url)
        assert path.exists(), f"chromium made no screenshot of {url}: {result.stderr[-2000:]}"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    def dom(self, url: str) -> str:
        result = self._run("--dump-dom", url)
        assert "<html" in result.stdout, f"chromium dumped no DOM of {url}: {result.stderr[-2000:]}"
        return result.stdout


def rows(dom: str, cls: str) -> list[str]:
    """The opening tags of the table rows whose class list has `cls`."""
    return [m.group(0) for m in re.finditer(r"<tr [^>]*>", dom) if cls in re.search(r'class="([^"]*)"', m.group(0))
            .group(1).split()]


def attr(tag: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]*)"', tag)
    assert found, f"no {name} in {tag}"
    return found.group(1)


@pytest.fixture
def cluster(zk_chroot):
    base = scratch_dir("dashboard")
    cluster = Cluster(zk_chroot, base, 3, {"zookeeper.session.timeout.ms": "6000",
                                           "replica.lag.time.max.ms": "3000",
                                           "offsets.topic.replication.factor": "3",
                                           "offsets.topic.num.partitions": "3"})
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def lagging_group(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def led() -> bool:
        try:
            return all(p.leader is not None for p in admin.describe_topics([TOPIC])[TOPIC].partitions)
        except KafkaAdminError:
            return False
    try:
        admin.create_topics([NewTopic(TOPIC, 3, 3), NewTopic(BUSY, 1, 3)])
        wait_until(led, 30, "leaders of the topic")
    finally:
        admin.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in COMMITTED:
        for i in range(PER_PARTITION):
            producer.produce(TOPIC, value=f"order {partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 45000})
    try:
        consumer.subscribe([TOPIC])
        wait_until(lambda: consumer.poll(0.2) is not None or consumer.assignment(), 45, "the group's assignment")
        consumer.commit(offsets=[CkTopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()], asynchronous=False)
        yield consumer
    finally:
        consumer.close()


@pytest.fixture
def busy_producer(cluster, lagging_group):
    """About 200 records a second to BUSY until the test ends, and the group READERS reading
    them, committing every half second (for the consume rate plot)."""
    stop = threading.Event()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "linger.ms": 5})
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": READERS, "auto.offset.reset": "earliest",
                       "auto.commit.interval.ms": 500})
    reader.subscribe([BUSY])

    def produce() -> None:
        while not stop.is_set():
            for i in range(20):
                producer.produce(BUSY, value=b"click %d" % i)
            producer.poll(0)
            stop.wait(0.1)
        producer.flush(10)

    def read() -> None:
        while not stop.is_set():
            reader.poll(0.2)
        reader.close()
    threads = [threading.Thread(target=produce, daemon=True), threading.Thread(target=read, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(15)


@pytest.fixture
def dashboard(cluster, zk_chroot):
    port = free_ports(1)[0]
    log = (output_dir() / "dashboard.stderr").open("w")
    process = subprocess.Popen([str(ROOT / "bin" / "kafkalike-dashboard.sh"), "--bootstrap-server", cluster.bootstrap,
                                "--zookeeper", zk_chroot, "--port", str(port), "--refresh", "1", "--window", "1"],
                               stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        first = process.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in first, first
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(10)
        log.close()


def test_dashboard_shows_a_dead_broker_under_replicated_partitions_and_lag(cluster, lagging_group, busy_producer,
                                                                          dashboard):
    url = dashboard
    snapshot = wait_until(lambda: json.loads(get(f"{url}/snapshot.json"))["snapshot"], 30, "a first snapshot")
    wait_until(lambda: any(g["group_id"] == GROUP and g["members"]
                           for g in json.loads(get(f"{url}/snapshot.json"))["snapshot"]["groups"]),
               30, "the group with its member")
    snapshot = json.loads(get(f"{url}/snapshot.json"))["snapshot"]
    controller = snapshot["controller_id"]
    coordinator = next(g["coordinator"] for g in snapshot["groups"] if g["group_id"] == GROUP)
    victim = next(b.broker_id for b in cluster.brokers if b.broker_id not in (controller, coordinator))

    cluster.broker(victim).kill()
    started = time.monotonic()
    page = get(f"{url}/", timeout=2)        # answered from the last snapshot, never waiting on the cluster
    assert time.monotonic() - started < 1.5 and b"Brokers" in page

    def seen_down_with_the_group_listed():
        # Before ZooKeeper expires the dead broker's session the metadata still lists it; the
        # group, coordinated elsewhere, must not be lost to the dead broker's ListGroups.
        snap = json.loads(get(f"{url}/snapshot.json"))["snapshot"]
        dead = [b for b in snap["brokers"] if b["id"] == victim and b["status"] == "down"]
        group = [g for g in snap["groups"] if g["group_id"] == GROUP and not g["error"] and g["members"]]
        return dead and group and dead[0]["in_metadata"]
    wait_until(seen_down_with_the_group_listed, 5, f"broker {victim} down, still in the metadata, and the group")

    def settled():
        snap = json.loads(get(f"{url}/snapshot.json"))["snapshot"]
        dead = [b for b in snap["brokers"] if b["id"] == victim]
        topic = next((t for t in snap["topics"] if t["name"] == TOPIC), None)
        group = next((g for g in snap["groups"] if g["group_id"] == GROUP), None)
        rates = json.loads(get(f"{url}/snapshot.json"))["rates"]
        rate, read = rates["produced"].get(BUSY, 0), rates.get("fetched", {}).get(READERS, 0)
        return (dead and dead[0]["status"] == "down" and topic is not None and rate > 20 and read > 20
                and all(victim not in p["isr"] for p in topic["partitions"])
                and group is not None and all(p["lag"] is not None for p in group["partitions"])
                and len(group["partitions"]) == 3)
    wait_until(settled, 45, f"the dashboard to see broker {victim} dead and the ISRs shrunk")

    browser = Browser(scratch_dir("chromium"))
    out = output_dir()
    try:
        for name, path in (("cluster", "/"), ("topics", "/topics"), ("groups", "/groups")):
            browser.screenshot(f"{url}{path}", out / f"{name}.png")
        cluster_dom, topics_dom, groups_dom = (browser.dom(f"{url}{p}") for p in ("/", "/topics", "/groups"))
    finally:
        shutil.rmtree(browser.profile, ignore_errors=True)
    for name in ("cluster", "topics", "groups"):
        assert (out / f"{name}.png").stat().st_size > 10_000, f"{name}.png looks empty"
    (out / "cluster.html").write_text(cluster_dom)
    (out / "topics.html").write_text(topics_dom)
    (out / "groups.html").write_text(groups_dom)

    # Brokers: the victim down (red), the others up, the controller marked.
    down = rows(cluster_dom, "down")
    assert [attr(r, "data-broker") for r in down] == [str(victim)], down
    up = sorted(attr(r, "data-broker") for r in rows(cluster_dom, "up"))
    assert up == sorted(str(b.broker_id) for b in cluster.brokers if b.broker_id != victim)
    assert re.search(rf'id="controller">controller <b>{controller}</b>', cluster_dom)
    assert "<svg" in cluster_dom and "Produce rate per topic" in cluster_dom
    plot = cluster_dom[cluster_dom.index('aria-label="Produce rate per topic"'):]
    plot = plot[:plot.index("</svg>")]
    assert "<polyline" in plot and f">{BUSY} " in plot      # the busy topic's line, and its legend
    plot = cluster_dom[cluster_dom.index('aria-label="Consume rate per group"'):]
    plot = plot[:plot.index("</svg>")]
    assert "<polyline" in plot and f">{READERS} " in plot   # the reading group's line, and its legend

    # Topics: all three partitions of the RF=3 topic under-replicated, the victim out of each ISR.
    under = [r for r in rows(topics_dom, "under-replicated") if attr(r, "data-topic") == TOPIC]
    assert sorted(attr(r, "data-partition") for r in under) == ["0", "1", "2"]
    for r in under:
        assert str(victim) not in attr(r, "data-isr").split(","), r
        assert len(attr(r, "data-isr").split(",")) == 2

    # Groups: the lag of each partition, as committed.
    lags = {int(attr(r, "data-partition")): attr(r, "data-lag") for r in rows(groups_dom, "lag")
            if attr(r, "data-group") == GROUP and attr(r, "data-topic") == TOPIC}
    assert lags == {p: str(PER_PARTITION - o) for p, o in COMMITTED.items()}
    assert "total lag 240" in groups_dom


def test_dashboard_over_sasl_with_a_command_config(zk_chroot):
    """A cluster whose listener wants SASL: every request of the dashboard (metadata, broker
    probes, ListGroups per broker, offsets) logs in with the --command-config's settings."""
    from tests.security_certs import JAAS_PLAIN

    base = scratch_dir("dashboard-sasl")
    plain_port, sasl_port, http_port = free_ports(3)
    cluster = Cluster(zk_chroot, base, 1, {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS_PLAIN})
    cluster.brokers[0].port = plain_port
    client = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
              "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                  'username="alice" password="alice-secret";'}
    process = None
    try:
        cluster.start()
        sasl = f"127.0.0.1:{sasl_port}"
        with AdminClient({"bootstrap.servers": sasl, **client}) as admin:
            admin.create_topics([NewTopic("secure-orders", 1, 1)])
            wait_until(lambda: admin.describe_topics(["secure-orders"])["secure-orders"].partitions[0].leader == 0,
                       30, "the topic's leader")
            admin.alter_group_offsets("secure-readers", {("secure-orders", 0): 0})
        config = base / "client.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in client.items()))
        process = subprocess.Popen([str(ROOT / "bin" / "kafkalike-dashboard.sh"), "--bootstrap-server", sasl,
                                    "--command-config", str(config), "--port", str(http_port), "--refresh", "1"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert f":{http_port}/" in process.stdout.readline()

        def looked():
            snap = json.loads(get(f"http://127.0.0.1:{http_port}/snapshot.json"))["snapshot"]
            return snap if snap and any(g["group_id"] == "secure-readers" for g in snap["groups"]) else None
        snap = wait_until(looked, 30, "the group seen over SASL")
        assert snap["errors"] == []
        assert [(b["id"], b["port"], b["status"]) for b in snap["brokers"]] == [(0, sasl_port, "up")]
        group = next(g for g in snap["groups"] if g["group_id"] == "secure-readers")
        assert [(p["topic"], p["partition"], p["current_offset"]) for p in group["partitions"]] == [
            ("secure-orders", 0, 0)]
    finally:
        if process is not None:
            process.kill()
            process.wait(10)
        cluster.kill()
        shutil.rmtree(base, ignore_errors=True)
