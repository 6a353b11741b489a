"""The controller mutation quota (KIP-599): a token bucket per quota entity; new requests are
refused topic by topic once it is below zero, old ones only told to wait."""
from __future__ import annotations

from types import SimpleNamespace

from kafkalike.broker.client_quotas import ClientQuotas
from kafkalike.broker.controller_mutation_quota import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def request(api_key: int, version: int, client_id: str = "script"):
    return SimpleNamespace(api_key=api_key, version=version, client_id=client_id, principal="User:ANONYMOUS",
                           throttle_ms=0, throttled_by=None)


def quotas_with(rate: str, clock: Clock) -> ClientQuotas:
    quotas = ClientQuotas(clock=clock)
    quotas.apply((None, "script"), {"controller_mutation_rate": rate})
    return quotas


def test_the_bucket_starts_full_refills_at_the_rate_and_may_go_below_zero():
    bucket = TokenBucket(samples=11, window_ms=1000)
    assert bucket.measure(2.0, 0) == 20.0                 # (11 - 1) windows x 2/s
    assert bucket.record(25, 2.0, 0) == -5.0
    assert bucket.measure(2.0, 1500) == -2.0             # 1.5 s refills 3
    assert bucket.measure(2.0, 60_000) == 20.0           # never above the burst


def test_a_new_request_is_refused_topic_by_topic_once_the_bucket_is_empty():
    clock = Clock()
    quotas = quotas_with("2", clock)
    ctx = request(api_key=19, version=6)                  # CreateTopics v6: strict
    quota = quotas.mutation_quota(ctx)
    assert quota.admit(15) and quota.admit(10)            # 20 tokens: the second takes it to -5
    assert not quota.admit(1)                             # below zero: refused, nothing taken
    assert quota.throttle_ms() == 2500                    # -(-5) / 2 per second
    clock.now += 1.0
    assert quota.throttle_ms() == 1500                    # the time it waited counts
    quotas.throttle_mutations(ctx, quota)
    assert ctx.throttle_ms == 1500 and ctx.throttled_by is quotas.controller_mutation
    clock.now += 1.5
    assert quotas.mutation_quota(request(19, 6)).admit(1)   # back at zero: allowed again


def test_an_old_request_passes_and_is_only_told_to_wait():
    clock = Clock()
    quotas = quotas_with("2", clock)
    quota = quotas.mutation_quota(request(api_key=20, version=4))      # DeleteTopics v4: permissive
    assert quota.admit(30) and quota.admit(30)
    assert quota.throttle_ms() == 20_000                  # -40 tokens at 2/s


def test_other_clients_and_no_quota_cost_nothing():
    clock = Clock()
    quotas = ClientQuotas(clock=clock)
    assert quotas.mutation_quota(request(19, 6)) is None        # no such quota since start-up
    quotas.apply((None, "script"), {"controller_mutation_rate": "1.5"})
    other = quotas.mutation_quota(request(37, 3, client_id="someone-else"))   # CreatePartitions v3
    assert all(other.admit(100) for _ in range(5)) and other.throttle_ms() == 0
    assert quotas.controller_mutation.overrides == {(None, "script"): 1.5}
