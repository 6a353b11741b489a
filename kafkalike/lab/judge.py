"""Judging a run from the verifiable tools' JSON events alone, as Kafka's system tests do.

The producer (kafka-verifiable-producer, values 0, 1, 2, ... in send order) says which
records were acknowledged and where (producer_send_success: partition, offset). The
consumer (kafka-verifiable-consumer --verbose) says which record it read at which
partition and offset (record_data). From those two streams:

- lost: acknowledged values the consumer never read, anywhere. This is the number a
  replicated log must keep at 0 for acks=all with min.insync.replicas >= 2.
- duplicated: values stored at more than one offset (each extra copy counts once, in the
  partition that holds it; the copy at the acknowledged offset, else the first, is the
  original). The tools send without retries, so a copy is the brokers' doing.
- reordered: records that sit, in offset order within their partition, behind a record
  with a higher value, i.e. sent later yet stored earlier. The producer sends each
  partition's records in value order and never resends one, so that too is the brokers'.
- redelivered: the same offset delivered to the consumer more than once (a group
  rebalance re-reads from the last commit). At-least-once delivery allows it; it is
  reported, not judged.
- moved: acknowledged records read back at an offset other than the acknowledged one.

Duplicated and reordered records are also counted per partition, with a few of the
values concerned, so that a verdict can say where to look.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True)
class Judgement:
    acknowledged: int
    send_errors: int
    consumed: int                    # distinct (partition, offset) read
    lost: int
    duplicated: int
    reordered: int
    redelivered: int
    moved: int
    lost_sample: tuple[int, ...] = ()
    duplicated_by_partition: tuple[tuple[int, int], ...] = ()     # (partition, copies), partitions with any
    reordered_by_partition: tuple[tuple[int, int], ...] = ()      # (partition, records), partitions with any
    duplicated_sample: tuple[int, ...] = ()                       # values stored more than once
    reordered_sample: tuple[int, ...] = ()                        # values stored behind a later one
    send_errors_by_kind: tuple[tuple[str, int], ...] = ()         # (exception's simple name, sends), most first

    @property
    def passed(self) -> bool:
        """Something acknowledged, and nothing lost, duplicated or reordered."""
        return self.acknowledged > 0 and self.lost == 0 and self.duplicated == 0 and self.reordered == 0


def _value(raw: object) -> int | None:
    try:
        return int(str(raw))
    except ValueError:
        return None


def judge(producer_events: Iterable[Mapping], consumer_events: Iterable[Mapping]) -> Judgement:
    acked: dict[int, tuple[int, int]] = {}
    errors = 0
    kinds: Counter[str] = Counter()
    for event in producer_events:
        if event.get("name") == "producer_send_success":
            value = _value(event["value"])
            if value is not None:
                acked[value] = (event["partition"], event["offset"])
        elif event.get("name") == "producer_send_error":
            errors += 1
            kinds[str(event.get("exception", "unknown")).rsplit(".", 1)[-1]] += 1

    reads: Counter[tuple[int, int]] = Counter()
    at: dict[tuple[int, int], int] = {}
    for event in consumer_events:
        if event.get("name") != "record_data":
            continue
        value = _value(event["value"])
        if value is None:
            continue
        where = (event["partition"], event["offset"])
        reads[where] += 1
        at[where] = value

    offsets_of: defaultdict[int, set[tuple[int, int]]] = defaultdict(set)
    for where, value in at.items():
        offsets_of[value].add(where)
    lost = sorted(v for v in acked if v not in offsets_of)
    moved = sum(1 for v, where in acked.items() if v in offsets_of and where not in offsets_of[v])

    copies: Counter[int] = Counter()            # partition -> extra copies stored there
    copied: list[int] = []
    for value, places in offsets_of.items():
        if len(places) < 2:
            continue
        original = acked[value] if acked.get(value) in places else min(places)
        for partition, _ in places - {original}:
            copies[partition] += 1
        copied.append(value)

    behind: Counter[int] = Counter()            # partition -> records stored behind a later one
    out_of_order: list[int] = []
    by_partition: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
    for (partition, offset), value in at.items():
        by_partition[partition].append((offset, value))
    for partition, records in by_partition.items():
        highest = -1
        for _, value in sorted(records):
            if value < highest:
                behind[partition] += 1
                out_of_order.append(value)
            highest = max(highest, value)

    return Judgement(
        acknowledged=len(acked), send_errors=errors, consumed=len(at), lost=len(lost),
        duplicated=sum(copies.values()), reordered=sum(behind.values()),
        redelivered=sum(n - 1 for n in reads.values()), moved=moved, lost_sample=tuple(lost[:10]),
        duplicated_by_partition=tuple(sorted(copies.items())), reordered_by_partition=tuple(sorted(behind.items())),
        duplicated_sample=tuple(sorted(copied)[:10]), reordered_sample=tuple(sorted(out_of_order)[:10]),
        send_errors_by_kind=tuple(kinds.most_common()))
