"""OffsetFetch (API key 9): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

OFFSET_FETCH_REQUEST = Message(
    'OffsetFetchRequest', 'request', valid='0-7', flexible='6+',
    api_key=9, listeners=('zkBroker', 'broker'),
    fields=[
        F('group_id', 'string', '0+', entity_type='groupId'),
        F('topics', '[]OffsetFetchRequestTopic', '0+', nullable='2+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partition_indexes', '[]int32', '0+'),
        ]),
        F('require_stable', 'bool', '7+', default=False),
    ])
OffsetFetchRequest = build_classes(OFFSET_FETCH_REQUEST)

OFFSET_FETCH_RESPONSE = Message(
    'OffsetFetchResponse', 'response', valid='0-7', flexible='6+',
    api_key=9,
    fields=[
        F('throttle_time_ms', 'int32', '3+', ignorable=True),
        F('topics', '[]OffsetFetchResponseTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]OffsetFetchResponsePartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('committed_offset', 'int64', '0+'),
                F('committed_leader_epoch', 'int32', '5+', default=-1, ignorable=True),
                F('metadata', 'string', '0+', nullable='0+'),
                F('error_code', 'int16', '0+'),
            ]),
        ]),
        F('error_code', 'int16', '2+', default=0, ignorable=True),
    ])
OffsetFetchResponse = build_classes(OFFSET_FETCH_RESPONSE)
