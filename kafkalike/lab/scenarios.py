"""Fault scenarios judged by Kafka's own verifiable tools.

Each scenario makes a fresh topic (replication factor 3, min.insync.replicas=2), starts
bin/kafka-verifiable-consumer.sh (--verbose: one record_data line per record read) and
bin/kafka-verifiable-producer.sh (--acks -1, throttled), hurts the lab while they run,
heals it, stops the producer, lets the consumer read up to every high watermark and
judges the two event streams (kafkalike.lab.judge). The verdict is PASS when no
acknowledged record is lost and no record is duplicated or reordered within its
partition (the producer sends without retries, so either is the brokers' doing). The
tools' raw events are kept under
LAB_DIR/scenarios/<topic>/ until `down`.

The broker faults follow Kafka's replication system test (tests/kafkatest/tests/core/
replication_test.py): {clean shutdown (SIGTERM), kill -9, bounce} x {the leader of
partition 0, the controller}, each on an RF=3, min.insync.replicas=2 topic under acks=all.
A bounce is Kafka's hard_bounce: kill -9, start it again as soon as ZooKeeper has expired
its session (a broker started earlier finds its /brokers/ids znode taken), without
waiting for a new leader or a full ISR, and chase whoever holds the role next, several
times. Besides those: the ZooKeeper ensemble's leader killed (`up --zookeeper
ensemble`), a broker's ZooKeeper session expired by freezing it (SIGSTOP for longer than
zookeeper.session.timeout.ms, then SIGCONT, as a long GC pause would), a rolling
restart, a leader cut off by a network partition, and an unclean leader election: the
one scenario that may lose acknowledged records, and whose verdict says what that cost
(EXPECTED LOSS) instead of failing.

The scenarios run against the lab as it is (`up` first): they need every node alive and
at least 3 brokers, and they leave every node running (and the network whole) again,
whatever happened. A network partition needs a backend with a network of its own
(`up --backend netns` or `--backend docker`); `all` runs the scenarios the lab's backend can run.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from kafkalike.client.admin import AdminClient, NewTopic
from kafkalike.client.groups import OffsetSpec
from kafkalike.lab.cluster import REPO_ROOT
from kafkalike.lab.judge import Judgement, judge
from kafkalike.lab.local import SCENARIOS_DIR, Lab
from kafkalike.lab.observe import PartitionState, ZooKeeperView, wait_for, zookeeper_mode
from kafkalike.lab.processes import send_signal
from kafkalike.lab.state import LabError, Node
from kafkalike.lab.zookeeper import death_signal_prefix

PARTITIONS = 3
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
BOUNCES = 5                     # Kafka's replication test bounces the broker 5 times
PASS, FAIL, EXPECTED_LOSS = "PASS", "FAIL", "EXPECTED LOSS"


class ToolProcess:
    """A bin/ verifiable tool in the background; its JSON events parsed as they come and
    copied to events.jsonl, its stderr to stderr.log."""

    def __init__(self, script: str, args: list[str], keep_dir: Path) -> None:
        keep_dir.mkdir(parents=True, exist_ok=True)
        self.script = script
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self.stopped = False            # stop() was asked for: its exit is no surprise
        self._stderr = open(keep_dir / f"{script.removesuffix('.sh')}.stderr.log", "w")
        self._copy = open(keep_dir / f"{script.removesuffix('.sh')}.events.jsonl", "w")
        env = {**os.environ, "PYTHON": sys.executable}
        # Unlike the lab's daemons, the tools die with the scenario: an interrupted run
        # leaves no producer writing forever.
        command = [*death_signal_prefix(), str(REPO_ROOT / "bin" / script), *args]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env)
        self._reader = threading.Thread(target=self._read, name=f"{script}-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._copy.write(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self.events)

    def count(self, name: str) -> int:
        with self._lock:
            return sum(1 for e in self.events if e.get("name") == name)

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM (the tools close cleanly on it, printing shutdown_complete), kill -9 if stuck."""
        self.stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._reader.join(10)
        self._copy.close()
        self._stderr.close()


@dataclass
class Outcome:
    name: str
    topic: str
    duration: float
    judgement: Judgement
    error: str | None = None
    loss_allowed: bool = False      # the scenario's fault may lose acknowledged records by design

    @property
    def verdict(self) -> str:
        """PASS: nothing acknowledged was lost, and no record was stored twice or behind a
        later one. EXPECTED LOSS: records were lost where the scenario's configuration
        allows it (unclean election), which is its finding, not a failure. FAIL otherwise,
        or when the scenario could not run to its end.

        Duplicates and reorderings fail every scenario, the unclean one included: the
        producer sends without retries (retries=0) and in order, so neither can come from
        the client, and no fault here licenses the brokers to copy or reorder a record
        (an unclean election truncates logs to a prefix of the new leader's, which loses
        records but neither copies nor reorders them)."""
        j = self.judgement
        if self.error is not None or j.acknowledged == 0:
            return FAIL
        if j.duplicated or j.reordered:
            return FAIL
        if j.lost == 0:
            return PASS
        return EXPECTED_LOSS if self.loss_allowed else FAIL

    @property
    def passed(self) -> bool:
        return self.verdict != FAIL


class Run:
    """One scenario in progress: the lab, its topic, the two tools and a clock."""

    def __init__(self, lab: Lab, name: str, throughput: int, out: TextIO, bounces: int = BOUNCES,
                 topic_configs: dict[str, str] | None = None) -> None:
        self.lab = lab
        self.name = name
        self.throughput = throughput
        self.bounces = bounces
        self.topic_configs = topic_configs or {}
        self.out = out
        self.paused: list[Node] = []        # frozen with SIGSTOP; heal() wakes them
        self.state = lab.state()
        self.topic = f"lab-{name}-{time.strftime('%H%M%S')}"
        self.keep_dir = lab.dir / SCENARIOS_DIR / self.topic
        self.began = time.monotonic()
        self.zk = ZooKeeperView(self.state.zookeeper_connect)
        self.producer: ToolProcess | None = None
        self.consumer: ToolProcess | None = None

    # -- narration ---------------------------------------------------------------------

    def log(self, message: str) -> None:
        print(f"  {time.monotonic() - self.began:6.1f}s  {message}", file=self.out, flush=True)

    # -- the lab -----------------------------------------------------------------------

    def broker(self, broker_id: int) -> Node:
        node = self.lab.state().broker(broker_id)
        if node is None:
            raise LabError(f"broker {broker_id} is not one of this lab's")
        return node

    def partition(self, partition: int) -> PartitionState:
        found = self.zk.partition(self.topic, partition)
        if found is None:
            raise LabError(f"{self.topic}-{partition} has no state in ZooKeeper")
        return found

    def leader_of(self, partition: int) -> Node:
        return self.broker(self.partition(partition).leader)

    def controller(self) -> Node:
        controller = wait_for(lambda: (self.zk.controller(),) if self.zk.controller() is not None else None,
                              30, "a controller")[0]
        return self.broker(controller)

    def kill(self, node: Node, sig: int) -> None:
        how = "kill -9" if sig == signal.SIGKILL else "SIGTERM (controlled shutdown)"
        self.log(f"{how} {node.name} (pid {node.pid})")
        elapsed = self.lab.kill(node, sig, timeout=60)
        if sig != signal.SIGKILL:
            self.log(f"{node.name} stopped cleanly after {elapsed:.1f}s")

    def pause(self, node: Node) -> None:
        """SIGSTOP: the process stays, answers nothing (not even ZooKeeper's pings)."""
        self.log(f"SIGSTOP {node.name} (pid {node.pid}): frozen, as in a long GC pause")
        send_signal(node.pid, signal.SIGSTOP)
        self.paused.append(node)

    def resume(self, node: Node) -> None:
        send_signal(node.pid, signal.SIGCONT)
        self.paused.remove(node)
        self.log(f"SIGCONT {node.name}: it runs again")

    def restart(self, node: Node) -> None:
        self.log(f"restart {node.name}")
        began = time.monotonic()
        node = self.lab.restart(node, progress=self.log)
        self.log(f"{node.name} serving again (pid {node.pid}) after {time.monotonic() - began:.1f}s")

    def cut_off(self, nodes: list[Node]) -> None:
        record = self.lab.partition([n.name for n in nodes])
        how = "iptables DROP" if record["method"] == "drop" else "bridge ports down"
        self.log(f"partition: {', '.join(record['isolated'])} cut off from {', '.join(record['from'])} ({how})")

    def heal_network(self) -> None:
        healed = self.lab.heal()
        if healed:
            self.log(f"heal: {', '.join(healed['isolated'])} reach the other nodes again")

    def wait_registered(self, node: Node, timeout: float = 60) -> None:
        """A broker that lost its ZooKeeper session registers again once it reaches ZooKeeper."""
        wait_for(lambda: node.broker_id in self.zk.registered(), timeout,
                 f"{node.name} to register again (/brokers/ids/{node.broker_id})")
        self.log(f"{node.name} registered again")

    def wait_new_leader(self, partition: int, old: int, timeout: float = 45) -> PartitionState:
        def moved() -> PartitionState | None:
            found = self.zk.partition(self.topic, partition)
            return found if found is not None and found.leader >= 0 and found.leader != old else None
        state = wait_for(moved, timeout, f"a new leader of {self.topic}-{partition}")
        self.log(f"{self.topic}-{partition} led by broker-{state.leader} "
                 f"(leader epoch {state.leader_epoch}, ISR {list(state.isr)})")
        return state

    def wait_leaders_elsewhere(self, gone: int, timeout: float = 45) -> None:
        def elsewhere() -> bool:
            states = self.zk.partitions(self.topic).values()
            return all(s is not None and s.leader >= 0 and s.leader != gone for s in states)
        wait_for(elsewhere, timeout, f"every partition of {self.topic} to be led by a broker other than {gone}")
        leaders = {p: s.leader for p, s in self.zk.partitions(self.topic).items() if s is not None}
        self.log(f"leaders now {', '.join(f'{p}: broker-{b}' for p, b in leaders.items())}")

    def wait_new_controller(self, old: int, timeout: float = 45) -> int:
        new = wait_for(lambda: (c,) if (c := self.zk.controller()) is not None and c != old else None,
                       timeout, f"a controller other than broker-{old}")[0]
        self.log(f"broker-{new} elected controller")
        return new

    def wait_deregistered(self, node: Node, timeout: float = 30) -> None:
        wait_for(lambda: node.broker_id not in self.zk.registered(), timeout,
                 f"ZooKeeper to expire the session of {node.name} (/brokers/ids/{node.broker_id})")
        self.log(f"/brokers/ids/{node.broker_id} gone: ZooKeeper expired the session of {node.name}")

    def live_leader_of(self, partition: int, timeout: float = 45) -> Node:
        """The leader of a partition once it is a running broker (a bounce chases it)."""
        def found() -> tuple[Node] | None:
            state = self.zk.partition(self.topic, partition)
            if state is None or state.leader < 0:
                return None
            node = self.broker(state.leader)
            return (node,) if self.lab.alive(node) else None
        return wait_for(found, timeout, f"a running leader of {self.topic}-{partition}")[0]

    def live_controller(self, timeout: float = 45) -> Node:
        def found() -> tuple[Node] | None:
            controller = self.zk.controller()
            if controller is None:
                return None
            node = self.broker(controller)
            return (node,) if self.lab.alive(node) else None
        return wait_for(found, timeout, "a running controller")[0]

    def wait_full_isr(self, timeout: float = 60) -> None:
        try:
            wait_for(lambda: self.zk.full_isr(self.topic), timeout, f"a full ISR on every partition of {self.topic}")
        except LabError as error:
            # Which partition is short, and at which epoch, is what a reader needs next.
            states = ", ".join(f"{p}: leader {s.leader} epoch {s.leader_epoch} ISR {list(s.isr)}" if s else f"{p}: no state"
                               for p, s in self.zk.partitions(self.topic).items())
            raise LabError(f"{error} (now {states})") from None
        self.log("ISR full again on every partition")

    # -- the tools ---------------------------------------------------------------------

    def acked(self) -> int:
        return self.producer.count("producer_send_success") if self.producer else 0

    def expect_progress(self, what: str, records: int | None = None, timeout: float = 45) -> None:
        """The producer gets acknowledgements again: `records` more (a second's worth by default)."""
        target = self.acked() + (records or max(50, self.throughput))
        wait_for(lambda: self.acked() >= target or self._tool_died(), timeout,
                 f"acknowledgements {what}")
        self.log(f"{self.acked()} records acknowledged so far ({what})")

    def _tool_died(self) -> bool:
        for tool in (self.producer, self.consumer):
            if tool is not None and not tool.running() and not tool.stopped:
                raise LabError(f"{tool.script} exited early; see {self.keep_dir}")
        return False

    def setup(self, consume_during: bool = True) -> None:
        configs = {"min.insync.replicas": str(MIN_INSYNC_REPLICAS), **self.topic_configs}
        with AdminClient({"bootstrap.servers": self.state.bootstrap, "default.api.timeout.ms": "30000"}) as admin:
            admin.create_topics([NewTopic(self.topic, PARTITIONS, REPLICATION_FACTOR, configs=configs)])
        wait_for(lambda: self.zk.full_isr(self.topic), 30, f"a full ISR on the new topic {self.topic}")
        leaders = {p: s.leader for p, s in self.zk.partitions(self.topic).items() if s is not None}
        self.log(f"topic {self.topic} created: {PARTITIONS} partitions, replication factor {REPLICATION_FACTOR}, "
                 + ", ".join(f"{k}={v}" for k, v in configs.items()) + "; leaders "
                 + ", ".join(f"{p}: broker-{b}" for p, b in leaders.items()))
        if consume_during:
            self.start_consumer()
        self.producer = ToolProcess("kafka-verifiable-producer.sh", [
            "--bootstrap-server", self.state.bootstrap, "--topic", self.topic, "--acks", "-1",
            "--throughput", str(self.throughput)], self.keep_dir)
        self.expect_progress("before the fault", records=2 * self.throughput, timeout=60)

    def start_consumer(self) -> None:
        self.consumer = ToolProcess("kafka-verifiable-consumer.sh", [
            "--bootstrap-server", self.state.bootstrap, "--topic", self.topic, "--group-id",
            f"{self.topic}-verifier", "--verbose", "--reset-policy", "earliest", "--session-timeout", "10000"],
            self.keep_dir)
        wait_for(lambda: self.consumer.count("partitions_assigned") or self._tool_died(), 60,
                 "the verifiable consumer to be assigned its partitions")
        self.log("kafka-verifiable-consumer joined its group and owns the partitions")

    def finish(self) -> str | None:
        """Stop the producer, let the consumer read up to each high watermark, stop it.
        Returns why the consumer could not catch up, if it could not."""
        problem = None
        if self.producer is not None:
            self.producer.stop()
            self.log(f"producer stopped: {self.acked()} acknowledged, "
                     f"{self.producer.count('producer_send_error')} send errors")
        try:
            if self.consumer is None:       # a scenario that judges what the log kept at the end
                self.start_consumer()
            highs = self._high_watermarks()
            wait_for(lambda: self._caught_up(highs) or self._tool_died(), 60,
                     f"the consumer to read up to the high watermarks {highs}")
            self.log("consumer read everything up to the high watermarks "
                     + ", ".join(f"{p}: {h}" for p, h in sorted(highs.items())))
        except Exception as error:  # judged all the same: what it did read still counts
            problem = str(error)
        if self.consumer is not None:
            self.consumer.stop()
        return problem

    def _high_watermarks(self) -> dict[int, int]:
        with AdminClient({"bootstrap.servers": self.state.bootstrap, "default.api.timeout.ms": "30000"}) as admin:
            listed = admin.list_offsets({(self.topic, p): OffsetSpec.latest() for p in range(PARTITIONS)})
        return {p: listed[(self.topic, p)].offset for p in range(PARTITIONS)}

    def _caught_up(self, highs: dict[int, int]) -> bool:
        assert self.consumer is not None
        read: dict[int, int] = {}
        for event in self.consumer.snapshot():
            if event.get("name") == "record_data":
                read[event["partition"]] = max(read.get(event["partition"], -1), event["offset"])
        return all(high == 0 or read.get(p, -1) >= high - 1 for p, high in highs.items())

    def heal(self) -> None:
        """Every node running again and the network whole, whatever the scenario left behind."""
        for node in list(self.paused):
            self.resume(node)
        if self.lab.state().network.get("partition"):
            try:
                self.heal_network()
            except LabError as error:
                self.log(f"could not heal the network: {error}")
        for node in self.lab.state().nodes:
            if not self.lab.alive(node):
                try:
                    self.restart(node)
                except LabError as error:
                    self.log(f"could not restart {node.name}: {error}")

    def cleanup(self, keep_topic: bool) -> None:
        for tool in (self.producer, self.consumer):
            if tool is not None:
                tool.stop(timeout=20)
        if not keep_topic:
            try:
                with AdminClient({"bootstrap.servers": self.state.bootstrap,
                                  "default.api.timeout.ms": "15000"}) as admin:
                    admin.delete_topics([self.topic])
            except Exception as error:
                self.log(f"topic {self.topic} not deleted: {error}")
        self.zk.close()


# -- the scenarios ----------------------------------------------------------------------

def leader_kill(run: Run) -> None:
    node = run.leader_of(0)
    run.log(f"broker-{node.broker_id} leads {run.topic}-0")
    run.kill(node, signal.SIGKILL)
    run.wait_new_leader(0, node.broker_id)
    run.expect_progress(f"while {node.name} is down")
    run.restart(node)
    run.wait_full_isr()


def controller_kill(run: Run) -> None:
    node = run.controller()
    run.log(f"broker-{node.broker_id} is the controller")
    run.kill(node, signal.SIGKILL)
    run.wait_new_controller(node.broker_id)
    run.wait_leaders_elsewhere(node.broker_id)
    run.expect_progress(f"while {node.name} is down")
    run.restart(node)
    run.wait_full_isr()


def leader_clean_shutdown(run: Run) -> None:
    node = run.leader_of(0)
    run.log(f"broker-{node.broker_id} leads {run.topic}-0")
    run.kill(node, signal.SIGTERM)
    run.wait_new_leader(0, node.broker_id)
    run.expect_progress(f"while {node.name} is down")
    run.restart(node)
    run.wait_full_isr()


def controller_clean_shutdown(run: Run) -> None:
    node = run.controller()
    run.log(f"broker-{node.broker_id} is the controller")
    run.kill(node, signal.SIGTERM)
    run.wait_new_controller(node.broker_id)
    run.wait_leaders_elsewhere(node.broker_id)
    run.expect_progress(f"while {node.name} is down")
    run.restart(node)
    run.wait_full_isr()


def _bounce(run: Run, find: Callable[[], Node], role: str) -> None:
    """Kafka's hard_bounce: kill -9 whoever holds the role, start it again as soon as its
    session is gone, and chase the role's next holder; no wait for a new leader or ISR."""
    for bounce in range(1, run.bounces + 1):
        node = find()
        run.log(f"bounce {bounce}/{run.bounces}: broker-{node.broker_id} is {role}")
        run.kill(node, signal.SIGKILL)
        run.restart(node)
    run.wait_full_isr(timeout=90)
    run.expect_progress(f"after {run.bounces} bounces")


def leader_bounce(run: Run) -> None:
    _bounce(run, lambda: run.live_leader_of(0), f"the leader of {run.topic}-0")


def controller_bounce(run: Run) -> None:
    _bounce(run, run.live_controller, "the controller")


def zookeeper_leader_kill(run: Run) -> None:
    """The ensemble's leader (`srvr` says Mode: leader) dies; the two others elect a new
    one and the brokers' sessions move to a surviving server before they expire."""
    def modes() -> dict[str, str | None]:
        return {n.name: zookeeper_mode(n.host, n.port) for n in run.lab.state().zookeepers}
    leaders = wait_for(lambda: [name for name, mode in modes().items() if mode == "leader"], 30,
                       "a ZooKeeper server in Mode: leader")
    node = run.lab.state().node(leaders[0])
    assert node is not None
    run.log(f"{node.name} leads the ZooKeeper ensemble ("
            + ", ".join(f"{name} {mode}" for name, mode in modes().items()) + ")")
    run.kill(node, signal.SIGKILL)
    new = wait_for(lambda: [name for name, mode in modes().items() if mode == "leader"], 60,
                   "the other ZooKeeper servers to elect a leader")
    run.log(f"{new[0]} leads the ensemble now")
    run.expect_progress(f"while {node.name} is down")
    wait_for(lambda: run.zk.registered() >= {b.broker_id for b in run.lab.state().brokers}, 30,
             "every broker to be registered")
    run.log("every broker still registered")
    run.restart(node)
    run.log(f"{node.name} back as {zookeeper_mode(node.host, node.port)}")
    run.wait_full_isr()


def zookeeper_session_expiry(run: Run) -> None:
    """The leader of partition 0 frozen (SIGSTOP) until ZooKeeper expires its session, then
    woken (SIGCONT): it must find its session gone, register again and follow."""
    node = run.leader_of(0)
    controller = run.zk.controller()
    run.log(f"broker-{node.broker_id} leads {run.topic}-0"
            + (" and is the controller" if controller == node.broker_id else f"; broker-{controller} is the controller"))
    run.pause(node)
    run.wait_deregistered(node)
    run.wait_new_leader(0, node.broker_id)
    run.expect_progress(f"while {node.name} is frozen")
    run.resume(node)
    run.wait_registered(node)
    run.wait_full_isr(timeout=90)


def unclean_leader_election(run: Run) -> None:
    """unclean.leader.election.enable=true on the topic, then its price: a follower falls
    out of every ISR (kill -9), the others acknowledge records without it, every ISR
    member dies, the out-of-sync follower comes back alone and is elected; what it never
    had is gone once the others return and truncate to it."""
    leader = run.leader_of(0)
    controller = run.zk.controller()
    others = [b for b in run.lab.state().brokers if b.broker_id != leader.broker_id]
    behind = next((b for b in others if b.broker_id != controller), others[0])
    run.kill(behind, signal.SIGKILL)

    def out_of_every_isr() -> bool:
        states = run.zk.partitions(run.topic).values()
        return all(s is not None and behind.broker_id not in s.isr for s in states)
    wait_for(out_of_every_isr, 45, f"{behind.name} to leave the ISR of every partition")
    run.log(f"{behind.name} out of every ISR; the others acknowledge without it")
    run.expect_progress(f"without {behind.name}", records=2 * run.throughput)
    in_sync = [b for b in run.lab.state().brokers if b.broker_id != behind.broker_id]
    for node in in_sync:
        run.kill(node, signal.SIGKILL)
    run.log("every ISR member is down: no partition of the topic has a leader")
    run.restart(behind)

    def led_by_behind() -> bool:
        states = run.zk.partitions(run.topic).values()
        return all(s is not None and s.leader == behind.broker_id for s in states)
    wait_for(led_by_behind, 60, f"an unclean election of {behind.name} on every partition")
    run.log(f"{behind.name}, out of sync, elected leader of every partition (unclean leader election); "
            f"alone in the ISR it takes no acks=all write (min.insync.replicas={MIN_INSYNC_REPLICAS})")
    for node in in_sync:
        run.restart(node)
    # They truncate to the unclean leader's log: what only they had is gone for good.
    run.wait_full_isr(timeout=90)


def partition_leader(run: Run) -> None:
    node = run.leader_of(0)
    controller = run.zk.controller()
    run.log(f"broker-{node.broker_id} leads {run.topic}-0"
            + (" and is the controller" if controller == node.broker_id else f"; broker-{controller} is the controller"))
    run.cut_off([node])
    # Its ZooKeeper session expires (6 s), the controller moves its leaderships to the
    # ISR's other members; the producer and consumer, on this machine, still reach it.
    run.wait_new_leader(0, node.broker_id)
    run.expect_progress(f"while {node.name} is cut off")
    run.heal_network()
    run.wait_registered(node)
    run.wait_full_isr(timeout=120)


def rolling_restart(run: Run) -> None:
    for node in run.lab.state().brokers:
        run.restart(node)
        run.wait_full_isr()
        run.expect_progress(f"after restarting {node.name}", records=max(50, run.throughput // 2))


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    fault: Callable[[Run], None]
    backends: tuple[str, ...] = ()         # the backends that can run it; () for every one
    needs_ensemble: bool = False           # a ZooKeeper ensemble (up --zookeeper ensemble)
    topic_configs: tuple[tuple[str, str], ...] = ()
    consume_during: bool = True            # False: the consumer reads what the log kept, at the end
    loss_allowed: bool = False             # its configuration lets acknowledged records go


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("leader-clean-shutdown", "SIGTERM the leader of partition 0 (controlled shutdown), restart it",
             leader_clean_shutdown),
    Scenario("leader-kill", "kill -9 the leader of partition 0, wait for a new leader, restart it", leader_kill),
    Scenario("leader-bounce", "kill -9 the leader of partition 0 and start it again at once, chasing the "
             "leadership (Kafka's hard_bounce)", leader_bounce),
    Scenario("controller-clean-shutdown", "SIGTERM the controller (controlled shutdown), wait for a new one, "
             "restart it", controller_clean_shutdown),
    Scenario("controller-kill", "kill -9 the controller, wait for a new one, restart it", controller_kill),
    Scenario("controller-bounce", "kill -9 the controller and start it again at once, chasing the controller "
             "(Kafka's hard_bounce)", controller_bounce),
    Scenario("zk-leader-kill", "kill -9 the ZooKeeper ensemble's leader, wait for a new one, restart it",
             zookeeper_leader_kill, needs_ensemble=True),
    Scenario("zk-session-expiry", "freeze the leader of partition 0 (SIGSTOP) until ZooKeeper expires its "
             "session, then SIGCONT", zookeeper_session_expiry),
    Scenario("rolling-restart", "restart every broker in turn (SIGTERM, start, full ISR before the next)",
             rolling_restart),
    Scenario("partition-leader", "cut the leader of partition 0 off from ZooKeeper and the other brokers, "
             "wait for a new leader, heal", partition_leader, backends=("netns", "docker")),
    Scenario("unclean-leader-election", "unclean.leader.election.enable=true: a follower out of the ISR is "
             "elected once every ISR member is down; shows the acknowledged records that costs",
             unclean_leader_election, topic_configs=(("unclean.leader.election.enable", "true"),),
             consume_during=False, loss_allowed=True),
)}


def unmet_needs(scenario: Scenario, backend: str, zookeeper_mode: str) -> str | None:
    """Why the scenario cannot run on this lab (None: it can)."""
    if scenario.backends and backend not in scenario.backends:
        return (f"scenario {scenario.name} needs a lab on --backend {' or '.join(scenario.backends)} "
                f"(this one runs on the {backend} backend)")
    if scenario.needs_ensemble and zookeeper_mode != "ensemble":
        return (f"scenario {scenario.name} needs a ZooKeeper ensemble (this lab has a standalone server; "
                "kafkalike-lab.sh down; kafkalike-lab.sh up --zookeeper ensemble)")
    return None


def runs_on(scenario: Scenario, backend: str, zookeeper_mode: str = "ensemble") -> bool:
    return unmet_needs(scenario, backend, zookeeper_mode) is None


def preflight(lab: Lab, name: str | None = None) -> None:
    state = lab.state()
    scenario = SCENARIOS.get(name) if name else None
    unmet = unmet_needs(scenario, state.backend, state.zookeeper_mode) if scenario is not None else None
    if unmet:
        raise LabError(unmet)
    if state.network.get("partition"):
        raise LabError("the lab is partitioned; scenarios start from a whole lab (kafkalike-lab.sh heal)")
    down = [n.name for n in state.nodes if not lab.alive(n)]
    if down:
        raise LabError(f"{', '.join(down)} not running; scenarios start from a whole lab "
                       f"(kafkalike-lab.sh restart {down[0]})")
    if len(state.brokers) < REPLICATION_FACTOR:
        raise LabError(f"scenarios need at least {REPLICATION_FACTOR} brokers; this lab has {len(state.brokers)} "
                       f"(kafkalike-lab.sh down; kafkalike-lab.sh up --brokers 3)")


def run_scenario(lab: Lab, name: str, *, throughput: int = 300, keep_topic: bool = False,
                 bounces: int = BOUNCES, out: TextIO = sys.stdout) -> Outcome:
    scenario = SCENARIOS[name]
    preflight(lab, name)
    print(f"scenario {name}: {scenario.summary}", file=out, flush=True)
    run = Run(lab, name, throughput, out, bounces=bounces, topic_configs=dict(scenario.topic_configs))
    error: str | None = None
    try:
        run.setup(consume_during=scenario.consume_during)
        scenario.fault(run)
        run.expect_progress("after the fault", records=max(50, throughput))
    except Exception as failure:  # judged and reported all the same, and the lab healed
        error = str(failure) or type(failure).__name__
        run.log(f"scenario stopped: {error}")
    except BaseException:
        run.heal()
        run.cleanup(keep_topic)
        raise
    try:
        if error or not scenario.consume_during:
            # The consumer reads what the whole lab kept: after a failure too, so that what
            # is counted lost was lost, not left on a node the fault still hides.
            run.heal()
        problem = run.finish()
        error = error or problem
    finally:
        run.heal()
        run.cleanup(keep_topic)
    verdict = judge(run.producer.snapshot() if run.producer else [],
                    run.consumer.snapshot() if run.consumer else [])
    return Outcome(name, run.topic, time.monotonic() - run.began, verdict, error, loss_allowed=scenario.loss_allowed)
