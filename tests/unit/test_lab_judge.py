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
    assert j.duplicated_by_partition == ((0, 1),) and j.duplicated_sample == (1,)
    assert not j.passed                 # a copy is a broker bug: the producer never resends


def test_a_redelivery_alone_still_passes():
    j = judge([acked(0, 0, 0), acked(1, 0, 1)], [read(0, 0, 0), read(1, 0, 1), read(0, 0, 0)])
    assert (j.duplicated, j.reordered, j.redelivered) == (0, 0, 1)
    assert j.passed and j.duplicated_by_partition == () and j.reordered_by_partition == ()


def test_duplicates_count_in_the_partition_holding_the_copy():
    # 3 acknowledged at 0-0; copies at 0-5 and 2-1. 7 never acknowledged, stored at 1-0 and 1-3:
    # the first place is the original.
    producer = [acked(3, 0, 0), acked(4, 2, 0)]
    consumer = [read(3, 0, 0), read(3, 0, 5), read(4, 2, 0), read(3, 2, 1), read(7, 1, 0), read(7, 1, 3)]
    j = judge(producer, consumer)
    assert j.duplicated == 3
    assert j.duplicated_by_partition == ((0, 1), (1, 1), (2, 1))
    assert j.duplicated_sample == (3, 7)


def test_a_record_stored_behind_a_later_one_is_reordered():
    consumer = [read(0, 0, 0), read(2, 0, 1), read(1, 0, 2), read(3, 0, 3), read(5, 1, 0), read(4, 1, 1)]
    j = judge([acked(v, 0, v) for v in range(4)], consumer)
    assert j.reordered == 2
    assert j.reordered_by_partition == ((0, 1), (1, 1)) and j.reordered_sample == (1, 4)
    assert not j.passed


def test_nothing_acknowledged_is_no_pass():
    assert not judge([], []).passed


def test_failed_sends_are_counted_by_exception_most_first():
    """What the producer was refused with says which fault held it (a short ISR, a dead leader)."""
    def failed(value: int, exception: str) -> dict:
        return {"name": "producer_send_error", "value": str(value), "exception": f"class {exception}", "message": ""}
    producer = [acked(0, 0, 0), failed(1, "org.apache.kafka.common.errors.NetworkException"),
                failed(2, "org.apache.kafka.common.errors.NotEnoughReplicasException"),
                failed(3, "org.apache.kafka.common.errors.NotEnoughReplicasException")]
    j = judge(producer, [read(0, 0, 0)])
    assert j.send_errors == 3
    assert j.send_errors_by_kind == (("NotEnoughReplicasException", 2), ("NetworkException", 1))
