"""Names of things on disk: partition directories and segment files, exactly as Kafka 2.8 lays them out.

Operators and tools (kafka-dump-log, du, ls) look at these names, so they follow Kafka
to the character: `<topic>-<partition>` directories, 20-digit zero-padded base offsets.
"""
from __future__ import annotations

import os
import re
import uuid
from typing import NamedTuple

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
META_PROPERTIES_FILE = "meta.properties"

_DELETE_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)" + DELETE_DIR_SUFFIX + "$")
_FUTURE_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)" + FUTURE_DIR_SUFFIX + "$")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def offset_file_name(offset: int) -> str:
    """The 20-digit, zero-padded base offset every segment file starts with."""
    return f"{offset:020d}"


def log_file_path(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, offset_file_name(base_offset) + LOG_SUFFIX + suffix)


def offset_index_path(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, offset_file_name(base_offset) + INDEX_SUFFIX + suffix)


def time_index_path(directory: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(directory, offset_file_name(base_offset) + TIME_INDEX_SUFFIX + suffix)


def offset_from_file_name(name: str) -> int:
    """Base offset of a segment file name such as `00000000000000000042.index.deleted`."""
    return int(os.path.basename(name).split(".", 1)[0])


def partition_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def delete_dir_name(tp: TopicPartition) -> str:
    """Name a partition dir is renamed to when deleted: `topic-partition.<uuid>-delete`."""
    return f"{tp.topic}-{tp.partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


def future_dir_name(tp: TopicPartition) -> str:
    """Name of a log being filled to replace the current one: `topic-partition.<uuid>-future`."""
    return f"{tp.topic}-{tp.partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_partition_dir(name: str) -> TopicPartition:
    """TopicPartition from a partition dir name, including `-delete` and `-future` dirs.

    Raises ValueError with Kafka's wording for anything else, since a stray directory in
    a log dir is an operator mistake that Kafka refuses to start with.
    """
    base = os.path.basename(os.path.normpath(name))
    for pattern in (_DELETE_DIR, _FUTURE_DIR):
        match = pattern.match(base)
        if match:
            base = f"{match.group(1)}-{match.group(2)}"
            break
    dash = base.rfind("-")
    topic, partition = base[:dash], base[dash + 1:]
    if dash <= 0 or not partition.isdigit():
        raise ValueError(
            f"Found directory {name}, '{os.path.basename(name)}' is not in the form of "
            "topic-partition or topic-partition.uniqueId-delete (if marked for deletion).\n"
            "Kafka's log directories (and children) should only contain Kafka topic data.")
    return TopicPartition(topic, int(partition))


def is_delete_dir(name: str) -> bool:
    return bool(_DELETE_DIR.match(os.path.basename(os.path.normpath(name))))


def is_future_dir(name: str) -> bool:
    return bool(_FUTURE_DIR.match(os.path.basename(os.path.normpath(name))))


def fsync_dir(path: str) -> None:
    """Make a rename or create inside `path` durable (Kafka's Utils.flushDir)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
