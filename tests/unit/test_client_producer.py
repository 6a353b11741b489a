"""KafkaProducer: configuration, serializers, and the send path against scripted fake brokers.

The fakes (tests.unit.test_client_connection.FakeBroker, here serving each connection on
its own thread) speak the real protocol, so these tests cover what a real broker cannot
be made to do on demand: answer NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE or
NOT_ENOUGH_REPLICAS, stay silent, or hang up mid-request. Assertions are about
outcomes (what was delivered, what failed with which error), never about durations.
"""
from __future__ import annotations

import json
import socket
import threading

import pytest

from kafkalike.client.errors import (
    BrokerResponseError,
    ConfigError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
    TopicAuthorizationError,
)
from kafkalike.client.producer import KafkaProducer, ProducerRecord
from kafkalike.client.config import producer_config
from kafkalike.client.serializers import resolve_serializer
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.metadata import MetadataResponse
from kafkalike.protocol.messages.produce import ProduceResponse
from kafkalike.records import decode_batches
from tests.unit.test_client_connection import FakeBroker, dead_port
from tests.waiting import wait_until

METADATA, PRODUCE = 3, 0


class ThreadedFakeBroker(FakeBroker):
    """FakeBroker that serves every connection at once (a producer opens several)."""

    def __post_init__(self) -> None:
        self.connections: list[socket.socket] = []
        super().__post_init__()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            threading.Thread(target=self._talk_then_close, args=(conn,), daemon=True).start()

    def _talk_then_close(self, conn: socket.socket) -> None:
        with conn:
            self._talk(conn)

    def hang_up(self) -> None:
        for conn in self.connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.hang_up()
        super().close()


class Cluster:
    """One fake broker leading every partition of the topics it knows; produce is scripted.

    script: a list of per-request answers consumed in order; each is an ErrorCode for every
    partition in the request, "silent" (no answer), or "hangup". When it runs out every
    request succeeds. Records that were acknowledged are kept per partition.
    """

    def __init__(self, topics: dict[str, int] | None = None) -> None:
        self.topics = dict(topics or {"t": 1})
        self.script: list = []
        self.logs: dict[tuple[str, int], list] = {}
        self.acks_seen: list[int] = []
        self.lock = threading.Lock()
        self.broker = ThreadedFakeBroker(handlers={METADATA: self.metadata, PRODUCE: self.produce})

    @property
    def bootstrap(self) -> str:
        return self.broker.address

    def metadata(self, body, version):
        wanted = [t.name for t in body.topics] if body.topics is not None else list(self.topics)
        topics = []
        for name in wanted:
            if name not in self.topics:
                topics.append(MetadataResponse.MetadataResponseTopic(
                    name=name, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
                continue
            topics.append(MetadataResponse.MetadataResponseTopic(name=name, partitions=[
                MetadataResponse.MetadataResponsePartition(partition_index=p, leader_id=0, leader_epoch=0,
                                                           replica_nodes=[0], isr_nodes=[0])
                for p in range(self.topics[name])]))
        return MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(
            node_id=0, host="127.0.0.1", port=self.broker.port)], cluster_id="fake", controller_id=0, topics=topics)

    def produce(self, body, version):
        with self.lock:
            self.acks_seen.append(body.acks)
            step = self.script.pop(0) if self.script else ErrorCode.NONE
            if step == "silent":
                return None
            if step == "hangup":
                self.broker.hang_up()
                return None
            if callable(step):
                step = step(body)
            responses = []
            for topic in body.topic_data:
                parts = []
                for p in topic.partition_data:
                    log = self.logs.setdefault((topic.name, p.index), [])
                    base = len(log)
                    if step == ErrorCode.NONE:
                        for batch in decode_batches(bytes(p.records)):
                            log.extend(batch.records())
                    parts.append(ProduceResponse.PartitionProduceResponse(
                        index=p.index, error_code=int(step), base_offset=base if step == ErrorCode.NONE else -1))
                responses.append(ProduceResponse.TopicProduceResponse(name=topic.name, partition_responses=parts))
            return None if body.acks == 0 else ProduceResponse(responses=responses)

    def values(self, topic: str = "t", partition: int = 0) -> list:
        return [r.value for r in self.logs.get((topic, partition), [])]


@pytest.fixture
def cluster():
    clusters = []

    def make(**kw) -> Cluster:
        c = Cluster(**kw)
        clusters.append(c)
        return c
    yield make
    for c in clusters:
        c.broker.close()


def producer_for(c: Cluster, **config) -> KafkaProducer:
    base = {"bootstrap.servers": c.bootstrap, "retry.backoff.ms": 10, "reconnect.backoff.ms": 10}
    base.update({k.replace("_", "."): v for k, v in config.items()})
    return KafkaProducer(base)


# -- configuration -----------------------------------------------------------------------------------


@pytest.mark.parametrize("key,value,message", [
    ("acks", "2", "Invalid value 2 for configuration acks: String must be one of: all, -1, 0, 1"),
    ("batch.size", "-1", "Invalid value -1 for configuration batch.size: Value must be at least 0"),
    ("linger.ms", "soon", "Invalid value soon for configuration linger.ms: Not a number of type LONG"),
    ("compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one "
                                   "of: none, gzip, snappy, lz4, zstd"),
    ("max.in.flight.requests.per.connection", 0, "Invalid value 0 for configuration "
                                                 "max.in.flight.requests.per.connection: Value must be at least 1"),
    ("enable.idempotence", "maybe", "Invalid value maybe for configuration enable.idempotence: Expected value to "
                                    "be either true or false"),
])
def test_bad_config_values_are_rejected_with_javas_text_naming_the_key(key, value, message):
    with pytest.raises(ConfigError) as caught:
        KafkaProducer({"bootstrap.servers": "127.0.0.1:9", key: value})
    assert str(caught.value) == message


@pytest.mark.parametrize("key", ["acks", "batch.size", "linger.ms", "retries", "compression.type", "max.block.ms"])
def test_none_is_not_a_value_for_keys_with_a_default(key):
    with pytest.raises(ConfigError, match=f"Invalid value null for configuration {key}: Value must be non-null"):
        KafkaProducer({"bootstrap.servers": "127.0.0.1:9", key: None})


def test_missing_bootstrap_servers_and_impossible_timeouts_are_config_errors():
    with pytest.raises(ConfigError, match="No resolvable bootstrap urls given in bootstrap.servers"):
        KafkaProducer({})
    with pytest.raises(ConfigError, match="delivery.timeout.ms should be equal to or larger than linger.ms "
                                          r"\+ request.timeout.ms"):
        KafkaProducer({"bootstrap.servers": "127.0.0.1:9", "delivery.timeout.ms": 1000, "linger.ms": 500,
                       "request.timeout.ms": 800})


def test_idempotence_needs_acks_all_retries_and_at_most_five_in_flight():
    with pytest.raises(ConfigError, match="Must set acks to all in order to use the idempotent producer"):
        KafkaProducer({"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": "true", "acks": "1"})
    with pytest.raises(ConfigError, match="Must set retries to non-zero"):
        KafkaProducer({"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": "true", "retries": 0})
    with pytest.raises(ConfigError, match="max.in.flight.requests.per.connection to at most 5"):
        KafkaProducer({"bootstrap.servers": "127.0.0.1:9", "enable.idempotence": "true",
                       "max.in.flight.requests.per.connection": 6})


def test_transactional_id_forces_idempotence_and_acks_all_as_java():
    config = producer_config({"bootstrap.servers": "127.0.0.1:9", "transactional.id": "tx"})
    assert config["enable.idempotence"] is True and config["acks"] == "-1"
    assert config["transaction.timeout.ms"] == 60000
    with pytest.raises(ConfigError, match="Cannot set a transactional.id without also enabling idempotence."):
        producer_config({"bootstrap.servers": "127.0.0.1:9", "transactional.id": "tx", "enable.idempotence": False})
    with pytest.raises(ConfigError, match="Must set acks to all in order to use the idempotent producer"):
        producer_config({"bootstrap.servers": "127.0.0.1:9", "transactional.id": "tx", "acks": "1"})


# -- serializers ----------------------------------------------------------------------------------------


def test_builtin_serializers_write_javas_byte_layouts():
    as_int = resolve_serializer("int", {}, False)
    assert as_int("t", 1) == b"\x00\x00\x00\x01"
    assert as_int("t", -2) == b"\xff\xff\xff\xfe"
    assert resolve_serializer("org.apache.kafka.common.serialization.IntegerSerializer", {}, True)("t", 258) \
        == b"\x00\x00\x01\x02"
    assert resolve_serializer("long", {}, False)("t", 1) == b"\x00" * 7 + b"\x01"
    assert resolve_serializer("str", {}, False)("t", "héllo") == "héllo".encode()
    assert resolve_serializer("str", {"value.serializer.encoding": "latin-1"}, False)("t", "é") == b"\xe9"
    assert json.loads(resolve_serializer("json", {}, False)("t", {"a": [1, 2]})) == {"a": [1, 2]}
    for name in ("int", "str", "json", "bytes", "double"):
        assert resolve_serializer(name, {}, False)("t", None) is None


def test_serializers_reject_values_of_the_wrong_type():
    with pytest.raises(SerializationError):
        resolve_serializer("int", {}, False)("t", "1")
    with pytest.raises(SerializationError):
        resolve_serializer("int", {}, False)("t", 2**31)
    with pytest.raises(SerializationError):
        resolve_serializer("bytes", {}, False)("t", "text")


def test_user_serializers_may_be_callables_objects_or_configurable_classes():
    assert resolve_serializer(lambda v: v.upper().encode(), {}, False)("t", "abc") == b"ABC"

    class Tagged:
        def configure(self, configs, is_key):
            self.tag = configs["tag"] + (b"K" if is_key else b"V")

        def serialize(self, topic, data):
            return self.tag + topic.encode() + data
    assert resolve_serializer(Tagged, {"tag": b"#"}, True)("t", b"x") == b"#Ktx"


# -- sending against a fake broker -----------------------------------------------------------------------


def test_send_returns_metadata_and_calls_the_callback_once(cluster):
    c = cluster()
    calls = []
    with producer_for(c, key_serializer="str", value_serializer="json") as producer:
        first = producer.send("t", {"n": 1}, key="a", timestamp=1234, callback=lambda md, e: calls.append((md, e)))
        second = producer.send(ProducerRecord("t", {"n": 2}, key=None))
        md = first.get(10)
        assert (md.topic, md.partition, md.offset, md.timestamp) == ("t", 0, 0, 1234)
        assert md.serialized_key_size == 1 and md.serialized_value_size == len(b'{"n":1}')
        assert second.get(10).offset == 1 and second.get().serialized_key_size == -1
    assert calls == [(md, None)]
    assert [json.loads(v) for v in c.values()] == [{"n": 1}, {"n": 2}]
    assert c.logs[("t", 0)][0].key == b"a" and c.logs[("t", 0)][1].key is None


def test_not_leader_is_retried_after_a_metadata_refresh(cluster):
    c = cluster()
    c.script = [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_LEADER_OR_FOLLOWER]
    with producer_for(c) as producer:
        producer.send("t", b"warm").get(10)
        before = len(c.broker.requests(METADATA))
        c.script = [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_LEADER_OR_FOLLOWER]
        assert producer.send("t", b"moved").get(10).offset == 1
        assert len(c.broker.requests(METADATA)) > before
    assert c.values() == [b"warm", b"moved"]


def test_a_request_timed_out_answer_refreshes_metadata_to_find_a_new_leader(cluster):
    """A leader cut off from its followers (and from ZooKeeper) answers acks=all produces with
    REQUEST_TIMED_OUT while still believing it leads: the producer asks for fresh metadata
    then (past Java 2.8), so the next batches go to the leader the rest of the cluster chose."""
    c = cluster()
    with producer_for(c, retries=0) as producer:
        producer.send("t", b"warm").get(10)
        before = len(c.broker.requests(METADATA))
        c.script = [ErrorCode.REQUEST_TIMED_OUT]
        with pytest.raises(KafkaTimeoutError, match="The request timed out"):     # the broker's answer
            producer.send("t", b"stalled").get(10)
        wait_until(lambda: len(c.broker.requests(METADATA)) > before, what="a metadata refresh")
        assert producer.send("t", b"after").get(10).offset == 1
    assert c.values() == [b"warm", b"after"]


def test_retriable_errors_fail_the_record_once_retries_run_out(cluster):
    c = cluster()
    c.script = [ErrorCode.NOT_ENOUGH_REPLICAS] * 3
    errors = []
    with producer_for(c, retries=2) as producer:
        future = producer.send("t", b"v", callback=lambda md, e: errors.append((md, e)))
        with pytest.raises(BrokerResponseError) as caught:
            future.get(10)
    assert caught.value.code == ErrorCode.NOT_ENOUGH_REPLICAS and caught.value.retriable
    assert errors == [(None, caught.value)]
    assert len(c.broker.requests(PRODUCE)) == 3 and c.values() == []


def test_non_retriable_errors_fail_at_once(cluster):
    c = cluster()
    c.script = [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    with producer_for(c) as producer:
        with pytest.raises(TopicAuthorizationError):
            producer.send("t", b"v").get(10)
    assert len(c.broker.requests(PRODUCE)) == 1


def test_a_connection_lost_mid_request_is_retried_on_a_new_connection(cluster):
    c = cluster()
    with producer_for(c) as producer:
        producer.send("t", b"one").get(10)
        c.script = ["hangup"]
        assert producer.send("t", b"two").get(10).offset == 1
    assert c.values() == [b"one", b"two"]
    assert len(c.broker.connections) >= 3  # bootstrap, leader, and the leader again


def test_unanswered_requests_time_out_and_the_record_expires(cluster):
    c = cluster()
    c.script = ["silent"] * 100
    with producer_for(c, request_timeout_ms=100, delivery_timeout_ms=300, linger_ms=0) as producer:
        # Whichever Java would report first: the batch's expiry, or its last request's time-out.
        with pytest.raises(KafkaTimeoutError, match=r"Expiring 1 record\(s\) for t-0:\d+ ms has passed since "
                                                    r"batch creation|Disconnected from node 0 due to timeout"):
            producer.send("t", b"v").get(30)


def test_message_too_large_splits_the_batch_and_delivers_every_record_in_order(cluster):
    # Order survives retries only with one request in flight per connection, as in Java.
    c = cluster()

    def too_large_if_big(body):
        size = sum(len(p.records) for t in body.topic_data for p in t.partition_data)
        return ErrorCode.MESSAGE_TOO_LARGE if size > 2000 else ErrorCode.NONE
    c.script = [too_large_if_big] * 50
    with producer_for(c, linger_ms=200, batch_size=16384, max_in_flight_requests_per_connection=1) as producer:
        futures = [producer.send("t", bytes([65 + i % 26]) * 200) for i in range(40)]
        producer.flush()
        offsets = [f.get(10).offset for f in futures]
    assert offsets == list(range(40))
    assert c.values() == [bytes([65 + i % 26]) * 200 for i in range(40)]


def test_a_single_record_over_the_brokers_limit_fails_as_record_too_large(cluster):
    c = cluster()
    c.script = [ErrorCode.MESSAGE_TOO_LARGE]
    with producer_for(c) as producer:
        with pytest.raises(RecordTooLargeError):
            producer.send("t", b"x" * 100).get(10)


def test_acks_zero_completes_without_offsets(cluster):
    c = cluster()
    with producer_for(c, acks=0) as producer:
        md = producer.send("t", b"fire").get(10)
        assert md.offset == -1 and md.partition == 0
        producer.flush()
    # acks=0 answers nothing: the send completes once written, and the fake broker's
    # thread reads the request on its own time.
    assert wait_until(lambda: c.acks_seen, 10, "the produce request at the broker")[-1] == 0


def test_acks_all_is_sent_as_minus_one(cluster):
    c = cluster()
    with producer_for(c, acks="all") as producer:
        producer.send("t", b"v").get(10)
    assert c.acks_seen == [-1]


def test_a_record_over_max_request_size_is_refused_before_sending(cluster):
    c = cluster()
    with producer_for(c, max_request_size=1000) as producer:
        with pytest.raises(RecordTooLargeError, match="The message is 1097 bytes when serialized which is larger "
                                                      "than 1000, which is the value of the max.request.size "
                                                      "configuration."):
            producer.send("t", b"x" * 1000)
    assert c.broker.requests(PRODUCE) == []


def test_an_unknown_topic_times_out_after_max_block_ms(cluster):
    c = cluster()
    with producer_for(c, max_block_ms=200) as producer:
        with pytest.raises(KafkaTimeoutError, match="Topic nowhere not present in metadata after 200 ms."):
            producer.send("nowhere", b"v")
        with pytest.raises(KafkaTimeoutError, match="Partition 5 of topic t with partition count 1 is not present "
                                                    "in metadata after 200 ms."):
            producer.send("t", b"v", partition=5)


def test_a_dead_bootstrap_server_makes_send_time_out():
    producer = KafkaProducer({"bootstrap.servers": f"127.0.0.1:{dead_port()}", "max.block.ms": 150,
                              "reconnect.backoff.ms": 10})
    try:
        with pytest.raises(KafkaTimeoutError, match="not present in metadata after 150 ms"):
            producer.send("t", b"v")
    finally:
        producer.close(0)


def test_send_blocks_on_full_buffer_memory_then_raises(cluster):
    c = cluster()
    c.script = ["silent"] * 100
    with producer_for(c, buffer_memory=20000, batch_size=16384, max_block_ms=100, request_timeout_ms=60000,
                      linger_ms=0) as producer:
        producer.send("t", b"x" * 100)
        with pytest.raises(KafkaTimeoutError, match="Failed to allocate memory within the configured max blocking "
                                                    "time 100 ms."):
            for _ in range(1000):
                producer.send("t", b"y" * 5000, partition=0)
        producer.close(0)


def test_keyed_records_go_where_murmur2_puts_them_and_explicit_partitions_win(cluster):
    from kafkalike.client.partitioner import keyed_partition
    c = cluster(topics={"t": 4})
    with producer_for(c) as producer:
        for i in range(20):
            key = f"user-{i}".encode()
            assert producer.send("t", b"v", key=key).get(10).partition == keyed_partition(key, 4)
        assert producer.send("t", b"v", key=b"user-0", partition=3).get(10).partition == 3


def test_interceptors_can_rewrite_records_and_see_every_acknowledgement(cluster):
    c = cluster()
    seen = []

    class Stamp:
        def on_send(self, record):
            record.headers = [("stamped", b"yes")]
            return record

        def on_acknowledgement(self, metadata, exception):
            seen.append((metadata.topic, metadata.offset, exception))

        def close(self):
            seen.append("closed")
    with producer_for(c, interceptor_classes=[Stamp]) as producer:
        producer.send("t", b"v").get(10)
        c.script = [ErrorCode.INVALID_REQUIRED_ACKS]
        with pytest.raises(BrokerResponseError):
            producer.send("t", b"w").get(10)
    assert c.logs[("t", 0)][0].headers == [("stamped", b"yes")]
    assert seen[0] == ("t", 0, None)
    assert seen[1][0] == "t" and isinstance(seen[1][2], BrokerResponseError)
    assert seen[2] == "closed"


def test_close_zero_fails_what_is_queued_and_send_after_close_is_refused(cluster):
    c = cluster()
    c.script = ["silent"] * 10
    producer = producer_for(c, linger_ms=60000, request_timeout_ms=60000, delivery_timeout_ms=120000)
    future = producer.send("t", b"queued")
    producer.close(0)
    with pytest.raises(KafkaError, match="Producer is closed forcefully."):
        future.get(10)
    with pytest.raises(IllegalStateError, match="Cannot perform operation after producer has been closed"):
        producer.send("t", b"late")


def test_flush_sends_lingering_records_and_close_waits_for_them(cluster):
    c = cluster()
    producer = producer_for(c, linger_ms=60000)
    futures = [producer.send("t", b"%d" % i) for i in range(5)]
    producer.flush()
    assert all(f.done() for f in futures)
    later = producer.send("t", b"last")
    producer.close()
    assert later.get(0).offset == 5
    assert c.values() == [b"0", b"1", b"2", b"3", b"4", b"last"]


def test_callbacks_that_raise_do_not_stop_delivery(cluster):
    c = cluster()
    with producer_for(c) as producer:
        producer.send("t", b"a", callback=lambda md, e: 1 / 0)
        assert producer.send("t", b"b").get(10).offset == 1


def test_what_send_cannot_use_is_refused_in_send_not_on_the_sender_thread(cluster):
    c = cluster()
    def careless(value):  # hands back str as is, and fails on dicts
        if isinstance(value, dict):
            raise KeyError("boom")
        return value
    with producer_for(c, value_serializer=careless) as producer:
        with pytest.raises(SerializationError, match="value.serializer returned str"):
            producer.send("t", "not bytes")
        with pytest.raises(SerializationError, match="Can't convert value of class dict .* value.serializer"):
            producer.send("t", {"a": 1})
        with pytest.raises(ValueError, match="Invalid timestamp: -5"):
            producer.send("t", b"v", timestamp=-5)
        with pytest.raises(TypeError, match="timestamp must be an int"):
            producer.send("t", b"v", timestamp=1.5)
        with pytest.raises(SerializationError, match="header must be a"):
            producer.send("t", b"v", headers=[("a", b"1", b"2")])
        assert producer.send("t", b"fine").get(10).offset == 0  # nothing was stranded


def test_flush_inside_a_callback_is_refused_instead_of_deadlocking(cluster):
    c = cluster()
    errors = []
    with producer_for(c) as producer:
        def callback(metadata, error):
            try:
                producer.flush()
            except IllegalStateError as refused:
                errors.append(refused)
        producer.send("t", b"v", callback=callback).get(10)
        producer.flush(10)
    assert len(errors) == 1 and "inside a callback is not permitted" in str(errors[0])


def test_records_on_the_fast_path_keep_order_callbacks_and_metadata(cluster):
    """Plain bytes records appended to an open batch (send()'s fast path) land in order,
    each callback fires once with its own offset and sizes, and a keyed record between
    them still goes where murmur2 puts it."""
    c = cluster(topics={"t": 1})
    seen = []
    with producer_for(c, linger_ms=50) as producer:
        futures = [producer.send("t", b"v%d" % i, key=None if i % 3 else b"k%d" % i,
                                 callback=lambda md, e, i=i: seen.append((i, md.offset, md.serialized_key_size, e)))
                   for i in range(200)]
        producer.flush(10)
        assert [f.get(0).offset for f in futures] == list(range(200))
    assert sorted(seen) == [(i, i, -1 if i % 3 else len(b"k%d" % i), None) for i in range(200)]
    assert c.values() == [b"v%d" % i for i in range(200)]


def test_a_traced_producer_reports_every_step_even_for_plain_records(cluster):
    """kafkalike-trace wraps serializers, partitioner and append; while it is attached, send()
    must not take the fast path around them, and once detached the fast path is back."""
    c = cluster()
    steps = []

    class Tracer:
        def step(self, name, **info):
            steps.append(name)

        def request_sent(self, *args):
            pass

        def response_received(self, *args):
            pass
    with producer_for(c, linger_ms=50) as producer:
        producer.send("t", b"first").get(10)
        producer._trace_with(Tracer())
        assert not producer._plain
        producer.send("t", b"a")
        producer.send("t", b"b").get(10)
        producer._trace_with(None)
        assert producer._plain
        producer.send("t", b"c").get(10)
    # (the sticky partitioner may be asked twice when a record needs a new batch)
    assert steps.count("serializer") == steps.count("accumulator") == 2 and steps.count("partitioner") >= 2
