"""The idempotent producer's numbering through the accumulator: drained once, retried in order."""
from __future__ import annotations

from kafkalike.client.idempotence import IdempotenceManager
from kafkalike.client.metadata import TopicPartition
from kafkalike.records.header import read_header
from tests.unit.test_client_accumulator import T0, accumulator, append, cluster

TP = TopicPartition("t", 0)


def setup():
    acc = accumulator(batch_size=200)
    manager = IdempotenceManager()
    acc.idempotence = manager
    return acc, manager


def drain_one(acc, now=T0):
    out = acc.drain(cluster(), {0}, 1 << 20, now)
    return out.get(0, [None])[0]


def fill(acc, batches: int) -> None:
    for _ in range(batches * 8):              # 8 records of ~24 bytes fill a 200-byte batch
        append(acc, TP, value=b"x" * 10)


def test_nothing_is_drained_before_the_producer_id_arrives():
    acc, manager = setup()
    fill(acc, 1)
    assert not acc.ready(cluster(), T0).nodes and drain_one(acc) is None
    manager.set_producer_id(4000, 0)
    batch = drain_one(acc)
    header = read_header(batch.build())
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 0, 0)


def test_sequences_follow_record_counts_and_retries_go_back_in_sequence_order():
    acc, manager = setup()
    manager.set_producer_id(7, 0)
    fill(acc, 4)
    first, second, third = drain_one(acc), drain_one(acc), drain_one(acc)
    assert [b.base_sequence for b in (first, second, third)] == [0, first.count, first.count + second.count]
    # All three fail (say the leader died): the answers may come back in any order.
    acc.reenqueue(third, T0)
    acc.reenqueue(first, T0)
    acc.reenqueue(second, T0)
    later = T0 + 10
    retried = [drain_one(acc, later) for _ in range(3)]
    assert retried[0] is first and retried[1] is None  # the next retry waits for the first's answer
    manager.completed(first, succeeded=True)
    assert drain_one(acc, later) is second
    manager.completed(second, succeeded=True)
    assert drain_one(acc, later) is third
    manager.completed(third, succeeded=True)
    fourth = drain_one(acc, later)
    assert fourth.base_sequence == third.base_sequence + third.count


def test_a_batch_that_fails_for_good_makes_the_producer_ask_for_a_new_id_once_the_rest_is_answered():
    acc, manager = setup()
    manager.set_producer_id(7, 0)
    fill(acc, 3)
    first, second = drain_one(acc), drain_one(acc)
    manager.completed(first, succeeded=False)
    assert not manager.needs_producer_id()        # `second` of the old id is still unanswered
    assert drain_one(acc) is None                 # and nothing new goes out meanwhile
    manager.completed(second, succeeded=False)
    assert manager.needs_producer_id()
    manager.set_producer_id(8, 0)
    third = drain_one(acc)
    assert (third.producer_id, third.base_sequence) == (8, 0)
