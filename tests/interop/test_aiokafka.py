"""aiokafka (0.14, asyncio) against one broker: producer at every acks and codec,
consumer in assign mode (seek, offsets by time, a long poll that a produce wakes up),
and topic auto-creation as Kafka ships it (auto.create.topics.enable=true).
"""
from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.interop.samples import CODEC_IDS, CODECS, batches_on_disk, binary_samples, stored_codecs

pytestmark = pytest.mark.interop

PER_ACKS = 1000
BASE_TS = 1_650_000_000_000


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(name, partitions, 1)])
        assert [t[1] for t in response.topic_errors] == [0]
    finally:
        await admin.close()


async def read(consumer: AIOKafkaConsumer, count: int, timeout: float = 20.0) -> list:
    """getmany until `count` records; then one more short poll must bring nothing."""
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        assert time.monotonic() < deadline, f"only {len(out)} of {count} records"
        for records in (await consumer.getmany(timeout_ms=200)).values():
            out.extend(records)
    assert await consumer.getmany(timeout_ms=200) == {}
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_every_acks_setting_delivers_records_intact(broker, topic_name, codec):
    async def scenario():
        await create_topic(broker.bootstrap, topic_name, 2)
        sent = []
        for n, acks in enumerate([0, 1, "all"]):
            samples = binary_samples(PER_ACKS, seed=40 + 10 * n + CODECS.index(codec),
                                     base_timestamp=BASE_TS + n * 1_000_000, tag=str(acks).encode())
            producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks=acks, linger_ms=10,
                                        compression_type=None if codec == "none" else codec)
            await producer.start()
            try:
                futures = [await producer.send(topic_name, key=s.key, value=s.value, headers=s.headers,
                                               timestamp_ms=s.timestamp) for s in samples]
                reports = await asyncio.gather(*futures)
            finally:
                await producer.stop()
            # acks=0 gets no answer, so there are no offsets to compare.
            sent += [(s, None if acks == 0 else (r.partition, r.offset)) for s, r in zip(samples, reports)]

        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tps = [TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            records = await read(consumer, len(sent))
        finally:
            await consumer.stop()
        return sent, records

    sent, records = asyncio.run(scenario())
    by_key = {r.key: r for r in records}
    assert len(records) == len(by_key) == len(sent)
    for s, report in sent:
        r = by_key[s.key]
        assert (r.value, list(r.headers), r.timestamp, r.timestamp_type) == (s.value, s.headers, s.timestamp, 0)
        if report is not None:
            assert (r.partition, r.offset) == report
    assert stored_codecs(broker.log_dir, topic_name) == {CODEC_IDS[codec]}


def test_seek_into_a_compressed_batch_and_find_offsets_by_time(broker, topic_name):
    """Seeking to an offset inside a compressed batch: the broker hands out the whole
    batch and the client drops the records before the offset it asked for."""
    samples = binary_samples(500, seed=8, base_timestamp=BASE_TS)

    async def scenario():
        await create_topic(broker.bootstrap, topic_name, 1)
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=50,
                                    compression_type="gzip")
        await producer.start()
        try:
            futures = [await producer.send(topic_name, key=s.key, value=s.value, timestamp_ms=s.timestamp)
                       for s in samples]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

        tp = TopicPartition(topic_name, 0)
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([tp])
            assert await consumer.beginning_offsets([tp]) == {tp: 0}
            assert await consumer.end_offsets([tp]) == {tp: 500}
            found = (await consumer.offsets_for_times({tp: BASE_TS + 333}))[tp]
            consumer.seek(tp, 333)
            tail = await read(consumer, 167)
            return found, tail
        finally:
            await consumer.stop()

    found, tail = asyncio.run(scenario())
    assert (found.offset, found.timestamp) == (333, BASE_TS + 333)
    assert [(r.offset, r.key, r.value) for r in tail] == [(333 + i, s.key, s.value) for i, s in enumerate(samples[333:])]
    # The case under test really happened: 333 sits inside a stored gzip batch.
    assert any(b.base_offset < 333 <= b.last_offset and b.compression_type == CODEC_IDS["gzip"]
               for b in batches_on_disk(broker.log_dir, topic_name))


def test_long_poll_wakes_up_when_a_record_arrives(broker, topic_name):
    """A consumer waiting at the end gets a new record as soon as it is written, not
    after its fetch wait runs out (the broker parks the fetch and completes it)."""
    async def scenario():
        # The producer creates the topic (auto-creation, num.partitions=1).
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks=1)
        await producer.start()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                                    fetch_max_wait_ms=10_000)
        try:
            first = await producer.send_and_wait(topic_name, b"first")
            assert (first.partition, first.offset) == (0, 0)
            await consumer.start()
            tp = TopicPartition(topic_name, 0)
            consumer.assign([tp])
            await consumer.seek_to_end(tp)
            assert await consumer.position(tp) == 1
            waiting = asyncio.ensure_future(consumer.getone())
            await asyncio.sleep(0.5)          # the consumer's fetch is parked at the broker now
            assert not waiting.done()
            await producer.send_and_wait(topic_name, b"second")
            # Well inside the 10 s fetch wait: only a parked fetch that the produce
            # completed can answer this soon.
            return await asyncio.wait_for(waiting, 8)
        finally:
            await consumer.stop()
            await producer.stop()

    record = asyncio.run(scenario())
    assert (record.offset, record.value) == (1, b"second")
