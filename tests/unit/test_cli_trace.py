"""kafkalike-trace's step ordering (`settle`): a probe sees a broker step when it next asks,
so the tool puts each broker step at the earliest evidence that it had happened, and names
that evidence. The rules: an acks=all answer comes only after the high watermark passed
the record; an in-sync follower has it before the high watermark passes it; the leader
has it before any follower, the high watermark, or an acks=1/all answer. A failed record
or acks=0 gives no such evidence. Synthetic journeys, no cluster."""
from __future__ import annotations

import io
from types import SimpleNamespace

from kafkalike.cli.trace import Journey, PartitionView, render, settle

LEADER, IN_SYNC, OUT_OF_SYNC = 1, 2, 3
VIEW = PartitionView(leader=LEADER, replicas=[LEADER, IN_SYNC, OUT_OF_SYNC], isr=[LEADER, IN_SYNC])


def journey(offset: int | None = 7, **seen: float | tuple[float, str]) -> Journey:
    """Steps as the tracer and the probes stamped them: key=at or key=(at, detail)."""
    j = Journey(offset=offset)
    for key, value in seen.items():
        key = key.replace("_", "-")
        at, detail = value if isinstance(value, tuple) else (value, "")
        j.mark(key, key, at, detail)
    return j


def placed(j: Journey, key: str) -> tuple[float | None, str]:
    step = j.steps[key]
    return step.at, step.detail


def test_acks_all_late_probes_are_moved_to_the_earliest_evidence():
    j = journey(request=1.0, response=(9.0, "from broker 1"), ack=(9.1, "offset 7"),
                hw=(12.0, "high watermark 8 on broker 1"), follower_2=11.0, leader=20.0)
    settle(j, VIEW, "-1")
    # The answer to acks=all proves the high watermark had passed the record.
    assert placed(j, "hw") == (9.0, "high watermark 8 on broker 1 (seen by the acks=all answer)")
    # An in-sync follower had it before the high watermark passed it.
    assert placed(j, "follower-2") == (9.0, "its log end passed 7 (seen by the high watermark: it is in the ISR)")
    # A follower out of the ISR and never seen stays unseen.
    assert placed(j, "follower-3") == (None, "not seen")
    # The leader had it before any of them.
    at, detail = placed(j, "leader")
    assert at == 9.0 and detail.startswith("offset 7 (seen by ")
    assert j.steps["leader"].name == "leader append (broker 1)"


def test_the_earliest_evidence_wins_and_is_named():
    j = journey(response=(9.0, ""), ack=(9.1, "offset 7"), hw=(8.0, "high watermark 8 on broker 1"),
                follower_2=7.5, leader=10.0)
    settle(j, VIEW, "-1")
    assert placed(j, "hw") == (8.0, "high watermark 8 on broker 1 (seen by a probe)")
    assert placed(j, "follower-2") == (7.5, "its log end passed 7 (seen by a probe)")
    assert placed(j, "leader") == (7.5, "offset 7 (seen by follower has it (broker 2))")


def test_acks_1_the_answer_proves_the_append_but_not_the_high_watermark():
    j = journey(response=(5.0, "from broker 1"), ack=(5.1, "offset 7"), hw=(6.0, "high watermark 8 on broker 1"),
                follower_2=6.5)
    settle(j, VIEW, "1")
    assert placed(j, "leader") == (5.0, "offset 7 (seen by the Produce answer)")
    assert placed(j, "hw") == (6.0, "high watermark 8 on broker 1 (seen by a probe)")
    # The high watermark is evidence for the in-sync follower, and earlier than its probe.
    assert placed(j, "follower-2") == (6.0, "its log end passed 7 (seen by the high watermark: it is in the ISR)")
    assert placed(j, "follower-3") == (None, "not seen")


def test_acks_1_without_a_high_watermark_seen_gives_followers_no_evidence():
    j = journey(response=(5.0, ""), ack=(5.1, "offset 7"))
    settle(j, VIEW, "1")
    assert placed(j, "hw") == (None, "not seen")
    assert placed(j, "follower-2") == (None, "not seen")
    assert placed(j, "leader") == (5.0, "offset 7 (seen by the Produce answer)")


def test_a_refused_record_is_evidence_of_nothing():
    """acks=all below min.insync.replicas: answers came (NOT_ENOUGH_REPLICAS), the record failed."""
    j = journey(offset=None, response=(4.0, "from broker 1, correlation id 4: NOT_ENOUGH_REPLICAS"),
                ack=(10002.0, "failed: KafkaTimeoutError: Expiring 1 record(s)"))
    settle(j, VIEW, "-1")
    for key in ("leader", "hw", "follower-2", "follower-3"):
        assert placed(j, key) == (None, "not seen"), key


def test_acks_0_has_no_answer_to_use():
    j = journey(response=(2.9, "acks=0: no answer; done once written to the socket"),
                ack=(2.91, "acks=0: no offset"), leader=4.2)
    settle(j, VIEW, "0")
    assert placed(j, "leader") == (4.2, "offset 7 (seen by a probe)")
    assert placed(j, "hw") == (None, "not seen")


def test_steps_are_printed_in_the_order_they_happened_and_unseen_ones_last():
    j = journey(send=0.0, request=1.0, response=(9.0, "from broker 1"), ack=(9.1, "offset 7"),
                hw=(8.0, "high watermark 8 on broker 1"), follower_2=7.5, leader=10.0)
    settle(j, VIEW, "-1")
    out = io.StringIO()
    render(j, SimpleNamespace(topic="t", acks="all", linger_ms=0), 0, VIEW, out)
    names = [line[2:42].strip() for line in out.getvalue().splitlines()[2:-1]]
    assert names == ["send", "request", "leader append (broker 1)", "follower has it (broker 2)",
                     "high watermark covers it", "response", "ack", "follower has it (broker 3)"]
    assert out.getvalue().startswith("Journey of one record to t-0 at offset 7 (acks=all, linger.ms=0; "
                                     "leader 1, replicas 1,2,3, isr 1,2)\n")
