"""kafka-reassign-partitions --zookeeper: --generate, --execute and --verify through the znodes.

As Kafka 2.8's deprecated path: --execute checks the partitions and brokers against
ZooKeeper, writes the throttles into /config/topics/<t> and /config/brokers/<id> (each
with a /config/changes notification, as AdminZkClient does) and starts the reassignments
by creating /admin/reassign_partitions, which the controller picks up and deletes when
they are done; --verify reads that znode (a partition still listed is in progress) and,
once it is gone, removes the throttles. kazoo is used directly and blocking.
"""
from __future__ import annotations

import logging
from typing import Mapping, Sequence

from kazoo.exceptions import NodeExistsError, NoNodeError

from kafkalike.cli.reassign_partitions_plan import (
    ADMIN_COMMAND_FAILED,
    ADMIN_OPERATION,
    BROKER_FOLLOWER_THROTTLE,
    BROKER_LEADER_THROTTLE,
    BROKER_THROTTLES,
    CANNOT_EXECUTE_BECAUSE_OF_EXISTING,
    TOPIC_FOLLOWER_THROTTLE,
    TOPIC_LEADER_THROTTLE,
    TOPIC_THROTTLES,
    YOU_MUST_RUN_VERIFY_PERIODICALLY,
    TerseFailure,
    JavaError,
    calculate_assignment,
    clearing_lines,
    current_assignment_text,
    follower_throttles,
    generation_text,
    leader_throttles,
    parse_execute_json,
    parse_generate_args,
    parse_reassignment_json,
    partition_states_text,
    plural,
    proposed_move_map,
    reassigning_brokers,
    tp_name,
)
from kafkalike.cli.zookeeper_tool import ZooKeeperTool
from kafkalike.zkdata.broker_registration import BROKER_IDS_PATH, BrokerIdZNode
from kafkalike.zkdata.kafka_json import ZNodeDecodeError
from kafkalike.zkdata.topic_znodes import TopicPartition, TopicZNode
from kafkalike.zkdata.znodes import (
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ConfigType,
    ReassignPartitionsZNode,
)

log = logging.getLogger("kafka.zk.KafkaZkClient")


class ZookeeperService(ZooKeeperTool):
    """The command's deprecated entry points over ZooKeeper."""

    def println(self, text: str = "") -> None:
        self.out.write(text + "\n")

    # znodes

    def broker_ids(self) -> list[int]:
        try:
            return sorted(int(c) for c in self.zk.get_children(BROKER_IDS_PATH))
        except NoNodeError:
            return []

    def assignment_for_topics(self, topics: Sequence[str]) -> dict[tuple[str, int], list[int]]:
        """getReplicaAssignmentForTopics: topics without a znode are left out."""
        out = {}
        for topic in dict.fromkeys(topics):
            data = self._get(TopicZNode.path(topic))
            if data is None:
                continue
            for partition, ra in TopicZNode.decode(topic, data).partitions.items():
                out[(topic, partition)] = list(ra.replicas)
        return out

    def reassignment_in_progress(self) -> bool:
        return self.zk.exists(ReassignPartitionsZNode.PATH) is not None

    def partition_reassignment(self) -> dict[tuple[str, int], tuple[int, ...]]:
        data = self._get(ReassignPartitionsZNode.PATH)
        if data is None:
            return {}
        try:
            return {(tp.topic, tp.partition): r for tp, r in ReassignPartitionsZNode.decode(data).items()}
        except ZNodeDecodeError as error:
            log.warning("Ignoring partition reassignment due to invalid json: %s", error)
            return {}

    def entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        return ConfigEntityZNode.decode(self._get(ConfigEntityZNode.path(entity_type, name)))

    def change_entity_config(self, entity_type: str, name: str, configs: Mapping[str, str]) -> None:
        """AdminZkClient.changeEntityConfig: the config znode, then a change notification."""
        path = ConfigEntityZNode.path(entity_type, name)
        data = ConfigEntityZNode.encode(configs)
        try:
            self.zk.set(path, data)
        except NoNodeError:
            self._create_recursive(path, data)
        try:
            self._create_recursive(ConfigEntityChangeNotificationZNode.PATH)
        except NodeExistsError:
            pass
        self.zk.create(ConfigEntityChangeNotificationZNode.create_path(),
                       ConfigEntityChangeNotificationZNode.encode(f"{entity_type}/{name}"), sequence=True)

    def change_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        if self.zk.exists(TopicZNode.path(topic)) is None:
            raise JavaError("org.apache.kafka.common.errors.UnknownTopicOrPartitionException",
                            f"Topic '{topic}' does not exist.")
        self.change_entity_config(ConfigType.TOPIC, topic, configs)

    # --generate

    def generate(self, topics_json: str, broker_list: str, rack_aware: bool) -> None:
        brokers, topics = parse_generate_args(topics_json, broker_list)
        current = self.assignment_for_topics(topics)
        wanted = set(brokers)
        metadata = []
        for broker in self.broker_ids():
            if broker not in wanted:
                continue
            data = self._get(BrokerIdZNode.path(broker))
            rack = BrokerIdZNode.decode(broker, data).rack if data is not None and rack_aware else None
            metadata.append((broker, rack))
        racked = sum(1 for _, rack in metadata if rack is not None)
        if rack_aware and racked not in (0, len(metadata)):
            raise JavaError(ADMIN_OPERATION,
                            "Not all brokers have rack information for replica rack aware assignment.")
        self.println(generation_text(current, calculate_assignment(current, metadata)))

    # --execute

    def execute(self, text: str, inter_broker_throttle: int) -> None:
        proposed, log_dirs = parse_execute_json(text)
        if log_dirs:
            raise JavaError(ADMIN_COMMAND_FAILED, "bootstrap-server needs to be provided when replica "
                                                  "reassignments are present.")
        existing = self.assignment_for_topics([t for t, _ in proposed])
        missing = [tp for tp in proposed if tp not in existing]
        if missing:
            raise JavaError(ADMIN_COMMAND_FAILED, "The proposed assignment contains non-existent partitions: "
                            f"List({', '.join(tp_name(tp) for tp in missing)})")
        live = set(self.broker_ids())
        unknown = list(dict.fromkeys(r for replicas in proposed.values() for r in replicas if r not in live))
        if unknown:
            raise JavaError(ADMIN_COMMAND_FAILED, "The proposed assignment contains non-existent brokerIDs: "
                            + ",".join(map(str, unknown)))
        if self.reassignment_in_progress():
            raise TerseFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
        current = {tp: r for tp, r in existing.items() if tp in proposed}
        self.println(current_assignment_text(proposed, current))
        if inter_broker_throttle >= 0:
            self.println(YOU_MUST_RUN_VERIFY_PERIODICALLY)
            moves = proposed_move_map({}, proposed, current)
            leaders, followers = leader_throttles(moves), follower_throttles(moves)
            for topic in dict.fromkeys(list(leaders) + list(followers)):
                configs = self.entity_config(ConfigType.TOPIC, topic)
                if topic in leaders:
                    configs[TOPIC_LEADER_THROTTLE] = leaders[topic]
                if topic in followers:
                    configs[TOPIC_FOLLOWER_THROTTLE] = followers[topic]
                self.change_topic_config(topic, configs)
            for broker in reassigning_brokers(moves):
                configs = self.entity_config(ConfigType.BROKER, str(broker))
                configs[BROKER_LEADER_THROTTLE] = str(inter_broker_throttle)
                configs[BROKER_FOLLOWER_THROTTLE] = str(inter_broker_throttle)
                self.change_entity_config(ConfigType.BROKER, str(broker), configs)
            self.println(f"The inter-broker throttle limit was set to {inter_broker_throttle} B/s")
        self._create_recursive(ReassignPartitionsZNode.PATH, ReassignPartitionsZNode.encode(
            {TopicPartition(t, p): replicas for (t, p), replicas in proposed.items()}))
        self.println(f"Successfully started partition reassignment{plural(len(proposed))} for "
                     + ",".join(tp_name(tp) for tp in sorted(proposed)))

    # --verify

    def verify(self, text: str, preserve_throttles: bool) -> None:
        targets, log_dirs = parse_reassignment_json(text)
        if log_dirs:
            raise JavaError(ADMIN_COMMAND_FAILED, "bootstrap-server needs to be provided when replica "
                                                  "reassignments are present.")
        self.println("Warning: because you are using the deprecated --zookeeper option, the results may be "
                     "incomplete.  Use --bootstrap-server instead for more accurate results.")
        in_flight = self.partition_reassignment()
        wanted = dict(targets)
        current = self.assignment_for_topics([t for t, _ in wanted])
        states = {tp: (current.get(tp, []), target, tp not in in_flight) for tp, target in wanted.items()}
        self.println(partition_states_text(states))
        if not in_flight and not preserve_throttles:
            brokers = sorted(set(self.broker_ids()) | {r for _, replicas in targets for r in replicas})
            topics = list(dict.fromkeys(tp[0] for tp, _ in targets))
            broker_line, topic_line = clearing_lines(brokers, topics)
            self.println(broker_line)
            for broker in brokers:
                configs = self.entity_config(ConfigType.BROKER, str(broker))
                if any([configs.pop(key, None) is not None for key in BROKER_THROTTLES]):
                    self.change_entity_config(ConfigType.BROKER, str(broker), configs)
            self.println(topic_line)
            for topic in topics:
                configs = self.entity_config(ConfigType.TOPIC, topic)
                if any([configs.pop(key, None) is not None for key in TOPIC_THROTTLES]):
                    self.change_topic_config(topic, configs)
