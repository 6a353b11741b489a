"""The controller's in-memory view of the cluster (Kafka's ControllerContext).

Loaded from ZooKeeper when a broker becomes controller and then changed only by the
controller's own event handlers, so it is the single owner of that state.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafkalike.zkdata.broker_registration import BrokerRegistration
from kafkalike.zkdata.topic_znodes import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition

# Partition states and the states each may be entered from (PartitionStateMachine).
NEW, ONLINE, OFFLINE, NON_EXISTENT = "NewPartition", "OnlinePartition", "OfflinePartition", "NonExistentPartition"
PARTITION_TRANSITIONS = {
    NEW: {NON_EXISTENT},
    ONLINE: {NEW, ONLINE, OFFLINE},
    OFFLINE: {NEW, ONLINE, OFFLINE},
    NON_EXISTENT: {OFFLINE},
}


class IllegalStateTransition(RuntimeError):
    pass


@dataclass
class ControllerContext:
    epoch: int = 0
    epoch_zk_version: int = -1
    live_brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)
    assignments: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    partition_states: dict[TopicPartition, str] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)
    shutting_down: set[int] = field(default_factory=set)
    # Reassignments (KIP-455): the adding/removing lists of partitions that have them (their
    # replicas are in `assignments`), and the partitions the controller is moving.
    reassigning: dict[TopicPartition, ReplicaAssignment] = field(default_factory=dict)
    partitions_being_reassigned: set[TopicPartition] = field(default_factory=set)
    # Topics marked for deletion that wait for their reassignments to finish first.
    deletions_waiting: set[str] = field(default_factory=set)

    # -- queries ----------------------------------------------------------------------

    @property
    def live_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def usable_ids(self) -> set[int]:
        """Kafka's liveBrokerIds: live and not in a controlled shutdown."""
        return set(self.live_brokers) - self.shutting_down

    def topics(self) -> set[str]:
        return {tp.topic for tp in self.assignments}

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def partitions_on(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, replicas in self.assignments.items() if broker_id in replicas)

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, s in self.leadership.items() if s.leader == broker_id)

    def is_replica_online(self, broker_id: int) -> bool:
        return broker_id in self.live_brokers

    def full_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """Replicas with the adding/removing lists of a reassignment (empty lists otherwise;
        no replicas at all for a partition that does not exist)."""
        found = self.reassigning.get(tp)
        return found if found is not None else ReplicaAssignment(self.assignments.get(tp, ()))

    def set_full_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self.assignments[tp] = tuple(assignment.replicas)
        if assignment.adding_replicas or assignment.removing_replicas:
            self.reassigning[tp] = assignment
        else:
            self.reassigning.pop(tp, None)

    # -- partition state machine ---------------------------------------------------------

    def set_state(self, tp: TopicPartition, state: str) -> None:
        current = self.partition_states.get(tp, NON_EXISTENT)
        if current not in PARTITION_TRANSITIONS[state]:
            raise IllegalStateTransition(f"Partition {tp.topic}-{tp.partition} cannot move "
                                         f"from {current} to {state}")
        if state == NON_EXISTENT:
            self.partition_states.pop(tp, None)
        else:
            self.partition_states[tp] = state

    def remove_topic(self, topic: str) -> None:
        for tp in self.partitions_of(topic):
            self.assignments.pop(tp, None)
            self.leadership.pop(tp, None)
            self.partition_states.pop(tp, None)
            self.reassigning.pop(tp, None)
            self.partitions_being_reassigned.discard(tp)
        self.topic_ids.pop(topic, None)
        self.topics_to_delete.discard(topic)
        self.deletions_waiting.discard(topic)
