"""The controller mutation quota (KIP-599): Kafka 2.8's ControllerMutationQuotaManager.

controller_mutation_rate (kafka-configs --entity-type users/clients, the same entities and
precedence as the other client quotas) caps how many partitions a client may create or
delete per second through CreateTopics, CreatePartitions and DeleteTopics, so one script
cannot bury the controller. It is a token bucket: it holds up to (controller.quota.window.num
- 1) x controller.quota.window.size.seconds x rate tokens, refills at the rate, and each
topic takes one token per partition it creates or deletes.

A request new enough to know the error (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
v5+) is held to it strictly: once the bucket is below zero, each further topic is refused
with THROTTLING_QUOTA_EXCEEDED, and the answer's throttle_time_ms says how long until it is
back at zero (-tokens / rate). A topic may take the bucket below zero, so one large topic is
never refused for ever. Older requests are permissive: every topic passes, and only the
throttle time is told. Either way the listener then reads nothing more from the connection
for that long, as for the other quotas (KIP-219).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

from kafkalike.broker.client_quotas import ClientQuotaManager, _Sensor
from kafkalike.metrics.core import Kind, MetricName, Reading

if TYPE_CHECKING:
    from kafkalike.broker.registry import RequestContext

CONTROLLER_MUTATION = "ControllerMutation"
CONTROLLER_MUTATION_KEY = "controller_mutation_rate"
# The request versions from which the quota is strict (KafkaApis' strictSinceVersion).
STRICT_SINCE = {19: 6, 37: 3, 20: 5}


class TokenBucket:
    """Kafka's TokenBucket stat: tokens refill at `bound` per second up to a burst of
    (samples - 1) windows' worth; recording takes tokens, possibly below zero."""

    __slots__ = ("samples", "window_ms", "tokens", "updated_ms")

    def __init__(self, samples: int, window_ms: float) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self.tokens: float | None = None      # full on first use, as Kafka's starts from time 0
        self.updated_ms = 0.0

    def measure(self, bound: float, now_ms: float) -> float:
        burst = (self.samples - 1) * self.window_ms / 1000.0 * bound
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + bound * (now_ms - self.updated_ms) / 1000.0)
        self.updated_ms = now_ms
        return self.tokens

    def record(self, value: float, bound: float, now_ms: float) -> float:
        self.tokens = self.measure(bound, now_ms) - value
        return self.tokens


class ControllerMutationQuotaManager(ClientQuotaManager):
    """The client quota manager of the ControllerMutation type, with a token bucket per entity
    next to its mutation-rate."""

    def __init__(self, samples: int, window_s: int, clock: Callable[[], float]) -> None:
        super().__init__(CONTROLLER_MUTATION, samples, window_s, clock=clock)
        self._buckets: dict[tuple[str, str], TokenBucket] = {}

    def bucket(self, sensor: _Sensor) -> TokenBucket:
        found = self._buckets.get(sensor.tags)
        if found is None:
            found = self._buckets[sensor.tags] = TokenBucket(self.samples, self.window_ms)
        return found

    def expire(self) -> None:
        super().expire()
        for tags in [t for t in self._buckets if t not in self._sensors]:
            del self._buckets[tags]

    def readings(self, rate_name: str = "mutation-rate") -> Iterator[Reading]:
        """kafka.server:type=ControllerMutation, tokens and mutation-rate per entity."""
        yield from super().readings(rate_name)
        now_ms = self.clock() * 1000.0
        for (user, client), s in list(self._sensors.items()):
            if s.bound is None:
                continue
            tags = (("resource", self.quota_type), ("user", user), ("clientId", client))
            yield Reading(MetricName("kafka.server", "quota", "tokens", tags), Kind.GAUGE,
                          self.bucket(s).measure(s.bound, now_ms))


class MutationQuota:
    """One request's quota (Kafka's Strict- or PermissiveControllerMutationQuota): the
    handler asks it before each topic's change, and the answer carries its throttle time."""

    def __init__(self, manager: ControllerMutationQuotaManager, ctx: RequestContext, user: str) -> None:
        self.manager = manager
        self.sensor = manager.sensor(user, ctx.client_id or "")
        self.strict = ctx.version >= STRICT_SINCE[ctx.api_key]
        self._throttle_ms = 0
        self._at_ms = 0.0

    def admit(self, partitions: int) -> bool:
        """Take `partitions` tokens; False (nothing taken) if strict and the bucket is
        already below zero."""
        bound = self.sensor.bound
        now_ms = self.manager.clock() * 1000.0
        if bound is None:
            return True
        bucket = self.manager.bucket(self.sensor)
        if self.strict:
            tokens = bucket.measure(bound, now_ms)
            if tokens < 0:
                self._throttled(tokens, bound, now_ms)
                return False
        self.sensor.rate.record(partitions, now_ms)
        tokens = bucket.record(partitions, bound, now_ms)
        if not self.strict and tokens < 0:
            self._throttled(tokens, bound, now_ms)
        return True

    def _throttled(self, tokens: float, bound: float, now_ms: float) -> None:
        self._throttle_ms = round(-tokens / bound * 1000.0)
        self._at_ms = now_ms

    def throttle_ms(self) -> int:
        """The throttle time, less what has passed since it was taken (the request may
        have waited for the controller since)."""
        if not self._throttle_ms:
            return 0
        return max(0, int(self._throttle_ms - (self.manager.clock() * 1000.0 - self._at_ms)))
