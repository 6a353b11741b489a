"""Kafka's error codes and the one exception type for undecodable bytes.

Codes and names are Kafka 2.8's; a handler answers with these numbers, and clients
map them back to their own exceptions, so the numbers are the contract. Each code's
default message and the name of the exception Kafka's Java client raises for it
(`java_exception_name`) live here too, so every floor prints them the same way.
"""
from __future__ import annotations

from enum import IntEnum


class ProtocolDecodeError(ValueError):
    """Bytes that are not a valid encoding of the expected message.

    The only exception decoding raises, whatever the input: truncated frames,
    absurd lengths, negative sizes and bad UTF-8 all end up here.
    """


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104


# Kafka 2.8's default message for each code (Errors.java builds every code's exception with
# one); IntEnum keys, so a plain int a broker sends looks up the same entry. Users see these
# in tools' output, so they are Kafka's exact text, odd punctuation included.
_DEFAULT_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    ErrorCode.OFFSET_OUT_OF_RANGE: "The requested offset is not within the range of offsets maintained by the server.",
    ErrorCode.CORRUPT_MESSAGE: "This message has failed its CRC checksum, exceeds the valid size, has a null key for "
                               "a compacted topic, or is otherwise corrupt.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.INVALID_FETCH_SIZE: "The requested fetch size is invalid.",
    ErrorCode.LEADER_NOT_AVAILABLE: "There is no leader for this topic-partition as we are in the middle of a "
                                    "leadership election.",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error indicates that the "
                                      "broker is not the current leader. For requests intended for any replica, this "
                                      "error indicates that the broker is not a replica of the topic partition.",
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.BROKER_NOT_AVAILABLE: "The broker is not available.",
    ErrorCode.REPLICA_NOT_AVAILABLE: "The replica is not available for the requested topic-partition. Produce/Fetch "
                                     "requests and other requests intended only for the leader or follower return "
                                     "NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.",
    ErrorCode.MESSAGE_TOO_LARGE: "The request included a message larger than the max message size the server will "
                                 "accept.",
    ErrorCode.STALE_CONTROLLER_EPOCH: "The controller moved to another broker.",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "The metadata field of the offset request was too large.",
    ErrorCode.NETWORK_EXCEPTION: "The server disconnected before a response was received.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "The request attempted to perform an operation on an invalid topic.",
    ErrorCode.RECORD_LIST_TOO_LARGE: "The request included message batch larger than the configured segment size on "
                                     "the server.",
    ErrorCode.NOT_ENOUGH_REPLICAS: "Messages are rejected since there are fewer in-sync replicas than required.",
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "Messages are written to the log, but to fewer in-sync replicas than "
                                                "required.",
    ErrorCode.INVALID_REQUIRED_ACKS: "Produce request specified an invalid value for required acks.",
    ErrorCode.ILLEGAL_GENERATION: "Specified group generation id is not valid.",
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: "The group member's supported protocols are incompatible with those of "
                                           "existing members or first group member tried to join with empty protocol "
                                           "type or empty protocol list.",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
    ErrorCode.UNKNOWN_MEMBER_ID: "The coordinator is not aware of this member.",
    ErrorCode.INVALID_SESSION_TIMEOUT: "The session timeout is not within the range allowed by the broker (as "
                                       "configured by group.min.session.timeout.ms and group.max.session.timeout.ms).",
    ErrorCode.REBALANCE_IN_PROGRESS: "The group is rebalancing, so a rejoin is needed.",
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: "The committing offset data size is not valid.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.INVALID_TIMESTAMP: "The timestamp of the message is out of acceptable range.",
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: "The broker does not support the requested SASL mechanism.",
    ErrorCode.ILLEGAL_SASL_STATE: "Request is not valid given the current SASL state.",
    ErrorCode.UNSUPPORTED_VERSION: "The version of API is not supported.",
    ErrorCode.TOPIC_ALREADY_EXISTS: "Topic with this name already exists.",
    ErrorCode.INVALID_PARTITIONS: "Number of partitions is below 1.",
    ErrorCode.INVALID_REPLICATION_FACTOR: "Replication factor is below 1 or larger than the number of available "
                                          "brokers.",
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: "Replica assignment is invalid.",
    ErrorCode.INVALID_CONFIG: "Configuration is invalid.",
    ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client library "
                               "or the message was sent to an incompatible broker. See the broker logs for more "
                               "details.",
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT: "The message format version on the broker does not support the request.",
    ErrorCode.POLICY_VIOLATION: "Request parameters do not satisfy the configured policy.",
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: "The broker received an out of order sequence number.",
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: "The broker received a duplicate sequence number.",
    ErrorCode.INVALID_PRODUCER_EPOCH: "Producer attempted to produce with an old epoch.",
    ErrorCode.INVALID_TXN_STATE: "The producer attempted a transactional operation in an invalid state.",
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: "The producer attempted to use a producer id which is not currently "
                                           "assigned to its transactional id.",
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: "The transaction timeout is larger than the maximum value allowed by the "
                                           "broker (as configured by transaction.max.timeout.ms).",
    ErrorCode.CONCURRENT_TRANSACTIONS: "The producer attempted to update a transaction while another concurrent "
                                       "operation on the same transaction was ongoing.",
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: "Indicates that the transaction coordinator sending a WriteTxnMarker "
                                              "is no longer the current coordinator for a given producer.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.SECURITY_DISABLED: "Security features are disabled.",
    ErrorCode.OPERATION_NOT_ATTEMPTED: "The broker did not attempt to execute this operation. This may happen for "
                                       "batched RPCs where some operations in the batch failed, causing the broker "
                                       "to respond without trying the rest.",
    ErrorCode.KAFKA_STORAGE_ERROR: "Disk error when trying to access log file on the disk.",
    ErrorCode.LOG_DIR_NOT_FOUND: "The user-specified log directory is not found in the broker config.",
    ErrorCode.SASL_AUTHENTICATION_FAILED: "SASL Authentication failed.",
    ErrorCode.UNKNOWN_PRODUCER_ID: "This exception is raised by the broker if it could not locate the producer "
                                   "metadata associated with the producerId in question. This could happen if, for "
                                   "instance, the producer's records were deleted because their retention time had "
                                   "elapsed. Once the last records of the producerId are removed, the producer's "
                                   "metadata is removed from the broker, and future appends by the producer will "
                                   "return this exception.",
    ErrorCode.REASSIGNMENT_IN_PROGRESS: "A partition reassignment is in progress.",
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: "Delegation Token feature is not enabled.",
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND: "Delegation Token is not found on server.",
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: "Specified Principal is not valid Owner/Renewer.",
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: "Delegation Token requests are not allowed on PLAINTEXT/1-way "
                                                    "SSL channels and on delegation token authenticated channels.",
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: "Delegation Token authorization failed.",
    ErrorCode.DELEGATION_TOKEN_EXPIRED: "Delegation Token is expired.",
    ErrorCode.INVALID_PRINCIPAL_TYPE: "Supplied principalType is not supported.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: "The fetch session ID was not found.",
    ErrorCode.INVALID_FETCH_SESSION_EPOCH: "The fetch session epoch is invalid.",
    ErrorCode.LISTENER_NOT_FOUND: "There is no listener on the leader broker that matches the listener on which "
                                  "metadata request was processed.",
    ErrorCode.TOPIC_DELETION_DISABLED: "Topic deletion is disabled.",
    ErrorCode.FENCED_LEADER_EPOCH: "The leader epoch in the request is older than the epoch on the broker.",
    ErrorCode.UNKNOWN_LEADER_EPOCH: "The leader epoch in the request is newer than the epoch on the broker.",
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: "The requesting client does not support the compression type of given "
                                            "partition.",
    ErrorCode.STALE_BROKER_EPOCH: "Broker epoch has changed.",
    ErrorCode.OFFSET_NOT_AVAILABLE: "The leader high watermark has not caught up from a recent leader election so "
                                    "the offsets cannot be guaranteed to be monotonically increasing.",
    ErrorCode.MEMBER_ID_REQUIRED: "The group member needs to have a valid member id before actually entering a "
                                  "consumer group.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.GROUP_MAX_SIZE_REACHED: "The consumer group has reached its max size.",
    ErrorCode.FENCED_INSTANCE_ID: "The broker rejected this static consumer since another consumer with the same "
                                  "group.instance.id has registered with a different member.id.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "Deleting offsets of a topic is forbidden while the consumer group is "
                                         "actively subscribed to it.",
    ErrorCode.INVALID_RECORD: "This record has failed the validation on broker and hence will be rejected.",
    ErrorCode.UNSTABLE_OFFSET_COMMIT: "There are unstable offsets that need to be cleared.",
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: "The throttling quota has been exceeded.",
    ErrorCode.PRODUCER_FENCED: "There is a newer producer with the same transactionalId which fences the current one.",
    ErrorCode.RESOURCE_NOT_FOUND: "A request illegally referred to a resource that does not exist.",
    ErrorCode.DUPLICATE_RESOURCE: "A request illegally referred to the same resource twice.",
    ErrorCode.UNACCEPTABLE_CREDENTIAL: "Requested credential would not meet criteria for acceptability.",
    ErrorCode.INCONSISTENT_VOTER_SET: "Indicates that the either the sender or recipient of a voter-only request is "
                                      "not one of the expected voters",
    ErrorCode.INVALID_UPDATE_VERSION: "The given update version was invalid.",
    ErrorCode.FEATURE_UPDATE_FAILED: "Unable to update finalized features due to an unexpected server error.",
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: "Request principal deserialization failed during forwarding. This "
                                                 "indicates an internal error on the broker cluster security setup.",
    ErrorCode.SNAPSHOT_NOT_FOUND: "Requested snapshot was not found",
    ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
    ErrorCode.DUPLICATE_BROKER_REGISTRATION: "This broker ID is already in use.",
    ErrorCode.BROKER_ID_NOT_REGISTERED: "The given broker ID was not registered.",
    ErrorCode.INCONSISTENT_TOPIC_ID: "The log's topic ID did not match the topic ID in the request",
    ErrorCode.INCONSISTENT_CLUSTER_ID: "The clusterId in the request does not match that found on the server",
}


def default_message(code: ErrorCode | int) -> str:
    """Kafka's default message for an error code; the code's name (or number) if it has none."""
    try:
        code = ErrorCode(code)
    except ValueError:
        return str(code)
    return _DEFAULT_MESSAGES.get(code, code.name)


# Java exception names that do not follow from the error name by camel-casing it.
_IRREGULAR_EXCEPTIONS = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerException",
    ErrorCode.CORRUPT_MESSAGE: "CorruptRecordException",
    ErrorCode.REQUEST_TIMED_OUT: "TimeoutException",
    ErrorCode.MESSAGE_TOO_LARGE: "RecordTooLargeException",
    ErrorCode.STALE_CONTROLLER_EPOCH: "ControllerMovedException",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "OffsetMetadataTooLarge",  # sic: no "Exception" in Kafka's name
    ErrorCode.NETWORK_EXCEPTION: "NetworkException",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "InvalidTopicException",
    ErrorCode.RECORD_LIST_TOO_LARGE: "RecordBatchTooLargeException",
    ErrorCode.TOPIC_ALREADY_EXISTS: "TopicExistsException",
    ErrorCode.INVALID_CONFIG: "InvalidConfigurationException",
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: "OutOfOrderSequenceException",
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: "DuplicateSequenceException",
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: "InvalidPidMappingException",
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: "InvalidTxnTimeoutException",
    ErrorCode.KAFKA_STORAGE_ERROR: "KafkaStorageException",
    ErrorCode.SASL_AUTHENTICATION_FAILED: "SaslAuthenticationException",
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: "DelegationTokenDisabledException",
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: "UnsupportedByAuthenticationException",
    ErrorCode.NON_EMPTY_GROUP: "GroupNotEmptyException",
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: "PrincipalDeserializationException",
}


def java_exception_name(code: ErrorCode) -> str:
    """The simple name of the exception Kafka's Java client raises for an error code."""
    code = ErrorCode(code)
    if code in _IRREGULAR_EXCEPTIONS:
        return _IRREGULAR_EXCEPTIONS[code]
    name = code.name
    if name.endswith("_AUTHORIZATION_FAILED"):
        name = name[: -len("_FAILED")]
    return "".join(part.capitalize() for part in name.split("_")) + "Exception"


class KafkaProtocolError(Exception):
    """An error a handler answers with: carries the code for the response."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = ErrorCode(code)
        self.message = message
