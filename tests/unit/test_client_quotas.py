"""Client quota arithmetic as Kafka 2.8's ClientQuotaManager does it: the entity a client is
charged to (DefaultQuotaCallback's precedence), the sampled rate, QuotaUtils.throttleTime and
the request quota's cap, on a clock the test moves."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalike.broker.client_quotas import (
    DEFAULT_ENTITY, ClientQuotaManager, ClientQuotas, QuotaRate, QuotaSettings,
)
from kafkalike.protocol.messages.produce import ProduceResponse

D = DEFAULT_ENTITY


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_counts_at_least_all_but_one_window():
    rate = QuotaRate(11, 1000)
    rate.record(10_000, 0)
    assert rate.window_size_ms(0) == 10_000          # ten windows, though nothing has elapsed
    assert rate.measure(0) == pytest.approx(1000)
    rate.record(10_000, 12_500)                        # the first sample expired (11 windows)
    assert rate.measure(12_500) == pytest.approx(10_000 / 10)
    rate.record(5_000, 13_000)                         # same window: no new sample yet
    assert rate.measure(13_000) == pytest.approx(15_000 / 10.5)


def test_precedence_of_quota_entities():
    m = ClientQuotaManager("Produce", 11, 1)
    m.update((None, D), 100)
    assert m.limit(m.metric_tags("alice", "app")) == 100              # /config/clients/<default>
    m.update((None, "app"), 200)
    assert m.limit(m.metric_tags("alice", "app")) == 200              # /config/clients/app
    m.update((D, None), 300)
    assert m.metric_tags("alice", "app") == ("alice", "")
    assert m.limit(m.metric_tags("alice", "app")) == 300              # /config/users/<default>
    m.update((D, D), 400)
    assert m.limit(m.metric_tags("alice", "app")) == 400              # users/<default>/clients/<default>
    m.update((D, "app"), 500)
    assert m.limit(m.metric_tags("alice", "app")) == 500              # users/<default>/clients/app
    m.update(("alice", None), 600)
    assert m.metric_tags("alice", "app") == ("alice", "")
    assert m.limit(m.metric_tags("alice", "app")) == 600              # users/alice
    m.update(("alice", D), 700)
    assert m.limit(m.metric_tags("alice", "app")) == 700              # users/alice/clients/<default>
    m.update(("alice", "app"), 800)
    assert m.limit(m.metric_tags("alice", "app")) == 800              # users/alice/clients/app
    assert m.limit(m.metric_tags("bob", "app")) == 500
    m.update(("alice", "app"), None)
    assert m.limit(m.metric_tags("alice", "app")) == 700


def test_one_entity_is_one_sensor_for_all_its_clients():
    m = ClientQuotaManager("Produce", 11, 1, clock=Clock())
    m.update(("alice", None), 1000)
    assert m.sensor("alice", "a") is m.sensor("alice", "b")
    m.update((None, D), 1000)                  # per client id: one each
    assert m.sensor("bob", "a") is not m.sensor("bob", "b")


def test_throttle_time_is_kafkas_and_nothing_is_recorded_without_quotas():
    clock = Clock()
    m = ClientQuotaManager("Produce", 11, 1, clock=clock)
    assert not m.enabled and m.record("u", "c", 10**9) == 0
    m.update((None, "c"), 1000)
    assert m.record("u", "c", 10_000) == 0                 # 1000 B/s over ten windows: at the bound
    # 20000 bytes over 10 s is 2000 B/s: (2000 - 1000) / 1000 x 10 s
    assert m.record("u", "c", 10_000) == 10_000
    assert m.record("u", "other", 10**6) == 0              # another client id has no quota
    clock.now += 12
    assert m.record("u", "c", 1) == 0


def test_request_time_is_capped_at_one_window_and_fetches_are_bounded_per_window():
    clock = Clock()
    quotas = ClientQuotas(QuotaSettings(samples=3, window_s=2), clock=clock)
    quotas.apply((None, "c"), {"request_percentage": "10.0", "consumer_byte_rate": "500"})
    ctx = SimpleNamespace(principal="User:ANONYMOUS", client_id="c", api_key=3, throttle_ms=0, throttled_by=None)
    assert quotas.on_response(ctx, object(), 5.0) == 2000      # window size, not (500 - 10) / 10 x 4 s
    assert quotas.fetch_max_bytes(ctx) == 500 * 2 * 2
    fetch = SimpleNamespace(principal="User:ANONYMOUS", client_id="c", api_key=1, throttle_ms=0, throttled_by=None)
    assert quotas.record_fetch(fetch, 4000) > 0
    quotas.unrecord_fetch(fetch, 4000)
    assert quotas.fetch.sensor("ANONYMOUS", "c").rate.measure(clock() * 1000) == 0


def test_the_answer_carries_the_larger_throttle_and_the_sensor_counts_it():
    clock = Clock()
    quotas = ClientQuotas(QuotaSettings(samples=11, window_s=1), clock=clock)
    quotas.apply(("alice", None), {"producer_byte_rate": "1000"})
    ctx = SimpleNamespace(principal="User:alice", client_id="x", api_key=0, throttle_ms=0, throttled_by=None)
    quotas.record_produce(ctx, 20_000)
    response = ProduceResponse(responses=[])
    assert quotas.on_response(ctx, response, 0.001) == 10_000
    assert response.throttle_time_ms == 10_000
    readings = {(dict(r.name.tags)["resource"], r.name.name): r.value for r in quotas.readings()
                if dict(r.name.tags)["user"] == "alice"}
    assert readings[("Produce", "throttle-time")] == 10_000
    assert readings[("Produce", "byte-rate")] == pytest.approx(2000)
    bob = SimpleNamespace(principal="User:bob", client_id="x", api_key=0, throttle_ms=0, throttled_by=None)
    quotas.record_produce(bob, 20_000)
    assert quotas.on_response(bob, ProduceResponse(responses=[]), 0.001) == 0


class FakeZk:
    """The /config znodes as kafka-configs writes them (names sanitized)."""

    def __init__(self, znodes: dict[str, dict[str, str]]):
        self.znodes = znodes

    async def get_entity_names(self, path: str) -> list[str]:
        prefix = path + "/"
        return sorted({k[len(prefix):].split("/")[0] for k in self.znodes if k.startswith(prefix)})

    async def get_entity_configs(self, entity_type: str, name: str) -> dict[str, str]:
        return self.znodes.get(f"{entity_type}/{name}", {})


def test_start_up_load_and_change_notifications_follow_zookeeper():
    import asyncio
    zk = FakeZk({"clients/my%2Fapp": {"producer_byte_rate": "1024"},
                 "users/<default>": {"consumer_byte_rate": "2048"},
                 "users/alice/clients/<default>": {"request_percentage": "12.5"},
                 "users/alice": {"SCRAM-SHA-256": "salt=...", "producer_byte_rate": "4096"}})
    quotas = ClientQuotas()
    asyncio.run(quotas.load(zk))
    assert quotas.produce.overrides == {(None, "my/app"): 1024.0, ("alice", None): 4096.0}
    assert quotas.fetch.overrides == {(D, None): 2048.0}
    assert quotas.request.overrides == {("alice", D): 12.5}
    # kafka-configs --delete-config producer_byte_rate, then the notification for users/alice
    zk.znodes["users/alice"] = {"SCRAM-SHA-256": "salt=..."}
    asyncio.run(quotas.reload_user(zk, "alice"))
    assert quotas.produce.overrides == {(None, "my/app"): 1024.0}
    del zk.znodes["clients/my%2Fapp"]
    asyncio.run(quotas.reload_client(zk, "my%2Fapp"))
    assert quotas.produce.overrides == {} and quotas.produce.enabled     # enabled until restart, as Kafka


def test_writing_time_is_charged_without_a_throttle_and_counts_next_time():
    clock = Clock()
    quotas = ClientQuotas(QuotaSettings(samples=2, window_s=1), clock=clock)
    quotas.apply((None, "c"), {"request_percentage": "50"})

    def ctx(api_key=3):
        return SimpleNamespace(principal="User:ANONYMOUS", client_id="c", api_key=api_key, throttle_ms=0,
                               throttled_by=None)
    quotas.on_sent(ctx(), object(), 0.6)                 # 60 % of a second: over, but not checked
    quotas.on_sent(ctx(api_key=4), object(), 5.0)        # LeaderAndIsr: the cluster's own, exempt
    assert quotas.request.sensor("ANONYMOUS", "c").rate.measure(clock() * 1000) == pytest.approx(60)
    assert quotas.on_response(ctx(), object(), 0.0) == 200   # (60 - 50) / 50 x 1 s
