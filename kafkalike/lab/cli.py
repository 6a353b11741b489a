"""bin/kafkalike-lab.sh: a ZooKeeper-mode Kafka cluster on this machine, and faults to hurt it with.

    kafkalike-lab.sh up [--backend local|netns|docker] [--brokers 3] [--zookeeper standalone|ensemble]
                        [--base-port P] [--override k=v ...] [--spark]
    kafkalike-lab.sh status [--json]
    kafkalike-lab.sh kill NODE [-9]          NODE: broker-N, zk-N, controller, leader:TOPIC:PARTITION
    kafkalike-lab.sh restart NODE
    kafkalike-lab.sh partition NODE [NODE ...] [--method drop|link]   (netns, docker backends)
    kafkalike-lab.sh heal                                             (netns, docker backends)
    kafkalike-lab.sh logs NODE [-n LINES] [--file controller.log]
    kafkalike-lab.sh scenario NAME [NAME ...]  {leader,controller}-{clean-shutdown,kill,bounce},
                                               zk-leader-kill (ensemble), zk-session-expiry, rolling-restart,
                                               partition-leader (netns, docker), unclean-leader-election, or all
    kafkalike-lab.sh down [--keep-logs]

Every command takes --dir LAB_DIR (default $LOG_DIR/lab, or logs/lab in the checkout);
the lab's state lives there, so any shell can drive it. docs/lab.md walks through it.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import NoReturn, Sequence

from kafkalike.lab.local import BACKENDS, Lab, LabSpec, default_lab_dir, open_lab
from kafkalike.lab.state import LabError

PROG = "kafkalike-lab.sh"


class OneLineParser(argparse.ArgumentParser):
    """Bad input is one line on stderr and status 2, not a usage screen."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message} (see {PROG} --help)\n")


def _parser() -> argparse.ArgumentParser:
    from kafkalike.lab.scenarios import BOUNCES, SCENARIOS

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default=argparse.SUPPRESS, metavar="LAB_DIR",
                        help="the lab's directory (default $LOG_DIR/lab, or logs/lab in the checkout)")
    parser = OneLineParser(prog=PROG, description=__doc__.split("\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog="Nodes: zk-1.. (ZooKeeper), broker-0.. ; kill also takes controller and "
                                  "leader:TOPIC:PARTITION. See docs/lab.md.")
    parser.add_argument("--dir", default=None, metavar="LAB_DIR", help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=OneLineParser)

    up = commands.add_parser("up", parents=[common], help="start ZooKeeper and the brokers as daemons")
    up.add_argument("--backend", choices=BACKENDS, default="local",
                    help="local: every node on 127.0.0.1 (default); netns (root): each node in a network "
                         "namespace of its own, with its own address on a private bridge; docker: each node in a "
                         "container on a network of the lab's own")
    up.add_argument("--brokers", type=int, default=3, metavar="N", help="number of brokers (default 3)")
    up.add_argument("--zookeeper", choices=("standalone", "ensemble"), default="standalone",
                    help="one ZooKeeper server, or a 3-node ensemble (default standalone)")
    up.add_argument("--base-port", type=int, metavar="P",
                    help="put the whole lab in ports P.. (ZooKeeper P, P+1, P+2; quorum P+3..; election P+6..; "
                         "brokers P+10..) instead of 2181 / 2888 / 3888 / 9092..")
    up.add_argument("--zk-port", type=int, metavar="PORT", help="ZooKeeper's (first) client port")
    up.add_argument("--broker-port", type=int, metavar="PORT", help="broker-0's port; broker-N uses PORT+N")
    up.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="a server.properties key for every broker (repeatable)")
    up.add_argument("--spark", action="store_true",
                    help="also a Spark standalone master and one worker (local backend), for kafkalike's Spark "
                         "source and sink (docs/spark.md)")
    up.add_argument("--timeout", type=float, default=120.0, metavar="S", help="seconds to wait for the lab to serve")

    status = commands.add_parser("status", parents=[common], help="each node, the controller, under-replicated partitions")
    status.add_argument("--json", action="store_true", help="the same as one JSON object")

    down = commands.add_parser("down", parents=[common], help="stop every node and remove the lab's files")
    down.add_argument("--keep-logs", action="store_true", help="keep each node's logs (data and state still go)")
    down.add_argument("--timeout", type=float, default=30.0, metavar="S",
                      help="seconds between SIGTERM and SIGKILL (default 30)")

    kill = commands.add_parser("kill", parents=[common], help="signal one node: SIGTERM, or kill -9 with -9")
    kill.add_argument("node", metavar="NODE", help="broker-N, zk-N, controller or leader:TOPIC:PARTITION")
    kill.add_argument("-9", dest="hard", action="store_true", help="SIGKILL (a crash) instead of SIGTERM")
    kill.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds to wait for it to exit")

    restart = commands.add_parser("restart", parents=[common], help="(stop and) start one node, wait until it serves")
    restart.add_argument("node", metavar="NODE")
    restart.add_argument("--timeout", type=float, default=90.0, metavar="S")

    partition = commands.add_parser("partition", parents=[common],
                                    help="cut the named nodes off from the rest of the lab (netns or docker backend)")
    partition.add_argument("nodes", nargs="+", metavar="NODE",
                           help="broker-N, zk-N, controller or leader:TOPIC:PARTITION; they still reach each other")
    partition.add_argument("--method", choices=("drop", "link"), default=None,
                           help="drop: iptables DROP in their namespaces, this machine still reaches them "
                                "(default); link: their bridge ports down, nobody reaches them")

    commands.add_parser("heal", parents=[common], help="undo partition: every node reaches every other again")

    logs = commands.add_parser("logs", parents=[common], help="the tail of a node's log")
    logs.add_argument("node", metavar="NODE")
    logs.add_argument("-n", "--lines", type=int, default=40, metavar="LINES")
    logs.add_argument("--file", metavar="NAME",
                      help="another file in a broker's log dir: controller.log, state-change.log, kafkaServer.out")

    scenario = commands.add_parser("scenario", parents=[common],
                                   help="a fault under the verifiable producer and consumer, judged")
    scenario.add_argument("names", nargs="+", metavar="NAME", help=", ".join([*SCENARIOS, "all"]))
    scenario.add_argument("--throughput", type=int, default=300, metavar="N",
                          help="records per second the producer aims at (default 300)")
    scenario.add_argument("--keep-topic", action="store_true", help="keep each scenario's topic afterwards")
    scenario.add_argument("--bounces", type=int, default=BOUNCES, metavar="N",
                          help=f"times the bounce scenarios kill -9 and restart (default {BOUNCES}, as Kafka's test)")
    return parser


def _lab(args: argparse.Namespace) -> Lab:
    return open_lab(Path(args.dir) if args.dir else default_lab_dir(), getattr(args, "backend", None))


def _say(line: str) -> None:
    print(line, flush=True)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def print_status(report: dict) -> None:
    network = report.get("network")
    docker = bool(network) and "containers" in network
    rows = [["NODE", *([("CONTAINER" if docker else "NAMESPACE")] if network else []), "ADDRESS", "PID", "STATE",
             "ROLE"]]
    for node in report["nodes"]:
        rows.append([node["name"], *([node["netns"] or "-"] if network else []), node["address"],
                     str(node["pid"] or "-"), "alive" if node["alive"] else "dead", node["role"]])
    zk = report["zookeeper"]
    print(f"lab {report['dir']} ({report['backend']} backend), ZooKeeper {zk['mode']} at {zk['connect']}"
          + ("" if zk["reachable"] else " (not answering)"))
    if docker:
        print(f"network: {network['network']} {network['subnet']} (docker bridge; this machine is "
              f"{network['gateway']}), image {network['image']}, volumes {', '.join(network['volumes'])}")
    elif network:
        print(f"network: {network['subnet']} on bridge {network['bridge']} in namespace {network['hub']}; "
              f"this machine is {network['machine_address']} ({network['machine_link']})")
    print(_table(rows))
    if network:
        print(f"partition: {_describe_partition(report.get('partition'))}")
    controller = report["controller"]
    alive = {node["name"]: node["alive"] for node in report["nodes"]}
    note = "" if controller is None or alive.get(controller) else \
        " (dead: /controller goes when ZooKeeper expires its session)"
    print(f"controller: {controller or 'none'}{note}")
    if report["partitions"] is None:
        print("partitions: unknown (no broker answers Metadata)")
    else:
        urp = report["under_replicated"]
        listed = report["under_replicated_partitions"]
        shown = f" ({', '.join(listed[:8])}{', ...' if len(listed) > 8 else ''})" if listed else ""
        print(f"partitions: {report['partitions']}, under-replicated: {urp}{shown}, offline: {report['offline']}")
    print(f"bootstrap: {report['bootstrap']}")
    metrics = [f"{node['name']} {node['metrics_url']}" for node in report["nodes"] if node.get("metrics_url")]
    if metrics:
        print(f"metrics (Prometheus): {', '.join(metrics)}")
    spark = report.get("spark")
    if spark:
        print(f"spark: {spark['master_url']} ({spark['status'] or 'not answering'}, "
              f"{spark['workers_alive']} worker(s) ALIVE), web UI {spark['web_url']}")


def _describe_partition(partition: dict | None) -> str:
    if not partition:
        return "none"
    how = ("iptables DROP in their namespaces; this machine still reaches them" if partition["method"] == "drop"
           else "their links cut; nobody reaches them")
    return (f"{', '.join(partition['isolated'])} cut off from {', '.join(partition['from'])} "
            f"since {partition['since']} ({how})")


def _up(args: argparse.Namespace) -> int:
    overrides = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise LabError(f"--override takes KEY=VALUE, not {item!r}")
        overrides[key.strip()] = value.strip()
    spec = LabSpec.at_base_port(args.base_port) if args.base_port else LabSpec()
    spec.brokers, spec.zookeeper, spec.overrides = args.brokers, args.zookeeper, overrides
    spec.backend = args.backend
    spec.spark = args.spark
    if args.zk_port:
        spec.zk_port = args.zk_port
    if args.broker_port:
        spec.broker_port = args.broker_port
    lab = _lab(args)
    began = time.monotonic()
    lab.up(spec, timeout=args.timeout, progress=_say)
    print(f"lab up in {time.monotonic() - began:.1f}s\n")
    print_status(lab.status())
    return 0


def _status(args: argparse.Namespace) -> int:
    report = _lab(args).status()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_status(report)
    return 0


def _down(args: argparse.Namespace) -> int:
    lab = _lab(args)
    lab.down(timeout=args.timeout, keep_logs=args.keep_logs, progress=_say)
    print(f"lab in {lab.dir} is down" + (" (logs kept)" if args.keep_logs else ""))
    return 0


def _kill(args: argparse.Namespace) -> int:
    lab = _lab(args)
    state = lab.state()
    lab.backend(state).check_usable()        # netns: its daemons are root's
    node = lab.resolve(args.node, state)
    sig = signal.SIGKILL if args.hard else signal.SIGTERM
    pid = node.pid
    elapsed = lab.kill(node, sig, timeout=args.timeout)
    print(f"{node.name} (pid {pid}) {'killed with SIGKILL' if args.hard else 'stopped with SIGTERM'} "
          f"after {elapsed:.1f}s")
    return 0


def _restart(args: argparse.Namespace) -> int:
    lab = _lab(args)
    node = lab.resolve(args.node)
    began = time.monotonic()
    node = lab.restart(node, timeout=args.timeout, progress=_say)
    print(f"{node.name} serving again (pid {node.pid}) after {time.monotonic() - began:.1f}s")
    return 0


def _partition(args: argparse.Namespace) -> int:
    record = _lab(args).partition(args.nodes, args.method)
    print(f"partition: {_describe_partition(record)}")
    return 0


def _heal(args: argparse.Namespace) -> int:
    healed = _lab(args).heal()
    if healed:
        print(f"healed: {', '.join(healed['isolated'])} reach {', '.join(healed['from'])} again")
    else:
        print("no partition to heal; every node reaches every other")
    return 0


def _logs(args: argparse.Namespace) -> int:
    lab = _lab(args)
    node = lab.resolve(args.node)
    path = Path(node.log)
    if args.file:
        if node.kind != "broker" or "/" in args.file:
            raise LabError("--file names a file in a broker's log dir, e.g. controller.log")
        path = path.parent / args.file
    if args.lines < 0:
        raise LabError("-n takes a number of lines >= 0")
    try:
        with open(path, errors="replace") as log:
            tail = deque(log, maxlen=args.lines) if args.lines else deque()
    except FileNotFoundError:
        raise LabError(f"{node.name} has no {path.name} yet ({path})") from None
    sys.stdout.writelines(tail)
    return 0


def _scenario(args: argparse.Namespace) -> int:
    from kafkalike.lab.scenarios import EXPECTED_LOSS, PASS, SCENARIOS, run_scenario, runs_on

    unknown = [n for n in args.names if n not in SCENARIOS and n != "all"]
    if unknown:
        raise LabError(f"no scenario {unknown[0]} (scenarios: {', '.join(SCENARIOS)}, all)")
    if args.throughput < 1:
        raise LabError("--throughput must be at least 1")
    if args.bounces < 1:
        raise LabError("--bounces must be at least 1")
    lab = _lab(args)
    names = args.names
    if names == ["all"]:
        state = lab.state()
        names = [name for name, s in SCENARIOS.items() if runs_on(s, state.backend, state.zookeeper_mode)]
        skipped = [name for name in SCENARIOS if name not in names]
        if skipped:
            print(f"(not on this lab, {state.backend} backend with ZooKeeper {state.zookeeper_mode}: "
                  f"{', '.join(skipped)})")
    outcomes = []
    for name in names:
        outcome = run_scenario(lab, name, throughput=args.throughput, keep_topic=args.keep_topic,
                               bounces=args.bounces)
        outcomes.append(outcome)
        j = outcome.judgement
        print(f"  consumed {j.consumed} distinct records (redelivered {j.redelivered}, at another offset than "
              f"acknowledged {j.moved}); {j.send_errors} sends failed (the tool sends without retries)"
              + (": " + ", ".join(f"{kind} {n}" for kind, n in j.send_errors_by_kind) if j.send_errors_by_kind else "")
              + (f"; lost e.g. {', '.join(map(str, j.lost_sample))}" if j.lost_sample else ""))
        for what, counts, sample in (("duplicated", j.duplicated_by_partition, j.duplicated_sample),
                                     ("reordered", j.reordered_by_partition, j.reordered_sample)):
            if counts:
                print(f"  {what}: " + ", ".join(f"partition {p}: {n}" for p, n in counts)
                      + f" (e.g. values {', '.join(map(str, sample))}); the producer sends without retries, "
                      "in order, so the brokers did this: FAIL")
        if outcome.error:
            print(f"  error: {outcome.error}")
        if outcome.loss_allowed and outcome.verdict == EXPECTED_LOSS:
            print(f"  {j.lost} acknowledged records lost: the price of unclean.leader.election.enable=true, "
                  "which lets a replica that missed them lead rather than leave the partition offline")
        elif outcome.loss_allowed and outcome.verdict == PASS:
            print("  no acknowledged record lost this time, though unclean.leader.election.enable=true allows it")
        print()
    rows = [["SCENARIO", "ACKNOWLEDGED", "LOST", "DUPLICATED", "REORDERED", "SEND ERRORS", "DURATION", "VERDICT"]]
    for o in outcomes:
        j = o.judgement
        rows.append([o.name, str(j.acknowledged), str(j.lost), str(j.duplicated), str(j.reordered),
                     str(j.send_errors), f"{o.duration:.1f}s", o.verdict])
    print(_table(rows))
    return 0 if all(o.passed for o in outcomes) else 1


HANDLERS = {"up": _up, "status": _status, "down": _down, "kill": _kill, "restart": _restart,
            "partition": _partition, "heal": _heal, "logs": _logs, "scenario": _scenario}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return HANDLERS[args.command](args)
    except LabError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        if error.details:
            print(error.details, file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
