"""The replication throttle's rate and replica lists, on a fake clock."""
from __future__ import annotations

from kafkalike.broker.replication_quota import UNLIMITED, Rate, ReplicationQuota, throttled_partitions


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_counts_at_least_all_windows_but_one():
    clock = Clock()
    rate = Rate(windows=3, window_s=1.0, clock=clock)
    rate.record(1000)
    assert rate.measure() == 500.0            # 1000 bytes over the 2 s minimum
    clock.now += 5
    rate.record(600)
    assert rate.measure() == 300.0            # the old window has expired


def test_throttled_partitions_are_those_listed_for_this_broker():
    assert throttled_partitions(("0:1", "0:2", "3:1"), 1) == {0, 3}
    assert throttled_partitions(("0:2",), 1) == set()
    assert throttled_partitions(("*",), 1) is None


def test_quota_is_exceeded_only_past_its_limit_and_for_listed_replicas():
    clock = Clock()
    limits = {"rate": 100}
    quota = ReplicationQuota(1, lambda: limits["rate"], lambda t: ("0:1",) if t == "moving" else (),
                             Rate(2, 1.0, clock))
    assert quota.is_throttled("moving", 0) and not quota.is_throttled("moving", 1)
    assert not quota.is_throttled("other", 0)
    quota.record(100)
    assert not quota.is_exceeded()            # 100 B/s is the limit, not over it
    quota.record(1)
    assert quota.is_exceeded()
    limits["rate"] = UNLIMITED                # the throttle removed: read at the next check
    assert not quota.is_exceeded()
