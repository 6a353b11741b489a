"""kafka-dump-log --offsets-decoder and --transaction-log-decoder: each record's key and
payload as Kafka 2.8's OffsetsMessageParser and TransactionLogMessageParser print them.

Keys and values are encoded here by hand, field by field from the schemas in
/work/shared/reference/kafka-internal-topics, except where the group coordinator's own
codec is the point (what the broker writes is what the tool reads). The orders of group
members and of a transaction's partitions were taken from Scala 2.13's mutable.HashMap and
mutable.HashSet filled the way Kafka fills them.
"""
from __future__ import annotations

import struct

import pytest

from kafkalike.cli.dump_log import main
from kafkalike.cli.dump_log_decoders import (format_offsets_record, format_transaction_record, hex_number,
                                             json_string, scala_partition_set_order)
from kafkalike.cli.joptions import JavaError
from kafkalike.coordinator.records import (GroupRecord, MemberRecord, OffsetAndMetadata, group_key, group_value,
                                           offset_key, offset_value)
from kafkalike.records import encode_batch, encode_end_txn_marker_batch

TS = 1_700_000_000_000


# -- the schemas' primitives, by hand ---------------------------------------------------------

def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    data = s.encode()
    return i16(len(data)) + data


def blob(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def uvarint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def compact_string(s: str) -> bytes:
    data = s.encode()
    return uvarint(len(data) + 1) + data


def assignment(partitions: dict[str, list[int]], user_data: bytes | None = None, version: int = 0) -> bytes:
    """ConsumerProtocolAssignment v0/v1: [topic, [partition]], nullable user data."""
    body = i32(len(partitions)) + b"".join(
        string(t) + i32(len(ps)) + b"".join(i32(p) for p in ps) for t, ps in partitions.items())
    return i16(version) + body + blob(user_data)


def group_value_v3(protocol_type, generation, protocol, leader, members) -> bytes:
    body = string(protocol_type) + i32(generation) + string(protocol) + string(leader) + i64(TS) + i32(len(members))
    for member_id, assigned in members:
        body += (string(member_id) + string(None) + string("judge") + string("/127.0.0.1") + i32(30000)
                 + i32(10000) + blob(b"") + blob(assigned))
    return i16(3) + body


def txn_key(transactional_id: str, version: int = 0) -> bytes:
    return i16(version) + string(transactional_id)


def txn_value_v0(producer_id, epoch, timeout, status, partitions, last_update, start) -> bytes:
    if partitions is None:
        parts = i32(-1)
    else:
        parts = i32(len(partitions)) + b"".join(
            string(t) + i32(len(ps)) + b"".join(i32(p) for p in ps) for t, ps in partitions)
    return (i16(0) + i64(producer_id) + i16(epoch) + i32(timeout) + i8(status) + parts
            + i64(last_update) + i64(start))


def txn_value_v1(producer_id, epoch, timeout, status, partitions, last_update, start) -> bytes:
    """The flexible version: compact lengths (n + 1) and an empty tagged-field section per struct."""
    parts = uvarint(len(partitions) + 1) + b"".join(
        compact_string(t) + uvarint(len(ps) + 1) + b"".join(i32(p) for p in ps) + uvarint(0)
        for t, ps in partitions)
    return (i16(1) + i64(producer_id) + i16(epoch) + i32(timeout) + i8(status) + parts
            + i64(last_update) + i64(start) + uvarint(0))


# -- the dump, end to end ---------------------------------------------------------------------

def dump(capsys, path, *options):
    rc = main(["--files", str(path), *options])
    captured = capsys.readouterr()
    return rc, captured.out.splitlines(), captured.err.splitlines()


def segment(tmp_path, records, name="00000000000000000000.log"):
    path = tmp_path / name
    path.write_bytes(encode_batch([(k, v, None, TS) for k, v in records]))
    return path


def test_offsets_decoder_prints_commits_group_metadata_and_tombstones(capsys, tmp_path):
    member = MemberRecord(member_id="judge-5b1f", group_instance_id=None, client_id="judge",
                          client_host="/127.0.0.1", rebalance_timeout_ms=300000, session_timeout_ms=10000,
                          subscription=b"", assignment=assignment({"orders": [0, 1]}))
    records = [
        (offset_key("g1", "orders", 0), offset_value(OffsetAndMetadata(offset=4, leader_epoch=0, commit_timestamp=TS))),
        (offset_key("g1", "orders", 1), offset_value(OffsetAndMetadata(offset=10, metadata="done", commit_timestamp=TS))),
        (group_key("g1"), group_value(GroupRecord(protocol_type="consumer", generation=1, protocol="range",
                                                  leader="judge-5b1f", current_state_timestamp=TS,
                                                  members=[member]))),
        (offset_key("g1", "orders", 0), None),
        (group_key("g1"), None),
    ]
    path = segment(tmp_path, records)
    rc, out, err = dump(capsys, path, "--offsets-decoder")
    assert (rc, err) == (0, [])
    assert out[:3] == [f"Dumping {path}", "Starting offset: 0", out[2]]
    assert out[2].startswith("baseOffset: 0 lastOffset: 4 count: 5 ")
    # The decoder implies --print-data-log: each record line ends with its key and payload.
    assert out[3].startswith("| offset: 0 isValid: true crc: null keySize: ")
    assert out[3].endswith(" sequence: -1 headerKeys: [] key: offset_commit::group=g1,partition=orders-0 "
                           "payload: offset=4")
    rc, out, err = dump(capsys, path, "--offsets-decoder", "--skip-record-metadata")
    assert (rc, err) == (0, [])
    assert out[3:] == [
        "| key: offset_commit::group=g1,partition=orders-0 payload: offset=4",
        "| key: offset_commit::group=g1,partition=orders-1 payload: offset=10,metadata=done",
        '| key: group_metadata::group=g1 payload: {"protocolType":"consumer","protocol":"range",'
        '"generationId":1,"assignment":"{judge-5b1f=[orders-0, orders-1]}"}',
        "| key: offset_commit::group=g1,partition=orders-0 payload: <DELETE>",
        "| key: group_metadata::group=g1 payload: <DELETE>",
    ]


def test_every_offset_value_version_and_key_version():
    key_v0 = i16(0) + string("g") + string("t") + i32(3)
    assert format_offsets_record(key_v0, i16(0) + i64(7) + string("m") + i64(TS)) == (
        "offset_commit::group=g,partition=t-3", "offset=7,metadata=m")
    key_v1 = i16(1) + string("g") + string("t") + i32(3)
    assert format_offsets_record(key_v1, i16(1) + i64(8) + string("") + i64(TS) + i64(TS + 1)) == (
        "offset_commit::group=g,partition=t-3", "offset=8")
    assert format_offsets_record(key_v1, i16(2) + i64(9) + string("x") + i64(TS))[1] == "offset=9,metadata=x"
    assert format_offsets_record(key_v1, i16(3) + i64(10) + i32(5) + string("") + i64(TS))[1] == "offset=10"


def test_group_metadata_members_assignments_and_json():
    # An empty group: no members, and a null protocol is JSON null.
    value = group_value_v3("consumer", 0, None, None, [])
    assert format_offsets_record(group_key("g"), value) == (
        "group_metadata::group=g",
        '{"protocolType":"consumer","protocol":null,"generationId":0,"assignment":"{}"}')
    # Members in Scala 2.13 mutable.HashMap order; user data as one upper-case hex number.
    members = [("consumer-1-6d2f0a4c", assignment({"a": [0]})),
               ("consumer-2-91be33aa", assignment({"a": [1], "b": [0, 2]}, user_data=b"\x00\x0a\xff", version=1)),
               ("consumer-3-04c7d1e2", assignment({})),
               ("consumer-4-f1e2d3c4", assignment({"a": [2]}, user_data=b""))]
    _, payload = format_offsets_record(group_key("g"), group_value_v3("consumer", 5, "range", "consumer-1-6d2f0a4c",
                                                                      members))
    assert payload == ('{"protocolType":"consumer","protocol":"range","generationId":5,"assignment":'
                       '"{consumer-3-04c7d1e2=[],consumer-4-f1e2d3c4=[a-2],'
                       'consumer-2-91be33aa=[a-1, b-0, b-2]:AFF,consumer-1-6d2f0a4c=[a-0]}"}')
    # Another protocol type: assignments are printed as hex; quotes in names are escaped.
    _, payload = format_offsets_record(group_key("g"), group_value_v3('co"nnect', 2, "default", None,
                                                                      [("w-1", b"\x01\x02"), ("w-2", b"")]))
    assert payload == ('{"protocolType":"co\\"nnect","protocol":"default","generationId":2,'
                       '"assignment":"{w-1=102,w-2=}"}')


def test_helpers_match_jackson_and_scala():
    assert hex_number(b"") == "" and hex_number(b"\x00\x00") == "0" and hex_number(b"\x0f\xa0") == "FA0"
    assert json_string("a\x1b\t\\") == '"a\\u001B\\t\\\\"' and json_string(None) == "null"
    assert json_string("é/") == '"é/"'


def test_transaction_log_decoder(capsys, tmp_path):
    ongoing = txn_value_v0(4000, 2, 60000, 1, [("orders", [0, 1, 2]), ("billing", [3, 1]),
                                               ("audit", [0, 1, 2, 3, 4, 5])], TS + 5, TS)
    records = [
        (txn_key("tx-1"), txn_value_v0(4000, 0, 60000, 0, None, TS, -1)),
        (txn_key("tx-1"), ongoing),
        (txn_key("tx-1"), txn_value_v1(4000, 3, 90000, 4, [("orders", [2])], TS + 9, TS + 6)),
        (txn_key("tx-1"), None),
    ]
    path = segment(tmp_path, records)
    rc, out, err = dump(capsys, path, "--transaction-log-decoder", "--skip-record-metadata")
    assert (rc, err) == (0, [])
    assert out[3:] == [
        "| key: transaction_metadata::transactionalId=tx-1 payload: producerId:4000,producerEpoch:0,"
        f"state=Empty,partitions=[],txnLastUpdateTimestamp={TS},txnTimeoutMs=60000",
        # Partitions in Scala 2.13 mutable.HashSet order.
        "| key: transaction_metadata::transactionalId=tx-1 payload: producerId:4000,producerEpoch:2,"
        "state=Ongoing,partitions=[audit-0,audit-3,audit-4,audit-1,audit-2,orders-0,orders-1,audit-5,"
        f"orders-2,billing-3,billing-1],txnLastUpdateTimestamp={TS + 5},txnTimeoutMs=60000",
        "| key: transaction_metadata::transactionalId=tx-1 payload: producerId:4000,producerEpoch:3,"
        f"state=CompleteCommit,partitions=[orders-2],txnLastUpdateTimestamp={TS + 9},txnTimeoutMs=90000",
        "| key: transaction_metadata::transactionalId=tx-1 payload: <DELETE>",
    ]


def test_transaction_states_and_partition_set_growth():
    names = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
             "PrepareEpochFence"]
    for status, name in enumerate(names):
        value = txn_value_v0(1, 0, 1000, status, [] if status else None, TS, TS)
        assert f",state={name}," in format_transaction_record(txn_key("x"), value)[1]
    with pytest.raises(JavaError) as error:
        format_transaction_record(txn_key("x"), txn_value_v0(1, 0, 1000, 8, [], TS, TS))
    assert error.value.render() == ("java.lang.IllegalStateException: Unknown transaction state byte 8 from "
                                    "the transaction status message")
    # Not Empty but no partition array: Kafka's forEach on null.
    with pytest.raises(JavaError) as error:
        format_transaction_record(txn_key("x"), txn_value_v0(1, 0, 1000, 1, None, TS, TS))
    assert error.value.render() == "java.lang.NullPointerException"
    # Sets of more than four go in without the load-factor check; smaller ones grow the table.
    five = [[(t, p) for p in range(5)] for t in "abc"]
    assert [f"{t}-{p}" for t, p in scala_partition_set_order(five + [[("d", 0)]])] == (
        "a-2 b-3 c-4 a-1 b-2 c-3 a-0 b-1 c-2 b-0 c-1 c-0 d-0 a-4 a-3 b-4".split())


@pytest.mark.parametrize("key, value, expected", [
    (None, b"x", "org.apache.kafka.common.KafkaException: Failed to decode message using offset topic decoder "
                 "(message had a missing key)"),
    (i16(3) + string("g"), None, "java.lang.IllegalStateException: Unknown group metadata message version: 3"),
    (b"\x00", None, "java.nio.BufferUnderflowException"),
    (i16(1) + string("g") + string("t") + i32(0), i16(9) + i64(1),
     "java.lang.IllegalStateException: Unknown offset message version: 9"),
    (i16(2) + string("g"), i16(-1), "java.lang.IllegalStateException: Unknown group metadata message version: -1"),
    (i16(2) + string("g"), group_value_v3("consumer", 1, "range", None, [("m", b"")]),
     "org.apache.kafka.common.protocol.types.SchemaException: Buffer underflow while parsing consumer "
     "protocol's header"),
    (i16(2) + string("g"), group_value_v3("consumer", 1, "range", None, [("m", i16(-2))]),
     "org.apache.kafka.common.protocol.types.SchemaException: Unsupported assignment version: -2"),
])
def test_offsets_decoder_failures_are_kafkas_exceptions(key, value, expected):
    with pytest.raises(JavaError) as error:
        format_offsets_record(key, value)
    assert error.value.render() == expected


def test_transaction_log_decoder_failures():
    for key, value, expected in [
        (None, None, "java.lang.NullPointerException"),
        (txn_key("x", version=1), None, "java.lang.IllegalStateException: Unknown version 1 from the transaction "
                                        "log message"),
        (txn_key("x"), i16(2), "java.lang.IllegalStateException: Unknown version 2 from the transaction log "
                               "message value"),
    ]:
        with pytest.raises(JavaError) as error:
            format_transaction_record(key, value)
        assert error.value.render() == expected
    with pytest.raises(JavaError) as error:
        format_transaction_record(txn_key("x"), i16(0) + i64(1))   # cut short
    assert error.value.java_class == "java.lang.RuntimeException"


def test_an_undecodable_record_is_reported_and_the_dump_goes_on(capsys, tmp_path):
    path = segment(tmp_path, [(None, b"junk"), (offset_key("g", "t", 0), offset_value(OffsetAndMetadata(offset=1)))])
    rc, out, err = dump(capsys, path, "--offsets-decoder")
    assert rc == 1
    assert out[3].endswith(" sequence: -1 headerKeys: []")          # the record, without key and payload
    assert out[4].endswith(" key: offset_commit::group=g,partition=t-0 payload: offset=1")
    assert err == [f"Could not decode the record at offset 0 of {path}: org.apache.kafka.common.KafkaException: "
                   "Failed to decode message using offset topic decoder (message had a missing key)"]


def test_decoder_precedence_and_the_refused_cluster_metadata_decoder(capsys, tmp_path):
    path = segment(tmp_path, [(offset_key("g", "t", 0), offset_value(OffsetAndMetadata(offset=1)))])
    # Kafka picks the offsets decoder first and then never loads the decoder classes.
    rc, out, err = dump(capsys, path, "--value-decoder-class", "com.example.Nope", "--cluster-metadata-decoder",
                        "--offsets-decoder", "--skip-record-metadata")
    assert (rc, err) == (0, [])
    assert out[-1] == "| key: offset_commit::group=g,partition=t-0 payload: offset=1"
    rc, out, err = dump(capsys, path, "--cluster-metadata-decoder")
    assert (rc, out) == (1, [])
    assert err[0].startswith("kafkalike's kafka-dump-log does not implement --cluster-metadata-decoder")
    # The wrong decoder for the topic: an offset commit key is no transaction log key.
    rc, out, err = dump(capsys, path, "--transaction-log-decoder")
    assert rc == 1 and err[0].endswith("java.lang.IllegalStateException: Unknown version 1 from the "
                                       "transaction log message")


def test_transaction_markers_are_not_decoded(capsys, tmp_path):
    """A transactional offset commit leaves a commit marker in __consumer_offsets: control
    records print their marker, never a key or payload."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(encode_batch([(offset_key("g", "t", 0), offset_value(OffsetAndMetadata(offset=3)), None, TS)],
                                  producer_id=7, producer_epoch=0, is_transactional=True)
                     + encode_end_txn_marker_batch(commit=True, producer_id=7, producer_epoch=0, coordinator_epoch=1,
                                                   timestamp=TS, base_offset=1))
    rc, out, err = dump(capsys, path, "--offsets-decoder")
    assert (rc, err) == (0, [])
    assert out[3].endswith(" key: offset_commit::group=g,partition=t-0 payload: offset=3")
    assert out[5].endswith(" endTxnMarker: COMMIT coordinatorEpoch: 1")
