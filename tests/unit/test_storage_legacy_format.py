"""A topic whose message.format.version predates 0.11 stores magic 0/1 entries, as Kafka 2.8's log does.

The leader converts each validated append to the topic's magic with the offsets it
assigns (Kafka's LogValidator), the follower appends the leader's entries as they are,
and every reader of the log (scans, recovery, indexes, truncation, timestamp lookups,
producer state, the leader-epoch cache) works on them.
"""
from __future__ import annotations

import dataclasses
import os
import zlib

import pytest

from kafkalike.records import GZIP, LZ4, NONE, SNAPPY, Record, RecordBatch, decode_batches, encode_batch
from kafkalike.records.legacy import LegacyBatch, check_legacy_entry, encode_legacy_records
from kafkalike.records.message_format import ProduceRules, from_producer, to_log_format
from kafkalike.records.header import InvalidRecordError
from kafkalike.storage.config import LogConfig
from kafkalike.storage.errors import CorruptRecordError, OffsetsOutOfOrderError
from kafkalike.storage.log import Log

TS = 1_650_000_000_000
FORMATS = {1: "0.10.2", 0: "0.9.0"}


def config(magic: int, **kw) -> LogConfig:
    return dataclasses.replace(LogConfig(), message_format_version=FORMATS[magic], **kw)


def produced(magic: int, keys, codec=NONE, ts0=TS) -> bytes:
    """What the produce path hands the log: the client's batch checked and rewritten as v2."""
    batch = encode_batch([(b"k%d" % i, b"v%d" % i, None, ts0 + i) for i in keys], compression=codec)
    return from_producer(batch, ProduceRules(log_magic=magic), ts0)


def entries(raw: bytes) -> list:
    return list(decode_batches(raw))


def records(raw: bytes) -> list[tuple[int, int, bytes, bytes]]:
    return [(r.offset, r.timestamp, r.key, r.value) for b in entries(raw) for r in b.records()]


def assigned(keys, base: int, codec=NONE, lat=False) -> bytes:
    """A v2 batch with its offsets assigned, as Log.append holds it before converting."""
    buf = bytearray(encode_batch([(b"k%d" % i, b"v%d" % i, None, TS + i) for i in keys], compression=codec))
    buf[0:8] = base.to_bytes(8, "big")
    return bytes(buf)


# ------------------------------------------------------------------- conversion

def test_uncompressed_batch_becomes_one_message_per_record():
    out = to_log_format(assigned(range(3), 10), 1)
    got = entries(out.data)
    assert [(type(b), b.magic, b.last_offset, b.compression) for b in got] == [(LegacyBatch, 1, 10 + i, NONE)
                                                                                for i in range(3)]
    assert records(out.data) == [(10 + i, TS + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    assert (out.max_timestamp, out.offset_of_max_timestamp) == (TS + 2, 12)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_compressed_magic1_wrapper_holds_last_offset_and_relative_inner_offsets(codec):
    out = to_log_format(assigned(range(4), 20, codec), 1)
    (wrapper,) = entries(out.data)
    assert (wrapper.magic, wrapper.last_offset, wrapper.compression, wrapper.max_timestamp) == (1, 23, codec, TS + 3)
    inner = codec_inner(wrapper, codec, magic=1)
    assert [m[0] for m in inner] == [0, 1, 2, 3]          # relative, as Kafka's builder writes them
    assert records(out.data) == [(20 + i, TS + i, b"k%d" % i, b"v%d" % i) for i in range(4)]
    assert (out.max_timestamp, out.offset_of_max_timestamp) == (TS + 3, 23)


def test_compressed_magic0_inner_offsets_are_absolute_and_no_timestamps():
    out = to_log_format(assigned(range(3), 7, GZIP), 0)
    (wrapper,) = entries(out.data)
    assert (wrapper.magic, wrapper.last_offset, wrapper.timestamp_type) == (0, 9, -1)
    assert [m[0] for m in codec_inner(wrapper, GZIP, magic=0)] == [7, 8, 9]
    assert records(out.data) == [(7 + i, -1, b"k%d" % i, b"v%d" % i) for i in range(3)]
    assert out.max_timestamp == -1


@pytest.mark.parametrize("codec", [NONE, GZIP])
def test_log_append_time_stamps_magic1_messages_and_wrapper(codec):
    now = TS + 999
    out = to_log_format(assigned(range(2), 0, codec), 1, now)
    for batch in entries(out.data):
        assert batch.timestamp_type == 1 and batch.max_timestamp == now
    assert [ts for _, ts, _, _ in records(out.data)] == [now, now]
    # Kafka's builder: an uncompressed LogAppendTime append names its first offset, a compressed one its last.
    assert (out.max_timestamp, out.offset_of_max_timestamp) == (now, 0 if codec == NONE else 1)


def codec_inner(wrapper, codec, *, magic):
    """(offset, size) of the messages inside a wrapper, straight from the decompressed bytes."""
    from kafkalike.records import compression
    data = compression.decompress(codec, wrapper._msg.value, kafka_v0_lz4=magic == 0)
    out, pos = [], 0
    while pos < len(data):
        offset = int.from_bytes(data[pos:pos + 8], "big")
        size = int.from_bytes(data[pos + 8:pos + 12], "big")
        out.append((offset, size))
        pos += 12 + size
    return out


def test_check_legacy_entry_checks_crc_size_and_magic():
    raw = bytearray(encode_legacy_records([Record(5, TS, b"k", b"v")], magic=1))
    entry = check_legacy_entry(raw)
    assert (entry.offset, entry.size, entry.magic, entry.timestamp) == (5, len(raw), 1, TS)
    raw[-1] ^= 1
    with pytest.raises(InvalidRecordError, match="corrupt"):
        check_legacy_entry(raw)
    with pytest.raises(InvalidRecordError, match="truncated"):
        check_legacy_entry(bytes(raw[:-3]))


# ------------------------------------------------------------------- the log

@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [NONE, GZIP])
def test_leader_appends_store_the_topics_magic(tmp_path, magic, codec):
    log = Log(str(tmp_path / "t-0"), config(magic, index_interval_bytes=64))
    for n in range(6):
        info = log.append(produced(magic, range(3 * n, 3 * n + 3), codec), leader_epoch=4)
        assert (info.first_offset, info.last_offset) == (3 * n, 3 * n + 2)
    assert log.log_end_offset == 18
    raw = log.read(0, 1 << 20)
    stored = entries(raw)
    assert {(type(b), b.magic) for b in stored} == {(LegacyBatch, magic)}
    assert len(stored) == (18 if codec == NONE else 6)
    ts = (lambda i: TS + i) if magic else (lambda i: -1)
    assert records(raw) == [(i, ts(i), b"k%d" % i, b"v%d" % i) for i in range(18)]
    # Reads from the middle start at the entry holding the offset (the index found it).
    assert log.segments[0].offset_index.entries > 0
    first = entries(log.read(10, 1))[0]
    assert first.records()[0].offset <= 10 <= first.last_offset
    # No leader epochs for such a log: nothing assigned, no checkpoint file (Kafka deletes it).
    log.assign_leader_epoch(5, 18)
    assert log.leader_epoch_cache.entries() == [] and log.end_offset_for_epoch(4) == (-1, -1)
    assert not os.path.exists(tmp_path / "t-0" / "leader-epoch-checkpoint")
    log.close()


def test_follower_appends_the_leaders_entries_as_they_are(tmp_path):
    leader = Log(str(tmp_path / "t-0"), config(1))
    for n in range(4):
        leader.append(produced(1, range(2 * n, 2 * n + 2), GZIP if n % 2 else NONE), leader_epoch=1)
    data = leader.read(0, 1 << 20)
    follower = Log(str(tmp_path / "f" / "t-0"), config(1))
    info = follower.append_as_follower(data[:-5])          # a fetch cut inside the last entry
    assert info.last_offset == 5 and follower.log_end_offset == 6
    follower.append_as_follower(data[follower.size:])
    assert follower.log_end_offset == 8 and follower.read(0, 1 << 20) == data
    with pytest.raises(OffsetsOutOfOrderError):
        Log(str(tmp_path / "g" / "t-0"), config(1)).append_as_follower(data[follower.size // 2:] + data)
    bad = bytearray(data)
    bad[30] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        Log(str(tmp_path / "h" / "t-0"), config(1)).append_as_follower(bytes(bad))


@pytest.mark.parametrize("magic", [0, 1])
def test_recovery_truncates_a_torn_or_corrupt_legacy_tail_and_rebuilds_indexes(tmp_path, magic):
    path = str(tmp_path / "t-0")
    log = Log(path, config(magic, index_interval_bytes=64))
    for n in range(8):
        log.append(produced(magic, range(4 * n, 4 * n + 4), GZIP if n % 2 else NONE))
    whole = log.read(0, 1 << 20)
    log.close()
    segment = os.path.join(path, "00000000000000000000.log")
    for index in ("00000000000000000000.index", "00000000000000000000.timeindex"):
        os.unlink(os.path.join(path, index))
    with open(segment, "ab") as f:
        f.write(whole[:40])                                  # a torn message after the last whole one
    log = Log(path, config(magic, index_interval_bytes=64), had_clean_shutdown=False)
    assert log.log_end_offset == 32 and log.recovery_stats.truncated_bytes == 40
    assert log.segments[0].offset_index.entries > 3                 # rebuilt, one per 64 bytes of entries
    assert records(log.read(0, 1 << 20)) == records(whole)
    assert records(log.read(21, 1))[0][0] <= 21
    log.close()
    # A bad CRC in the last entry cuts it too (CRC-32 of magic 0/1).
    with open(segment, "r+b") as f:
        last = entries(whole)[-1]
        f.seek(last.position + last.size - 1)
        f.write(bytes([whole[last.position + last.size - 1] ^ 0xFF]))
    log = Log(path, config(magic, index_interval_bytes=64), had_clean_shutdown=False)
    assert log.log_end_offset == 28 and "crc" in log.recovery_stats.reasons[0]
    log.close()


def test_clean_restart_checks_the_active_tail_of_legacy_entries(tmp_path):
    path = str(tmp_path / "t-0")
    log = Log(path, config(1))
    log.append(produced(1, range(3)))
    log.close()
    with open(os.path.join(path, "00000000000000000000.log"), "ab") as f:
        f.write(b"\x00" * 7 + b"\x03" + b"\x00\x00\x00\x40" + b"\x01" * 20)
    log = Log(path, config(1), had_clean_shutdown=True)
    assert log.log_end_offset == 3 and log.size == sum(b.size for b in entries(log.read(0, 1 << 20)))
    log.close()


def test_timestamp_lookup_finds_the_record_inside_a_wrapper(tmp_path):
    log = Log(str(tmp_path / "t-0"), config(1))
    log.append(produced(1, range(5), GZIP))
    log.append(produced(1, range(5, 10)))
    found = log.fetch_offset_by_timestamp(TS + 2)
    assert (found.offset, found.timestamp, found.leader_epoch) == (2, TS + 2, None)
    assert log.fetch_offset_by_timestamp(TS + 7).offset == 7
    assert log.fetch_offset_by_timestamp(TS + 100) is None
    log.close()


def test_truncation_log_start_and_retention_on_legacy_entries(tmp_path):
    log = Log(str(tmp_path / "t-0"), config(1, segment_bytes=400, retention_bytes=500, retention_ms=-1))
    for n in range(10):
        log.append(produced(1, range(3 * n, 3 * n + 3), GZIP))
    assert len(log.segments) > 2
    log.truncate_to(25)                                      # the wrapper holding 24-26 goes whole
    assert log.log_end_offset == 24
    log.update_high_watermark(24)
    log.maybe_increment_log_start_offset(7)                  # DeleteRecords
    assert records(log.read(7, 1 << 20))[0][0] == 6          # the entry holding 7 comes whole
    log.delete_old_segments()
    assert log.size < 937 - 300 and log.log_start_offset == log.segments[0].base_offset > 7
    assert records(log.read(log.log_start_offset, 1 << 20))[0][0] <= log.log_start_offset
    assert records(log.read(23, 1 << 20))[-1][0] == 23
    log.close()


def test_format_changes_keep_both_kinds_readable(tmp_path):
    path = str(tmp_path / "t-0")
    log = Log(path, LogConfig())
    log.append(encode_batch([(b"a", b"1", None, TS)], producer_id=7, producer_epoch=0, base_sequence=0),
               leader_epoch=2)
    assert log.leader_epoch_cache.entries()
    log.update_config(config(1))                             # lowered: no epochs from here on
    assert log.leader_epoch_cache.entries() == []
    log.append(produced(1, range(1, 3)))
    log.update_config(LogConfig())                           # raised again: epochs from now
    log.append(encode_batch([(b"b", b"2", None, TS)]), leader_epoch=3)
    assert [e.epoch for e in log.leader_epoch_cache.entries()] == [3]
    raw = log.read(0, 1 << 20)
    assert [type(b) for b in entries(raw)] == [RecordBatch, LegacyBatch, LegacyBatch, RecordBatch]
    log.close()
    # A clock near the batches' timestamps: producer 7 must not have expired
    # (transactional.id.expiration.ms) when the log reloads it.
    log = Log(path, LogConfig(), had_clean_shutdown=False, clock=lambda: TS)
    assert log.log_end_offset == 4 and log.read(0, 1 << 20) == raw
    assert 7 in log.producer_state.producers                  # replayed past the legacy entries
    log.close()


def test_converted_entries_over_max_message_bytes_are_refused(tmp_path):
    from kafkalike.storage.errors import RecordTooLargeError
    log = Log(str(tmp_path / "t-0"), config(1, max_message_bytes=90))
    small = produced(1, range(1))
    assert len(small) <= 90
    with pytest.raises(RecordTooLargeError):
        log.append(from_producer(encode_batch([(b"k" * 30, b"v" * 30, None, TS)]), ProduceRules(log_magic=1), TS))
    assert log.append(small).last_offset == 0
    log.close()


def test_crc_of_a_stored_message_is_kafkas_crc32(tmp_path):
    log = Log(str(tmp_path / "t-0"), config(0))
    log.append(produced(0, range(1)))
    raw = log.read(0, 100)
    assert int.from_bytes(raw[12:16], "big") == zlib.crc32(raw[16:])
    log.close()


@pytest.mark.parametrize("magic", [0, 1])
def test_cleaner_compacts_legacy_entries_keeping_offsets_magic_and_codec(tmp_path, magic):
    from kafkalike.storage.cleaner import LogCleaner
    now = TS + 10_000
    cfg = config(magic, cleanup_policy=["compact"], segment_bytes=300, min_cleanable_dirty_ratio=0.0,
                 file_delete_delay_ms=0, index_interval_bytes=64)
    log = Log(str(tmp_path / "t-0"), cfg, clock=lambda: now)
    history = []
    for n in range(12):
        codec = GZIP if n % 3 == 0 else NONE
        pairs = [(b"key%d" % ((3 * n + i) % 4), b"value%d" % (3 * n + i)) for i in range(3)]
        batch = encode_batch([(k, v, None, TS + 3 * n + i) for i, (k, v) in enumerate(pairs)], compression=codec)
        info = log.append(from_producer(batch, ProduceRules(log_magic=magic), now))
        history += [(info.first_offset + i, k, v) for i, (k, v) in enumerate(pairs)]
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    result = LogCleaner([log], clock=lambda: now).clean_once()
    assert result is not None
    raw = b"".join(s.read_bytes(0, s.size) for s in log.segments)
    stored = entries(raw)
    assert {(type(b), b.magic) for b in stored} == {(LegacyBatch, magic)}
    assert {b.compression for b in stored} == {NONE, GZIP}
    got = [(r.offset, r.key, r.value) for b in stored for r in b.records()]
    latest = {}
    for offset, key, value in history:
        latest[key] = (offset, key, value)
    assert sorted(latest.values()) == [g for g in got if g[1] in latest and latest[g[1]][0] == g[0]]
    assert len(got) < len(history) and [o for o, *_ in got] == sorted(o for o, *_ in got)
    assert log.log_end_offset == 36
    log.close()
    reopened = Log(str(tmp_path / "t-0"), cfg, clock=lambda: now, had_clean_shutdown=False)
    assert reopened.log_end_offset == 36 and reopened.recovery_stats.truncated_bytes == 0
    reopened.close()


def test_a_follower_without_epochs_truncates_to_its_high_watermark(tmp_path):
    """Kafka's fetcher truncates a log that keeps no leader epochs to its high watermark before
    following a new leader: no epoch can tell where its unreplicated tail diverges."""
    from types import SimpleNamespace
    from kafkalike.broker.partition import Partition
    state = SimpleNamespace(leader=1, leader_epoch=5, zk_version=0, controller_epoch=1, replicas=[0, 1], isr=[0, 1])
    for fmt, truncated in (({"message_format_version": "0.10.2"}, True), ({}, False)):
        log = Log(str(tmp_path / fmt.get("message_format_version", "v2") / "t-0"),
                  dataclasses.replace(LogConfig(), **fmt))
        for n in range(3):
            log.append(produced(1, range(2 * n, 2 * n + 2)) if fmt else encode_batch([(b"k", b"v", None, TS)] * 2),
                       leader_epoch=4)
        log.update_high_watermark(4)
        assert Partition("t", 0, 0, log=log).make_follower(state)
        assert log.log_end_offset == (4 if truncated else 6)
        log.close()
