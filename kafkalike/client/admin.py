"""A blocking admin client: topics, partitions, configs and the cluster, over BrokerConnection.

It follows the Java AdminClient where a user can tell the difference: configs use
Kafka's dotted names, every call has one deadline (default.api.timeout.ms) inside
which it retries lost connections and a moved controller, topic changes go to the
controller found through Metadata, and failures are exceptions carrying Kafka's error
name and the broker's message (or Kafka's default text when the broker sent none).
"""
from __future__ import annotations

import logging
import socket
import time
from typing import Callable, Iterable, Mapping, Sequence, TypeVar

from kafkalike.client.admin_types import (
    AlterConfigOp,
    AlterConfigOpType,
    BrokerNode,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigSynonym,
    CreatedTopic,
    FeatureMetadata,
    FeatureUpdate,
    NewPartitions,
    NewTopic,
    PartitionInfo,
    PartitionReassignment,
    TopicDescription,
    TopicListing,
)
from kafkalike.client.security import ClientSecurity
from kafkalike.client.connection import (
    SOFTWARE_NAME,
    SOFTWARE_VERSION,
    BrokerConnection,
    KafkaConnectionError,
    UnsupportedApiVersion,
    parse_bootstrap_servers,
)
from kafkalike.client.groups import (
    CONSUMER_PROTOCOL_TYPE,
    CommittedOffset,
    CoordinatorNode,
    GroupDescription,
    GroupListing,
    ListedOffset,
    MemberDescription,
    OffsetSpec,
    TopicPartition,
    decode_assignment,
)
from kafkalike.common.acls import (AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AclResourceType, PatternType, ResourcePattern)
from kafkalike.common.resources import ConfigSource, ResourceType
from kafkalike.common.topics import INTERNAL_TOPICS
from kafkalike.protocol.errors import ErrorCode, default_message, java_exception_name
from kafkalike.protocol.messages.alter_configs import AlterConfigsRequest
from kafkalike.protocol.messages.api_versions import ApiVersionsRequest
from kafkalike.protocol.messages.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from kafkalike.protocol.messages.create_acls import CreateAclsRequest
from kafkalike.protocol.messages.create_partitions import CreatePartitionsRequest
from kafkalike.protocol.messages.create_topics import CreateTopicsRequest
from kafkalike.protocol.messages.delete_acls import DeleteAclsRequest
from kafkalike.protocol.messages.delete_groups import DeleteGroupsRequest
from kafkalike.protocol.messages.delete_topics import DeleteTopicsRequest
from kafkalike.protocol.messages.describe_acls import DescribeAclsRequest
from kafkalike.protocol.messages.describe_cluster import DescribeClusterRequest
from kafkalike.protocol.messages.describe_configs import DescribeConfigsRequest
from kafkalike.protocol.messages.describe_groups import DescribeGroupsRequest
from kafkalike.protocol.messages.find_coordinator import FindCoordinatorRequest
from kafkalike.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from kafkalike.protocol.messages.list_groups import ListGroupsRequest
from kafkalike.protocol.messages.delete_records import DeleteRecordsRequest
from kafkalike.protocol.messages.list_offsets import ListOffsetsRequest
from kafkalike.protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest
from kafkalike.protocol.messages.metadata import MetadataRequest, MetadataResponse
from kafkalike.protocol.messages.offset_commit import OffsetCommitRequest
from kafkalike.protocol.messages.offset_delete import OffsetDeleteRequest
from kafkalike.protocol.messages.offset_fetch import OffsetFetchRequest
from kafkalike.protocol.messages.update_features import UpdateFeaturesRequest
from kafkalike.protocol.types import ZERO_UUID

log = logging.getLogger("kafkalike.client.admin")
# A broker that cannot be reached is reported at most this often, as Java's NetworkClient
# reports each attempt its reconnect backoff (up to reconnect.backoff.max.ms, 1 s) allows.
UNREACHABLE_WARNING_INTERVAL_S = 1.0

T = TypeVar("T")

DEFAULTS = {
    "client.id": "adminclient-1",
    "request.timeout.ms": "30000",
    "default.api.timeout.ms": "60000",
    "retry.backoff.ms": "100",
    "security.protocol": "PLAINTEXT",
}

# ListOffsets isolation_level (v2+), by the consumer's isolation.level names.
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}

# A group's coordinator moved, is not elected yet, or is still reading its partition.
_COORDINATOR_RETRIABLE = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                    ErrorCode.NOT_COORDINATOR})
# ListOffsets answers that mean "ask again once metadata has caught up".
_LEADER_RETRIABLE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                               ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                               ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.OFFSET_NOT_AVAILABLE,
                               ErrorCode.KAFKA_STORAGE_ERROR})


class KafkaAdminError(Exception):
    """A failed admin call: the Kafka error code and the message a user should see."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        self.code = ErrorCode(code)
        self.message = message if message else default_message(self.code)
        super().__init__(self.message)

    @property
    def name(self) -> str:
        return self.code.name

    @property
    def java_class(self) -> str:
        """Fully qualified, as Java's stack traces print it."""
        return f"org.apache.kafka.common.errors.{java_exception_name(self.code)}"


class _Retry(Exception):
    """Try the call again after a metadata refresh (connection lost, controller moved)."""


def _ms(config: Mapping[str, str], key: str) -> float:
    return int(config[key]) / 1000.0


class AdminClient:
    """Blocking admin operations against a cluster, e.g. AdminClient({"bootstrap.servers": "h:9092"})."""

    def __init__(self, config: Mapping[str, object]) -> None:
        merged = {**DEFAULTS, **{str(k): str(v) for k, v in config.items()}}
        if "bootstrap.servers" not in merged:
            raise ValueError('Missing required configuration "bootstrap.servers" which has no default value.')
        self.security = ClientSecurity.from_config(merged)
        self.config = merged
        self._bootstrap = parse_bootstrap_servers(merged["bootstrap.servers"])
        self._request_timeout = _ms(merged, "request.timeout.ms")
        self._api_timeout = _ms(merged, "default.api.timeout.ms")
        self._backoff = _ms(merged, "retry.backoff.ms")
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._brokers: dict[int, BrokerNode] = {}
        self._controller_id = -1
        self._cluster_id: str | None = None
        self._unreachable_warned: dict[tuple[str, int], float] = {}

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    # -- topics --------------------------------------------------------------------

    def list_topics(self, include_internal: bool = False) -> list[TopicListing]:
        """Every topic, sorted by name; internal ones only when asked for."""
        def attempt(deadline: float) -> list[TopicListing]:
            response = self._metadata(None, deadline)
            listings = [TopicListing(t.name, t.topic_id, bool(t.is_internal)) for t in response.topics
                        if t.error_code == ErrorCode.NONE]
            return sorted((t for t in listings if include_internal or not t.is_internal), key=lambda t: t.name)
        return self._call("listTopics", attempt)

    def describe_topics(self, names: Iterable[str]) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic; the first missing one raises."""
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            _check_representable(name)

        def attempt(deadline: float) -> dict[str, TopicDescription]:
            if not wanted:
                return {}
            response = self._metadata(wanted, deadline)
            by_name = {t.name: t for t in response.topics}
            live = {b.node_id for b in response.brokers}
            out = {}
            for name in wanted:
                topic = by_name.get(name)
                if topic is None:
                    raise KafkaAdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} not found.")
                if topic.error_code != ErrorCode.NONE:
                    raise KafkaAdminError(topic.error_code)
                partitions = tuple(sorted((_partition_info(p, live) for p in topic.partitions),
                                          key=lambda p: p.partition))
                out[name] = TopicDescription(name, topic.topic_id, bool(topic.is_internal), partitions)
            return out
        return self._call("describeTopics", attempt)

    def create_topics(self, topics: Sequence[NewTopic], validate_only: bool = False,
                      retry_on_quota_violation: bool = True) -> dict[str, CreatedTopic]:
        """Create topics through the controller; raises for the first topic that failed.
        Topics the controller mutation quota held back are sent again once the answer's
        throttle time has passed, within the call's timeout (Java's retryOnQuotaViolation)."""
        for topic in topics:
            _check_representable(topic.name)
        pending = {t.name: (t, _creatable(t)) for t in topics}
        created: dict[str, CreatedTopic] = {}

        def attempt(deadline: float) -> dict[str, CreatedTopic]:
            request = CreateTopicsRequest(topics=[r for _, r in pending.values()],
                                          timeout_ms=self._op_timeout_ms(deadline), validate_only=validate_only)
            response = self._send_to_controller(request, deadline)
            results = {r.name: r for r in response.topics}
            self._retry_if_controller_moved(r.error_code for r in response.topics)
            for topic, _ in list(pending.values()):
                result = results.get(topic.name)
                if result is None:
                    raise KafkaAdminError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                          f"The server response did not contain a reference to topic {topic.name}")
                if result.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED and retry_on_quota_violation:
                    continue
                if result.error_code != ErrorCode.NONE:
                    raise KafkaAdminError(result.error_code, result.error_message)
                del pending[topic.name]
                created[topic.name] = CreatedTopic(topic.name, result.topic_id, result.num_partitions,
                                                   result.replication_factor)
            self._retry_when_throttled(bool(pending), response.throttle_time_ms, deadline)
            return {t.name: created[t.name] for t in topics}
        return self._call("createTopics", attempt)

    def delete_topics(self, names: Iterable[str], retry_on_quota_violation: bool = True) -> None:
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            _check_representable(name)

        def attempt(deadline: float) -> None:
            if not wanted:
                return
            controller = self._controller_connection(deadline)
            version = self._version(controller, DeleteTopicsRequest.API_KEY)
            request = DeleteTopicsRequest(timeout_ms=self._op_timeout_ms(deadline))
            if version >= 6:
                request.topics = [DeleteTopicsRequest.DeleteTopicState(name=n, topic_id=ZERO_UUID) for n in wanted]
            else:
                request.topic_names = wanted
            response = self._send(controller, request, version)
            self._retry_if_controller_moved(r.error_code for r in response.responses)
            results = {r.name: r for r in response.responses}
            for name in list(wanted):
                result = results.get(name)
                if result is None or result.error_code == ErrorCode.NONE:
                    wanted.remove(name)
                elif result.error_code != ErrorCode.THROTTLING_QUOTA_EXCEEDED or not retry_on_quota_violation:
                    raise KafkaAdminError(result.error_code, result.error_message)
            self._retry_when_throttled(bool(wanted), response.throttle_time_ms, deadline)
        self._call("deleteTopics", attempt)

    def create_partitions(self, increases: Mapping[str, NewPartitions], validate_only: bool = False,
                          retry_on_quota_violation: bool = True) -> None:
        """Raise topics' partition counts, optionally placing the new partitions' replicas."""
        topics = [CreatePartitionsRequest.CreatePartitionsTopic(
            name=name, count=p.total_count,
            assignments=None if p.assignments is None else [
                CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=list(a)) for a in p.assignments])
            for name, p in increases.items()]

        def attempt(deadline: float) -> None:
            if not topics:
                return
            request = CreatePartitionsRequest(topics=topics, timeout_ms=self._op_timeout_ms(deadline),
                                              validate_only=validate_only)
            response = self._send_to_controller(request, deadline)
            self._retry_if_controller_moved(r.error_code for r in response.results)
            for result in response.results:
                if result.error_code == ErrorCode.NONE:
                    topics[:] = [t for t in topics if t.name != result.name]
                elif result.error_code != ErrorCode.THROTTLING_QUOTA_EXCEEDED or not retry_on_quota_violation:
                    raise KafkaAdminError(result.error_code, result.error_message)
            self._retry_when_throttled(bool(topics), response.throttle_time_ms, deadline)
        self._call("createPartitions", attempt)

    def list_partition_reassignments(self, partitions: Iterable[tuple[str, int]] | None = None
                                     ) -> dict[tuple[str, int], PartitionReassignment]:
        """Reassignments in progress, from the controller; None means all partitions."""
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = [ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                name=t, partition_indexes=sorted(p)) for t, p in by_topic.items()]

        def attempt(deadline: float) -> dict[tuple[str, int], PartitionReassignment]:
            request = ListPartitionReassignmentsRequest(timeout_ms=self._op_timeout_ms(deadline), topics=topics)
            response = self._send_to_controller(request, deadline)
            self._retry_if_controller_moved([response.error_code])
            if response.error_code != ErrorCode.NONE:
                raise KafkaAdminError(response.error_code, response.error_message)
            return {(t.name, p.partition_index): PartitionReassignment(
                        tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
                    for t in response.topics for p in t.partitions}
        return self._call("listPartitionReassignments", attempt)

    def alter_partition_reassignments(self, reassignments: Mapping[tuple[str, int], Sequence[int] | None]
                                      ) -> dict[tuple[str, int], KafkaAdminError | None]:
        """Start (a replica list) or cancel (None) partition reassignments on the controller.

        Each partition maps to None (accepted: the controller has started moving it, or
        has reverted it) or its error, as the Java client's per-partition futures report
        them; an error for the whole request fails every partition with it."""
        out: dict[tuple[str, int], KafkaAdminError | None] = {}
        by_topic: dict[str, list] = {}
        for (topic, partition), replicas in reassignments.items():
            try:
                _check_representable(topic)
            except KafkaAdminError as error:
                out[(topic, partition)] = error
                continue
            if partition < 0:
                out[(topic, partition)] = KafkaAdminError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION, f"The given partition index {partition} is not valid.")
                continue
            by_topic.setdefault(topic, []).append(AlterPartitionReassignmentsRequest.ReassignablePartition(
                partition_index=partition, replicas=None if replicas is None else [int(r) for r in replicas]))
        topics = [AlterPartitionReassignmentsRequest.ReassignableTopic(name=t, partitions=ps)
                  for t, ps in by_topic.items()]

        def attempt(deadline: float) -> dict[tuple[str, int], KafkaAdminError | None]:
            if not topics:
                return {}
            request = AlterPartitionReassignmentsRequest(timeout_ms=self._op_timeout_ms(deadline), topics=topics)
            response = self._send_to_controller(request, deadline)
            self._retry_if_controller_moved([response.error_code])
            answered: dict[tuple[str, int], KafkaAdminError | None] = {}
            if response.error_code != ErrorCode.NONE:
                for t in topics:
                    for p in t.partitions:
                        answered[(t.name, p.partition_index)] = KafkaAdminError(response.error_code,
                                                                                response.error_message)
                return answered
            for t in response.responses:
                for p in t.partitions:
                    answered[(t.name, p.partition_index)] = (
                        None if p.error_code == ErrorCode.NONE else KafkaAdminError(p.error_code, p.error_message))
            for t in topics:
                for p in t.partitions:
                    if (t.name, p.partition_index) not in answered:
                        answered[(t.name, p.partition_index)] = KafkaAdminError(
                            ErrorCode.UNKNOWN_SERVER_ERROR, "The controller response did not contain a result "
                            f"for topic partition {t.name}-{p.partition_index}")
            return answered
        out.update(self._call("alterPartitionReassignments", attempt))
        return {tp: out[tp] for tp in reassignments}

    # -- cluster -------------------------------------------------------------------

    def describe_cluster(self) -> ClusterDescription:
        def attempt(deadline: float) -> ClusterDescription:
            connection = self._any_connection(deadline)
            if connection.supports(DescribeClusterRequest.API_KEY):
                response = self._send(connection, DescribeClusterRequest())
                if response.error_code != ErrorCode.NONE:
                    raise KafkaAdminError(response.error_code, response.error_message)
                brokers = tuple(BrokerNode(b.broker_id, b.host, b.port, b.rack) for b in response.brokers)
                return ClusterDescription(response.cluster_id, response.controller_id, brokers)
            self._metadata([], deadline)
            return ClusterDescription(self._cluster_id, self._controller_id, tuple(self._brokers.values()))
        return self._call("describeCluster", attempt)

    # -- features (KIP-584) ----------------------------------------------------------

    def describe_features(self, from_controller: bool = False) -> FeatureMetadata:
        """Java's describeFeatures: what ApiVersions v3+ tells of features, from any broker or
        from the controller."""
        def attempt(deadline: float) -> FeatureMetadata:
            connection = self._controller_connection(deadline) if from_controller else self._any_connection(deadline)
            response = self._send(connection, ApiVersionsRequest(client_software_name=SOFTWARE_NAME,
                                                                 client_software_version=SOFTWARE_VERSION))
            if response.error_code != ErrorCode.NONE:
                raise KafkaAdminError(response.error_code)
            return FeatureMetadata(
                {f.name: (f.min_version, f.max_version) for f in response.supported_features or ()},
                {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features or ()},
                response.finalized_features_epoch if response.finalized_features_epoch >= 0 else None)
        return self._call("describeFeatures", attempt)

    def update_features(self, updates: Mapping[str, FeatureUpdate]) -> dict[str, KafkaAdminError | None]:
        """Java's updateFeatures, through the controller: each feature's outcome (None: done)."""
        if not updates:
            raise KafkaAdminError(ErrorCode.INVALID_REQUEST, "Feature updates can not be null or empty.")

        def attempt(deadline: float) -> dict[str, KafkaAdminError | None]:
            request = UpdateFeaturesRequest(timeout_ms=self._op_timeout_ms(deadline), feature_updates=[
                UpdateFeaturesRequest.FeatureUpdateKey(feature=name, max_version_level=u.max_version_level,
                                                       allow_downgrade=u.allow_downgrade)
                for name, u in updates.items()])
            response = self._send_to_controller(request, deadline)
            self._retry_if_controller_moved([response.error_code])
            if response.error_code != ErrorCode.NONE:
                failure = KafkaAdminError(response.error_code, response.error_message)
                return {name: failure for name in updates}
            results = {r.feature: r for r in response.results}
            out: dict[str, KafkaAdminError | None] = {}
            for name in updates:
                r = results.get(name)
                if r is None:
                    out[name] = KafkaAdminError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                                f"Server response mentioned unknown feature {name}")
                else:
                    out[name] = None if r.error_code == ErrorCode.NONE else KafkaAdminError(r.error_code,
                                                                                            r.error_message)
            return out
        return self._call("updateFeatures", attempt)

    def unregister_broker(self, broker_id: int) -> None:
        """Java's unregisterBroker (KIP-631): KRaft's UnregisterBroker, which a ZooKeeper-mode
        cluster (Kafka 2.8's and kafkalike's) does not offer; kafkalike's client, which speaks
        the ZooKeeper-mode protocol, reports UNSUPPORTED_VERSION for it as Java's does there."""
        def attempt(deadline: float) -> None:
            self._any_connection(deadline)
            raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION,
                                  f"The broker does not support UNREGISTER_BROKER (broker {broker_id} stays registered)")
        self._call("unregisterBroker", attempt)

    def controller_id(self) -> int:
        """The controller's broker id, or -1 while the cluster has none."""
        def attempt(deadline: float) -> int:
            return self._metadata([], deadline).controller_id
        return self._call("describeCluster", attempt)

    # -- configs -------------------------------------------------------------------

    def describe_configs(self, resources: Iterable[ConfigResource], include_synonyms: bool = False
                         ) -> dict[ConfigResource, list[ConfigEntry]]:
        """Each resource's config entries, in the order the broker returned them."""
        wanted = list(dict.fromkeys(resources))

        def attempt(deadline: float) -> dict[ConfigResource, list[ConfigEntry]]:
            out: dict[ConfigResource, list[ConfigEntry]] = {}
            for node, group in self._by_target_broker(wanted):
                connection = self._broker_connection(node, deadline)
                request = DescribeConfigsRequest(
                    resources=[DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=int(r.type), resource_name=r.name, configuration_keys=None) for r in group],
                    include_synonyms=include_synonyms)
                version = self._version(connection, DescribeConfigsRequest.API_KEY)
                response = self._send(connection, request, version)
                results = {(r.resource_type, r.resource_name): r for r in response.results}
                for resource in group:
                    result = results.get((int(resource.type), resource.name))
                    if result is None:
                        raise KafkaAdminError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                              f"Malformed broker response: missing config for {resource}")
                    if result.error_code != ErrorCode.NONE:
                        raise KafkaAdminError(result.error_code, result.error_message)
                    out[resource] = [_config_entry(c, version) for c in result.configs]
            return {r: out[r] for r in wanted}
        return self._call("describeConfigs", attempt)

    def alter_configs(self, configs: Mapping[ConfigResource, Mapping[str, str]], validate_only: bool = False) -> None:
        """Replace resources' whole dynamic configs (the legacy AlterConfigs API)."""
        def attempt(deadline: float) -> None:
            for node, group in self._by_target_broker(list(configs)):
                connection = self._broker_connection(node, deadline)
                request = AlterConfigsRequest(validate_only=validate_only, resources=[
                    AlterConfigsRequest.AlterConfigsResource(
                        resource_type=int(r.type), resource_name=r.name,
                        configs=[AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in configs[r].items()])
                    for r in group])
                response = self._send(connection, request)
                _raise_first(response.responses)
        self._call("alterConfigs", attempt)

    def incremental_alter_configs(self, changes: Mapping[ConfigResource, Sequence[AlterConfigOp]],
                                  validate_only: bool = False) -> None:
        def attempt(deadline: float) -> None:
            for node, group in self._by_target_broker(list(changes)):
                connection = self._broker_connection(node, deadline)
                request = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
                    IncrementalAlterConfigsRequest.AlterConfigsResource(
                        resource_type=int(r.type), resource_name=r.name,
                        configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                            name=op.name, config_operation=int(op.op), value=op.value) for op in changes[r]])
                    for r in group])
                response = self._send(connection, request)
                _raise_first(response.responses)
        self._call("incrementalAlterConfigs", attempt)

    # -- client quotas and SCRAM credentials -------------------------------------------
    #
    # What kafka-configs --bootstrap-server sends for users, clients and ips. An entity is
    # a tuple of (entity type, name) pairs ("user", "client-id" or "ip"; a None name is
    # the type's default entity), as ClientQuotaEntity is.

    QUOTA_MATCH_ANY = object()      # ClientQuotaFilterComponent.ofEntityType: any named entity

    def describe_client_quotas(self, components: Sequence[tuple[str, object]], strict: bool = False
                               ) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        """DescribeClientQuotas: each component is (entity type, name), the name a string
        (that entity), None (the default entity) or QUOTA_MATCH_ANY; entities in the order
        the broker listed them, each with its quota values."""
        from kafkalike.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest
        request = DescribeClientQuotasRequest(strict=strict, components=[
            DescribeClientQuotasRequest.ComponentData(
                entity_type=entity_type,
                match_type=2 if name is self.QUOTA_MATCH_ANY else 1 if name is None else 0,
                match=name if isinstance(name, str) else None)
            for entity_type, name in components])

        def attempt(deadline: float) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
            response = self._send(self._any_connection(deadline), request)
            if response.error_code != ErrorCode.NONE:
                raise KafkaAdminError(response.error_code, response.error_message)
            return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
                    for entry in response.entries or ()}
        return self._call("describeClientQuotas", attempt)

    def alter_client_quotas(self, alterations: Sequence[tuple[Sequence[tuple[str, str | None]],
                                                              Mapping[str, float | None]]],
                            validate_only: bool = False) -> dict[tuple[tuple[str, str | None], ...],
                                                                  KafkaAdminError | None]:
        """AlterClientQuotas: each alteration is (entity, {key: value, or None to remove});
        the answer maps each entity to None (done) or its error."""
        from kafkalike.protocol.messages.alter_client_quotas import AlterClientQuotasRequest
        request = AlterClientQuotasRequest(validate_only=validate_only, entries=[
            AlterClientQuotasRequest.EntryData(
                entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[AlterClientQuotasRequest.OpData(key=k, value=0.0 if v is None else float(v), remove=v is None)
                     for k, v in ops.items()])
            for entity, ops in alterations])

        def attempt(deadline: float) -> dict[tuple[tuple[str, str | None], ...], KafkaAdminError | None]:
            response = self._send(self._any_connection(deadline), request)
            return {tuple((e.entity_type, e.entity_name) for e in entry.entity):
                    None if entry.error_code == ErrorCode.NONE else KafkaAdminError(entry.error_code,
                                                                                    entry.error_message)
                    for entry in response.entries}
        return self._call("alterClientQuotas", attempt)

    # -- ACLs (Java's createAcls, describeAcls, deleteAcls) ----------------------------------

    def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        """CreateAcls; raises the first binding's refusal (e.g. SECURITY_DISABLED without an authorizer)."""
        request = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
            resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal, host=b.entry.host,
            operation=int(b.entry.operation), permission_type=int(b.entry.permission_type)) for b in bindings])

        def attempt(deadline: float) -> None:
            for result in self._send(self._any_connection(deadline), request).results:
                if result.error_code != ErrorCode.NONE:
                    raise KafkaAdminError(result.error_code, result.error_message)
        self._call("createAcls", attempt)

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """DescribeAcls: the bindings the filter matches."""
        request = DescribeAclsRequest(**_acl_filter_fields(acl_filter))

        def attempt(deadline: float) -> list[AclBinding]:
            response = self._send(self._any_connection(deadline), request)
            if response.error_code != ErrorCode.NONE:
                raise KafkaAdminError(response.error_code, response.error_message)
            return [_acl_binding(r.resource_type, r.resource_name, r.pattern_type, a)
                    for r in response.resources for a in r.acls]
        return self._call("describeAcls", attempt)

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """DeleteAcls: for each filter, the bindings it removed; raises the first refusal."""
        request = DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(**_acl_filter_fields(f))
                                             for f in filters])

        def attempt(deadline: float) -> list[list[AclBinding]]:
            removed = []
            for result in self._send(self._any_connection(deadline), request).filter_results:
                if result.error_code != ErrorCode.NONE:
                    raise KafkaAdminError(result.error_code, result.error_message)
                removed.append([_acl_binding(m.resource_type, m.resource_name, m.pattern_type, m)
                                for m in result.matching_acls])
            return removed
        return self._call("deleteAcls", attempt)

    def describe_user_scram_credentials(self, users: Sequence[str] | None = None
                                        ) -> dict[str, list[tuple[str, int]] | KafkaAdminError]:
        """DescribeUserScramCredentials: each user's [(mechanism name, iterations)], or its
        error; users the broker does not know are left out, as the Java client's users()."""
        from kafkalike.protocol.messages.describe_user_scram_credentials import DescribeUserScramCredentialsRequest
        names = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
        request = DescribeUserScramCredentialsRequest(
            users=None if not users else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users])

        def attempt(deadline: float) -> dict[str, list[tuple[str, int]] | KafkaAdminError]:
            response = self._send(self._any_connection(deadline), request)
            if response.error_code != ErrorCode.NONE:
                raise KafkaAdminError(response.error_code, response.error_message)
            out: dict[str, list[tuple[str, int]] | KafkaAdminError] = {}
            for r in response.results:
                if r.error_code == ErrorCode.RESOURCE_NOT_FOUND:
                    continue
                out[r.user] = (KafkaAdminError(r.error_code, r.error_message) if r.error_code != ErrorCode.NONE
                               else [(names.get(c.mechanism, "UNKNOWN"), c.iterations) for c in r.credential_infos])
            return out
        return self._call("describeUserScramCredentials", attempt)

    def alter_user_scram_credentials(self, upsertions: Sequence[tuple[str, str, int, str]] = (),
                                     deletions: Sequence[tuple[str, str]] = ()) -> dict[str, KafkaAdminError | None]:
        """AlterUserScramCredentials: upsertions are (user, mechanism name, iterations,
        password), deletions (user, mechanism name). As the Java client, only the salted
        password (Hi(password, salt, iterations), RFC 5802) leaves this process."""
        import hashlib
        import os
        from kafkalike.protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsRequest
        mechanisms = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}

        def mechanism(name: str) -> int:
            if name not in mechanisms:
                raise KafkaAdminError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {name}")
            return mechanisms[name][0]

        upserts = []
        for user, name, iterations, password in upsertions:
            salt = os.urandom(24)
            salted = hashlib.pbkdf2_hmac(mechanisms[name][1] if name in mechanisms else "sha256",
                                         password.encode("utf-8"), salt, iterations)
            upserts.append(AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
                name=user, mechanism=mechanism(name), iterations=iterations, salt=salt, salted_password=salted))
        request = AlterUserScramCredentialsRequest(upsertions=upserts, deletions=[
            AlterUserScramCredentialsRequest.ScramCredentialDeletion(name=user, mechanism=mechanism(name))
            for user, name in deletions])

        def attempt(deadline: float) -> dict[str, KafkaAdminError | None]:
            response = self._send_to_controller(request, deadline)     # the controller's job in 2.8
            self._retry_if_controller_moved(r.error_code for r in response.results)
            return {r.user: None if r.error_code == ErrorCode.NONE else KafkaAdminError(r.error_code, r.error_message)
                    for r in response.results}
        return self._call("alterUserScramCredentials", attempt)

    # -- consumer groups -------------------------------------------------------------
    #
    # Every group call first asks any broker for the group's coordinator, then talks to
    # it. A coordinator that moved, is not there yet or is still loading its partition
    # makes the whole call start again (find, then ask) until the call's deadline, as
    # the Java client does; a dead coordinator's broker shows up as a lost connection,
    # which retries the same way.

    def find_coordinator(self, group_id: str) -> CoordinatorNode:
        """The broker coordinating a group: the leader of its __consumer_offsets partition."""
        return self._call("findCoordinator", lambda deadline: self._find_coordinator(group_id, deadline))

    def list_groups(self, states: Iterable[str] = ()) -> list[GroupListing]:
        """Every group of every broker (each coordinates its own), sorted by id; with states,
        only groups in one of them (ListGroups v4+, which also says each group's state)."""
        wanted_states = sorted(set(states))

        def attempt(deadline: float) -> list[GroupListing]:
            self._metadata([], deadline)
            found: dict[str, GroupListing] = {}
            for node in sorted(self._brokers):
                connection = self._broker_connection(node, deadline)
                version = self._version(connection, ListGroupsRequest.API_KEY)
                if wanted_states and version < 4:
                    raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION,
                                          f"The broker only supports ListGroupsRequest v{version}, but we "
                                          "need v4 or newer to request groups by states.")
                request = ListGroupsRequest(states_filter=wanted_states)
                response = self._send(connection, request, version)
                error = ErrorCode(response.error_code)
                if error in _COORDINATOR_RETRIABLE:
                    raise _Retry(True)
                if error != ErrorCode.NONE:
                    raise KafkaAdminError(error)
                for g in response.groups:
                    found[g.group_id] = GroupListing(g.group_id, g.protocol_type,
                                                     g.group_state if version >= 4 else None)
            return [found[g] for g in sorted(found)]
        return self._call("listGroups", attempt)

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """State, protocol and members of each group, asked of its coordinator. A group the
        coordinator does not know is described as Dead; the first failing group raises."""
        wanted = list(dict.fromkeys(group_ids))

        def attempt(deadline: float) -> dict[str, GroupDescription]:
            out = {}
            for group_id in wanted:
                node, connection = self._coordinator_connection(group_id, deadline)
                response = self._send(connection, DescribeGroupsRequest(groups=[group_id]))
                described = next((g for g in response.groups if g.group_id == group_id), None)
                if described is None:
                    raise KafkaAdminError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                          f"The server response did not contain a reference to group {group_id}")
                self._check_group_error(described.error_code)
                out[group_id] = _group_description(described, node)
            return out
        return self._call("describeConsumerGroups", attempt)

    def list_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None
                           ) -> dict[TopicPartition, CommittedOffset]:
        """The group's committed offsets (all of them, or of the given partitions); partitions
        without a commit are left out."""
        asked = None if partitions is None else list(dict.fromkeys(partitions))

        def attempt(deadline: float) -> dict[TopicPartition, CommittedOffset]:
            _node, connection = self._coordinator_connection(group_id, deadline)
            version = self._version(connection, OffsetFetchRequest.API_KEY)
            if asked is None and version < 2:
                raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION,
                                      "Fetching all of a group's offsets needs OffsetFetch v2 or newer")
            topics = None if asked is None else [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=parts)
                for topic, parts in _by_topic(asked).items()]
            response = self._send(connection, OffsetFetchRequest(group_id=group_id, topics=topics), version)
            if version >= 2:
                self._check_group_error(response.error_code)
            out = {}
            for topic in response.topics:
                for p in topic.partitions:
                    error = ErrorCode(p.error_code)
                    if error in _COORDINATOR_RETRIABLE:
                        raise _Retry(True)
                    if error != ErrorCode.NONE or p.committed_offset < 0:
                        continue        # no commit there (Java leaves these out too)
                    epoch = p.committed_leader_epoch if version >= 5 and p.committed_leader_epoch >= 0 else None
                    out[(topic.name, p.partition_index)] = CommittedOffset(p.committed_offset, epoch,
                                                                           p.metadata or "")
            return out
        return self._call("listConsumerGroupOffsets", attempt)

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int | CommittedOffset]) -> None:
        """Commit offsets for a group from outside it (generation -1, no member id).

        The coordinator accepts such a commit only while the group has no members (Empty,
        or a group that does not exist yet); a live group answers UNKNOWN_MEMBER_ID,
        raised here as UnknownMemberIdException. Raises for the first partition that failed.
        """
        commits = {tp: o if isinstance(o, CommittedOffset) else CommittedOffset(int(o)) for tp, o in offsets.items()}

        def attempt(deadline: float) -> None:
            if not commits:
                return
            _node, connection = self._coordinator_connection(group_id, deadline)
            part = OffsetCommitRequest.OffsetCommitRequestPartition
            topics = [OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                part(partition_index=p, committed_offset=o.offset,
                     committed_leader_epoch=-1 if o.leader_epoch is None else o.leader_epoch,
                     committed_metadata=o.metadata) for p, o in entries])
                for topic, entries in _by_topic_items(commits).items()]
            request = OffsetCommitRequest(group_id=group_id, generation_id=-1, member_id="",
                                          group_instance_id=None, topics=topics)
            response = self._send(connection, request)
            errors = {(t.name, p.partition_index): ErrorCode(p.error_code)
                      for t in response.topics for p in t.partitions}
            if any(e in _COORDINATOR_RETRIABLE for e in errors.values()):
                raise _Retry(True)
            for tp in commits:
                error = errors.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
                if error != ErrorCode.NONE:
                    raise KafkaAdminError(error)
        self._call("commitOffsets", attempt)

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, KafkaAdminError | None]:
        """Delete groups (only Empty ones can go): each group's error, or None if it was deleted."""
        wanted = list(dict.fromkeys(group_ids))
        results: dict[str, KafkaAdminError | None] = {}

        def attempt(deadline: float) -> dict[str, KafkaAdminError | None]:
            for group_id in wanted:
                if group_id in results:
                    continue        # settled by an earlier attempt: deleting it again would fail
                _node, connection = self._coordinator_connection(group_id, deadline)
                response = self._send(connection, DeleteGroupsRequest(groups_names=[group_id]))
                code = next((r.error_code for r in response.results if r.group_id == group_id),
                            ErrorCode.UNKNOWN_SERVER_ERROR)
                error = ErrorCode(code)
                if error in _COORDINATOR_RETRIABLE:
                    raise _Retry(True)
                results[group_id] = None if error == ErrorCode.NONE else KafkaAdminError(error)
            return {g: results[g] for g in wanted}
        return self._call("deleteConsumerGroups", attempt)

    def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition]
                             ) -> dict[TopicPartition, KafkaAdminError | None]:
        """Delete a group's committed offsets (OffsetDelete). A group-level refusal (no such
        group, not empty) raises; otherwise each partition's error, or None if deleted."""
        asked = list(dict.fromkeys(partitions))

        def attempt(deadline: float) -> dict[TopicPartition, KafkaAdminError | None]:
            _node, connection = self._coordinator_connection(group_id, deadline)
            request = OffsetDeleteRequest(group_id=group_id, topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(name=topic, partitions=[
                    OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in parts])
                for topic, parts in _by_topic(asked).items()])
            response = self._send(connection, request)
            self._check_group_error(response.error_code)
            codes = {(t.name, p.partition_index): ErrorCode(p.error_code)
                     for t in response.topics for p in t.partitions}
            return {tp: (None if codes.get(tp) == ErrorCode.NONE
                         else KafkaAdminError(codes.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR))) for tp in asked}
        return self._call("deleteConsumerGroupOffsets", attempt)

    def list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec],
                     isolation_level: str = "read_uncommitted") -> dict[TopicPartition, ListedOffset]:
        """Earliest, latest or by-timestamp offsets, asked of each partition's leader; a moved
        or missing leader is looked up again until the deadline. As Java's
        ListOffsetsOptions(isolationLevel): "latest" is the high watermark with
        read_uncommitted, the last stable offset (the first offset of the oldest open
        transaction) with read_committed, which needs ListOffsets v2+."""
        wanted = dict(specs)
        level = str(isolation_level).lower()
        if level not in ISOLATION_LEVELS:
            raise ValueError(f"Invalid isolation level {isolation_level!r}: one of {', '.join(ISOLATION_LEVELS)}")
        isolation = ISOLATION_LEVELS[level]

        def attempt(deadline: float) -> dict[TopicPartition, ListedOffset]:
            if not wanted:
                return {}
            metadata = self._metadata(sorted({t for t, _ in wanted}), deadline)
            leaders = _leaders(metadata, wanted)
            out: dict[TopicPartition, ListedOffset] = {}
            for leader, tps in leaders.items():
                connection = self._broker_connection(leader, deadline)
                version = self._version(connection, ListOffsetsRequest.API_KEY)
                if isolation and version < 2:
                    # Java's ListOffsetsRequest.Builder: read_committed needs v2.
                    raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION,
                                          f"The broker only supports ListOffsets up to v{version}, which has no "
                                          "isolation level: it cannot list offsets for read_committed")
                request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[
                    ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=p,
                                                                timestamp=wanted[(topic, p)].timestamp)
                        for p in parts])
                    for topic, parts in _by_topic(tps).items()])
                response = self._send(connection, request, version)
                for t in response.topics:
                    for p in t.partitions:
                        error = ErrorCode(p.error_code)
                        if error in _LEADER_RETRIABLE:
                            raise _Retry(True)
                        if error != ErrorCode.NONE:
                            raise KafkaAdminError(error)
                        if version == 0:
                            offset = p.old_style_offsets[0] if p.old_style_offsets else -1
                            out[(t.name, p.partition_index)] = ListedOffset(offset)
                        else:
                            out[(t.name, p.partition_index)] = ListedOffset(
                                p.offset, p.timestamp, p.leader_epoch if version >= 4 and p.leader_epoch >= 0 else None)
            missing = [tp for tp in wanted if tp not in out]
            if missing:
                raise KafkaAdminError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                      f"The server response did not contain partition {missing[0][0]}-{missing[0][1]}")
            return {tp: out[tp] for tp in wanted}
        return self._call("listOffsets", attempt)

    def delete_records(self, before: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Move each partition's log start offset to `before[tp]` (-1: the high watermark),
        asked of its leader; returns the new low watermarks (Admin.deleteRecords)."""
        wanted = {tuple(tp): offset for tp, offset in before.items()}

        def attempt(deadline: float) -> dict[TopicPartition, int]:
            if not wanted:
                return {}
            metadata = self._metadata(sorted({t for t, _ in wanted}), deadline)
            out: dict[TopicPartition, int] = {}
            for leader, tps in _leaders(metadata, wanted).items():
                connection = self._broker_connection(leader, deadline)
                request = DeleteRecordsRequest(timeout_ms=int(self._request_timeout * 1000), topics=[
                    DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[
                        DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=wanted[(topic, p)])
                        for p in parts])
                    for topic, parts in _by_topic(tps).items()])
                response = self._send(connection, request, self._version(connection, DeleteRecordsRequest.API_KEY))
                for t in response.topics:
                    for p in t.partitions:
                        error = ErrorCode(p.error_code)
                        if error in _LEADER_RETRIABLE:
                            raise _Retry(True)
                        if error != ErrorCode.NONE:
                            raise KafkaAdminError(error)
                        out[(t.name, p.partition_index)] = p.low_watermark
            return {tp: out[tp] for tp in wanted}
        return self._call("deleteRecords", attempt)

    def _find_coordinator(self, group_id: str, deadline: float) -> CoordinatorNode:
        connection = self._any_connection(deadline)
        response = self._send(connection, FindCoordinatorRequest(key=group_id, key_type=0))
        error = ErrorCode(response.error_code)
        if error in _COORDINATOR_RETRIABLE:
            raise _Retry(True)       # e.g. __consumer_offsets is being created
        if error != ErrorCode.NONE:
            message = response.error_message
            raise KafkaAdminError(error, message if message and message != error.name else None)
        return CoordinatorNode(response.node_id, response.host, response.port)

    def _coordinator_connection(self, group_id: str, deadline: float) -> tuple[CoordinatorNode, BrokerConnection]:
        node = self._find_coordinator(group_id, deadline)
        return node, self._connect(node.host, node.port, deadline)

    @staticmethod
    def _check_group_error(code: int) -> None:
        error = ErrorCode(code)
        if error in _COORDINATOR_RETRIABLE:
            raise _Retry(True)
        if error != ErrorCode.NONE:
            raise KafkaAdminError(error)

    # -- the call machinery ----------------------------------------------------------

    def _call(self, name: str, attempt: Callable[[float], T]) -> T:
        """Run attempt(deadline) until it succeeds, fails for good, or the deadline passes."""
        start = time.time()
        deadline = time.monotonic() + self._api_timeout
        tries = 0
        reached_a_broker = False
        while True:
            tries += 1
            try:
                return attempt(deadline)
            except _Retry as retry:
                reached_a_broker = reached_a_broker or bool(retry.args and retry.args[0])
            now = time.monotonic()
            if now + self._backoff >= deadline:
                if not reached_a_broker:
                    raise KafkaAdminError(ErrorCode.REQUEST_TIMED_OUT,
                                          f"Timed out waiting for a node assignment. Call: {name}")
                deadline_ms = int((start + self._api_timeout) * 1000)
                now_ms = int(time.time() * 1000)
                raise KafkaAdminError(ErrorCode.REQUEST_TIMED_OUT,
                                      f"Call(callName={name}, deadlineMs={deadline_ms}, tries={tries}, "
                                      f"nextAllowedTryMs={now_ms + int(self._backoff * 1000)}) timed out at "
                                      f"{now_ms} after {tries} attempt(s)")
            time.sleep(self._backoff)

    def _op_timeout_ms(self, deadline: float) -> int:
        """The broker-side wait for an operation: within the socket timeout and the call's deadline."""
        remaining = min(deadline - time.monotonic(), self._request_timeout * 0.9)
        return max(1, int(remaining * 1000))

    def _connect(self, host: str, port: int, deadline: float) -> BrokerConnection:
        key = (host, port)
        connection = self._connections.get(key)
        if connection is not None and connection.connected:
            return connection
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Retry(False)
        connection = BrokerConnection(host, port, client_id=self.config["client.id"],
                                      timeout=min(self._request_timeout, remaining), security=self.security)
        try:
            connection.connect()
        except KafkaConnectionError:
            self._warn_unreachable(host, port)
            raise _Retry(False) from None
        except UnsupportedApiVersion as error:
            raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION, str(error)) from None
        connection.timeout = self._request_timeout
        self._connections[key] = connection
        return connection

    def _warn_unreachable(self, host: str, port: int) -> None:
        """Java's "Connection to node N (host/ip:port) could not be established" warning, so a
        tool waiting on an unreachable cluster is not silent; bootstrap servers are nodes -1, -2, ..."""
        now = time.monotonic()
        if now - self._unreachable_warned.get((host, port), -UNREACHABLE_WARNING_INTERVAL_S) \
                < UNREACHABLE_WARNING_INTERVAL_S:
            return
        self._unreachable_warned[(host, port)] = now
        node = next((b.id for b in self._brokers.values() if (b.host, b.port) == (host, port)), None)
        if node is None:
            node = -1 - list(self._bootstrap).index((host, port)) if (host, port) in self._bootstrap else -1
        try:
            address = f"{host}/{socket.gethostbyname(host)}:{port}"
        except OSError:
            address = f"{host}:{port}"
        log.warning("[AdminClient clientId=%s] Connection to node %d (%s) could not be established. "
                    "Broker may not be available.", self.config["client.id"], node, address)

    def _any_connection(self, deadline: float) -> BrokerConnection:
        for connection in self._connections.values():
            if connection.connected:
                return connection
        candidates = list(self._bootstrap) + [(b.host, b.port) for b in self._brokers.values()]
        for host, port in dict.fromkeys(candidates):
            try:
                return self._connect(host, port, deadline)
            except _Retry:
                continue
        raise _Retry(False)

    def _broker_connection(self, node_id: int | None, deadline: float) -> BrokerConnection:
        if node_id is None:
            return self._any_connection(deadline)
        if node_id not in self._brokers:
            self._metadata([], deadline)
        broker = self._brokers.get(node_id)
        if broker is None:
            raise KafkaAdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"No broker with id {node_id} in the cluster.")
        return self._connect(broker.host, broker.port, deadline)

    def _controller_connection(self, deadline: float) -> BrokerConnection:
        if self._controller_id not in self._brokers:
            self._metadata([], deadline)
        controller = self._brokers.get(self._controller_id)
        if controller is None:
            raise _Retry(True)  # no controller elected yet
        try:
            return self._connect(controller.host, controller.port, deadline)
        except _Retry:
            self._forget_controller()
            raise

    def _forget_controller(self) -> None:
        """As Java's AdminClient after a failed call to the controller: the next try asks for
        metadata again, which names the new controller once ZooKeeper has expired the old
        one's session (not this one again until the call's timeout)."""
        self._controller_id = -1

    def _send_to_controller(self, request, deadline: float):
        return self._send(self._controller_connection(deadline), request)

    def _send(self, connection: BrokerConnection, request, version: int | None = None):
        try:
            return connection.send(request, version)
        except UnsupportedApiVersion as error:
            raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION, str(error)) from None
        except KafkaConnectionError:
            self._connections.pop((connection.host, connection.port), None)
            controller = self._brokers.get(self._controller_id)
            if controller is not None and (controller.host, controller.port) == (connection.host, connection.port):
                self._forget_controller()
            raise _Retry(True) from None

    @staticmethod
    def _version(connection: BrokerConnection, api_key: int) -> int:
        try:
            return connection.pick_version(api_key)
        except UnsupportedApiVersion as error:
            raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION, str(error)) from None

    def _retry_when_throttled(self, throttled: bool, throttle_time_ms: int, deadline: float) -> None:
        """Topics the controller mutation quota held back go again after the throttle time;
        if that is past the call's deadline, they fail with the quota's error, as Java's."""
        if not throttled:
            return
        wait = max(throttle_time_ms or 0, 0) / 1000.0
        if time.monotonic() + wait >= deadline:
            raise KafkaAdminError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")
        time.sleep(max(wait - self._backoff, 0))        # _call sleeps the backoff
        raise _Retry(True)

    def _retry_if_controller_moved(self, codes: Iterable[int]) -> None:
        if any(code == ErrorCode.NOT_CONTROLLER for code in codes):
            self._forget_controller()
            raise _Retry(True)

    def _metadata(self, topics: list[str] | None, deadline: float) -> MetadataResponse:
        """Fetch metadata (None: all topics) and refresh the brokers and controller we know."""
        connection = self._any_connection(deadline)
        version = self._version(connection, MetadataRequest.API_KEY)
        if topics is None:
            request_topics = None if version >= 1 else []
        else:
            request_topics = [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        response = self._send(connection, MetadataRequest(topics=request_topics, allow_auto_topic_creation=False),
                              version)
        self._brokers = {b.node_id: BrokerNode(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
        self._controller_id = response.controller_id
        self._cluster_id = response.cluster_id
        return response

    def _by_target_broker(self, resources: Sequence[ConfigResource]) -> list[tuple[int | None, list[ConfigResource]]]:
        """Broker resources go to that broker; everything else to any broker (Java's rule)."""
        groups: dict[int | None, list[ConfigResource]] = {}
        for resource in resources:
            node = None
            if resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and resource.name:
                try:
                    node = int(resource.name)
                except ValueError:
                    raise KafkaAdminError(ErrorCode.INVALID_REQUEST,
                                          f"Broker resource name must be a broker id, not {resource.name!r}") from None
            groups.setdefault(node, []).append(resource)
        return list(groups.items())

    def elect_leaders(self, election_type: int, partitions: Iterable[TopicPartition] | None = None
                      ) -> dict[TopicPartition, KafkaAdminError | None]:
        """ElectLeaders on the controller (election_type 0 = PREFERRED, 1 = UNCLEAN); None asks
        for every partition, and then only those that had an election or failed come back.
        Each partition maps to None (elected) or its error; ELECTION_NOT_NEEDED is an error,
        as in the Java client."""
        from kafkalike.protocol.messages.elect_leaders import ElectLeadersRequest
        asked = None if partitions is None else list(dict.fromkeys(partitions))

        def attempt(deadline: float) -> dict[TopicPartition, KafkaAdminError | None]:
            controller = self._controller_connection(deadline)
            version = self._version(controller, ElectLeadersRequest.API_KEY)
            if version == 0 and election_type != 0:
                raise KafkaAdminError(ErrorCode.UNSUPPORTED_VERSION,
                                      "The broker does not support UNCLEAN leader elections")
            request = ElectLeadersRequest(election_type=election_type, timeout_ms=self._op_timeout_ms(deadline),
                                          topic_partitions=None if asked is None else [
                                              ElectLeadersRequest.TopicPartitions(topic=t, partition_id=ps)
                                              for t, ps in _by_topic(asked).items()])
            response = self._send(controller, request, version)
            if version >= 1 and response.error_code != ErrorCode.NONE:
                raise KafkaAdminError(response.error_code)
            codes = [p.error_code for r in response.replica_election_results for p in r.partition_result]
            self._retry_if_controller_moved(codes)
            out: dict[TopicPartition, KafkaAdminError | None] = {}
            for r in response.replica_election_results:
                for p in r.partition_result:
                    out[(r.topic, p.partition_id)] = (
                        None if p.error_code == ErrorCode.NONE
                        else KafkaAdminError(p.error_code, p.error_message or _ELECTION_MESSAGES.get(p.error_code)))
            return out
        return self._call("electLeaders", attempt)


# Kafka's own text for the ElectLeaders errors, used when the controller sends none.
_ELECTION_MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, partition in partitions:
        out.setdefault(topic, []).append(partition)
    return out


def _by_topic_items(values: Mapping[TopicPartition, T]) -> dict[str, list[tuple[int, T]]]:
    out: dict[str, list[tuple[int, T]]] = {}
    for (topic, partition), value in values.items():
        out.setdefault(topic, []).append((partition, value))
    return out


def _group_description(described, node: CoordinatorNode) -> GroupDescription:
    """Assignments are decoded only for consumer groups; other protocols' bytes mean nothing here."""
    consumer = described.protocol_type == CONSUMER_PROTOCOL_TYPE
    members = tuple(MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                      decode_assignment(bytes(m.member_assignment)) if consumer else ())
                    for m in described.members)
    return GroupDescription(described.group_id, described.protocol_type, described.group_state,
                            described.protocol_data, members, node)


def _leaders(metadata: MetadataResponse, wanted: Mapping[TopicPartition, object]) -> dict[int, list[TopicPartition]]:
    """Partitions grouped by leader; an unknown topic or partition fails, a missing leader retries."""
    topics = {t.name: t for t in metadata.topics}
    live = {b.node_id for b in metadata.brokers}
    leaders: dict[int, list[TopicPartition]] = {}
    for topic, partition in wanted:
        described = topics.get(topic)
        error = ErrorCode(described.error_code) if described is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if error == ErrorCode.LEADER_NOT_AVAILABLE:
            raise _Retry(True)
        if error != ErrorCode.NONE:
            raise KafkaAdminError(error)
        info = next((p for p in described.partitions if p.partition_index == partition), None)
        if info is None:
            raise KafkaAdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if info.leader_id < 0 or info.leader_id not in live:
            raise _Retry(True)
        leaders.setdefault(info.leader_id, []).append((topic, partition))
    return leaders


def _check_representable(name: str) -> None:
    if not name:
        raise KafkaAdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                              f"The given topic name '{name}' cannot be represented in a request.")


def _creatable(topic: NewTopic):
    creatable = CreateTopicsRequest.CreatableTopic(
        name=topic.name, num_partitions=topic.num_partitions, replication_factor=topic.replication_factor,
        configs=[CreateTopicsRequest.CreateableTopicConfig(name=k, value=v) for k, v in topic.configs.items()])
    if topic.replica_assignment is not None:
        creatable.num_partitions, creatable.replication_factor = -1, -1
        creatable.assignments = [
            CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(replicas))
            for p, replicas in topic.replica_assignment.items()]
    return creatable


def _partition_info(p, live: set[int]) -> PartitionInfo:
    leader = p.leader_id if p.leader_id >= 0 and p.leader_id in live else None
    return PartitionInfo(p.partition_index, leader, tuple(p.replica_nodes), tuple(p.isr_nodes),
                         tuple(p.offline_replicas), p.leader_epoch)


def _source(value: int) -> ConfigSource:
    try:
        return ConfigSource(value)
    except ValueError:
        return ConfigSource.UNKNOWN


def _config_entry(c, version: int) -> ConfigEntry:
    if version == 0:  # v0 only says whether the value is a default
        source = ConfigSource.DEFAULT_CONFIG if c.is_default else ConfigSource.UNKNOWN
    else:
        source = _source(c.config_source)
    synonyms = tuple(ConfigSynonym(s.name, s.value, _source(s.source)) for s in (c.synonyms or ()))
    return ConfigEntry(c.name, c.value, source, bool(c.read_only), bool(c.is_sensitive), synonyms)


def _raise_first(responses) -> None:
    for r in responses:
        if r.error_code != ErrorCode.NONE:
            raise KafkaAdminError(r.error_code, r.error_message)



def _acl_filter_fields(f: AclBindingFilter) -> dict:
    """A binding filter as DescribeAcls' and DeleteAcls' filter fields."""
    return dict(resource_type_filter=int(f.resource_type), resource_name_filter=f.name,
                pattern_type_filter=int(f.pattern_type), principal_filter=f.principal, host_filter=f.host,
                operation=int(f.operation), permission_type=int(f.permission_type))


def _acl_binding(resource_type: int, name: str, pattern_type: int, acl) -> AclBinding:
    return AclBinding(ResourcePattern(AclResourceType(resource_type), name, PatternType(pattern_type)),
                      AccessControlEntry(acl.principal, acl.host, AclOperation(acl.operation),
                                         AclPermissionType(acl.permission_type)))

__all__ = ["AdminClient", "AlterConfigOp", "AlterConfigOpType", "BrokerNode", "ClusterDescription",
           "CommittedOffset", "ConfigEntry", "ConfigResource", "ConfigSource", "ConfigSynonym", "CoordinatorNode",
           "CreatedTopic", "GroupDescription", "GroupListing", "INTERNAL_TOPICS", "KafkaAdminError", "ListedOffset",
           "MemberDescription", "NewPartitions", "NewTopic", "OffsetSpec", "PartitionInfo", "PartitionReassignment",
           "ResourceType", "TopicDescription", "TopicListing", "java_exception_name"]
