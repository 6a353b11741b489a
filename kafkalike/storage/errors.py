"""Exceptions the storage layer raises, each tied to the Kafka error code a broker answers with.

Storage knows nothing of the network, but every one of these failures ends up as an
error code in a Produce, Fetch or ListOffsets response. Carrying the code on the class
keeps the broker's translation a one-liner and keeps the mapping next to the reason.
"""
from __future__ import annotations

from kafkalike.common import config_def


class StorageError(Exception):
    """Base of every storage failure; unknown ones answer UNKNOWN_SERVER_ERROR."""

    error_code = -1  # UNKNOWN_SERVER_ERROR


class CorruptRecordError(StorageError):
    """A batch failed its CRC, has a bad magic or length, or is torn (CORRUPT_MESSAGE)."""

    error_code = 2


class InvalidRecordError(StorageError):
    """A well-formed batch that breaks a rule of the log, e.g. a client's control batch (INVALID_RECORD)."""

    error_code = 87


class RecordValidationError(InvalidRecordError):
    """Records refused one by one (KIP-467): Produce v8+ lists each as (batch_index, message)."""

    def __init__(self, record_errors: list[tuple[int, str]]) -> None:
        super().__init__("One or more records have been rejected")
        self.record_errors = record_errors


class RecordTooLargeError(StorageError):
    """One batch is larger than max.message.bytes (MESSAGE_TOO_LARGE), as Kafka's RecordTooLargeException."""

    error_code = 10


class RecordBatchTooLargeError(StorageError):
    """A whole append is larger than segment.bytes and can never fit a segment (RECORD_LIST_TOO_LARGE)."""

    error_code = 18


class InvalidTimestampError(StorageError):
    """A CreateTime batch is further from the broker clock than message.timestamp.difference.max.ms."""

    error_code = 32


class OffsetOutOfRangeError(StorageError):
    """A read or log-start move outside [log start offset, log end offset] (OFFSET_OUT_OF_RANGE)."""

    error_code = 1


class OffsetsOutOfOrderError(StorageError):
    """A follower append whose batches do not have strictly increasing offsets."""


class UnexpectedAppendOffsetError(StorageError):
    """A follower append starting below the log end offset.

    The replica fetcher handles the one legitimate case (an empty log whose start offset
    sits inside the leader's first batch) by truncating fully to `first_offset`.
    """

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class CorruptIndexError(StorageError):
    """An index file that cannot be trusted; recovery rebuilds it from the log."""


class CorruptCheckpointError(StorageError):
    """A checkpoint file that does not parse (bad version, count or line)."""


class LogDirLockedError(StorageError):
    """Another process (or LogManager) already holds the `.lock` of a log directory."""


class KafkaStorageError(StorageError):
    """An I/O failure in a log directory (KAFKA_STORAGE_ERROR)."""

    error_code = 56


class ConfigError(config_def.ConfigError, StorageError):
    """A topic or broker log config value of the wrong type or out of range (INVALID_CONFIG)."""
