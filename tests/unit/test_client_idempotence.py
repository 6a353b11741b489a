"""The idempotent producer's numbering through the accumulator: drained once, retried in order."""
from __future__ import annotations

from kafkalike.client.idempotence import IdempotenceManager
from kafkalike.client.metadata import TopicPartition
from kafkalike.records.header import compute_crc, read_header
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


def test_a_batch_that_fails_for_good_bumps_the_epoch_and_renumbers_its_partition_from_zero():
    acc, manager = setup()
    manager.set_producer_id(7, 0)
    fill(acc, 4)
    first, second, third = drain_one(acc), drain_one(acc), drain_one(acc)
    second.build()  # already on the wire
    manager.completed(first, succeeded=False)      # say MESSAGE_TOO_LARGE: never written
    assert (manager.producer_id, manager.producer_epoch) == (7, 1)
    assert [(b.producer_epoch, b.base_sequence, b.resequenced) for b in (second, third)] == [
        (1, 0, True), (1, second.count, True)]
    data = second.build()                         # the bytes follow, checksum included
    header = read_header(data)
    assert (header.producer_epoch, header.base_sequence) == (1, 0) and header.crc == compute_crc(data, 0, len(data))
    manager.completed(second, succeeded=True)
    manager.completed(third, succeeded=True)
    fourth = drain_one(acc)
    assert (fourth.producer_epoch, fourth.base_sequence) == (1, second.count + third.count)
    assert not manager.needs_producer_id()


def test_other_partitions_move_to_the_new_epoch_once_their_old_batches_are_done():
    acc, manager = setup()
    manager.set_producer_id(7, 0)
    other = TopicPartition("t", 1)
    for _ in range(16):
        append(acc, other, value=b"x" * 10)
    fill(acc, 1)
    drained = acc.drain(cluster(), {0, 1}, 1 << 20, T0)
    mine, theirs = drained[0][0], drained[1][0]   # t-0 is led by node 0, t-1 by node 1
    manager.completed(mine, succeeded=False)
    assert acc.drain(cluster(), {1}, 1 << 20, T0) == {}  # t-1's old-epoch batch is still unanswered
    manager.completed(theirs, succeeded=True)
    nxt = acc.drain(cluster(), {1}, 1 << 20, T0)[1][0]
    assert (nxt.tp, nxt.producer_epoch, nxt.base_sequence) == (other, 1, 0)


def test_the_pieces_of_a_split_batch_keep_its_sequence_range():
    acc, manager = setup()
    manager.set_producer_id(7, 0)
    fill(acc, 2)
    first = drain_one(acc)
    drain_one(acc)
    pieces = acc.split_and_reenqueue(first, T0)
    manager.replace(first, pieces)
    assert [p.base_sequence for p in pieces] == [sum(p.count for p in pieces[:i]) for i in range(len(pieces))]
    assert sum(p.count for p in pieces) == first.count and manager.is_first_unacked(pieces[0])
    assert drain_one(acc, T0 + 10) is pieces[0]
