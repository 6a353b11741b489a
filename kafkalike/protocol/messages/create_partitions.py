"""CreatePartitions (API key 37): request and response as Kafka 2.8 declares them."""
from kafkalike.protocol.schema import F, Message, build_classes

CREATE_PARTITIONS_REQUEST = Message(
    'CreatePartitionsRequest', 'request', valid='0-3', flexible='2+',
    api_key=37, listeners=('zkBroker',),
    fields=[
        F('topics', '[]CreatePartitionsTopic', '0+', fields=[
            F('name', 'string', '0+', map_key=True, entity_type='topicName'),
            F('count', 'int32', '0+'),
            F('assignments', '[]CreatePartitionsAssignment', '0+', nullable='0+', fields=[
                F('broker_ids', '[]int32', '0+', entity_type='brokerId'),
            ]),
        ]),
        F('timeout_ms', 'int32', '0+'),
        F('validate_only', 'bool', '0+'),
    ])
CreatePartitionsRequest = build_classes(CREATE_PARTITIONS_REQUEST)

CREATE_PARTITIONS_RESPONSE = Message(
    'CreatePartitionsResponse', 'response', valid='0-3', flexible='2+',
    api_key=37,
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]CreatePartitionsTopicResult', '0+', fields=[
            F('name', 'string', '0+', entity_type='topicName'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+', default=None),
        ]),
    ])
CreatePartitionsResponse = build_classes(CREATE_PARTITIONS_RESPONSE)
