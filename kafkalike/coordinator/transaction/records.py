"""Keys and values of __transaction_state records, as Kafka 2.8 writes them.

The key is TransactionLogKey v0 (the transactional id), the value TransactionLogValue
v1 (the highest 2.8 knows; v0 is read too), each behind an int16 version. The last
producer id and epoch are not in the log, as in 2.8. A null value is a tombstone: the
transactional id expired.
"""
from __future__ import annotations

from collections import defaultdict

from kafkalike.coordinator.transaction.metadata import (EMPTY, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
                                                        TransactionMetadata, TransactionState, TxnTransitMetadata)
from kafkalike.coordinator.records import split_version, versioned
from kafkalike.protocol.schema import F, Message, build_classes
from kafkalike.protocol.types import Reader

TransactionLogKey = build_classes(Message(
    'TransactionLogKey', 'data', valid='0', flexible='none',
    fields=[F('transactional_id', 'string', '0')]))

TransactionLogValue = build_classes(Message(
    'TransactionLogValue', 'data', valid='0-1', flexible='1+',
    fields=[
        F('producer_id', 'int64', '0+'),
        F('producer_epoch', 'int16', '0+'),
        F('transaction_timeout_ms', 'int32', '0+'),
        F('transaction_status', 'int8', '0+'),
        F('transaction_partitions', '[]PartitionsSchema', '0+', nullable='0+', fields=[
            F('topic', 'string', '0+'),
            F('partition_ids', '[]int32', '0+'),
        ]),
        F('transaction_last_update_timestamp_ms', 'int64', '0+'),
        F('transaction_start_timestamp_ms', 'int64', '0+'),
    ]))

KEY_VERSION = 0
VALUE_VERSION = 1


class UnknownTransactionRecord(ValueError):
    """A key or value version this broker cannot read."""


def key_bytes(transactional_id: str) -> bytes:
    return versioned(KEY_VERSION, TransactionLogKey(transactional_id=transactional_id))


def value_bytes(t: TxnTransitMetadata) -> bytes:
    if t.txn_state is EMPTY and t.topic_partitions:
        raise ValueError(f"Transaction is not expected to have any partitions since its state is {t.txn_state}: {t}")
    partitions = None
    if t.txn_state is not EMPTY:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, p in sorted(t.topic_partitions):
            by_topic[topic].append(p)
        partitions = [TransactionLogValue.PartitionsSchema(topic=topic, partition_ids=ids)
                      for topic, ids in by_topic.items()]
    return versioned(VALUE_VERSION, TransactionLogValue(
        producer_id=t.producer_id, producer_epoch=t.producer_epoch, transaction_timeout_ms=t.txn_timeout_ms,
        transaction_status=t.txn_state.value, transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=t.txn_last_update_timestamp,
        transaction_start_timestamp_ms=t.txn_start_timestamp))


def read_key(data) -> str:
    version, body = split_version(data)
    if version != KEY_VERSION:
        raise UnknownTransactionRecord(f"Unknown version {version} from the transaction log message")
    return TransactionLogKey.read_from(Reader(body), version).transactional_id


def read_value(transactional_id: str, data) -> TransactionMetadata | None:
    """None for a tombstone."""
    if data is None:
        return None
    version, body = split_version(data)
    if not 0 <= version <= VALUE_VERSION:
        raise UnknownTransactionRecord(f"Unknown version {version} from the transaction log message value")
    v = TransactionLogValue.read_from(Reader(body), version)
    state = TransactionState.from_id(v.transaction_status)
    metadata = TransactionMetadata(
        transactional_id=transactional_id, producer_id=v.producer_id, last_producer_id=NO_PRODUCER_ID,
        producer_epoch=v.producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=v.transaction_timeout_ms, state=state,
        txn_start_timestamp=v.transaction_start_timestamp_ms,
        txn_last_update_timestamp=v.transaction_last_update_timestamp_ms)
    if state is not EMPTY:
        for schema in v.transaction_partitions or []:
            metadata.topic_partitions.update((schema.topic, p) for p in schema.partition_ids)
    return metadata
