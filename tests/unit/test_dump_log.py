"""kafka-dump-log output, line by line, against Kafka 2.8's DumpLogSegments format."""
import os
import struct
import subprocess
import sys
import zlib

import pytest
from crc32c import crc32c

from kafkalike.cli.dump_log import main
from kafkalike.records import encode_batch, encode_end_txn_marker_batch

TS = 1_600_000_000_000
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODEC = ["NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD"]


def crc_of(batch: bytes) -> int:
    return struct.unpack_from(">I", batch, 17)[0]


def run(capsys, *args):
    rc = main(list(args))
    captured = capsys.readouterr()
    return rc, captured.out.splitlines(), captured.err.splitlines()


@pytest.fixture
def segment(tmp_path):
    """A segment at base offset 100 with one batch per codec, headers, and a commit marker."""
    batches = [
        encode_batch([(b"abc", b"hello", [("trace", b"1"), ("span", None)], TS),
                      (None, b"world", None, TS + 1)],
                     base_offset=100, partition_leader_epoch=0),
        encode_batch([(b"k", b"gz", None, TS + 2)], base_offset=102, compression=1,
                     partition_leader_epoch=0),
        encode_batch([(b"k", b"sn", None, TS + 3)], base_offset=103, compression=2,
                     partition_leader_epoch=0),
        encode_batch([(None, None, None, TS + 4)], base_offset=104, compression=3,
                     partition_leader_epoch=0),
        encode_batch([(b"tx", b"zs", None, TS + 5)], base_offset=105, compression=4,
                     producer_id=4000, producer_epoch=2, base_sequence=7, is_transactional=True,
                     partition_leader_epoch=1),
        encode_end_txn_marker_batch(commit=True, producer_id=4000, producer_epoch=2,
                                    coordinator_epoch=5, timestamp=TS + 6, base_offset=106,
                                    partition_leader_epoch=1),
    ]
    path = tmp_path / "00000000000000000100.log"
    path.write_bytes(b"".join(batches))
    return path, batches


def batch_line(b, pos, base, last, count, codec, *, seq=(-1, -1), pid=-1, epoch=-1, ple=0,
               txn="false", ctl="false", ts):
    return (f"baseOffset: {base} lastOffset: {last} count: {count} baseSequence: {seq[0]} "
            f"lastSequence: {seq[1]} producerId: {pid} producerEpoch: {epoch} "
            f"partitionLeaderEpoch: {ple} isTransactional: {txn} isControl: {ctl} position: {pos} "
            f"CreateTime: {ts} size: {len(b)} magic: 2 compresscodec: {codec} crc: {crc_of(b)} "
            f"isvalid: true")


def record_prefix(b, pos, offset, ks, vs, ts, base, last, codec, *, seq=(-1, -1), epoch=-1, ple=0):
    return (f"| offset: {offset} isValid: true crc: null keySize: {ks} valueSize: {vs} "
            f"CreateTime: {ts} baseOffset: {base} lastOffset: {last} baseSequence: {seq[0]} "
            f"lastSequence: {seq[1]} producerEpoch: {epoch} partitionLeaderEpoch: {ple} "
            f"batchSize: {len(b)} magic: 2 compressType: {codec} position: {pos}")


def positions(batches):
    return [sum(len(b) for b in batches[:i]) for i in range(len(batches))]


def test_shallow_dump(capsys, segment):
    path, b = segment
    p = positions(b)
    rc, out, err = run(capsys, "--files", str(path))
    assert rc == 0 and err == []
    assert out == [
        f"Dumping {path}",
        "Starting offset: 100",
        batch_line(b[0], p[0], 100, 101, 2, "NONE", ts=TS + 1),
        batch_line(b[1], p[1], 102, 102, 1, "GZIP", ts=TS + 2),
        batch_line(b[2], p[2], 103, 103, 1, "SNAPPY", ts=TS + 3),
        batch_line(b[3], p[3], 104, 104, 1, "LZ4", ts=TS + 4),
        batch_line(b[4], p[4], 105, 105, 1, "ZSTD", seq=(7, 7), pid=4000, epoch=2, ple=1,
                   txn="true", ts=TS + 5),
        batch_line(b[5], p[5], 106, 106, 1, "NONE", pid=4000, epoch=2, ple=1, txn="true",
                   ctl="true", ts=TS + 6),
    ]


def test_print_data_log(capsys, segment):
    path, b = segment
    p = positions(b)
    rc, out, err = run(capsys, "--files", str(path), "--print-data-log")
    assert rc == 0 and err == []
    records = [line for line in out if line.startswith("|")]
    assert records == [
        record_prefix(b[0], p[0], 100, 3, 5, TS, 100, 101, "NONE")
        + " sequence: -1 headerKeys: [trace,span] key: abc payload: hello",
        record_prefix(b[0], p[0], 101, -1, 5, TS + 1, 100, 101, "NONE")
        + " sequence: -1 headerKeys: [] payload: world",
        record_prefix(b[1], p[1], 102, 1, 2, TS + 2, 102, 102, "GZIP")
        + " sequence: -1 headerKeys: [] key: k payload: gz",
        record_prefix(b[2], p[2], 103, 1, 2, TS + 3, 103, 103, "SNAPPY")
        + " sequence: -1 headerKeys: [] key: k payload: sn",
        record_prefix(b[3], p[3], 104, -1, -1, TS + 4, 104, 104, "LZ4")
        + " sequence: -1 headerKeys: []",
        record_prefix(b[4], p[4], 105, 2, 2, TS + 5, 105, 105, "ZSTD", seq=(7, 7), epoch=2, ple=1)
        + " sequence: 7 headerKeys: [] key: tx payload: zs",
        record_prefix(b[5], p[5], 106, 4, 6, TS + 6, 106, 106, "NONE", epoch=2, ple=1)
        + " sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5",
    ]
    # Each batch line is followed by its records.
    assert [line[:11] for line in out[2:5]] == ["baseOffset:", "| offset: 1", "| offset: 1"]


def test_deep_iteration_without_data(capsys, segment):
    path, b = segment
    rc, out, _ = run(capsys, "--files", str(path), "--deep-iteration")
    first = [line for line in out if line.startswith("|")][0]
    assert first.endswith("sequence: -1 headerKeys: [trace,span]")
    assert len([line for line in out if line.startswith("|")]) == 7


def test_skip_record_metadata(capsys, segment):
    path, _ = segment
    rc, out, _ = run(capsys, "--files", str(path), "--print-data-log", "--skip-record-metadata")
    assert out[3:5] == ["| key: abc payload: hello", " payload: world"]


def test_torn_tail_is_reported(capsys, segment):
    path, b = segment
    data = path.read_bytes()
    path.write_bytes(data + b[0][:30])
    rc, out, err = run(capsys, "--files", str(path))
    assert rc == 0
    assert out[-1] == f"Found 30 invalid bytes at the end of {path.name}"
    assert len(out) == 2 + len(b) + 1


def test_corrupt_size_is_reported_not_raised(capsys, segment):
    path, b = segment
    bad = bytearray(path.read_bytes())
    struct.pack_into(">i", bad, len(b[0]) + 8, 3)  # second batch: size below the minimum
    path.write_bytes(bytes(bad))
    rc, out, err = run(capsys, "--files", str(path))
    assert rc == 1
    assert out[2].startswith("baseOffset: 100 ")
    assert out[-1] == f"Found {len(bad) - len(b[0])} invalid bytes at the end of {path.name}"
    assert "smaller than minimum record overhead (14)" in err[0]


def test_crc_failure_prints_isvalid_false(capsys, segment):
    path, b = segment
    bad = bytearray(path.read_bytes())
    bad[len(b[0]) - 1] ^= 0xFF  # last byte of the first batch's last record
    path.write_bytes(bytes(bad))
    rc, out, _ = run(capsys, "--files", str(path))
    assert out[2].endswith("isvalid: false")
    assert out[3].endswith("isvalid: true")


def test_log_append_time_and_non_consecutive_offsets(capsys, tmp_path):
    b1 = encode_batch([(None, b"a", None, TS), (None, b"b", None, TS + 9)], timestamp_type=1)
    b2 = encode_batch([(None, b"c", None, TS)], base_offset=5)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b1 + b2)
    rc, out, err = run(capsys, "--files", str(path), "--deep-iteration")
    assert " LogAppendTime: 1600000000009 size:" in out[2]
    assert out[3].startswith("| offset: 0 isValid: true crc: null keySize: -1 valueSize: 1 "
                             "LogAppendTime: 1600000000009 ")
    assert err == [f"Non-consecutive offsets in {path}", "  1 is followed by 5"]


def legacy_message(offset, value, *, magic=1, attributes=0, timestamp=TS):
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_legacy_entries(capsys, tmp_path):
    m0 = legacy_message(0, b"zero", magic=0)
    m1 = legacy_message(1, b"one")
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(m0 + m1)
    crc0 = struct.unpack_from(">I", m0, 12)[0]
    crc1 = struct.unpack_from(">I", m1, 12)[0]
    rc, out, err = run(capsys, "--files", str(path), "--print-data-log")
    assert err == []
    assert out[2:] == [
        f"offset: 0 position: 0 NoTimestampType: -1 size: {len(m0)} magic: 0 compresscodec: NONE "
        f"crc: {crc0} isvalid: true",
        f"| offset: 0 isValid: true crc: {crc0} keySize: -1 valueSize: 4 NoTimestampType: -1 "
        f"baseOffset: 0 lastOffset: 0 baseSequence: -1 lastSequence: -1 producerEpoch: -1 "
        f"partitionLeaderEpoch: -1 batchSize: {len(m0)} magic: 0 compressType: NONE position: 0 "
        f"crc: {crc0} isvalid: true payload: zero",
        f"offset: 1 position: {len(m0)} CreateTime: {TS} size: {len(m1)} magic: 1 "
        f"compresscodec: NONE crc: {crc1} isvalid: true",
        f"| offset: 1 isValid: true crc: {crc1} keySize: -1 valueSize: 3 CreateTime: {TS} "
        f"baseOffset: 1 lastOffset: 1 baseSequence: -1 lastSequence: -1 producerEpoch: -1 "
        f"partitionLeaderEpoch: -1 batchSize: {len(m1)} magic: 1 compressType: NONE "
        f"position: {len(m0)} crc: {crc1} isvalid: true payload: one",
    ]


def test_log_written_by_kafka_python(capsys, tmp_path):
    memory_records = pytest.importorskip("kafka.record.memory_records")
    builder = memory_records.MemoryRecordsBuilder(magic=2, compression_type=1, batch_size=1 << 20, offset=0)
    builder.append(TS, b"key", b"value" * 40, [("h", b"x")])
    builder.close()
    buf = bytes(builder.buffer())
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(buf)
    rc, out, err = run(capsys, "--files", str(path), "--print-data-log")
    assert rc == 0 and err == []
    assert out[2] == (f"baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
                      f"producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 "
                      f"isTransactional: false isControl: false position: 0 CreateTime: {TS} "
                      f"size: {len(buf)} magic: 2 compresscodec: GZIP crc: {crc32c(buf[21:])} "
                      f"isvalid: true")
    assert out[3].endswith("headerKeys: [h] key: key payload: " + "value" * 40)


def write_index(path, entries, base=100, pad=0):
    path.write_bytes(b"".join(struct.pack(">ii", off - base, pos) for off, pos in entries)
                     + b"\0" * pad)


def test_offset_index(capsys, segment):
    path, b = segment
    p = positions(b)
    index = path.with_suffix(".index")
    # Index entries map a batch's last offset to its position; the file is zero-padded.
    write_index(index, [(101, p[0]), (104, p[3])], pad=8 * 3)
    rc, out, err = run(capsys, "--files", str(index))
    assert (rc, err) == (0, [])
    assert out == [f"Dumping {index}", f"offset: 101 position: {p[0]}", f"offset: 104 position: {p[3]}"]


def test_offset_index_mismatch_and_verify_only(capsys, segment):
    path, b = segment
    p = positions(b)
    index = path.with_suffix(".index")
    write_index(index, [(101, p[0]), (103, p[3]), (105, p[5])])
    rc, out, err = run(capsys, "--files", str(index), "--verify-index-only")
    assert out == [f"Dumping {index}"]
    assert err == [f"Mismatches in :{index}", "  Index offset: 105, log offset: 106",
                   "  Index offset: 103, log offset: 104"]


def test_index_sanity_check(capsys, segment):
    path, b = segment
    index = path.with_suffix(".index")
    write_index(index, [(101, 0)])
    rc, out, err = run(capsys, "--files", str(index), "--index-sanity-check")
    assert out == [f"Dumping {index}", f"{index} passed sanity check."]
    index.write_bytes(index.read_bytes() + b"\0\0\0")
    rc, out, err = run(capsys, "--files", str(index), "--index-sanity-check")
    assert rc == 1
    assert "found 11 bytes which is neither positive nor a multiple of 8." in err[0]


def test_time_index(capsys, segment):
    path, b = segment
    p = positions(b)
    write_index(path.with_suffix(".index"), [(101, p[0]), (104, p[3])])
    timeindex = path.with_suffix(".timeindex")
    timeindex.write_bytes(struct.pack(">qi", TS + 1, 1) + struct.pack(">qi", TS + 4, 4)
                          + struct.pack(">qi", TS + 3, 5) + b"\0" * 24)
    rc, out, err = run(capsys, "--files", str(timeindex))
    assert out == [f"Dumping {timeindex}", f"timestamp: {TS + 1} offset: 101",
                   f"timestamp: {TS + 4} offset: 104", f"timestamp: {TS + 3} offset: 105"]
    assert err == [f"Found timestamp mismatch in :{timeindex}",
                   f"  Index timestamp: {TS + 3}, log timestamp: {TS + 5}",
                   f"Found out of order timestamp in :{timeindex}",
                   f"  Index timestamp: {TS + 3}, Previously indexed timestamp: {TS + 4}"]


def test_time_index_offset_not_found(capsys, segment):
    path, b = segment
    write_index(path.with_suffix(".index"), [(101, 0)])
    timeindex = path.with_suffix(".timeindex")
    timeindex.write_bytes(struct.pack(">qi", TS, 0) + struct.pack(">qi", TS + 9, 50))
    rc, out, err = run(capsys, "--files", str(timeindex), "--verify-index-only")
    assert out == [f"Dumping {timeindex}"]
    assert err == ["The following indexed offsets are not found in the log.",
                   "Indexed offset: 100, found log offset: 101",
                   "Indexed offset: 150, found log offset: -1"]


def test_txn_index_and_producer_snapshot(capsys, tmp_path):
    txn = tmp_path / "00000000000000000000.txnindex"
    txn.write_bytes(struct.pack(">hqqqq", 0, 4000, 5, 9, 10))
    entries = struct.pack(">qhiqiqiq", 4000, 2, 7, 105, 0, TS + 5, 5, -1) + \
        struct.pack(">qhiqiqiq", 4001, 0, 1, 110, 3, TS + 9, -1, 108)
    body = struct.pack(">i", 2) + entries
    snapshot = tmp_path / "00000000000000000107.snapshot"
    snapshot.write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    rc, out, err = run(capsys, "--files", f"{txn},{snapshot}")
    assert (rc, err) == (0, [])
    assert out == [
        f"Dumping {txn}",
        "version: 0 producerId: 4000 firstOffset: 5 lastOffset: 9 lastStableOffset: 10",
        f"Dumping {snapshot}",
        f"producerId: 4000 producerEpoch: 2 coordinatorEpoch: 5 currentTxnFirstOffset: None "
        f"firstSequence: 7 lastSequence: 7 lastOffset: 105 offsetDelta: 0 timestamp: {TS + 5}",
        f"producerId: 4001 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: Some(108) "
        f"firstSequence: 2147483646 lastSequence: 1 lastOffset: 110 offsetDelta: 3 timestamp: {TS + 9}",
    ]


def test_unknown_files_and_multiple_files(capsys, segment, tmp_path):
    path, _ = segment
    other = tmp_path / "notes.txt"
    other.write_text("x")
    rc, out, err = run(capsys, "--files", f"{other},{path}")
    assert out[0] == f"Dumping {other}"
    assert out[1] == f"Dumping {path}"
    assert err == [f"Ignoring unknown file {other}"]


def test_missing_files_option_is_an_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code != 0
    assert "--files" in capsys.readouterr().err


def test_shell_wrapper_runs_from_anywhere(segment, tmp_path):
    path, _ = segment
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHON"] = sys.executable
    result = subprocess.run([os.path.join(REPO, "bin", "kafka-dump-log.sh"), "--files", str(path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [f"Dumping {path}", "Starting offset: 100"]
