"""One registry of request handlers keyed by api key.

Dispatch and the ApiVersions answer are both built from it, so the broker can never
advertise a version it does not serve, nor serve one it does not advertise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kafkalike.broker.request_errors import error_counter
from kafkalike.metrics.stats import RequestMetrics
from kafkalike.protocol.api import APIS, ApiSpec
from kafkalike.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalike.broker.admin_manager import AdminManager
    from kafkalike.broker.authorizer import Authorizer
    from kafkalike.broker.client_quotas import ClientQuotaManager, ClientQuotas
    from kafkalike.broker.config import KafkaConfig
    from kafkalike.broker.fetch_session import FetchManager
    from kafkalike.broker.metadata_cache import MetadataCache
    from kafkalike.broker.network import KafkaConnection
    from kafkalike.broker.replica_alter_log_dirs import ReplicaAlterLogDirsManager
    from kafkalike.broker.replica_manager import ReplicaManager
    from kafkalike.broker.topic_configs import TopicConfigs
    from kafkalike.controller.controller import KafkaController
    from kafkalike.coordinator.coordinator import GroupCoordinator
    from kafkalike.coordinator.producer_id_manager import ProducerIdManager
    from kafkalike.coordinator.transaction.coordinator import TransactionCoordinator
    from kafkalike.storage.manager import LogManager
    from kafkalike.zkdata import KafkaZkClient

Handler = Callable[["RequestContext", Any], Any]   # returns a response, None or a Deferred
ErrorResponse = Callable[[Any, int, ErrorCode], Any]


@dataclass(frozen=True)
class Registration:
    spec: ApiSpec
    min_version: int
    max_version: int
    handle: Handler
    error_response: ErrorResponse


@dataclass
class BrokerEpochs:
    """The epochs the controller's requests are fenced with. The broker's own epoch (the
    czxid of its /brokers/ids/<id> znode) changes when it registers again after a session
    expiry; the controller epoch is the newest one whose requests it obeyed."""

    broker_epoch: int = -1
    controller_epoch_seen: int = -1


@dataclass(frozen=True, kw_only=True)
class BrokerServices:
    """What request handlers work through, each with its own type (Kafka hands the same
    set to KafkaApis). The server, the composition root, builds it once start-up has
    made them all, before it listens, so a handler never meets a missing one; tests
    build one from fakes of just what they exercise."""

    broker_id: int
    cluster_id: str | None
    config: KafkaConfig
    zk: KafkaZkClient
    metadata: MetadataCache
    replicas: ReplicaManager
    logs: LogManager
    topic_configs: TopicConfigs
    groups: GroupCoordinator
    admin: AdminManager
    controller: KafkaController
    producer_ids: ProducerIdManager
    epochs: BrokerEpochs
    transactions: TransactionCoordinator | None = None
    # Client quotas (client_quotas.py); None in tests that build services without them.
    quotas: ClientQuotas | None = None
    # authorizer.class.name's AclAuthorizer, or None: every request allowed (ctx.authorizer).
    authorizer: Authorizer | None = None
    # Moves between this broker's log dirs (replica_alter_log_dirs.py); None in unit tests.
    alter_log_dirs: ReplicaAlterLogDirsManager | None = None
    # Incremental fetch sessions (fetch_session.py); None: every fetch is sessionless.
    fetch_sessions: FetchManager | None = None
    # Kafka's RequestMetrics, which the listener records every answered request into.
    request_metrics: RequestMetrics = field(default_factory=lambda: new_request_metrics())


def new_request_metrics() -> RequestMetrics:
    """Kafka's request metrics named by API and error code, counting responses' error codes."""
    return RequestMetrics({key: spec.name for key, spec in APIS.items()}, {e.value: e.name for e in ErrorCode},
                          error_counter)


@dataclass
class RequestContext:
    """What a handler knows about the request besides its body, and the broker's
    services it may use (read through to the one BrokerServices every request shares,
    so a request costs one reference, not a copy of each)."""

    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    services: BrokerServices
    connection: KafkaConnection | None = None
    # Set by quota checks (client_quotas.py): how long the listener mutes this connection
    # after writing the answer (KIP-219), and which quota's throttle-time sensor counts it.
    throttle_ms: int = 0
    throttled_by: ClientQuotaManager | None = None
    # The request's size on the wire (Produce bytes are charged by it).
    request_size: int = 0

    @property
    def principal(self) -> str:
        """Who sent the request: "User:<name>" from SASL, "User:<DN>" from a TLS client
        certificate, else "User:ANONYMOUS" (the authorizer's and the quotas' input)."""
        connection = self.connection
        auth = getattr(connection, "authenticator", None)
        if auth is not None and auth.complete and auth.principal:
            return auth.principal       # the SASL login's, kept by the listener's authenticator
        return getattr(connection, "principal", "User:ANONYMOUS")

    @property
    def listener_name(self) -> str:
        """The listener the request came in on (Kafka's request.context.listenerName);
        PLAINTEXT for a request that came through none (tests)."""
        return getattr(getattr(self.connection, "factory", None), "listener_name", "PLAINTEXT")

    @property
    def authorizer(self) -> Authorizer:
        """Who may do what (broker/authorizer): one check at the start of each handler."""
        from kafkalike.broker.authorizer import ALLOW_ALL
        return self.services.authorizer or ALLOW_ALL

    @property
    def broker_id(self) -> int:
        return self.services.broker_id

    @property
    def cluster_id(self) -> str | None:
        return self.services.cluster_id

    @property
    def config(self) -> KafkaConfig:
        return self.services.config

    @property
    def zk(self) -> KafkaZkClient:
        return self.services.zk

    @property
    def metadata(self) -> MetadataCache:
        return self.services.metadata

    @property
    def replicas(self) -> ReplicaManager:
        return self.services.replicas

    @property
    def logs(self) -> LogManager:
        return self.services.logs

    @property
    def topic_configs(self) -> TopicConfigs:
        return self.services.topic_configs

    @property
    def groups(self) -> GroupCoordinator:
        return self.services.groups

    @property
    def admin(self) -> AdminManager:
        return self.services.admin

    @property
    def controller(self) -> KafkaController:
        return self.services.controller

    @property
    def producer_ids(self) -> ProducerIdManager:
        return self.services.producer_ids

    @property
    def epochs(self) -> BrokerEpochs:
        return self.services.epochs

    @property
    def transactions(self) -> TransactionCoordinator | None:
        return self.services.transactions

    @property
    def quotas(self) -> ClientQuotas | None:
        return self.services.quotas

    @property
    def fetch_sessions(self) -> FetchManager | None:
        return self.services.fetch_sessions


HANDLERS: dict[int, Registration] = {}


def handler(api_key: int, versions: tuple[int, int] | None = None,
            error_response: ErrorResponse | None = None):
    """Register `fn` for api_key over `versions` (default: every declared version)."""
    spec = APIS[api_key]
    lo, hi = versions or spec.versions

    def register(fn: Handler) -> Handler:
        HANDLERS[api_key] = Registration(spec, lo, hi, fn, error_response or generic_error_response)
        return fn
    return register


_NAME_FIELDS = ("name", "topic", "topic_name")
_PARTITION_FIELDS = ("partition_index", "partition", "index")


def generic_error_response(request, version: int, code: ErrorCode):
    """A response carrying `code` wherever the response has an error_code field.

    Topic and partition arrays mirror the request's, which is what Kafka's per-API
    getErrorResponse methods do for the common shapes; handlers with other shapes
    register their own.
    """
    spec = APIS[request.API_KEY]
    return _mirror(spec.response, request, version, int(code))


def _mirror(cls, source, version: int, code: int):
    obj = cls()
    for f in cls.FIELDS:
        if not f.present_in(version):
            continue
        if f.name == "error_code":
            obj.error_code = code
        elif f.name in _NAME_FIELDS + _PARTITION_FIELDS and source is not None:
            value = _first_attr(source, _NAME_FIELDS if f.name in _NAME_FIELDS else _PARTITION_FIELDS)
            if value is not None:
                setattr(obj, f.name, value)
        elif f.is_array and f.is_struct and source is not None:
            sub_cls = cls.TOP.STRUCTS[f.element_type]
            items = _matching_array(source, sub_cls)
            if items is not None:
                setattr(obj, f.name, [_mirror(sub_cls, item, version, code) for item in items])
    return obj


def _first_attr(obj, names):
    for n in names:
        v = getattr(obj, n, None)
        if v is not None and not isinstance(v, list):
            return v
    return None


def _matching_array(source, sub_cls):
    """The request array whose elements identify the same things (topics, partitions)."""
    wanted = {f.name for f in sub_cls.FIELDS}
    for f in getattr(source, "FIELDS", []):
        value = getattr(source, f.name, None)
        if not f.is_array or not isinstance(value, list):
            continue
        if f.is_struct and value and wanted & (set(_NAME_FIELDS) | set(_PARTITION_FIELDS)):
            keys = {g.name for g in type(value[0]).FIELDS}
            if keys & wanted & (set(_NAME_FIELDS) | set(_PARTITION_FIELDS)):
                return value
        if not f.is_struct and f.element_type == "int32" and wanted & set(_PARTITION_FIELDS):
            return [_Index(v) for v in value]
    return None


class _Index:
    """Adapts a bare partition number in a request to the mirroring walk."""

    FIELDS: list = []

    def __init__(self, value: int):
        self.partition_index = value


def load_handlers() -> dict[int, Registration]:
    """Import every handler module so their registrations run."""
    import importlib
    import pkgutil

    from kafkalike.broker import handlers
    for info in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"{handlers.__name__}.{info.name}")
    return HANDLERS
