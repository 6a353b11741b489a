"""Control batches: transaction markers as the broker writes and consumers read them."""
import struct

import pytest

from kafkalike.records import (
    ControlRecordType, EndTransactionMarker, InvalidRecordError, Record, decode_batches,
    encode_batch, encode_control_key, encode_end_txn_marker_batch, parse_control_key,
    parse_end_txn_marker,
)


@pytest.mark.parametrize("commit,expected", [(True, ControlRecordType.COMMIT), (False, ControlRecordType.ABORT)])
def test_end_txn_marker_batch(commit, expected):
    buf = encode_end_txn_marker_batch(commit=commit, producer_id=4000, producer_epoch=3,
                                      coordinator_epoch=17, timestamp=123, base_offset=50,
                                      partition_leader_epoch=2)
    batch = next(decode_batches(buf))
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4000, 3, -1)
    assert (batch.base_offset, batch.count, batch.partition_leader_epoch) == (50, 1, 2)
    (record,) = batch.records()
    assert record.key == struct.pack(">hh", 0, int(expected))
    assert record.value == struct.pack(">hi", 0, 17)
    assert parse_end_txn_marker(record) == EndTransactionMarker(expected, 17)


def test_control_key_parsing():
    assert parse_control_key(b"\x00\x00\x00\x01").type is ControlRecordType.COMMIT
    assert parse_control_key(b"\x00\x00\x00\x02").type is ControlRecordType.LEADER_CHANGE
    unknown = parse_control_key(b"\x00\x01\x00\x09extra")
    assert (unknown.version, unknown.type_id, unknown.type) == (1, 9, ControlRecordType.UNKNOWN)
    assert encode_control_key(ControlRecordType.ABORT) == b"\x00\x00\x00\x00"


@pytest.mark.parametrize("key,value", [
    (None, b"\x00\x00\x00\x00\x00\x01"),
    (b"\x00\x00", b"\x00\x00\x00\x00\x00\x01"),
    (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x01"),  # negative key version
    (b"\x00\x00\x00\x01", b"\x00\x00\x00"),                # value too short
    (b"\x00\x00\x00\x01", None),
    (b"\x00\x00\x00\x01", b"\xff\xff\x00\x00\x00\x01"),    # negative value version
    (b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x01"),    # not an end marker
])
def test_malformed_markers_are_invalid(key, value):
    with pytest.raises(InvalidRecordError):
        parse_end_txn_marker(Record(0, 0, key, value, []))


def test_generic_control_batch_through_encode_batch():
    buf = encode_batch([(encode_control_key(ControlRecordType.ABORT), b"\x00\x00\x00\x00\x00\x05")],
                       is_control=True, is_transactional=True, producer_id=1, producer_epoch=0)
    (record,) = next(decode_batches(buf)).records()
    assert parse_end_txn_marker(record) == EndTransactionMarker(ControlRecordType.ABORT, 5)
