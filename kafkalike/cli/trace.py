"""kafkalike-trace: send one record and print its journey, step by step, with timings.

    kafkalike-trace.sh --bootstrap-server localhost:9092 --topic t --value hello [--key k]
                       [--acks all] [--linger-ms 0] [--partition N] [--consume]

The client's steps come from kafkalike's own producer: while a tracer is attached
(`KafkaProducer._trace_with`), its serializers, partitioner and accumulator append are
wrapped to report the serializer, the partitioner and the accumulator (a batch created,
or one joined), and the sender thread reports the Produce request the record went out
in and the answer; the acknowledgement is the record's callback. An untraced producer's
send() runs no tracing code at all; its sender checks for a tracer once per request.

The cluster's steps are watched from outside, through Kafka's protocol, from a probe
thread started before send(), so nothing on a broker's hot path changes:

- the partition's end offset is read first (ListOffsets latest on its leader: on a quiet
  partition that is where the record will land); the acknowledgement's offset replaces it
  when it differs (acks=0 has none);
- *a replica has it* once a Fetch at offset+1 is no longer answered OFFSET_OUT_OF_RANGE:
  Fetch v11+ (KIP-392) with replica_id -2 is served by followers too, and a broker answers
  out of range only past its log end, so the leader's append and each follower's copy are
  seen when the replica's log end passes the record;
- *the high watermark covers it* once ListOffsets latest (a consumer's view) on the leader
  passes the offset;
- the segment is the leader's: DescribeLogDirs names the log dir holding the partition,
  and when that dir is on this machine (a local lab) the segment file holding the offset
  is picked from the partition's directory.

The probes loop as fast as the brokers answer, so a broker-side time is when a probe saw
the step: an upper bound, late by at most one probe round trip. With --consume a consumer
(no group) is then assigned the partition at the record's offset, and the Fetch answer
that carried it is reported from the consumer's fetcher.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Sequence, TextIO

from kafkalike.cli.tool_main import run_tool
from kafkalike.client.connection import BrokerConnection, KafkaConnectionError, bootstrap
from kafkalike.client.consumer import KafkaConsumer, TopicPartition
from kafkalike.client.errors import KafkaError
from kafkalike.client.producer import KafkaProducer
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest
from kafkalike.protocol.messages.metadata import MetadataRequest

DEBUGGING_REPLICA_ID = -2   # Kafka's DebuggingConsumerId
LATEST = -1
PROBE_TIMEOUT = 15.0        # seconds to wait for followers and the high watermark
REQUEST_TIMEOUT_MS = 5000
DELIVERY_TIMEOUT_MS = 10000


@dataclass
class Step:
    name: str
    at: float | None = None       # seconds after send() was called
    detail: str = ""


@dataclass
class Journey:
    """What was seen, in the order the steps are printed."""

    steps: dict[str, Step] = field(default_factory=dict)
    offset: int | None = None

    def mark(self, key: str, name: str, at: float, detail: str = "") -> None:
        if key not in self.steps or self.steps[key].at is None:
            self.steps[key] = Step(name, at, detail)

    def expect(self, key: str, name: str, detail: str = "") -> None:
        self.steps.setdefault(key, Step(name, None, detail))


class Tracer:
    """The producer's and fetcher's hooks: each call stamps a step with the time since t0."""

    def __init__(self, journey: Journey) -> None:
        self.journey = journey
        self.t0 = time.monotonic()
        self.partition: int | None = None
        self.partition_known = threading.Event()
        self.sent = threading.Event()        # the record's Produce request is out: probing starts
        self.request_node: int | None = None
        self.target: tuple[str, int, int] | None = None   # (topic, partition, offset) for --consume
        self.answers = 0                                    # Produce answers for the record (retries add)

    def _at(self) -> float:
        return time.monotonic() - self.t0

    # -- producer (user thread) ------------------------------------------------------------

    def step(self, name: str, **info) -> None:
        at = self._at()
        j = self.journey
        if name == "serializer":
            j.mark("serializer", "serializer", at, f"key {_size(info['key_bytes'])}, value {_size(info['value_bytes'])}")
        elif name == "partitioner":
            # A sticky partitioner may choose again when its batch is full (KIP-480): the last choice counts.
            j.steps["partitioner"] = Step("partitioner", at, f"partition {info['partition']} ({info['partitioner']})")
        elif name == "accumulator":
            partition = info["partition"]
            if "partitioner" not in j.steps:
                j.mark("partitioner", "partitioner", at, f"partition {partition} given: no partitioner ran")
            detail = f"batch {info['batch']} for partition {partition}"
            if info.get("full"):
                detail += " (now full)"
            j.mark("accumulator", "accumulator", at, detail)
            self.partition = partition
            self.partition_known.set()

    # -- producer (sender thread) ------------------------------------------------------------

    def request_sent(self, node: int, correlation_id: int, batches: dict, acks: int) -> None:
        if self.partition is None or not any(p == self.partition for (_, p) in batches):
            return
        self.request_node = node
        self.journey.mark("request", "sender: Produce request sent", self._at(),
                          f"to broker {node}, correlation id {correlation_id}, acks={acks}, "
                          f"{len(batches)} partition(s)")
        self.sent.set()

    def response_received(self, node: int, correlation_id: int, response, error) -> None:
        if node != self.request_node:
            return
        code = None
        for topic in getattr(response, "responses", None) or ():
            for p in topic.partition_responses:
                if p.index == self.partition:
                    code = p.error_code
        if code is None and response is not None:
            return            # an answer for other partitions only
        answers = self.journey.steps.get("response")
        if response is None and error is None:
            detail = "acks=0: no answer; done once written to the socket"
        elif error is not None:
            detail = f"error: {error}"
        elif code:
            detail = f"from broker {node}, correlation id {correlation_id}: {_error_name(code)}"
        else:
            detail = f"from broker {node}, correlation id {correlation_id}"
        if answers is None:
            self.journey.mark("response", "sender: Produce answer", self._at(), detail)
            self.answers = 1
        else:
            self.answers += 1
            first = answers.detail.split(" (answers: ")[0]
            answers.detail = f"{first} (answers: {self.answers}, the last {self._at() * 1000:.3f} ms: " \
                             f"{detail.split(': ', 1)[-1] if code or error else 'ok'})"

    # -- consumer (fetcher) --------------------------------------------------------------------

    def fetch_answered(self, node: int, offsets: dict, response, error, sent: float | None) -> None:
        target = self.target
        if target is None or error is not None or response is None:
            return
        topic, partition, offset = target
        for t in response.responses:
            if t.topic != topic:
                continue
            for p in t.partition_responses:
                fetch_offset = offsets.get(TopicPartition(topic, partition))
                if p.partition == partition and p.record_set and fetch_offset is not None and fetch_offset <= offset:
                    detail = (f"from broker {node}, fetch offset {fetch_offset}, {len(p.record_set)} bytes, "
                              f"high watermark {p.high_watermark}")
                    if sent is not None:
                        detail += f", sent at {(sent - self.t0) * 1000:.3f} ms"
                    self.journey.mark("fetch", "consumer: Fetch answer with it", self._at(), detail)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def _size(n: int) -> str:
    return "null" if n < 0 else f"{n} B"


# -- the cluster, seen through the protocol -----------------------------------------------------

@dataclass
class PartitionView:
    leader: int
    replicas: list[int]
    isr: list[int]


class Cluster:
    """Blocking connections to the brokers, one per probe use (never shared across threads)."""

    def __init__(self, servers: str) -> None:
        self.servers = servers
        with bootstrap(servers, client_id="kafkalike-trace") as conn:
            self.metadata = conn.send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        self.addresses = {b.node_id: (b.host, b.port) for b in self.metadata.brokers}

    def partitions(self, topic: str) -> dict[int, PartitionView]:
        for t in self.metadata.topics:
            if t.name == topic:
                if t.error_code:
                    raise KafkaError(f"Topic {topic}: {ErrorCode(t.error_code).name}")
                return {p.partition_index: PartitionView(p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
                        for p in t.partitions}
        raise KafkaError(f"Topic {topic} does not exist (kafkalike-trace does not create topics)")

    def connect(self, node: int) -> BrokerConnection:
        host, port = self.addresses[node]
        return BrokerConnection(host, port, client_id="kafkalike-trace", timeout=10.0).connect()


def latest_offset(conn: BrokerConnection, topic: str, partition: int) -> int:
    """ListOffsets latest as a consumer sees it: the high watermark."""
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=LATEST, max_num_offsets=1)])])
    version = conn.pick_version(ListOffsetsRequest.API_KEY)
    response = conn.send(request, version)
    p = response.topics[0].partitions[0]
    if p.error_code:
        raise KafkaError(f"ListOffsets {topic}-{partition}: {ErrorCode(p.error_code).name}")
    return p.offset if version > 0 else (p.old_style_offsets or [-1])[0]


def holds(conn: BrokerConnection, topic: str, partition: int, offset: int) -> tuple[bool, int]:
    """Whether the broker's copy of the partition reaches past `offset` (a Fetch at offset+1
    is not out of range), and the high watermark it reports."""
    request = FetchRequest(
        replica_id=DEBUGGING_REPLICA_ID, max_wait_ms=0, min_bytes=0, max_bytes=1, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset + 1, log_start_offset=-1,
            partition_max_bytes=1)])])
    response = conn.send(request, min(conn.pick_version(FetchRequest.API_KEY), 12))
    p = response.responses[0].partition_responses[0]
    if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
        return False, p.high_watermark
    if p.error_code:
        raise KafkaError(f"Fetch {topic}-{partition} at {offset + 1}: {ErrorCode(p.error_code).name}")
    return True, p.high_watermark


def segment_of(conn: BrokerConnection, topic: str, partition: int, offset: int) -> str:
    """The leader's log dir for the partition (DescribeLogDirs), and the segment file
    holding `offset` when that directory is readable from here."""
    request = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(
        topic=topic, partition_index=[partition])])
    response = conn.send(request, conn.pick_version(DescribeLogDirsRequest.API_KEY))
    for result in response.results:
        for t in result.topics:
            if t.name != topic:
                continue
            for p in t.partitions:
                if p.partition_index == partition and not p.is_future_key:
                    directory = os.path.join(result.log_dir, f"{topic}-{partition}")
                    try:
                        bases = sorted(int(name[:-4]) for name in os.listdir(directory)
                                       if name.endswith(".log") and name[:-4].isdigit())
                    except OSError:
                        return f"{directory}/ (log dir {result.log_dir}; not readable from here)"
                    base = max((b for b in bases if b <= offset), default=None)
                    if base is None:
                        return f"{directory}/"
                    return os.path.join(directory, f"{base:020d}.log")
    return "(not reported by DescribeLogDirs)"


class Probe:
    """Watches the partition until every replica and the high watermark have passed the
    record, or PROBE_TIMEOUT: one thread per replica asking it for offset+1 (its log
    end), one asking the leader for its high watermark, each on a connection of its own
    opened before the send, so the probes run side by side and a step is seen within
    about one round trip of the broker it is on. They start once the Produce request is
    out, so they do not compete with the producer for the interpreter before that."""

    def __init__(self, cluster: Cluster, topic: str, views: dict[int, PartitionView], starts: dict[int, int],
                 tracer: Tracer) -> None:
        self.cluster = cluster
        self.topic = topic
        self.views = views
        self.starts = starts      # each partition's end offset before the send
        self.tracer = tracer
        self.offset: int | None = None        # set from the acknowledgement when it knows better
        self.errors: list[Exception] = []
        self._lock = threading.Lock()
        nodes = sorted({n for v in views.values() for n in v.replicas if n in cluster.addresses})
        self.unreachable: dict[int, str] = {}   # replicas this tool cannot talk to (a dead broker)
        self.stopped = threading.Event()        # the record failed: nothing more to watch for
        self.connections = self._connect(nodes)
        self.hw_connections = self._connect(sorted({v.leader for v in views.values() if v.leader in self.connections}))
        self._threads = [threading.Thread(target=self._guard, args=(self._watch_replica, node), daemon=True)
                         for node in self.connections]
        self._threads += [threading.Thread(target=self._guard, args=(self._watch_hw, node), daemon=True)
                          for node in self.hw_connections]

    def start(self) -> None:
        """Start the watchers: each waits for the Produce request to be out (nothing can
        reach a broker before; probing earlier would only take the interpreter from the
        producer's threads and slow the steps it times), then probes if its broker holds
        the record's partition."""
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _connect(self, nodes: list[int]) -> dict[int, BrokerConnection]:
        connections = {}
        for node in nodes:
            try:
                connections[node] = self.cluster.connect(node)
            except (KafkaConnectionError, OSError) as error:
                self.unreachable[node] = str(error)
        return connections

    def close(self) -> None:
        for conn in list(self.connections.values()) + list(self.hw_connections.values()):
            conn.close()

    def _view(self) -> PartitionView | None:
        if not self.tracer.sent.wait(PROBE_TIMEOUT):
            return None
        return self.views[self.tracer.partition]

    def _guard(self, target, node: int) -> None:
        try:
            target(node)
        except Exception as error:  # reported by main(), never a traceback from a thread
            with self._lock:
                self.errors.append(error)

    def _offset(self, partition: int) -> int:
        return self.offset if self.offset is not None else self.starts[partition]

    def _watch_replica(self, node: int) -> None:
        view = self._view()
        if view is None or node not in view.replicas:
            return
        tracer, partition, conn = self.tracer, self.tracer.partition, self.connections[node]
        deadline = time.monotonic() + PROBE_TIMEOUT
        while time.monotonic() < deadline and not self.stopped.is_set():
            offset = self._offset(partition)
            has, _ = holds(conn, self.topic, partition, offset)
            if has:
                at = time.monotonic() - tracer.t0
                if node == view.leader:
                    tracer.journey.mark("leader", f"leader append (broker {node})", at)
                else:
                    tracer.journey.mark(f"follower-{node}", f"follower has it (broker {node})", at)
                return

    def _watch_hw(self, node: int) -> None:
        view = self._view()
        if view is None or node != view.leader:
            return
        tracer, partition, conn = self.tracer, self.tracer.partition, self.hw_connections[node]
        deadline = time.monotonic() + PROBE_TIMEOUT
        while time.monotonic() < deadline and not self.stopped.is_set():
            offset = self._offset(partition)
            hw = latest_offset(conn, self.topic, partition)
            if hw > offset:
                tracer.journey.mark("hw", "high watermark covers it", time.monotonic() - tracer.t0,
                                    f"high watermark {hw} on broker {node}")
                return


# -- the tool -----------------------------------------------------------------------------------

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kafkalike-trace.sh", description="Send one record and print its journey "
                                     "through the producer and the cluster, with timings (docs/journey.md).")
    parser.add_argument("--bootstrap-server", required=True, help="REQUIRED: host:port[,host:port...]")
    parser.add_argument("--topic", required=True, help="REQUIRED: an existing topic")
    parser.add_argument("--key", default=None, help="the record's key (UTF-8; none by default)")
    parser.add_argument("--value", default="hello", help="the record's value (UTF-8; default: hello)")
    parser.add_argument("--acks", default="1", choices=["0", "1", "-1", "all"], help="the producer's acks (default 1)")
    parser.add_argument("--linger-ms", type=int, default=0, help="the producer's linger.ms (default 0)")
    parser.add_argument("--partition", type=int, default=None, help="send to this partition (default: the "
                        "partitioner picks)")
    parser.add_argument("--consume", action="store_true", help="then fetch the record back with a consumer and "
                        "show the Fetch that returned it")
    return parser.parse_args(argv)


ORDER = ("send", "serializer", "partitioner", "accumulator", "request", "leader", "followers", "hw", "response",
         "ack", "fetch", "poll")


def render(journey: Journey, args: argparse.Namespace, partition: int | None, view: PartitionView | None,
           out: TextIO) -> None:
    offset = "unknown" if journey.offset is None else journey.offset
    out.write(f"Journey of one record to {args.topic}-{partition if partition is not None else '?'} at offset "
              f"{offset} (acks={args.acks}, linger.ms={args.linger_ms}")
    if view is not None:
        out.write(f"; leader {view.leader}, replicas {','.join(map(str, view.replicas))}, "
                  f"isr {','.join(map(str, view.isr))}")
    out.write(")\n")
    out.write(f"  {'step':<40} {'at ms':>10} {'+ms':>9}  detail\n")
    keys = []
    for key in ORDER:
        if key == "followers":
            keys.extend(sorted(k for k in journey.steps if k.startswith("follower-")))
        elif key in journey.steps:
            keys.append(key)
    # In the order things happened (the steps' logical order breaks ties); unseen ones last.
    rank = {key: i for i, key in enumerate(keys)}
    keys.sort(key=lambda k: (journey.steps[k].at is None, journey.steps[k].at or 0.0, rank[k]))
    previous = None
    for key in keys:
        step = journey.steps[key]
        if step.at is None:
            out.write(f"  {step.name:<40} {'-':>10} {'':>9}  {step.detail}\n")
            continue
        at = step.at * 1000
        delta = "" if previous is None else f"{at - previous:+.3f}"
        out.write(f"  {step.name:<40} {at:>10.3f} {delta:>9}  {step.detail}\n")
        previous = at
    out.write("(client steps are stamped by the producer as they happen; broker steps when a probe through the "
              "protocol first saw them)\n")


def trace(args: argparse.Namespace, out: TextIO) -> int:
    cluster = Cluster(args.bootstrap_server)
    views = cluster.partitions(args.topic)
    if args.partition is not None and args.partition not in views:
        raise KafkaError(f"Partition {args.partition} of {args.topic} does not exist ({len(views)} partitions)")
    starts = {}
    for partition, view in views.items():
        if view.leader < 0:
            continue
        with cluster.connect(view.leader) as conn:
            starts[partition] = latest_offset(conn, args.topic, partition)
    acks = "-1" if args.acks == "all" else args.acks
    # A record the cluster refuses (acks=all below min.insync.replicas: NOT_ENOUGH_REPLICAS,
    # retried) fails within DELIVERY_TIMEOUT_MS, so the journey shows the failure.
    producer = KafkaProducer({"bootstrap.servers": args.bootstrap_server, "acks": acks,
                              "linger.ms": args.linger_ms, "client.id": "kafkalike-trace",
                              "request.timeout.ms": REQUEST_TIMEOUT_MS,
                              "delivery.timeout.ms": DELIVERY_TIMEOUT_MS + args.linger_ms})
    journey = Journey()
    probe = None
    try:
        producer.partitions_for(args.topic)      # metadata first: its wait is not the record's
        tracer = Tracer(journey)
        probe = Probe(cluster, args.topic, views, starts, tracer)
        probe.start()
        producer._trace_with(tracer)
        acked = threading.Event()

        def on_ack(metadata, error) -> None:
            at = time.monotonic() - tracer.t0
            if error is not None:
                journey.mark("ack", "acknowledgement (callback)", at, f"failed: {type(error).__name__}: {error}")
                probe.stopped.set()
            elif metadata.offset >= 0:
                journey.offset = metadata.offset
                probe.offset = metadata.offset
                journey.mark("ack", "acknowledgement (callback)", at, f"offset {metadata.offset}")
            else:
                journey.mark("ack", "acknowledgement (callback)", at, "acks=0: no offset")
            acked.set()

        tracer.t0 = time.monotonic()
        journey.mark("send", "send() called", 0.0)
        producer.send(args.topic, args.value.encode(), key=None if args.key is None else args.key.encode(),
                      partition=args.partition, callback=on_ack)
        # No flush(): it would make the batch sendable at once, and linger.ms is part of the journey.
        acked.wait((DELIVERY_TIMEOUT_MS + args.linger_ms) / 1000 + 5)
        producer._trace_with(None)
        partition = tracer.partition
        guess = starts.get(partition) if partition is not None else None
        notes = []
        if journey.offset is None and guess is not None and acks == "0":
            journey.offset = guess
            notes.append(f"acks=0 gives no offset: {guess} is where the partition ended before the send")
        elif journey.offset is not None and journey.offset != guess:
            notes.append(f"other records reached the partition meanwhile (its end was {guess}): broker times "
                         "may be an earlier record's")
        if journey.offset is not None:
            probe.offset = journey.offset
        probe.join(PROBE_TIMEOUT + 5)
        if probe.errors:
            raise probe.errors[0]
        view = views.get(partition) if partition is not None else None
        if view is not None:
            settle(journey, view, acks)
            for node, why in probe.unreachable.items():
                step = journey.steps.get(f"follower-{node}")
                if step is not None and step.at is None:
                    step.detail = f"not seen: this tool cannot reach broker {node} ({why})"
            if journey.offset is not None and "leader" in journey.steps:
                with cluster.connect(view.leader) as conn:
                    segment = segment_of(conn, args.topic, partition, journey.offset)
                journey.steps["leader"].detail += f", segment {segment}"
        if args.consume and journey.offset is not None and partition is not None:
            consume(args, tracer, partition, journey.offset)
        render(journey, args, partition, view, out)
        for note in notes:
            out.write(f"note: {note}\n")
        failed = journey.steps.get("ack")
        return 1 if failed is not None and failed.detail.startswith("failed") else 0
    finally:
        producer.close(5)
        if probe is not None:
            probe.close()


def settle(journey: Journey, view: PartitionView, acks: str) -> None:
    """A probe sees a step when it next asks, which on a busy machine can be well after
    the step; but some steps need others first. The high watermark passes the record
    before an acks=all answer; an in-sync follower has it before the high watermark
    passes it; the leader has it before any follower, the high watermark or an acks=1/all
    answer. Each step is put at the earliest such evidence, which is named."""
    steps = journey.steps
    answer, ack = steps.get("response"), steps.get("ack")
    answered = answer is not None and answer.at is not None and ack is not None and \
        not ack.detail.startswith("failed") and acks != "0"

    def seen(key: str) -> list[tuple[float, str]]:
        step = steps.get(key)
        return [] if step is None or step.at is None else [(step.at, "a probe")]

    def place(key: str, name: str, detail: str, evidence: list[tuple[float, str]]) -> None:
        if not evidence:
            journey.expect(key, name, "not seen")
            return
        at, how = min(evidence)
        steps[key] = Step(name, at, f"{detail} (seen by {how})")

    hw = steps.get("hw")
    hw_detail = hw.detail if hw is not None and hw.at is not None else ""
    place("hw", "high watermark covers it", hw_detail,
          seen("hw") + ([(answer.at, "the acks=all answer")] if answered and acks == "-1" else []))
    hw_at = steps["hw"].at
    for node in view.replicas:
        if node == view.leader:
            continue
        key = f"follower-{node}"
        evidence = seen(key)
        if node in view.isr and hw_at is not None:
            evidence.append((hw_at, "the high watermark: it is in the ISR"))
        place(key, f"follower has it (broker {node})", f"its log end passed {journey.offset}", evidence)
    evidence = seen("leader")
    if answered:
        evidence.append((answer.at, "the Produce answer"))
    for key, step in list(steps.items()):
        if step.at is not None and (key.startswith("follower-") or key == "hw"):
            evidence.append((step.at, step.name))
    place("leader", f"leader append (broker {view.leader})", f"offset {journey.offset}", evidence)


def consume(args: argparse.Namespace, tracer: Tracer, partition: int, offset: int) -> None:
    tracer.target = (args.topic, partition, offset)
    consumer = KafkaConsumer({"bootstrap.servers": args.bootstrap_server, "client.id": "kafkalike-trace-consumer",
                              "enable.auto.commit": False})
    try:
        tp = TopicPartition(args.topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        consumer._fetcher.tracer = tracer
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            records = consumer.poll(0.5)
            found = [r for r in records if r.offset == offset]
            if found:
                tracer.journey.mark("poll", "consumer: poll() returned it", time.monotonic() - tracer.t0,
                                    f"offset {offset}, value {found[0].value!r}")
                return
            if records:
                consumer.seek(tp, offset)
    finally:
        consumer.close()


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # The journey reports retries and failures itself; the client's per-retry warnings would bury it.
    logging.getLogger("kafkalike.client").setLevel(logging.ERROR)
    try:
        return trace(args, out)
    except (KafkaError, KafkaConnectionError) as error:
        err.write(f"Error: {error}\n")
        return 1


if __name__ == "__main__":
    run_tool(main)
