"""Kafka's produce/fetch/list-offsets semantics, checked over the wire on a real broker."""
from __future__ import annotations

import threading
import time

import pytest

from kafkalike.client.connection import BrokerConnection
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.create_topics import CreateTopicsRequest
from kafkalike.protocol.messages.fetch import FetchRequest
from kafkalike.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest
from kafkalike.protocol.messages.metadata import MetadataRequest
from kafkalike.protocol.messages.produce import ProduceRequest
from kafkalike.records.batch import encode_batch, iter_records
from kafkalike.records.compression import ZSTD

pytestmark = pytest.mark.integration


@pytest.fixture
def conn(broker):
    c = BrokerConnection("127.0.0.1", broker.port)
    c.connect()
    yield c
    c.close()


def create(conn, name, partitions=1, configs=None):
    resp = conn.send(CreateTopicsRequest(timeout_ms=10000, topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1,
        configs=[CreateTopicsRequest.CreateableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])]))
    assert resp.topics[0].error_code == 0, resp


def produce(conn, topic, records, partition=0, acks=1, version=None):
    batch = records if isinstance(records, (bytes, bytearray)) else encode_batch(records)
    resp = conn.send(ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)])]),
        version=version)
    return resp.responses[0].partition_responses[0]


def fetch(conn, topic, offset, *, max_wait=0, min_bytes=0, partition_max=1 << 20, max_bytes=1 << 24):
    resp = conn.send(FetchRequest(replica_id=-1, max_wait_ms=max_wait, min_bytes=min_bytes, max_bytes=max_bytes,
                                  topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                                      FetchRequest.FetchPartition(partition=0, fetch_offset=offset,
                                                                  partition_max_bytes=partition_max)])]))
    return resp.responses[0].partition_responses[0]


def list_offset(conn, topic, timestamp):
    resp = conn.send(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])]))
    p = resp.topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp


def test_offsets_are_assigned_by_the_leader_and_read_back(conn):
    create(conn, "sem-offsets")
    first = produce(conn, "sem-offsets", [(b"a", b"1"), (b"b", b"2")])
    second = produce(conn, "sem-offsets", [(None, b"3")])
    assert (first.error_code, first.base_offset, second.base_offset) == (0, 0, 2)
    got = fetch(conn, "sem-offsets", 0)
    assert got.high_watermark == 3
    assert [(r.offset, r.key, r.value) for r in iter_records(bytes(got.record_set))] == \
        [(0, b"a", b"1"), (1, b"b", b"2"), (2, None, b"3")]


def test_bad_crc_is_corrupt_message_and_nothing_is_stored(conn):
    create(conn, "sem-crc")
    batch = bytearray(encode_batch([(b"k", b"value")]))
    batch[-1] ^= 0xFF
    assert produce(conn, "sem-crc", batch).error_code == ErrorCode.CORRUPT_MESSAGE
    assert list_offset(conn, "sem-crc", -1)[1] == 0


def test_zstd_needs_produce_v7(conn):
    """A zstd batch on Produce v3-6 is refused and not stored (KIP-110); v7 takes it."""
    create(conn, "sem-zstd")
    batch = encode_batch([(b"k", b"zstd value" * 10)], compression=ZSTD)
    assert produce(conn, "sem-zstd", batch, version=6).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert list_offset(conn, "sem-zstd", -1)[1] == 0
    assert (produce(conn, "sem-zstd", batch, version=7).error_code, list_offset(conn, "sem-zstd", -1)[1]) == (0, 1)


def test_batch_over_max_message_bytes_is_message_too_large(conn):
    create(conn, "sem-large", configs={"max.message.bytes": "1000"})
    assert produce(conn, "sem-large", [(None, b"x" * 2000)]).error_code == ErrorCode.MESSAGE_TOO_LARGE


def test_unknown_topic_and_invalid_names(conn):
    assert produce(conn, "sem-nowhere", [(None, b"x")]).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    md = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="bad name!")],
                                   allow_auto_topic_creation=True))
    assert md.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    resp = conn.send(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
        name="x" * 250, num_partitions=1, replication_factor=1)]))
    assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_metadata_auto_creates_topics(conn):
    md = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="sem-auto")],
                                   allow_auto_topic_creation=True))
    assert md.topics[0].error_code in (0, ErrorCode.LEADER_NOT_AVAILABLE)
    deadline = time.time() + 10
    while time.time() < deadline:
        md = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="sem-auto")],
                                       allow_auto_topic_creation=False))
        if md.topics[0].error_code == 0 and md.topics[0].partitions[0].leader_id == 0:
            break
        time.sleep(0.1)
    assert md.topics[0].error_code == 0 and len(md.topics[0].partitions) == 1


def test_fetch_past_the_end_is_offset_out_of_range(conn):
    create(conn, "sem-range")
    produce(conn, "sem-range", [(None, b"x")])
    assert fetch(conn, "sem-range", 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert fetch(conn, "sem-range", 1).error_code == 0      # the log end itself is fine


def test_at_least_one_batch_even_past_the_limit(conn):
    create(conn, "sem-big")
    produce(conn, "sem-big", [(None, b"y" * 5000)])
    got = fetch(conn, "sem-big", 0, partition_max=10, max_bytes=10)
    assert [r.value for r in iter_records(bytes(got.record_set))] == [b"y" * 5000]


def test_fetch_long_polls_until_data_arrives(broker, conn):
    create(conn, "sem-poll")
    started = time.monotonic()
    empty = fetch(conn, "sem-poll", 0, max_wait=300, min_bytes=1)
    waited = time.monotonic() - started
    assert empty.record_set is None or len(empty.record_set) == 0
    assert waited >= 0.25                            # the broker held the request
    other = BrokerConnection("127.0.0.1", broker.port)
    other.connect()
    timer = threading.Timer(0.5, lambda: produce(other, "sem-poll", [(b"k", b"wake")]))
    timer.start()
    try:
        got = fetch(conn, "sem-poll", 0, max_wait=20000, min_bytes=1)
    finally:
        timer.join()
        other.close()
    assert [r.value for r in iter_records(bytes(got.record_set))] == [b"wake"]


def test_list_offsets_earliest_latest_and_by_time(conn):
    create(conn, "sem-times")
    for i, ts in enumerate([1000, 2000, 3000]):
        produce(conn, "sem-times", encode_batch([(None, b"v%d" % i, [], ts)]))
    assert list_offset(conn, "sem-times", -2)[:2] == (0, 0)
    assert list_offset(conn, "sem-times", -1)[:2] == (0, 3)
    assert list_offset(conn, "sem-times", 1500) == (0, 1, 2000)
    assert list_offset(conn, "sem-times", 3000) == (0, 2, 3000)
    assert list_offset(conn, "sem-times", 9999)[:2] == (0, -1)


def test_list_offsets_with_another_negative_timestamp_is_a_search_like_any_other(conn):
    # Kafka 2.8 treats -3, -5, ... as ordinary targets: every record's timestamp reaches
    # them, so the answer is the first record (on an empty log: none), never an error.
    create(conn, "sem-negative-times")
    assert list_offset(conn, "sem-negative-times", -5) == (0, -1, -1)
    produce(conn, "sem-negative-times", encode_batch([(None, b"a", [], 1000), (None, b"b", [], 2000)]))
    assert list_offset(conn, "sem-negative-times", -3) == (0, 0, 1000)
    assert list_offset(conn, "sem-negative-times", -123456789) == (0, 0, 1000)


def test_acks_all_answers_after_the_high_watermark_moves(conn):
    create(conn, "sem-acks")
    resp = produce(conn, "sem-acks", [(None, b"x")], acks=-1)
    assert resp.error_code == 0 and fetch(conn, "sem-acks", 0).high_watermark == 1


def test_topic_config_changes_apply_to_the_live_log(broker, conn):
    create(conn, "sem-live")
    resp = conn.send(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=2, resource_name="sem-live", configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name="segment.bytes", config_operation=0,
                                                           value="1024")])]))
    assert resp.responses[0].error_code == 0
    segments = lambda: sorted(p.name for p in (broker.log_dir / "sem-live-0").glob("*.log"))  # noqa: E731
    deadline = time.time() + 10
    while time.time() < deadline and len(segments()) < 3:
        produce(conn, "sem-live", [(None, b"z" * 700)])
        time.sleep(0.05)
    assert len(segments()) >= 3       # rolled at the new, tiny segment size
