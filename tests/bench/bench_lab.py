"""The lab per backend, in one run: start-up (from `up` to a fresh RF=3 topic with a full
ISR) and failover (kill -9 of a partition leader to the next acks=all acknowledgement).

    python tests/bench/bench_lab.py [--rounds 3] [--backends local,netns,docker] [--json FILE]

Each round brings up a whole lab (ZooKeeper standalone and three brokers) on each backend
in turn, the order alternating between rounds, each in a fresh lab directory under
/dev/shm (the local one on a block of free ports). The clock starts when
`bin/kafkalike-lab.sh up` is launched, exactly as a user types it, and reads:

- up: `up` has exited (ZooKeeper serves, every broker is registered and told of the
  controller);
- full ISR: kafkalike's AdminClient (in this process) has created a topic with 3
  partitions and replication factor 3, and ZooKeeper's partition state znodes show a
  leader and all 3 replicas in the ISR for each of them;
- failover: on that topic (min.insync.replicas=2), a confluent-kafka producer on this
  machine (acks=all, no idempotence, retries and message.timeout.ms large, as
  bench_failover.py) sends a record to partition 0 every 10 ms for a second, then
  flushes, so nothing is in flight; the leader of partition 0 (not the controller: if it
  leads partition 0 another partition's leader is taken, and partition 0 is then that
  partition) is killed with SIGKILL through the lab (a container kill on docker), the
  producer resumes at once, and the clock runs from just before the signal to the
  delivery callback of the first record acknowledged after it;
- down: `bin/kafkalike-lab.sh down` took this long (not counted in the others).

netns needs root; docker a running dockerd (the lab's image is built before the first
round, so no round counts a build). Everything the script starts is stopped, and every
lab directory, namespace, link, container, network and volume removed, even when a
round fails.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    from . import harness          # collected by pytest as tests.bench.bench_lab
except ImportError:
    import harness                 # python tests/bench/bench_lab.py

REPO_ROOT = harness.ROOT
LAB = REPO_ROOT / "bin" / "kafkalike-lab.sh"
TOPIC = "bench-lab"
SEND_INTERVAL = 0.01


def lab(lab_dir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run([str(LAB), *args, "--dir", str(lab_dir)], capture_output=True, text=True,
                            timeout=timeout, env={**os.environ, "PYTHON": sys.executable}, cwd=REPO_ROOT)
    if result.returncode != 0:
        raise RuntimeError(f"kafkalike-lab.sh {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


def free_base_port(size: int = 16) -> int:
    """A base port with `size` free ports above it, for the local lab's block."""
    from kafkalike.lab.processes import port_in_use
    from kafkalike.lab.zookeeper import free_ports
    for _ in range(100):
        [base] = free_ports(1)
        if base + size < 65536 and not any(port_in_use("127.0.0.1", p) for p in range(base, base + size)):
            return base
    raise RuntimeError(f"no block of {size} free ports found")


def one_round(backend: str) -> dict[str, float]:
    from kafkalike.client.admin import AdminClient, NewTopic
    from kafkalike.lab.observe import ZooKeeperView
    from kafkalike.lab.state import LabState
    scratch = Path(tempfile.mkdtemp(prefix="kafkalike-bench-lab-", dir=harness.SCRATCH_ROOT))
    lab_dir = scratch / "lab"
    where = ["--backend", backend] if backend in ("netns", "docker") else ["--base-port", str(free_base_port())]
    try:
        began = time.monotonic()
        started = lab(lab_dir, "up", *where)
        up = time.monotonic() - began
        # docker: `up` rebuilt the image because the checkout changed since the last build.
        rebuilt = 1.0 if "building image" in started.stdout else 0.0
        state = LabState.load(lab_dir)
        with AdminClient({"bootstrap.servers": state.bootstrap, "default.api.timeout.ms": "30000"}) as admin:
            admin.create_topics([NewTopic(TOPIC, 3, 3, configs={"min.insync.replicas": "2"})])
        with ZooKeeperView(state.zookeeper_connect) as zk:
            while True:
                try:
                    if zk.full_isr(TOPIC):
                        break
                except Exception:       # the topic's znodes are not all written yet
                    pass
                if time.monotonic() - began > 120:
                    raise RuntimeError("no full ISR after 120 s")
                time.sleep(0.02)
        full_isr = time.monotonic() - began
        failover_s = failover(lab_dir, state)
        stopping = time.monotonic()
        lab(lab_dir, "down")
        return {"up": up, "full_isr": full_isr, "failover": failover_s, "down": time.monotonic() - stopping,
                "rebuilt": rebuilt}
    finally:
        if (lab_dir / "lab.json").exists():
            subprocess.run([str(LAB), "down", "--timeout", "5", "--dir", str(lab_dir)], capture_output=True,
                           env={**os.environ, "PYTHON": sys.executable})
        shutil.rmtree(scratch, ignore_errors=True)


def failover(lab_dir: Path, state) -> float:
    """Seconds from kill -9 of a leader (not the controller) to the next acks=all ack on its partition."""
    import signal

    from confluent_kafka import Producer

    from kafkalike.lab.local import open_lab
    from kafkalike.lab.observe import ZooKeeperView
    with ZooKeeperView(state.zookeeper_connect) as zk:
        controller = zk.controller()
        leaders = {p: s.leader for p, s in zk.partitions(TOPIC).items() if s is not None}
    partition = next(p for p in sorted(leaders) if leaders[p] != controller)
    victim = state.broker(leaders[partition])
    producer = Producer({"bootstrap.servers": state.bootstrap, "acks": "all", "enable.idempotence": False,
                         "linger.ms": 0, "retries": 1_000_000, "message.timeout.ms": 120_000,
                         "request.timeout.ms": 30_000, "log_level": 0})
    acked: list[float] = []

    def delivered(error, message) -> None:
        if error is None:
            acked.append(time.monotonic())

    def send() -> None:
        producer.produce(TOPIC, b"x" * 100, partition=partition, on_delivery=delivered)
        producer.poll(0)

    steady_until = time.monotonic() + 1.0
    while time.monotonic() < steady_until:
        send()
        time.sleep(SEND_INTERVAL)
    if producer.flush(30) != 0:
        raise RuntimeError("records still unacknowledged before the kill")
    acked.clear()
    lab_ = open_lab(lab_dir)
    killed = time.monotonic()
    lab_.kill(victim, signal.SIGKILL, timeout=30)
    while not acked:
        if time.monotonic() - killed > 90:
            raise RuntimeError(f"no acks=all acknowledgement on {TOPIC}-{partition} 90 s after the kill")
        send()
        producer.poll(SEND_INTERVAL)
    took = acked[0] - killed
    producer.flush(30)
    return took


def main(argv: list[str] | None = None) -> int:
    parser = harness.arg_parser(__doc__, reps=3, scratch=False)
    parser.add_argument("--rounds", dest="reps", type=int, help="the same as --reps")
    parser.add_argument("--backends", default="local,netns")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    args.rounds = args.reps
    backends = args.backends.split(",")
    if "netns" in backends and os.geteuid() != 0:
        parser.error("the netns backend needs root")
    if "docker" in backends:
        from kafkalike.lab.docker import client, ensure_image
        from kafkalike.lab.state import LabError
        try:
            began = time.monotonic()
            tag = ensure_image(client(), progress=lambda line: print(line, flush=True))
            print(f"image {tag} ready after {time.monotonic() - began:.1f}s (not counted)", flush=True)
        except LabError as error:
            parser.error(str(error).splitlines()[0])
    results: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
    for round_ in range(args.rounds):
        order = backends if round_ % 2 == 0 else backends[::-1]
        for backend in order:
            timing = one_round(backend)
            results[backend].append(timing)
            print(f"round {round_ + 1} {backend:6} up {timing['up']:5.2f} s  full ISR {timing['full_isr']:5.2f} s  "
                  f"failover {timing['failover']:5.2f} s  down {timing['down']:5.2f} s" + ("  (image rebuilt: the checkout changed)" if timing["rebuilt"]
                                                     else ""), flush=True)
    print()
    print(f"{'backend':8} {'up (median, min-max)':24} {'up -> full ISR (median, min-max)':34} "
          f"{'failover (median, min-max)':30} down (median)")
    for backend, runs in results.items():
        def column(key: str) -> str:
            values = [r[key] for r in runs]
            return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"
        print(f"{backend:8} {column('up'):24} {column('full_isr'):34} {column('failover'):30} "
              f"{statistics.median(r['down'] for r in runs):.2f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


@harness.bench_test
def test_lab_bench_short() -> None:
    """One round of the local backend (netns needs root and is left to the script)."""
    assert main(["--rounds", "1", "--backends", "local"]) == 0


if __name__ == "__main__":
    sys.exit(main())
