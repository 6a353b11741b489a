"""kafkalike.lab.judge: lost, duplicated, reordered counted from the verifiable tools' events."""
from __future__ import annotations

from kafkalike.lab.judge import judge


def acked(value: int, partition: int, offset: int) -> dict:
    return {"name": "producer_send_success", "value": str(value), "partition": partition, "offset": offset,
            "key": None, "topic": "t"}


def read(value: int, partition: int, offset: int) -> dict:
    return {"name": "record_data", "value": str(value), "partition": partition, "offset": offset,
            "key": None, "topic": "t"}


def test_everything_acknowledged_read_back_once_passes():
    producer = [acked(0, 0, 0), acked(1, 1, 0), acked(2, 0, 1),
                {"name": "producer_send_error", "value": "3", "exception": "x", "message": "y"}]
    consumer = [{"name": "startup_complete"}, read(0, 0, 0), read(1, 1, 0), read(2, 0, 1)]
    j = judge(producer, consumer)
    assert (j.acknowledged, j.send_errors, j.consumed, j.lost, j.duplicated, j.reordered) == (3, 1, 3, 0, 0, 0)
    assert j.passed


def test_an_acknowledged_record_never_read_is_lost():
    j = judge([acked(0, 0, 0), acked(1, 0, 1), acked(2, 0, 2)], [read(0, 0, 0), read(2, 0, 1)])
    assert (j.lost, j.lost_sample, j.moved) == (1, (1,), 1)   # 2 came back at another offset
    assert not j.passed


def test_copies_at_other_offsets_are_duplicates_and_rereads_are_redeliveries():
    producer = [acked(0, 0, 0), acked(1, 0, 1)]
    consumer = [read(0, 0, 0), read(1, 0, 1), read(1, 0, 2), read(0, 0, 0)]
    j = judge(producer, consumer)
    assert (j.duplicated, j.redelivered, j.consumed, j.lost) == (1, 1, 3, 0)
    assert j.passed


def test_a_record_stored_behind_a_later_one_is_reordered():
    consumer = [read(0, 0, 0), read(2, 0, 1), read(1, 0, 2), read(3, 0, 3), read(5, 1, 0), read(4, 1, 1)]
    j = judge([acked(v, 0, v) for v in range(4)], consumer)
    assert j.reordered == 2


def test_nothing_acknowledged_is_no_pass():
    assert not judge([], []).passed
