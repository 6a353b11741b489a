"""How long acks=all produce stops when a partition leader is killed with kill -9.

    python tests/bench/bench_failover.py [--reps 3] [--timeouts 6000,18000] [--dir /dev/shm]
                                         [--rate 100] [--tick-time 2000]
                                         [--producer-option reconnect.backoff.max.ms=1000 ...]

It starts its own ZooKeeper and, for every zookeeper.session.timeout.ms under test, its
own cluster of 3 brokers (kafkalike.lab; one ZooKeeper chroot per cluster, log dirs
under --dir), each with a topic of 3 partitions, replication factor 3 and
min.insync.replicas=2. All clusters run side by side and the repetitions alternate
between them, so machine noise falls on every setting alike. Everything is removed
afterwards.

One repetition on one cluster:

1. A confluent-kafka producer (acks=all, enable.idempotence=false, retries and
   message.timeout.ms large) sends one 100-byte record to every partition each
   1/--rate seconds, and keeps doing so throughout.
2. After 2 s of steady produce, the leader of partition 0 is killed with kill -9; if it
   is the controller, another broker that leads a partition is killed instead (losing
   the controller as well is a different, longer story).
3. Just before the kill the producer stops sending and flush()es, so nothing is in
   flight when SIGKILL goes out; then it resumes at once. Failover time of a partition
   the killed broker led = (the delivery callback of the first record on that partition
   that was successfully delivered after the kill) minus (the moment just before SIGKILL
   was sent). Because nothing was in flight, every such delivery was acknowledged by the
   new leader with acks=all. Callbacks run at least every 1/--rate seconds.
4. Once its old /brokers/ids znode is gone (metadata no longer lists it), the killed
   broker is restarted, the benchmark waits until every
   partition has its full ISR of 3 again and runs a preferred leader election, so every
   repetition starts with one partition per broker.

Prints each repetition and, per session timeout, the median, minimum and maximum
failover time, the median of (failover - session timeout), and how the failover splits:
kill -> the controller logs the broker as deleted (ZooKeeper: the session expires on a
tick boundary after the timeout, the /brokers/ids watch fires, the controller re-reads
it) -> the new leader logs that it handled LeaderAndIsr (election, state znode write,
request) -> the first acks=all ack (the producer's metadata refresh and retry, the
append, the remaining follower's fetch). Steps come from the brokers' log time stamps
(millisecond resolution, same clock). Separately, an AdminClient polls metadata every
50 ms after the kill and notes when it first names another leader: the moment a client
that refreshed its metadata could have produced again.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

try:
    from . import harness          # collected by pytest as tests.bench.bench_failover
except ImportError:
    import harness                 # python tests/bench/bench_failover.py

TOPIC = "failover"
PARTITIONS = 3
VALUE = b"x" * 100
STEADY_SECONDS = 2.0


@dataclass
class Outcome:
    """One kill: who died, which partitions it led, and when each came back."""

    session_timeout_ms: int
    victim: int
    led: list[int]
    recovered_s: dict[int, float] = field(default_factory=dict)
    noticed_s: float | None = None      # kill -> the controller logs the broker as deleted
    follower_stall_s: float | None = None  # longest wait for an ack on a partition it only followed
    leader_s: dict[int, float | None] = field(default_factory=dict)  # kill -> new leader took over
    metadata_s: dict[int, float] = field(default_factory=dict)  # kill -> metadata names the new leader
    restart_s: float = 0.0
    failed: int = 0


class FailoverCluster:
    """A 3-broker cluster with one session timeout, and the kill/measure/heal cycle on it."""

    def __init__(self, lab: harness.Lab, session_timeout_ms: int):
        self.lab = lab
        self.session_timeout_ms = session_timeout_ms
        self.overrides = {
            "zookeeper.session.timeout.ms": str(session_timeout_ms),
            "min.insync.replicas": "2",
            "default.replication.factor": "3",
            # Leadership comes back by the explicit election below, not by the timer.
            "auto.leader.rebalance.enable": "false",
        }
        self.cluster = None
        self.admin: AdminClient | None = None
        self.producer_options: dict[str, str] = {}

    def start(self) -> None:
        self.cluster = self.lab.cluster(f"failover-{self.session_timeout_ms}", size=3, overrides=self.overrides)
        self.admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap, "log_level": 2})
        assignment = [[(p + i) % 3 for i in range(3)] for p in range(PARTITIONS)]
        # This client wants the partition count next to an explicit assignment.
        topic = NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=assignment,
                         config={"min.insync.replicas": "2"})
        self.admin.create_topics([topic])[TOPIC].result(30)
        self.wait_healthy(60)

    def partitions(self) -> dict[int, tuple[int, list[int]]]:
        """partition -> (leader, isr) as the cluster's metadata says."""
        md = self.admin.list_topics(TOPIC, timeout=10)
        return {p: (meta.leader, list(meta.isrs)) for p, meta in md.topics[TOPIC].partitions.items()}

    def controller(self) -> int:
        return self.admin.describe_cluster(request_timeout=10).result(15).controller.id

    def wait_healthy(self, timeout: float) -> None:
        """Every partition led by its preferred replica with all 3 replicas in sync."""
        deadline = time.monotonic() + timeout
        elected = False
        while True:
            try:
                state = self.partitions()
                in_sync = len(state) == PARTITIONS and all(len(isr) == 3 for _, isr in state.values())
                preferred = all(leader == p % 3 for p, (leader, _) in state.items())
                if in_sync and preferred:
                    return
                if in_sync and not elected:
                    self.elect_preferred()
                    elected = True
            except KafkaException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster {self.session_timeout_ms} not healthy: {self.partitions()}")
            time.sleep(0.2)

    def watch_metadata(self, victim: int, led: list[int], killed_at: float, outcome: "Outcome",
                       give_up_s: float) -> None:
        """Kill -> metadata (from a surviving broker) names another leader for each
        partition the victim led: what a client that refreshes at that moment sees."""
        while time.monotonic() - killed_at < give_up_s and len(outcome.metadata_s) < len(led):
            try:
                state = self.partitions()
            except KafkaException:
                continue
            now = time.monotonic()
            for p in led:
                if p not in outcome.metadata_s and state.get(p, (victim,))[0] not in (victim, -1):
                    outcome.metadata_s[p] = now - killed_at
            time.sleep(0.05)

    def logged_after(self, victim: int, since_wall: float, file: str, matches) -> float | None:
        """Seconds from the kill to the first line of the survivors' `file` that `matches`."""
        found: list[float] = []
        for broker in self.cluster.brokers:
            path = broker.app_log_dir / file
            if broker.broker_id == victim or not path.exists():
                continue
            for line in path.read_text(errors="replace").splitlines():
                if not matches(line):
                    continue
                stamp = line[1:24]  # [YYYY-mm-dd HH:MM:SS,mmm], local time
                at = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) + int(stamp[20:23]) / 1000
                if at >= since_wall - 0.005:
                    found.append(at - since_wall)
        return min(found) if found else None

    def controller_noticed(self, victim: int, since_wall: float) -> float | None:
        """Kill -> the controller's "deleted brokers: <victim>" line: the ZooKeeper part of
        the failover (session expiry, watch, re-read of /brokers/ids)."""
        def deleted(line: str) -> bool:
            return ("deleted brokers: " in line and str(victim) in
                    line.split("deleted brokers: ", 1)[1].split(", bounced", 1)[0].split(","))
        return self.logged_after(victim, since_wall, "controller.log", deleted)

    def leader_took_over(self, victim: int, since_wall: float, partition: int) -> float | None:
        """Kill -> a survivor logs that it now leads `partition` (LeaderAndIsr handled)."""
        marker = f": {TOPIC}-{partition} is now leader "
        return self.logged_after(victim, since_wall, "state-change.log", lambda line: marker in line)

    def wait_unregistered(self, broker_id: int, timeout: float) -> None:
        """A broker killed with kill -9 can register again only once its old session has expired."""
        deadline = time.monotonic() + timeout
        while any(b == broker_id for b in self.admin.list_topics(timeout=10).brokers):
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker {broker_id} still registered {timeout}s after its kill")
            time.sleep(0.2)

    def elect_preferred(self) -> None:
        from confluent_kafka import ElectionType, TopicPartition
        future = self.admin.elect_leaders(ElectionType.PREFERRED,
                                          [TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        try:
            future.result(30)
        except KafkaException:
            pass  # "election not needed" for partitions already led by their preferred replica

    def kill_and_measure(self, rate: float, give_up_s: float) -> Outcome:
        state = self.partitions()
        controller = self.controller()
        victim = state[0][0]
        if victim == controller:
            victim = next(leader for leader, _ in state.values() if leader != controller)
        led = sorted(p for p, (leader, _) in state.items() if leader == victim)
        outcome = Outcome(self.session_timeout_ms, victim, led)

        acked: dict[int, list[float]] = {p: [] for p in range(PARTITIONS)}
        failures: list[str] = []

        def delivered():
            def report(err, msg) -> None:
                if err is not None:
                    failures.append(str(err))
                    return
                acked[msg.partition()].append(time.monotonic())
            return report

        producer = Producer({
            "bootstrap.servers": self.cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "retries": 1_000_000,
            "retry.backoff.ms": 50,
            "message.timeout.ms": 300_000,
            "request.timeout.ms": 30_000,
            "linger.ms": 0,
            "log_level": 2,   # the dead broker's refused connections are expected, not news
            **self.producer_options,
        })
        interval = 1.0 / rate
        start = time.monotonic()
        killed_at: float | None = None
        next_send = start
        try:
            while True:
                now = time.monotonic()
                if now >= next_send:
                    for p in range(PARTITIONS):
                        producer.produce(TOPIC, VALUE, partition=p, on_delivery=delivered())
                    next_send += interval
                producer.poll(max(0.0, min(interval, next_send - time.monotonic())))
                if killed_at is None and now - start >= STEADY_SECONDS:
                    if any(not acked[p] for p in range(PARTITIONS)):
                        if now - start > 30:
                            raise RuntimeError(f"no steady produce before the kill: {failures[:3]}")
                        continue
                    # Nothing in flight at the kill: every ack seen afterwards is the new leader's.
                    if producer.flush(10):
                        raise RuntimeError("produce did not drain before the kill")
                    broker = self.cluster.broker(victim)
                    killed_wall, killed_at = time.time(), time.monotonic()
                    broker.proc.kill()
                    broker.proc.wait(10)
                    watcher = threading.Thread(target=self.watch_metadata, daemon=True,
                                               args=(victim, led, killed_at, outcome, give_up_s))
                    watcher.start()
                if killed_at is not None:
                    back = {p: next((t for t in acked[p] if t > killed_at), None) for p in led}
                    if all(t is not None for t in back.values()):
                        outcome.recovered_s = {p: t - killed_at for p, t in back.items()}
                        break
                    if now - killed_at > give_up_s:
                        raise RuntimeError(f"partitions {led} not writable {give_up_s}s after killing "
                                           f"broker {victim}: {self.partitions()}")
            outcome.failed = len(failures)
            # Partitions the victim only followed: it stays in their ISR until the
            # controller drops it, and acks=all waits for it until then.
            others = [p for p in range(PARTITIONS) if p not in led]
            gaps = []
            for p in others:
                times = [killed_at] + [t for t in acked[p] if t > killed_at] + [time.monotonic()]
                gaps.append(max(b - a for a, b in zip(times, times[1:])))
            outcome.follower_stall_s = max(gaps) if gaps else None
        finally:
            producer.purge()      # what is still queued is dropped uncounted
            producer.poll(0)
        outcome.noticed_s = self.controller_noticed(victim, killed_wall)
        outcome.leader_s = {p: self.leader_took_over(victim, killed_wall, p) for p in led}

        healed = time.monotonic()
        self.wait_unregistered(victim, 60)
        self.cluster.broker(victim).restart(120)
        self.wait_healthy(120)
        outcome.restart_s = time.monotonic() - healed
        return outcome


def fmt(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds:.2f}s"


def report(outcomes: list[Outcome], timeouts: list[int], tick_ms: int) -> None:
    print(f"\nfailover = first acks=all ack on a partition the killed leader led, after kill -9 "
          f"(ZooKeeper tickTime {tick_ms} ms)")
    print(f"{'session timeout':>16} {'kills':>6} {'partitions':>11} {'median s':>9} {'min s':>7} {'max s':>7} "
          f"{'median - timeout':>17} {'controller saw loss':>20} {'new leader':>11} {'metadata':>9} "
          f"{'first ack':>10}")
    for timeout in timeouts:
        times = [t for o in outcomes if o.session_timeout_ms == timeout for t in o.recovered_s.values()]
        kills = sum(1 for o in outcomes if o.session_timeout_ms == timeout)
        if not times:
            continue
        med = statistics.median(times)
        noticed = [o.noticed_s for o in outcomes if o.session_timeout_ms == timeout and o.noticed_s is not None]
        mine = [o for o in outcomes if o.session_timeout_ms == timeout]
        leader = [o.leader_s[p] - o.noticed_s for o in mine for p in o.led
                  if o.noticed_s is not None and o.leader_s.get(p) is not None]
        after = [o.recovered_s[p] - o.leader_s[p] for o in mine for p in o.led if o.leader_s.get(p) is not None]
        metadata = [o.metadata_s[p] for o in mine for p in o.led if p in o.metadata_s]
        print(f"{timeout:>13} ms {kills:>6} {len(times):>11} {med:9.2f} {min(times):7.2f} {max(times):7.2f} "
              f"{med - timeout / 1000:16.2f}s "
              f"{fmt(statistics.median(noticed) if noticed else None):>20} "
              f"{fmt(statistics.median(leader) if leader else None):>11} "
              f"{fmt(statistics.median(metadata) if metadata else None):>9} "
              f"{fmt(statistics.median(after) if after else None):>10}")
    print("(controller saw loss: kill -> the controller logs the broker deleted; new leader: from there -> the "
          "new leader handled LeaderAndIsr; metadata: kill -> an AdminClient polling every 50 ms sees the new "
          "leader; first ack: new leader -> the producer's first acks=all ack; medians of each)")
    if len(timeouts) == 2:
        a, b = timeouts
        ma = statistics.median(t for o in outcomes if o.session_timeout_ms == a for t in o.recovered_s.values())
        mb = statistics.median(t for o in outcomes if o.session_timeout_ms == b for t in o.recovered_s.values())
        print(f"ratio of medians {b} ms / {a} ms: {mb / ma:.2f} (session timeouts' ratio {b / a:.2f})")


def run(args: argparse.Namespace) -> int:
    timeouts = [int(t) for t in args.timeouts.split(",")]
    with harness.Lab("failover", args.dir, tick_time=args.tick_time) as lab:
        print(f"{time.strftime('%Y-%m-%d %H:%M')}  {harness.machine()}; "
              f"load average {harness.load_average():.2f} at start")
        print(f"3 brokers per cluster, topic of {PARTITIONS} partitions, RF=3, min.insync.replicas=2, acks=all, "
              f"{args.rate:g} records/s per partition; session timeouts {timeouts} ms; "
              f"{args.reps} interleaved reps each"
              + (f"; producer options {args.producer_option}" if args.producer_option else ""))
        clusters: list[FailoverCluster] = []
        for timeout in timeouts:
            fc = FailoverCluster(lab, timeout)
            fc.producer_options = dict(option.split("=", 1) for option in args.producer_option)
            fc.start()
            clusters.append(fc)
        outcomes: list[Outcome] = []
        for rep in range(args.reps):
            order = clusters if rep % 2 == 0 else list(reversed(clusters))
            for fc in order:
                outcome = fc.kill_and_measure(args.rate, give_up_s=fc.session_timeout_ms / 1000 + 60)
                outcomes.append(outcome)
                times = ", ".join(f"p{p} {t:.2f}s" for p, t in sorted(outcome.recovered_s.items()))
                print(f"  rep {rep + 1}/{args.reps} session {fc.session_timeout_ms} ms: killed broker "
                      f"{outcome.victim}, controller saw it after {fmt(outcome.noticed_s)}, new leader after "
                      f"{', '.join(fmt(t) for t in outcome.leader_s.values())}, metadata after "
                      f"{', '.join(fmt(outcome.metadata_s.get(p)) for p in outcome.led)}, back: {times}; "
                      f"partitions it followed stalled up to {fmt(outcome.follower_stall_s)}; "
                      f"{outcome.failed} failed deliveries; "
                      f"restart to full ISR {outcome.restart_s:.1f}s", flush=True)
        report(outcomes, timeouts, args.tick_time)
        print(f"load average {harness.load_average():.2f} at the end")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3)
    parser.add_argument("--timeouts", default="6000,18000", help="zookeeper.session.timeout.ms values, comma-separated")
    parser.add_argument("--rate", type=float, default=100.0, help="records per second per partition")
    parser.add_argument("--tick-time", type=int, default=2000, help="ZooKeeper tickTime in ms")
    parser.add_argument("--producer-option", action="append", default=[], metavar="KEY=VALUE",
                        help="extra librdkafka producer setting (repeatable)")
    return run(parser.parse_args(argv))


@harness.bench_test
def test_failover_bench_short() -> None:
    """One kill with a short session timeout: the partitions come back and the broker rejoins."""
    assert main(["--reps", "1", "--timeouts", "4000", "--tick-time", "500"]) == 0


if __name__ == "__main__":
    sys.exit(main())
