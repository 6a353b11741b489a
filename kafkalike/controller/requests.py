"""Builds the controller's requests to brokers: LeaderAndIsr, UpdateMetadata, StopReplica.

Versions follow inter.broker.protocol.version 2.8: LeaderAndIsr v5, UpdateMetadata v7,
StopReplica v3 (ControllerChannelManager's choices for that IBP).
"""
from __future__ import annotations

from collections import defaultdict

from kafkalike.controller.context import ControllerContext
from kafkalike.protocol.messages.leader_and_isr import LeaderAndIsrRequest
from kafkalike.protocol.messages.stop_replica import StopReplicaRequest
from kafkalike.protocol.messages.update_metadata import UpdateMetadataRequest
from kafkalike.zkdata.topic_znodes import TopicPartition

LEADER_AND_ISR_VERSION = 5
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 3
LEADER_DURING_DELETE = -2
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def leader_and_isr(ctx: ControllerContext, controller_id: int, broker_id: int,
                   partitions: list[TopicPartition], new: set[TopicPartition] = frozenset(),
                   inter_broker_listener: str = "PLAINTEXT") -> LeaderAndIsrRequest:
    by_topic: dict[str, list] = defaultdict(list)
    leaders = set()
    for tp in partitions:
        state = ctx.leadership[tp]
        leaders.add(state.leader)
        full = ctx.full_assignment(tp)
        by_topic[tp.topic].append(LeaderAndIsrRequest.LeaderAndIsrPartitionState(
            topic_name=tp.topic, partition_index=tp.partition,
            controller_epoch=state.controller_epoch, leader=state.leader,
            leader_epoch=state.leader_epoch, isr=list(state.isr), zk_version=state.zk_version,
            replicas=list(full.replicas), adding_replicas=list(full.adding_replicas),
            removing_replicas=list(full.removing_replicas), is_new=tp in new))
    topic_states = [LeaderAndIsrRequest.LeaderAndIsrTopicState(
        topic_name=t, topic_id=ctx.topic_ids.get(t) or LeaderAndIsrRequest.LeaderAndIsrTopicState().topic_id,
        partition_states=ps) for t, ps in sorted(by_topic.items())]
    live_leaders = []
    for lid in sorted(leaders):
        reg = ctx.live_brokers.get(lid)
        ep = reg.endpoint(inter_broker_listener) if reg else None
        if ep is not None:
            live_leaders.append(LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                broker_id=lid, host_name=ep.host, port=ep.port))
    return LeaderAndIsrRequest(controller_id=controller_id, controller_epoch=ctx.epoch,
                               broker_epoch=ctx.broker_epochs.get(broker_id, -1), type=0,
                               topic_states=topic_states, live_leaders=live_leaders)


def update_metadata(ctx: ControllerContext, controller_id: int, broker_id: int,
                    partitions: list[TopicPartition],
                    deleting: set[TopicPartition] = frozenset()) -> UpdateMetadataRequest:
    by_topic: dict[str, list] = defaultdict(list)
    for tp in partitions:
        state = ctx.leadership.get(tp)
        if state is None:
            continue
        replicas = list(ctx.assignments.get(tp, ()))
        by_topic[tp.topic].append(UpdateMetadataRequest.UpdateMetadataPartitionState(
            topic_name=tp.topic, partition_index=tp.partition, controller_epoch=state.controller_epoch,
            leader=LEADER_DURING_DELETE if tp in deleting else state.leader,
            leader_epoch=state.leader_epoch, isr=list(state.isr), zk_version=state.zk_version,
            replicas=replicas, offline_replicas=[r for r in replicas if r not in ctx.live_brokers]))
    topic_states = []
    for t, ps in sorted(by_topic.items()):
        ts = UpdateMetadataRequest.UpdateMetadataTopicState(topic_name=t, partition_states=ps)
        if t in ctx.topic_ids:
            ts.topic_id = ctx.topic_ids[t]
        topic_states.append(ts)
    brokers = []
    for bid in sorted(ctx.live_brokers):
        reg = ctx.live_brokers[bid]
        eps = [UpdateMetadataRequest.UpdateMetadataEndpoint(
            port=ep.port, host=ep.host, listener=ep.listener_name,
            security_protocol=SECURITY_PROTOCOLS.get(ep.security_protocol, 0))
            for ep in reg.endpoints]
        brokers.append(UpdateMetadataRequest.UpdateMetadataBroker(id=bid, endpoints=eps, rack=reg.rack))
    return UpdateMetadataRequest(controller_id=controller_id, controller_epoch=ctx.epoch,
                                 broker_epoch=ctx.broker_epochs.get(broker_id, -1),
                                 topic_states=topic_states, live_brokers=brokers)


def stop_replica(ctx: ControllerContext, controller_id: int, broker_id: int,
                 partitions: list[TopicPartition], delete: bool) -> StopReplicaRequest:
    by_topic: dict[str, list] = defaultdict(list)
    for tp in partitions:
        state = ctx.leadership.get(tp)
        epoch = state.leader_epoch if state else -1
        by_topic[tp.topic].append(StopReplicaRequest.StopReplicaPartitionState(
            partition_index=tp.partition,
            leader_epoch=-2 if delete else epoch,   # EpochDuringDelete, as Kafka sends
            delete_partition=delete))
    return StopReplicaRequest(controller_id=controller_id, controller_epoch=ctx.epoch,
                              broker_epoch=ctx.broker_epochs.get(broker_id, -1),
                              topic_states=[StopReplicaRequest.StopReplicaTopicState(
                                  topic_name=t, partition_states=ps)
                                  for t, ps in sorted(by_topic.items())])
