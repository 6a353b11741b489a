"""The exceptions the producer raises or hands to callbacks.

They mirror the Java client's exception classes closely enough that a user can tell
what happened and whether trying again could help (`retriable`), and tools can print
the Java class name Kafka's own tools print (`java_class`). Errors that come from a
broker's answer are BrokerResponseError with Kafka's error code; everything the client
decides on its own (time-outs, sizes, configuration, serialization) has its own type.
"""
from __future__ import annotations

from kafkalike.common import config_def
from kafkalike.protocol.errors import ErrorCode, default_message, java_exception_name

_ERRORS = "org.apache.kafka.common.errors."


class KafkaError(Exception):
    """Base of every producer error."""

    retriable = False
    java_name = "org.apache.kafka.common.KafkaException"

    @property
    def java_class(self) -> str:
        return self.java_name


class KafkaTimeoutError(KafkaError):
    """Something did not happen within its deadline (Java's TimeoutException)."""

    retriable = True
    java_name = _ERRORS + "TimeoutException"


class RecordTooLargeError(KafkaError):
    java_name = _ERRORS + "RecordTooLargeException"


class SerializationError(KafkaError):
    java_name = _ERRORS + "SerializationException"


class InvalidTopicError(KafkaError):
    java_name = _ERRORS + "InvalidTopicException"


class TopicAuthorizationError(KafkaError):
    java_name = _ERRORS + "TopicAuthorizationException"


class IllegalStateError(KafkaError):
    java_name = "java.lang.IllegalStateException"


class ConfigError(config_def.ConfigError, KafkaError):
    """A configuration value that is missing, malformed or out of range; names the key."""


class UnsupportedFeatureError(KafkaError):
    """A documented Kafka feature this client (or our broker) does not offer yet."""

    java_name = _ERRORS + "UnsupportedVersionException"


class NetworkError(KafkaError):
    """The connection to a broker broke while a request was outstanding."""

    retriable = True
    java_name = _ERRORS + "NetworkException"


# Java's RetriableException subclasses among the codes a produce or metadata answer carries.
RETRIABLE_CODES = frozenset({
    ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
    ErrorCode.INVALID_FETCH_SESSION_EPOCH, ErrorCode.LISTENER_NOT_FOUND, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.OFFSET_NOT_AVAILABLE, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, ErrorCode.UNSTABLE_OFFSET_COMMIT,
    ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.UNKNOWN_TOPIC_ID,
})

# Java's InvalidMetadataException subclasses: after one of these the cached leaders are
# suspect, so the producer asks for fresh metadata before it tries again.
INVALID_METADATA_CODES = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.LISTENER_NOT_FOUND, ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.UNKNOWN_TOPIC_ID,
})


class BrokerResponseError(KafkaError):
    """A broker answered a request for a partition with an error code."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        try:
            self.code = ErrorCode(code)
        except ValueError:
            self.code = ErrorCode.UNKNOWN_SERVER_ERROR
        self.message = message or default_message(self.code)
        super().__init__(self.message)

    @property
    def retriable(self) -> bool:  # type: ignore[override]
        return self.code in RETRIABLE_CODES

    @property
    def invalid_metadata(self) -> bool:
        return self.code in INVALID_METADATA_CODES

    @property
    def name(self) -> str:
        return self.code.name

    @property
    def java_class(self) -> str:
        return _ERRORS + java_exception_name(self.code)


class ProducerFencedError(BrokerResponseError):
    """Another producer with this transactional.id took over (PRODUCER_FENCED, or
    INVALID_PRODUCER_EPOCH from the coordinator); this one can only be closed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(ErrorCode.PRODUCER_FENCED, message)


class InvalidProducerEpochError(BrokerResponseError):
    """A partition leader refused a batch of an older epoch (KIP-588: the transaction can be aborted)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(ErrorCode.INVALID_PRODUCER_EPOCH, message)


class TransactionalIdAuthorizationError(BrokerResponseError):
    def __init__(self, message: str | None = None) -> None:
        super().__init__(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, message)


class TransactionAbortedError(KafkaError):
    """A record never sent because its transaction was aborted first."""

    java_name = _ERRORS + "TransactionAbortedException"


_TYPED_CODES = {ErrorCode.PRODUCER_FENCED: ProducerFencedError, ErrorCode.INVALID_PRODUCER_EPOCH: InvalidProducerEpochError,
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: TransactionalIdAuthorizationError}


def error_for_code(code: ErrorCode | int, message: str | None = None) -> KafkaError:
    """The exception a user sees for a broker's error code (None is not an error)."""
    typed = _TYPED_CODES.get(code)
    if typed is not None:
        return typed(message)
    if code == ErrorCode.REQUEST_TIMED_OUT:
        return KafkaTimeoutError(message or default_message(ErrorCode.REQUEST_TIMED_OUT))
    if code == ErrorCode.NETWORK_EXCEPTION:
        return NetworkError(message or default_message(ErrorCode.NETWORK_EXCEPTION))
    if code == ErrorCode.MESSAGE_TOO_LARGE:
        return RecordTooLargeError(message or default_message(ErrorCode.MESSAGE_TOO_LARGE))
    if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        return TopicAuthorizationError(message or default_message(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    if code == ErrorCode.INVALID_TOPIC_EXCEPTION:
        return InvalidTopicError(message or default_message(ErrorCode.INVALID_TOPIC_EXCEPTION))
    return BrokerResponseError(code, message)


def java_view(error: BaseException) -> str:
    """`java.class.Name: message`, the first line of a Java stack trace for this error."""
    name = error.java_class if isinstance(error, KafkaError) else f"{type(error).__module__}.{type(error).__qualname__}"
    text = str(error)
    return f"{name}: {text}" if text else name


__all__ = ["BrokerResponseError", "ConfigError", "INVALID_METADATA_CODES", "IllegalStateError",
           "InvalidProducerEpochError", "InvalidTopicError", "ProducerFencedError", "TransactionAbortedError",
           "TransactionalIdAuthorizationError", "KafkaError", "KafkaTimeoutError", "NetworkError", "RETRIABLE_CODES",
           "RecordTooLargeError", "SerializationError", "TopicAuthorizationError", "UnsupportedFeatureError",
           "error_for_code", "java_view"]


# -- consumer errors -------------------------------------------------------------------------


class NoOffsetForPartitionError(KafkaError):
    """A partition has no position and auto.offset.reset=none forbids guessing one."""

    java_name = "org.apache.kafka.clients.consumer.NoOffsetForPartitionException"

    def __init__(self, partitions) -> None:
        self.partitions = set(partitions)
        names = ", ".join(sorted(str(tp) for tp in self.partitions))
        super().__init__(f"Undefined offset with no reset policy for partitions: [{names}]")


class OffsetOutOfRangeError(KafkaError):
    """The fetch position is outside the log and auto.offset.reset=none forbids resetting it."""

    java_name = "org.apache.kafka.clients.consumer.OffsetOutOfRangeException"

    def __init__(self, offsets) -> None:
        self.offsets = dict(offsets)
        text = ", ".join(f"{tp}={offset}" for tp, offset in sorted(self.offsets.items()))
        super().__init__(f"Offsets out of range with no configured reset policy for partitions: {{{text}}}")


class WakeupError(KafkaError):
    """Raised from a blocking consumer call after another thread called wakeup()."""

    java_name = _ERRORS + "WakeupException"


class CommitFailedError(KafkaError):
    """An offset commit that cannot be retried: the group rebalanced under this member."""

    java_name = "org.apache.kafka.clients.consumer.CommitFailedException"


class InvalidGroupIdError(KafkaError):
    java_name = _ERRORS + "InvalidGroupIdException"


class RebalanceInProgressError(KafkaError):
    """A commit met a rebalance under way: poll() to finish it, then commit again (not fatal)."""

    java_name = _ERRORS + "RebalanceInProgressException"


class FencedInstanceIdError(KafkaError):
    """Another consumer joined with this one's group.instance.id; this one must stop."""

    java_name = _ERRORS + "FencedInstanceIdException"


class ConcurrentModificationError(KafkaError):
    """A second thread called the consumer while one was inside it (only wakeup() may)."""

    java_name = "java.util.ConcurrentModificationException"


class RecordDeserializationError(SerializationError):
    """A record's key or value could not be deserialized; names where it is, so it can be skipped."""

    java_name = _ERRORS + "RecordDeserializationException"

    def __init__(self, partition, offset: int, message: str) -> None:
        self.partition = partition
        self.offset = offset
        super().__init__(message)


CONSUMER_ERRORS = ["InvalidGroupIdError", "CommitFailedError", "ConcurrentModificationError", "FencedInstanceIdError",
                   "NoOffsetForPartitionError", "OffsetOutOfRangeError", "RebalanceInProgressError",
                   "RecordDeserializationError", "WakeupError"]
__all__ += CONSUMER_ERRORS
