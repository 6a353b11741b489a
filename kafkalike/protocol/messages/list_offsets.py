"""ListOffsets (API key 2): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

LIST_OFFSETS_REQUEST = Message(
    'ListOffsetsRequest', 'request', valid='0-6', flexible='6+',
    api_key=2, listeners=('zkBroker', 'broker'),
    fields=[
        F('replica_id', 'int32', '0+', entity_type='brokerId'),
        F('isolation_level', 'int8', '2+'),
        F('topics', '[]ListOffsetsTopic', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]ListOffsetsPartition', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('current_leader_epoch', 'int32', '4+', default=-1, ignorable=True),
                F('timestamp', 'int64', '0+'),
                F('max_num_offsets', 'int32', '0', default=1),
            ]),
        ]),
    ])
ListOffsetsRequest = build_classes(LIST_OFFSETS_REQUEST)

LIST_OFFSETS_RESPONSE = Message(
    'ListOffsetsResponse', 'response', valid='0-6', flexible='6+',
    api_key=2,
    fields=[
        F('throttle_time_ms', 'int32', '2+', ignorable=True),
        F('topics', '[]ListOffsetsTopicResponse', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('partitions', '[]ListOffsetsPartitionResponse', '0+', fields=[
                F('partition_index', 'int32', '0+'),
                F('error_code', 'int16', '0+'),
                F('old_style_offsets', '[]int64', '0'),
                F('timestamp', 'int64', '1+', default=-1),
                F('offset', 'int64', '1+', default=-1),
                F('leader_epoch', 'int32', '4+', default=-1),
            ]),
        ]),
    ])
ListOffsetsResponse = build_classes(LIST_OFFSETS_RESPONSE)
