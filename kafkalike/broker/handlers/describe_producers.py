"""DescribeProducers (61): the active idempotent/transactional producers of partitions.

Kafka 2.8 answers from the producer state of the local log, whether this broker leads
the partition or follows it (the admin client asks the leader unless told otherwise):
an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, a partition of a known topic that this
broker does not host NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION if the topic
has no such partition). Each producer the log's producer state knows is reported with
its epoch, last sequence, last timestamp, the coordinator epoch of its last marker and
the first offset of its open transaction (-1 for none, as for idempotent-only producers).
"""
from __future__ import annotations

from kafkalike.broker.authorizer.service import TOPIC, Op
from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.describe_producers import DescribeProducersRequest, DescribeProducersResponse

_R = DescribeProducersResponse


@handler(61)
def handle_describe_producers(ctx: RequestContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
    cache, replicas = ctx.metadata, ctx.replicas
    topics = []
    readable = ctx.authorizer.filter(ctx, Op.READ, TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        known_topic = cache.contains(t.name)
        partitions = []
        for p in t.partition_indexes:
            hosted = replicas.partitions.get((t.name, p)) if t.name in readable and known_topic else None
            producers = []
            if t.name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED       # KafkaApis: READ on the topic
            elif not known_topic:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif hosted is not None:
                code = ErrorCode.NONE
                producers = [_R.ProducerState(
                    producer_id=e.producer_id, producer_epoch=e.epoch, last_sequence=e.last_seq,
                    last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                    current_txn_start_offset=e.current_txn_first_offset)
                    for e in hosted.log.active_producers()]
            elif cache.partition(t.name, p) is not None:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            partitions.append(_R.PartitionResponse(partition_index=p, error_code=int(code), error_message=None,
                                                   active_producers=producers))
        topics.append(_R.TopicResponse(name=t.name, partitions=partitions))
    return DescribeProducersResponse(topics=topics)
