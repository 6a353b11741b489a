"""kafka-dump-log's decoders of internal topics: --offsets-decoder and --transaction-log-decoder.

Each turns one record's key and value into the two strings Kafka 2.8's DumpLogSegments
prints after `key: ` and ` payload: `, through the code Kafka's tool calls:
GroupMetadataManager.formatRecordKeyAndValue for __consumer_offsets and
TransactionLog.formatRecordKeyAndValue for __transaction_state.

    key: offset_commit::group=G,partition=T-0 payload: offset=5,metadata=M
    key: group_metadata::group=G payload: {"protocolType":"consumer","protocol":"range",
         "generationId":1,"assignment":"{member-1=[T-0, T-1]}"}
    key: transaction_metadata::transactionalId=X payload: producerId:7,producerEpoch:0,
         state=Ongoing,partitions=[T-0],txnLastUpdateTimestamp=...,txnTimeoutMs=60000

A tombstone prints `<DELETE>`. Members of a group and partitions of a transaction come out
in the order Kafka's Scala 2.13 build iterates them: the mutable HashMap / HashSet they are
loaded into walks its buckets in index order, each bucket sorted by hash.

Both internal topics are decoded with their coordinators' own declarations
(kafkalike.coordinator.records and kafkalike.coordinator.transaction.records). Both read every
version the reference schemas declare (Kafka 2.8 knows fewer: offset and group values up
to v3, transaction values v0 only, and would throw on the rest).

What Kafka would throw, these raise as a JavaError with Kafka's class and message
(a record without a key, a key or value version no schema knows, an unknown transaction
state); bytes that do not decode against the schema raise a JavaError with the decoder's
reason.
"""
from __future__ import annotations

import struct
from typing import Callable, Iterable

from kafkalike.cli.joptions import JavaError
from kafkalike.coordinator import records as offsets_records
from kafkalike.coordinator.schemas import GroupMetadataValue, OffsetCommitValue
from kafkalike.coordinator.transaction.records import TransactionLogKey, TransactionLogValue
from kafkalike.protocol.errors import ProtocolDecodeError
from kafkalike.protocol.messages.consumer_protocol import ConsumerProtocolAssignment
from kafkalike.protocol.types import Reader
from kafkalike.zkdata.kafka_json import java_string_hash, scala_mutable_map_order

# A message parser: (key bytes or None, value bytes or None) -> (key text, payload text),
# either None when there is nothing to print.
MessageParser = Callable[[bytes | None, bytes | None], tuple[str | None, str | None]]

_VERSION = struct.Struct(">h")
_MASK = 0xFFFFFFFF
CONSUMER_PROTOCOL_TYPE = "consumer"
DELETE = "<DELETE>"

ILLEGAL_STATE = "java.lang.IllegalStateException"
KAFKA_EXCEPTION = "org.apache.kafka.common.KafkaException"
SCHEMA_EXCEPTION = "org.apache.kafka.common.protocol.types.SchemaException"
BUFFER_UNDERFLOW = "java.nio.BufferUnderflowException"
NULL_POINTER = "java.lang.NullPointerException"
RUNTIME_EXCEPTION = "java.lang.RuntimeException"


def _version(data) -> int:
    """The int16 version prefix (ByteBuffer.getShort)."""
    if len(data) < 2:
        raise JavaError(BUFFER_UNDERFLOW)
    return _VERSION.unpack_from(data)[0]


def _known(cls, version: int) -> bool:
    low, high = cls.SCHEMA.valid_range
    return low <= version <= high


def _schema_error(error: ProtocolDecodeError) -> JavaError:
    return JavaError(RUNTIME_EXCEPTION, f"{error}")


def hex_number(data: bytes) -> str:
    """GroupMetadataManager.hex: the bytes as one unsigned big number in upper-case hex
    ("%X".format(BigInt(1, bytes))), so leading zero bytes vanish; empty bytes give ""."""
    return format(int.from_bytes(data, "big"), "X") if data else ""


def json_string(text: str | None) -> str:
    """A JSON string as Jackson writes it: only quote, backslash and control characters
    escaped, the five usual ones by letter, the rest as upper-case \\u00XX."""
    if text is None:
        return "null"
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif code < 0x20:
            out.append({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(code, f"\\u{code:04X}"))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# -- __consumer_offsets (GroupMetadataManager.formatRecordKeyAndValue) -------------------------

def _consumer_assignment(data: bytes) -> str:
    """ConsumerProtocol.deserializeAssignment, printed as `[T-0, T-1]` (Java's List.toString)
    with `:HEX` after it when the assignment carries user data."""
    if len(data) < 2:
        raise JavaError(SCHEMA_EXCEPTION, "Buffer underflow while parsing consumer protocol's header")
    version = _version(data)
    if version < 0:
        raise JavaError(SCHEMA_EXCEPTION, f"Unsupported assignment version: {version}")
    highest = ConsumerProtocolAssignment.SCHEMA.valid_range[1]
    try:
        assignment = ConsumerProtocolAssignment.read_from(Reader(data, 2), min(version, highest))
    except ProtocolDecodeError:
        raise JavaError(SCHEMA_EXCEPTION, "Buffer underflow while parsing consumer protocol's assignment") from None
    partitions = [f"{t.topic}-{p}" for t in assignment.assigned_partitions for p in t.partitions]
    text = "[" + ", ".join(partitions) + "]"
    user_data = hex_number(bytes(assignment.user_data)) if assignment.user_data is not None else ""
    return f"{text}:{user_data}" if user_data else text


def _format_offset_commit(key: offsets_records.OffsetKey, value) -> tuple[str, str]:
    key_text = f"offset_commit::group={key.group},partition={key.topic}-{key.partition}"
    if value is None:
        return key_text, DELETE
    version = _version(value)
    if not _known(OffsetCommitValue, version):
        raise JavaError(ILLEGAL_STATE, f"Unknown offset message version: {version}")
    try:
        offset = offsets_records.decode_offset_value(value)
    except ProtocolDecodeError as error:
        raise _schema_error(error) from None
    if not offset.metadata:
        return key_text, f"offset={offset.offset}"
    return key_text, f"offset={offset.offset},metadata={offset.metadata}"


def _format_group_metadata(key: offsets_records.GroupKey, value) -> tuple[str, str]:
    key_text = f"group_metadata::group={key.group}"
    if value is None:
        return key_text, DELETE
    version = _version(value)
    if not _known(GroupMetadataValue, version):
        raise JavaError(ILLEGAL_STATE, f"Unknown group metadata message version: {version}")
    try:
        group = offsets_records.decode_group_value(value)
    except ProtocolDecodeError as error:
        raise _schema_error(error) from None
    protocol_type = group.protocol_type or ""
    # GroupMetadata.loadGroup puts the members into a mutable.HashMap by member id.
    members = {m.member_id: m for m in group.members}
    parts = []
    for member_id in scala_mutable_map_order(list(members)):
        assignment = members[member_id].assignment
        if protocol_type == CONSUMER_PROTOCOL_TYPE:
            parts.append(f"{member_id}={_consumer_assignment(assignment)}")
        else:
            parts.append(f"{member_id}={hex_number(assignment)}")
    assignment_text = "{" + ",".join(parts) + "}"
    payload = (f'{{"protocolType":{json_string(protocol_type)},"protocol":{json_string(group.protocol)},'
               f'"generationId":{group.generation},"assignment":{json_string(assignment_text)}}}')
    return key_text, payload


def format_offsets_record(key, value) -> tuple[str, str]:
    """One __consumer_offsets record as DumpLogSegments' OffsetsMessageParser prints it."""
    if key is None:
        raise JavaError(KAFKA_EXCEPTION, "Failed to decode message using offset topic decoder "
                                         "(message had a missing key)")
    version = _version(key)
    try:
        decoded = offsets_records.decode_key(key)
    except offsets_records.UnknownRecordKey:
        raise JavaError(ILLEGAL_STATE, f"Unknown group metadata message version: {version}") from None
    except ProtocolDecodeError as error:
        raise _schema_error(error) from None
    if isinstance(decoded, offsets_records.OffsetKey):
        return _format_offset_commit(decoded, value)
    return _format_group_metadata(decoded, value)


# -- __transaction_state (TransactionLog.formatRecordKeyAndValue) ------------------------------

# TransactionMetadata.byteToState; the names are the Scala case objects'.
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                      "CompleteAbort", "Dead", "PrepareEpochFence")


def _int32(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def _topic_partition_hash(topic: str, partition: int) -> int:
    """TopicPartition.hashCode, then the xor of its high half into the low (improveHash)."""
    h = _int32(31 * (31 + partition) + java_string_hash(topic))
    return _int32(h ^ ((h & _MASK) >> 16))


def _table_size_for(capacity: int) -> int:
    return min((1 << (max(capacity - 1, 4).bit_length() - 1)) * 2, 1 << 30)


def scala_partition_set_order(groups: Iterable[list[tuple[str, int]]]) -> list[tuple[str, int]]:
    """Iteration order of TransactionMetadata.topicPartitions, a Scala 2.13 mutable.HashSet
    that `++=` fills with one immutable Set per topic of the value.

    `++=` first sizes the table for the added set alone; a set of up to four elements
    (Set1..Set4) is then added one by one, each add doubling a table that is full, while a
    larger one (an immutable HashSet) goes in without any check, past the load factor.
    """
    length, threshold, size = 16, 12, 0
    order: dict[tuple[str, int], int] = {}
    for group in groups:
        distinct = list(dict.fromkeys(group))
        target = _table_size_for(int((len(distinct) + 1) / 0.75))
        if target > length:
            length, threshold = target, int(target * 0.75)
        for element in distinct:
            if len(distinct) <= 4 and size + 1 >= threshold:
                length *= 2
                threshold = int(length * 0.75)
            if element not in order:
                order[element] = len(order)
                size += 1
    mask = length - 1

    def place(element: tuple[str, int]):
        h = _topic_partition_hash(*element)
        return h & mask, h, order[element]
    return sorted(order, key=place)


def format_transaction_record(key, value) -> tuple[str, str]:
    """One __transaction_state record as DumpLogSegments' TransactionLogMessageParser prints it."""
    if key is None:
        raise JavaError(NULL_POINTER)
    version = _version(key)
    if not _known(TransactionLogKey, version):
        raise JavaError(ILLEGAL_STATE, f"Unknown version {version} from the transaction log message")
    try:
        transactional_id = TransactionLogKey.read_from(Reader(key, 2), version).transactional_id
    except ProtocolDecodeError as error:
        raise _schema_error(error) from None
    key_text = f"transaction_metadata::transactionalId={transactional_id}"
    if value is None:
        return key_text, DELETE
    version = _version(value)
    if not _known(TransactionLogValue, version):
        raise JavaError(ILLEGAL_STATE, f"Unknown version {version} from the transaction log message value")
    try:
        txn = TransactionLogValue.read_from(Reader(value, 2), version)
    except ProtocolDecodeError as error:
        raise _schema_error(error) from None
    status = txn.transaction_status
    if not 0 <= status < len(TRANSACTION_STATES):
        raise JavaError(ILLEGAL_STATE, f"Unknown transaction state byte {status} from the transaction "
                                       "status message")
    state = TRANSACTION_STATES[status]
    partitions: list[tuple[str, int]] = []
    if state != "Empty":
        if txn.transaction_partitions is None:
            raise JavaError(NULL_POINTER)
        partitions = scala_partition_set_order(
            [(t.topic, p) for p in t.partition_ids] for t in txn.transaction_partitions)
    partitions_text = "[" + ",".join(f"{t}-{p}" for t, p in partitions) + "]"
    return key_text, (f"producerId:{txn.producer_id},producerEpoch:{txn.producer_epoch},state={state},"
                      f"partitions={partitions_text},"
                      f"txnLastUpdateTimestamp={txn.transaction_last_update_timestamp_ms},"
                      f"txnTimeoutMs={txn.transaction_timeout_ms}")


PARSERS: dict[str, MessageParser] = {
    "offsets-decoder": format_offsets_record,
    "transaction-log-decoder": format_transaction_record,
}
