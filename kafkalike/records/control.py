"""Control records: the transaction markers a coordinator writes into data partitions.

A control batch (attribute bit 5) holds one record whose key is
[version int16, type int16] (0 = ABORT, 1 = COMMIT; 2 = LEADER_CHANGE is the
Raft log's) and, for ABORT/COMMIT, whose value is
[version int16, coordinator_epoch int32].
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from .batch import encode_batch
from .header import InvalidRecordError, NO_PARTITION_LEADER_EPOCH, NO_SEQUENCE
from .record import Record

_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class ControlRecordType(enum.IntEnum):
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2

    @classmethod
    def from_id(cls, type_id: int) -> "ControlRecordType":
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class ControlKey:
    version: int
    type_id: int

    @property
    def type(self) -> ControlRecordType:
        return ControlRecordType.from_id(self.type_id)


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    control_type: ControlRecordType  # ABORT or COMMIT
    coordinator_epoch: int

    def key(self) -> bytes:
        return encode_control_key(self.control_type)

    def value(self) -> bytes:
        return _MARKER_VALUE.pack(END_TXN_MARKER_VERSION, self.coordinator_epoch)


def encode_control_key(control_type: int, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _KEY.pack(version, int(control_type))


def parse_control_key(key: bytes | None) -> ControlKey:
    """Version and type id of a control record key (Kafka reads only the first 4 bytes)."""
    if key is None or len(key) < _KEY.size:
        raise InvalidRecordError(f"control record key is too short: {key!r}")
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(f"invalid control record key version {version}")
    return ControlKey(version, type_id)


def parse_end_txn_marker(record: Record) -> EndTransactionMarker:
    """The ABORT/COMMIT marker in a control record; InvalidRecordError if it is not one."""
    control_type = parse_control_key(record.key).type
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidRecordError(f"control record of type {control_type.name} is not an end marker")
    value = record.value
    if value is None or len(value) < _MARKER_VALUE.size:
        raise InvalidRecordError("end transaction marker value is too short")
    version, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(f"invalid end transaction marker version {version}")
    return EndTransactionMarker(control_type, coordinator_epoch)


def encode_end_txn_marker_batch(*, commit: bool, producer_id: int, producer_epoch: int,
                                coordinator_epoch: int, timestamp: int | None = None,
                                base_offset: int = 0,
                                partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """A control batch with one COMMIT or ABORT marker, as the broker writes it."""
    marker = EndTransactionMarker(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                                  coordinator_epoch)
    return encode_batch([(marker.key(), marker.value(), None, timestamp)],
                        base_offset=base_offset, producer_id=producer_id,
                        producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                        partition_leader_epoch=partition_leader_epoch,
                        is_transactional=True, is_control=True, base_timestamp=timestamp)
