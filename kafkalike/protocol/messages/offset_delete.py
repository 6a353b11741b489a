"""OffsetDelete (API key 47): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

OFFSET_DELETE_REQUEST = Message(
    'OffsetDeleteRequest', 'request', valid='0', flexible='none',
    api_key=47, listeners=('zkBroker', 'broker'),
    fields=[
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('topics', '[]OffsetDeleteRequestTopic', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partitions', '[]OffsetDeleteRequestPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
            ]),
        ]),
    ])
OffsetDeleteRequest = build_classes(OFFSET_DELETE_REQUEST)

OFFSET_DELETE_RESPONSE = Message(
    'OffsetDeleteResponse', 'response', valid='0', flexible='none',
    api_key=47,
    fields=[
        F('error_code', 'int16', '0+'),
        F('throttle_time_ms', 'int32', '0+', ignorable=True),
        F('topics', '[]OffsetDeleteResponseTopic', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('partitions', '[]OffsetDeleteResponsePartition', '0+', fields=[
                F('partition_index', 'int32', '0+', map_key=True),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
    ])
OffsetDeleteResponse = build_classes(OFFSET_DELETE_RESPONSE)
