"""The consumer's fetch path: partition positions, Fetch and ListOffsets, and record decoding.

SubscriptionState holds what the consumer is assigned and, per partition, where it
reads next (None until a committed offset or auto.offset.reset gives it one). The
Fetcher sends at most one Fetch per leader at a time, for every assigned partition that
has a position, is not paused and has no answer waiting to be read; poll() takes
records out of those answers (at most max.poll.records) and sends the next fetches
before it returns, so the broker's long poll overlaps the user's work (Java's
pipelining). An answer is kept only if the partition is still assigned and its position
did not move while the fetch was out (a seek makes it stale).

Records are decoded lazily, one batch at a time, from the raw bytes of the answer:
a poll that wants 500 records decodes only the batches those come from. Control
batches (transaction markers) and records below the position (the head of a batch the
broker returned whole) are skipped; after a batch is consumed the position jumps to
its next offset, which also steps over offsets compaction removed. With
isolation.level=read_committed the batches of aborted transactions are skipped too,
from the answer's aborted-transaction list, as Java's Fetcher does.

A record whose key or value cannot be deserialized stops the partition there: the
records before it are returned, and the next poll raises RecordDeserializationError
naming its partition and offset, again and again until the user seeks past it.

Each leader's fetches run in an incremental fetch session (KIP-227), as Java's
FetchSessionHandler: the first is full, later ones list only the partitions whose
position moved (and forget those no longer fetched), and the broker answers only the
partitions with news. A session error or a lost connection makes the next fetch to that
broker full again.

The Fetcher talks to the network only through `net.send(node_id, request)`, which returns
a future with add_callback(fn(response, error)); tests give it a fake.
"""
from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from kafkalike.client.metrics import FetchMetrics, Metrics
from kafkalike.client.errors import (
    INVALID_METADATA_CODES,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RecordDeserializationError,
    TopicAuthorizationError,
    error_for_code,
)
from kafkalike.client.deserializers import is_passthrough
from kafkalike.client.metadata import TopicPartition
from kafkalike.common.fetch_session_handler import FetchSessionHandler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest
from kafkalike.records import RecordBatch, decode_batches
from kafkalike.records.control import ControlRecordType, parse_control_key
from kafkalike.records.header import CONTROL_MASK, TIMESTAMP_TYPE_MASK

log = logging.getLogger("kafkalike.client.fetcher")

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
RESET_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}
READ_COMMITTED = 1


@dataclass(slots=True)
class ConsumerRecord:
    """One record as poll() returns it (Java's ConsumerRecord); timestamps are epoch ms."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime, -1 none (magic 0)
    key: Any
    value: Any
    headers: list = field(default_factory=list)
    serialized_key_size: int = -1
    serialized_value_size: int = -1
    leader_epoch: int | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass
class PartitionState:
    position: int | None = None
    paused: bool = False
    reset_strategy: str | None = None  # set while the position waits for a ListOffsets answer
    reset_in_flight: bool = False
    retry_after: float = 0.0
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1


class SubscriptionState:
    """Assigned partitions and their positions, in assignment order."""

    def __init__(self, default_reset: str = "latest") -> None:
        self.default_reset = default_reset
        self.assignment: dict[TopicPartition, PartitionState] = {}

    def assign(self, partitions) -> None:
        """Replace the assignment; partitions kept keep their position."""
        new = {}
        for tp in partitions:
            tp = TopicPartition(*tp)
            new[tp] = self.assignment.get(tp) or PartitionState()
        self.assignment = new

    def state(self, tp: TopicPartition) -> PartitionState:
        try:
            return self.assignment[tp]
        except KeyError:
            raise IllegalStateError(f"No current assignment for partition {tp}") from None

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self.state(tp)
        state.position = offset
        state.reset_strategy = None
        state.reset_in_flight = False

    def request_reset(self, tp: TopicPartition, strategy: str | None = None) -> None:
        state = self.state(tp)
        state.position = None
        state.reset_strategy = strategy or self.default_reset
        state.reset_in_flight = False
        state.retry_after = 0.0

    def missing_positions(self) -> list[TopicPartition]:
        return [tp for tp, s in self.assignment.items() if s.position is None and s.reset_strategy is None]

    def fetchable(self) -> list[TopicPartition]:
        return [tp for tp, s in self.assignment.items() if s.position is not None and not s.paused]

    def topics(self) -> set[str]:
        return {tp.topic for tp in self.assignment}


class _CompletedFetch:
    """One partition's answer, read a batch at a time."""

    def __init__(self, tp: TopicPartition, fetch_offset: int, records, check_crcs: bool,
                 aborted: list | None = None) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset
        self._batches = iter(decode_batches(records, verify_crc=check_crcs)) if records else iter(())
        self._pending: list = []  # the current batch's records from the position on ...
        self._next = 0            # ... of which these are taken already
        self._batch = None
        self.exhausted = False
        # read_committed only: (producer id, first offset) of aborted transactions, by first offset
        self._aborted = deque(sorted(aborted, key=lambda a: a[1])) if aborted is not None else None
        self._aborted_producers: set[int] = set()
        self.corrupt: KafkaError | None = None

    def _skip_aborted(self, batch) -> bool:
        """Whether a batch belongs to an aborted transaction (read_committed only)."""
        if self._aborted is None or getattr(batch, "producer_id", -1) < 0:
            return False
        while self._aborted and self._aborted[0][1] <= batch.last_offset:
            self._aborted_producers.add(self._aborted.popleft()[0])
        if batch.is_control:
            records = batch.records()
            if records and parse_control_key(records[0].key).type == ControlRecordType.ABORT:
                self._aborted_producers.discard(batch.producer_id)
            return False
        return batch.is_transactional and batch.producer_id in self._aborted_producers

    def take(self, state: PartitionState, limit: int, build: Callable) -> list[ConsumerRecord]:
        """Up to `limit` records from the position on. A batch's records are decoded straight
        into ConsumerRecords with their raw key and value (one object per record: this is
        the hot path); `build(tp, batch, records)` deserializes them a slice at a time."""
        out: list[ConsumerRecord] = []
        while len(out) < limit:
            if self._next >= len(self._pending):
                if self._batch is not None:
                    state.position = max(state.position, self._batch.next_offset)
                    self._batch = None
                if self.corrupt is not None:
                    raise self.corrupt
                try:
                    batch = next(self._batches, None)
                except Exception as error:  # a batch that fails its CRC or does not parse
                    self.corrupt = KafkaError(f"Received exception when fetching the next record from {self.tp}. "
                                               "If needed, please seek past the record to continue consumption.")
                    self.corrupt.__cause__ = error
                    if out:
                        return out  # the good records first, as Java's fetcher hands them over
                    raise self.corrupt
                if batch is None:
                    self.exhausted = True
                    break
                position = state.position
                if type(batch) is RecordBatch:
                    h = batch.header
                    if h.base_offset + h.last_offset_delta < position:
                        continue
                    if (self._aborted is not None and self._skip_aborted(batch)) or h.attributes & CONTROL_MASK:
                        state.position = batch.next_offset
                        continue
                    epoch = h.partition_leader_epoch
                    self._pending = batch.consumer_records(ConsumerRecord, (
                        self.tp.topic, self.tp.partition, (h.attributes & TIMESTAMP_TYPE_MASK) >> 3,
                        epoch if epoch >= 0 else None), position)
                else:  # a legacy (magic 0/1) entry
                    if batch.next_offset <= position:
                        continue
                    self._pending = _legacy_records(self.tp, batch, position)
                self._batch = batch
                self._next = 0
                continue
            chunk = self._pending[self._next:self._next + limit - len(out)]
            try:
                built = build(self.tp, self._batch, chunk)
            except Exception:
                built, bad, error = self._build_until_bad(chunk, build)
                self._took(state, built, out)
                if out:
                    return out  # what came before is the user's; the bad record waits for the next poll
                raise RecordDeserializationError(
                    self.tp, bad.offset, f"Error deserializing key/value for partition {self.tp} at offset "
                    f"{bad.offset}. If needed, please seek past the record to continue consumption.") from error
            self._took(state, built, out)
        return out

    def _took(self, state: PartitionState, built: list, out: list) -> None:
        if built:
            out.extend(built)
            self._next += len(built)
            state.position = built[-1].offset + 1

    def _build_until_bad(self, chunk: list, build: Callable):
        """The records before the first that cannot be built, that record, and its error."""
        built: list = []
        for record in chunk:
            try:
                built.extend(build(self.tp, self._batch, [record]))
            except Exception as error:
                return built, record, error
        raise AssertionError("a slice failed to build but each of its records built")


def _legacy_records(tp: TopicPartition, batch, position: int) -> list[ConsumerRecord]:
    """A magic 0/1 entry's records from `position` on, with raw key and value."""
    topic, partition = tp
    ts_type = batch.timestamp_type
    return [ConsumerRecord(topic, partition, r.offset, r.timestamp, ts_type, r.key, r.value, r.headers,
                           -1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value), None)
            for r in batch.records() if r.offset >= position]


class Fetcher:
    def __init__(self, net, subscriptions: SubscriptionState, *, key_deserializer: Callable,
                 value_deserializer: Callable, fetch_min_bytes: int = 1, fetch_max_wait_ms: int = 500,
                 fetch_max_bytes: int = 52428800, max_partition_fetch_bytes: int = 1048576,
                 max_poll_records: int = 500, isolation_level: str = "read_uncommitted", check_crcs: bool = True,
                 retry_backoff_ms: int = 100, client_rack: str = "", log_prefix: str = "",
                 sensors: FetchMetrics | None = None) -> None:
        self.net = net
        self.subscriptions = subscriptions
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self._raw = is_passthrough(key_deserializer) and is_passthrough(value_deserializer)
        self.min_bytes = fetch_min_bytes
        self.max_wait_ms = fetch_max_wait_ms
        self.max_bytes = fetch_max_bytes
        self.max_partition_bytes = max_partition_fetch_bytes
        self.max_poll_records = max_poll_records
        self.isolation = READ_COMMITTED if isolation_level == "read_committed" else 0
        self.check_crcs = check_crcs
        self.retry_backoff = retry_backoff_ms / 1000
        self.rack = client_rack
        self.log_prefix = log_prefix
        self._completed: deque[_CompletedFetch] = deque()
        self._nodes_fetching: set[int] = set()
        self._sessions: dict[int, FetchSessionHandler[TopicPartition, tuple[int, int]]] = {}
        self._errors: list[Exception] = []
        self._out_of_range: dict[TopicPartition, int] = {}
        # Java's FetchManagerMetrics: per Fetch answer and per partition per poll.
        self.sensors = sensors if sensors is not None else FetchMetrics(Metrics("consumer"))
        # The record tracer (kafkalike-trace --consume): None unless asked for.
        self.tracer = None

    # -- fetching ----------------------------------------------------------------------------

    def send_fetches(self) -> int:
        """Send a Fetch to each leader with fetchable partitions and none outstanding."""
        cluster = self.net.cluster
        buffered = {c.tp for c in self._completed}
        by_node: dict[int, dict[TopicPartition, tuple[int, int]]] = {}
        for tp in self.subscriptions.fetchable():
            if tp in buffered:
                continue
            leader = cluster.leader_for(tp.topic, tp.partition)
            if leader is None:
                self.net.metadata.request_update()
                continue
            if leader in self._nodes_fetching:
                continue
            position = self.subscriptions.assignment[tp].position
            by_node.setdefault(leader, {})[tp] = (position, self.max_partition_bytes)
        for node, wanted in by_node.items():
            session = self._sessions.get(node)
            if session is None:
                session = self._sessions[node] = FetchSessionHandler()
            data = session.build(wanted)
            topics: dict[str, list] = {}
            for tp, (position, max_bytes) in data.to_send.items():
                topics.setdefault(tp.topic, []).append(FetchRequest.FetchPartition(
                    partition=tp.partition, current_leader_epoch=-1, fetch_offset=position, log_start_offset=-1,
                    partition_max_bytes=max_bytes))
            forgotten: dict[str, list[int]] = {}
            for tp in data.to_forget:
                forgotten.setdefault(tp.topic, []).append(tp.partition)
            request = FetchRequest(
                replica_id=-1, max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes, max_bytes=self.max_bytes,
                isolation_level=self.isolation, session_id=data.session_id, session_epoch=data.epoch,
                topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
                forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=t, partitions=ps)
                                       for t, ps in forgotten.items()],
                rack_id=self.rack)
            # Every partition of the session may be answered, listed in this request or not.
            offsets = {tp: position for tp, (position, _) in data.session.items()}
            self._nodes_fetching.add(node)
            future = self.net.send(node, request)
            sent = time.monotonic()
            future.add_callback(lambda response, error, node=node, offsets=offsets, sent=sent:
                                self._handle_fetch(node, offsets, response, error, sent))
        return len(by_node)

    def _handle_fetch(self, node: int, offsets: dict[TopicPartition, int], response, error,
                      sent: float | None = None) -> None:
        self._nodes_fetching.discard(node)
        if error is None and sent is not None:
            self._record_fetch(response, sent)
        if self.tracer is not None:
            self.tracer.fetch_answered(node, offsets, response, error, sent)
        session = self._sessions.get(node)
        if error is not None:
            log.debug("%sFetch from node %d failed: %s", self.log_prefix, node, error)
            if session is not None:
                session.handle_error()
            return
        error_code = getattr(response, "error_code", 0)
        if session is not None:
            answered = [TopicPartition(t.topic, p.partition) for t in response.responses for p in t.partition_responses]
            if not session.handle_response(error_code, getattr(response, "session_id", 0), answered,
                                           getattr(response, "throttle_time_ms", 0) > 0) and not error_code:
                return          # an answer that does not fit the session: the next fetch is full
            if error_code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
                log.info("%sNode %d was unable to process the fetch request: %s.", self.log_prefix, node,
                         ErrorCode(error_code).name)
                return
        if error_code:
            log.info("%sFetch from node %d failed with %s", self.log_prefix, node,
                     ErrorCode(response.error_code).name if response.error_code in ErrorCode._value2member_map_
                     else response.error_code)
            self.net.metadata.request_update()
            return
        assignment = self.subscriptions.assignment
        for topic in response.responses:
            for part in topic.partition_responses:
                tp = TopicPartition(topic.topic, part.partition)
                fetch_offset = offsets.get(tp)
                state = assignment.get(tp)
                if fetch_offset is None or state is None or state.position != fetch_offset:
                    continue  # unassigned or sought while the fetch was out: the answer is stale
                self._handle_partition(tp, state, fetch_offset, part)

    def _handle_partition(self, tp: TopicPartition, state: PartitionState, fetch_offset: int, part) -> None:
        code = part.error_code
        if code == ErrorCode.NONE:
            state.high_watermark = part.high_watermark
            if part.log_start_offset >= 0:
                state.log_start_offset = part.log_start_offset
            if part.last_stable_offset >= 0:
                state.last_stable_offset = part.last_stable_offset
            if part.record_set:
                aborted = None
                if self.isolation == READ_COMMITTED:
                    aborted = [(a.producer_id, a.first_offset) for a in part.aborted_transactions or ()]
                self._completed.append(_CompletedFetch(tp, fetch_offset, part.record_set, self.check_crcs, aborted))
            else:  # nothing new: the partition's lag is still known (Java drains an empty fetch too)
                self._record_consumed(tp, state, 0)
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if self.subscriptions.default_reset == "none":
                self._out_of_range[tp] = fetch_offset
            else:
                log.info("%sFetch position %d is out of range for partition %s, resetting offset", self.log_prefix,
                         fetch_offset, tp)
                self.subscriptions.request_reset(tp)
        elif code in INVALID_METADATA_CODES or code == ErrorCode.OFFSET_NOT_AVAILABLE:
            log.debug("%sError %s fetching %s: refreshing metadata", self.log_prefix, ErrorCode(code).name, tp)
            self.net.metadata.request_update()
        elif code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            self._errors.append(TopicAuthorizationError(f"Not authorized to access topics: [{tp.topic}]"))
        elif code == ErrorCode.UNKNOWN_SERVER_ERROR:
            log.warning("%sUnknown server error while fetching offset %d for topic-partition %s", self.log_prefix,
                        fetch_offset, tp)
        elif code == ErrorCode.CORRUPT_MESSAGE:
            self._errors.append(KafkaError(f"Encountered corrupt message when fetching offset {fetch_offset} for "
                                           f"topic-partition {tp}"))
        else:  # as Java's Fetcher: an answer no client should get is raised to the user
            self._errors.append(IllegalStateError(f"Unexpected error code {code} while fetching at offset "
                                                  f"{fetch_offset} from topic-partition {tp}"))

    def _record_fetch(self, response, sent: float) -> None:
        """Java's FetchResponse metrics: latency, bytes per answer and per topic."""
        now = time.monotonic()
        size = 0
        by_topic: dict[str, int] = {}
        for topic in getattr(response, "responses", ()):
            topic_bytes = 0
            for part in topic.partition_responses:
                if part.record_set:
                    topic_bytes += len(part.record_set)
            if topic_bytes:
                by_topic[topic.topic] = topic_bytes
                size += topic_bytes
        self.sensors.fetch_answered((now - sent) * 1000, size, by_topic, getattr(response, "throttle_time_ms", 0),
                                    now)

    def _record_consumed(self, tp: TopicPartition, state: PartitionState, count: int) -> None:
        """After a poll took `count` records of a partition: records consumed, lag and lead."""
        end = state.last_stable_offset if self.isolation == READ_COMMITTED else state.high_watermark
        position = state.position
        lag = end - position if end is not None and end >= 0 and position is not None else None
        start = state.log_start_offset
        lead = position - start if start is not None and start >= 0 and position is not None else None
        self.sensors.consumed(tp.topic, tp.partition, count, lag, lead, time.monotonic())

    def fetched_records(self, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records from answers already in, up to max.poll.records; raises errors those answers carried."""
        self._raise_errors()
        limit = max_records or self.max_poll_records
        out: list[ConsumerRecord] = []
        assignment = self.subscriptions.assignment
        while self._completed and len(out) < limit:
            completed = self._completed[0]
            state = assignment.get(completed.tp)
            if state is None or state.paused or state.position is None or completed.exhausted:
                self._completed.popleft()
                continue
            if state.position != completed.fetch_offset:
                # The user sought since the answer came in; it is stale.
                self._completed.popleft()
                continue
            try:
                taken = completed.take(state, limit - len(out), self._build)
            except Exception as error:
                # A record that cannot be deserialized, or a corrupt batch, keeps its answer: the
                # next poll meets it again, unless the user seeks past it. Other errors come back
                # with the next fetch.
                if not (isinstance(error, RecordDeserializationError) or error is completed.corrupt):
                    self._completed.popleft()
                if out:
                    return out  # hand over what was read first
                raise
            out.extend(taken)
            self._record_consumed(completed.tp, state, len(taken))
            completed.fetch_offset = state.position
            if completed.exhausted:
                self._completed.popleft()
        return out

    def has_buffered(self) -> bool:
        return bool(self._completed)

    def clear_buffer(self, tp: TopicPartition | None = None) -> None:
        if tp is None:
            self._completed.clear()
        else:
            self._completed = deque(c for c in self._completed if c.tp != tp)

    def _raise_errors(self) -> None:
        if self._out_of_range:
            stale = {tp: o for tp, o in self._out_of_range.items()
                     if tp in self.subscriptions.assignment and self.subscriptions.assignment[tp].position == o}
            self._out_of_range.clear()
            if stale:
                raise OffsetOutOfRangeError(stale)
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def _build(self, tp: TopicPartition, batch, records: list) -> list[ConsumerRecord]:
        """The user's records from a slice of decoded ones (raw key and value bytes):
        the slice itself when both deserializers pass bytes through."""
        if self._raw:
            return records
        topic = tp.topic
        kd, vd = self.key_deserializer, self.value_deserializer
        return [ConsumerRecord(topic, r.partition, r.offset, r.timestamp, r.timestamp_type, kd(topic, r.key),
                               vd(topic, r.value), r.headers, r.serialized_key_size, r.serialized_value_size,
                               r.leader_epoch) for r in records]

    # -- positions from ListOffsets ------------------------------------------------------------

    def reset_positions(self, now: float | None = None) -> None:
        """Raise for partitions no policy can place; ask leaders for the others' reset offsets."""
        subs = self.subscriptions
        missing = subs.missing_positions()
        if missing:
            if subs.default_reset == "none":
                raise NoOffsetForPartitionError(missing)
            for tp in missing:
                subs.request_reset(tp)
        now = time.monotonic() if now is None else now
        wanted = {tp: RESET_TIMESTAMPS[s.reset_strategy] for tp, s in subs.assignment.items()
                  if s.reset_strategy is not None and not s.reset_in_flight and s.retry_after <= now}
        if not wanted:
            return
        for tp in wanted:
            subs.assignment[tp].reset_in_flight = True
        for node, request, tps in self._list_offsets_requests(wanted):
            if node is None:
                for tp in tps:
                    self._reset_failed(tp, wanted[tp])
                continue
            self.net.send(node, request).add_callback(
                lambda response, error, tps=tps: self._handle_reset(tps, wanted, response, error))

    def _reset_failed(self, tp: TopicPartition, timestamp: int) -> None:
        state = self.subscriptions.assignment.get(tp)
        if state is not None and state.reset_in_flight and RESET_TIMESTAMPS.get(state.reset_strategy) == timestamp:
            state.reset_in_flight = False
            state.retry_after = time.monotonic() + self.retry_backoff

    def _handle_reset(self, tps, wanted, response, error) -> None:
        results = {} if error is not None else self._parse_list_offsets(response)
        for tp in tps:
            state = self.subscriptions.assignment.get(tp)
            if state is None or not state.reset_in_flight or RESET_TIMESTAMPS.get(state.reset_strategy) != wanted[tp]:
                continue
            found = results.get(tp)
            if isinstance(found, tuple):
                log.info("%sResetting offset for partition %s to offset %d.", self.log_prefix, tp, found[0])
                self.subscriptions.seek(tp, found[0])
            else:
                self._reset_failed(tp, wanted[tp])

    def _list_offsets_requests(self, timestamps: dict[TopicPartition, int]):
        """(leader, ListOffsets request, partitions) per leader; leader None for partitions with none known."""
        cluster = self.net.cluster
        by_node: dict[int | None, dict[str, list]] = {}
        for tp, ts in timestamps.items():
            leader = cluster.leader_for(tp.topic, tp.partition)
            if leader is None:
                self.net.metadata.add_topic(tp.topic, time.monotonic())
                self.net.metadata.request_update()
            by_node.setdefault(leader, {}).setdefault(tp.topic, []).append((tp.partition, ts))
        for node, topics in by_node.items():
            tps = [TopicPartition(t, p) for t, ps in topics.items() for p, _ in ps]
            if node is None:
                yield None, None, tps
                continue
            request = ListOffsetsRequest(replica_id=-1, isolation_level=self.isolation, topics=[
                ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=ts,
                                                            max_num_offsets=1) for p, ts in ps])
                for t, ps in topics.items()])
            yield node, request, tps

    def _parse_list_offsets(self, response) -> dict[TopicPartition, "tuple[int, int] | None | Exception"]:
        """Per partition: (offset, timestamp), None when no record matches, or the error."""
        out: dict[TopicPartition, Any] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition_index)
                if p.error_code != ErrorCode.NONE:
                    error = error_for_code(p.error_code)
                    if getattr(error, "invalid_metadata", False) or p.error_code in INVALID_METADATA_CODES:
                        self.net.metadata.request_update()
                    out[tp] = error
                    continue
                offset = p.offset if p.old_style_offsets is None or not p.old_style_offsets else p.old_style_offsets[0]
                out[tp] = None if offset < 0 else (offset, p.timestamp)
        return out

    def list_offsets(self, timestamps: dict[TopicPartition, int], timeout: float,
                     poll: Callable[[float, Callable[[], bool]], None]) -> dict[TopicPartition, "tuple[int, int] | None"]:
        """Blocking ListOffsets for many partitions, retrying retriable errors until `timeout`."""
        deadline = time.monotonic() + timeout
        remaining = dict(timestamps)
        results: dict[TopicPartition, tuple[int, int] | None] = {}
        while remaining:
            futures = []
            for node, request, tps in self._list_offsets_requests(remaining):
                if node is not None:
                    futures.append(self.net.send(node, request))
            if futures:
                poll(max(0.0, deadline - time.monotonic()), lambda: all(f.done for f in futures))
            for future in futures:
                if not future.done or future.exception is not None:
                    continue
                for tp, found in self._parse_list_offsets(future.value).items():
                    if tp not in remaining:
                        continue
                    if isinstance(found, Exception):
                        if not found.retriable:
                            raise found
                        continue
                    results[tp] = found
                    del remaining[tp]
            if remaining:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise KafkaTimeoutError(f"Failed to get offsets by times in {int(timeout * 1000)}ms")
                poll(min(self.retry_backoff, left), lambda: False)
        return results


__all__ = ["ConsumerRecord", "EARLIEST_TIMESTAMP", "Fetcher", "LATEST_TIMESTAMP", "PartitionState",
           "SubscriptionState"]
