"""OffsetCommit (API key 8): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

OFFSET_COMMIT_REQUEST = Message(
    'OffsetCommitRequest', 'request', valid='0-8', flexible='8+',
    api_key=8, listeners=('zkBroker', 'broker'),
    fields=[
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('generation_id', 'int32', '1+', default=-1, ignorable=True),
        F('member_id', 'string', '1+', ignorable=True),
        F('group_instance_id', 'string', '7+', nullable='7+', default=None),
        F('retention_time_ms', 'int64', '2-4', default=-1, ignorable=True),
        F('topics', '[]OffsetCommitRequestTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]OffsetCommitRequestPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('committed_offset', 'int64', '0+'),
                F('committed_leader_epoch', 'int32', '6+', default=-1, ignorable=True),
                F('commit_timestamp', 'int64', '1', default=-1),
                F('committed_metadata', 'string', '0+', nullable='0+'),
            ]),
        ]),
    ])
OffsetCommitRequest = build_classes(OFFSET_COMMIT_REQUEST)

OFFSET_COMMIT_RESPONSE = Message(
    'OffsetCommitResponse', 'response', valid='0-8', flexible='8+',
    api_key=8,
    fields=[
        F('throttle_time_ms', 'int32', '3+', ignorable=True),
        F('topics', '[]OffsetCommitResponseTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]OffsetCommitResponsePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ])
OffsetCommitResponse = build_classes(OFFSET_COMMIT_RESPONSE)
