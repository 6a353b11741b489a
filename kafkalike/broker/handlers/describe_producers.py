"""DescribeProducers (61): the active idempotent/transactional producers of partitions.

Kafka 2.8 answers from the producer state of the local log, whether this broker leads
the partition or follows it (the admin client asks the leader unless told otherwise):
an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, a partition of a known topic that this
broker does not host NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION if the topic
has no such partition). The log now keeps producer state (storage/producer_state.py),
but this handler does not report it yet: a hosted partition answers an empty list.
"""
from __future__ import annotations

from kafkalike.broker.registry import RequestContext, handler
from kafkalike.protocol.errors import ErrorCode
from kafkalike.protocol.messages.describe_producers import DescribeProducersRequest, DescribeProducersResponse

_R = DescribeProducersResponse


@handler(61)
def handle_describe_producers(ctx: RequestContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
    server = ctx.server
    topics = []
    for t in request.topics:
        known_topic = server.metadata_cache.contains(t.name)
        partitions = []
        for p in t.partition_indexes:
            if not known_topic:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif (t.name, p) in server.replica_manager.partitions:
                code = ErrorCode.NONE
            elif server.metadata_cache.partition(t.name, p) is not None:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            partitions.append(_R.PartitionResponse(partition_index=p, error_code=int(code), error_message=None,
                                                   active_producers=[]))
        topics.append(_R.TopicResponse(name=t.name, partitions=partitions))
    return DescribeProducersResponse(topics=topics)
