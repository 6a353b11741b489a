"""kafka-replica-verification's comparison of one round, on batches built here."""
from __future__ import annotations

import io
from dataclasses import dataclass

from kafkalike.cli.replica_verification import Verifier, whole_batches
from kafkalike.client.metadata import TopicPartition
from kafkalike.records.batch import encode_batch

TP = TopicPartition("t", 0)


@dataclass
class Answer:
    record_set: bytes
    high_watermark: int


def log(*values: bytes, base: int = 0) -> bytes:
    out, offset = b"", base
    for value in values:
        out += encode_batch([(None, value, [], 1000)], base_offset=offset)
        offset += 1
    return out


def verifier(out: io.StringIO) -> Verifier:
    return Verifier({TP: [0, 1]}, {TP: 0}, report_interval_s=-1, out=out)


def test_equal_replicas_advance_to_the_high_watermark_and_report_the_lag():
    out = io.StringIO()
    v = verifier(out)
    data = log(b"a", b"b", b"c")
    assert v.verify({TP: {0: Answer(data, 2), 1: Answer(data, 3)}})
    assert v.offsets[TP] == 2          # verified up to the lower high watermark
    assert out.getvalue().endswith(": max lag is 1 for partition t-0 at offset 2 among 1 partitions\n")


def test_a_different_checksum_is_reported_and_verification_goes_on():
    out = io.StringIO()
    v = verifier(out)
    assert v.verify({TP: {0: Answer(log(b"a", b"b"), 2), 1: Answer(log(b"a", b"X"), 2)}})
    assert ": partition t-0 has unmatched checksum at offset 1; replica 0's checksum " in out.getvalue()
    assert v.offsets[TP] == 2


def test_a_different_offset_stops_the_tool():
    out = io.StringIO()
    v = verifier(out)
    assert not v.verify({TP: {0: Answer(log(b"a"), 5), 1: Answer(log(b"a", base=3), 5)}})
    assert out.getvalue().endswith(": partition t-0: replica 0's offset 0 doesn't match replica 1's offset 3\n")


def test_a_fetch_ending_mid_batch_keeps_the_whole_ones():
    data = log(b"a", b"b")
    assert [b[0] for b in whole_batches(data[:-5])] == [0]
    assert whole_batches(None) == []
