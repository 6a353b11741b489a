"""kafka-topics --zookeeper: topics managed through their znodes, as Kafka 2.8's AdminZkClient does.

A create writes /config/topics/T and then /brokers/topics/T (no topic id: from a tool,
2.8 leaves that to the controller), a delete creates /admin/delete_topics/T, an alter
rewrites the assignment or the config and leaves a config change notification; the
controller and brokers take it from there. kazoo is used directly and blocking, which
suits a command-line tool, and parents are created as null znodes, as Kafka does.
"""
from __future__ import annotations

from typing import Mapping

from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkalike.cli.joptions import JavaError
from kafkalike.cli.topics_describe import (
    DescribeFilter,
    PartitionView,
    TopicView,
    config_order,
    format_partition,
    format_topic,
)
from kafkalike.cli.topics_options import (
    ADMIN_OPERATION,
    ILLEGAL_ARGUMENT,
    KAFKA_ERRORS,
    ParsedArgs,
    TopicRequest,
    ensure_topic_exists,
    topic_filter,
)
from kafkalike.cli.zookeeper_tool import ZooKeeperTool
from kafkalike.common.assignment import InvalidPartitions, InvalidReplicationFactor, assign_replicas
from kafkalike.common.topics import INTERNAL_TOPICS, InvalidTopicName, collides, validate
from kafkalike.storage.config import LogConfig
from kafkalike.zkdata.broker_registration import BROKER_IDS_PATH, BrokerIdZNode, BrokerRegistration
from kafkalike.zkdata.kafka_json import java_properties_order
from kafkalike.zkdata.topic_znodes import (
    PartitionAssignment,
    ReplicaAssignment,
    TopicPartition,
    TopicPartitionStateZNode,
    TopicZNode,
)
from kafkalike.zkdata.znodes import (
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ConfigType,
    DeleteTopicsZNode,
)


class ZookeeperTopicService(ZooKeeperTool):
    """TopicCommand's ZookeeperTopicService: reads and writes Kafka's znodes directly."""

    def all_topics(self) -> list[str]:
        return sorted(self._children("/brokers/topics"))

    def get_topics(self, include: str | None, exclude_internal: bool = False) -> list[str]:
        allowed = topic_filter(include, exclude_internal)
        return [t for t in self.all_topics() if allowed(t)]

    def marked_for_deletion(self, topic: str) -> bool:
        return self.zk.exists(DeleteTopicsZNode.topic_path(topic)) is not None

    def brokers(self) -> list[BrokerRegistration]:
        registrations = []
        for child in self._children(BROKER_IDS_PATH):
            data = self._get(f"{BROKER_IDS_PATH}/{child}")
            if data is not None:
                registrations.append(BrokerIdZNode.decode(int(child), data))
        return sorted(registrations, key=lambda b: b.id)

    def assignment(self, topic: str) -> PartitionAssignment | None:
        try:
            data = self.zk.get(TopicZNode.path(topic))[0]
        except NoNodeError:
            return None
        return TopicZNode.decode(topic, data)

    def topic_config(self, topic: str) -> dict[str, str]:
        return ConfigEntityZNode.decode(self._get(ConfigEntityZNode.path(ConfigType.TOPIC, topic)))

    def write_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """setOrCreateEntityConfigs: overwrite /config/topics/T, creating it if need be."""
        path, data = ConfigEntityZNode.path(ConfigType.TOPIC, topic), ConfigEntityZNode.encode(config)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            self._create_recursive(path, data)

    def notify_config_change(self, topic: str) -> None:
        """A sequential /config/changes/config_change_ znode that makes every broker reload T's config."""
        try:
            self._create_recursive(ConfigEntityChangeNotificationZNode.path())
        except NodeExistsError:
            pass
        notification = ConfigEntityChangeNotificationZNode
        self.zk.create(notification.create_path(), notification.encode(f"topics/{topic}"), sequence=True)

    def broker_racks(self, rack_aware: bool) -> tuple[list[int], dict[int, str]]:
        """getBrokerMetadatas: sorted ids and, when rack aware, every broker's rack."""
        brokers = self.brokers()
        with_rack = [b for b in brokers if b.rack is not None]
        if rack_aware and with_rack and len(with_rack) < len(brokers):
            raise JavaError(ADMIN_OPERATION, "Not all brokers have rack information. Add --disable-rack-aware "
                                             "in command line to make replica assignment without rack information.")
        racks = {b.id: b.rack for b in with_rack} if rack_aware else {}
        return [b.id for b in brokers], racks

    # the commands

    def create_topic(self, request: TopicRequest) -> None:
        topic, assignment = request.name, request.replica_assignment
        try:
            if assignment is None:
                brokers, racks = self.broker_racks(request.rack_aware)
                try:
                    assignment = assign_replicas(brokers, request.partitions, request.replication_factor, racks)
                except ValueError as error:
                    raise JavaError(_assignment_error_class(error), str(error)) from None
            try:
                validate(topic)
            except InvalidTopicName as error:
                raise JavaError(KAFKA_ERRORS + "InvalidTopicException", str(error)) from None
            existing = self.all_topics()
            if topic in existing:
                raise JavaError(KAFKA_ERRORS + "TopicExistsException", f"Topic '{topic}' already exists.")
            colliding = [t for t in existing if collides(topic, t)]
            if colliding:
                raise JavaError(KAFKA_ERRORS + "InvalidTopicException",
                                f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}")
            self._write_new_topic(topic, request.configs_to_add, assignment)
            self.out.write(f"Created topic {topic}.\n")
        except JavaError as error:
            if not (error.java_class.endswith("TopicExistsException") and request.if_not_exists):
                raise

    def _write_new_topic(self, topic: str, configs: Mapping[str, str], assignment: Mapping[int, list[int]]) -> None:
        self.write_topic_config(topic, configs)
        try:
            # No topic id: from a tool, Kafka 2.8 leaves it to the controller to add one.
            self._create_recursive(TopicZNode.path(topic), TopicZNode.encode(PartitionAssignment.of(assignment)))
        except NodeExistsError:
            raise JavaError(KAFKA_ERRORS + "TopicExistsException", f"Topic '{topic}' already exists.") from None

    def list_topics(self, args: ParsedArgs) -> None:
        for topic in self.get_topics(args.value("topic"), args.has("exclude-internal")):
            suffix = " - marked for deletion" if self.marked_for_deletion(topic) else ""
            self.out.write(f"{topic}{suffix}\n")

    def alter_topic(self, args: ParsedArgs) -> None:
        topics = self.get_topics(args.value("topic"), args.has("exclude-internal"))
        request = TopicRequest.from_args(args, self.out)
        ensure_topic_exists(topics, args.value("topic"), not args.has("if-exists"))
        for topic in topics:
            configs = self.topic_config(topic)
            if args.has("config") or args.has("delete-config"):
                self.out.write("WARNING: Altering topic configuration from this script has been deprecated and "
                               "may be removed in future releases.\n"
                               "         Going forward, please use kafka-configs.sh for this functionality\n")
                configs.update(request.configs_to_add)
                for name in request.configs_to_delete:
                    configs.pop(name, None)
                self.change_topic_config(topic, configs)
                self.out.write(f"Updated config for topic {topic}.\n")
            if request.partitions is not None:
                if topic in INTERNAL_TOPICS:
                    raise JavaError(ILLEGAL_ARGUMENT,
                                    f"The number of partitions for the internal topic {topic} cannot be changed.")
                self.out.write("WARNING: If partitions are increased for a topic that has a key, the partition "
                               "logic or ordering of the messages will be affected\n")
                self.add_partitions(topic, request.partitions, request.replica_assignment, request.rack_aware)
                self.out.write("Adding partitions succeeded!\n")

    def change_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        if self.assignment(topic) is None:
            raise JavaError(KAFKA_ERRORS + "UnknownTopicOrPartitionException", f"Topic '{topic}' does not exist.")
        LogConfig.from_props(configs)
        self.write_topic_config(topic, configs)
        self.notify_config_change(topic)

    def add_partitions(self, topic: str, count: int, manual: dict[int, list[int]] | None, rack_aware: bool) -> None:
        """AdminZkClient.addPartitions: validate, place the new partitions, rewrite the assignment."""
        existing = self.assignment(topic)
        if existing is None or not existing.partitions:
            raise JavaError(KAFKA_ERRORS + "InvalidTopicException", f"The topic {topic} does not exist")
        if 0 not in existing.partitions:
            raise JavaError(ADMIN_OPERATION, f"Unexpected existing replica assignment for topic '{topic}', "
                                             f"partition id 0 is missing. Assignment: {existing.replicas()}")
        first = existing.partitions[0].replicas
        to_add = count - len(existing.partitions)
        if to_add <= 0:
            raise JavaError(KAFKA_ERRORS + "InvalidPartitionsException",
                            f"The number of partitions for a topic can only be increased. Topic {topic} currently "
                            f"has {len(existing.partitions)} partitions, {count} would not be an increase.")
        brokers, racks = self.broker_racks(rack_aware)
        new = {p: r for p, r in (manual or {}).items() if p >= len(existing.partitions)}
        if new:
            _validate_added_replicas(new, len(first), set(brokers))
        else:
            start = next((i for i, b in enumerate(brokers) if b >= first[0]), 0)
            try:
                new = assign_replicas(brokers, to_add, len(first), racks, start_index=start,
                                      start_partition=len(existing.partitions))
            except ValueError as error:
                raise JavaError(_assignment_error_class(error), str(error)) from None
        combined = dict(existing.partitions)
        combined.update({p: ReplicaAssignment(tuple(r)) for p, r in new.items()})
        self.zk.set(TopicZNode.path(topic), TopicZNode.encode(PartitionAssignment(combined, existing.topic_id)))

    def describe_topic(self, args: ParsedArgs) -> None:
        topics = self.get_topics(args.value("topic"), args.has("exclude-internal"))
        ensure_topic_exists(topics, args.value("topic"), not args.has("if-exists"))
        live = {b.id for b in self.brokers()}
        wanted = DescribeFilter.from_args(args)
        for topic in topics:
            assignment = self.assignment(topic)
            if assignment is None:
                self.out.write(f"Topic {topic} doesn't exist!\n")
                continue
            marked = self.marked_for_deletion(topic)
            partitions = assignment.partitions
            if wanted.describe_configs:
                overrides = self.topic_config(topic)
                if wanted.shows_topic(bool(overrides)):
                    ordered_names = config_order(java_properties_order(list(overrides)))
                    first = partitions[min(partitions)].replicas if partitions else ()
                    self.out.write(format_topic(TopicView(
                        topic, assignment.topic_id, len(partitions), len(first),
                        tuple((k, overrides[k]) for k in ordered_names), marked)) + "\n")
            if wanted.describe_partitions:
                for partition in sorted(partitions):
                    data = self._get(TopicPartitionStateZNode.path(TopicPartition(topic, partition)))
                    state = TopicPartitionStateZNode.decode(data, 0) if data else None
                    leader = state.leader if state is not None and state.leader >= 0 else None
                    view = PartitionView(topic, partition, leader, partitions[partition].replicas,
                                         state.isr if state is not None else (), None, marked)
                    if wanted.shows_partition(view, live):
                        self.out.write(format_partition(view) + "\n")

    def delete_topic(self, args: ParsedArgs) -> None:
        topics = self.get_topics(args.value("topic"), args.has("exclude-internal"))
        ensure_topic_exists(topics, args.value("topic"), not args.has("if-exists"))
        for topic in topics:
            if topic in INTERNAL_TOPICS:
                raise JavaError(ADMIN_OPERATION, f"Topic {topic} is a kafka internal topic and is not allowed to "
                                                 "be marked for deletion.")
            try:
                self._create_recursive(DeleteTopicsZNode.topic_path(topic))
            except NodeExistsError:
                self.out.write(f"Topic {topic} is already marked for deletion.\n")
                continue
            self.out.write(f"Topic {topic} is marked for deletion.\n"
                           "Note: This will have no impact if delete.topic.enable is not set to true.\n")


def _assignment_error_class(error: ValueError) -> str:
    if isinstance(error, InvalidReplicationFactor):
        return KAFKA_ERRORS + "InvalidReplicationFactorException"
    if isinstance(error, InvalidPartitions):
        return KAFKA_ERRORS + "InvalidPartitionsException"
    return ADMIN_OPERATION


def _validate_added_replicas(new: Mapping[int, list[int]], replication_factor: int, brokers: set[int]) -> None:
    """AdminZkClient.validateReplicaAssignment for the partitions being added."""
    invalid = KAFKA_ERRORS + "InvalidReplicaAssignmentException"
    for partition, replicas in new.items():
        if not replicas:
            raise JavaError(invalid, f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(set(replicas)) != len(replicas):
            raise JavaError(invalid, "Duplicate brokers not allowed in replica assignment: "
                                     f"{', '.join(map(str, replicas))} for partition id {partition}.")
        if not set(replicas) <= brokers:
            raise JavaError(KAFKA_ERRORS + "BrokerNotAvailableException",
                            f"Some brokers specified for partition id {partition} are not available. "
                            f"Specified brokers: {', '.join(map(str, replicas))}, "
                            f"available brokers: {', '.join(map(str, sorted(brokers)))}.")
    bad = sorted((p, len(r)) for p, r in new.items() if len(r) != replication_factor)
    if bad:
        raise JavaError(invalid, f"Inconsistent replication factor between partitions, partition 0 has "
                                 f"{replication_factor} while partitions [{', '.join(str(p) for p, _ in bad)}] have "
                                 f"replication factors [{', '.join(str(n) for _, n in bad)}], respectively.")
