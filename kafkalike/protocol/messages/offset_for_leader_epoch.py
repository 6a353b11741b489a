"""OffsetForLeaderEpoch (API key 23): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

OFFSET_FOR_LEADER_EPOCH_REQUEST = Message(
    'OffsetForLeaderEpochRequest', 'request', valid='0-4', flexible='4+',
    api_key=23, listeners=('zkBroker', 'broker'),
    fields=[
        F('replica_id', 'int32', '3+', default=-2, ignorable=True),
        F('topics', '[]OffsetForLeaderTopic', '0+', fields=[
            F('topic', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partitions', '[]OffsetForLeaderPartition', '0+', fields=[
                F('partition', 'int32', '0+'),
                F('current_leader_epoch', 'int32', '2+', default=-1, ignorable=True),
                F('leader_epoch', 'int32', '0+'),
            ]),
        ]),
    ])
OffsetForLeaderEpochRequest = build_classes(OFFSET_FOR_LEADER_EPOCH_REQUEST)

OFFSET_FOR_LEADER_EPOCH_RESPONSE = Message(
    'OffsetForLeaderEpochResponse', 'response', valid='0-4', flexible='4+',
    api_key=23,
    fields=[
        F('throttle_time_ms', 'int32', '2+', ignorable=True),
        F('topics', '[]OffsetForLeaderTopicResult', '0+', fields=[
            F('topic', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partitions', '[]EpochEndOffset', '0+', fields=[
                F('error_code', 'int16', '0+'),
                F('partition', 'int32', '0+'),
                F('leader_epoch', 'int32', '1+', default=-1, ignorable=True),
                F('end_offset', 'int64', '0+', default=-1),
            ]),
        ]),
    ])
OffsetForLeaderEpochResponse = build_classes(OFFSET_FOR_LEADER_EPOCH_RESPONSE)
