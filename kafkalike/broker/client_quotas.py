"""Client quotas enforced (KIP-13, KIP-55, KIP-124, KIP-219): Kafka 2.8's ClientQuotaManager
for Produce and Fetch bytes and its ClientRequestQuotaManager for handler time.

What an operator sets with kafka-configs.sh (/config/users/<user>, /config/clients/<client-id>,
/config/users/<user>/clients/<client-id> and their <default> entities; admin_quotas.py writes
them) is kept here in memory: read at start-up, refreshed by the users/ and clients/ config
change notifications. A request is charged to one *quota entity*, found with Kafka's
precedence (DefaultQuotaCallback): user and client id, user and default client, user,
default user and client id, default user and default client, default user, client id,
default client, then the static quota.producer.default / quota.consumer.default. The user is
the request's principal name (ANONYMOUS on PLAINTEXT), sanitized as in the znode names.

Each entity has a rate measured as Kafka's Rate sensor measures it: quota.window.num
samples of quota.window.size.seconds, each sample opened by the first value recorded after
the previous one closed, the elapsed time counted as at least all but one window. A value
is recorded first and then checked, so the request that crosses the bound passes and its
answer says how long to wait: QuotaUtils.throttleTime, (rate - bound) / bound x window,
the time without traffic that brings the rate back to the bound. Request time is capped at
one window (ClientRequestQuotaManager's bound), bytes are not. KIP-219: the answer goes out
at once with throttle_time_ms set, and the listener then reads nothing more from that
connection for that long (network.py, through RequestContext.throttle_ms).

Like Kafka, nothing is recorded for a quota type until some quota of that type has been set
on this broker since it started (quotasEnabled); the hot path then costs a dict lookup.
"""
from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

from kafkalike.broker.admin_quotas import DEFAULT_ENTITY, desanitize, sanitize
from kafkalike.metrics.core import Kind, MetricName, Reading
from kafkalike.zkdata.znodes import ConfigType

if TYPE_CHECKING:
    from kafkalike.broker.registry import RequestContext
    from kafkalike.zkdata import KafkaZkClient

log = logging.getLogger("kafka.server.ClientQuotaManager")

PRODUCE, FETCH, REQUEST = "Produce", "Fetch", "Request"
PRODUCE_KEY, FETCH_KEY, REQUEST_KEY = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
NANOS_PER_SECOND = 1_000_000_000
# Requests the broker's own cluster exempts from the request quota (Kafka's ApiKeys with
# clusterAction: LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
# WriteTxnMarkers, AlterIsr, Envelope); with no authorizer every principal may send them.
CLUSTER_ACTIONS = frozenset({4, 5, 6, 7, 27, 56, 58})
SASL_APIS = frozenset({17, 36})
_PRODUCE_API, _FETCH_API = 0, 1
_INACTIVE_S = 3600.0     # ClientQuotaManager.InactiveSensorExpirationTimeSeconds

# A quota entity: (user part, client part); each None (absent), DEFAULT_ENTITY or a name
# (the user sanitized, the client id as sent).
QuotaEntity = tuple["str | None", "str | None"]
_NO_QUOTAS, _CLIENT, _USER, _USER_CLIENT = 0, 1, 2, 4


class QuotaRate:
    """Kafka's Rate over a SampledStat, per second, times in milliseconds."""

    __slots__ = ("samples", "window_ms", "_starts", "_values", "_current")

    def __init__(self, samples: int, window_ms: float) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._starts: list[float] = []
        self._values: list[float] = []
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        if not self._starts:
            self._starts.append(now_ms)
            self._values.append(0.0)
        elif now_ms - self._starts[self._current] >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._starts):
                self._starts.append(now_ms)
                self._values.append(0.0)
            else:
                self._starts[self._current] = now_ms
                self._values[self._current] = 0.0
        self._values[self._current] += value

    def measure(self, now_ms: float) -> float:
        window = self.window_size_ms(now_ms)
        return sum(self._values) / (window / 1000.0)

    def window_size_ms(self, now_ms: float) -> float:
        """Rate.windowSize: from the oldest sample to now, at least samples - 1 windows."""
        self._purge(now_ms)
        oldest = min(self._starts) if self._starts else now_ms
        elapsed = now_ms - oldest
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def _purge(self, now_ms: float) -> None:
        expire = self.samples * self.window_ms
        for i, start in enumerate(self._starts):
            if now_ms - start >= expire:
                self._starts[i] = now_ms
                self._values[i] = 0.0


def throttle_time_ms(rate: QuotaRate, bound: float, now_ms: float, max_ms: float | None = None) -> int:
    """How long without traffic brings `rate` back to `bound` (Kafka's QuotaUtils.throttleTime,
    bounded by `max_ms` as boundedThrottleTime); 0 while the rate is within it."""
    measured = rate.measure(now_ms)
    if measured <= bound:
        return 0
    throttle = (measured - bound) / bound * rate.window_size_ms(now_ms)
    if max_ms is not None:
        throttle = min(throttle, max_ms)
    return min(int(round(throttle)), INT_MAX)


class ThrottleAvg:
    """The throttle-time sensor's Avg under Kafka's default MetricConfig: two samples of
    30 s, NaN when no throttle fell in them."""

    __slots__ = ("_samples",)
    WINDOW_MS, SAMPLES = 30_000.0, 2

    def __init__(self) -> None:
        self._samples: list[list[float]] = []      # [start ms, sum, count], oldest first

    def record(self, value: float, now_ms: float) -> None:
        samples = self._samples
        if not samples or now_ms - samples[-1][0] >= self.WINDOW_MS:
            samples.append([now_ms, 0.0, 0])
            del samples[:-self.SAMPLES]
        samples[-1][1] += value
        samples[-1][2] += 1

    def measure(self, now_ms: float) -> float:
        live = [s for s in self._samples if now_ms - s[0] < self.SAMPLES * self.WINDOW_MS]
        count = sum(s[2] for s in live)
        return sum(s[1] for s in live) / count if count else float("nan")


class _Sensor:
    """One quota entity's rate, its bound as last resolved, and its throttle-time Avg."""

    __slots__ = ("tags", "rate", "bound", "throttle", "used")

    def __init__(self, tags: tuple[str, str], rate: QuotaRate, bound: float | None, now: float) -> None:
        self.tags = tags
        self.rate = rate
        self.bound = bound
        self.throttle = ThrottleAvg()
        self.used = now


class ClientQuotaManager:
    """One quota type's entities, limits and sensors (Kafka's ClientQuotaManager with its
    DefaultQuotaCallback)."""

    def __init__(self, quota_type: str, samples: int, window_s: int, static_default: float = LONG_MAX,
                 max_throttle_ms: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.quota_type = quota_type
        self.samples = samples
        self.window_ms = window_s * 1000.0
        self.max_throttle_ms = max_throttle_ms
        self.clock = clock
        self.static_default = static_default
        self.overrides: dict[QuotaEntity, float] = {}
        self._enabled = _NO_QUOTAS if static_default >= LONG_MAX else _CLIENT
        # (sanitized user, client id) -> its sensor; cleared whenever a quota changes,
        # since a change may move a client to another entity.
        self._by_client: dict[tuple[str, str], _Sensor] = {}
        self._sensors: dict[tuple[str, str], _Sensor] = {}     # by metric tags (user, client-id)

    @property
    def enabled(self) -> bool:
        """quotasEnabled: some quota of this type was set since start-up."""
        return self._enabled != _NO_QUOTAS

    # -- quotas set and removed --------------------------------------------------------

    def update(self, entity: QuotaEntity, bound: float | None) -> None:
        user, client = entity
        if user is not None:
            self._enabled |= _USER_CLIENT if client is not None else _USER
        elif client is not None:
            self._enabled |= _CLIENT
        if bound is None:
            if self.overrides.pop(entity, None) is not None:
                log.info("Removing %s quota for %s", self.quota_type.upper(), _describe(entity))
        elif self.overrides.get(entity) != bound:
            log.info("Changing %s quota for %s to %s", self.quota_type.upper(), _describe(entity), bound)
            self.overrides[entity] = bound
        self._by_client.clear()
        for sensor in self._sensors.values():     # updateQuotaMetricConfigs
            sensor.bound = self.limit(sensor.tags)

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """The entity a (sanitized user, client id) is charged to, as Kafka's metric tags:
        the sensor is shared by every client the same quota entity covers."""
        mode = self._enabled
        if mode in (_NO_QUOTAS, _CLIENT):
            return "", client_id
        if mode == _USER:
            return user, ""
        if mode == _USER_CLIENT:
            return user, client_id
        o = self.overrides
        for entity, tags in (((user, client_id), (user, client_id)), ((user, DEFAULT_ENTITY), (user, client_id)),
                             ((user, None), (user, "")),
                             ((DEFAULT_ENTITY, client_id), (user, client_id)),
                             ((DEFAULT_ENTITY, DEFAULT_ENTITY), (user, client_id)),
                             ((DEFAULT_ENTITY, None), (user, ""))):
            if entity in o:
                return tags
        return "", client_id

    def limit(self, tags: tuple[str, str]) -> float | None:
        """The bound of the entity these tags name (DefaultQuotaCallback.quotaLimit)."""
        user, client = tags
        o = self.overrides
        if user and client:
            candidates = ((user, client), (user, DEFAULT_ENTITY), (DEFAULT_ENTITY, client),
                          (DEFAULT_ENTITY, DEFAULT_ENTITY))
        elif user:
            candidates = ((user, None), (DEFAULT_ENTITY, None))
        elif client:
            for entity in ((None, client), (None, DEFAULT_ENTITY)):
                if entity in o:
                    return o[entity]
            return self.static_default
        else:
            return None
        for entity in candidates:
            if entity in o:
                return o[entity]
        return None

    # -- the hot path ------------------------------------------------------------------

    def sensor(self, user: str, client_id: str) -> _Sensor:
        key = (user, client_id)
        found = self._by_client.get(key)
        now = self.clock()
        if found is None:
            tags = self.metric_tags(user, client_id)
            found = self._sensors.get(tags)
            if found is None:
                found = self._sensors[tags] = _Sensor(tags, QuotaRate(self.samples, self.window_ms),
                                                      self.limit(tags), now)
            self._by_client[key] = found
        found.used = now
        return found

    def record(self, user: str, client_id: str, value: float, check: bool = True) -> int:
        """Record `value`; the throttle time in ms if the entity is now over its quota."""
        if not self.enabled:
            return 0
        sensor = self.sensor(user, client_id)
        now_ms = self.clock() * 1000.0
        sensor.rate.record(value, now_ms)
        if not check:
            return 0
        bound = sensor.bound
        if bound is None:
            return 0
        return throttle_time_ms(sensor.rate, bound, now_ms, self.max_throttle_ms)

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """A throttled fetch is answered empty, so its bytes are taken back."""
        if self.enabled:
            self.sensor(user, client_id).rate.record(-value, self.clock() * 1000.0)

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """The most one request may carry without being throttled however idle the client
        was: bound x (samples - 1) windows (Kafka bounds a fetch's max_bytes by it)."""
        if not self.enabled:
            return float("inf")
        bound = self.sensor(user, client_id).bound
        if bound is None:
            return float("inf")
        return bound * (self.samples - 1) * self.window_ms / 1000.0

    def throttled(self, user: str, client_id: str, throttle_ms: int) -> None:
        """The throttle-time sensor: this entity's connection is muted for throttle_ms."""
        self.sensor(user, client_id).throttle.record(throttle_ms, self.clock() * 1000.0)

    def expire(self) -> None:
        """Sensors of clients gone for an hour are dropped, as Kafka's expire."""
        horizon = self.clock() - _INACTIVE_S
        gone = [tags for tags, s in self._sensors.items() if s.used < horizon]
        for tags in gone:
            del self._sensors[tags]
        if gone:
            self._by_client.clear()

    def readings(self, rate_name: str) -> Iterator[Reading]:
        """Kafka's kafka.server:type=<Produce|Fetch|Request>,user=..,client-id=.. attributes
        <rate_name> and throttle-time (the average throttle given over the last minute),
        under the name the JMX exporter's Kafka rules give them: kafka_server_quota_<attribute>
        with labels resource, user and clientId."""
        now_ms = self.clock() * 1000.0
        for (user, client), s in list(self._sensors.items()):
            tags = (("resource", self.quota_type), ("user", user), ("clientId", client))
            yield Reading(MetricName("kafka.server", "quota", rate_name, tags), Kind.GAUGE, s.rate.measure(now_ms))
            yield Reading(MetricName("kafka.server", "quota", "throttle-time", tags), Kind.GAUGE,
                          s.throttle.measure(now_ms))


def _describe(entity: QuotaEntity) -> str:
    """Kafka's KafkaQuotaEntity.toString: "user alice client-id app", "default user", ..."""
    user, client = entity
    parts = []
    if user is not None:
        parts.append("default user" if user == DEFAULT_ENTITY else "user " + user)
    if client is not None:
        parts.append("default client-id" if client == DEFAULT_ENTITY else "client-id " + client)
    return " ".join(parts)


@dataclass(frozen=True)
class QuotaSettings:
    samples: int = 11
    window_s: int = 1
    producer_default: int = LONG_MAX
    consumer_default: int = LONG_MAX
    controller_samples: int = 11
    controller_window_s: int = 1


class ClientQuotas:
    """The broker's three managers (Kafka's QuotaFactory.QuotaManagers: produce, fetch,
    request) and what handlers and the listener call. Handlers charge bytes; the listener
    charges handler time and mutes the connection (`on_response`)."""

    def __init__(self, settings: QuotaSettings = QuotaSettings(), clock: Callable[[], float] = time.monotonic) -> None:
        s = settings
        self.produce = ClientQuotaManager(PRODUCE, s.samples, s.window_s, s.producer_default, clock=clock)
        self.fetch = ClientQuotaManager(FETCH, s.samples, s.window_s, s.consumer_default, clock=clock)
        self.request = ClientQuotaManager(REQUEST, s.samples, s.window_s, LONG_MAX,
                                          max_throttle_ms=s.window_s * 1000.0, clock=clock)
        # Imported here: that module builds on ClientQuotaManager, defined above.
        from kafkalike.broker.controller_mutation_quota import (CONTROLLER_MUTATION_KEY,
                                                                ControllerMutationQuotaManager)
        self.controller_mutation = ControllerMutationQuotaManager(s.controller_samples, s.controller_window_s, clock)
        self._by_key = {PRODUCE_KEY: self.produce, FETCH_KEY: self.fetch, REQUEST_KEY: self.request,
                        CONTROLLER_MUTATION_KEY: self.controller_mutation}
        self._rate_keys = frozenset({REQUEST_KEY, CONTROLLER_MUTATION_KEY})    # doubles; the byte rates are longs

    @classmethod
    def from_config(cls, config) -> ClientQuotas:
        return cls(QuotaSettings(config.get("quota.window.num"), config.get("quota.window.size.seconds"),
                                 config.get("quota.producer.default"), config.get("quota.consumer.default"),
                                 config.get("controller.quota.window.num"),
                                 config.get("controller.quota.window.size.seconds")))

    # -- ZooKeeper: start-up and change notifications ------------------------------------

    def apply(self, entity: QuotaEntity, props: dict[str, str]) -> None:
        """Kafka's QuotaConfigHandler.updateQuotaConfig: each type set or removed."""
        for key, manager in self._by_key.items():
            value = props.get(key)
            bound = None
            if value is not None:
                try:
                    bound = float(value) if key in self._rate_keys else float(int(value.strip()))
                except ValueError:
                    log.error("Ignoring %s=%s of %s: not a number", key, value, _describe(entity))
                    continue
            manager.update(entity, bound)

    async def load(self, zk: KafkaZkClient) -> None:
        """Every quota in ZooKeeper, before the listeners open (the initial config load of
        Kafka's DynamicConfigManager)."""
        for name in await zk.get_entity_names(ConfigType.CLIENT):
            await self.reload_client(zk, name)
        for name in await zk.get_entity_names(ConfigType.USER):
            await self.reload_user(zk, name)
            for client in await zk.get_entity_names(f"{ConfigType.USER}/{name}/clients"):
                await self.reload_user(zk, f"{name}/clients/{client}")

    async def reload_client(self, zk: KafkaZkClient, name: str) -> None:
        """A change notification for clients/<sanitized client id>."""
        props = await zk.get_entity_configs(ConfigType.CLIENT, name)
        self.apply((None, _client_part(name)), props)

    async def reload_user(self, zk: KafkaZkClient, name: str) -> None:
        """A change notification for users/<user> or users/<user>/clients/<client id>."""
        props = await zk.get_entity_configs(ConfigType.USER, name)
        user, sep, client = name.partition("/clients/")
        self.apply((user, _client_part(client) if sep else None), props)

    # -- requests ----------------------------------------------------------------------

    def record_produce(self, ctx: RequestContext, size: int) -> int:
        """Produce bytes (the request's size, as Kafka charges it); the throttle in ms."""
        return self._charge(ctx, self.produce, size)

    def record_fetch(self, ctx: RequestContext, size: int) -> int:
        """Bytes answered to a consumer (followers are the replication quota's)."""
        return self._charge(ctx, self.fetch, size)

    def unrecord_fetch(self, ctx: RequestContext, size: int) -> None:
        self.fetch.unrecord(_user(ctx), ctx.client_id or "", size)

    def fetch_max_bytes(self, ctx: RequestContext) -> float:
        return self.fetch.max_value_in_window(_user(ctx), ctx.client_id or "")

    def _charge(self, ctx: RequestContext, manager: ClientQuotaManager, value: float) -> int:
        if not manager.enabled:
            return 0
        throttle = manager.record(_user(ctx), ctx.client_id or "", value)
        if throttle > ctx.throttle_ms:
            ctx.throttle_ms = throttle
            ctx.throttled_by = manager
        return throttle

    def on_response(self, ctx: RequestContext, response, handler_seconds: float, follower: bool = False) -> int:
        """The listener's call before writing an answer: the request quota charged with the
        handler's time, the larger throttle put in the answer's throttle_time_ms and counted
        on its quota's throttle-time sensor. Returns how long to mute the connection."""
        request = self.request
        if not request.enabled and ctx.throttle_ms <= 0:
            return 0            # no quota set since start-up: the usual case, one check
        if request.enabled and not _exempt(ctx, response, follower):
            percent = handler_seconds * 100.0
            throttle = request.record(_user(ctx), ctx.client_id or "", percent)
            if throttle > 0 and ctx.api_key == _FETCH_API and ctx.throttle_ms == 0:
                self._empty_fetch(ctx, response)
            if throttle > ctx.throttle_ms:
                ctx.throttle_ms = throttle
                ctx.throttled_by = request
        throttle = ctx.throttle_ms
        if throttle <= 0:
            return 0
        if response is not None and hasattr(response, "throttle_time_ms"):
            response.throttle_time_ms = throttle
        manager = ctx.throttled_by
        if manager is not None:
            manager.throttled(_user(ctx), ctx.client_id or "", throttle)
        return throttle

    def on_sent(self, ctx: RequestContext, response, seconds: float, follower: bool = False) -> None:
        """The time the listener took to encode and write the answer, charged without a
        throttle check (Kafka's network thread time, recordNoThrottle): it counts from the
        connection's next request."""
        if self.request.enabled and not _exempt(ctx, response, follower):
            self.request.record(_user(ctx), ctx.client_id or "", seconds * 100.0, check=False)

    def _empty_fetch(self, ctx: RequestContext, response) -> None:
        """A consumer's fetch throttled for its request time alone is answered empty too,
        its bytes taken back from the fetch quota, as Kafka's handleFetchRequest does."""
        topics = getattr(response, "responses", None)
        if topics:
            size = sum(len(p.record_set or b"") for t in topics for p in t.partition_responses)
            self.unrecord_fetch(ctx, size)
            response.responses = []

    def mutation_quota(self, ctx: RequestContext):
        """The controller mutation quota of a CreateTopics, CreatePartitions or DeleteTopics
        request (controller_mutation_quota.py), or None while no such quota is set."""
        if not self.controller_mutation.enabled:
            return None
        from kafkalike.broker.controller_mutation_quota import MutationQuota
        return MutationQuota(self.controller_mutation, ctx, _user(ctx))

    def throttle_mutations(self, ctx: RequestContext, quota) -> None:
        """The request is answered: its mutation quota's throttle, if the longest, is the answer's."""
        throttle = quota.throttle_ms() if quota is not None else 0
        if throttle > ctx.throttle_ms:
            ctx.throttle_ms = throttle
            ctx.throttled_by = self.controller_mutation

    def expire(self) -> None:
        for manager in (self.produce, self.fetch, self.request, self.controller_mutation):
            manager.expire()

    def readings(self) -> Iterator[Reading]:
        yield from self.produce.readings("byte-rate")
        yield from self.fetch.readings("byte-rate")
        yield from self.request.readings("request-time")
        yield from self.controller_mutation.readings()


def _exempt(ctx: RequestContext, response, follower: bool) -> bool:
    """Not charged to the request quota: the cluster's own requests, SASL, follower
    fetches and acks=0 produces (KafkaApis exempts those from request throttling)."""
    return (ctx.api_key in CLUSTER_ACTIONS or ctx.api_key in SASL_APIS or follower
            or (ctx.api_key == _PRODUCE_API and response is None))


def _client_part(sanitized: str) -> str:
    return DEFAULT_ENTITY if sanitized == DEFAULT_ENTITY else desanitize(sanitized)


def _user(ctx: RequestContext) -> str:
    """The sanitized principal name (Kafka's session.sanitizedUser)."""
    return _sanitized_user(ctx.principal)


@functools.lru_cache(maxsize=1024)
def _sanitized_user(principal: str) -> str:
    return sanitize(principal[5:] if principal.startswith("User:") else principal)
