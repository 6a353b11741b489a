"""Checkpoint files, the leader-epoch cache and meta.properties, in Kafka's exact text formats."""
from __future__ import annotations

import os

import pytest

from kafkalike.storage.checkpoints import (
    EpochEntry, LeaderEpochCheckpointFile, OffsetCheckpointFile, recovery_point_checkpoint,
)
from kafkalike.storage.errors import CorruptCheckpointError
from kafkalike.storage.layout import TopicPartition, parse_partition_dir
from kafkalike.storage.leader_epoch import LeaderEpochFileCache
from kafkalike.storage.meta_properties import (
    MetaProperties, parse_properties, read_meta_properties, write_meta_properties,
)


def test_offset_checkpoint_text_format(shm_path):
    checkpoint = recovery_point_checkpoint(str(shm_path))
    assert checkpoint.path.endswith("/recovery-point-offset-checkpoint")
    checkpoint.write({TopicPartition("orders", 1): 42, TopicPartition("__consumer_offsets", 7): 0})
    assert open(checkpoint.path).read() == "0\n2\n__consumer_offsets 7 0\norders 1 42\n"
    assert checkpoint.read() == {TopicPartition("orders", 1): 42, TopicPartition("__consumer_offsets", 7): 0}
    assert not os.path.exists(checkpoint.path + ".tmp")


def test_checkpoint_reads_whitespace_separated_lines_like_kafka(shm_path):
    path = str(shm_path / "replication-offset-checkpoint")
    open(path, "w").write("0\n1\nmy.topic   3\t17\n")
    assert OffsetCheckpointFile(path).read() == {TopicPartition("my.topic", 3): 17}


@pytest.mark.parametrize("text, message", [
    ("1\n0\n", "Unrecognized version"),
    ("0\n2\na 0 1\n", "Expected 2 entries"),
    ("0\n1\na 0\n", "Malformed line"),
    ("0\nx\n", "Malformed count"),
])
def test_broken_checkpoints_are_reported(shm_path, text, message):
    path = str(shm_path / "cp")
    open(path, "w").write(text)
    with pytest.raises(CorruptCheckpointError, match=message):
        OffsetCheckpointFile(path).read()


def test_a_missing_or_empty_checkpoint_reads_as_empty(shm_path):
    path = str(shm_path / "log-start-offset-checkpoint")
    checkpoint = OffsetCheckpointFile(path)
    assert os.path.getsize(path) == 0  # created empty, as Kafka does
    assert checkpoint.read() == {}


def test_leader_epoch_checkpoint_format(shm_path):
    checkpoint = LeaderEpochCheckpointFile(str(shm_path))
    checkpoint.write([EpochEntry(0, 0), EpochEntry(4, 120)])
    assert open(shm_path / "leader-epoch-checkpoint").read() == "0\n2\n0 0\n4 120\n"
    assert checkpoint.read() == [EpochEntry(0, 0), EpochEntry(4, 120)]


def test_epoch_cache_assign_ignores_repeats_and_drops_conflicting_entries(shm_path):
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(shm_path)))
    assert cache.assign(1, 0)
    assert not cache.assign(1, 5)  # same epoch, later offset: nothing to record
    assert cache.assign(3, 10)
    assert cache.assign(5, 20)
    # A leader elected at epoch 4 starting at 15 supersedes what came after it.
    assert cache.assign(4, 15)
    assert cache.entries() == [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(4, 15)]
    reloaded = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(shm_path)))
    assert reloaded.entries() == cache.entries()


def test_end_offset_for_follows_kafka_2_8():
    cache = LeaderEpochFileCache(None)
    assert cache.end_offset_for(0, 100) == (-1, -1)  # empty cache
    for epoch, start in [(2, 10), (4, 30), (7, 60)]:
        cache.assign(epoch, start)
    assert cache.end_offset_for(-1, 100) == (-1, -1)   # undefined epoch
    assert cache.end_offset_for(7, 100) == (7, 100)    # latest: the log end offset
    assert cache.end_offset_for(4, 100) == (4, 60)     # known: start of the next epoch
    assert cache.end_offset_for(5, 100) == (4, 60)     # unknown in between: floor epoch
    assert cache.end_offset_for(1, 100) == (1, 10)     # older than all: first start offset
    assert cache.end_offset_for(9, 100) == (-1, -1)    # newer than all


def test_epoch_cache_truncation_from_both_ends():
    cache = LeaderEpochFileCache(None)
    for epoch, start in [(1, 0), (2, 10), (3, 20), (4, 30)]:
        cache.assign(epoch, start)
    cache.truncate_from_end(20)
    assert cache.entries() == [EpochEntry(1, 0), EpochEntry(2, 10)]
    cache.truncate_from_start(15)
    assert cache.entries() == [EpochEntry(2, 15)]
    assert cache.epoch_for_offset(14) is None and cache.epoch_for_offset(16) == 2


def test_meta_properties_round_trip_in_java_properties_format(shm_path):
    write_meta_properties(str(shm_path), MetaProperties(broker_id=3, cluster_id="Hj2Ru-4xQ9-PRJZbN8Jq1A"))
    text = open(shm_path / "meta.properties", encoding="latin-1").read()
    lines = text.splitlines()
    assert lines[0] == "#" and lines[1].startswith("#")
    assert set(lines[2:]) == {"version=0", "broker.id=3", "cluster.id=Hj2Ru-4xQ9-PRJZbN8Jq1A"}
    assert read_meta_properties(str(shm_path)) == MetaProperties(3, "Hj2Ru-4xQ9-PRJZbN8Jq1A", 0)
    assert read_meta_properties(str(shm_path / "nowhere")) is None


def test_meta_properties_reader_handles_what_java_writes(shm_path):
    props = parse_properties("#comment\n! other\n  broker.id : 7\ncluster.id=a\\=b\\\n  c\nversion 0\n")
    assert props == {"broker.id": "7", "cluster.id": "a=bc", "version": "0"}
    open(shm_path / "meta.properties", "w").write("version=1\nbroker.id=1\n")
    with pytest.raises(CorruptCheckpointError):
        read_meta_properties(str(shm_path))


def test_partition_dir_names_parse_like_kafka():
    assert parse_partition_dir("/data/my-topic-12") == TopicPartition("my-topic", 12)
    assert parse_partition_dir("t-0.0123456789abcdef0123456789abcdef-delete") == TopicPartition("t", 0)
    with pytest.raises(ValueError, match="not in the form of topic-partition"):
        parse_partition_dir("lost+found")
